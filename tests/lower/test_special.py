"""Special functions (lower/rules/special.py, lower/lax/special.py) lowered, run by jaxlib and
compared with jax.jit of jax's own functions on the same arrays.

The decompositions follow XLA's op for op, so on one jaxlib the results agree bit for bit: the
comparisons below ask for that (NaNs compare equal) and print the largest relative error in
ulps when they fail. They batch every point of a grid into one array per program to keep the
number of XLA compilations small. Without jax, identities and scipy-free known values check
the functions themselves.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from tests.lower.harness import run

# Edge cases: zeros, subnormal-ish and tiny, around the series/fraction switch (x = 1, x = a),
# large, negative, nan, inf.
A = [0.0, 1e-30, 1e-3, 0.1, 0.5, 1.0, 1.5, 2.0, 5.0, 10.0, 30.0, 100.0, 1e3, 1e5, -1.0,
     np.nan, np.inf]
X = [0.0, 1e-30, 1e-3, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0, 150.0, 1e4, 1e6, -1.0, np.nan,
     np.inf]
AB = [0.0, 1e-3, 0.5, 1.0, 2.0, 10.0, 100.0, 1e4, np.inf, -1.0, np.nan]
BX = [0.0, 1e-3, 0.3, 0.5, 0.9, 0.999, 1.0, -0.5, 1.5, np.nan]
I0X = [-np.inf, -100.0, -8.5, -8.0, -1.0, -0.0, 0.0, 1e-5, 0.5, 3.0, 7.99, 8.0, 8.01, 20.0,
       500.0, 1e30, np.inf, np.nan]


def grid(dtype, *axes):
    cols = np.array(list(itertools.product(*axes)), dtype=np.float64).T
    return [c.astype(dtype) for c in cols]


def i0x(dtype, n):
    """The I0e points, tiled to ``n`` elements (one operand shape for the whole program)."""
    return np.resize(np.array(I0X, dtype), n)


def assert_same(got, want, what):
    """Equal bits (any NaN equals any NaN); else fail naming the worst point and its error."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    both_nan = np.isnan(got) & np.isnan(want)
    same = (got == want) | both_nan
    if not same.all():
        g, w = got.astype(np.float64), want.astype(np.float64)
        ulp = np.spacing(np.abs(want).astype(got.dtype)).astype(np.float64)
        err = np.where(same, 0.0, np.abs(g - w) / ulp)
        i = int(np.nanargmax(np.where(np.isnan(err), np.inf, err)))
        raise AssertionError(f"{what}: {int((~same).sum())} of {got.size} differ; worst at "
                             f"{i}: got {got.flat[i]!r}, jax {want.flat[i]!r} "
                             f"({err.flat[i]:.3g} ulp)")


# -- without jax: identities and known values ----------------------------------------------

def test_identities_and_known_values():
    a = np.array([0.5, 1.0, 2.0, 3.5, 10.0, 0.25], np.float32)
    x = np.array([0.2, 1.0, 3.0, 2.0, 8.0, 0.75], np.float32)
    p, q, i0e, bi, bsym = run(
        lambda a, x: [lax.igamma(a, x), lax.igammac(a, x), lax.bessel_i0e(x),
                      lax.betainc(a, x + 1.0, x / 10.0),
                      1.0 - lax.betainc(x + 1.0, a, 1.0 - x / 10.0)], a, x)
    np.testing.assert_allclose(p + q, 1.0, rtol=2e-6)
    # P(1, x) = 1 - exp(-x); i0e(1) = exp(-1) I0(1), I0(1) = 1.2660658777520082
    np.testing.assert_allclose(p[1], 1 - np.exp(-1.0), rtol=1e-6)
    np.testing.assert_allclose(i0e[1], np.exp(-1.0) * 1.2660658777520082, rtol=1e-6)
    np.testing.assert_allclose(bi, bsym, rtol=1e-5, atol=1e-7)  # I_x(a,b) = 1 - I_1-x(b,a)


def test_random_gamma_moments_without_jax():
    key = np.array([0, 42], np.uint32)
    alpha = np.repeat(np.array([0.3, 1.0, 4.0, 50.0], np.float32), 4000)
    (s,) = run(lambda k, a: [lax.random_gamma(k, a)], key, alpha)
    s = s.reshape(4, -1)
    assert np.isfinite(s).all() and (s >= 0).all()
    want = np.array([0.3, 1.0, 4.0, 50.0])
    np.testing.assert_allclose(s.mean(1), want, rtol=0.06)   # mean = var = alpha
    np.testing.assert_allclose(s.var(1), want, rtol=0.15)


def test_float64_matches_scipy():
    """The math itself, away from jax: scipy's gammainc/gammaincc/betainc/i0e (Cephes too)."""
    scipy_special = pytest.importorskip("scipy.special")
    a = np.array([0.5, 1.0, 2.0, 3.5, 10.0, 0.01, 100.0, 7.0], np.float64)
    x = np.array([0.2, 1.0, 3.0, 2.0, 8.0, 0.5, 120.0, 30.0], np.float64)
    bx = np.array([0.2, 0.5, 0.9, 0.99, 0.5, 0.1, 0.45, 0.6], np.float64)
    p, q, bi, i0e = run(lambda a, x, bx: [lax.igamma(a, x), lax.igammac(a, x),
                                          lax.betainc(a, x, bx), lax.bessel_i0e(x - 4.0)],
                        a, x, bx)
    np.testing.assert_allclose(p, scipy_special.gammainc(a, x), rtol=1e-12)
    np.testing.assert_allclose(q, scipy_special.gammaincc(a, x), rtol=1e-12)
    np.testing.assert_allclose(bi, scipy_special.betainc(a, x, bx), rtol=1e-12)
    np.testing.assert_allclose(i0e, scipy_special.i0e(x - 4.0), rtol=1e-14)


