"""Linear-algebra decompositions on CPU (lower/rules/decompositions.py): LAPACK custom calls.

Oracles: the mathematics (Q unitary and Q @ R == A, A V == V diag(w), U S Vh == A,
P A == L U...), numpy/scipy where they compute the same thing, jax.jit (which calls the same
LAPACK kernels, so results agree to rounding and signs are the same), and JAX's own lowering
for the custom calls' attributes. Matrices are small (at most 4x4, batches of 2) and each
program checks several cases at once, to keep compile time low.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from tests.oracle import assert_fixed_point, parse
from tests.lower.random_matrices import H, rand

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlinalg = jax.lax.linalg

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# Residuals relative to the size of the matrix: the brief's 1e-5 for single precision
# and 1e-12 for double.
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12,
       np.dtype(np.complex64): 1e-5, np.dtype(np.complex128): 1e-12}


@pytest.fixture(autouse=True)
def _x64():
    """jax.jit on float64 and complex128 inputs (scoped: other tests keep JAX's defaults)."""
    with jax.enable_x64(True):
        yield


def lower_run(f, *args):
    """Trace with the front end, lower, check the text against MLIR's print, run."""
    closed = lax.make_jaxpr(f)(*args)
    m = lower_jaxpr_to_module("jit_f", closed).module
    assert_fixed_point(m)
    return verify.run(m, *args)


def close(got, want, dtype, what, scale=1.0):
    """``max |got - want| <= tol * max(1, scale)``."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    err = float(np.max(np.abs(got - want), initial=0.0))
    tol = TOL[np.dtype(dtype)] * max(1.0, scale)
    assert err <= tol, f"{what}: error {err:.3g} > {tol:.3g}"
    return err


def unitary_columns(q, dtype, what):
    k = q.shape[-1]
    close(H(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype, what, k)


def same_as_jax(got, want, dtype, what):
    """Same LAPACK kernel on the same data: equal to rounding (orders of magnitude below the
    residual tolerances, which are the bound asserted)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    close(got, want, dtype, f"{what} vs jax.jit", float(np.max(np.abs(want), initial=1.0)))


# -- QR ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_qr(dtype):
    mats = [rand((2, 4, 3), dtype, 1), rand((2, 3, 4), dtype, 2), rand((3, 3), dtype, 3)]

    def f(*xs):
        outs = []
        for x in xs:
            for full in (True, False):
                outs += lax.qr(x, full_matrices=full)
        return outs

    outs = lower_run(f, *mats)
    for i, a in enumerate(mats):
        m, n = a.shape[-2:]
        for j, full in enumerate((True, False)):
            q, r = outs[4 * i + 2 * j: 4 * i + 2 * j + 2]
            what = f"qr {a.shape} full={full}"
            k = m if full else min(m, n)
            assert q.shape == a.shape[:-2] + (m, k) and r.shape == a.shape[:-2] + (k, n)
            unitary_columns(q, dtype, what + " Q^H Q")
            close(q @ r, a, dtype, what + " Q R", np.abs(a).max() * n)
            assert not np.tril(r, -1).any(), what + ": R is not upper triangular"
            wq, wr = jax.jit(functools.partial(jlinalg.qr, full_matrices=full))(a)
            same_as_jax(q, wq, dtype, what + " Q")
            same_as_jax(r, wr, dtype, what + " R")


@pytest.mark.parametrize("dtype", [np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_qr_pivoting_geqp3(dtype):
    a = rand((2, 4, 3), dtype, 4)
    q, r, p = lower_run(lambda x: lax.qr(x, pivoting=True, full_matrices=False), a)
    assert p.dtype == np.int32 and sorted(p[0]) == [0, 1, 2]
    ap = np.take_along_axis(a, p[:, None, :], axis=-1)
    close(q @ r, ap, dtype, "A[:, p] == Q R", np.abs(a).max() * 3)
    # geqp3 picks the column of largest norm first: |R| has a non-increasing diagonal.
    d = np.abs(np.diagonal(r, axis1=-2, axis2=-1))
    assert (np.diff(d, axis=-1) <= TOL[np.dtype(dtype)] * 10).all()
    wq, wr, wp = jax.jit(lambda x: jlinalg.qr(x, pivoting=True, full_matrices=False))(a)
    np.testing.assert_array_equal(p, wp)
    same_as_jax(q, wq, dtype, "Q")
    same_as_jax(r, wr, dtype, "R")


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
def test_geqrf_householder_product_ormqr(dtype):
    a = rand((4, 3), dtype, 5)
    c_left, c_right = rand((4, 2), dtype, 6), rand((2, 4), dtype, 7)

    def f(a, cl, cr):
        h, taus = lax.geqrf(a)
        q_full, _ = lax.qr(a, full_matrices=True)
        q_thin = lax.householder_product(h, taus)
        prods = [lax.ormqr(h, taus, cl, left=True, transpose=t) for t in (False, True)]
        prods += [lax.ormqr(h, taus, cr, left=False, transpose=t) for t in (False, True)]
        return [h, taus, q_full, q_thin, *prods]

    h, taus, q, q_thin, ql, qhl, cq, cqh = lower_run(f, a, c_left, c_right)
    assert taus.shape == (3,)
    close(q_thin, q[:, :3], dtype, "householder_product == thin Q")
    close(ql, q @ c_left, dtype, "ormqr Q @ C", 4 * np.abs(c_left).max())
    close(qhl, H(q) @ c_left, dtype, "ormqr Q^H @ C", 4 * np.abs(c_left).max())
    close(cq, c_right @ q, dtype, "ormqr C @ Q", 4 * np.abs(c_right).max())
    close(cqh, c_right @ H(q), dtype, "ormqr C @ Q^H", 4 * np.abs(c_right).max())
    from jax._src.lax.linalg import geqrf  # not public in jax.lax.linalg
    wh, wt = jax.jit(geqrf)(a)
    same_as_jax(h, wh, dtype, "geqrf a")
    same_as_jax(taus, wt, dtype, "geqrf taus")



@pytest.mark.parametrize("shape,dtype", [((0, 3), np.float32), ((2, 3, 0), np.complex64)],
                         ids=["0x3", "2x3x0"])
def test_empty_matrices_qr_svd(shape, dtype):
    """No LAPACK call: identities and zeros of the right shapes, as JAX makes them."""
    a = np.zeros(shape, dtype)
    fns = [(lax.qr, jlinalg.qr),
           (lambda x: lax.qr(x, full_matrices=False),
            lambda x: jlinalg.qr(x, full_matrices=False)),
           (lambda x: lax.qr(x, pivoting=True), lambda x: jlinalg.qr(x, pivoting=True)),
           (lax.svd, jlinalg.svd),
           (lambda x: lax.svd(x, full_matrices=False),
            lambda x: jlinalg.svd(x, full_matrices=False)),
           (lambda x: lax.svd(x, compute_uv=False), lambda x: jlinalg.svd(x, compute_uv=False))]
    got = lower_run(lambda x: [o for f, _ in fns for o in jax.tree_util.tree_leaves(f(x))], a)
    want = jax.tree_util.tree_leaves(jax.jit(lambda x: [g(x) for _, g in fns])(a))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, np.asarray(w))

# -- eigh, svd -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eigh(dtype):
    a, b = rand((2, 4, 4), dtype, 8), rand((3, 3), dtype, 9)

    def f(a, b):
        return [*lax.eigh(a), *lax.eigh(b, lower=False)]

    outs = lower_run(f, a, b)
    real = np.empty((), dtype).real.dtype
    for x, (v, w), lower in ((a, outs[:2], True), (b, outs[2:], False)):
        what = f"eigh {x.shape} lower={lower}"
        s = (x + H(x)) / 2
        n = x.shape[-1]
        assert w.dtype == real and v.dtype == np.dtype(dtype)
        scale = np.abs(s).max() * n
        close(s @ v, v * w[..., None, :], dtype, what + " A V == V w", scale)
        unitary_columns(v, dtype, what + " V^H V")
        assert (np.diff(w, axis=-1) >= 0).all(), what + ": eigenvalues not ascending"
        close(w, np.linalg.eigvalsh(s), dtype, what + " vs numpy", scale)
        wv, ww = jax.jit(functools.partial(jlinalg.eigh, lower=lower))(x)
        same_as_jax(w, ww, dtype, what + " w")
        same_as_jax(v, wv, dtype, what + " V")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_svd(dtype):
    tall, wide, sq = rand((2, 4, 3), dtype, 10), rand((3, 4), dtype, 11), rand((2, 3, 3), dtype, 12)

    def f(tall, wide, sq):
        return [*lax.svd(tall, full_matrices=True), *lax.svd(wide, full_matrices=False),
                lax.svd(tall, compute_uv=False), *lax.svd(sq, algorithm="QR")]

    outs = lower_run(f, tall, wide, sq)
    real = np.empty((), dtype).real.dtype
    for (u, s, vh), a, full, what in ((outs[0:3], tall, True, "full"),
                                      (outs[3:6], wide, False, "thin"),
                                      (outs[7:10], sq, True, "gesvd")):
        what = f"svd {a.shape} {what}"
        m, n = a.shape[-2:]
        k = min(m, n)
        assert s.dtype == real
        assert u.shape[-2:] == (m, m if full else k) and vh.shape[-2:] == (n if full else k, n)
        scale = np.abs(a).max() * n
        close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, what + " U S Vh", scale)
        unitary_columns(u, dtype, what + " U^H U")
        unitary_columns(H(vh), dtype, what + " V^H V")
        assert (np.diff(s, axis=-1) <= 0).all() and (s >= 0).all()
        close(s, np.linalg.svd(a, compute_uv=False), dtype, what + " vs numpy", scale)
    s_only = outs[6]
    close(s_only, outs[1], dtype, "compute_uv=False", np.abs(tall).max())
    wu, ws, wvh = jax.jit(functools.partial(jnp.linalg.svd, full_matrices=True))(tall)
    same_as_jax(outs[1], ws, dtype, "s")
    same_as_jax(outs[0], wu, dtype, "U")
    same_as_jax(outs[2], wvh, dtype, "Vh")
    qr_alg = jax.jit(lambda x: jlinalg.svd(x, algorithm=jlinalg.SvdAlgorithm.QR))(sq)
    for got, want, name in zip(outs[7:10], qr_alg, ("U", "s", "Vh")):
        same_as_jax(got, want, dtype, "gesvd " + name)


# -- LU ------------------------------------------------------------------------------------

def permutation_from_pivots(pivots, m):
    perm = np.broadcast_to(np.arange(m, dtype=np.int32), pivots.shape[:-1] + (m,)).copy()
    for idx in np.ndindex(pivots.shape[:-1]):
        p = perm[idx]
        for i, j in enumerate(pivots[idx]):
            p[i], p[j] = p[j], p[i]
    return perm


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_lu(dtype):
    singular = np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], dtype)
    mats = [rand((2, 4, 4), dtype, 13), rand((4, 3), dtype, 14), rand((2, 3, 4), dtype, 15),
            singular]
    outs = lower_run(lambda *xs: [o for x in xs for o in lax.lu(x)], *mats)
    for i, a in enumerate(mats):
        lu, piv, perm = outs[3 * i: 3 * i + 3]
        m, n = a.shape[-2:]
        k = min(m, n)
        what = f"lu {a.shape}"
        assert piv.dtype == perm.dtype == np.int32
        assert piv.shape == a.shape[:-2] + (k,) and perm.shape == a.shape[:-2] + (m,)
        l_ = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=dtype)
        u_ = np.triu(lu[..., :k, :])
        pa = np.take_along_axis(a, perm[..., :, None], axis=-2)
        close(l_ @ u_, pa, dtype, what + " P A == L U", np.abs(a).max() * k)
        np.testing.assert_array_equal(perm, permutation_from_pivots(piv, m))
        # Partial pivoting: |L| <= 1 (complex: LAPACK picks pivots by |re| + |im|, so <= sqrt 2)
        bound = np.sqrt(2) if np.dtype(dtype).kind == "c" else 1
        assert (np.abs(l_) <= bound * (1 + TOL[np.dtype(dtype)])).all(), what
        w_lu, w_piv, w_perm = jax.jit(jlinalg.lu)(a)
        np.testing.assert_array_equal(piv, w_piv)
        np.testing.assert_array_equal(perm, w_perm)
        same_as_jax(lu, w_lu, dtype, what)
    # A singular matrix factorises (LAPACK's info > 0), with a zero on U's diagonal: no NaNs.
    assert np.isfinite(outs[9]).all() and np.abs(np.diagonal(outs[9])).min() < 1e-5


