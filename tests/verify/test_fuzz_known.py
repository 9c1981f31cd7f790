"""verify.fuzz.known: a disagreement is named after the finding of docs/findings.md whose op
pattern its program holds (the reproducers of those findings, written here by hand), and a
program without such a pattern stays new. Checked against the findings' own programs, run:
each still disagrees the way its entry says."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from verify import differential
from verify.fuzz.known import KNOWN, known_finding


def _unary(op, et, out_et=None, **kw):
    m = hlo.Module("k")
    t = hlo.tensor((4,), et)
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    if op == "convert":
        y = b.convert(x, out_et)
    else:
        y = getattr(b, op)(x, **kw)
    b.return_(y)
    return m


def _disagree(m, *inputs):
    xla = verify.run(m, *inputs)
    ref = verify.interpret(m, *inputs)
    return differential.compare(xla, ref)


def _module(arg_types, body):
    m = hlo.Module("k")
    f = m.add_function("main", list(arg_types), visibility="public")
    b = f.builder()
    b.return_(*body(b, *f.arguments))
    return m


def _fnuz_nan(et):
    return np.array([0x80], np.uint8).view(et.dtype)[0]


# The reproducers of findings 11-14 (reduced by hand from campaign seeds 4000034, 4001140,
# 4000768, 4000932 and 4000301), each run on both executors.
_NEW_FINDINGS = [
    # polygamma of a non-integer order is NaN on both; XLA's has the sign bit set for a
    # large order, and bitcast_convert shows the bits.
    ("nan_sign_through_bitcast",
     lambda: _module([hlo.tensor((2,), hlo.bf16)], lambda b, n: [b.bitcast_convert(
         b.chlo_polygamma(n, b.constant(np.full((2,), 2, hlo.bf16.dtype))), hlo.i16)]),
     lambda: [np.array([7.7e8, 0.5], hlo.bf16.dtype)]),
    # a windowed product of three complex numbers that overflows, padded with the init
    # value 1+0j: XLA inf+infj; the interpreter multiplies the overflowed product by the
    # padding, and (inf+infj)*(1+0j) is nan+nanj in the textbook formula (numpy's too).
    ("complex_product_overflow",
     lambda: _module([hlo.tensor((3,), hlo.complex128)], lambda b, x: [b.reduce_window(
         x, b.constant(np.complex128(1)), [5], lambda r, a, c: r.multiply(a, c),
         padding=[(1, 1)])]),
     lambda: [np.array([2.5e-217 + 3.6e224j, -3.4e232 + 1.8e-48j, -2.6e-222 + 0.18j])]),
    # logistic(-0.5) = 0.3775 and logistic(2.5) = 0.924 round to 0.375 and 0.875 in
    # f8E5M2 (XLA); the interpreter gives 0.3125 and 1 (one ULP off, which f32 shows).
    ("interpreter_narrow_logistic",
     lambda: _module([hlo.tensor((4,), hlo.f8E5M2)],
                     lambda b, x: [b.convert(b.logistic(x), hlo.f32)]),
     lambda: [np.array([-0.5, 2.5, 0.5, 0], hlo.f8E5M2.dtype)]),
    # NaN < x in total order: XLA true for every number, the interpreter false.
    ("interpreter_total_order_negative_nan",
     lambda: _module([hlo.tensor((4,), hlo.f8E4M3FNUZ)] * 2,
                     lambda b, x, y: [b.compare(x, y, "LT", "TOTALORDER")]),
     lambda: [np.full((4,), _fnuz_nan(hlo.f8E4M3FNUZ)),
              np.array([-3, -0.5, 0, 3], hlo.f8E4M3FNUZ.dtype)]),
]


@pytest.mark.parametrize("name, module, inputs", [
    ("xla_popcnt_sub_byte", lambda: _unary("popcnt", hlo.i4),
     lambda: [np.array([-8, -2, 7, 1], hlo.i4.dtype)]),
    ("interpreter_f8e3m4_rounding", lambda: _unary("floor", hlo.f8E3M4),
     lambda: [np.array([1.5, -1.5, 2.25, 0.25], hlo.f8E3M4.dtype)]),
    ("xla_f4e2m1fn_max_to_int", lambda: _unary("convert", hlo.f4E2M1FN, hlo.ui4),
     lambda: [np.array([0.5, 1, 6, 2], hlo.f4E2M1FN.dtype)]),
    *_NEW_FINDINGS,
    # findings 43 and 44 (excess precision): a 4-bit negate and a bf16 division widened
    ("xla_four_bit_int_excess_precision",
     lambda: _module([hlo.tensor((2,), hlo.ui4)],
                     lambda b, x: [b.convert(b.negate(x), hlo.ui8)]),
     lambda: [np.array([15, 1], hlo.ui4.dtype)]),
    ("xla_narrow_float_excess_precision",
     lambda: _module([hlo.tensor((2,), hlo.bf16)] * 2,
                     lambda b, x, y: [b.convert(b.divide(x, y), hlo.f32)]),
     lambda: [np.array([-4, 1], hlo.bf16.dtype), np.array([-9, 3], hlo.bf16.dtype)]),
], ids=lambda x: x if isinstance(x, str) else "")
def test_the_findings_own_programs_are_named(name, module, inputs):
    m = module()
    diffs = _disagree(m, *inputs())
    assert differential.classify(diffs) is not None, "the finding no longer reproduces"
    assert known_finding(m, diffs) == name


def test_other_programs_stay_new():
    m = _unary("floor", hlo.f8E4M3FN)   # rounding, but not in f8E3M4
    fake = [differential.Difference(0, "nan", "made up")]
    assert known_finding(m, fake) is None
    assert known_finding(_unary("popcnt", hlo.i4), fake) is None  # popcnt differs in ints
    assert known_finding(m, [differential.Difference(0, "nan", "x", "subnormal_flush")]) \
        is None  # explained differences are not disagreements


def test_every_known_finding_names_an_entry_of_findings_md():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text()
    for f in KNOWN:
        assert f"### {f.entry}. " in text, f.name


def test_total_order_is_told_from_float_compares():
    m = _module([hlo.tensor((4,), hlo.f8E4M3FNUZ)] * 2,
                lambda b, x, y: [b.compare(x, y, "LT")])
    fake = [differential.Difference(0, "integer", "made up")]
    assert known_finding(m, fake) is None


def test_chlo_broadcast_power_is_the_integer_power_finding():
    # XLA's integer power is wrong for large exponents through chlo too (seed 6002847);
    # the interpreter agrees with Python's modular pow.
    m = _module([hlo.tensor((4,), hlo.ui16)], lambda b, e: [b.chlo_broadcast_power(
        b.constant(np.array([53547], np.uint16)), e)])
    e = np.array([15177, 46766, 63673, 51000], np.uint16)
    assert verify.interpret(m, e)[0].tolist() == [pow(53547, int(k), 2**16) for k in e]
    diffs = _disagree(m, e)
    assert known_finding(m, diffs) == "xla_int_power"


def test_e8m0_nan_converts_to_nan_on_xla_and_to_inf_in_the_interpreter():
    x = np.array([0xFF, 0xFE, 0x7F, 0x00], np.uint8).view(hlo.f8E8M0FNU.dtype)
    m = _module([hlo.tensor((4,), hlo.f8E8M0FNU)], lambda b, v: [b.convert(v, hlo.f32)])
    xla, ref = verify.run(m, x)[0], verify.interpret(m, x)[0]
    assert np.isnan(xla[0]) and ref[0] == np.inf
    np.testing.assert_array_equal(xla[1:], ref[1:])
    np.testing.assert_array_equal(xla[1:], x.astype(np.float32)[1:])  # ml_dtypes agrees
    assert known_finding(m, differential.compare([xla], [ref])) == \
        "interpreter_e8m0_nan_to_inf"


@pytest.mark.parametrize("n, k", [(5, 3), (4, 3)])
def test_odd_inverse_real_ffts_differ_in_the_interpreter_only(n, k):
    x = np.random.default_rng(0).standard_normal((2, k)) + 1j * np.arange(2 * k).reshape(2, k)
    m = _module([hlo.tensor((2, k), hlo.complex128)], lambda b, v: [b.fft(v, "IRFFT", [n])])
    xla, ref = verify.run(m, x)[0], verify.interpret(m, x)[0]
    np.testing.assert_allclose(xla, np.fft.irfft(x, n=n), rtol=1e-12, atol=1e-12)
    diffs = differential.compare([xla], [ref], {"reassociates"})  # what fft programs carry
    if n % 2:
        assert known_finding(m, diffs) == "interpreter_odd_irfft"
    else:
        assert differential.classify(diffs) is None


def test_ffts_of_infinities_or_of_very_different_sizes_differ():
    def irfft(shape, lengths):
        return _module([hlo.tensor(shape, hlo.complex128)],
                       lambda b, v: [b.fft(v, "IRFFT", lengths)])
    m = irfft((1, 3), [4])
    x = np.array([[1 + 0j, 0j, 1e20j]])  # the Nyquist bin's imaginary part is dropped
    xla, ref = verify.run(m, x)[0], verify.interpret(m, x)[0]
    np.testing.assert_array_equal(xla, np.fft.irfft(x, 4))
    assert np.abs(ref[0, 1:]).min() > 1e3  # 1e20 times a rounded twiddle
    assert known_finding(m, differential.compare([xla], [ref], {"reassociates"})) == \
        "fft_direct_dft"
    m = irfft((2, 2), [2, 2])
    x = np.array([[1 + 0j, 2 + 0j], [np.inf + 0j, 3 + 0j]])
    xla, ref = verify.run(m, x)[0], verify.interpret(m, x)[0]
    np.testing.assert_array_equal(xla, np.fft.irfft2(x, (2, 2)))
    assert np.isnan(ref).all()
    assert known_finding(m, differential.compare([xla], [ref], {"reassociates"})) == \
        "fft_direct_dft"


@pytest.mark.parametrize("et", [hlo.i2, hlo.i4])
def test_shift_right_logical_of_a_broadcast_scalar_on_signed_sub_byte_types(et):
    def shift(b, s):
        c = b.broadcast_in_dim(b.constant(np.array(-1, et.dtype), et), (4,), ())
        return [b.shift_right_logical(c, s)]
    m = _module([hlo.tensor((4,), et)], shift)
    s = np.array([1, 1, 1, 1], et.dtype)
    xla, ref = verify.run(m, s)[0], verify.interpret(m, s)[0]
    want = (2 ** et.bits - 1) >> 1  # the pattern of -1 shifted right by one
    assert (ref.astype(np.int8) == want).all()
    assert (xla.astype(np.int8) == -1).all()  # the bug (0.10.2); the argument case is right
    arg = _module([hlo.tensor((4,), et)] * 2, lambda b, x, y: [b.shift_right_logical(x, y)])
    np.testing.assert_array_equal(verify.run(arg, np.full(4, -1, et.dtype), s)[0], ref)
    assert known_finding(m, differential.compare([xla], [ref])) == \
        "xla_sub_byte_shift_right_logical_splat"


def test_the_interpreters_scatter_updates_its_operand_in_place():
    t = hlo.tensor((4,), hlo.f32)

    def body(b, x, u):
        dn = hlo.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,),
                                         index_vector_dim=1)
        s = b.scatter(x, b.constant(np.array([[1]], np.int64)), u, dn,
                      lambda r, old, new: new)
        return [s, x]
    m = _module([t, hlo.tensor((1,), hlo.f32)], body)
    x, u = np.arange(4, dtype=np.float32), np.array([9], np.float32)
    xla, ref = verify.run(m, x, u), verify.interpret(m, x, u)
    np.testing.assert_array_equal(xla[0], [0, 9, 2, 3])
    np.testing.assert_array_equal(xla[1], x)  # SSA values are immutable
    np.testing.assert_array_equal(ref[0], xla[0])
    if np.array_equal(ref[1], x):
        pytest.skip("this interpreter copies the operand (fixed upstream)")
    np.testing.assert_array_equal(ref[1], [0, 9, 2, 3])
    assert known_finding(m, differential.compare(xla, ref)) == "interpreter_scatter_in_place"


def test_triangular_solve_through_an_infinity():
    a = np.array([[224, 0.5625, 0.0253906, 32], [1.5, -0.8125, -4.5, 160],
                  [240, -0.8125, -0.875, -176], [-0.0273438, -0.0292969, np.inf, 176]],
                 np.float32)
    rhs = np.array([[-0.5, 4, -4, -3], [-4, 0, 4, -2], [4, -1.5, -2, 4.5]], np.float32)
    m = _module([hlo.tensor((4, 4), hlo.f32), hlo.tensor((3, 4), hlo.f32)],
                lambda b, x, y: [b.triangular_solve(x, y, left_side=False, lower=True,
                                                    transpose_a="TRANSPOSE",
                                                    unit_diagonal=False)])
    xla, ref = verify.run(m, a, rhs)[0], verify.interpret(m, a, rhs)[0]
    assert np.isnan(xla[:, 3]).all() and np.isinf(ref[:, 3]).all()
    np.testing.assert_allclose(xla[:, :3], ref[:, :3], rtol=1e-6)
    assert known_finding(m, differential.compare([xla], [ref])) == \
        "triangular_solve_non_finite"
    finite = a.copy()
    finite[3, 2] = 2.0
    assert differential.classify(differential.compare(
        verify.run(m, finite, rhs), verify.interpret(m, finite, rhs), {"reassociates"})) is None


@pytest.mark.parametrize("et", [hlo.f32, hlo.bf16, hlo.f8E4M3])
def test_negative_nans_come_first_in_total_order_on_xla_only(et):
    # IEEE 754's totalOrder puts -NaN before -inf, as XLA does; the interpreter puts it last.
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[et.dtype.itemsize]
    raw = np.array([np.nan], et.dtype).view(bits) | bits(1 << (8 * et.dtype.itemsize - 1))
    lhs = np.repeat(raw.view(et.dtype), 4)
    rhs = np.array([-np.inf, -3, 0, 3], et.dtype)
    m = _module([hlo.tensor((4,), et)] * 2,
                lambda b, x, y: [b.compare(x, y, "LT", "TOTALORDER")])
    xla, ref = verify.run(m, lhs, rhs)[0], verify.interpret(m, lhs, rhs)[0]
    assert xla.all() and not ref.any()
    assert known_finding(m, differential.compare([xla], [ref])) == \
        "interpreter_total_order_negative_nan"


def test_xla_compares_complex_maxima_and_minima_by_their_real_parts():
    # Finding 22 (seed 101000005): on a tie of the real parts XLA returns the lhs; the spec,
    # the interpreter and numpy order (real, imaginary) lexicographically.
    t = hlo.tensor((2,), hlo.complex128)
    m = _module([t, t], lambda b, x, y: [b.maximum(x, y), b.minimum(x, y)])
    x, y = np.array([3 - 4.5j, 3 + 0j]), np.array([3 + 0j, 3 - 4.5j])
    xla, ref = verify.run(m, x, y), verify.interpret(m, x, y)
    for got, want in zip(ref, (np.maximum(x, y), np.minimum(x, y))):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(xla[0], x)  # the bug (jaxlib 0.10.2)
    np.testing.assert_array_equal(xla[1], x)
    assert known_finding(m, differential.compare(xla, ref)) == "xla_complex_minmax_real_part"


def _conv(b, x, k, **kw):
    # [b, f, 0] x [o, i, 0] -> [b, f, 0]
    dn = hlo.ConvDimensionNumbers(0, 1, (2,), 1, 0, (2,), 0, 1, (2,))
    return b.convolution(x, k, dn, **kw)


@pytest.mark.parametrize("et", [hlo.f32, hlo.complex128])
def test_xla_leaves_a_convolutions_padding_out_of_its_sums(et):
    # Finding 23 (seed 101000475): the window over the padding alone is 0 x NaN, NaN by the
    # spec (pad with zeros, then a dot of each window) and by numpy; XLA gives 0.
    t = hlo.tensor((1, 1, 1), et)
    m = _module([t, t], lambda b, x, k: [_conv(b, x, k, padding=[(0, 1)])])
    x, k = np.zeros((1, 1, 1), et.dtype), np.full((1, 1, 1), np.nan, et.dtype)
    xla, ref = verify.run(m, x, k), verify.interpret(m, x, k)
    assert np.isnan(ref[0]).all()
    assert np.isnan(np.correlate(np.array([0.0, 0.0]), np.array([np.nan]), "valid")).all()
    assert np.isnan(xla[0][0, 0, 0]) and xla[0][0, 0, 1] == 0
    assert known_finding(m, differential.compare(xla, ref)) == "xla_convolution_skips_padding"
    unpadded = _module([t, t], lambda b, x, k: [_conv(b, x, k)])
    assert known_finding(unpadded, differential.compare(xla, ref)) is None


def test_xla_saturates_a_constant_folded_integer_convolution():
    # Finding 24 (seed 101001077): 1 + 10*22 + 19*43 + 28*64 = 2830, which wraps to 14 in
    # i8; XLA folds the convolution of two constants to 127, and wraps when an operand is an
    # argument.
    x = np.array([[[1, 10], [19, 28]]], np.int8)      # [b, 0, f]
    k = np.array([[[1, 22]], [[43, 64]]], np.int8)     # [0, o, i]
    dn = hlo.ConvDimensionNumbers(0, 2, (1,), 2, 1, (0,), 0, 1, (2,))
    folded = _module([], lambda b: [b.convolution(b.constant(x), b.constant(k), dn)])
    compiled = _module([hlo.tensor(k.shape, hlo.i8)],
                       lambda b, kk: [b.convolution(b.constant(x), kk, dn)])
    want = np.int8(2830 - 11 * 256)
    assert verify.interpret(folded)[0].item() == want
    assert verify.run(compiled, k)[0].item() == want
    xla, ref = verify.run(folded), verify.interpret(folded)
    assert xla[0].item() == 127  # the bug (jaxlib 0.10.2)
    assert known_finding(folded, differential.compare(xla, ref)) == \
        "xla_folded_integer_convolution"
    assert known_finding(compiled, differential.compare(xla, ref)) is None


@pytest.mark.parametrize("et", [hlo.i4, hlo.ui4])
def test_xla_shifts_4_bit_mulhi_by_8_bits(et):
    # Finding 25: XLA's mulhi of 4-bit integers is the product's bits above bit 8; the
    # interpreter runs it written out (mhlo_ir.decompose) and agrees with Python.
    if et is hlo.i4:
        x, y = np.array([7, -8, 5, -3]), np.array([7, -8, 3, 6])
    else:
        x, y = np.array([15, 8, 5, 3]), np.array([15, 8, 3, 6])
    t = hlo.tensor((4,), et)
    m = _module([t, t], lambda b, p, q: [b.mulhi(p, q)])
    args = [x.astype(et.dtype), y.astype(et.dtype)]
    xla, ref = verify.run(m, *args), verify.interpret(m, *args)
    assert ref[0].astype(int).tolist() == [(int(p) * int(q)) >> 4 for p, q in zip(x, y)]
    assert xla[0].astype(int).tolist() == [(int(p) * int(q)) >> 8 for p, q in zip(x, y)]
    assert known_finding(m, differential.compare(xla, ref)) == "xla_mulhi_4_bit"


def test_the_interpreters_total_order_compares_nans_and_signed_zeros_as_floats():
    # Finding 14, measured wider: every TOTALORDER comparison with a NaN is false in the
    # interpreter, and 0 and -0 compare equal; XLA follows totalOrder. A topk of floats
    # (sorted in total order for the interpreter) is named after the finding.
    t = hlo.tensor((4,), hlo.f32)
    m = _module([t, t], lambda b, x, y: [b.compare(x, y, "GT", "TOTALORDER")])
    x = np.array([np.nan, 1, 0.0, -0.0], np.float32)
    y = np.array([1, np.nan, -0.0, 0.0], np.float32)
    assert verify.run(m, x, y)[0].tolist() == [True, False, True, False]
    assert verify.interpret(m, x, y)[0].tolist() == [False, False, False, False]
    m = _module([t], lambda b, v: list(b.topk(v, 2)))
    v = np.array([1, np.nan, -0.0, 0.0], np.float32)
    xla, ref = verify.run(m, v), verify.interpret(m, v)
    assert np.isnan(xla[0][0]) and xla[1].tolist() == [1, 0]
    assert known_finding(m, differential.compare(xla, ref)) == \
        "interpreter_total_order_negative_nan"


def test_xla_folds_the_i2_maximum_of_a_broadcast_minus_one():
    # Finding 26 (seed 104009151): max(x, -1) on i2 is -1 everywhere on XLA; an argument -1,
    # other constants, i4 and minimum are right.
    t = hlo.tensor((4,), hlo.i2)

    def body(b, x):
        c = b.broadcast_in_dim(b.constant(np.array(-1, hlo.i2.dtype), hlo.i2), (4,), ())
        return [b.maximum(x, c)]
    m = _module([t], body)
    x = np.array([0, 1, -2, -1], hlo.i2.dtype)
    xla, ref = verify.run(m, x), verify.interpret(m, x)
    assert ref[0].astype(int).tolist() == np.maximum(x.astype(int), -1).tolist()
    assert xla[0].astype(int).tolist() == [-1, -1, -1, -1]  # the bug (jaxlib 0.10.2)
    arg = _module([t, t], lambda b, p, q: [b.maximum(p, q)])
    np.testing.assert_array_equal(verify.run(arg, x, np.full(4, -1, hlo.i2.dtype))[0], ref[0])
    assert known_finding(m, differential.compare(xla, ref)) == "xla_i2_maximum_of_minus_one"


def test_xla_stores_a_negative_i2_select_and_scatter_source_sign_extended():
    # Finding 27 (seed 104008235): -2 written as the byte 11111110 over four packed i2
    # elements; an argument source is right.
    et = hlo.i2

    def body(b, x, *src):
        s = src[0] if src else b.constant(np.full((1, 1), -2, et.dtype), et)
        return [b.select_and_scatter(
            x, s, b.constant(np.array(0, et.dtype), et),
            lambda r, p, q: r.compare(p, q, "LE"), lambda r, p, q: r.add(p, q),
            window_dimensions=[3, 3], window_strides=[2, 2], padding=[(1, 0), (0, 1)])]
    t = hlo.tensor((2, 3), et)
    m = _module([t], body)
    x = np.array([[-2, -1, -2], [1, 0, 0]], et.dtype)
    xla, ref = verify.run(m, x), verify.interpret(m, x)
    assert ref[0].astype(int).tolist() == [[-2, 0, 0], [0, 0, 0]]
    assert xla[0].astype(int).tolist() == [[-2, -1, -1], [-1, 0, 0]]  # the bug (0.10.2)
    arg = _module([t, hlo.tensor((1, 1), et)], body)
    np.testing.assert_array_equal(verify.run(arg, x, np.full((1, 1), -2, et.dtype))[0], ref[0])
    assert known_finding(m, differential.compare(xla, ref)) == "xla_i2_select_and_scatter"


@pytest.mark.parametrize("et", [hlo.i8, hlo.i16, hlo.i32, hlo.i4])
def test_count_leading_zeros_of_a_negative_constant(et):
    # Finding 28 (seed 20261206007042): XLA's folding counts in 64 bits; the interpreter,
    # numpy's bit count and XLA given the value as an argument agree on 0.
    m = _module([], lambda b: [b.count_leading_zeros(b.constant(np.array(-1, et.dtype), et))])
    xla, ref = verify.run(m), verify.interpret(m)
    assert int(ref[0]) == 0
    arg = _module([hlo.tensor((), et)], lambda b, x: [b.count_leading_zeros(x)])
    assert int(verify.run(arg, np.array(-1, et.dtype))[0]) == 0
    differences = differential.compare(xla, ref)
    if int(xla[0]) != 0:  # the bug (jaxlib 0.10.2): named by its finding
        assert known_finding(m, differences) == "xla_folded_clz_of_negative"
    assert known_finding(arg, differential.compare(
        [np.array(5, et.dtype)], [np.array(0, et.dtype)])) is None


def test_a_scatter_into_a_one_device_collectives_result_updates_its_operand_too():
    """On one device mhlo_ir.decompose makes a collective its operand itself, so the
    interpreter's in-place scatter (finding 20) writes into the argument the collective
    read, which another op then sees (seed 779002428)."""
    t = hlo.tensor((4,), hlo.f32)

    def body(b, x, u, also_read=True):
        dn = hlo.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,),
                                         index_vector_dim=1)
        summed = b.create("cross-replica-sum", (x,),
                          {"replica_groups": np.array([[0]], np.int64)}).results[0]
        s = b.scatter(summed, b.constant(np.array([[1]], np.int64)), u, dn,
                      lambda r, old, new: new)
        return [s, b.negate(x)] if also_read else [s]
    m = _module([t, hlo.tensor((1,), hlo.f32)], body)
    x, u = np.arange(4, dtype=np.float32), np.array([9], np.float32)
    xla, ref = verify.run(m, x, u), verify.interpret(m, x, u)
    np.testing.assert_array_equal(xla[1], -x)
    if np.array_equal(ref[1], -x):
        pytest.skip("this interpreter copies the operand (fixed upstream)")
    assert known_finding(m, differential.compare(xla, ref)) == "interpreter_scatter_in_place"
    # a scatter into a collective's result nothing else reads is not that finding
    from verify.fuzz.known import op_signatures
    alone = _module([t, hlo.tensor((1,), hlo.f32)], lambda b, x, u: body(b, x, u, False))
    assert "scatter:shared_operand" not in {s[0] for s in op_signatures(alone)}


def test_xla_compares_i2_values_with_a_splat_of_its_minimum_as_if_it_were_two():
    x = np.array([0, 1, -2, -1], ml_dtypes.int2)

    def body(b, v):
        splat = b.constant(np.full(4, -2, ml_dtypes.int2))
        return [b.compare(v, splat, "GE", "SIGNED")]
    m = _module([hlo.tensor((4,), hlo.i2)], body)
    xla, ref = verify.run(m, x), verify.interpret(m, x)
    np.testing.assert_array_equal(ref[0], [True] * 4)  # every i2 value is >= -2
    if xla[0].all():
        pytest.skip("this XLA compares it right")
    np.testing.assert_array_equal(xla[0], [False] * 4)
    assert known_finding(m, differential.compare(xla, ref)) == "xla_i2_compare_with_minimum"
    # a splat of another value is not this finding
    other = _module([hlo.tensor((4,), hlo.i2)], lambda b, v: [b.compare(
        v, b.constant(np.full(4, -1, ml_dtypes.int2)), "GE", "SIGNED")])
    np.testing.assert_array_equal(verify.run(other, x)[0], x.astype(int) >= -1)


def _select_and_scatter_ge(et, padding):
    grid = (1, 2) if padding == [(0, 0), (1, 0)] else (1, 1)

    def body(b, x, s):
        return [b.select_and_scatter(
            x, s, b.constant(np.array(0, et.dtype), et),
            lambda r, p, q: r.compare(p, q, "GE"), lambda r, p, q: r.add(p, q),
            window_dimensions=[2, 2], window_strides=[1, 1], padding=padding)]
    return _module([hlo.tensor((2, 2), et), hlo.tensor(grid, et)], body), grid


def _first_maxima(x, source, padding):
    """numpy's select_and_scatter with GE and add: each 2x2 window's first maximum in
    row-major order (the spec's in-order traversal; padding never selected) gets the
    window's source value."""
    out = np.zeros_like(x)
    for (i, j), v in np.ndenumerate(source):
        cells = [(i + a - padding[0][0], j + c - padding[1][0]) for a in (0, 1) for c in (0, 1)]
        cells = [(r, c) for r, c in cells if 0 <= r < 2 and 0 <= c < 2]
        out[max(cells, key=lambda rc: (x[rc], -cells.index(rc)))] += v
    return out


def test_xla_breaks_ties_of_a_padded_select_and_scatter_in_another_order():
    # Finding 31 (seed 779003291): the second window (no padding in it) holds two maxima,
    # x[0, 1] first in row-major order; XLA gives its source to x[1, 0], unpadded XLA
    # gives it to x[0, 1], as the interpreter and numpy do.
    x = np.array([[0, 1], [1, 0]], np.int32)
    padding = [(0, 0), (1, 0)]
    m, grid = _select_and_scatter_ge(hlo.i32, padding)
    s = np.array([[1, 2]], np.int32)
    xla, ref = verify.run(m, x, s), verify.interpret(m, x, s)
    np.testing.assert_array_equal(ref[0], _first_maxima(x, s, padding))  # [[0, 2], [1, 0]]
    unpadded, _ = _select_and_scatter_ge(hlo.i32, [(0, 0), (0, 0)])
    np.testing.assert_array_equal(verify.run(unpadded, x, np.array([[2]], np.int32))[0],
                                  [[0, 2], [0, 0]])
    if np.array_equal(xla[0], ref[0]):
        pytest.skip("this XLA breaks the ties in the window's order")
    np.testing.assert_array_equal(xla[0], [[0, 0], [3, 0]])
    assert known_finding(m, differential.compare(xla, ref)) == \
        "xla_padded_select_and_scatter_ties"
    fake = [differential.Difference(0, "integer", "made up")]
    assert known_finding(unpadded, fake) is None  # the unpadded op is not this finding


@pytest.mark.parametrize("combine", ["minimum", "maximum"])
def test_xla_reduce_scatter_with_a_minimum_or_maximum_body_drops_nans(combine):
    # Finding 32 (seed 779001470): one device, so the result is the operand; XLA gives the
    # body's identity where it holds NaN. all_reduce is right.
    x = np.array([np.nan, 1.0], np.float32)

    def body(b, v, op="reduce_scatter"):
        combiner = lambda r, p, q: getattr(r, combine)(p, q)  # noqa: E731
        groups = np.array([[0]], np.int64)
        if op == "all_reduce":
            return [b.all_reduce(v, combiner, groups)]
        return [b.reduce_scatter(v, 0, combiner, groups)]
    m = _module([hlo.tensor((2,), hlo.f32)], body)
    xla, ref = verify.run(m, x), verify.interpret(m, x)
    np.testing.assert_array_equal(ref[0], x)  # numpy: the reduction of one operand is it
    all_reduce = _module([hlo.tensor((2,), hlo.f32)], lambda b, v: body(b, v, "all_reduce"))
    np.testing.assert_array_equal(verify.run(all_reduce, x)[0], x)
    if np.isnan(xla[0][0]):
        pytest.skip("this XLA keeps the NaN")
    assert xla[0].tolist() == [np.inf if combine == "minimum" else -np.inf, 1.0]
    assert known_finding(m, differential.compare(xla, ref)) == \
        "xla_reduce_scatter_min_max_drops_nan"
    fake = [differential.Difference(0, "nan", "made up")]
    assert known_finding(all_reduce, fake) is None


@pytest.mark.parametrize("et", [hlo.f64, hlo.complex128])
def test_xla_grouped_convolution_of_f64_spreads_a_nan_to_every_group(et):
    # Finding 33 (seed 779003813): two feature groups of one feature each; group 1 is 1 * 1.
    def body(b, x, w):
        return [b.convolution(x, w, "[b, f, 0]x[o, i, 0]->[b, f, 0]", feature_group_count=2)]
    m = _module([hlo.tensor((1, 2, 1), et), hlo.tensor((2, 1, 1), et)], body)
    x = np.array([np.nan, 1], et.dtype).reshape(1, 2, 1)
    w = np.ones((2, 1, 1), et.dtype)
    xla, ref = verify.run(m, x, w), verify.interpret(m, x, w)
    numpy = np.stack([x[0, g, 0] * w[g, 0, 0] for g in (0, 1)]).reshape(1, 2, 1)
    np.testing.assert_array_equal(ref[0], numpy)  # [nan, 1]
    f32 = _module([hlo.tensor((1, 2, 1), hlo.f32), hlo.tensor((2, 1, 1), hlo.f32)], body)
    np.testing.assert_array_equal(verify.run(f32, x.real.astype(np.float32),
                                             w.real.astype(np.float32))[0], numpy.real)
    if not np.isnan(xla[0].ravel()[1]):
        pytest.skip("this XLA keeps the groups apart")
    assert known_finding(m, differential.compare(xla, ref)) == \
        "xla_grouped_convolution_mixes_groups"
    fake = [differential.Difference(0, "nan", "made up")]
    assert known_finding(f32, fake) is None  # f32 is right


def test_a_complex_matrix_product_that_overflows_is_nan_on_xla():
    # Finding 12's other way round (seed 779003552): x[0, 0] * y[0, 1] and x[0, 1] * y[1, 1]
    # are -inf-1.6e17j and -inf+infj, whose textbook sum is -inf+infj (the interpreter);
    # XLA's matrix kernel gives nan+nanj there, as numpy's x @ y (BLAS) does.
    u, v = np.complex64(8.765838e-18 - 8.0814816e08j), np.complex64(-8.6491225e05 - 1.7980492e34j)
    x = np.array([[u, v]], np.complex64)
    y = np.array([[u, v], [-2.1595825e22 - 9.994877e-03j, -1.2031766e11 - 4.1650284e24j]],
                 np.complex64)
    m = _module([hlo.tensor((1, 2), hlo.complex64), hlo.tensor((2, 2), hlo.complex64)],
                lambda b, p, q: [b.dot_general(p, q, contracting_dimensions=((1,), (0,)))])
    xla, ref = verify.run(m, x, y), verify.interpret(m, x, y)
    with np.errstate(over="ignore", invalid="ignore"):
        textbook = x[0, 0] * y[0, 1] + x[0, 1] * y[1, 1]
    np.testing.assert_array_equal(ref[0][0, 1], textbook)  # -inf+infj
    if not np.isnan(xla[0][0, 1].imag):
        pytest.skip("this XLA keeps the infinity")
    assert known_finding(m, differential.compare(xla, ref)) == "complex_product_overflow"


@pytest.mark.parametrize("et", [hlo.complex64, hlo.complex128])
def test_the_interpreters_complex_zero_to_the_zero_is_nan(et):
    # Finding 34 (seed 779001846): numpy, Python and XLA give 1.
    m = _module([hlo.tensor((2,), et)] * 2, lambda b, x, y: [b.power(x, y)])
    x, y = np.zeros(2, et.dtype), np.array([0, 2], et.dtype)
    xla, ref = verify.run(m, x, y), verify.interpret(m, x, y)
    np.testing.assert_array_equal(xla[0], x ** y)  # [1, 0]
    if not np.isnan(ref[0][0]):
        pytest.skip("this interpreter gives 1")
    assert ref[0][1] == 0
    assert known_finding(m, differential.compare(xla, ref)) == \
        "interpreter_complex_zero_to_the_zero"


def test_zeta_of_a_large_order_is_nan_on_xla_through_its_flushed_subnormal_tolerance():
    # Finding 35 (seeds 779000252, 779004842): zeta(s, 1) -> 1 as s grows.
    t = hlo.tensor((2,), hlo.f64)
    m = _module([t, t], lambda b, s, q: [b.chlo_zeta(s, q)])
    s, q = np.array([1e300, 3.0]), np.array([1.0, 1.0])
    xla, ref = verify.run(m, s, q), verify.interpret(m, s, q)
    numpy = [float(np.sum((1 + np.arange(10.0)) ** -v)) for v in s]  # 1.0, ~1.202 (not yet)
    assert ref[0][0] == numpy[0] == 1.0
    assert abs(xla[0][1] - 1.2020569031595942) < 1e-12  # zeta(3), Apery's constant
    if not np.isnan(xla[0][0]):
        pytest.skip("this XLA keeps the smallest subnormal")
    assert known_finding(m, differential.compare(xla, ref)) == "zeta_subnormal_tolerance"


def test_complex_atan2_is_nan_on_xla_where_the_squares_are_subnormal():
    # Finding 36 (seeds 779002066, 779001376, 779003264): atan2(z, z) = pi/4 for z > 0.
    t = hlo.tensor((2,), hlo.complex64)
    m = _module([t, t], lambda b, y, x: [b.atan2(y, x)])
    z = np.array([1e-19, 1], np.complex64)
    xla, ref = verify.run(m, z, z), verify.interpret(m, z, z)
    numpy = np.arctan(z / z)  # pi/4 + 0j
    np.testing.assert_allclose(ref[0].real, numpy.real, rtol=1e-6)
    assert np.all(np.abs(ref[0].imag) < 1e-7)  # about an ulp of 1 from 0
    if not np.isnan(xla[0][0].real):
        pytest.skip("this XLA keeps the subnormal square")
    assert known_finding(m, differential.compare(xla, ref)) == "complex_atan2_inaccurate"


@pytest.mark.parametrize("et", [hlo.f8E4M3FNUZ, hlo.f8E5M2FNUZ, hlo.f8E4M3B11FNUZ])
def test_xla_loop_bodies_round_a_negative_fnuz_underflow_to_nan(et):
    # Finding 41 (seed 812000423): two trips of y = y * c from y = -c (c = 2^-5 in
    # B11FNUZ): the second product is -2^-15, below half the smallest subnormal, so it rounds
    # to zero, which FNUZ types have unsigned (ml_dtypes and the interpreter: 0x00).
    c = {"f8E4M3FNUZ": 2.0 ** -4, "f8E5M2FNUZ": 2.0 ** -4, "f8E4M3B11FNUZ": 2.0 ** -5}[et.name]
    y0 = {"f8E4M3FNUZ": -2.0 ** -7, "f8E5M2FNUZ": -2.0 ** -15,
          "f8E4M3B11FNUZ": -2.0 ** -5}[et.name]
    t = hlo.tensor((2,), et)

    def body(b, x, k):
        def cond(w, i, y):
            return w.compare(i, w.constant(np.int32(2)), "LT")

        def step(w, i, y):
            return [w.add(i, w.constant(np.int32(1))), w.multiply(y, k)]
        return [b.while_([b.constant(np.int32(0)), x], cond, step)[1]]
    m = _module([t, t], body)
    x, k = np.array([y0, 1], et.dtype), np.array([c, 1], et.dtype)
    xla, ref = verify.run(m, x, k), verify.interpret(m, x, k)
    numpy = (x.astype(np.float32) * k.astype(np.float32)).astype(et.dtype)
    numpy = (numpy.astype(np.float32) * k.astype(np.float32)).astype(et.dtype)
    np.testing.assert_array_equal(ref[0].view(np.uint8), numpy.view(np.uint8))  # [0, 1]
    if ref[0].view(np.uint8)[0] == xla[0].view(np.uint8)[0]:
        pytest.skip("this XLA rounds to +0 in loops")
    assert xla[0].view(np.uint8)[0] == 0x80  # NaN
    assert known_finding(m, differential.compare(xla, ref)) == \
        "xla_fnuz_negative_underflow_in_loop"
    straight = _module([t, t], lambda b, x, k: [b.multiply(b.multiply(x, k), k)])
    np.testing.assert_array_equal(verify.run(straight, x, k)[0].view(np.uint8),
                                  numpy.view(np.uint8))  # outside a loop XLA gets it right


@pytest.mark.parametrize("et", [hlo.f8E4M3B11FNUZ, hlo.f8E4M3FN])
def test_a_narrow_float_dot_accumulates_wider_on_xla(et):
    # Finding 42 (seeds 812003771, 812003302, 812006621): [-9, 6] . [6, 6] = -54 + 36. -54 is
    # past these types' largest finite value (30 and 448: NaN for B11FNUZ, which has no
    # infinity; 448 is not reached by f8E4M3FN, so there [-240, 200] . [2, 2]: -480 + 400).
    a, b_ = ([-9, 6], [6, 6]) if et is hlo.f8E4M3B11FNUZ else ([-240, 200], [2, 2])
    m = _module([hlo.tensor((2,), et)] * 2, lambda b, x, y: [b.dot(x, y)])
    x, y = np.array(a, et.dtype), np.array(b_, et.dtype)
    xla, ref = verify.run(m, x, y), verify.interpret(m, x, y)
    f32 = np.float32(np.dot(x.astype(np.float32), y.astype(np.float32))).astype(et.dtype)
    np.testing.assert_array_equal(xla[0], f32)  # one rounding of the f32 sum: -18 or -80
    first = (x[0].astype(np.float32) * y[0].astype(np.float32)).astype(et.dtype)
    assert np.isnan(first.astype(np.float32))  # the first product alone overflows
    if not np.isnan(np.float32(ref[0])):
        pytest.skip("this interpreter accumulates wider")
    assert known_finding(m, differential.compare(xla, ref)) == "narrow_float_dot_accumulation"


def test_a_total_order_chlo_compare_is_finding_14_and_f4_max_to_int_may_show_as_nan():
    # seed 812008885: chlo.broadcast_compare LT in total order of -NaN (XLA true, the
    # interpreter false); seed 812002421: f4E2M1FN's 6 converted to i16 (finding 5), then
    # dotted and converted to f8E3M4: NaN on the interpreter's side only.
    t = hlo.tensor((2,), hlo.f8E4M3FN)
    m = _module([t, t], lambda b, x, y: [b.chlo_broadcast_compare(x, y, "LT", "TOTALORDER")])
    fake = [differential.Difference(0, "integer", "made up")]
    assert known_finding(m, fake) == "interpreter_total_order_negative_nan"
    m = _module([hlo.tensor((2,), hlo.f4E2M1FN)], lambda b, x: [b.convert(
        b.convert(x, hlo.i16), hlo.f8E3M4)])
    assert known_finding(m, [differential.Difference(0, "nan", "made up")]) == \
        "xla_f4e2m1fn_max_to_int"


def test_a_widening_convert_elsewhere_does_not_name_a_disagreement():
    """Findings 43 and 44 name a disagreement only when the differing result is computed
    through the widening convert (one anywhere in a program was enough before)."""
    m = _module([hlo.tensor((2,), hlo.bf16)] * 2 + [hlo.tensor((2,), hlo.f32)],
                lambda b, x, y, z: [b.convert(b.divide(x, y), hlo.f32), b.exponential(z)])
    fake = [differential.Difference(1, "float", "made up")]
    assert known_finding(m, fake) is None
    assert known_finding(m, [differential.Difference(0, "float", "made up")]) == \
        "xla_narrow_float_excess_precision"


def test_a_finding_is_known_only_if_its_pattern_computes_the_differing_result():
    """An unrelated abs(multiply) or bitcast elsewhere in the program once labelled any
    integer difference known (about a third of generated programs would have been); the
    matchers look at the ops upstream of the differing result (its producers, the bodies of
    those, the functions they call)."""
    from verify.differential import Difference
    t8, t32 = hlo.tensor((4,), hlo.i8), hlo.tensor((4,), hlo.i32)

    def body(b, x, y, z):
        wide = b.convert(b.convert(x, hlo.ui16), hlo.ui32)   # result 0: the "new" bug
        square = b.abs(b.multiply(y, z))                     # result 1: finding 1's pattern
        return [wide, square]
    m = _module([t8, t32, t32], body)
    diff = lambda i: [Difference(i, "integer", f"result {i} differs")]  # noqa: E731
    assert known_finding(m, diff(0)) is None
    assert known_finding(m, diff(1)) == "xla_abs_square_fold"

    def looped(b, x, y):  # the pattern inside a while body upstream of the result
        def cond(r, i, v):
            return r.compare(i, r.constant(np.int32(2)), "LT")

        def step(r, i, v):
            return [r.add(i, r.constant(np.int32(1))), r.abs(r.multiply(v, v))]
        return [b.while_([b.constant(np.int32(0)), y], cond, step)[1], x]
    m2 = _module([t8, t32], looped)
    assert known_finding(m2, diff(0)) == "xla_abs_square_fold"
    assert known_finding(m2, diff(1)) is None
