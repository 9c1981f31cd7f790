"""``svd`` for TPU, as jax 0.10.2 lowers it (jax's rule for every platform without its own:
CPU and GPU have LAPACK's and cuSOLVER's): the polar decomposition ``a = u h`` by QDWH
(QR-based dynamically weighted Halley iteration; Nakatsukasa, Bai and Gygi 2010;
Nakatsukasa and Higham 2013), then the eigen-decomposition ``h = v diag(s) v^H``, so that
``a = (u v) diag(s) v^H``.

The iteration's coefficients depend only on the dtype's epsilon and are computed in Python
when the rule runs; the first iterations (while the coefficient ``c`` is large) orthogonalize
through a QR of ``[sqrt(c) u; I]``, the later ones through a Cholesky factor of
``c u^H u + I``, then Halley's own step until the iterate stops moving. Every matrix product
is at HIGHEST precision (jax runs this under ``default_matmul_precision('float32')``).

A batch is taken one matrix at a time (a ``scan`` over the batch; jax vmaps instead), since
the iteration count is per matrix. The decompositions it calls (``qr``, ``cholesky``,
``triangular_solve``, ``eigh``) lower by their own rules for the platform: on TPU ``eigh`` is
XLA's Jacobi solver up to 256 columns (``lower.rules.decompositions_tpu``) and a spectral
divide and conquer built on ``qdwh`` here beyond (``lower.rules.eigh_tpu``).
"""

from __future__ import annotations

import numpy as np

from .. import lax as L
from ..lax.linalg import _adjoint, _conj, _real_dtype
from ..mlir import lower_fun, register_lowering
from ..tracing import as_tracer, bind
from .decompositions import _empty_svd, _eye, _name

# QDWH uses QR iterations while c exceeds this, Cholesky ones after (jax's cutoff).
_CHOLESKY_CUTOFF = 100
_MAX_ITERATIONS = 10
# A matrix this much taller than wide is QR-factored first, and QDWH runs on its R
# (the ratio is from Nakatsukasa's MATLAB implementation, as in jax).
_TALL = 1.15


def _mm(x, y):
    return L.dot_general(x, y, (((1,), (0,)), ((), ())), precision="HIGHEST")


def _frobenius(x, axes=None):
    """The Frobenius norm of ``x`` (over ``axes``: all of them by default)."""
    sq = L.mul(x, _conj(x)) if x.dtype.kind == "c" else L.mul(x, x)
    return L.sqrt(L.reduce_sum(L.real(sq) if x.dtype.kind == "c" else sq, axes))


def _schedule(eps: float, max_iterations: int):
    """QDWH's weights ``(a, b, c)`` per iteration, while the lower bound ``l`` on the
    smallest singular value of the iterate is below 1: split into the QR iterations'
    parameters ``((a - e) / sqrt(c), sqrt(c), e)`` and the Cholesky ones' ``(a - e, c, e)``,
    with ``e = b / c``."""
    qr_params, chol_params = [], []
    lo, tol_l = eps, 5 * eps
    while lo + tol_l < 1 and len(qr_params) + len(chol_params) < max_iterations:
        l2 = lo * lo
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1 + dd) ** 0.5
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** 0.5
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        lo = lo * (a + b * l2) / (1 + c * l2)
        e = b / c
        if c > _CHOLESKY_CUTOFF:
            qr_params.append(((a - e) / c ** 0.5, c ** 0.5, e))
        else:
            chol_params.append((a - e, c, e))
    return qr_params, chol_params


def mask(x, dims, fill=0):
    """``x`` where every index is below its bound in ``dims`` (a traced or Python int; None
    for none), ``fill`` (a scalar or an array like ``x``) elsewhere: jax's ``_mask`` for
    matrices padded up to a static shape from a smaller true one."""
    keep = None
    for axis, d in enumerate(dims):
        if d is not None:
            inside = L.lt(L.iota(x, np.int32, x.shape, axis), d)
            keep = inside if keep is None else L.and_(keep, inside)
    return x if keep is None else L.where(keep, x, fill)