def test_lu_pivots_to_permutation():
    rng = np.random.default_rng(16)
    size = 5
    batched = np.stack([[rng.integers(i, size) for i in range(3)] for _ in range(2)])
    batched = batched.astype(np.int32)
    single = np.array([2, 2, 3, 3], np.int32)

    def f(p, q):
        return [lax.lu_pivots_to_permutation(p, size), lax.lu_pivots_to_permutation(q, 4),
                lax.lu_pivots_to_permutation(q, 6)]

    got = lower_run(f, batched, single)
    want = [permutation_from_pivots(batched, size), permutation_from_pivots(single, 4),
            permutation_from_pivots(single, 6)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    jf = jax.jit(jlinalg.lu_pivots_to_permutation, static_argnums=1)
    np.testing.assert_array_equal(got[0], jf(batched, size))


def test_pivots_out_of_range_read_as_jax_indexes():
    """Pivots LAPACK never gives, read as jax's indexing reads them (a negative one from the
    end, reads clamped, writes out of range dropped): the permutations jax.jit gives (they
    were the identity's neighbours: an invalid pivot matched no position)."""
    pivots = np.array([[-1, 1, 2], [5, 1, 2], [3, -4, 2], [1, 0, 100], [-10, 2, 1]], np.int32)
    got = lower_run(lambda p: [lax.lu_pivots_to_permutation(p, 4)], pivots)[0]
    jf = jax.jit(jlinalg.lu_pivots_to_permutation, static_argnums=1)
    np.testing.assert_array_equal(got, jf(pivots, 4))
    assert got.tolist()[:4] == [[3, 1, 2, 0], [3, 1, 2, 3], [1, 3, 2, 0], [0, 1, 3, 3]]


# -- eig, schur, hessenberg, tridiagonal -----------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.complex128], ids=lambda d: np.dtype(d).name)
def test_eig_schur_hessenberg_tridiagonal(dtype):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = rand((2, 4, 4), dtype, 17)
    sym = (a + H(a)) / 2

    def f(a, sym):
        return [*lax.eig(a), *lax.eig(a, compute_left_eigenvectors=False),
                *lax.schur(a), *lax.hessenberg(a), *lax.tridiagonal(sym)]

    (w, vl, vr, w2, vr2, t, z, hess, taus, tri, d, e, ttaus) = lower_run(f, a, sym)
    ct = np.result_type(dtype, np.complex64)
    scale = np.abs(a).max() * 4
    assert w.dtype == vl.dtype == vr.dtype == ct
    close(a @ vr, vr * w[..., None, :], dtype, "eig A vr == vr w", scale * 2)
    close(H(vl) @ a, w[..., :, None] * H(vl), dtype, "eig vl^H A == w vl^H", scale * 2)
    np.testing.assert_array_equal(w2, w)
    np.testing.assert_array_equal(vr2, vr)
    ww, wvl, wvr = jax.jit(jlinalg.eig)(a)
    same_as_jax(w, ww, dtype, "eig w")
    same_as_jax(vr, wvr, dtype, "eig vr")
    same_as_jax(vl, wvl, dtype, "eig vl")
    # Schur: A == Z T Z^H, Z unitary, T upper (quasi-, for real: 2x2 blocks) triangular.
    close(z @ t @ H(z), a, dtype, "schur Z T Z^H", scale)
    unitary_columns(z, dtype, "schur Z")
    assert not np.tril(t, -1 if np.dtype(dtype).kind == "c" else -2).any()
    wt, wz = jax.jit(jlinalg.schur)(a)
    same_as_jax(t, wt, dtype, "schur T")
    same_as_jax(z, wz, dtype, "schur Z")
    # Hessenberg: the upper Hessenberg part is scipy's (same LAPACK gehrd).
    for i in range(2):
        close(np.triu(hess[i], -1), scipy_linalg.hessenberg(a[i]), dtype, "hessenberg", scale)
    wh, wtaus = jax.jit(jlinalg.hessenberg)(a)
    same_as_jax(hess, wh, dtype, "hessenberg a")
    same_as_jax(taus, wtaus, dtype, "hessenberg taus")
    # Tridiagonal: same eigenvalues as the Hermitian input.
    real = np.empty((), dtype).real.dtype
    assert d.dtype == e.dtype == real and d.shape == (2, 4) and e.shape == (2, 3)
    tmat = np.zeros((2, 4, 4), real)
    for i in range(2):
        tmat[i] = np.diag(d[i]) + np.diag(e[i], -1) + np.diag(e[i], 1)
    close(np.linalg.eigvalsh(tmat), np.linalg.eigvalsh(sym), dtype, "tridiagonal spectrum",
          scale)
    for got, want, name in zip((tri, d, e, ttaus), jax.jit(jlinalg.tridiagonal)(sym),
                               ("a", "d", "e", "taus")):
        same_as_jax(got, want, dtype, "tridiagonal " + name)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
def test_tridiagonal_solve(dtype):
    dl, d, du = rand((2, 4), dtype, 18), rand((2, 4), dtype, 19) + 4, rand((2, 4), dtype, 20)
    dl[:, 0] = 0
    du[:, -1] = 0
    rhs = rand((2, 4, 2), dtype, 21)

    def f(dl, d, du, rhs):
        return [lax.tridiagonal_solve(dl, d, du, rhs),
                lax.tridiagonal_solve(dl, d, du, rhs, perturb_singular=True)]

    x, xp = lower_run(f, dl, d, du, rhs)
    mat = np.zeros((2, 4, 4), dtype)
    for i in range(2):
        mat[i] = np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1)
    close(mat @ x, rhs, dtype, "tridiagonal_solve", 8 * np.abs(rhs).max())
    close(xp, x, dtype, "perturb_singular on a regular system", 8 * np.abs(x).max())
    want = jax.jit(jlinalg.tridiagonal_solve)(dl, d, du, rhs)
    same_as_jax(x, want, dtype, "tridiagonal_solve")


