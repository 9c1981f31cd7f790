"""mhlo_ir.quant_lowering: quantized programs as integer and float math, run by XLA.

Oracles: StableHLO's spec semantics computed in numpy (quantize, dequantize exactly, in f32 as
the spec's expressed type; requantization, add and dot products within one storage step of
the dequantize-compute-quantize result, as StableHLO's lowering reassociates the scales), and
StableHLO's own expected values for the corpus' 106 quantized modules (tests/verify/
test_conformance.py runs them).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mhlo_ir as hlo
import verify
from mhlo_ir.quant import quantized
from mhlo_ir.quant_lowering import has_quantized, lower_quantized
from tests.mhlo_ir.ops.cases import module

T = hlo.tensor
F32 = np.float32


# -- numpy models of StableHLO's spec ---------------------------------------------------------

def np_quantize(x, q):
    """spec.md's quantize: round_nearest_even(x / scale + zero_point), clamped, in f32."""
    x = np.asarray(x, F32)
    if q.axis is None:
        s, z = F32(q.scales[0]), F32(q.zero_points[0])
    else:
        shape = [1] * x.ndim
        shape[q.axis] = -1
        s = np.array(q.scales, F32).reshape(shape)
        z = np.array(q.zero_points, F32).reshape(shape)
    r = np.round(x / s + z)
    return np.clip(r, q.storage_min, q.storage_max).astype(q.storage.dtype)


def np_dequantize(stored, q, dtype=F32):
    stored = np.asarray(stored).astype(np.int64)
    if q.axis is None:
        return ((stored - q.zero_points[0]) * np.float64(q.scales[0])).astype(dtype)
    shape = [1] * stored.ndim
    shape[q.axis] = -1
    z = np.array(q.zero_points).reshape(shape)
    s = np.array(q.scales).reshape(shape)
    return ((stored - z) * s).astype(dtype)


storage_types = st.sampled_from([hlo.i8, hlo.ui8, hlo.i4, hlo.i16, hlo.ui4, hlo.i2])


@st.composite
def per_tensor_types(draw, storage=storage_types):
    et = draw(storage)
    lo, hi = ((-(1 << (et.bits - 1)), (1 << (et.bits - 1)) - 1) if et.kind == "sint"
              else (0, (1 << et.bits) - 1))
    scale = draw(st.floats(1e-3, 10.0))
    zp = draw(st.integers(lo, hi))
    return quantized(et, hlo.f32, scale, zp)


# -- quantize and dequantize -----------------------------------------------------------------

@given(per_tensor_types(), st.lists(st.floats(-300, 300, width=32), min_size=1, max_size=8))
def test_quantize_and_dequantize_are_the_spec_exactly(q, xs):
    x = np.array(xs, F32)
    m = module([T(x.shape, hlo.f32)], lambda b, v: (b.uniform_quantize(v, q),
                                                    b.uniform_dequantize(b.uniform_quantize(v, q))))
    stored, back = verify.run(m, x)  # main returns the stored integers of a quantized tensor
    want = np_quantize(x, q)
    np.testing.assert_array_equal(stored, want)
    assert stored.dtype == q.storage.dtype
    np.testing.assert_array_equal(back, ((want.astype(np.int32) - np.int32(q.zero_point))
                                         .astype(F32) * F32(q.scale)))


def test_per_axis_quantize_and_dequantize():
    q = quantized(hlo.i8, hlo.f32, [0.5, 0.25, 2.0], [0, -3, 7], axis=1)
    x = np.array([[1.3, -2.6, 7.7], [100.0, -100.0, 0.2]], F32)
    m = module([T((2, 3), hlo.f32)], lambda b, v: (
        b.uniform_quantize(v, q), b.uniform_dequantize(b.uniform_quantize(v, q))))
    stored, back = verify.run(m, x)
    np.testing.assert_array_equal(stored, np_quantize(x, q))
    np.testing.assert_array_equal(back, np_dequantize(np_quantize(x, q), q))


@given(per_tensor_types(st.just(hlo.i8)), per_tensor_types(st.just(hlo.i8)),
       st.lists(st.integers(-128, 127), min_size=1, max_size=8))
def test_requantize_is_within_a_step_of_dequantize_then_quantize(qa, qb, values):
    stored = np.array(values, np.int8)
    x = np_dequantize(stored, qa)
    m = module([T(x.shape, hlo.f32)], lambda b, v: b.uniform_quantize(b.uniform_quantize(v, qa),
                                                                     qb))
    # the input is exactly representable: quantizing it gives ``stored`` back
    assert (np_quantize(x, qa) == stored).all()
    (got,) = verify.run(m, x)
    want = np_quantize(np_dequantize(stored, qa, np.float64), qb)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


@given(per_tensor_types(st.just(hlo.i8)), per_tensor_types(st.just(hlo.i8)),
       per_tensor_types(st.just(hlo.i8)), st.lists(st.integers(-128, 127), min_size=2,
                                                    max_size=8))
def test_add_is_within_a_step_of_the_spec(qa, qb, qr, values):
    a = np.array(values, np.int8)
    bv = a[::-1].copy()
    xa, xb = np_dequantize(a, qa), np_dequantize(bv, qb)

    def body(b, u, v):
        s = b.create("add", (b.uniform_quantize(u, qa), b.uniform_quantize(v, qb)),
                     result_types=[T(a.shape, qr)]).results[0]
        return s
    (got,) = verify.run(module([T(a.shape, hlo.f32)] * 2, body), xa, xb)
    exact = np_dequantize(a, qa, np.float64) + np_dequantize(bv, qb, np.float64)
    want = np_quantize(exact, qr)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


# -- dot-like ops -----------------------------------------------------------------------------