def _qr_step(u, params, dynamic=None):
    """``e u + ((a - e) / sqrt(c)) q1 q2^H`` where ``[q1; q2]`` is the thin Q of
    ``[sqrt(c) u; I]``. With ``dynamic = (m, n)`` (u is zero outside its top-left m x n) the
    identity goes in at row m and q1, q2 are cut to m x n and n x n."""
    scale, sqrt_c, e = params
    m, n = u.shape
    if dynamic is None:
        y = L.concatenate([L.mul(sqrt_c, u), _eye(u, u.dtype, (n, n))], 0)
        q, _ = L.qr(y, full_matrices=False)
        q1 = L.slice(q, (0, 0), (m, n))
        q2 = L.slice(q, (m, 0), (m + n, n))
    else:
        dm, dn = dynamic
        y = L.pad(L.mul(sqrt_c, u), 0, ((0, n, 0), (0, 0, 0)))
        y = L.dynamic_update_slice(y, _eye(u, u.dtype, (n, n)), (dm, 0),
                                   allow_negative_indices=False)
        q, _ = L.qr(y, full_matrices=False)
        q1 = mask(L.slice(q, (0, 0), (m, n)), (dm, dn))
        q2 = mask(L.dynamic_slice(q, (dm, 0), (n, n), allow_negative_indices=False), (dn, dn))
    return L.add(L.mul(e, u), L.mul(scale, _mm(q1, _adjoint(q2))))


def _solve(a, b, *, transpose_a: bool):
    return bind("triangular_solve", [a, b], [b.aval], left_side=True, lower=True,
                transpose_a=transpose_a, conjugate_a=True, unit_diagonal=False)


def _cholesky_step(u, params, dynamic=None):
    """``e u + (a - e) u (c u^H u + I)^-1``, through the Cholesky factor y of
    ``c u^H u + I``: two triangular solves give ``(y y^H)^-1 u^H``. With ``dynamic = (m, n)``
    the matrix factored is the identity outside its top-left n x n (zero would not be
    positive definite there)."""
    a_minus_e, c, e = params
    n = u.shape[1]
    eye = _eye(u, u.dtype, (n, n))
    x = L.add(L.mul(c, _mm(_adjoint(u), u)), eye)
    if dynamic is not None:
        x = mask(x, (dynamic[1], dynamic[1]), eye)
    y = bind("cholesky", [x], [x.aval])
    cplx = u.dtype.kind == "c"
    z = _solve(y, L.transpose(u, (1, 0)), transpose_a=False)
    z = _conj(z) if cplx else z
    z = _adjoint(_solve(y, z, transpose_a=True))
    return L.add(L.mul(e, u), L.mul(a_minus_e, z))


def qdwh(x, max_iterations: int = _MAX_ITERATIONS, dynamic_shape=None):
    """``(u, h, iterations, converged)``: the polar decomposition ``x = u h`` of an m x n
    matrix, m >= n, with u's columns orthonormal and h Hermitian positive semi-definite.
    ``dynamic_shape``: the true ``(m, n)`` (traced ints) of a matrix padded up to ``x``'s
    shape; what lies outside it is ignored (and zero in u and h)."""
    m, n = x.shape
    if m < n:
        raise ValueError(f"qdwh takes a matrix with at least as many rows as columns, got "
                         f"{x.shape}")
    if dynamic_shape is not None:
        x = mask(x, dynamic_shape)
    eps = float(np.finfo(_real_dtype(x.dtype)).eps)
    ax = L.abs(x)
    one_norm = L.reduce_max(L.reduce_sum(ax, axes=0))
    inf_norm = L.reduce_max(L.reduce_sum(ax, axes=1))
    # 1 / sqrt(||x||_1 ||x||_inf) >= 1 / ||x||_2: the scaled x has singular values <= 1.
    scale = L.where(L.eq(one_norm, 0), 1, L.mul(L.rsqrt(one_norm), L.rsqrt(inf_norm)))
    u = L.mul(x, L.convert_element_type(scale, x.dtype))
    tol_norm = float(np.cbrt(5 * eps))
    qr_params, chol_params = _schedule(eps, max_iterations)

    def run(u, params, step, test):
        if not params:
            return u, True
        table = np.asarray(params).astype(x.dtype)

        def body(k, state):
            u, _ = state
            row = L.dynamic_slice(as_tracer(u.builder, table), [k, 0], (1, 3),
                                  allow_negative_indices=False)
            p = [L.reshape(L.slice(row, (0, i), (1, i + 1)), ()) for i in range(3)]
            new = step(u, p, dynamic_shape)
            moving = L.gt(_frobenius(L.sub(new, u)), tol_norm) if test else True
            return new, moving
        return L.fori_loop(0, len(params), body, (u, True))

    u, _ = run(u, qr_params, _qr_step, False)
    u, moving = run(u, chol_params, _cholesky_step, True)

    # Halley's method (the weights' limit a, b, c = 3, 1, 3) until u stops moving.
    def halley(state):
        k, u, _ = state
        new = _cholesky_step(u, (3 - 1 / 3, 3, 1 / 3), dynamic_shape)
        return L.add(k, 1), new, L.gt(_frobenius(L.sub(new, u)), tol_norm)

    k0 = np.int32(len(qr_params) + len(chol_params))
    iterations, u, moving = L.while_loop(
        lambda s: L.and_(s[2], L.lt(s[0], max_iterations)), halley,
        (k0, u, moving))
    # One Newton-Schulz step refines the orthogonality of u.
    u = L.sub(L.mul(1.5, u), L.mul(0.5, _mm(u, _mm(_adjoint(u), u))))
    h = _mm(_adjoint(u), x)
    h = L.div(L.add(h, _adjoint(h)), 2)
    return u, h, iterations, L.not_(moving)