# -- JAX's own jaxprs, failures, attributes --------------------------------------------------

A4 = rand((2, 4, 4), np.float32, 22)
SPD = (A4 @ H(A4) + 4 * np.eye(4, dtype=np.float32)).astype(np.float32)

JAX_CASES = {
    "qr": (jnp.linalg.qr, A4),
    "qr_complete": (lambda x: jnp.linalg.qr(x, mode="complete"), A4[:, :, :3]),
    "eigh": (jnp.linalg.eigh, SPD),
    "svd": (jnp.linalg.svd, A4[:, :3, :]),
    "lu": (jlinalg.lu, A4),
    "det": (jnp.linalg.det, A4),
    "slogdet": (jnp.linalg.slogdet, A4.astype(np.float64)),
    "pinv": (jnp.linalg.pinv, A4[:, :, :3]),
    "eig": (jnp.linalg.eig, A4[0]),
    "schur": (jax.scipy.linalg.schur, A4[0]),
    "qr_pivoting": (lambda x: jax.scipy.linalg.qr(x, pivoting=True), A4[0]),
    "eigh_tridiagonal": (lambda x: jlinalg.tridiagonal(x), SPD[0]),
}


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_jax_jaxprs_match_jax_jit(name):
    """JAX's own jaxprs (JAX's enum params, jit wrappers) lowered here, against jax.jit."""
    fn, x = JAX_CASES[name]
    closed = jax.make_jaxpr(fn)(x)
    m = lower_jaxpr_to_module(name, closed).module
    got = verify.run(m, x)
    want = jax.tree_util.tree_leaves(jax.jit(fn)(x))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same_as_jax(g, w, x.dtype, name)


