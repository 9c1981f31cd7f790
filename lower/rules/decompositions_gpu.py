"""Linear-algebra decompositions lowered for CUDA and ROCm as jax 0.10.2 lowers them: typed-FFI
custom calls (``api_version = 4``, options in a ``backend_config`` dictionary) to the cuSOLVER,
cuSPARSE and hipSOLVER/hipSPARSE kernels of jax's GPU plugins, on column-major operands.

The targets are named by platform prefix: ``cusolver_potrf_ffi`` on CUDA, ``hipsolver_potrf_ffi``
on ROCm (``{p}solver_*``, ``{p}sparse_gtsv2_ffi``, ``{p}hybrid_*`` for the MAGMA/LAPACK hybrid
kernels, ``{p}_lu_pivots_to_permutation``...). The ops around each call are jax's, op for op:
``info`` compared with 0 and a failed batch member's results replaced by NaN (jax's
``_replace_not_ok_with_nan``: the flag broadcast to ``batch + (1, ...)``, then to the
result), pivots made 0-based, the permutation from a second custom call, Jacobi's V transposed
(and conjugated) into Vh.

Where jax reads its own state, so do these rules, from a jax that is loaded: ``jax_use_magma``
(``magma`` of the hybrid eig and geqp3; "auto" without jax), and the cuSOLVER version of jax's
CUDA plugin, which picks ``cusolver_geev_ffi`` over the hybrid eig (from cuSOLVER 11.7.1, for
right eigenvectors only; never without the plugin, as on a machine without a GPU).

jax has no GPU rule for ``schur`` or ``hessenberg`` (they stay refused); ``triangular_solve`` is
XLA's own op on GPU (``linalg.py``'s rule); ``qr`` decomposes into geqrf (or geqp3) and
householder_product on every platform (``decompositions.py``).
"""

from __future__ import annotations

import functools

import numpy as np

from mhlo_ir import BoolAttr, IntegerAttr, StringAttr
import mhlo_ir as hlo

from .. import lax as L
from ..jax_state import jax_attr
from ..lax.linalg import _complex
from ..mlir import as_values, lower_fun, register_lowering
from .decompositions import (_aval, _empty_svd, _is_complex, _name, ffi_call, full_aval, info_is,
                             lu_ffi, nan_unless)
from .decompositions_tpu import thomas_tridiagonal_solve

# jax's target-name prefixes (``_platform_prefix_map``).
PREFIX = {"cuda": "cu", "rocm": "hip"}
# cuSOLVER's geev (non-symmetric eig) appeared in 11.7.1 (jax's check: version >= 11701).
_CUSOLVER_GEEV_VERSION = 11701


def _b(flag) -> BoolAttr:
    return BoolAttr(bool(flag))


def _magma_default() -> str:
    """``jax_use_magma`` ("off", "on" or "auto") where jax is loaded, else its default."""
    flag = jax_attr("jax._src.config", "gpu_use_magma")
    return str(flag.value) if flag is not None else "auto"


def _have_cusolver_geev(prefix: str) -> bool:
    """jax's test: CUDA, and the plugin's cuSOLVER is 11.7.1 or newer (read where jax's linalg
    rules read it; no plugin, no geev)."""
    versions = jax_attr("jax._src.lax.linalg", "cuda_versions")
    return (prefix == "cu" and bool(versions)
            and versions.cusolver_get_version() >= _CUSOLVER_GEEV_VERSION)


def _batch(ctx):
    return tuple(ctx.avals_in[0].shape[:-2])


# -- the rules ------------------------------------------------------------------------------------

def _cholesky(ctx, a, *, prefix, **_):
    (a_aval,) = ctx.avals_in
    result, info = ffi_call(ctx, f"{prefix}solver_potrf_ffi", [a], ctx.avals_in,
                            [a_aval, _aval(_batch(ctx), np.int32)], aliases={0: 0},
                            lower=_b(True))
    b = ctx.builder
    return [nan_unless(b, info_is(b, info), result)]


def _geqrf(ctx, a, *, prefix):
    return list(ffi_call(ctx, f"{prefix}solver_geqrf_ffi", [a], ctx.avals_in, ctx.avals_out,
                         aliases={0: 0}))


def _geqp3(ctx, a, jpvt, *, use_magma=None, prefix):
    magma = _magma_default() if use_magma is None else ("on" if use_magma else "off")
    return list(ffi_call(ctx, f"{prefix}hybrid_geqp3", [a, jpvt], ctx.avals_in, ctx.avals_out,
                         aliases={0: 0, 1: 1}, magma=StringAttr(magma)))


