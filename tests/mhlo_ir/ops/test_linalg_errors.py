"""Build-time errors of the linalg, windows and random chapters: each names the op, the operand
or attribute, and expected vs actual."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir import OpBuildError
from mhlo_ir.ops.linalg import RaggedDotDimensionNumbers

T = hlo.tensor
NHWC = hlo.ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))


def _args(*types):
    m = hlo.Module("e")
    f = m.add_function("main", list(types), visibility="public")
    return f.builder(), f.arguments


def test_dot_contracting_size_mismatch():
    b, (x, y) = _args(T((2, 3), hlo.f32), T((4, 5), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'dot' contracting dimensions differ in size: lhs "
                                           r"dimension 1 has size 3 but rhs dimension 0 has "
                                           r"size 4"):
        b.dot(x, y)


def test_dot_rank_3_rejected():
    b, (x, y) = _args(T((2, 3, 4), hlo.f32), T((4, 5), hlo.f32))
    with pytest.raises(OpBuildError, match="'dot' operands must have rank 1 or 2"):
        b.dot(x, y)


def test_dot_result_element_type_is_used():
    b, (x, y) = _args(T((2, 3), hlo.i8), T((3,), hlo.i8))
    assert b.dot(x, y, result_element_type=hlo.i32).type == T((2,), hlo.i32)


@pytest.mark.parametrize("config, message", [
    ("ab,bc", "must look like 'ab,bc->ac'"),
    ("ab,bc->ad", "output subscript 'd' appears in no input"),
    ("abc,bc->ac", "gives 3 subscripts .* for the lhs operand of rank 2"),
    ("ab,ac->bc", "subscript 'a' has size 2 and 3"),
    ("a...,bc->ac", "only letters are supported"),
])
def test_einsum_config_errors(config, message):
    b, (x, y) = _args(T((2, 3), hlo.f32), T((3, 4), hlo.f32))
    with pytest.raises(OpBuildError, match="'einsum' .*" + message):
        b.einsum(x, y, config)


def test_einsum_infers_shape():
    b, (x, y) = _args(T((2, 3), hlo.f32), T((3, 4), hlo.f32))
    assert b.einsum(x, y, "ab,bc->ca").type == T((4, 2), hlo.f32)


def test_convolution_kernel_features_must_match_groups():
    b, (x, k) = _args(T((1, 5, 5, 4), hlo.f32), T((3, 3, 4, 6), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'convolution' kernel input feature dimension has "
                                           r"size 4, expected 2 \(input features 4 / "
                                           r"feature_group_count 2\)"):
        b.convolution(x, k, NHWC, feature_group_count=2)


def test_convolution_both_group_counts():
    b, (x, k) = _args(T((2, 5, 5, 4), hlo.f32), T((3, 3, 2, 4), hlo.f32))
    with pytest.raises(OpBuildError, match="cannot both exceed 1"):
        b.convolution(x, k, NHWC, feature_group_count=2, batch_group_count=2)


def test_convolution_padding_shape():
    b, (x, k) = _args(T((1, 5, 5, 1), hlo.f32), T((3, 3, 1, 1), hlo.f32))
    with pytest.raises(OpBuildError, match=r"padding must have shape \[2, 2\].*got \[3, 2\]"):
        b.convolution(x, k, NHWC, padding=[(1, 1), (1, 1), (0, 0)])


def test_convolution_stride_positive():
    b, (x, k) = _args(T((1, 5, 5, 1), hlo.f32), T((3, 3, 1, 1), hlo.f32))
    with pytest.raises(OpBuildError, match=r"window_strides\[1\] = 0 must be positive"):
        b.convolution(x, k, NHWC, window_strides=(1, 0))


def test_convolution_rank_mismatch():
    b, (x, k) = _args(T((1, 5, 1), hlo.f32), T((3, 3, 1, 1), hlo.f32))
    with pytest.raises(OpBuildError, match="'convolution' lhs must have rank 4"):
        b.convolution(x, k, NHWC)


def test_convolution_shape_inference():
    # 5 -> dilated 9 -> padded 12; window 3 dilated to 5; stride 2: (12 - 5) // 2 + 1 = 4.
    b, (x, k) = _args(T((2, 5, 7, 3), hlo.f32), T((3, 2, 3, 8), hlo.f32))
    y = b.convolution(x, k, NHWC, window_strides=(2, 1), padding=[(1, 2), (0, 0)],
                      lhs_dilation=(2, 1), rhs_dilation=(2, 1))
    assert y.type == T((2, 4, 6, 8), hlo.f32)


def test_dynamic_conv_padding_must_be_integer():
    b, (x, k, p) = _args(T((1, 4, 4, 1), hlo.f32), T((3, 3, 1, 1), hlo.f32), T((2, 2), hlo.f32))
    with pytest.raises(OpBuildError, match="'dynamic_conv' operand d_padding must have integer"):
        b.dynamic_conv(x, k, p, NHWC, T((1, 4, 4, 1), hlo.f32))


def test_triangular_solve_b_size():
    b, (a, r) = _args(T((3, 3), hlo.f32), T((2, 4), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'triangular_solve' with left_side = true, dimension "
                                           r"0 of b must have size 3"):
        b.triangular_solve(a, r)


def test_triangular_solve_non_square_and_int():
    b, (a, r, i) = _args(T((3, 2), hlo.f32), T((3, 2), hlo.f32), T((2, 2), hlo.i32))
    with pytest.raises(OpBuildError, match="square matrices"):
        b.triangular_solve(a, r)
    with pytest.raises(OpBuildError, match="operand a must have float or complex elements"):
        b.triangular_solve(i, i)


def test_triangular_solve_transpose_enum():
    b, (a, r) = _args(T((3, 3), hlo.f32), T((3, 2), hlo.f32))
    with pytest.raises(OpBuildError, match="transpose_a"):
        b.triangular_solve(a, r, transpose_a="SIDEWAYS")


def test_cholesky_non_square():
    b, (a,) = _args(T((2, 3), hlo.f64))
    with pytest.raises(OpBuildError, match="'cholesky' operand a must be a batch of square"):
        b.cholesky(a)


@pytest.mark.parametrize("t, kind, lengths, message", [
    (T((4, 8), hlo.f32), "FFT", [8], "FFT needs a complex operand"),
    (T((4, 8), hlo.complex64), "RFFT", [8], "RFFT needs an f32 or f64 operand"),
    (T((4, 8), hlo.complex64), "FFT", [4], r"the trailing dimensions .* must be \[4\]"),
    (T((4, 8), hlo.complex64), "IRFFT", [8], r"the trailing .* \[5\] for IRFFT"),
    (T((8,), hlo.complex64), "FFT", [1, 2, 3, 4], "fft_length must have 1 to 3 entries"),
])
def test_fft_errors(t, kind, lengths, message):
    b, (x,) = _args(t)
    with pytest.raises(OpBuildError, match="'fft' " + message):
        b.fft(x, kind, lengths)


def test_fft_result_types():
    b, (x, c) = _args(T((2, 8), hlo.f64), T((2, 5), hlo.complex64))
    assert b.fft(x, "RFFT", [8]).type == T((2, 5), hlo.complex128)
    assert b.fft(c, "IRFFT", [8]).type == T((2, 8), hlo.f32)


def test_batch_norm_errors():
    b, (x, s, s3) = _args(T((2, 4), hlo.f32), T((4,), hlo.f32), T((3,), hlo.f32))
    with pytest.raises(OpBuildError, match="'batch_norm_training' feature_index 2 is out of range"):
        b.batch_norm_training(x, s, s, epsilon=1e-3, feature_index=2)
    with pytest.raises(OpBuildError, match=r"'batch_norm_inference' operand offset must be "
                                           r"tensor<4xf32>"):
        b.batch_norm_inference(x, s, s3, s, s, epsilon=1e-3, feature_index=1)
    with pytest.raises(OpBuildError, match="'batch_norm_grad' operand grad_output must have the "
                                           "shape of operand"):
        b.batch_norm_grad(x, s, s, s, s, epsilon=1e-3, feature_index=1)


def test_topk_k_too_large():
    b, (x,) = _args(T((2, 3), hlo.f32))
    with pytest.raises(OpBuildError, match="'topk' k = 4 must be between 0 and the last "
                                           "dimension's size 3"):
        b.topk(x, 4)


def test_ragged_dot_group_size_mismatch():
    b, (x, y, g) = _args(T((4, 3), hlo.f32), T((3, 3, 5), hlo.f32), T((2,), hlo.i64))
    dn = RaggedDotDimensionNumbers(hlo.DotDimensionNumbers((), (), (1,), (1,)), (0,), (0,))
    with pytest.raises(OpBuildError, match="'ragged_dot' rhs group dimension 0 must exist and "
                                           "have size 2"):
        b.ragged_dot(x, y, g, dn)


def test_reduce_window_errors():
    b, (x,) = _args(T((4, 4), hlo.f32))
    init = b.constant(np.float32(0))
    add = lambda r, a, e: r.add(a, e)   # noqa: E731
    with pytest.raises(OpBuildError, match=r"'reduce_window' window_dimensions has 3 entries, "
                                           r"expected 2"):
        b.reduce_window(x, init, (2, 2, 2), add)
    with pytest.raises(OpBuildError, match=r"padding must have shape \[2, 2\]"):
        b.reduce_window(x, init, (2, 2), add, padding=[(1, 1)])
    with pytest.raises(OpBuildError, match=r"'reduce_window' body returns \(tensor<i1>\), "
                                           r"expected \(tensor<f32>\)"):
        b.reduce_window(x, init, (2, 2), lambda r, a, e: r.compare(a, e, "GT"))


def test_reduce_window_shape_inference():
    b, (x,) = _args(T((4, 5), hlo.f32))
    y = b.reduce_window(x, b.constant(np.float32(0)), (2, 3), lambda r, a, e: r.add(a, e),
                        window_strides=(2, 1), padding=[(1, 1), (0, 0)])
    assert y.type == T((3, 3), hlo.f32)


def test_select_and_scatter_source_shape():
    b, (x, s) = _args(T((4, 4), hlo.f32), T((3, 3), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'select_and_scatter' operand source must have the "
                                           r"shape of the window grid \[2, 2\]"):
        b.select_and_scatter(x, s, b.constant(np.float32(0)),
                             lambda r, a, c: r.compare(a, c, "GE"), lambda r, a, c: r.add(a, c),
                             window_dimensions=(2, 2), window_strides=(2, 2))


def test_select_and_scatter_select_must_return_i1():
    b, (x, s) = _args(T((4, 4), hlo.f32), T((2, 2), hlo.f32))
    with pytest.raises(OpBuildError, match=r"select returns \(tensor<f32>\), expected "
                                           r"\(tensor<i1>\)"):
        b.select_and_scatter(x, s, b.constant(np.float32(0)), lambda r, a, c: r.add(a, c),
                             lambda r, a, c: r.add(a, c), window_dimensions=(2, 2),
                             window_strides=(2, 2))


def test_map_errors():
    b, (x, y) = _args(T((2, 3), hlo.f32), T((3, 2), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'map' operand inputs\[1\] has shape \[3, 2\]"):
        b.map([x, y], lambda r, a, c: r.add(a, c))
    with pytest.raises(OpBuildError, match=r"'map' dimensions must be \[0, 1\]"):
        b.map(x, lambda r, a: a, dimensions=(1, 0))


def test_scan_carry_type_mismatch():
    b, (x,) = _args(T((4,), hlo.f32))
    c = b.constant(np.float32(0))
    with pytest.raises(OpBuildError, match=r"'scan' body returns \(tensor<f32>, tensor<i32>\), "
                                           r"expected \(tensor<f32>, tensor<f32>\)"):
        b.scan(x, c, 0, lambda r, v, k: [v, r.constant(np.int32(0))])


def test_rng_normal_needs_float():
    b, (lo, hi) = _args(T((), hlo.i32), T((), hlo.i32))
    with pytest.raises(OpBuildError, match="'rng' NORMAL needs a result with float elements"):
        b.rng(lo, hi, (3,), "NORMAL")


def test_rng_bounds_must_match_result():
    b, (lo, hi) = _args(T((), hlo.f32), T((), hlo.f64))
    with pytest.raises(OpBuildError, match="'rng' operand b must be tensor<f32>"):
        b.rng(lo, hi, (3,))


def test_rng_bit_generator_state_size():
    b, (s,) = _args(T((3,), hlo.ui64))
    with pytest.raises(OpBuildError, match="'rng_bit_generator' THREE_FRY needs initial_state "
                                           "tensor<2xui64>, got tensor<3xui64>"):
        b.rng_bit_generator(s, (4,), hlo.ui32, "THREE_FRY")


def test_rng_get_and_update_state_type():
    b, _ = _args()
    assert b.rng_get_and_update_state(3).type == T((2,), hlo.ui64)


def test_negative_padded_size_is_refused_before_xla_aborts():
    import numpy as np
    import mhlo_ir as hlo
    m = hlo.Module("t")
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    with pytest.raises(hlo.OpBuildError, match=r"'reduce_window' dimension 0: padding \(-2, -1\)"):
        b.reduce_window(f.arguments[0], b.constant(np.float32(0)), [1],
                        lambda r, a, e: r.add(a, e), padding=[(-2, -1)])


def test_convolution_takes_its_layout_as_the_printer_writes_it():
    # The layout string is MLIR's spelling inside #mhlo.conv<...>: the same numbers as the
    # ConvDimensionNumbers it stands for, and the printed text reads back to it.
    import verify
    b, (x, k) = _args(T((1, 4, 4, 2), hlo.f32), T((3, 3, 2, 5), hlo.f32))
    text = "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"
    y = b.convolution(x, k, text, padding=[(1, 1), (1, 1)])
    assert y.attributes["dimension_numbers"] == NHWC
    b.return_(y)
    assert f"#mhlo.conv<{text}>" in hlo.parse(b.function.module.to_text()).to_text()
    xs = np.random.default_rng(0).standard_normal((1, 4, 4, 2)).astype(np.float32)
    ks = np.random.default_rng(1).standard_normal((3, 3, 2, 5)).astype(np.float32)
    got = verify.run(b.function.module, xs, ks)[0]
    xp = np.pad(xs, ((0, 0), (1, 1), (1, 1), (0, 0))).astype(np.float64)
    want = np.array([[[np.einsum("hwi,hwio->o", xp[0, i:i + 3, j:j + 3], ks)
                       for j in range(4)] for i in range(4)]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout, why", [
    ("[b, 0, f]x[0, i]->[b, 0, f]", "conv dimensions must name 'i' and 'o'"),
    ("NHWC", "expected '\\['"),
    ("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f", "expected ',' or '\\]'"),
])
def test_convolution_layouts_that_do_not_read_name_the_op_and_the_reason(layout, why):
    b, (x, k) = _args(T((1, 4, 4, 2), hlo.f32), T((3, 3, 2, 5), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'convolution' attribute dimension_numbers: .* "
                                           r"is not a convolution layout.*" + why):
        b.convolution(x, k, layout)


# -- found by a review of what reached jaxlib: each refusal is what jaxlib says of the text ----

def _jaxlib_refuses(text: str, message: str) -> None:
    from tests.oracle import mlir_generic
    with pytest.raises(Exception, match=message):
        mlir_generic(text)


def _ge(r, p, q):
    return r.compare(p, q, "GE")


def test_select_and_scatter_needs_window_dimensions_and_the_operands_element_type():
    b, (x, s, z) = _args(T((4, 4), hlo.f32), T((2, 2), hlo.i32), T((), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'select_and_scatter' requires attribute "
                                           r"window_dimensions"):
        b.select_and_scatter(x, b.convert(s, hlo.f32), z, _ge, "add")
    with pytest.raises(OpBuildError, match=r"operand source must have the operand's element "
                                           r"type f32, got tensor<2x2xi32>"):
        b.select_and_scatter(x, s, b.convert(z, hlo.i32), _ge, "add",
                             window_dimensions=(2, 2), window_strides=(2, 2))
    ok = b.select_and_scatter(x, b.convert(s, hlo.f32), z, _ge, "add",
                              window_dimensions=(2, 2), window_strides=(2, 2))
    assert ok.type == x.type
    body = ('func.func @main(%x: tensor<4x4xf32>, %s: tensor<{s}>, %z: tensor<{z}>) -> '
            'tensor<4x4xf32> {{\n  %0 = "mhlo.select_and_scatter"(%x, %s, %z) <{{{w}}}> ({{\n'
            '  ^bb0(%a: tensor<f32>, %c: tensor<f32>):\n'
            '    %1 = "mhlo.compare"(%a, %c) <{{comparison_direction = '
            '#mhlo<comparison_direction GE>}}> : (tensor<f32>, tensor<f32>) -> tensor<i1>\n'
            '    "mhlo.return"(%1) : (tensor<i1>) -> ()\n  }}, {{\n'
            '  ^bb0(%a: tensor<{z}>, %c: tensor<{z}>):\n'
            '    %1 = "mhlo.add"(%a, %c) : (tensor<{z}>, tensor<{z}>) -> tensor<{z}>\n'
            '    "mhlo.return"(%1) : (tensor<{z}>) -> ()\n  }}) : (tensor<4x4xf32>, '
            'tensor<{s}>, tensor<{z}>) -> tensor<4x4xf32>\n  return %0 : tensor<4x4xf32>\n}}')
    strides = "window_strides = dense<2> : tensor<2xi64>"
    _jaxlib_refuses(body.format(s="2x2xf32", z="f32", w=strides), "window-dimensions size")
    dims = "window_dimensions = dense<2> : tensor<2xi64>, " + strides
    _jaxlib_refuses(body.format(s="2x2xi32", z="i32", w=dims), "source-type")


def test_convolution_refuses_a_window_of_size_zero():
    b, (x, k) = _args(T((1, 4, 4, 2), hlo.f32), T((2, 0, 2, 3), hlo.f32))
    with pytest.raises(OpBuildError, match=r"'convolution' rhs spatial dimension 1 .* has size "
                                           r"0: windows must be at least 1 wide"):
        b.convolution(x, k, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]")
    _jaxlib_refuses(
        'func.func @main(%x: tensor<1x4x4x2xf32>, %k: tensor<2x0x2x3xf32>) -> tensor<1x3x5x3xf32>'
        ' {\n  %0 = mhlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->'
        '[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}'
        ' : (tensor<1x4x4x2xf32>, tensor<2x0x2x3xf32>) -> tensor<1x3x5x3xf32>\n'
        '  return %0 : tensor<1x3x5x3xf32>\n}', "positive value")


def test_rfft_of_length_zero_has_no_values():
    import verify
    m = hlo.Module("e")
    f = m.add_function("main", [T((2, 0), hlo.f32)])
    b = f.builder()
    y = b.fft(f.arguments[0], "RFFT", [2, 0])
    assert y.type == T((2, 0), hlo.complex64)
    b.return_(y)
    verify.check(m)  # jaxlib infers the same


def test_an_f32_attribute_past_f32s_range_is_refused_without_numpys_warning():
    """batch_norm's epsilon (an f32 attribute): the range check casts nothing, so numpy's
    "overflow encountered in cast" no longer precedes the error; the boundary is numpy's
    rounding (the largest f32 plus half its last step rounds to inf)."""
    import warnings
    b, (x, s) = _args(T((2, 3), hlo.f32), T((3,), hlo.f32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(OpBuildError, match="overflows f32"):
            b.batch_norm_inference(x, s, s, s, s, epsilon=1e300, feature_index=1)
        edge = float(np.finfo(np.float32).max) + 2.0 ** 103
        with pytest.raises(OpBuildError, match="overflows f32"):
            b.batch_norm_inference(x, s, s, s, s, epsilon=edge, feature_index=1)
        b.batch_norm_inference(x, s, s, s, s, epsilon=float(np.nextafter(edge, 0)),
                               feature_index=1)
