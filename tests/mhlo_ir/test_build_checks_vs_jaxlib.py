"""Build-time checks a fuzz against jaxlib's verifier (~38,000 one-change mutants of every op
case) found missing or too strict: each refusal's message against jaxlib's own rejection of
the same text, and each accepted neighbour against jaxlib's verdict (verify.check)."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import ModuleVerificationError, OpBuildError, ParseError, f32, i32, i64, tensor as T
from tests import oracle
from tests.mhlo_ir.ops.cases_linalg import NHWC


def _new(*arg_types):
    m = hlo.Module("c")
    f = m.add_function("main", list(arg_types), visibility="public")
    return m, f, f.builder()


def _ints(b, values):
    return b.constant(np.array(values, np.int64))


@pytest.mark.parametrize("op", ["dynamic_reshape", "dynamic_broadcast_in_dim"])
def test_a_constant_shape_operand_must_hold_the_result_types_shape(op):
    # (the wrong result type fits the operand's type: only the constant contradicts it)
    wrong = (3, 2) if op == "dynamic_reshape" else (4, 3)
    for result, ok in ((T((2, 3), f32), True), (T(wrong, f32), False)):
        m, f, b = _new(T((6,) if op == "dynamic_reshape" else (3,), f32))
        x, shape = f.arguments[0], _ints(b, [2, 3])
        make = (lambda: b.dynamic_reshape(x, shape, result)) if op == "dynamic_reshape" else \
            (lambda: b.dynamic_broadcast_in_dim(x, shape, [1], result))
        if ok:
            b.return_(make())
            verify.check(m)
        else:
            with pytest.raises(OpBuildError, match=r"holds \[2, 3\], but the result type is "
                                                   rf"tensor<{wrong[0]}x{wrong[1]}xf32>"):
                make()


def test_dynamic_pad_and_real_dynamic_slice_check_the_constants_they_hold():
    m, f, b = _new(T((2, 3), f32), T((3, 4), i32))
    x, y = f.arguments
    zero = b.constant(np.float32(0))
    with pytest.raises(OpBuildError, match=r"make shape \[3, 3\] of tensor<2x3xf32>, but the "
                                           "result type is tensor<4x3xf32>"):
        b.dynamic_pad(x, zero, _ints(b, [1, 0]), _ints(b, [0, 0]), _ints(b, [0, 0]),
                      T((4, 3), f32))
    with pytest.raises(OpBuildError, match=r"make shape \[2, 3\] of tensor<3x4xi32>"):
        b.real_dynamic_slice(y, _ints(b, [0, 1]), _ints(b, [2, 4]), _ints(b, [1, 1]),
                             T((3, 3), i32))
    with pytest.raises(OpBuildError, match=r"limit 5, stride 1: need 0 <= start <= limit <= 4"):
        b.real_dynamic_slice(y, _ints(b, [0, 1]), _ints(b, [2, 5]), _ints(b, [1, 1]),
                             T((2, 4), i32))
    b.return_(b.dynamic_pad(x, zero, _ints(b, [1, 0]), _ints(b, [0, 0]), _ints(b, [0, 0]),
                            T((3, 3), f32)),
              b.real_dynamic_slice(y, _ints(b, [0, 1]), _ints(b, [2, 4]), _ints(b, [1, 1]),
                                   T((2, 3), i32)))
    verify.check(m)


def test_a_dynamic_conv_of_constant_padding_must_give_its_result_type():
    m, f, b = _new(T((1, 4, 5, 3), f32), T((3, 3, 3, 2), f32))
    x, k = f.arguments
    pad = b.constant(np.array([[1, 2], [0, 1]], np.int32))
    with pytest.raises(OpBuildError, match=r"'dynamic_conv' the padding held \(\[\[1, 2\], "
                                           r"\[0, 1\]\]\) makes the result tensor<1x5x2x2xf32>, "
                                           r"but the result type is tensor<1x5x3x2xf32>"):
        b.dynamic_conv(x, k, pad, NHWC, T((1, 5, 3, 2), f32), window_strides=(1, 2))
    b.return_(b.dynamic_conv(x, k, pad, NHWC, T((1, 5, 2, 2), f32), window_strides=(1, 2)))
    verify.check(m)
    # jaxlib folds the op into a convolution, then compares that one's shape
    text = m.to_text(locations=False).replace("1x5x2x2", "1x5x3x2")
    with pytest.raises(verify.VerificationError, match=r"inferred shape '\[1, 5, 2, 2\]' is "
                                                       "incompatible with return type"):
        verify.check(text)
    with pytest.raises(ParseError, match="the padding held"):
        hlo.parse(text)


def test_a_dynamic_iota_of_a_constant_shape_must_give_its_result_type():
    m, f, b = _new()
    with pytest.raises(OpBuildError, match=r"'dynamic_iota' operand output_shape holds \[5\], "
                                           r"but the result type is tensor<4xi32>"):
        b.dynamic_iota(b.constant(np.int32([5])), T((4,), i32))
    b.return_(b.dynamic_iota(b.constant(np.int32([4])), T((4,), i32)))
    assert verify.run(m)[0].tolist() == [0, 1, 2, 3]
    # jaxlib takes the contradiction and runs the result type's shape
    text = m.to_text(locations=False).replace("dense<4> : tensor<1xi32>",
                                              "dense<5> : tensor<1xi32>")
    assert verify.run(text)[0].tolist() == [0, 1, 2, 3]
    with pytest.raises(ParseError, match=r"holds \[5\]"):
        hlo.parse(text)


def test_a_composite_decomposes_into_a_function_of_its_own_types():
    m = hlo.Module("c")
    g = m.add_function("dec", [T((3,), f32)])
    gb = g.builder()
    gb.return_(gb.negate(g.arguments[0]))
    f = m.add_function("main", [T((3,), hlo.f16)], visibility="public")
    b = f.builder()
    b.return_(b.composite("my.neg", [f.arguments[0]], "dec", result_types=[T((3,), hlo.f16)]))
    with pytest.raises(ModuleVerificationError, match="decomposes into @dec, of "
                                                      r"\(tensor<3xf32>\)"):
        m.verify()


@pytest.mark.parametrize("name", ["erfc", "bessel_i1e"])
def test_chlo_functions_without_a_narrow_float_form_refuse_8_bit_floats(name):
    for et, ok in ((hlo.f16, True), (hlo.f8E4M3FN, False), (hlo.f4E2M1FN, False)):
        m, f, b = _new(T((2,), et))
        method = getattr(b, f"chlo_{name}")
        if ok:
            b.return_(method(f.arguments[0]))
            verify.check(m)
        else:
            with pytest.raises(OpBuildError, match="no form of it for 8- or 4-bit floats"):
                method(f.arguments[0])


def test_ragged_dot_group_sizes_are_groups_or_batch_then_groups():
    from mhlo_ir.mhlo_attributes import DotDimensionNumbers, RaggedDotDimensionNumbers
    plain = RaggedDotDimensionNumbers(DotDimensionNumbers((), (), (1,), (1,)), (0,), (0,))
    m, f, b = _new(T((4, 3), f32), T((2, 3, 5), f32), T((2, 2), i64))
    with pytest.raises(OpBuildError, match=r"group_sizes tensor<2x2xi64> must be \[groups\]"):
        b.ragged_dot(*f.arguments, plain)
    # lhs dimensions before the ragged one lead the group sizes (jaxlib's rule), batch ones
    # or not
    leading = RaggedDotDimensionNumbers(DotDimensionNumbers((), (), (2,), (1,)), (1,), (0,))
    batched = RaggedDotDimensionNumbers(DotDimensionNumbers((0,), (0,), (2,), (2,)), (1,), (1,))
    for dn, lhs, rhs, sizes, ok, why in [
            (leading, (3, 4, 5), (2, 5, 6), (3, 2), True, None),
            (leading, (3, 4, 5), (2, 5, 6), (4, 2), False, r"\(\[3\] here\)"),
            (batched, (2, 4, 3), (2, 2, 3, 5), (2,), True, None),
            (batched, (2, 4, 3), (2, 2, 3, 5), (2, 2), True, None),
            (batched, (2, 4, 3), (2, 2, 3, 5), (3, 2), False, r"\(\[2\] here\)")]:
        m, f, b = _new(T(lhs, f32), T(rhs, f32), T(sizes, i64))
        if ok:
            b.return_(b.ragged_dot(*f.arguments, dn))
            verify.check(m)
        else:
            with pytest.raises(OpBuildError, match=why):
                b.ragged_dot(*f.arguments, dn)


def test_an_all_gather_over_every_replica_gathers_at_least_its_operand():
    m, f, b = _new(T((2,), hlo.i1))
    with pytest.raises(OpBuildError, match="is not operand tensor<2xi1> gathered"):
        b.all_gather(f.arguments[0], 0, result_types=[T((0,), hlo.i1)])
    b.return_(b.all_gather(f.arguments[0], 0, result_types=[T((4,), hlo.i1)]))
    verify.check(m)


def test_dynamic_conv_padding_is_a_pair_per_spatial_dimension():
    for pshape, ok in (((2, 2), True), ((3, 2), False), ((2,), False)):
        m, f, b = _new(T((1, 4, 4, 1), f32), T((3, 3, 1, 1), f32), T(pshape, i64))
        x, k, p = f.arguments
        if ok:  # (MLIR verifies it; XLA has no lowering of dynamic_conv at all)
            b.return_(b.dynamic_conv(x, k, p, NHWC, T((1, 4, 4, 1), f32)))
            oracle.parse(m.to_text())
        else:
            with pytest.raises(OpBuildError, match=r"d_padding must have shape \[2, 2\]"):
                b.dynamic_conv(x, k, p, NHWC, T((1, 4, 4, 1), f32))


@pytest.mark.parametrize("attr", ["window_strides", "base_dilations", "window_dilations"])
def test_an_empty_window_list_means_its_default_as_jaxlib_reads_it(attr):
    from mhlo_ir.index_array import index_array
    m, f, b = _new(T((5, 4), i32))
    y = b.reduce_window(f.arguments[0], b.constant(np.int32(0)), [2, 2], "add")
    b.return_(y)
    y.attributes = {**y.attributes, attr: index_array([])}
    m.verify()
    x = np.arange(20, dtype=np.int32).reshape(5, 4)
    want = x[:-1, :-1] + x[1:, :-1] + x[:-1, 1:] + x[1:, 1:]
    np.testing.assert_array_equal(verify.run(m.to_text(), x)[0], want)


def test_a_dot_algorithm_mlir_does_not_know_is_refused():
    m, f, b = _new(T((2, 3), f32), T((3, 2), f32))
    for algorithm, why in [
            (hlo.DotAlgorithm("f16", "bf16", "f64"), "is not one XLA knows"),
            (hlo.DotAlgorithm("bf16", "bf16", "f32", num_primitive_operations=2),
             "is not one XLA knows")]:
        with pytest.raises(OpBuildError, match=why):
            b.dot_general(*f.arguments, ((1,), (0,)), algorithm=algorithm)
    with pytest.raises(TypeError, match="precision types are float type names"):
        hlo.DotAlgorithm("bfloat16", "bf16", "f32")
    y = b.dot_general(*f.arguments, ((1,), (0,)),
                      algorithm=hlo.DotAlgorithm("tf32", "tf32", "f32", num_primitive_operations=3))
    b.return_(y)
    oracle.parse(m.to_text())  # (MLIR knows it)


def _jaxlib_rejects(text: str, message: str) -> None:
    """jaxlib's own verdict on ``text``, none of our checks before it."""
    from verify.api import _jaxlib_parse_and_verify
    with pytest.raises(Exception, match=message):
        _jaxlib_parse_and_verify(text)