def _descending(s, v):
    """``s`` sorted descending and ``v``'s columns with it, ties in their original order
    (jnp.argsort(descending=True)'s order: a stable ascending sort of the reversed array,
    reversed)."""
    rs = L.rev(s, (0,))
    s_out = L.rev(L.sort(rs), (0,))
    if v is None:
        return s_out, None
    rv = L.rev(v, (1,))
    keys = L.broadcast_in_dim(rs, rv.shape, (1,))
    return s_out, L.rev(L.sort_key_val(keys, rv, dimension=1)[1], (1,))


def _nonnegative(x):
    """``x >= 0``, complex numbers ordered lexicographically (as jnp compares them)."""
    if x.dtype.kind != "c":
        return L.ge(x, 0)
    re, im = L.real(x), L.imag(x)
    return L.or_(L.gt(re, 0), L.and_(L.eq(re, 0), L.ge(im, 0)))


def _orthonormalize(u):
    """Re-orthonormalize u by a thin QR (columns' signs kept by R's diagonal): for a
    rank-deficient input QDWH's u need not be unitary (Nakatsukasa and Higham, 5.5)."""
    q, r = L.qr(u, full_matrices=False)
    n = r.shape[0]
    diag = L.reduce_sum(L.mul(r, _eye(r, r.dtype, (n, n))), axes=0)
    sign = L.sub(L.mul(L.convert_element_type(_nonnegative(diag), u.dtype), 2), 1)  # +-1
    return L.mul(q, L.broadcast_in_dim(sign, q.shape, (1,)))


def _svd_tall(a, *, compute_uv: bool, subset_by_index):
    """``(u, s, v)`` of an m x n matrix with m >= n, ``s`` descending, ``a = u diag(s) v^H``
    (``s`` alone without ``compute_uv``)."""
    n = a.shape[1]
    u_p, h, _, _ = qdwh(a)
    v, s = L.eigh(h, subset_by_index=subset_by_index, sort_eigenvalues=False)
    # eigh may give tiny negative values for singular values, which are >= 0.
    s = L.max(s, 0.0)
    s, v = _descending(s, v if compute_uv else None)
    if not compute_uv:
        return s
    u = _mm(u_p, v)
    eps = float(np.finfo(_real_dtype(a.dtype)).eps)
    k = s.shape[0]
    smallest = L.reshape(L.slice(s, (k - 1,), (k,)), ())
    largest = L.reshape(L.slice(s, (0,), (1,)), ())
    deficient = L.le(smallest, L.mul(n * eps, largest))
    u, _ = L.while_loop(lambda c: c[1], lambda c: (_orthonormalize(c[0]), L.not_(c[1])),
                        (u, deficient))
    return u, s, v