def test_failed_factorisations_give_nan_like_jax():
    """LAPACK's info != 0 makes that batch member's results NaN; the other member is intact."""
    x = np.stack([np.eye(3, dtype=np.float32), np.full((3, 3), np.nan, np.float32)])
    fns = [jnp.linalg.eigh, jnp.linalg.svd, jlinalg.lu, jlinalg.tridiagonal]
    for fn in fns:
        got = verify.run(lower_jaxpr_to_module("f", jax.make_jaxpr(fn)(x)).module, x)
        want = jax.tree_util.tree_leaves(jax.jit(fn)(x))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, np.asarray(w), err_msg=fn.__name__)
        assert np.isfinite(got[0][0]).all()


def _attr(attrs, key):
    return str(attrs[key]) if key in attrs else None


def _custom_calls(module, config_key):
    """(target, backend_config, operand/result layouts, aliases, frontend attributes) of every
    custom call, in order, from an MLIR module (ours parsed, or JAX's)."""
    found = []

    def walk(op):
        for region in op.regions:
            for block in region.blocks:
                for o in block.operations:
                    o = o.operation
                    if o.name.endswith(".custom_call"):
                        a = o.attributes
                        found.append((_attr(a, "call_target_name"), _attr(a, config_key),
                                      _attr(a, "operand_layouts"), _attr(a, "result_layouts"),
                                      (_attr(a, "output_operand_aliases") or "").replace(
                                          "#stablehlo.", "#mhlo."),
                                      _attr(a, "mhlo.frontend_attributes")))
                    walk(o)
    walk(module.operation)
    return found


