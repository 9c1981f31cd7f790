"""Constants are cached by exact keys: the dtype object (``dtype.str`` is '<V1' for int4,
uint4, int2, uint2 and most float8 types) and raw bytes (0.0 == -0.0; NaN payloads)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import verify
from lower import core, lax, lower_jaxpr_to_module, register_lowering
from lower.mlir import cache_lowering, ir_constant
from mhlo_ir import dtypes
from tests.lower.harness import ops
from tests.oracle import assert_fixed_point

# The sub-byte and one-byte element types, and int8/uint8/bool beside them (the '<V1' and
# '|i1'-style spellings must not meet).
DTYPES = [np.dtype(t) for t in (
    ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2,
    ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
    ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3b11fnuz, ml_dtypes.float8_e3m4,
    ml_dtypes.float8_e4m3, ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn,
    np.int8, np.uint8)]


def _example(dt: np.dtype) -> np.ndarray:
    """Two values whose ``x + 1`` is exact in ``dt`` (no overflow, no rounding)."""
    if dt == np.dtype(ml_dtypes.float8_e8m0fnu):  # powers of two only, no zero
        return np.array([1, 1], dt)
    signed = dt.kind == "i" or dt in (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.int2))
    return np.array([-1, 0] if signed else [1, 2], dt)


def _name(dt) -> str:
    return dtypes.from_numpy(dt).name


def _check_types(m, dts):
    """Each add (and the constant it adds) is typed as its own operand."""
    adds = ops(m, "add")
    assert [str(op.results[0].type) for op in adds] == [f"tensor<2x{_name(d)}>" for d in dts]
    constants = {str(op.results[0].type) for op in ops(m, "constant")}
    assert constants == {f"tensor<{_name(d)}>" for d in dts}


def test_the_dtypes_are_distinct_keys():
    # The premise of keying by the dtype object; their .str spellings collide.
    assert len(set(DTYPES)) == len(DTYPES)
    assert len({d.str for d in DTYPES}) < len(DTYPES)


def test_every_pair_of_small_types_lowers_x_plus_1_in_its_own_type():
    # One process, every ordered pair: the scalar-constant cache outlives each lowering.
    for a, b in itertools.permutations(DTYPES, 2):
        closed = lax.make_jaxpr(lambda x, y: (x + 1, y + 1))(_example(a), _example(b))
        m = lower_jaxpr_to_module("pair", closed).module
        _check_types(m, [a, b])


def test_all_small_types_run_x_plus_1_against_ml_dtypes():
    xs = [_example(d) for d in DTYPES]
    closed = lax.make_jaxpr(lambda *xs: [x + 1 for x in xs])(*xs)
    m = lower_jaxpr_to_module("all", closed).module
    _check_types(m, DTYPES)
    assert_fixed_point(m)
    outs = verify.run(m, *xs)
    for x, out in zip(xs, outs):
        ref = (x.astype(np.float32) + 1).astype(x.dtype)
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(out.astype(np.float32), ref.astype(np.float32),
                                      err_msg=str(x.dtype))


def _f32(bits: int) -> np.float32:
    return np.array([bits], np.uint32).view(np.float32)[0]


def test_signed_zeros_and_nan_payloads_are_distinct_constants():
    nan1, nan2 = _f32(0x7FC00001), _f32(0x7FC00002)
    x = np.array([1.0, 2.0], np.float32)
    closed = lax.make_jaxpr(lambda x: (x * 0.0, x * -0.0, x + nan1, x + nan2))(x)
    m = lower_jaxpr_to_module("zeros", closed).module
    text = m.to_text()
    assert "dense<0x7FC00001>" in text and "dense<0x7FC00002>" in text
    zero, negzero, _, _ = verify.run(m, x)
    assert not np.signbit(zero).any() and np.signbit(negzero).all()


@pytest.mark.parametrize("values", [(0.0, -0.0), (1, True), (1.0, 1)])
def test_cache_lowering_tells_params_apart_that_compare_equal(values):
    name = "scale_by_" + "_".join(type(v).__name__ for v in values)

    def rule(ctx, x, *, c):
        # A bool param means "negate" here: a rule may read a param's type, not only its value.
        scale = -1.0 if c is True else float(c)
        return [ctx.builder.multiply(x, ir_constant(ctx.builder,
                                                    np.full((2,), scale, np.float32)))]

    register_lowering(name, cache_lowering(rule))
    a = core.ShapedArray((2,), np.float32)
    x, y, z = core.Var(a), core.Var(a), core.Var(a)
    p = core.Primitive(name)
    jaxpr = core.Jaxpr([], [x], [y, z], [core.JaxprEqn([x], [y], p, {"c": values[0]}),
                                         core.JaxprEqn([x], [z], p, {"c": values[1]})])
    m = lower_jaxpr_to_module("params", core.ClosedJaxpr(jaxpr, [])).module
    assert len(m.functions) == 3  # main and one private function per param value
    arg = np.array([1.0, 2.0], np.float32)
    outs = verify.run(m, arg)
    for out, c in zip(outs, values):
        ref = arg * np.float32(-1.0 if c is True else float(c))
        np.testing.assert_array_equal(out, ref)
        assert (np.signbit(out) == np.signbit(ref)).all()


def test_jax_literals_one_constant_per_distinct_value_and_type_in_a_block():
    # jax 0.10's literals are TypedNdArray (an ndarray subclass) and TypedFloat/TypedInt:
    # each distinct one (value bits, dtype, shape) is one constant per block, as exact
    # ndarrays and Python scalars are; -0.0 and 0.0 and the dtypes stay apart.
    import jax
    import jax.numpy as jnp

    def f(x, i):
        y = x * 2.0 + x * 2.0 - x * -0.0 + x * 0.0
        j = i * 2 + i * 2 + (i * jnp.int8(2)).astype(jnp.int32)
        return y / 3.0 + jnp.float16(2.0).astype(jnp.float32), j
    x = np.array([1.5, -2.0], np.float32)
    i = np.array([3, -4], np.int32)
    closed = jax.make_jaxpr(f)(x, i)
    kinds = {type(v.val).__name__ for e in closed.jaxpr.eqns for v in e.invars
             if hasattr(v, "val")}
    assert "TypedNdArray" in kinds, kinds  # (the case this is about)
    m = lower_jaxpr_to_module("lits", closed).module
    values = sorted(op.attributes["value"].render() for op in ops(m, "constant"))
    assert len(values) == len(set(values)), values  # no value twice in the one block
    y, j = verify.run(m, x, i)
    np.testing.assert_array_equal(y, (x * 4 - x * -0.0 + x * 0.0) / np.float32(3) + 2)
    np.testing.assert_array_equal(j, i * 6)
