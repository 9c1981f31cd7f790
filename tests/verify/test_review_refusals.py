"""Programs the builder took and jaxlib or XLA then crashed on, failed obscurely, or ran to
another meaning (an adversarial review, 2026-12-07), refused in Python with why.

Oracles: each refused program, with the refusal bypassed, shown doing what the refusal says
in a child process (the process aborts, the compile fails, the result has another shape);
jaxlib's own verifier taking the text the builder now refuses (so only our check stands
between it and the crash); the programs beside them that run, run against numpy.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.mhlo_attributes import ScatterDimensionNumbers
from tests import oracle
from tests.child_env import child_env
from verify.errors import CompileError, VerificationError

T = hlo.tensor

# The child: read the program, bypass the CPU refusals, compile and run it on zeros; print
# the result's shape.
_CHILD = """
import sys, numpy as np, mhlo_ir as hlo, verify, verify.api as api
api._cpu_refusals = lambda m: None
c = verify.compile(hlo.parse(sys.stdin.read()))
args = [np.zeros(s, d) for s, d in c.parameters]
print("shape", c(*args)[0].shape)
"""


def _bypassed(m):
    return subprocess.run([sys.executable, "-c", _CHILD], input=m.to_text(),
                          capture_output=True, text=True, timeout=300, env=child_env())


def _module(arg_types, make):
    m = hlo.Module("m")
    f = m.add_function("main", arg_types, visibility="public")
    b = f.builder()
    out = make(b, *f.arguments)
    b.return_(*(out if isinstance(out, tuple) else (out,)))
    return m


def _rng(et):
    def make(b):
        lo, hi = (False, True) if et is hlo.i1 else (0, 1)
        return b.rng(b.constant(lo, dtype=et), b.constant(hi, dtype=et), [3])
    return _module([], make)


@pytest.mark.parametrize("et", [hlo.i1, hlo.i8, hlo.ui16, hlo.f8E4M3FN])
def test_an_rng_of_a_narrow_type_is_refused(et):
    with pytest.raises(CompileError, match=f"'rng' of {et.name}: XLA:CPU aborts"):
        verify.compile(_rng(et))


def test_the_refused_narrow_rng_does_abort_and_the_wide_ones_run():
    r = _bypassed(_rng(hlo.i8))
    if r.returncode == 0:
        pytest.skip("this jaxlib compiles an i8 rng: the refusal can be lifted for it")
    assert "primitive_type == F16 || primitive_type == BF16" in r.stderr
    for et in (hlo.f16, hlo.bf16, hlo.i32, hlo.ui64):
        out = verify.run(_rng(et))[0]
        assert out.shape == (3,) and ((out >= 0) & (out <= 1)).all()


def _scalar_scatter(batch: bool):
    dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=(),
                                 index_vector_dim=1 if batch else 0)
    idx, upd = (T((3, 0), hlo.i32), T((3,), hlo.f32)) if batch else \
        (T((0,), hlo.i32), T((), hlo.f32))
    return _module([T((), hlo.f32), idx, upd],
                   lambda b, x, i, u: b.scatter(x, i, u, dn, "add"))


def test_a_batch_scattered_into_a_scalar_is_refused_and_one_update_runs():
    m = _scalar_scatter(batch=True)
    with pytest.raises(CompileError, match="'scatter' of a batch of updates"):
        verify.compile(m)
    r = _bypassed(m)
    if r.returncode == 0:
        pytest.skip("this jaxlib compiles it: the refusal can be lifted for it")
    assert "Expected instruction to have shape equal to" in r.stderr
    out = verify.run(_scalar_scatter(batch=False), np.float32(1), np.zeros(0, np.int32),
                     np.float32(2))[0]
    assert out == 3


def _set_size(size: int, reduced: bool):
    def make(b, x):
        y = b.set_dimension_size(x, b.constant(np.int32(size)), 1)
        return b.reduce(y, b.constant(np.float32(0)), [1], "add") if reduced else \
            b.add(y, y)  # (an elementwise op carries the runtime size on)
    return _module([T((2, 3), hlo.f32)], make)


def test_a_dynamically_sized_result_is_refused_and_a_reduction_of_it_runs():
    m = _set_size(1, reduced=False)
    with pytest.raises(CompileError, match="@main result 0 .* set_dimension_size gave a "
                                           "runtime size"):
        verify.compile(m)
    r = _bypassed(m)
    assert r.returncode == 0, r.stderr[-500:]
    assert "shape (2, 1)" in r.stdout  # (not the 2x3 of the result type)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(verify.run(_set_size(1, reduced=True), x)[0], x[:, 0])
    np.testing.assert_array_equal(verify.run(_set_size(2, reduced=True), x)[0],
                                  x[:, :2].sum(1))


@pytest.mark.parametrize("size", [-1, 4, 10**6])
def test_a_constant_size_past_its_bound_is_refused_when_built(size):
    with pytest.raises(hlo.OpBuildError, match=f"size holds {size}, outside \\[0, 3\\]"):
        _set_size(size, reduced=True)


_GATHER_DIMS = hlo.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                          start_index_map=(0,), index_vector_dim=1)


def _dynamic_bounds(kind):
    i2 = T((2,), hlo.i32)

    def make(b, x, lo, hi):
        if kind == "real_dynamic_slice":
            return b.real_dynamic_slice(x, lo, hi, b.constant(np.int32([1, 1])),
                                        T((1, 2), hlo.f32))
        if kind == "dynamic_gather":  # (slice sizes from the argument hi)
            return b.dynamic_gather(x, b.reshape(lo, (2, 1)), hi, _GATHER_DIMS,
                                    T((2, 3), hlo.f32))
        return b.dynamic_pad(x, b.constant(np.float32(0)), lo, hi,
                             b.constant(np.int32([0, 0])), T((3, 4), hlo.f32))
    return _module([T((2, 3), hlo.f32), i2, i2], make)


@pytest.mark.parametrize("kind", ["real_dynamic_slice", "dynamic_pad", "dynamic_gather"])
def test_bounds_from_an_argument_are_refused_before_jaxlib(kind):
    m = _dynamic_bounds(kind)
    oracle.parse(m.to_text())  # (MLIR's verifier takes it)
    for source in (m, m.to_text()):
        with pytest.raises(VerificationError, match=f"'{kind}' with bounds computed from a "
                                                    "function argument") as e:
            verify.check(source)
        assert e.value.jaxlib_message is None


def test_a_dynamic_conv_of_padding_from_an_argument_is_refused_before_jaxlib():
    nwc = hlo.ConvDimensionNumbers(0, 2, (1,), 1, 2, (0,), 0, 2, (1,))  # [b,0,f]x[0,i,o]
    m = _module([T((1, 4, 1), hlo.f32), T((1, 2), hlo.i32)], lambda b, x, pad: b.dynamic_conv(
        x, b.constant(np.ones((1, 1, 2), np.float32)), pad, nwc, T((1, 4, 2), hlo.f32)))
    oracle.parse(m.to_text())  # (MLIR's verifier takes it)
    for source in (m, m.to_text()):
        with pytest.raises(VerificationError, match="'dynamic_conv' with bounds computed from "
                                                    "a function argument.*a dynamic_conv's "
                                                    "padding") as e:
            verify.check(source)
        assert e.value.jaxlib_message is None
    # what jaxlib says of it without the refusal
    from verify.api import _jaxlib_parse_and_verify
    with pytest.raises(Exception, match="'stablehlo.dynamic_conv' op can't be translated to "
                                        "XLA HLO"):
        _jaxlib_parse_and_verify(m.to_text())


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_a_negative_dynamic_conv_padding_narrower_than_i64_is_refused(dtype):
    from verify.api import _jaxlib_parse_and_verify
    nwc = hlo.ConvDimensionNumbers(0, 2, (1,), 1, 2, (0,), 0, 2, (1,))  # [b,0,f]x[0,i,o]
    m = _module([T((1, 4, 1), hlo.f32)], lambda b, x: b.dynamic_conv(
        x, b.constant(np.ones((1, 1, 1), np.float32)), b.constant(np.array([[-1, 1]], dtype)),
        nwc, T((1, 4, 1), hlo.f32)))
    x = np.arange(4, dtype=np.float32).reshape(1, 4, 1)
    if dtype is np.int64:  # (the padding as the spec reads it: drop one, add a zero)
        np.testing.assert_array_equal(verify.run(m, x)[0].ravel(), [1, 2, 3, 0])
        return
    bits = np.dtype(dtype).itemsize * 8
    with pytest.raises(VerificationError, match=f"negative padding of i{bits}: .*-1 reads as "
                                                f"{2 ** bits - 1}.*give the padding as i64"):
        verify.check(m)
    folded = rf"padding = dense<\[\[{2 ** bits - 1}, 1"
    with pytest.raises(Exception, match=f"inferred shape '\\[1, {2 ** bits + 4}, 1\\]' is "
                                        rf"incompatible(.|\n)*{folded}"):
        _jaxlib_parse_and_verify(m.to_text())


def test_a_private_main_is_refused_naming_the_public_function():
    m = hlo.Module("m")
    g = m.add_function("main", [T((2,), hlo.f32)], visibility="private")
    gb = g.builder()
    gb.return_(gb.negate(g.arguments[0]))
    f = m.add_function("entry", [T((2,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    m.verify()
    with pytest.raises(VerificationError, match="@main is private.*not the public @entry"):
        verify.check(m)


@pytest.mark.parametrize("name", ["mhlo.input_output_alias", "mhlo.cross_program_prefetches",
                                  "mhlo.xla_entry_computation_parameter_layouts"])
def test_module_attributes_jaxlib_reads_unchecked_are_refused(name):
    m = _module([T((2,), hlo.f32)], lambda b, x: b.add(x, x))
    m.set_attr(name, [])  # (what XLA's own conversion back from HLO writes)
    m.verify()
    m.set_attr(name, [1])
    with pytest.raises(hlo.ModuleVerificationError, match=f"module attribute {name}: .*"
                                                          "jaxlib's conversion"):
        m.verify()
    with pytest.raises(hlo.ModuleVerificationError, match=f"module attribute {name}"):
        verify.check(m)
    with pytest.raises(VerificationError, match=f"module attribute {name}") as e:
        verify.check(m.to_text())  # (text as our parser reads it)
    assert e.value.jaxlib_message is None


@pytest.mark.parametrize("value, message", [
    ([True, False], "lists 2 bools, but tensor<2xf32> has 1 leaf buffer"),
    (1, "must be a list of bools"),
])
def test_parameter_replication_must_list_one_bool_per_leaf(value, message):
    m = _module([T((2,), hlo.f32)], lambda b, x: b.add(x, x))
    m.functions[0].set_arg_attr(0, "mhlo.parameter_replication", value)
    with pytest.raises(hlo.ModuleVerificationError, match=message):
        m.verify()
    m.functions[0].set_arg_attr(0, "mhlo.parameter_replication", [True])
    np.testing.assert_array_equal(verify.run(m, np.ones(2, np.float32))[0], [2, 2])


def test_a_sharding_that_is_no_string_is_refused():
    m = _module([T((2,), hlo.f32)], lambda b, x: b.add(x, x))
    y = m.functions[0].body.blocks[0].operations[0]
    with pytest.raises(hlo.OpBuildError, match="mhlo.sharding .* is not a string"):
        y.set_attr("mhlo.sharding", 1)
    with pytest.raises(ValueError, match="mhlo.sharding .* is not a string"):
        m.functions[0].set_arg_attr(0, "mhlo.sharding", 1)


_SHARDING_OF_TWO = """
func.func public @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = mhlo.custom_call @Sharding(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""


@pytest.mark.parametrize("target, operands, results", [
    ("Sharding", 2, 1), ("SPMDFullToShardShape", 0, 1), ("LayoutConstraint", 1, 2),
    ("MoveToHost", 1, 0)])
def test_xlas_one_value_targets_take_one_operand_and_one_result(target, operands, results):
    t = T((2,), hlo.f32)
    oracle.parse(_SHARDING_OF_TWO)  # (jaxlib's verifier takes such a call: XLA aborts)
    with pytest.raises(VerificationError, match="'Sharding' .* takes one operand") as e:
        verify.check("module {" + _SHARDING_OF_TWO + "}")  # (text, as our parser reads it)
    assert e.value.jaxlib_message is None
    with pytest.raises(hlo.OpBuildError, match=f"'{target}' .* takes one operand and "
                                               "returns one result"):
        _module([t, t], lambda b, x, y: b.custom_call(target, [x, y][:operands],
                                                      [t] * results))


def test_an_annotation_of_another_type_is_refused_and_the_spmd_pair_may_reshape():
    t = T((4, 2), hlo.f32)
    with pytest.raises(hlo.OpBuildError, match="'LayoutConstraint' returns its operand's "
                                               "type"):
        _module([t], lambda b, x: b.custom_call("LayoutConstraint", [x], [T((4, 2),
                                                                          hlo.i32)]))
    _module([t], lambda b, x: b.custom_call("SPMDFullToShardShape", [x], [T((2, 2), hlo.f32)]))
    with pytest.raises(hlo.OpBuildError, match="returns its operand's element type"):
        _module([t], lambda b, x: b.custom_call("SPMDShardToFullShape", [x],
                                                [T((8, 2), hlo.i32)]))
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    m = _module([t], lambda b, x: b.custom_call("Sharding", [x], [t]))
    np.testing.assert_array_equal(verify.run(m, x)[0], x)


def _donating_program_from_xla():
    """jax's lowering of a program donating an argument, taken to HLO and back by jaxlib:
    the module attributes XLA writes itself (a non-empty mhlo.input_output_alias, result
    layouts and tiles)."""
    jax = pytest.importorskip("jax")
    from verify import _jaxlib
    from verify.bindings import context
    xc, X = _jaxlib.xla()
    f = jax.jit(lambda a, b: (a * b + a.max(), b.T), donate_argnums=(0,))
    x = np.ones((4, 3), np.float32)
    proto = f.lower(x, x).compiler_ir("hlo").as_serialized_hlo_module_proto()
    text = X.mlir.hlo_to_stablehlo(proto)
    ir, ctx = context()
    with ctx:
        return str(ir.Module.parse(text).operation.get_asm()), x


def test_the_module_attributes_xla_writes_are_taken_and_malformed_ones_refused():
    text, x = _donating_program_from_xla()
    assert "mhlo.input_output_alias = [{alias" in text
    assert "mhlo.xla_entry_computation_result_layout = [dense" in text
    hlo.parse(text).verify()
    np.testing.assert_array_equal(verify.run(text, x, x)[0], x * x + 1)
    for edit, message in (
            (('parameter_number = 0 : i64', 'parameter_number = 7 : i64'),
             "names argument 7, but @main takes 2"),
            (('kind = "may_alias"', 'kind = "maybe"'), "entry 0 is not"),
            (("mhlo.xla_entry_computation_result_tiles = [[], []]",
              "mhlo.xla_entry_computation_result_tiles = [[]]"), "not one empty list per"),
            (("result_layout = [dense<[1, 0]> : tensor<2xindex>, ",
              "result_layout = ["), "not one dense layout per @main result")):
        bad = text.replace(*edit)
        assert bad != text
        with pytest.raises(hlo.ModuleVerificationError, match=message):
            hlo.parse(bad).verify()
        with pytest.raises(VerificationError, match=message):
            verify.check(bad)


def test_an_empty_parameter_replication_is_taken_as_jaxlib_takes_it():
    m = _module([T((2,), hlo.f32)], lambda b, x: b.add(x, x))
    m.functions[0].set_arg_attr(0, "mhlo.parameter_replication", [])
    m.verify()
    np.testing.assert_array_equal(verify.run(m, np.ones(2, np.float32))[0], [2, 2])


def test_a_dynamic_gather_of_constant_slice_sizes_runs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = _module([T((2, 3), hlo.f32), T((2,), hlo.i32)], lambda b, v, i: b.dynamic_gather(
        v, b.reshape(i, (2, 1)), b.constant(np.int32([1, 3])), _GATHER_DIMS,
        T((2, 3), hlo.f32)))
    np.testing.assert_array_equal(verify.run(m, x, np.int32([1, 0]))[0], x[[1, 0]])