def _dot_case(lhs_zp, res_zp, res_scale, rhs_axis=False):
    rng = np.random.default_rng(abs(lhs_zp) + res_zp)
    ql = quantized(hlo.i8, hlo.f32, 0.05, lhs_zp)
    # the rhs has zero point 0 (StableHLO's C15); per axis, along its non-contracted dimension
    qr = quantized(hlo.i8, hlo.f32, [0.02] * 5, axis=2) if rhs_axis else \
        quantized(hlo.i8, hlo.f32, 0.02)
    qres = quantized(hlo.i32, hlo.f32, [res_scale] * 5, axis=2) if rhs_axis else \
        quantized(hlo.i32, hlo.f32, res_scale, res_zp)
    a = rng.integers(-128, 128, (2, 3, 4)).astype(np.int8)
    c = rng.integers(-128, 128, (2, 4, 5)).astype(np.int8)
    return ql, qr, qres, a, c


@pytest.mark.parametrize("lhs_zp, res_zp, res_scale, rhs_axis", [
    (0, 0, 0.001, False),     # the corpus' case: no zero points
    (-128, 0, 0.001, False),  # lhs zero point: the rhs sums
    (-20, -7, 0.001, False),  # and a result zero point
    (-20, -7, 0.001 + 1e-7, False),  # combined scale near 1: no f32 rescaling
    (13, 0, 0.001, True),     # rhs and result quantized per axis
])
def test_quantized_dot_general_is_within_a_step_of_the_spec(lhs_zp, res_zp, res_scale,
                                                            rhs_axis):
    ql, qr, qres, a, c = _dot_case(lhs_zp, res_zp, res_scale, rhs_axis)
    xa, xc = np_dequantize(a, ql), np_dequantize(c, qr)

    def body(b, u, v):
        return b.create("dot_general", (b.uniform_quantize(u, ql), b.uniform_quantize(v, qr)),
                        {"dot_dimension_numbers": {
                            "lhs_batching_dimensions": (0,), "rhs_batching_dimensions": (0,),
                            "lhs_contracting_dimensions": (2,),
                            "rhs_contracting_dimensions": (1,)}},
                        result_types=[T((2, 3, 5), qres)]).results[0]
    m = module([T(a.shape, hlo.f32), T(c.shape, hlo.f32)], body)
    (got,) = verify.run(m, xa, xc)
    exact = np.einsum("bij,bjk->bik", np_dequantize(a, ql, np.float64),
                      np_dequantize(c, qr, np.float64))
    want = np.round(exact / res_scale) + res_zp
    assert got.dtype == np.int32
    # the lowering scales the i32 product in f32 and truncates: a step, and f32's rounding
    # of products in the thousands; a combined scale within 0.001 of 1 it leaves out, as
    # StableHLO's does (that much relative error)
    combined = ql.scales[0] * qr.scales[0] / qres.scales[0]
    slack = 0 if abs(combined - 1) > 0.001 else np.abs(want - res_zp) * abs(combined - 1)
    assert (np.abs(got.astype(np.int64) - want) <= 2 + slack).all()


def test_hybrid_dot_general_dequantizes_the_weights():
    qr = quantized(hlo.i8, hlo.f32, 0.5)
    w = np.array([[1, -2, 3], [4, 5, -6]], np.int8)
    x = np.array([[1.5, -2.0], [0.25, 4.0]], F32)

    def body(b, u, v):
        return b.create("dot_general", (u, b.uniform_quantize(v, qr)), {
            "dot_dimension_numbers": {"lhs_contracting_dimensions": (1,),
                                      "rhs_contracting_dimensions": (0,)}},
            result_types=[T((2, 3), hlo.f32)]).results[0]
    m = module([T((2, 2), hlo.f32), T((2, 3), hlo.f32)], body)
    (got,) = verify.run(m, x, np_dequantize(w, qr))
    np.testing.assert_allclose(got, x @ np_dequantize(w, qr), rtol=1e-6)
    assert "optimization_barrier" in lower_quantized(m).to_text()


NHWC = dict(input_batch_dimension=0, input_feature_dimension=3, input_spatial_dimensions=(1, 2),
            kernel_input_feature_dimension=2, kernel_output_feature_dimension=3,
            kernel_spatial_dimensions=(0, 1), output_batch_dimension=0,
            output_feature_dimension=3, output_spatial_dimensions=(1, 2))


def test_hybrid_convolution_subtracts_the_weights_zero_point():
    qr = quantized(hlo.i8, hlo.f32, 0.25, 3)  # convolutions may have a rhs zero point
    k = np.random.default_rng(3).integers(-128, 128, (2, 2, 1, 2)).astype(np.int8)
    x = np.linspace(-2, 2, 9, dtype=F32).reshape(1, 3, 3, 1)
    dn = hlo.ConvDimensionNumbers(**NHWC)

    def body(b, u, v):
        return b.create("convolution", (u, b.uniform_quantize(v, qr)), {
            "dimension_numbers": dn, "feature_group_count": 1, "batch_group_count": 1},
            result_types=[T((1, 2, 2, 2), hlo.f32)]).results[0], b.convolution(u, v, dn)
    m = module([T(x.shape, hlo.f32), T(k.shape, hlo.f32)], body)
    got, ref = verify.run(m, x, np_dequantize(k, qr))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    text = lower_quantized(m).to_text()
    assert "optimization_barrier" in text and '"mhlo.subtract"' in text


