"""The decompositions ``lower`` lowers for TPU (lower/rules/decompositions_tpu.py, polar.py)
run on an attached TPU: residuals against the mathematics and numpy (float64), and eigen and
singular values and LU pivots against jax.jit on the same chip (jax's own lowering).

Skipped where no TPU is attached (CI). Run on a TPU VM in one process (one process holds the
chip): ``python -m pytest -q tests/lower/test_decompositions_tpu_device.py``. Tolerances
(float32/complex64 inputs, entries ~N(0,1)): residuals |A - reconstruction|, |Q^H Q - I| and
|values - numpy| below TOL * n * max(1, max|A|) with TOL = 2e-5 (HIGHEST precision dots;
XLA's Jacobi eigensolver stops at 1e-6); values against jax.jit below 1e-5 relative.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj
import verify
from tests.lower.random_matrices import H, rand

jl = jax.lax.linalg
pytestmark = pytest.mark.tpu_device

PLATFORM = "tpu"
TOL = 2e-5


def herm(shape, dtype=np.float32, seed=0):
    a = rand(shape, dtype, seed)
    return (a + H(a)).astype(dtype)


def ours(f, *args):
    low = lj.lower(f, *args, platform="tpu")
    return [np.asarray(o) for o in verify.run(low.module, *args, platform=PLATFORM)]


def theirs(f, *args):
    dev = jax.devices(PLATFORM)[0]
    out = jax.jit(f)(*[jax.device_put(a, dev) for a in args])
    return [np.asarray(o) for o in jax.tree_util.tree_leaves(out)]


def bound(x, n):
    return TOL * n * max(1.0, float(np.abs(x).max()))


def err(a, b):
    return float(np.abs(np.asarray(a, np.complex128) - np.asarray(b, np.complex128)).max()) \
        if np.size(a) else 0.0


def unitary_err(u):
    k = u.shape[-1]
    return err(H(u) @ u, np.broadcast_to(np.eye(k), u.shape[:-2] + (k, k)))


class Fail(Exception):
    pass


def need(what, value, limit):
    if not value <= limit:
        raise Fail(f"{what} = {value:.3g} > {limit:.3g}")
    return f"{what} {value:.2g}"


# -- cases: each returns a short description of what it measured -----------------------------

def svd_case(shape, dtype=np.float32, full_matrices=True, rank=None):
    def run():
        x = rand(shape, dtype)
        if rank is not None:  # a rank-deficient matrix (QDWH's u re-orthonormalized)
            x = (rand(shape[:-1] + (rank,), dtype) @ rand((rank, shape[-1]), dtype, 1))
        m, n = shape[-2:]
        k = min(m, n)
        def f(a):
            return jnp.linalg.svd(a, full_matrices=full_matrices)
        u, s, vh = ours(f, x)
        lim = bound(x, max(m, n))
        rec = np.einsum("...ik,...k,...kj->...ij", u[..., :k], s, vh[..., :k, :])
        out = [need("|U S Vh - A|", err(rec, x), lim), need("|U^H U - I|", unitary_err(u), lim),
               need("|V^H V - I|", unitary_err(H(vh)), lim),
               need("|s - numpy|", err(s, np.linalg.svd(x.astype(np.complex128
                                                                   if dtype == np.complex64
                                                                   else np.float64),
                                                          compute_uv=False)), lim)]
        s_jax = theirs(f, x)[1]
        out.append(need("|s - jax.jit|", err(s, s_jax), 1e-5 * max(1.0, float(s.max()))))
        if not np.all(np.diff(s, axis=-1) <= 0):
            raise Fail("s not descending")
        return ", ".join(out)
    return run


def svd_values_case(shape):
    def run():
        x = rand(shape)
        (s,) = ours(lambda a: jnp.linalg.svd(a, compute_uv=False), x)
        return need("|s - numpy|", err(s, np.linalg.svd(x.astype(np.float64),
                                                         compute_uv=False)),
                    bound(x, max(shape[-2:])))
    return run


def eigh_case(shape, dtype=np.float32, lower=True, subset=None):
    def run():
        a = herm(shape, dtype)
        n = shape[-1]

        def f(x):
            return jl.eigh(x, lower=lower, subset_by_index=subset)
        v, w = ours(f, a)
        want = np.linalg.eigvalsh(a.astype(np.complex128 if dtype == np.complex64
                                           else np.float64))
        if subset is not None:
            want = want[..., subset[0]:subset[1]]
        lim = bound(a, n)
        out = [need("|w - numpy|", err(w, want), lim),
               need("|A V - V w|", err(a @ v, v * w[..., None, :]), lim),
               need("|V^H V - I|", unitary_err(v), lim)]
        w_jax = theirs(f, a)[1]
        out.append(need("|w - jax.jit|", err(w, w_jax), 1e-5 * max(1.0, float(np.abs(w).max()))))
        return ", ".join(out)
    return run


def qr_case(shape, dtype=np.float32):
    def run():
        x = rand(shape, dtype)
        q, r = ours(lambda a: jnp.linalg.qr(a), x)
        lim = bound(x, max(shape[-2:]))
        if err(np.tril(r, -1), 0) != 0:
            raise Fail("R is not upper triangular")
        return ", ".join([need("|Q R - A|", err(q @ r, x), lim),
                          need("|Q^H Q - I|", unitary_err(q), lim)])
    return run


def lu_case(shape, dtype=np.float32):
    def run():
        x = rand(shape, dtype)
        lu, piv, perm = ours(jl.lu, x)
        m, n = shape[-2:]
        k = min(m, n)
        low = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
        up = np.triu(lu[..., :k, :])
        pa = np.take_along_axis(x, perm[..., :, None].astype(np.int64), axis=-2)
        lim = bound(x, max(m, n))
        out = [need("|P A - L U|", err(pa, low @ up), lim)]
        _, piv_jax, perm_jax = theirs(jl.lu, x)
        if not (np.array_equal(piv, piv_jax) and np.array_equal(perm, perm_jax)):
            raise Fail("pivots/permutation differ from jax.jit's")
        if sorted(perm.reshape(-1, m)[0]) != list(range(m)):
            raise Fail("permutation is not a permutation")
        return ", ".join(out + ["pivots == jax.jit's"])
    return run


def ormqr_case(dtype=np.float32):
    def run():
        a = rand((6, 4), dtype)
        c_left, c_right = rand((6, 3), dtype, 1), rand((3, 6), dtype, 2)
        eye = np.eye(6, dtype=dtype)

        def f(a, cl, cr, eye):
            h, taus = jnp.linalg.qr(a, mode="raw")  # geqrf: reflectors transposed
            h = h.mT
            return (jl.ormqr(h, taus, eye), jl.ormqr(h, taus, cl),
                    jl.ormqr(h, taus, cl, transpose=True),
                    jl.ormqr(h, taus, cr, left=False),
                    jl.ormqr(h, taus, cr, left=False, transpose=True))
        q, ql, qhl, cq, cqh = ours(f, a, c_left, c_right, eye)
        lim = bound(a, 6)
        return ", ".join([
            need("|Q^H Q - I|", unitary_err(q), lim),
            need("|Q^H A - R|", err(np.tril(H(q) @ a, -1), 0), lim),
            need("products", max(err(ql, q @ c_left), err(qhl, H(q) @ c_left),
                                 err(cq, c_right @ q), err(cqh, c_right @ H(q))), lim)])
    return run


def tridiagonal_case(batch, m, k):
    def run():
        dl, d, du = rand((3, *batch, m))
        d = (d + 4 * np.sign(d)).astype(np.float32)
        b = rand((*batch, m, k), seed=1)
        (x,) = ours(jl.tridiagonal_solve, dl, d, du, b)
        a = np.zeros((*batch, m, m), np.float64)
        i = np.arange(m)
        a[..., i, i] = d
        a[..., i[1:], i[:-1]] = dl[..., 1:]
        a[..., i[:-1], i[1:]] = du[..., :-1]
        return need("|A x - b|", err(a @ x, b), bound(b, m))
    return run


CASES = {
    "svd 8x8": svd_case((8, 8)),
    "svd 20x6 thin": svd_case((20, 6), full_matrices=False),
    "svd 20x6 full": svd_case((20, 6)),
    "svd 5x9 full": svd_case((5, 9)),
    "svd batch 2x6x4": svd_case((2, 6, 4), full_matrices=False),
    "svd 5x4 complex64": svd_case((5, 4), np.complex64),
    "svd 8x5 rank 2": svd_case((8, 5), full_matrices=False, rank=2),
    "svd 64x48": svd_case((64, 48), full_matrices=False),
    "svd values only 7x7": svd_values_case((7, 7)),
    "eigh 8x8": eigh_case((8, 8)),
    "eigh 3x16x16 upper": eigh_case((3, 16, 16), lower=False),
    "eigh 6x6 complex64": eigh_case((6, 6), np.complex64),
    "eigh 10x10 subset (2,7)": eigh_case((10, 10), subset=(2, 7)),
    "eigh 256x256": eigh_case((256, 256)),
    "qr 8x5": qr_case((8, 5)),
    "qr 5x8 complex64": qr_case((5, 8), np.complex64),
    "qr batch 2x4x4": qr_case((2, 4, 4)),
    "lu 8x8": lu_case((8, 8)),
    "lu 6x4": lu_case((6, 4)),
    "lu 4x6": lu_case((4, 6)),
    "lu batch 2x5x5": lu_case((2, 5, 5)),
    "lu 5x5 complex64": lu_case((5, 5), np.complex64),
    "ormqr float32": ormqr_case(),
    "ormqr complex64": ormqr_case(np.complex64),
    "tridiagonal_solve 8x2": tridiagonal_case((), 8, 2),
    "tridiagonal_solve batch 2x3 of 5x1": tridiagonal_case((2, 3), 5, 1),
}


def run_case(cases: dict, name: str) -> None:
    """Run case ``name``: a Fail is the test's failure, with the case's name."""
    try:
        cases[name]()
    except Fail as e:
        pytest.fail(f"{name}: {e}")


@pytest.mark.parametrize("name", list(CASES))
def test_decomposition_on_the_chip(name):
    run_case(CASES, name)
