"""sort, top_k, argmax/argmin, the cumulative reductions and conv_general_dilated: traced with
lower.lax, lowered by our rules, run by jaxlib, compared with numpy (exact for orders,
indices and integers; float sums and convolutions within the stated tolerances)."""

from __future__ import annotations

import numpy as np
import pytest

from lower import lax, lower_jaxpr_to_module
from lower.lax import ConvDimensionNumbers
from tests.lower.harness import check, run

RNG = np.random.default_rng(7)




# -- sort, top_k, argmax/argmin ---------------------------------------------------------------

NANS = np.array([[3.0, np.nan, -0.0, 1.0, 0.0, -np.inf, 1.0],
                 [np.nan, 2.0, np.nan, -1.0, np.inf, 2.0, -3.0]], np.float32)


def test_sort_floats_nan_last_stable_keys_and_several_operands():
    keys = np.array([[2, 1, 2, 1, 0, 2], [5, 5, 5, 5, 5, 5]], np.int32)
    k2 = np.array([[9, 8, 1, 7, 6, 0], [3, 1, 2, 0, 5, 4]], np.int32)
    vals = np.arange(12, dtype=np.float32).reshape(2, 6)
    cplx = np.array([1 + 2j, 1 - 1j, -2 + 5j, 1 + 2j, 0 + 0j], np.complex64)

    def f(x, k, kk, v, c):
        return [lax.sort(x), lax.sort(x, dimension=0),
                *lax.sort_key_val(k, v),                         # stable: ties keep order
                *lax.sort([k, kk, v], num_keys=2),
                lax.sort(c), lax.sort(lax.neg(x), is_stable=False)]
    outs = run(f, NANS, keys, k2, vals, cplx)
    order = np.argsort(keys, axis=1, kind="stable")
    lex = np.stack([np.lexsort((k2[i], keys[i])) for i in range(2)])
    ref_c = np.array(sorted(cplx, key=lambda z: (z.real, z.imag)), np.complex64)
    check(outs, [np.sort(NANS, 1), np.sort(NANS, 0),
                 np.take_along_axis(keys, order, 1), np.take_along_axis(vals, order, 1),
                 np.take_along_axis(keys, lex, 1), np.take_along_axis(k2, lex, 1),
                 np.take_along_axis(vals, lex, 1), ref_c, np.sort(-NANS, 1)])
    # -0.0 and 0.0 are equal keys: a stable sort keeps them in input order.
    s = outs[0][0]
    zeros = s[(s == 0)]
    assert np.signbit(zeros).tolist() == [True, False]


def test_top_k_last_and_other_axis():
    x = RNG.permutation(24).astype(np.float32).reshape(4, 6)

    def f(a):
        return [*lax.top_k(a, 3), *lax.top_k(a, 2, axis=0)]
    v, i, v0, i0 = run(f, x)
    idx = np.argsort(-x, axis=1)[:, :3]
    idx0 = np.argsort(-x, axis=0)[:2]
    check([v, i, v0, i0], [np.take_along_axis(x, idx, 1), idx.astype(np.int32),
                           np.take_along_axis(x, idx0, 0), idx0.astype(np.int32)])


def test_argmax_argmin_first_extremum_and_first_nan():
    ints = np.array([[1, 7, 7, -2, 7], [-5, -5, 0, 0, -5]], np.int8)
    floats = np.array([[1.0, 5.0, 5.0, -1.0], [np.nan, 0.0, np.nan, 9.0],
                       [-np.inf, -np.inf, -np.inf, -np.inf], [2.0, np.nan, -7.0, -7.0]],
                      np.float32)
    bools = np.array([[False, True, True], [False, False, False]])

    def f(i, x, b):
        return [lax.argmax(i, 1), lax.argmin(i, 1), lax.argmax(i, 0, np.int64),
                lax.argmax(x, 1), lax.argmin(x, 1), lax.argmin(x, 0),
                lax.argmax(b, 1), lax.argmin(b, 1, np.uint8)]
    outs = run(f, ints, floats, bools)
    check(outs, [np.argmax(ints, 1).astype(np.int32), np.argmin(ints, 1).astype(np.int32),
                 np.argmax(ints, 0).astype(np.int64), np.argmax(floats, 1).astype(np.int32),
                 np.argmin(floats, 1).astype(np.int32), np.argmin(floats, 0).astype(np.int32),
                 np.argmax(bools, 1).astype(np.int32), np.argmin(bools, 1).astype(np.uint8)])


# -- cumulative reductions --------------------------------------------------------------------