LOWERING_CASES = {
    "qr": (lambda x: jlinalg.qr(x, full_matrices=False), rand((2, 4, 3), np.float32)),
    "qr_wide": (jlinalg.qr, rand((3, 4), np.complex64)),
    "eigh": (jlinalg.eigh, rand((2, 3, 3), np.complex128)),
    "eigh_upper": (lambda x: jlinalg.eigh(x, lower=False), rand((3, 3), np.float64)),
    "svd": (jnp.linalg.svd, rand((2, 3, 4), np.float32)),
    "svd_thin": (lambda x: jnp.linalg.svd(x, full_matrices=False), rand((4, 3), np.complex64)),
    "svd_values": (lambda x: jnp.linalg.svd(x, compute_uv=False), rand((3, 3), np.float64)),
    "svd_qr": (lambda x: jlinalg.svd(x, algorithm=jlinalg.SvdAlgorithm.QR),
               rand((3, 3), np.float32)),
    "lu": (jlinalg.lu, rand((2, 3, 4), np.float32)),
    "eig": (jlinalg.eig, rand((3, 3), np.float64)),
    "eig_right": (lambda x: jlinalg.eig(x, compute_left_eigenvectors=False),
                  rand((2, 3, 3), np.complex64)),
    "schur": (jlinalg.schur, rand((3, 3), np.float32)),
    "hessenberg": (jlinalg.hessenberg, rand((2, 3, 3), np.complex128)),
    "tridiagonal": (lambda x: jlinalg.tridiagonal(x, lower=False), rand((3, 3), np.float32)),
    "qr_pivoting": (lambda x: jlinalg.qr(x, pivoting=True), rand((3, 3), np.float64)),
}