def _householder_product(ctx, a, taus, *, prefix):
    return list(ffi_call(ctx, f"{prefix}solver_orgqr_ffi", [a, taus], ctx.avals_in,
                         ctx.avals_out, aliases={0: 0}))


def _ormqr(ctx, a, taus, c, *, left, transpose, prefix):
    return list(ffi_call(ctx, f"{prefix}solver_ormqr_ffi", [a, taus, c], ctx.avals_in,
                         ctx.avals_out, aliases={2: 0}, left=_b(left),
                         transpose=_b(transpose)))


# jax's eigh algorithm numbers for cuSOLVER's syevd handler: its default, QR, Jacobi (syevj).
_EIGH_ALGORITHMS = {None: 0, "QR": 1, "JACOBI": 2}


def _eigh(ctx, x, *, lower, sort_eigenvalues, subset_by_index, algorithm=None, prefix):
    # (cuSOLVER always sorts)
    (x_aval,) = ctx.avals_in
    n = x_aval.shape[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError("eigh: subset_by_index is not supported on GPU")
    algorithm = _name(algorithm)
    if algorithm == "QDWH":
        raise NotImplementedError("eigh: the QDWH algorithm is only supported on TPU")
    if algorithm not in _EIGH_ALGORITHMS:
        raise ValueError(f"eigh: unknown algorithm {algorithm}")
    v, w, info = ffi_call(ctx, f"{prefix}solver_syevd_ffi", [x], ctx.avals_in,
                          [*ctx.avals_out, _aval(_batch(ctx), np.int32)], aliases={0: 0},
                          lower=_b(lower),
                          algorithm=IntegerAttr(_EIGH_ALGORITHMS[algorithm], hlo.ui8))
    b = ctx.builder
    ok = info_is(b, info)
    return [nan_unless(b, ok, v), nan_unless(b, ok, w)]


def _lu(ctx, x, *, prefix):
    return lu_ffi(ctx, x, f"{prefix}solver_getrf_ffi")


def _lu_pivots_to_permutation(ctx, pivots, *, permutation_size, prefix):
    return list(ffi_call(ctx, f"{prefix}_lu_pivots_to_permutation", [pivots], ctx.avals_in,
                         ctx.avals_out, column_major=False, num_non_batch_dims=1))


def _tridiagonal(ctx, a, *, lower, prefix):
    *outs, info = ffi_call(ctx, f"{prefix}solver_sytrd_ffi", [a], ctx.avals_in,
                           [*ctx.avals_out, _aval(_batch(ctx), np.int32)], aliases={0: 0},
                           lower=_b(lower))
    b = ctx.builder
    ok = info_is(b, info)
    return [nan_unless(b, ok, o) for o in outs]


def _tridiagonal_solve(ctx, dl, d, du, rhs, *, perturb_singular, prefix):
    if perturb_singular:
        return list(ffi_call(ctx, f"{prefix}_tridiagonal_solve_perturbed", [dl, d, du, rhs],
                             ctx.avals_in, [ctx.avals_in[-1]]))
    if ctx.avals_in[1].shape[-1] <= 2:
        # (gtsv2 needs three rows or more: jax's generic rule, the Thomas algorithm)
        return lower_fun(thomas_tridiagonal_solve, multiple_results=False)(
            ctx, dl, d, du, rhs, perturb_singular=False)
    return list(ffi_call(ctx, f"{prefix}sparse_gtsv2_ffi", [dl, d, du, rhs], ctx.avals_in,
                         ctx.avals_out, aliases={3: 0}))


def _cholesky_update(ctx, r, w):
    """CUDA only: cuSOLVER-free kernel of jax's plugin, both operands updated in place."""
    return list(ffi_call(ctx, "cu_cholesky_update_ffi", [r, w], ctx.avals_in, ctx.avals_in,
                         aliases={0: 0, 1: 1}, column_major=False,
                         batch_partitionable=False))[:1]


def _symmetric_product(ctx, a, c, *, alpha, beta):
    """CUDA only: ``alpha a a^T + beta c`` by cuBLAS's syrk (through jax's solver plugin)."""
    b = ctx.builder
    dtype = ctx.avals_in[0].dtype
    scalars = [full_aval(b, v, (), dtype) for v in (alpha, beta)]
    return list(ffi_call(ctx, "cusolver_syrk_ffi", [a, c, *scalars],
                         [*ctx.avals_in, _aval((), dtype), _aval((), dtype)], ctx.avals_out,
                         aliases={1: 0}, column_major=False, batch_partitionable=False,
                         transpose=_b(False)))


# -- eig ------------------------------------------------------------------------------------------

def _unpack_conjugate_pairs(w, vr):
    """geev's real eigenvectors as complex ones: a conjugate pair (w_j, w_j+1) shares the
    columns (re, im) of vr: v_j = re + i im, v_j+1 = re - i im (as jax unpacks them)."""
    if 0 in vr.shape:
        return _complex(vr, vr)  # (no elements)
    nd = vr.ndim
    is_real = L.eq(L.imag(w), 0)
    # (a pair starts where an odd number of complex eigenvalues has been seen)
    count = L.cumsum(L.convert_element_type(L.not_(is_real), np.int32), axis=w.ndim - 1)
    starts = L.eq(L.rem(count, 2), 1)
    shifted_left = L.pad(vr, 0, [(0, 0, 0)] * (nd - 1) + [(-1, 1, 0)])
    shifted_right = L.pad(vr, 0, [(0, 0, 0)] * (nd - 1) + [(1, -1, 0)])
    dims = tuple(d for d in range(nd) if d != nd - 2)
    is_real = L.broadcast_in_dim(is_real, vr.shape, dims)
    starts = L.broadcast_in_dim(starts, vr.shape, dims)
    re = L.where(L.or_(is_real, starts), vr, shifted_right)
    im = L.where(starts, shifted_left, L.neg(vr))
    return _complex(re, L.where(is_real, 0, im))


def _eig(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors,
         enable_eigvec_derivs=False, implementation=None, prefix):
    b = ctx.builder
    (x_aval,) = ctx.avals_in
    batch = _batch(ctx)
    n = x_aval.shape[-1]
    dtype = np.dtype(x_aval.dtype)
    if dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise ValueError(f"eig: unsupported dtype {dtype.name}")
    real = not _is_complex(dtype)
    ct = np.dtype(np.result_type(dtype, np.complex64))
    implementation = _name(implementation)
    geev = _have_cusolver_geev(prefix)
    left, right = bool(compute_left_eigenvectors), bool(compute_right_eigenvectors)
    if (implementation is None and geev and not left) or implementation == "CUSOLVER":
        if not geev:
            raise RuntimeError("Nonsymmetric eigendecomposition requires cusolver 11.7.1 or "
                               "newer")
        if left:
            raise NotImplementedError("Left eigenvectors are not supported by cusolver")
        outs = [_aval((*batch, n, n), dtype), _aval((*batch, n), ct),
                _aval((*batch, n, n), dtype), _aval((*batch, n, n), dtype),
                _aval(batch, np.int32)]
        _, w, vl, vr, info = ffi_call(ctx, f"{prefix}solver_geev_ffi", [x], ctx.avals_in,
                                      outs, left=_b(left), right=_b(right))
        if real and right:
            sub = ctx.replace(primitive=None, avals_in=[outs[1], outs[3]],
                              avals_out=[_aval((*batch, n, n), ct)])
            (vr,) = lower_fun(_unpack_conjugate_pairs, multiple_results=False)(sub, w, vr)
            (vr,) = as_values(vr)
    else:
        magma = _magma_default() if implementation is None else (
            "on" if implementation == "MAGMA" else "off")
        target = f"{prefix}hybrid_eig_{'real' if real else 'comp'}"
        v_aval = _aval((*batch, n, n), ct)
        w_aval = _aval((*batch, n), dtype)
        outs = [w_aval] * (2 if real else 1) + [v_aval, v_aval, _aval(batch, np.int32)]
        *w, vl, vr, info = ffi_call(ctx, target, [x], ctx.avals_in, outs, left=_b(left),
                                    magma=StringAttr(magma), right=_b(right))
        w = b.complex(*w) if real else w[0]
    ok = info_is(b, info)
    out = [nan_unless(b, ok, w)]
    if left:
        out.append(nan_unless(b, ok, vl))
    if right:
        out.append(nan_unless(b, ok, vr))
    return out


# -- svd ------------------------------------------------------------------------------------------

def _svd_target(algorithm, prefix: str, m: int, n: int) -> str:
    """jax's ``_resolve_gpu_svd_implementation``: Jacobi up to 1024 x 1024 by default."""
    algorithm = _name(algorithm) or "DEFAULT"
    if algorithm == "DIVIDE_AND_CONQUER" and prefix != "hip":
        raise NotImplementedError(
            "Divide-and-conquer SVD (SvdAlgorithm.DIVIDE_AND_CONQUER) is only supported on "
            "AMD (ROCm) GPUs, not on NVIDIA CUDA.")
    if algorithm == "DEFAULT":
        return "gesvdj" if m <= 1024 and n <= 1024 else "gesvd"
    target = {"QR": "gesvd", "JACOBI": "gesvdj", "POLAR": "gesvdp",
              "DIVIDE_AND_CONQUER": "gesdd"}.get(algorithm)
    if target is None:
        raise NotImplementedError(f"Unsupported SVD algorithm on GPU: {algorithm}")
    return target


def _svd(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm=None, prefix):
    b = ctx.builder
    (x_aval,) = ctx.avals_in
    batch = _batch(ctx)
    nb = len(batch)
    m, n = x_aval.shape[-2:]
    k = min(m, n)
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        raise NotImplementedError("svd: subset_by_index is not supported on GPU")
    if m == 0 or n == 0:
        return lower_fun(_empty_svd)(ctx, x, full_matrices=full_matrices,
                                     compute_uv=compute_uv)
    target = _svd_target(algorithm, prefix, m, n)
    s_aval = ctx.avals_out[0]
    if compute_uv:
        u_aval, vt_aval = ctx.avals_out[1:]
    else:  # (jax's placeholders: the kernel writes no vectors)
        u_aval = vt_aval = _aval((), x_aval.dtype)
    econ, transposed, config = not full_matrices, False, {}
    if target == "gesvdj":  # (the batched kernel, worthwhile up to 32 x 32, has no econ mode)
        econ = not full_matrices and m > 32 and n > 32
    elif target == "gesdd":
        config = {"transposed": _b(False)}
    elif target == "gesvd":
        transposed = m < n  # (A^T's decomposition: A read row-major, U and Vh swapped)
        config = {"transposed": _b(transposed)}
    info_aval = _aval(batch, np.int32)
    if target in ("gesvdj", "gesvdp"):  # (these return V, always allocated)
        outs = [x_aval, s_aval, _aval((*batch, m, k if econ else m), u_aval.dtype),
                _aval((*batch, n, k if econ else n), vt_aval.dtype), info_aval]
    elif transposed:
        outs = [x_aval, s_aval, vt_aval, u_aval, info_aval]
    else:
        outs = [x_aval, s_aval, u_aval, vt_aval, info_aval]
    _, s, u, vt, info = ffi_call(ctx, f"{prefix}solver_{target}_ffi", [x], ctx.avals_in, outs,
                                 aliases={0: 0}, column_major=not transposed,
                                 compute_uv=_b(compute_uv), full_matrices=_b(not econ),
                                 **config)
    if transposed:
        u, vt = vt, u
    if target in ("gesvdj", "gesvdp") and compute_uv:
        vt = b.transpose(vt, (*range(nb), nb + 1, nb))
        if _is_complex(x_aval.dtype):
            vt = b.complex(b.real(vt), b.negate(b.imag(vt)))
        if not full_matrices and not econ:
            u = b.slice(u, (0,) * (nb + 2), (*batch, m, k), (1,) * (nb + 2))
            vt = b.slice(vt, (0,) * (nb + 2), (*batch, k, n), (1,) * (nb + 2))
    ok = info_is(b, info)
    out = [nan_unless(b, ok, s)]
    if compute_uv:
        out += [nan_unless(b, ok, u), nan_unless(b, ok, vt)]
    return out


# -- registration ---------------------------------------------------------------------------------

for _platform, _prefix in PREFIX.items():
    for _prim, _rule in {
            "cholesky": _cholesky, "geqrf": _geqrf, "geqp3": _geqp3,
            "householder_product": _householder_product, "ormqr": _ormqr, "eigh": _eigh,
            "lu": _lu, "lu_pivots_to_permutation": _lu_pivots_to_permutation,
            "tridiagonal": _tridiagonal, "tridiagonal_solve": _tridiagonal_solve,
            "eig": _eig, "svd": _svd}.items():
        register_lowering(_prim, functools.partial(_rule, prefix=_prefix), platform=_platform)
# (jax's plugin kernels for these two are CUDA's alone; ROCm keeps the generic rules)
register_lowering("cholesky_update", _cholesky_update, platform="cuda")
register_lowering("symmetric_product", _symmetric_product, platform="cuda")