def test_a_dot_algorithm_takes_default_precisions_only():
    dot = ('"mhlo.dot_general"(%x, %x) {dot_dimension_numbers = #mhlo.dot<'
           'lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, '
           'precision_config = [#mhlo<precision PREC>, #mhlo<precision DEFAULT>], algorithm = '
           '#mhlo.dot_algorithm<lhs_precision_type = f32, rhs_precision_type = f32, '
           'accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, '
           'num_primitive_operations = 1, allow_imprecise_accumulation = false>} : '
           '(tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>')
    text = ("module {\n  func.func public @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
            f"    %0 = {dot}\n    return %0 : tensor<2x2xf32>\n  }}\n}}\n")
    _jaxlib_rejects(text.replace("PREC", "HIGHEST"), "must specify DEFAULT precision config")
    with pytest.raises(ParseError, match="precision_config.*beside an algorithm"):
        hlo.parse(text.replace("PREC", "HIGHEST"))  # (the parser checks each op it reads)
    f32_alg = hlo.DotAlgorithm("f32", "f32", "f32")
    m, f, b = _new(T((2, 2), f32))
    (x,) = f.arguments
    for precision in (["HIGH", "HIGH"], ["DEFAULT", "HIGHEST"]):
        with pytest.raises(OpBuildError, match="must be DEFAULT"):
            b.dot_general(x, x, ((1,), (0,)), precision_config=precision, algorithm=f32_alg)
    b.return_(b.dot_general(x, x, ((1,), (0,)), precision_config=["DEFAULT", "DEFAULT"],
                              algorithm=f32_alg))
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(verify.run(m, a)[0], a @ a)
    hlo.parse(text.replace("PREC", "DEFAULT"))