@pytest.mark.parametrize("name", sorted(LOWERING_CASES))
def test_custom_calls_are_jaxs(name):
    """Target, backend_config, layouts, aliases and frontend attributes of every LAPACK call
    equal JAX's own lowering's (JAX's sdy.sharding_rule is the one attribute left out)."""
    fn, x = LOWERING_CASES[name]
    ours = lower_jaxpr_to_module(name, jax.make_jaxpr(fn)(x)).module
    mine = _custom_calls(parse(ours.to_text(locations=False)), "backend_config")
    theirs = _custom_calls(jax.jit(fn).lower(x).compiler_ir("stablehlo"), "mhlo.backend_config")
    assert mine and mine == theirs


def test_tridiagonal_solve_custom_calls_are_jaxs():
    d = rand((2, 4), np.float32)
    rhs = rand((2, 4, 3), np.float32)
    for perturb in (False, True):
        fn = functools.partial(jlinalg.tridiagonal_solve, perturb_singular=perturb)
        ours = lower_jaxpr_to_module("t", jax.make_jaxpr(fn)(d, d, d, rhs)).module
        mine = _custom_calls(parse(ours.to_text(locations=False)), "backend_config")
        theirs = _custom_calls(jax.jit(fn).lower(d, d, d, rhs).compiler_ir("stablehlo"),
                               "mhlo.backend_config")
        assert mine and mine == theirs