def test_nhwc_convolution_pads_with_the_zero_point():
    """The integer convolution (rhs zero point 0, NHWC) pads the lhs with its zero point,
    which stands for 0.0: the result equals a float convolution of the dequantized values
    padded with zeros."""
    ql = quantized(hlo.i8, hlo.f32, 0.1, -50)
    qr = quantized(hlo.i8, hlo.f32, 0.05, 0)
    qres = quantized(hlo.i32, hlo.f32, 0.005)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    k = rng.integers(-128, 128, (3, 3, 2, 3)).astype(np.int8)
    dn = hlo.ConvDimensionNumbers(**NHWC)  # [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]

    def body(b, u, v):
        out_q = b.create("convolution", (b.uniform_quantize(u, ql), b.uniform_quantize(v, qr)),
                         {"dimension_numbers": dn, "padding": [(1, 1), (1, 1)],
                          "feature_group_count": 1, "batch_group_count": 1},
                         result_types=[T((1, 4, 4, 3), qres)]).results[0]
        out_f = b.convolution(u, v, dn, padding=[(1, 1), (1, 1)])
        return out_q, out_f
    m = module([T(a.shape, hlo.f32), T(k.shape, hlo.f32)], body)
    lowered = lower_quantized(m).to_text()
    assert '"mhlo.pad"' in lowered and "-50" in lowered
    got, ref = verify.run(m, np_dequantize(a, ql), np_dequantize(k, qr))
    want = np.round(ref.astype(np.float64) / qres.scale)
    assert np.abs(got - want).max() <= 2


# -- the rest ---------------------------------------------------------------------------------

def test_other_ops_dequantize_compute_and_quantize():
    q = quantized(hlo.i8, hlo.f32, 0.02, -10)
    qo = quantized(hlo.i8, hlo.f32, 0.01, 0)
    x = np.linspace(-2.5, 2.3, 12).astype(F32)
    m = module([T((12,), hlo.f32)], lambda b, v: b.create(
        "sine", (b.uniform_quantize(v, q),), result_types=[T((12,), qo)]).results[0])
    (got,) = verify.run(m, x)
    want = np_quantize(np.sin(np_dequantize(np_quantize(x, q), q).astype(np.float64)), qo)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1


def test_data_movement_moves_stored_integers():
    q = quantized(hlo.i8, hlo.f32, 0.5, 1)
    x = np.arange(6, dtype=F32).reshape(2, 3)

    def body(b, v):
        s = b.uniform_quantize(v, q)
        t = b.transpose(s, (1, 0))
        c = b.concatenate([t, t], 0)
        return b.slice(c, (1, 0), (4, 2)), b.maximum(s, s)
    stored, mx = verify.run(module([T((2, 3), hlo.f32)], body), x)
    q_x = np_quantize(x, q)
    np.testing.assert_array_equal(stored, np.concatenate([q_x.T, q_x.T])[1:4, 0:2])
    np.testing.assert_array_equal(mx, q_x)
    text = lower_quantized(module([T((2, 3), hlo.f32)], body)).to_text()
    assert "!quant" not in text and "tensor<3x2xi8>" in text


def test_text_with_quantized_types_runs_through_verify():
    q = "tensor<3x!quant.uniform<i8:f32, 0.5:2>>"
    text = f"""
    func.func public @main(%x: tensor<3xf32>) -> tensor<3xf32> {{
      %q = stablehlo.uniform_quantize %x : (tensor<3xf32>) -> {q}
      %n = stablehlo.negate %q : {q}
      %d = stablehlo.uniform_dequantize %n : ({q}) -> tensor<3xf32>
      return %d : tensor<3xf32>
    }}"""
    (got,) = verify.run(text, np.array([1.0, -3.0, 70.0], F32))
    # 70 is stored as 127 (the clamp), which stands for (127 - 2) * 0.5 = 62.5
    np.testing.assert_array_equal(got, [-1.0, 3.0, -62.5])


def test_the_input_module_is_left_as_it_was():
    q = quantized(hlo.i8, hlo.f32, 0.5)
    m = module([T((2,), hlo.f32)], lambda b, v: b.uniform_dequantize(b.uniform_quantize(v, q)))
    before = m.to_text()
    lowered = lower_quantized(m)
    assert m.to_text() == before and has_quantized(m) and not has_quantized(lowered)


@pytest.mark.parametrize("expressed", [hlo.bf16, hlo.f16])
def test_what_stablehlos_lowering_does_not_take_is_an_error(expressed):
    q = quantized(hlo.i8, expressed, 0.5)
    m = module([T((2,), expressed)], lambda b, v: b.uniform_dequantize(b.uniform_quantize(v, q)))
    with pytest.raises(hlo.OpBuildError, match="f32 expressed types only"):
        lower_quantized(m)
    with pytest.raises(verify.VerificationError, match="f32 expressed types only"):
        verify.compile(m)