def check_subset(subset, n: int) -> tuple:
    """``subset_by_index`` of n values as (lo, hi), with jax's checks and messages."""
    if len(subset) != 2:
        raise ValueError("subset_by_index must be a tuple of size 2.")
    lo, hi = (int(i) for i in subset)
    if lo >= hi:
        raise ValueError("Got empty index range in subset_by_index.")
    if lo < 0:
        raise ValueError("Indices in subset_by_index must be non-negative.")
    if hi > n:
        raise ValueError("Index in subset_by_index[1] exceeds matrix size.")
    return lo, hi


def _subset_for_eigh(subset_by_index, m: int, n: int, full_matrices: bool):
    """Singular values numbered from the largest -> eigenvalues numbered from the smallest,
    with jax's checks."""
    if subset_by_index is None:
        return None
    rank = min(m, n)
    lo, hi = check_subset(subset_by_index, rank)
    if full_matrices and (lo, hi) != (0, rank):
        raise ValueError("full_matrices and subset_by_index cannot be both be set.")
    return (rank - hi, rank - lo)


def _svd_one(a, *, full_matrices: bool, compute_uv: bool, subset_by_index):
    """jax's polar SVD of one matrix: ``(u, s, vh)``, or ``s`` without ``compute_uv``."""
    m, n = a.shape
    subset = _subset_for_eigh(subset_by_index, m, n, full_matrices)
    flip = m < n
    if flip:
        a = _adjoint(a)
        m, n = n, m
    q = null = None
    if full_matrices and m > n:
        q_full, r_full = L.qr(a, full_matrices=True)
        q = L.slice(q_full, (0, 0), (m, n))
        null = L.slice(q_full, (0, n), (m, m))
        a = L.slice(r_full, (0, 0), (n, n))
    elif m > _TALL * n:
        q, a = L.qr(a, full_matrices=False)
    if not compute_uv:
        return _svd_tall(a, compute_uv=False, subset_by_index=subset)
    u, s, v = _svd_tall(a, compute_uv=True, subset_by_index=subset)
    if q is not None:
        u = _mm(q, u)
    if null is not None:
        u = L.concatenate([u, null], 1)
    # Non-finite input: every result NaN.
    finite = L.reduce_and(L.is_finite(L.real(a) if a.dtype.kind == "c" else a))
    if a.dtype.kind == "c":
        finite = L.and_(finite, L.reduce_and(L.is_finite(L.imag(a))))
    u, s, v = (L.where(finite, t, np.nan) for t in (u, s, v))
    if flip:
        return v, s, _adjoint(u)
    return u, s, _adjoint(v)


def _svd_polar(x, *, full_matrices, compute_uv, subset_by_index):
    """The svd primitive's results ``(s, u, vh)`` (or ``(s,)``) for a batch of matrices."""
    def one(a):
        out = _svd_one(a, full_matrices=full_matrices, compute_uv=compute_uv,
                       subset_by_index=subset_by_index)
        return (out[1], out[0], out[2]) if compute_uv else (out,)
    return batch_map(one, x)


def batch_map(one, x) -> tuple:
    """``one`` (matrix -> tuple of arrays) over the leading batch dimensions of ``x``, one
    matrix at a time, as jax's ``control_flow.map`` (a scan over the flattened batch)."""
    *batch, m, n = x.shape
    if not batch:
        return one(x)
    flat = L.reshape(x, (int(np.prod(batch)), m, n))
    _, outs = L.scan(lambda c, a: (c, one(a)), (), flat)
    return tuple(L.reshape(o, (*batch, *o.shape[1:])) for o in outs)


def _svd(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm=None):
    if _name(algorithm) not in (None, "DEFAULT", "POLAR"):
        raise NotImplementedError("svd: only the POLAR algorithm (the default off CPU) is "
                                  f"supported here, not {_name(algorithm)}")
    m, n = ctx.avals_in[0].shape[-2:]
    if m == 0 or n == 0:
        return lower_fun(_empty_svd)(ctx, x, full_matrices=full_matrices,
                                     compute_uv=compute_uv)
    return lower_fun(_svd_polar)(ctx, x, full_matrices=full_matrices, compute_uv=compute_uv,
                                 subset_by_index=subset_by_index)


# (jax's rule for every platform; CUDA and ROCm have cuSOLVER's there, not done here)
register_lowering("svd", _svd, platform="tpu")
