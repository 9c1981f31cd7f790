"""The comparison policy of two executors: exact integers, 4 ULP floats in the result's own
type, NaN equal to NaN, and the rules that explain known semantic differences."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from verify import differential as d


def test_ulp_distance_counts_neighbouring_floats_in_their_own_type():
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
               ml_dtypes.float8_e5m2):
        x = np.array([1.0, -2.0, 0.0], dt)
        info = ml_dtypes.finfo(dt)
        up = np.array([1.0 + float(info.eps), -2.0 - 2 * float(info.eps),
                       float(info.smallest_subnormal)], dt)
        assert d.ulp_distance(x, up).tolist() == [1, 1, 1], dt
    z = np.array([0.0, -0.0], np.float32)
    assert d.ulp_distance(z, z[::-1]).tolist() == [0, 0]
    nan = np.array([np.nan], np.float32)
    assert d.ulp_distance(nan, nan).tolist() == [0]
    f64 = np.array([1.0], np.float64)
    assert d.ulp_distance(f64, np.nextafter(f64, 2)).tolist() == [1]


def test_integers_are_exact_and_floats_get_four_ulp():
    a = np.array([1, 2, 3], np.int32)
    assert d.compare([a], [a.copy()]) == []
    [diff] = d.compare([a], [np.array([1, 2, 4], np.int32)])
    assert diff.kind == "integer" and diff.explained_by is None and "1 of 3" in diff.detail
    f = np.array([1.0, 2.0], np.float32)
    near = f.view(np.int32) + np.int32(4)
    assert d.compare([f], [near.view(np.float32)]) == []
    far = (f.view(np.int32) + np.int32(5)).view(np.float32)
    [diff] = d.compare([f], [far])
    assert diff.kind == "float" and d.classify([diff]) == "disagreement:float"


def test_shape_and_dtype_differences_are_disagreements():
    [diff] = d.compare([np.zeros(2, np.float32)], [np.zeros(3, np.float32)])
    assert diff.kind == "type"
    [diff] = d.compare([np.zeros(2, np.uint32)], [np.zeros(2, np.int32)])
    assert diff.kind == "type"


def test_nan_against_a_number_is_its_own_class():
    [diff] = d.compare([np.array([np.nan], np.float32)], [np.array([1.0], np.float32)])
    assert diff.kind == "nan"


def test_flushed_subnormals_are_explained():
    tiny = np.array([1e-40, 0.0], np.float32)  # 1e-40 is subnormal in f32
    [diff] = d.compare([np.zeros(2, np.float32)], [tiny])
    assert diff.explained_by == "subnormal_flush" and d.classify([diff]) is None


def test_tolerance_only_for_programs_that_reassociate_or_approximate():
    x = np.array([1.0], np.float32)
    y = np.array([1 + 2 ** -18], np.float32)  # 32 ULP, within 2**-(23 - 6)
    assert d.classify(d.compare([x], [y])) == "disagreement:float"
    assert d.classify(d.compare([x], [y], {"reassociates"})) is None
    assert d.compare([x], [y], {"reassociates"})[0].explained_by == "tolerance"
    assert d.classify(d.compare([x], [np.array([2.0], np.float32)], {"approximates"})) == \
        "disagreement:float"


def test_random_results_are_not_compared():
    assert d.compare([np.array([1], np.uint32)], [np.array([2], np.uint32)], {"random"}) == []


def test_complex_parts_are_compared_separately():
    x = np.array([1 + 1j], np.complex64)
    [diff] = d.compare([x], [np.array([1 + 2j], np.complex64)])
    assert "imag" in diff.detail


def test_programs_that_convert_into_e8m0_have_their_differences_explained():
    x, y = np.array([np.nan, 1.0], np.float16), np.array([0.0, 1.0], np.float16)
    (plain,) = d.compare([x], [y])
    (lossy,) = d.compare([x], [y], frozenset({"e8m0_lossy"}))
    assert plain.explained_by is None and lossy.explained_by == "e8m0_no_zero"
    (ints,) = d.compare([np.array([1, 2], np.int8)], [np.array([1, 3], np.int8)],
                        frozenset({"e8m0_lossy"}))
    assert ints.explained_by == "e8m0_no_zero"


def test_zero_dimensional_results_are_compared_like_any_other():
    # A rank-0 float result that differs: numpy's scalars take neither masks nor indices,
    # and a campaign's worker died of it (seed 6000081 and 27 more of the seed-6 campaign).
    x, y = np.array(3.0, ml_dtypes.float4_e2m1fn), np.array(0.0, ml_dtypes.float4_e2m1fn)
    [diff] = d.compare([x], [y])
    assert diff.kind == "float" and "1 of 1 elements" in diff.detail and "XLA 3" in diff.detail
    [diff] = d.compare([x], [y], {"approximates"})
    assert diff.explained_by == "tolerance"
    [diff] = d.compare([np.array(np.nan, np.float32)], [np.array(1.0, np.float32)])
    assert diff.kind == "nan"
    [diff] = d.compare([np.array(1e-40, np.float32)], [np.array(0.0, np.float32)])
    assert diff.explained_by == "subnormal_flush"
    [diff] = d.compare([np.array(1 + 1j, np.complex64)], [np.array(1 + 2j, np.complex64)])
    assert "(imag)" in diff.detail


def test_tolerance_is_relative_to_the_results_own_magnitude():
    # An FFT of values near 1e9: a bin that cancels to 0 on one side is 1.5e-7 on the other,
    # 1e-16 of the result's size (what the interpreter's direct DFT gives, XLA's FFT not)
    x = np.array([9.5e8 + 0j, -1.5e9 + 0j])
    y = np.array([9.5e8 + 0j, -1.5e9 - 1.5e-7j])
    (diff,) = d.compare([x], [y], frozenset({"reassociates"}))
    assert diff.explained_by == "tolerance"
    # the scale is the smaller of the two sides' largest magnitude: a huge wrong value on one
    # side does not widen its own tolerance
    wrong = np.array([1.0, 1e30])
    (diff,) = d.compare([np.array([1.0, 2.0])], [wrong], frozenset({"reassociates"}))
    assert diff.explained_by is None
    # and it is for programs that reassociate only
    (diff,) = d.compare([x], [y])
    assert diff.explained_by is None


def test_complex_non_finite_classes_agree():
    x = np.array([complex(np.nan, 0.0), complex(-np.inf, 0.0), 1 + 1j])
    y = np.array([complex(np.nan, np.nan), complex(-np.inf, np.nan), 1 + 1j])
    for traits in (frozenset(), frozenset({"reassociates"})):
        diffs = d.compare([x], [y], traits)
        assert diffs and all(x.explained_by == "complex_non_finite" for x in diffs)
        assert d.classify(diffs) is None
    # not where only one side is non-finite
    z = np.array([complex(0.0, 0.0), complex(-np.inf, 0.0), 1 + 1j])
    assert d.classify(d.compare([z], [y])) == "disagreement:nan"
    # an infinity is not a NaN: inf+0j against nan+nanj stays a disagreement
    w = np.array([complex(np.inf, 0.0), complex(-np.inf, 0.0), 1 + 1j])
    assert d.classify(d.compare([w], [y])) == "disagreement:nan"
    # and finite parts beside them still count
    v = np.array([complex(np.nan, np.nan), complex(-np.inf, np.nan), 1 + 2j])
    assert d.classify(d.compare([v], [y])) == "disagreement:float"


def test_integers_computed_from_inexact_floats_are_explained():
    x, y = np.array([1, 2], np.int8), np.array([1, 3], np.int8)
    (diff,) = d.compare([x], [y], frozenset({"reassociates"}), inexact=(True,))
    assert diff.kind == "integer" and diff.explained_by == "inexact_upstream"
    assert d.classify([diff]) is None
    # a result the generator did not mark is still held exactly, whatever the program's traits
    (diff,) = d.compare([x], [y], frozenset({"reassociates"}), inexact=(False,))
    assert diff.explained_by is None
    (diff,) = d.compare([x], [y])
    assert diff.explained_by is None


def test_the_tolerance_is_for_the_results_computed_from_inexact_floats():
    """A program with an approximated op somewhere: a float result the generator marks as
    computed from no inexact value is held to ULP_LIMIT (42 ULP apart was explained as
    'tolerance' before); one it marks inexact gets the tolerance. Without marks (callers
    that do not know) every float result gets it, as before."""
    x = np.array([1.0, 2.0], np.float32)
    y = np.array([1 + 42 * 2 ** -23, 2.0], np.float32)
    (exact, loose) = d.compare([x, x], [y, y], frozenset({"approximates"}),
                               inexact=(False, True))
    assert exact.explained_by is None and loose.explained_by == "tolerance"
    assert d.classify(d.compare([x], [y], frozenset({"approximates"}))) is None


def test_the_tolerance_is_of_the_type_an_inexact_value_was_computed_in():
    """An f32 approximation widened to f64 is within f32's tolerance, not f64's (the lead of
    seed 812009391: chlo.asinh in complex<f32> converted to complex<f64>, both executors
    within an f32 ULP of the answer, reported as disagreeing)."""
    x = np.array([0.5151, 1.0], np.float64)
    y = np.array([0.5151 * (1 + 2 ** -23), 1.0], np.float64)   # one f32 ULP, 2**29 f64 ULP
    traits = frozenset({"approximates"})
    assert d.classify(d.compare([x], [y], traits, (True,))) == "disagreement:float"
    (diff,) = d.compare([x], [y], traits, (True,), (np.dtype(np.float32),))
    assert diff.explained_by == "tolerance"
    # and for a complex result, per part
    cx, cy = x.astype(np.complex128) * 1j, y.astype(np.complex128) * 1j
    assert d.classify(d.compare([cx], [cy], traits, (True,), (np.dtype(np.float32),))) \
        is None
    # an exact result is held to ULP_LIMIT whatever its computed_in says
    assert d.classify(d.compare([x], [y], traits, (False,), (np.dtype(np.float32),))) == \
        "disagreement:float"


# -- a review of 2026-12-07 -----------------------------------------------------------------------

def test_an_infinity_is_within_no_tolerance_of_a_number():
    # (inf - x <= tol * inf held: XLA's f16 dot gave 6e4 where the interpreter's overflowed)
    for y in (1.0, -np.inf, 6e4):
        x = np.array([np.inf if y != np.inf else 1.0], np.float16)
        got = d.compare([x], [np.array([y], np.float16)], {"reassociates"})
        assert d.classify(got) == "disagreement:float", (y, got)
    same = d.compare([np.array([np.inf], np.float32)], [np.array([np.inf], np.float32)],
                     {"approximates"})
    assert same == []


def test_e8m0_values_are_compared_and_explained_only_by_the_rule_s_premise():
    e8 = ml_dtypes.float8_e8m0fnu
    bits = np.array([128, 129, 227, 127], np.uint8).view(e8)   # 2, 4, 2**100, 1
    other = np.array([0, 1, 100, 126], np.uint8).view(e8)      # 2**-127, 2**-126, 2**-27, 0.5
    # no sign bit: 2.0 and 2**-127 are 128 steps apart, not 0
    assert d.ulp_distance(bits, other).tolist() == [128, 128, 127, 1]
    (diff,) = d.compare([bits], [other])
    assert diff.explained_by is None
    # the rule's own case: below the range, the smallest value on one side and NaN on the other
    (diff,) = d.compare([np.array([0, 127], np.uint8).view(e8)],
                        [np.array([255, 127], np.uint8).view(e8)])
    assert diff.explained_by == "e8m0_no_zero"


def test_subnormal_flush_explains_only_the_subnormals_xla_computes_with():
    # f16 and the 8-bit floats are computed in f32 on XLA:CPU, whose flush cannot reach
    # their own subnormals (or normals)
    for dtype, v in ((np.float16, 1.22e-4), (ml_dtypes.float8_e4m3fn, 0.03125),
                     (np.float16, 3e-6)):  # (a subnormal of f16, 50 ULP from 0)
        (diff,) = d.compare([np.zeros(1, dtype)], [np.array([v], dtype)])
        assert diff.explained_by is None, (dtype, v)
    (diff,) = d.compare([np.zeros(1, ml_dtypes.bfloat16)],
                        [np.array([1e-39], ml_dtypes.bfloat16)])  # (bf16 shares f32's range)
    assert diff.explained_by == "subnormal_flush"


def test_random_results_still_need_as_many_results():
    (diff,) = d.compare([np.array([1], np.uint32)], [], {"random"})
    assert diff.kind == "type"


def test_random_results_still_need_their_types():
    """A shape or dtype difference is always one, random values or not."""
    (diff,) = d.compare([np.zeros(2, np.float32)], [np.zeros(5, np.int64)], {"random"})
    assert diff.kind == "type" and "interpreter int64[5]" in diff.detail
    assert d.compare([np.zeros(2, np.float32)], [np.ones(2, np.float32)], {"random"}) == []


def test_complex_infinities_agree_only_on_their_infinite_part():
    """inf+0j and inf+nanj agree (the other part is the arithmetic's); +inf against -inf, or
    a real infinity against an imaginary one, do not (they were explained away)."""
    x = np.array([complex(np.inf, 0.0)], np.complex64)
    for other in (complex(np.inf, np.nan), complex(np.inf, 5.0)):
        assert d.classify(d.compare([x], [np.array([other], np.complex64)])) is None
    for other in (complex(-np.inf, 0.0), complex(0.0, np.inf), complex(np.nan, np.inf)):
        diffs = d.compare([x], [np.array([other], np.complex64)])
        assert d.classify(diffs) is not None, other
        assert not any(x.explained_by == "complex_non_finite" for x in diffs)