def test_unsupported_options_are_refused():
    x = rand((3, 3), np.float32)
    for f, match in ((lambda a: lax.eigh(a, subset_by_index=(0, 2)), "subset_by_index"),
                     (lambda a: lax.eigh(a, algorithm="QDWH"), "QDWH"),
                     (lambda a: lax.svd(a, algorithm="JACOBI"), "JACOBI"),
                     (lambda a: lax.schur(a, sort_eig_vals=True), "sort")):
        with pytest.raises(NotImplementedError, match=match):
            lower_jaxpr_to_module("f", lax.make_jaxpr(f)(x))
    with pytest.raises(NotImplementedError, match="float16"):
        lower_jaxpr_to_module("f", lax.make_jaxpr(lax.qr)(x.astype(np.float16)))
    # (GPU has cuSOLVER rules, tests/lower/test_decompositions_gpu.py, but none for schur,
    # as jax has none)
    with pytest.raises(NotImplementedError, match="'schur' on platform 'cuda'"):
        lower_jaxpr_to_module("f", lax.make_jaxpr(lax.schur)(x), platform="cuda")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cholesky_of_a_half_type_is_xlas_op(dtype):
    """jax's CPU rule takes LAPACK's types only (jax.jit refuses float16 and bfloat16); here
    XLA's own cholesky runs in that type (README): the factor of a well-conditioned matrix,
    to the type's precision."""
    import lower.jax as lj
    dt = jnp.dtype(dtype)
    a = (2 * np.eye(3) + 0.1).astype(dt)
    got = np.asarray(lj.jit(jlinalg.cholesky)(a)).astype(np.float64)
    want = np.linalg.cholesky(a.astype(np.float64))
    np.testing.assert_allclose(np.tril(got), want, rtol=2e-2, atol=2e-2)
    try:
        jax.jit(jlinalg.cholesky)(a)
    except NotImplementedError:
        pass  # (what the README says; if jax takes it one day, the README's line goes)