def _np_cum(ufunc, x, axis, reverse):
    x = np.flip(x, axis) if reverse else x
    y = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
    return np.flip(y, axis) if reverse else y


def test_cumulative_reductions_both_directions():
    x = RNG.uniform(-2, 2, (3, 5)).astype(np.float32)
    i = RNG.integers(-4, 5, (3, 5)).astype(np.int32)
    big = np.array([[1000.0, 1000.0, -np.inf, 0.0, -1000.0]], np.float32)
    specs = [(a, r) for a in (0, 1) for r in (False, True)]

    def f(x, i, big):
        outs = []
        for a, r in specs:
            outs += [lax.cumsum(i, a, r), lax.cumprod(i, a, r), lax.cummax(i, a, r),
                     lax.cummin(x, a, r), lax.cumsum(x, a, r), lax.cumprod(x, a, r),
                     lax.cumlogsumexp(x, a, r)]
        return outs + [lax.cumlogsumexp(big, 1), lax.cummax(big, 1, True)]
    outs = run(f, x, i, big)
    k = 0
    for a, r in specs:
        check(outs[k:k + 4], [_np_cum(np.add, i, a, r), _np_cum(np.multiply, i, a, r),
                              _np_cum(np.maximum, i, a, r), _np_cum(np.minimum, x, a, r)])
        # Window sums add in another order than numpy's running sum: f32 tolerances.
        np.testing.assert_allclose(outs[k + 4], _np_cum(np.add, x, a, r), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(outs[k + 5], _np_cum(np.multiply, x, a, r), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(outs[k + 6], _np_cum(np.logaddexp, x, a, r), rtol=1e-5)
        k += 7
    np.testing.assert_allclose(outs[k], _np_cum(np.logaddexp, big, 1, False), rtol=1e-6)
    check(outs[k + 1:], [_np_cum(np.maximum, big, 1, True)])


# -- convolution ------------------------------------------------------------------------------

def _np_conv(lhs, rhs, strides, padding, lhs_dil, rhs_dil, fgc=1, bgc=1):
    """Reference in the logical layouts (N, C, *S) x (O, I, *K), by StableHLO's definition:
    dilate, pad (negative crops), slide; groups split the features or the batch."""
    nsp = lhs.ndim - 2

    def dilate(a, dil):
        shape = list(a.shape[:2]) + [(n - 1) * d + 1 if n else 0
                                     for n, d in zip(a.shape[2:], dil)]
        out = np.zeros(shape, a.dtype)
        out[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in dil)] = a
        return out
    x, k = dilate(lhs, lhs_dil), dilate(rhs, rhs_dil)
    x = np.pad(x, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding])
    x = x[(slice(None), slice(None)) + tuple(
        slice(-min(lo, 0), x.shape[2 + d] + min(hi, 0)) for d, (lo, hi) in enumerate(padding))]
    win = np.lib.stride_tricks.sliding_window_view(x, k.shape[2:], axis=tuple(range(2, 2 + nsp)))
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    n, c = x.shape[:2]
    o = k.shape[0]
    outs = []
    for g in range(max(fgc, bgc)):
        og = slice(g * o // max(fgc, bgc), (g + 1) * o // max(fgc, bgc))
        xg = win[:, g * c // fgc:(g + 1) * c // fgc] if fgc > 1 else win
        xg = xg[g * n // bgc:(g + 1) * n // bgc] if bgc > 1 else xg
        sub = "".join("abcdefgh"[:nsp])
        ksub = "".join("stuvwxyz"[:nsp])
        outs.append(np.einsum(f"ni{sub}{ksub},oi{ksub}->no{sub}", xg, k[og]))
    return np.concatenate(outs, axis=1)


def _to_layout(a, spec):
    """A logical-layout array moved so that logical dimension i sits at spec[i]."""
    return np.moveaxis(a, list(range(a.ndim)), list(spec))


CONV_CASES = [
    # lhs shape (logical N, C, *S), rhs (O, I, *K), strides, padding, lhs_dil, rhs_dil, fgc, bgc
    ((2, 3, 6, 5), (4, 3, 3, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1, 1),
    ((1, 2, 7, 6), (3, 2, 3, 3), (2, 1), ((1, 2), (-1, 1)), (1, 1), (2, 1), 1, 1),
    ((2, 2, 4, 4), (2, 2, 2, 3), (1, 2), ((1, 1), (2, 0)), (2, 1), (1, 1), 1, 1),
    ((2, 6, 5, 5), (4, 3, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), (1, 1), 2, 1),
    ((4, 2, 5, 4), (6, 2, 3, 2), (1, 1), ((1, 1), (0, 0)), (1, 1), (1, 2), 1, 2),
    ((3, 2, 9), (4, 2, 3), (2,), ((2, 1),), (1,), (3,), 1, 1),
]


@pytest.mark.parametrize("layouts", ["logical", "nhwc"])
def test_conv_general_dilated_against_numpy(layouts):
    lhss, rhss, refs, dns = [], [], [], []
    for ls, rs, st, pad, ld, rd, fgc, bgc in CONV_CASES:
        lhs = RNG.uniform(-1, 1, ls).astype(np.float32)
        rhs = RNG.uniform(-1, 1, rs).astype(np.float32)
        ref = _np_conv(lhs, rhs, st, pad, ld, rd, fgc, bgc)
        n = len(ls)
        if layouts == "logical":
            dn = ConvDimensionNumbers(*(tuple(range(n)),) * 3)
        else:  # batch first, feature last; kernel spatial first (HWIO), outputs as inputs
            dn = ConvDimensionNumbers((0, n - 1, *range(1, n - 1)),
                                      (n - 1, n - 2, *range(n - 2)),
                                      (0, n - 1, *range(1, n - 1)))
        lhss.append(_to_layout(lhs, dn.lhs_spec))
        rhss.append(_to_layout(rhs, dn.rhs_spec))
        refs.append(_to_layout(ref, dn.out_spec))
        dns.append(dn)

    def f(*args):
        ls, rs = args[:len(CONV_CASES)], args[len(CONV_CASES):]
        return [lax.conv_general_dilated(lhs, rhs, c[2], c[3], c[4], c[5], dn, c[6], c[7],
                                         precision="HIGHEST")
                for lhs, rhs, c, dn in zip(ls, rs, CONV_CASES, dns)]
    outs = run(f, *lhss, *rhss)
    for o, r in zip(outs, refs):
        assert o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)  # f32 sums of <= 24 products


def test_conv_string_layouts_same_padding_preferred_type_and_complex():
    x = RNG.integers(-3, 4, (1, 5, 6, 2)).astype(np.int8)        # NHWC
    w = RNG.integers(-3, 4, (3, 3, 2, 4)).astype(np.int8)        # HWIO
    cl = (RNG.uniform(-1, 1, (1, 2, 5)) + 1j * RNG.uniform(-1, 1, (1, 2, 5))).astype(np.complex64)
    cr = (RNG.uniform(-1, 1, (3, 2, 2)) + 1j * RNG.uniform(-1, 1, (3, 2, 2))).astype(np.complex64)

    def f(a, b, c, d):
        return [lax.conv_general_dilated(a, b, (2, 1), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         preferred_element_type=np.int32),
                lax.conv_general_dilated(c, d, (1,), "VALID")]
    outs = run(f, x, w, cl, cr)
    # SAME with stride 2 on 5 rows: ceil(5/2)=3 outputs, total pad 2 -> (1, 1); cols (1, 1).
    ref = _np_conv(x.transpose(0, 3, 1, 2).astype(np.int32),
                   w.transpose(3, 2, 0, 1).astype(np.int32), (2, 1), ((1, 1), (1, 1)),
                   (1, 1), (1, 1)).transpose(0, 2, 3, 1)
    check(outs[:1], [ref])
    np.testing.assert_allclose(outs[1], _np_conv(cl, cr, (1,), ((0, 0),), (1,), (1,)),
                               rtol=1e-5, atol=1e-5)
    closed = lax.make_jaxpr(f)(x, w, cl, cr)
    # cpu expands the complex convolution into three real ones (as JAX does); tpu keeps one.
    text_cpu = lower_jaxpr_to_module("c", closed, platform="cpu").module.to_text()
    text_tpu = lower_jaxpr_to_module("c", closed, platform="tpu").module.to_text()
    assert text_cpu.count('"mhlo.convolution"') == 4
    assert text_tpu.count('"mhlo.convolution"') == 2


def test_conv_params_follow_jax():
    x = np.zeros((1, 2, 4, 4), np.float32)
    w = np.zeros((3, 2, 2, 2), np.float32)
    closed = lax.make_jaxpr(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME"))(x, w)
    (eqn,) = closed.eqns
    assert set(eqn.params) == {"window_strides", "padding", "lhs_dilation", "rhs_dilation",
                               "dimension_numbers", "feature_group_count", "batch_group_count",
                               "precision", "preferred_element_type"}
    assert eqn.params["padding"] == ((0, 1), (0, 1))
    assert eqn.outvars[0].aval.shape == (1, 3, 4, 4)