def test_a_prefetching_copy_copies_a_block_argument_and_is_only_returned():
    """cross_program_prefetch_index: on a copy of a block argument whose result only the
    function's func.return uses, jaxlib takes it; of a computed value, or used by another op
    (a region's terminator included), "synchronous CopyOp should not include
    cross_program_prefetch_index attribute"."""
    text = """module {
  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %n = "mhlo.negate"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    %0 = "mhlo.copy"(%n) {cross_program_prefetch_index = 0 : i32} : (tensor<2xf32>) -> \
tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""
    _jaxlib_rejects(text, "synchronous CopyOp should not include cross_program_prefetch")
    with pytest.raises(ParseError, match=r"^4:10: 'copy' cross_program_prefetch_index needs "
                                         "a copy of a block argument.*result of 'negate'"):
        hlo.parse(text)  # (at the copy's line and column)
    m, f, b = _new(T((2,), f32))
    (x,) = f.arguments
    with pytest.raises(OpBuildError, match="needs a copy of a block argument"):
        b.copy(b.negate(x), cross_program_prefetch_index=0)
    b.return_(b.copy(x, cross_program_prefetch_index=0), b.negate(x))
    a = np.array([1.5, -2.0], np.float32)
    got = verify.run(m, a)
    np.testing.assert_array_equal(got[0], a)
    np.testing.assert_array_equal(got[1], -a)
    # Returned by a region's terminator (an if branch's, of a copy of the function's
    # argument or of a loop body's own argument): jaxlib refuses it too.
    branch = """module {
  func.func public @main(%x: tensor<2xf32>, %p: tensor<i1>) -> tensor<2xf32> {
    %r = "mhlo.if"(%p) ({
      %c = "mhlo.copy"(%x) {cross_program_prefetch_index = 0 : i32} : (tensor<2xf32>) -> \
tensor<2xf32>
      "mhlo.return"(%c) : (tensor<2xf32>) -> ()
    }, {
      "mhlo.return"(%x) : (tensor<2xf32>) -> ()
    }) : (tensor<i1>) -> tensor<2xf32>
    return %r : tensor<2xf32>
  }
}
"""
    _jaxlib_rejects(branch, "synchronous CopyOp should not include cross_program_prefetch")
    with pytest.raises(ModuleVerificationError, match="op 'return'.*uses the result of a "
                                                      "copy with a cross_program_prefetch"):
        hlo.parse(branch)
    m, f, b = _new(T((2,), f32), T((), i32))
    x, n = f.arguments
    looped = b.while_([x, b.constant(np.int32(0))],
                      lambda b, v, i: b.compare(i, n, "LT"),
                      lambda b, v, i: (b.copy(v, cross_program_prefetch_index=0),
                                       b.add(i, b.constant(np.int32(1)))))
    b.return_(looped[0])
    _jaxlib_rejects(m.to_text(), "synchronous CopyOp should not include "
                                 "cross_program_prefetch")
    with pytest.raises(ModuleVerificationError, match="uses the result of a copy"):
        m.verify()
    # Used by another op (here in the function; inside a region it is the same): refused.
    used = text.replace('"mhlo.copy"(%n)', '"mhlo.copy"(%x)').replace(
        "    return %0 : tensor<2xf32>",
        '    %1 = "mhlo.add"(%0, %n) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n'
        "    return %1 : tensor<2xf32>")
    _jaxlib_rejects(used, "synchronous CopyOp should not include cross_program_prefetch")
    with pytest.raises(ModuleVerificationError, match="op 'add'.*uses the result of a copy "
                                                      "with a cross_program_prefetch_index"):
        hlo.parse(used)
    m, f, b = _new(T((2,), f32))
    (x,) = f.arguments
    b.return_(b.add(b.copy(x, cross_program_prefetch_index=0), x))
    with pytest.raises(ModuleVerificationError, match="may only be returned"):
        m.verify()


@pytest.mark.parametrize("lhs_t,rhs_t,out_t", [
    (hlo.bf16, f32, f32), (hlo.i8, f32, f32), (hlo.ui8, hlo.i8, i32),
    (hlo.f8E4M3FN, hlo.f8E5M2, f32), (f32, f32, hlo.bf16),
])
def test_products_of_two_element_types_build_parse_and_run_as_jaxlib_runs_them(lhs_t, rhs_t,
                                                                               out_t):
    """Mixed-precision products (what jax lowers for bf16 x f32 on TPU or fp8 e4m3 x e5m2):
    jaxlib compiles them; the result's element type is given, never inferred. XLA computes in
    the result's type: numpy's product of the operands converted to it (exact here)."""
    m, f, b = _new(T((2, 3), lhs_t), T((3, 4), rhs_t))
    x, y = f.arguments
    if lhs_t is not rhs_t:
        with pytest.raises(OpBuildError, match="different element types.*cannot be inferred"):
            b.dot_general(x, y, ((1,), (0,)))
    b.return_(b.dot_general(x, y, ((1,), (0,)), result_element_type=out_t),
              b.dot(x, y, result_element_type=out_t))
    text = m.to_text()
    assert hlo.parse(text).to_text() == text
    # An einsum of these types: jaxlib compiles it, then returns another element type than
    # its declared result's (ui8 x i8 -> i32 gives i8), so it is refused when read.
    einsum = text.replace('"mhlo.dot"(%arg0, %arg1)',
                          '"mhlo.einsum"(%arg0, %arg1) <{einsum_config = "ab,bc->ac"}>')
    with pytest.raises(ParseError, match="'einsum' (operands lhs and rhs must have one element "
                                         "type|result types .* differ from the inferred)"):
        hlo.parse(einsum)
    if lhs_t is not rhs_t:
        verify.check(einsum)
    a = (np.arange(6).reshape(2, 3) % 3).astype(lhs_t.dtype)
    c = (np.arange(12).reshape(3, 4) % 4 - 1).astype(rhs_t.dtype)
    want = a.astype(np.float64) @ c.astype(np.float64)
    for got in verify.run(m, a, c):
        assert got.dtype == out_t.dtype
        np.testing.assert_array_equal(np.asarray(got, np.float64), want)
    if (lhs_t, rhs_t, out_t) == (hlo.ui8, hlo.i8, i32):
        _, wrong = verify.run(einsum, a, c)
        if wrong.dtype == np.int32:
            pytest.skip("this jaxlib returns a mixed einsum's declared type: the refusal of "
                        "mixed einsums may go")
        assert wrong.dtype == np.int8  # (declared i32)


def test_a_ragged_dot_of_two_element_types_takes_the_results_from_the_caller():
    from mhlo_ir.mhlo_attributes import DotDimensionNumbers, RaggedDotDimensionNumbers
    m, f, b = _new(T((4, 3), hlo.bf16), T((2, 3, 5), f32), T((2,), i32))
    x, w, g = f.arguments
    dims = RaggedDotDimensionNumbers(DotDimensionNumbers((), (), (1,), (1,)), (0,), (0,))
    with pytest.raises(OpBuildError, match=r"different element types.*tensor<4x3xbf16> and "
                                           r"tensor<2x3x5xf32>"):
        b.ragged_dot(x, w, g, dims)
    y = b.ragged_dot(x, w, g, dims, result_element_type=f32)
    assert y.type == T((4, 5), f32)
    b.return_(y)
    verify.check(m)  # (XLA:CPU compiles no ragged_dot: jaxlib's verifier is the oracle)


def test_a_copy_of_a_token_is_refused():
    """jaxlib's conversion of a copy of a token to StableHLO fails ("failed to legalize
    operation 'mhlo.copy'"; through verify.check, "Unable to convert MHLO to StableHLO",
    naming nothing): the builder and the parser say why."""
    text = """module {
  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %t = "mhlo.create_token"() : () -> !mhlo.token
    %c = "mhlo.copy"(%t) : (!mhlo.token) -> !mhlo.token
    return %x : tensor<2xf32>
  }
}
"""
    from verify import _jaxlib
    with pytest.raises(Exception, match="MHLO => StableHLO failed"):
        _jaxlib.xla()[1].mlir.mhlo_to_stablehlo(text.encode())
    with pytest.raises(ParseError, match="'copy' the operand is a !mhlo.token"):
        hlo.parse(text)
    m, f, b = _new(T((2,), f32))
    with pytest.raises(OpBuildError, match="has no value to copy"):
        b.copy(b.create_token())


@pytest.mark.parametrize("last", [1, 0])
def test_an_irfft_of_length_0_takes_stablehlos_one_value_or_none(last):
    m, f, b = _new(T((3, last), hlo.complex64))
    b.return_(b.fft(f.arguments[0], "IRFFT", [0]))
    (out,) = verify.run(m, np.ones((3, last), np.complex64))
    assert out.shape == (3, 0) and out.dtype == np.float32


def test_a_gather_of_no_indices_may_drop_a_dimension_of_slice_size_0():
    # (jax gathers a vmapped batch of 0 so: slice size 0 on a batching dimension of size 0)
    dn = hlo.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(),
                                    start_index_map=(1,), index_vector_dim=1,
                                    operand_batching_dims=(0,),
                                    start_indices_batching_dims=(0,))
    m, f, b = _new(T((0, 3), f32), T((0, 1), i32))
    b.return_(b.gather(*f.arguments, dn, [0, 1]))
    (out,) = verify.run(m, np.zeros((0, 3), np.float32), np.zeros((0, 1), np.int32))
    assert out.shape == (0, 1)
    m, f, b = _new(T((2, 3), f32), T((2, 1), i32))  # with indices, still refused
    with pytest.raises(OpBuildError, match=r"slice_sizes\[0\] = 0 on a dimension the result "
                                           "drops"):
        b.gather(*f.arguments, hlo.GatherDimensionNumbers(
            offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
            index_vector_dim=1), [0, 3])