def test_quantized_values_travel_through_calls_and_loops():
    """Carriers (func.call, while, return) take quantized values as they are: their stored
    integers, with the signatures lowered alike."""
    q = quantized(hlo.i8, hlo.f32, 0.5, 1)
    m = hlo.Module("q")
    qt = T((3,), q)
    helper = m.add_function("double", [qt], visibility="private")
    hb = helper.builder()
    (hx,) = helper.arguments
    hb.return_(hb.create("add", (hx, hx), result_types=[qt]).results[0])
    f = m.add_function("main", [T((3,), hlo.f32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    start = b.call(helper, [b.uniform_quantize(x, q)])
    i0 = b.constant(np.int32(0))

    def cond(cb, i, v):
        return cb.compare(i, cb.constant(np.int32(2)), "LT")

    def body(bb, i, v):
        return [bb.add(i, bb.constant(np.int32(1))), bb.call(helper, [v])]
    _, looped = b.while_([i0, start], cond, body)
    b.return_(b.uniform_dequantize(looped))
    m.verify()
    lowered = lower_quantized(m)
    assert not has_quantized(lowered)
    assert lowered.lookup("double").arg_types == (T((3,), hlo.i8),)
    (got,) = verify.run(m, np.array([0.5, -1.0, 2.0], F32))
    np.testing.assert_array_equal(got, [4.0, -8.0, 16.0])  # doubled three times


def test_ncdhw_convolution_contracts_the_kernels_input_features():
    """The integer NCDHW convolution (kernel [i, o, 0, 1, 2]) with a lhs zero point and more
    output features than input features: StableHLO's pass sums the kernel over the wrong
    dimension here (see quant_lowering._CONV_LAYOUTS); ours equals the float convolution."""
    ql = quantized(hlo.i8, hlo.f32, 0.5, 4)
    qr = quantized(hlo.i8, hlo.f32, 0.25)
    qres = quantized(hlo.i32, hlo.f32, 0.125)
    rng = np.random.default_rng(5)
    a = rng.integers(-20, 20, (1, 2, 3, 3, 3)).astype(np.int8)
    k = rng.integers(-20, 20, (2, 3, 1, 1, 1)).astype(np.int8)
    dn = hlo.ConvDimensionNumbers(
        input_batch_dimension=0, input_feature_dimension=1, input_spatial_dimensions=(2, 3, 4),
        kernel_input_feature_dimension=0, kernel_output_feature_dimension=1,
        kernel_spatial_dimensions=(2, 3, 4), output_batch_dimension=0,
        output_feature_dimension=1, output_spatial_dimensions=(2, 3, 4))

    def body(b, u, v):
        q = b.create("convolution", (b.uniform_quantize(u, ql), b.uniform_quantize(v, qr)),
                     {"dimension_numbers": dn, "feature_group_count": 1,
                      "batch_group_count": 1},
                     result_types=[T((1, 3, 3, 3, 3), qres)]).results[0]
        return q, b.convolution(u, v, dn)
    m = module([T(a.shape, hlo.f32), T(k.shape, hlo.f32)], body)
    assert "reduce" in lower_quantized(m).to_text()  # the integer path, with its zp share
    got, ref = verify.run(m, np_dequantize(a, ql), np_dequantize(k, qr))
    np.testing.assert_array_equal(got, np.round(ref.astype(np.float64) / qres.scale))


def test_dot_with_both_zero_points():
    """StableHLO's dot (not dot_general) may have a rhs zero point: all three zero-point
    shares of the integer product."""
    ql = quantized(hlo.i8, hlo.f32, 0.5, -7)
    qr = quantized(hlo.i8, hlo.f32, 0.25, 3)
    qres = quantized(hlo.i32, hlo.f32, 0.125, 2)
    rng = np.random.default_rng(9)
    a = rng.integers(-60, 60, (3, 4)).astype(np.int8)
    c = rng.integers(-60, 60, (4, 2)).astype(np.int8)

    def body(b, u, v):
        return b.create("dot", (b.uniform_quantize(u, ql), b.uniform_quantize(v, qr)),
                        result_types=[T((3, 2), qres)]).results[0]
    (got,) = verify.run(module([T(a.shape, hlo.f32), T(c.shape, hlo.f32)], body),
                        np_dequantize(a, ql), np_dequantize(c, qr))
    exact = np_dequantize(a, ql, np.float64) @ np_dequantize(c, qr, np.float64)
    np.testing.assert_array_equal(got, np.round(exact / qres.scale) + qres.zero_point)


def test_add_of_per_tensor_and_per_axis():
    q = quantized(hlo.i8, hlo.f32, 0.5, 1)
    pa = quantized(hlo.i8, hlo.f32, [0.5, 0.25], [0, 2], axis=1)
    x = np.array([[1.0, -2.5], [3.0, 0.75]], F32)

    def body(b, u):
        return b.create("add", (b.uniform_quantize(u, pa), b.uniform_quantize(u, q)),
                        result_types=[T((2, 2), pa)]).results[0]
    (got,) = verify.run(module([T((2, 2), hlo.f32)], body), x)
    exact = np_dequantize(np_quantize(x, q), q, np.float64) + \
        np_dequantize(np_quantize(x, pa), pa, np.float64)
    assert np.abs(got.astype(int) - np_quantize(exact, pa).astype(int)).max() <= 1


def test_quantized_tuples_are_lowered_too():
    q = quantized(hlo.i8, hlo.f32, 0.5, 1)
    m = module([T((2,), hlo.f32)], lambda b, u: b.uniform_dequantize(
        b.get_tuple_element(b.tuple([b.uniform_quantize(u, q), u]), 0)))
    lowered = lower_quantized(m)
    assert "!quant" not in lowered.to_text() and "tuple<tensor<2xi8>, tensor<2xf32>>" in \
        lowered.to_text()
    (got,) = verify.run(m, np.array([1.0, -3.0], F32))
    np.testing.assert_array_equal(got, [1.0, -3.0])


def test_text_that_only_mentions_quant_goes_to_jaxlib_as_it_is():
    text = '''
    func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = stablehlo.custom_call @foo(%x) {backend_config = "!quant.uniform"}
        : (tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }'''
    from verify.api import dequantized
    assert dequantized(text) is text  # read: nothing in it is quantized
    assert hlo.parse(text)
    dynamic = text.replace("2xf32", "?xf32")
    assert dequantized(dynamic) is dynamic  # our parser cannot read it: jaxlib judges
    assert "custom_call" in verify.check(text)


# -- against StableHLO's own lowering, inside jaxlib --------------------------------------------

def _programs():
    """name -> (module, inputs): quantized programs over every path of the lowering."""
    rng = np.random.default_rng(11)
    q = quantized(hlo.i8, hlo.f32, 0.05, -10)
    q2 = quantized(hlo.i8, hlo.f32, 0.03, 7)
    q3 = quantized(hlo.i8, hlo.f32, 0.07, -3)
    pa = quantized(hlo.i8, hlo.f32, [0.05, 0.02, 0.1], [0, 3, -4], axis=1)
    i32q = quantized(hlo.i32, hlo.f32, 0.0011, 5)
    x = (rng.standard_normal((2, 3)) * 3).astype(F32)
    y = (rng.standard_normal((2, 3)) * 3).astype(F32)
    t23 = T((2, 3), hlo.f32)
    dn = {"dot_dimension_numbers": {"lhs_contracting_dimensions": (1,),
                                    "rhs_contracting_dimensions": (1,)}}
    zero_rhs = quantized(hlo.i8, hlo.f32, 0.04)
    conv_dn = hlo.ConvDimensionNumbers(**NHWC)
    img = (rng.standard_normal((1, 4, 4, 2)) * 2).astype(F32)
    ker = (rng.standard_normal((3, 3, 2, 3))).astype(F32)

    def create(b, name, operands, result, attrs=None):
        return b.create(name, operands, attrs, result_types=[result]).results[0]
    return {
        "quantize_dequantize": (module([t23], lambda b, u: (
            b.uniform_quantize(u, q), b.uniform_dequantize(b.uniform_quantize(u, pa)))), [x]),
        "requantize": (module([t23], lambda b, u: (
            b.uniform_quantize(b.uniform_quantize(u, q), q2),
            b.uniform_quantize(b.uniform_quantize(u, pa), q3))), [x]),
        "add_integer": (module([t23, t23], lambda b, u, v: create(
            b, "add", (b.uniform_quantize(u, q), b.uniform_quantize(v, q2)), T((2, 3), q3))),
            [x, y]),
        "add_per_axis_and_per_tensor": (module([t23, t23], lambda b, u, v: create(
            b, "add", (b.uniform_quantize(v, pa), b.uniform_quantize(u, q)), T((2, 3), pa))),
            [x, y]),
        "sine_and_max": (module([t23, t23], lambda b, u, v: (
            create(b, "sine", (b.uniform_quantize(u, q),), T((2, 3), q2)),
            b.maximum(b.uniform_quantize(u, q), b.uniform_quantize(v, q)))), [x, y]),
        "data_movement": (module([t23], lambda b, u: b.concatenate(
            [b.transpose(b.uniform_quantize(u, q), (1, 0))] * 2, 1)), [x]),
        "dot_general_zero_points": (module([t23, t23], lambda b, u, v: create(
            b, "dot_general", (b.uniform_quantize(u, q), b.uniform_quantize(v, zero_rhs)),
            T((2, 2), i32q), dn)), [x, y]),
        "dot_rhs_zero_point": (module([t23, T((3, 2), hlo.f32)], lambda b, u, v: create(
            b, "dot", (b.uniform_quantize(u, q), b.uniform_quantize(v, q2)), T((2, 2), i32q))),
            [x, y.T.copy()]),
        "convolution_padded": (module([T(img.shape, hlo.f32), T(ker.shape, hlo.f32)],
                                      lambda b, u, v: create(
            b, "convolution", (b.uniform_quantize(u, q), b.uniform_quantize(v, zero_rhs)),
            T((1, 4, 4, 3), i32q), {"dimension_numbers": conv_dn, "padding": [(1, 1), (1, 1)],
                                    "feature_group_count": 1, "batch_group_count": 1})),
            [img, ker]),
        "convolution_qdq": (module([T(img.shape, hlo.f32), T(ker.shape, hlo.f32)],
                                   lambda b, u, v: create(
            b, "convolution", (b.uniform_quantize(u, q), b.uniform_quantize(v, q2)),
            T((1, 2, 2, 3), i32q), {"dimension_numbers": conv_dn, "feature_group_count": 1,
                                    "batch_group_count": 1})), [img, ker]),
        "hybrid_dot_general": (module([t23, t23], lambda b, u, v: create(
            b, "dot_general", (u, b.uniform_quantize(v, zero_rhs)), T((2, 2), hlo.f32), dn)),
            [x, y]),
    }


PROGRAMS = _programs()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_equals_stablehlos_own_lowering_bit_for_bit(name):
    """Ours and StableHLO's stablehlo-legalize-quant-to-math (run inside jaxlib, reached
    through a portable artifact: verify.quantized) give the same bits for every result."""
    from verify.quantized import stablehlo_lowering
    m, inputs = PROGRAMS[name]
    ours = verify.run(m, *inputs)
    theirs = verify.run(stablehlo_lowering(m.to_text(dialect=hlo.STABLEHLO)), *inputs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8), err_msg=name)


def test_generated_quantized_programs_agree_with_stablehlos_interpreter():
    """The generator's quantized programs (mhlo_ir.strategies, rule uniform_quantize): XLA
    through our lowering and StableHLO's interpreter through StableHLO's own lowering give
    the same results, under the campaign's comparison (tolerance only where the program
    approximates: tanh, exp...)."""
    import mhlo_ir.strategies as hst
    from verify.differential import compare
    from verify.interpreter import interpret
    options = hst.default_options(4, ("uniform_quantize",))
    compared = 0
    for seed in range(40):
        p = hst.generate_seeded(seed, options, n_ops=4)
        if "uniform_quantize" not in p.ops:
            continue
        differences = compare(verify.run(p.module, *p.inputs), interpret(p.module, *p.inputs),
                              p.traits, p.inexact)
        assert [d for d in differences if not d.explained_by] == [], (seed, differences)
        compared += 1
    assert compared >= 30


def test_reverse_and_dynamic_update_slice_move_stored_integers():
    q = quantized(hlo.i8, hlo.f32, 0.5, 1)
    x = np.arange(6, dtype=F32).reshape(2, 3) - 2

    def body(b, u):
        s = b.uniform_quantize(u, q)
        r = b.reverse(s, (1,))
        piece = b.slice(s, (0, 0), (1, 2))
        return b.dynamic_update_slice(r, piece, [b.constant(np.int32(1)),
                                                 b.constant(np.int32(1))])
    (got,) = verify.run(module([T((2, 3), hlo.f32)], body), x)
    stored = np_quantize(x, q)
    want = stored[:, ::-1].copy()
    want[1:2, 1:3] = stored[0:1, 0:2]
    np.testing.assert_array_equal(got, want)
    text = lower_quantized(module([T((2, 3), hlo.f32)], body)).to_text()
    # stored integers reversed and updated as they are: no dequantization (a multiply)
    assert '"mhlo.reverse"' in text and '"mhlo.multiply"' not in text


def test_requantize_and_add_work_for_any_expressed_type():
    """Requantization and add are f32 and integer math on stored values whatever the
    expressed type (as in StableHLO's pass, which gives the same bits): bf16 here, with the
    stored integers as main's arguments and results."""
    from verify.quantized import stablehlo_lowering
    qa, qb = quantized(hlo.i8, hlo.bf16, 0.5, 3), quantized(hlo.i8, hlo.bf16, 0.25, -2)
    qr = quantized(hlo.i8, hlo.bf16, 0.75, 1)
    m = module([T((5,), qa), T((5,), qb)], lambda b, u, v: (
        b.create("add", (u, v), result_types=[T((5,), qr)]).results[0],
        b.uniform_quantize(u, qb)))
    a = np.array([-128, -3, 0, 7, 127], np.int8)
    c = np.array([5, -100, 127, 0, -128], np.int8)
    ours = verify.run(m, a, c)
    theirs = verify.run(stablehlo_lowering(m.to_text(dialect=hlo.STABLEHLO)), a, c)
    for x, y in zip(ours, theirs):
        np.testing.assert_array_equal(x, y)
    exact = np_dequantize(a, qa, np.float64) + np_dequantize(c, qb, np.float64)
    want = np.clip(np.round(exact / 0.75) + 1, -128, 127)
    assert np.abs(ours[0].astype(int) - want).max() <= 1


# -- departures from StableHLO's pass where its integer dot products are wrong ---------------

def _quantized_dot(q_lhs, q_rhs, q_res, lhs_shape, rhs_shape, res_shape, dims):
    """main(x, y) -> dequantize(dot_general(quantize(x), quantize(y))) and the f32 dot of the
    same operands, the spec's meaning (exact on these small integers)."""
    m = hlo.Module("qdot")
    f = m.add_function("main", [hlo.tensor(lhs_shape, F32), hlo.tensor(rhs_shape, F32)],
                       visibility="public")
    b = f.builder()
    x, y = f.arguments
    dn = {"dot_dimension_numbers": dims}
    d = b.create("dot_general", (b.uniform_quantize(x, q_lhs), b.uniform_quantize(y, q_rhs)),
                 dn, result_types=[hlo.tensor(res_shape, q_res)]).results[0]
    exact = b.create("dot_general", (x, y), dn, result_types=[hlo.tensor(res_shape, F32)])
    b.return_(d, b.uniform_dequantize(d), exact.results[0])
    return m


CONTRACT = {"lhs_contracting_dimensions": (1,), "rhs_contracting_dimensions": (0,)}


def test_a_quantized_dot_saturates_in_its_storage_type():
    """The spec quantizes the product: 20000 into i8 is 127 (the pass wrapped it to 32)."""
    q = quantized(hlo.i8, hlo.f32, 1.0, 0)
    m = _quantized_dot(q, q, q, (1, 2), (2, 1), (1, 1), CONTRACT)
    stored, back, _ = verify.run(m, np.array([[100, 100]], F32), np.array([[100], [100]], F32))
    assert stored.tolist() == [[127]] and back.tolist() == [[127.0]]
    stored, _, _ = verify.run(m, -np.array([[100, 100]], F32), np.array([[100], [100]], F32))
    assert stored.tolist() == [[-128]]


def test_a_per_axis_dot_uses_each_columns_scale_and_zero_point():
    """rhs scales 1, 0.5, 0.25 into a result of zero points 0, 5, 9: the spec's [16, 12, 20]
    (the pass scaled by the first scale and dropped the zero points: [16, 19, 71])."""
    ql = quantized(hlo.i8, hlo.f32, 1.0, 0)
    qr = quantized(hlo.i8, hlo.f32, [1.0, 0.5, 0.25], 0, axis=1)
    qres = quantized(hlo.i32, hlo.f32, [1.0, 1.0, 1.0], [0, 5, 9], axis=1)
    m = _quantized_dot(ql, qr, qres, (1, 2), (2, 3), (1, 3), CONTRACT)
    x, y = np.array([[1, 2]], F32), np.array([[8, 4, 4], [4, 4, 8]], F32)
    _, back, exact = verify.run(m, x, y)
    np.testing.assert_array_equal(back, exact)
    assert back.tolist() == [[16.0, 12.0, 20.0]]


def test_a_dot_with_a_per_axis_rhs_zero_point_subtracts_it():
    """``dot`` (not dot_general: its C15 refuses a rhs zero point) with per-axis rhs zero
    points 3 and -2: the spec's [50, 50] (the pass took the zero points as 0: [65, 35])."""
    ql = quantized(hlo.i8, hlo.f32, 1.0, 0)
    qr = quantized(hlo.i8, hlo.f32, [1.0, 1.0], [3, -2], axis=1)
    qres = quantized(hlo.i32, hlo.f32, [1.0, 1.0], 0, axis=1)
    m = hlo.Module("qdot")
    f = m.add_function("main", [hlo.tensor((1, 2), F32), hlo.tensor((2, 2), F32)],
                       visibility="public")
    b = f.builder()
    x, y = f.arguments
    d = b.create("dot", (b.uniform_quantize(x, ql), b.uniform_quantize(y, qr)),
                 result_types=[hlo.tensor((1, 2), qres)]).results[0]
    b.return_(b.uniform_dequantize(d))
    (back,) = verify.run(m, np.array([[1, 2]], F32), np.array([[10, 10], [20, 20]], F32))
    assert back.tolist() == [[50.0, 50.0]]


def test_rhs_batching_dimensions_out_of_order_with_a_lhs_zero_point():
    """The lhs zero point's share (the rhs summed) goes to the batch the dimension numbers
    pair it with: [1, 3, 2, 4] as the float dot (the pass gave [1, -7, 12, 4])."""
    ql = quantized(hlo.i8, hlo.f32, 1.0, -10)
    qr = quantized(hlo.i8, hlo.f32, 1.0, 0)
    qres = quantized(hlo.i32, hlo.f32, 1.0, 0)
    dims = {"lhs_batching_dimensions": (0, 1), "rhs_batching_dimensions": (1, 0),
            "lhs_contracting_dimensions": (2,), "rhs_contracting_dimensions": (2,)}
    m = _quantized_dot(ql, qr, qres, (2, 2, 1), (2, 2, 1, 1), (2, 2, 1), dims)
    x, y = np.ones((2, 2, 1), F32), np.arange(1, 5, dtype=F32).reshape(2, 2, 1, 1)
    _, back, exact = verify.run(m, x, y)
    np.testing.assert_array_equal(back, exact)
    assert back.ravel().tolist() == [1.0, 3.0, 2.0, 4.0]


def test_a_narrowed_i32_result_saturates_too():
    """Storage i32 narrowed to [-100, 100]: the product 7200 stores 100 (the clamp was for
    storage narrower than 32 bits only)."""
    q = quantized(hlo.i8, hlo.f32, 1.0, 0)
    qres = quantized(hlo.i32, hlo.f32, 1.0, 0, storage_min=-100, storage_max=100)
    m = _quantized_dot(q, q, qres, (1, 2), (2, 1), (1, 1), CONTRACT)
    stored, back, _ = verify.run(m, np.array([[60, 60]], F32), np.array([[60], [60]], F32))
    assert stored.tolist() == [[100]] and back.tolist() == [[100.0]]


def test_a_u32_zero_point_past_i32_round_trips():
    """32-bit storage computes its zero points in i64 (the pass's i32 could not hold 4e9, an
    error here before): values that f32 holds at that magnitude (multiples of 256) store
    ``x + zp`` and read back."""
    q = quantized(hlo.ui32, hlo.f32, 1.0, 4000000000)
    m = hlo.Module("r")
    f = m.add_function("main", [hlo.tensor((3,), F32)], visibility="public")
    b = f.builder()
    s = b.uniform_quantize(f.arguments[0], q)
    b.return_(s, b.uniform_dequantize(s))
    x = np.array([256.0, -512.0, 0.0], F32)
    stored, back = verify.run(m, x)
    assert stored.dtype == np.uint32
    assert stored.tolist() == [4000000256, 3999999488, 4000000000]
    assert back.tolist() == x.tolist()


def test_a_u32_result_saturates_at_zero_and_builds():
    """u32 storage: the clamp's bounds are what the i32 sum reaches (its 4294967295 does not
    fit an i32 constant: the lowering failed), and -2 stores 0, not 4294967294."""
    q = quantized(hlo.i8, hlo.f32, 1.0, 0)
    qres = quantized(hlo.ui32, hlo.f32, 1.0, 0)
    m = _quantized_dot(q, q, qres, (1, 2), (2, 1), (1, 1), CONTRACT)
    stored, back, exact = verify.run(m, np.array([[3, -4]], F32), np.array([[2], [2]], F32))
    assert exact.tolist() == [[-2.0]]
    assert stored.tolist() == [[0]] and back.tolist() == [[0.0]]


# -- 32-bit storage, scales XLA cannot compute with, rank-1 dots (the review of 2026-12-07) --
# Expected values are the spec's, worked out by hand (quantize(dequantize(...)) in exact
# arithmetic, saturated to the storage range): StableHLO's pass, and the reference
# interpreter that runs it, give the wrong ones noted beside each.

def _one_op(arg_types, body):
    m = hlo.Module("q")
    f = m.add_function("main", arg_types, visibility="public")
    b = f.builder()
    b.return_(*body(b, *f.arguments))
    return m


def test_a_narrowed_32_bit_range_clamps_requantize_and_add():
    """i32<-100:100>: requantizing i8 100 (scale 1) to scale 0.5 stores 100 (the pass: 200);
    60 + 60 stores 100 (the pass: 120), per tensor and per axis."""
    q8 = quantized(hlo.i8, hlo.f32, 1.0, 0)
    narrow = quantized(hlo.i32, hlo.f32, 0.5, 0, storage_min=-100, storage_max=100)
    m = _one_op([hlo.tensor((2,), q8)], lambda b, x: [b.uniform_quantize(x, narrow)])
    assert verify.run(m, np.array([100, -100], np.int8))[0].tolist() == [100, -100]
    q1 = quantized(hlo.i32, hlo.f32, 1.0, 0, storage_min=-100, storage_max=100)
    m = _one_op([hlo.tensor((1,), q1)], lambda b, x: [b.add(x, x)])
    assert verify.run(m, np.array([60], np.int32))[0].tolist() == [100]
    qa = quantized(hlo.i32, hlo.f32, [1.0, 1.0], 0, axis=0, storage_min=-100, storage_max=100)
    m = _one_op([hlo.tensor((2,), qa)], lambda b, x: [b.add(x, x)])
    assert verify.run(m, np.array([60, 5], np.int32))[0].tolist() == [100, 10]


def test_an_i32_add_saturates():
    """2147483000 + 2147483000 stores i32's maximum (the pass: -1296, wrapped), per tensor
    and per axis; -2147483000 + -2147483000 its minimum."""
    q = quantized(hlo.i32, hlo.f32, 1.0, 0)
    m = _one_op([hlo.tensor((2,), q)], lambda b, x: [b.add(x, x)])
    got = verify.run(m, np.array([2147483000, -2147483000], np.int32))[0]
    assert got.tolist() == [2**31 - 1, -2**31]
    qa = quantized(hlo.i32, hlo.f32, [1.0, 1.0], 0, axis=0)
    m = _one_op([hlo.tensor((2,), qa)], lambda b, x: [b.add(x, x)])
    assert verify.run(m, np.array([2147483000, 5], np.int32))[0].tolist() == [2**31 - 1, 10]


def test_u32_storage_is_unsigned():
    """ui32 4294967295 dequantizes to 4294967295 rounded to f32 (the pass: -1.0, read as
    i32); with zero point 5, stored 0 + 0 stands for -10, which saturates to 0 (the pass:
    4294967291)."""
    q = quantized(hlo.ui32, hlo.f32, 1.0, 0)
    m = _one_op([hlo.tensor((2,), q)], lambda b, x: [b.uniform_dequantize(x)])
    got = verify.run(m, np.array([4294967295, 3000000000], np.uint32))[0]
    assert got.tolist() == [float(F32(4294967295)), float(F32(3000000000))]
    qz = quantized(hlo.ui32, hlo.f32, 1.0, 5)
    m = _one_op([hlo.tensor((1,), qz)], lambda b, x: [b.add(x, x)])
    got = verify.run(m, np.array([0], np.uint32))[0]
    assert got.dtype == np.uint32 and got.tolist() == [0]


def test_a_32_bit_zero_point_is_subtracted_before_f32():
    """Stored 16777217 with zero point 1 stands for 16777216, which f32 holds: requantized
    to zero point 0 it stores 16777216, and a hybrid dot with 1.0 gives 16777216.0 (the
    pass subtracted in f32 after rounding 16777217 to 16777216: 16777215)."""
    qa = quantized(hlo.i32, hlo.f32, 1.0, 1)
    qb = quantized(hlo.i32, hlo.f32, 1.0, 0)
    m = _one_op([hlo.tensor((1,), qa)], lambda b, x: [b.uniform_quantize(x, qb),
                                                      b.uniform_dequantize(x)])
    stored, back = verify.run(m, np.array([16777217], np.int32))
    assert stored.tolist() == [16777216] and back.tolist() == [16777216.0]
    m = _one_op([hlo.tensor((1,), hlo.f32), hlo.tensor((1,), qa)],
                lambda b, x, y: [b.create("dot", (x, y), None,
                                          result_types=[hlo.tensor((), hlo.f32)]).results[0]])
    got = verify.run(m, np.array([1.0], F32), np.array([16777217], np.int32))[0]
    assert got.tolist() == 16777216.0


def test_a_quantized_dot_of_vectors():
    """A rank-1 lhs contracts its only dimension: (1 - 2) * (5 - 3) + (2 - 2) * (6 - 3) = -2
    (it was an error: lhs contracting dimension 1 out of range)."""
    ql = quantized(hlo.i8, hlo.f32, 1.0, 2)
    qr = quantized(hlo.i8, hlo.f32, 1.0, 3)
    qres = quantized(hlo.i32, hlo.f32, 1.0, 0)
    m = _one_op([hlo.tensor((2,), ql), hlo.tensor((2,), qr)],
                lambda b, x, y: [b.create("dot", (x, y), None,
                                          result_types=[hlo.tensor((), qres)]).results[0]])
    args = np.array([1, 2], np.int8), np.array([5, 6], np.int8)
    assert verify.run(m, *args)[0].tolist() == -2
    # decompose keeps a quantized dot (dot_general may not have its rhs zero point)
    from mhlo_ir.decompose import decompose
    d = decompose(m)
    assert [op.spec.name for op in d.functions[0].entry_block.operations][0] == "dot"
    assert verify.run(d, *args)[0].tolist() == -2


@pytest.mark.parametrize("scale, what", [
    (1e-40, r"scale 1e-40 of .* is 9.99994610111476e-41 in f32, outside f32's normal range"),
    (1e38, r"scale 1e\+38 of .* has a reciprocal outside f32's normal range"),
])
def test_scales_xla_flushes_are_refused(scale, what):
    """A scale (or its reciprocal, which XLA multiplies by) subnormal in f32 would quantize
    everything to the zero point on XLA (1e-40: [2e-38, -1e-39] stored [32767, 0], the spec
    [200, -10]): an error naming the op and the type instead."""
    q = quantized(hlo.i16, hlo.f32, scale, 0)
    m = _one_op([hlo.tensor((2,), hlo.f32)], lambda b, v: [b.uniform_quantize(v, q)])
    with pytest.raises(verify.VerificationError, match="'uniform_quantize': " + what):
        verify.run(m, np.array([2e-38, -1e-39], F32))
    if scale < 1:
        m = _one_op([hlo.tensor((2,), q)], lambda b, w: [b.uniform_dequantize(w)])
        with pytest.raises(verify.VerificationError, match="'uniform_dequantize': " + what):
            verify.run(m, np.array([5, -300], np.int16))
    else:  # (dequantizing multiplies: a large scale is fine there)
        m = _one_op([hlo.tensor((1,), q)], lambda b, w: [b.uniform_dequantize(w)])
        assert verify.run(m, np.array([3], np.int16))[0].tolist() == [float(F32(3 * F32(1e38)))]


def test_a_narrowed_bound_f32_cannot_hold_is_clamped_to_exactly():
    """i32<-16777219:16777219>: f32's clamp rounds the bounds outward (stored 16777220,
    outside the type's range); quantize and requantize now clamp again in i32, as add does."""
    q = quantized(hlo.i32, hlo.f32, 1.0, 0, storage_min=-16777219, storage_max=16777219)
    q32 = quantized(hlo.i32, hlo.f32, 1.0, 0)
    m = _one_op([hlo.tensor((2,), hlo.f32), hlo.tensor((2,), q32)],
                lambda b, x, y: [b.uniform_quantize(x, q), b.uniform_quantize(y, q)])
    stored, requantized = verify.run(m, np.array([3e7, -3e7], F32),
                                     np.array([30000000, -30000000], np.int32))
    assert stored.tolist() == requantized.tolist() == [16777219, -16777219]