# -- against jax ---------------------------------------------------------------------------

jax = pytest.importorskip("jax")
jlax = jax.lax
jsp = jax.scipy.special


def _gamma_family(a, x):
    return [lax.igamma(a, x), lax.igammac(a, x), lax.igamma_grad_a(a, x),
            lax.random_gamma_grad(a, x)]


def _jax_gamma_family(a, x):
    return [jsp.gammainc(a, x), jsp.gammaincc(a, x), jlax.igamma_grad_a(a, x),
            jlax.random_gamma_grad(a, x)]


NAMES = ("igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc", "bessel_i0e")


def test_float32_front_end_matches_jax():
    """Every function on its grid in one program, through the front end."""
    a, x = grid(np.float32, A, X)
    ba, bb, bx = grid(np.float32, AB, AB, BX)
    z = i0x(np.float32, ba.size)

    def ours(a, x, ba, bb, bx, z):
        return [*_gamma_family(a, x), lax.betainc(ba, bb, bx), lax.bessel_i0e(z)]

    def theirs(a, x, ba, bb, bx, z):
        return [*_jax_gamma_family(a, x), jsp.betainc(ba, bb, bx), jsp.i0e(z)]
    args = (a, x, ba, bb, bx, z)
    got = run(ours, *args)
    want = jax.jit(theirs)(*args)
    for name, g, w in zip(NAMES, got, want):
        assert_same(g, w, name)


def test_float64_jax_jaxprs_match_jax():
    """jax's own jaxprs (jax's primitives and avals), in float64, lowered by our rules."""
    a, x = grid(np.float64, A, X)
    ba, bb, bx = grid(np.float64, AB, AB, BX)
    z = i0x(np.float64, ba.size)

    def fn(a, x, ba, bb, bx, z):
        return [*_jax_gamma_family(a, x), jlax.betainc(ba, bb, bx), jlax.bessel_i0e(z)]
    args = (a, x, ba, bb, bx, z)
    with jax.enable_x64(True):
        closed = jax.make_jaxpr(fn)(*args)
        want = jax.jit(fn)(*args)
    import verify
    got = verify.run(lower_jaxpr_to_module("special64", closed).module, *args)
    for name, g, w in zip(NAMES, got, want):
        assert_same(g, w, name)


def test_float16_is_computed_in_float32():
    a = np.array([0.5, 1.0, 2.0, 3.5, 10.0, 0.0], np.float16)
    x = np.array([0.2, 1.0, 3.0, 2.0, 8.0, 1.0], np.float16)

    def fn(m):
        return lambda a, x: [m.igamma(a, x), m.igammac(a, x), m.betainc(a, x, x / 10),
                             m.bessel_i0e(x)]
    got = run(fn(lax), a, x)
    want = jax.jit(fn(jlax))(a, x)
    for name, g, w in zip(("igamma", "igammac", "betainc", "bessel_i0e"), got, want):
        assert_same(g, w, name)


def test_random_gamma_matches_jax_bits():
    """jax.random.gamma / loggamma on the same key: the same numbers, bit for bit; with a key
    per row (what vmap binds), each key split over its row; float16 sampled in float16."""
    seed = jax.random.key(42)
    key = np.asarray(jax.random.key_data(seed))
    alpha = np.array([[1e-3, 0.1, 0.5, 1.0, 1.5], [2.5, 10.0, 100.0, 1e4, 0.0]], np.float32)
    alpha16 = alpha.astype(np.float16)
    keys = jax.random.split(seed, 2)
    key_rows = np.asarray(jax.random.key_data(keys))

    def ours(k, ks, a, a16):
        return [lax.random_gamma(k, a), lax.random_gamma(k, a, log_space=True),
                lax.random_gamma(ks, a), lax.random_gamma(k, a16)]

    def theirs(k, ks, a, a16):
        return [jax.random.gamma(k, a), jax.random.loggamma(k, a),
                jax.vmap(lambda k, a: jax.random.gamma(k, a))(ks, a),
                jax.random.gamma(k, a16, dtype=np.float16)]
    got = run(ours, key, key_rows, alpha, alpha16)
    want = jax.jit(theirs)(seed, keys, alpha, alpha16)
    for name, g, w in zip(("gamma", "loggamma", "gamma per row", "gamma float16"), got, want):
        assert_same(g, w, name)


@pytest.mark.parametrize("partitionable", [True, False])
def test_jax_random_gamma_jaxpr_with_typed_keys(partitionable):
    """jax.random.gamma binds random_gamma on a typed key (``key<fry>[]``) whatever key the
    user passed: its jaxpr lowers (it failed on the key's dtype) and draws jax's numbers,
    under both threefry counter layouts (the sampler splits and draws through the random
    primitives, which follow the lowering's layout as jax's follow its flag)."""
    from lower.rules.random import threefry_partitionable
    key = np.asarray(jax.random.key_data(jax.random.key(7)))
    alpha = np.array([0.3, 1.0, 4.0], np.float32)

    def fn(k, a):
        typed = jax.random.wrap_key_data(k)
        return [jax.random.gamma(typed, a), jax.random.loggamma(typed, a[:2], dtype=np.float16)]
    with jax.threefry_partitionable(partitionable):
        closed = jax.make_jaxpr(fn)(key, alpha)
        want = jax.jit(fn)(key, alpha)
    assert "key<fry>" in str(closed)
    with threefry_partitionable(partitionable):
        m = lower_jaxpr_to_module("gamma", closed).module
    got = verify.run(m, key, alpha)
    for name, g, w in zip(("gamma", "loggamma float16"), got, want):
        assert_same(g, w, name)
