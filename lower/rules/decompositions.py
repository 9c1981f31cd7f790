"""Linear-algebra decompositions, lowered for CPU as jax 0.10.2 lowers them: custom calls to
jaxlib's LAPACK kernels through XLA's typed FFI (``lapack_sgeqrf_ffi``, ``api_version = 4``,
the kernel's options in a ``backend_config`` dictionary), on column-major operands.

qr (geqrf + householder_product, or geqp3 with pivoting), eigh, svd, lu (getrf, then
``lu_pivots_to_permutation`` as a loop), eig, schur, hessenberg, tridiagonal,
tridiagonal_solve, ormqr and geqp3. Where LAPACK reports failure (``info``) the results
become NaN, as in JAX.

``qr`` and ``lu_pivots_to_permutation`` decompose into other primitives and are registered for
every platform; the LAPACK calls for CPU only (TPU's rules are in ``decompositions_tpu`` and
``polar``, CUDA's and ROCm's cuSOLVER calls in ``decompositions_gpu``, through ``ffi_call``).

The LAPACK targets must be registered with XLA's CPU runtime before such a module compiles;
``verify`` does that (``verify/lapack.py``) when it sees one.
"""

from __future__ import annotations

import builtins

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import BoolAttr, DictionaryAttr, IntegerAttr, OutputOperandAlias
from mhlo_ir.builder import as_results
from mhlo_ir.ops.custom_call import IndexLayout

from .. import core
from .. import lax as L
from ..jax_state import x64
from ..semantics import compare_hlo
from ..mlir import aval_to_ir_type, lower_fun, register_lowering
from ..lax.bodies import lift

_LAPACK_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                  np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


def lapack_target(fn_base: str, dtype) -> str:
    """``lapack_sgeqrf_ffi`` for ``("geqrf_ffi", float32)``."""
    prefix = _LAPACK_PREFIX.get(np.dtype(dtype))
    if prefix is None:
        raise NotImplementedError(f"LAPACK has no {fn_base[:-4]} for {np.dtype(dtype).name}: "
                                  "use float32, float64, complex64 or complex128")
    return f"lapack_{prefix}{fn_base}"


def _is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def _column_major(rank: int) -> tuple:
    # A batch of Fortran-order matrices: the row index varies fastest.
    return (rank - 2, rank - 1, *range(rank - 3, -1, -1))


def _char(c: str) -> IntegerAttr:
    """LAPACK's character options (``'V'``, ``'L'``...) as the FFI reads them: a ui8."""
    return IntegerAttr(ord(c), hlo.ui8)


def _i32(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), hlo.i32)


def _aval(shape, dtype) -> core.ShapedArray:
    return core.ShapedArray(tuple(shape), dtype)


def ffi_call(ctx, target: str, operands, avals_in, avals_out, *, aliases=None,
             column_major: bool = True, num_non_batch_dims: int = 2,
             batch_partitionable: bool = True, **config) -> tuple:
    """A typed-FFI custom call as JAX's ``_linalg_ffi_lowering`` emits it: operands and results
    of the highest rank are column-major matrices (the rest row-major), ``aliases`` maps an
    operand to the result that reuses its buffer, ``config`` becomes the backend_config.
    ``batch_partitionable=False`` leaves out the ``num_batch_dims`` frontend attribute, as
    jax's plain ``ffi_lowering`` does (with ``column_major=False``: all row-major)."""
    rank = builtins.max(len(a.shape) for a in avals_in)

    def layout(aval):
        r = len(aval.shape)
        return IndexLayout(_column_major(r) if column_major and r == rank
                           else range(r - 1, -1, -1))

    multi = len(avals_out) > 1
    alias_attrs = [OutputOperandAlias(output_tuple_indices=(out,) if multi else (),
                                      operand_index=operand, operand_tuple_indices=())
                   for operand, out in (aliases or {}).items()]
    extra = {}
    if batch_partitionable:
        extra["mhlo.frontend_attributes"] = DictionaryAttr(
            {"num_batch_dims": str(rank - num_non_batch_dims)})
    return as_results(ctx.builder.custom_call(
        target, list(operands), [aval_to_ir_type(a) for a in avals_out], api_version=4,
        backend_config=DictionaryAttr(config),
        operand_layouts=[layout(a) for a in avals_in],
        result_layouts=[layout(a) for a in avals_out],
        output_operand_aliases=alias_attrs or None, **extra))


def full_aval(b, value, shape, dtype):
    """jax's ``full_like_aval``: a scalar constant and a broadcast_in_dim, even to a scalar."""
    scalar = b.constant(np.asarray(value, dtype=dtype))
    return b.broadcast_in_dim(scalar, tuple(shape), [])


def info_is(b, info, direction: str = "EQ"):
    """A solver's ``info`` compared with 0 (per batch member), as jax compares it."""
    return compare_hlo(b, info, full_aval(b, 0, info.type.shape, np.int32), direction,
                       "SIGNED")


def nan_unless(b, ok, x):
    """jax's ``_replace_not_ok_with_nan`` (every platform's): ``x`` where its batch member's
    call succeeded (``ok``, one flag per member), NaN elsewhere; the flags broadcast to
    ``batch + (1, ...)``, then to ``x``'s shape."""
    batch = tuple(ok.type.shape)
    shape = tuple(x.type.shape)
    flags = b.broadcast_in_dim(ok, batch + (1,) * (len(shape) - len(batch)),
                               list(range(len(batch))))
    nan = complex(np.nan, np.nan) if x.type.element_type.kind == "complex" else np.nan
    nans = full_aval(b, nan, shape, x.type.dtype)
    if tuple(flags.type.shape) != shape:
        flags = b.broadcast_in_dim(flags, shape, list(range(len(shape))))
    return b.select(flags, x, nans)


def _name(option):
    """An enum param (JAX's EighImplementation, SvdAlgorithm...) by name; None stays None."""
    return getattr(option, "name", option)


# -- QR ------------------------------------------------------------------------------------

def _geqrf_cpu(ctx, a):
    (a_aval,) = ctx.avals_in
    return ffi_call(ctx, lapack_target("geqrf_ffi", a_aval.dtype), [a], ctx.avals_in,
                    ctx.avals_out, aliases={0: 0})


def _geqp3_cpu(ctx, a, jpvt, *, use_magma=None):
    a_aval = ctx.avals_in[0]
    return ffi_call(ctx, lapack_target("geqp3_ffi", a_aval.dtype), [a, jpvt], ctx.avals_in,
                    ctx.avals_out, aliases={0: 0, 1: 1})


def _householder_product_cpu(ctx, a, taus):
    dtype = ctx.avals_in[0].dtype
    fn = "ungqr_ffi" if _is_complex(dtype) else "orgqr_ffi"
    return ffi_call(ctx, lapack_target(fn, dtype), [a, taus], ctx.avals_in, ctx.avals_out,
                    aliases={0: 0})


def _ormqr_cpu(ctx, a, taus, c, *, left, transpose):
    dtype = ctx.avals_in[0].dtype
    fn = "unmqr_ffi" if _is_complex(dtype) else "ormqr_ffi"
    return ffi_call(ctx, lapack_target(fn, dtype), [a, taus, c], ctx.avals_in, ctx.avals_out,
                    aliases={2: 0}, left=BoolAttr(bool(left)),
                    transpose=BoolAttr(bool(transpose)))


def _eye(like, dtype, shape):
    i = L.iota(like, np.int32, shape, 0)
    j = L.iota(like, np.int32, shape, 1)
    return L.convert_element_type(L.eq(i, j), dtype)


def _full(like, value, dtype, shape):
    """``value`` broadcast to ``shape``, traced next to ``like``."""
    scalar = lift(like.builder, value, core.ShapedArray((), dtype))
    return L.broadcast_in_dim(scalar, shape, ())


def _tri_index_dtype(shape) -> type:
    """The integer type of jax's ``lax._tri`` mask: int32 unless a dimension needs more, or
    the offset (a Python int, int64 under x64) does not fit in int32's range."""
    big = builtins.any(d > np.iinfo(np.int32).max for d in shape)
    return np.int64 if big or x64(default=False) else np.int32


def tri(like, shape, offset: int):
    """jax's ``lax._tri`` of bools, traced next to ``like``: True where row + ``offset`` >=
    column, in its integer type (``_tri_index_dtype``)."""
    dtype = _tri_index_dtype(shape)
    shift = lift(like.builder, offset, core.ShapedArray((), dtype))
    return L.ge(L.add(L.iota(like, dtype, shape, 0), shift), L.iota(like, dtype, shape, 1))


def _triu(x):
    """The upper triangle of a batch of matrices (zeros strictly below the diagonal), with
    jax's ops (``_triu``: row - 1 >= column is below)."""
    nb = x.ndim - 2
    below = tri(x, x.shape[-2:], -1)
    if nb:
        below = L.broadcast_in_dim(below, x.shape, (nb, nb + 1))
    return L.where(below, 0, x)


def _qr_impl(a, *, pivoting, full_matrices, use_magma=None):
    """jax's ``_qr_lowering``: geqrf (geqp3 with pivoting), then Q from the reflectors."""
    *batch, m, n = a.shape
    nb = len(batch)
    if m == 0 or n == 0:
        k = m if full_matrices else builtins.min(m, n)
        q = L.broadcast_in_dim(_eye(a, a.dtype, (m, k)), (*batch, m, k), (nb, nb + 1))
        r = _full(a, 0, a.dtype, (*batch, k, n))
        return (q, r, _full(a, 0, np.int32, (*batch, n))) if pivoting else (q, r)
    p = None
    if pivoting:
        jpvt = _full(a, 0, np.int32, (*batch, n))
        r, p, taus = L.geqp3(a, jpvt, use_magma=use_magma)
        p = L.sub(p, 1)  # geqp3's pivots are 1-based
    else:
        r, taus = L.geqrf(a)
    if m < n:
        q = L.householder_product(L.slice(r, (0,) * (nb + 2), (*batch, m, m)), taus)
    elif full_matrices:
        q = L.pad(r, 0, [(0, 0, 0)] * (nb + 1) + [(0, m - n, 0)])
        q = L.householder_product(q, taus)
    else:
        q = L.householder_product(r, taus)
        if m > n:  # (jax's r[..., :n, :n]: no op when square)
            r = L.slice(r, (0,) * (nb + 2), (*batch, n, n))
    r = _triu(r)
    return (q, r, p) if pivoting else (q, r)


# -- eigen and singular values -------------------------------------------------------------

def _eigh_cpu(ctx, x, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
    # LAPACK's syevd/heevd always sort.
    (x_aval,) = ctx.avals_in
    v_aval, w_aval = ctx.avals_out
    n = x_aval.shape[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError("eigh: subset_by_index is not supported on CPU")
    if _name(algorithm) in ("QDWH", "JACOBI"):
        raise NotImplementedError(f"eigh: the {_name(algorithm)} algorithm is not supported "
                                  "on CPU")
    batch = x_aval.shape[:-2]
    fn = "heevd_ffi" if _is_complex(x_aval.dtype) else "syevd_ffi"
    v, w, info = ffi_call(ctx, lapack_target(fn, x_aval.dtype), [x], ctx.avals_in,
                          [v_aval, w_aval, _aval(batch, np.int32)], aliases={0: 0},
                          mode=_char("V"), uplo=_char("L" if lower else "U"))
    ok = info_is(ctx.builder, info)
    return [nan_unless(ctx.builder, ok, v), nan_unless(ctx.builder, ok, w)]


def _empty_svd(a, *, full_matrices, compute_uv):
    *batch, m, n = a.shape
    nb = len(batch)
    s = _full(a, 0, np.empty((), a.dtype).real.dtype, (*batch, 0))
    if not compute_uv:
        return (s,)
    if full_matrices:
        size = builtins.max(m, n)
        u = L.broadcast_in_dim(_eye(a, a.dtype, (size, size)), (*batch, size, size),
                               (nb, nb + 1))
    else:
        u = _full(a, 0, a.dtype, (*batch, m, n))
    v = _full(a, 0, a.dtype, (*batch, 0, 0))
    if m < n:
        u, v = v, u
    return s, u, v


_SVD_TARGETS = {None: "gesdd_ffi", "DEFAULT": "gesdd_ffi", "DIVIDE_AND_CONQUER": "gesdd_ffi",
                "QR": "gesvd_ffi"}


def _svd_cpu(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm=None):
    (x_aval,) = ctx.avals_in
    *batch, m, n = x_aval.shape
    batch = tuple(batch)
    k = builtins.min(m, n)
    if subset_by_index is not None and tuple(subset_by_index) != (0, k):
        raise NotImplementedError("svd: subset_by_index is not supported on CPU")
    if m == 0 or n == 0:
        return lower_fun(_empty_svd)(ctx, x, full_matrices=full_matrices, compute_uv=compute_uv)
    fn = _SVD_TARGETS.get(_name(algorithm))
    if fn is None:
        raise NotImplementedError(f"svd: the {_name(algorithm)} algorithm is not supported "
                                  "on CPU")
    mode = "N" if not compute_uv else ("A" if full_matrices in (None, True) else "S")
    if compute_uv:
        s_aval, u_aval, vt_aval = ctx.avals_out
    else:
        (s_aval,) = ctx.avals_out
        u_aval = _aval((*batch, m, m if full_matrices else k), x_aval.dtype)
        vt_aval = _aval((*batch, n if full_matrices else k, n), x_aval.dtype)
    _, s, u, vt, info = ffi_call(ctx, lapack_target(fn, x_aval.dtype), [x], ctx.avals_in,
                                 [x_aval, s_aval, u_aval, vt_aval, _aval(batch, np.int32)],
                                 aliases={0: 0}, mode=_char(mode))
    ok = info_is(ctx.builder, info)
    out = [nan_unless(ctx.builder, ok, s)]
    if compute_uv:
        out += [nan_unless(ctx.builder, ok, u), nan_unless(ctx.builder, ok, vt)]
    return out


def _eig_cpu(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs=False, implementation=None):
    if implementation is not None and _name(implementation) != "LAPACK":
        raise ValueError("eig: only the LAPACK implementation is supported on CPU")
    b = ctx.builder
    (x_aval,) = ctx.avals_in
    batch = x_aval.shape[:-2]
    real = not _is_complex(x_aval.dtype)
    ct = np.result_type(x_aval.dtype, np.complex64)
    w_aval = _aval(x_aval.shape[:-1], x_aval.dtype)
    v_aval = _aval(x_aval.shape, ct)
    outs = [w_aval] * (2 if real else 1) + [v_aval, v_aval, _aval(batch, np.int32)]
    mode = {True: _char("V"), False: _char("N")}
    *w, vl, vr, info = ffi_call(ctx, lapack_target("geev_ffi", x_aval.dtype), [x],
                                ctx.avals_in, outs,
                                compute_left=mode[bool(compute_left_eigenvectors)],
                                compute_right=mode[bool(compute_right_eigenvectors)])
    w = b.complex(w[0], w[1]) if real else w[0]
    ok = info_is(ctx.builder, info)
    out = [nan_unless(ctx.builder, ok, w)]
    if compute_left_eigenvectors:
        out.append(nan_unless(ctx.builder, ok, vl))
    if compute_right_eigenvectors:
        out.append(nan_unless(ctx.builder, ok, vr))
    return out


def _schur_cpu(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable=None):
    if sort_eig_vals:
        raise NotImplementedError("schur: sorting the eigenvalues (LAPACK gees's sort) is not "
                                  "implemented")
    (x_aval,) = ctx.avals_in
    batch = x_aval.shape[:-2]
    w_aval = _aval(x_aval.shape[:-1], x_aval.dtype)
    info = _aval(batch, np.int32)
    eigvals = [w_aval, w_aval] if not _is_complex(x_aval.dtype) else [w_aval]
    # The results: the Schur form, the vectors, the eigenvalues, sdim and info.
    t, z, *_, info_v = ffi_call(
        ctx, lapack_target("gees_ffi", x_aval.dtype), [x], ctx.avals_in,
        [x_aval, x_aval, *eigvals, info, info], aliases={0: 0},
        mode=_char("V" if compute_schur_vectors else "N"), sort=_char("N"))
    ok = info_is(ctx.builder, info_v)
    out = [nan_unless(ctx.builder, ok, t)]
    if compute_schur_vectors:
        out.append(nan_unless(ctx.builder, ok, z))
    return out


def _hessenberg_cpu(ctx, a):
    (a_aval,) = ctx.avals_in
    batch, n = a_aval.shape[:-2], a_aval.shape[-1]
    h, taus, info = ffi_call(ctx, lapack_target("gehrd_ffi", a_aval.dtype), [a], ctx.avals_in,
                             [*ctx.avals_out, _aval(batch, np.int32)], aliases={0: 0},
                             low=_i32(1), high=_i32(n))
    ok = info_is(ctx.builder, info)
    return [nan_unless(ctx.builder, ok, h), nan_unless(ctx.builder, ok, taus)]


def _tridiagonal_cpu(ctx, a, *, lower):
    (a_aval,) = ctx.avals_in
    batch = a_aval.shape[:-2]
    fn = "hetrd_ffi" if _is_complex(a_aval.dtype) else "sytrd_ffi"
    *outs, info = ffi_call(ctx, lapack_target(fn, a_aval.dtype), [a], ctx.avals_in,
                           [*ctx.avals_out, _aval(batch, np.int32)], aliases={0: 0},
                           uplo=_char("L" if lower else "U"))
    ok = info_is(ctx.builder, info)
    return [nan_unless(ctx.builder, ok, o) for o in outs]


def _tridiagonal_solve_cpu(ctx, dl, d, du, rhs, *, perturb_singular):
    b_aval = ctx.avals_in[-1]
    if perturb_singular:
        return ffi_call(ctx, "tridiagonal_solve_perturbed_ffi", [dl, d, du, rhs],
                        ctx.avals_in, [b_aval])
    batch = b_aval.shape[:-2]
    *_, x, info = ffi_call(ctx, lapack_target("gtsv_ffi", b_aval.dtype), [dl, d, du, rhs],
                           ctx.avals_in, [*ctx.avals_in, _aval(batch, np.int32)],
                           aliases={0: 0, 1: 1, 2: 2, 3: 3})
    return [nan_unless(ctx.builder, info_is(ctx.builder, info), x)]


# -- LU ----------------------------------------------------------------------------------------

def _pivots_to_permutation(swaps, *, permutation_size):
    """jax's ``_generic_lu_pivots_to_permutation``: apply the row swaps in order to the
    identity permutation, one step of a loop per pivot. The swap of positions ``i`` (the same
    in every batch member) and ``swaps[..., i]`` (per member) is done with selects, a pivot
    read as jax's indexing reads it: a negative one from the end, a read out of range
    clamped, a write out of range dropped (pivots LAPACK gives are in range; others gave
    another permutation than jax.jit's)."""
    *batch, k = swaps.shape
    nb = len(batch)
    shape = (*batch, permutation_size)
    permutation = L.iota(swaps, np.int32, shape, nb)
    if permutation_size == 0 or k == 0:
        return (permutation,)

    def body(i, perm):
        pos = L.iota(perm, np.int32, shape, nb)
        j = L.dynamic_slice(swaps, [0] * nb + [i], (*batch, 1), allow_negative_indices=False)
        x = L.dynamic_slice(perm, [0] * nb + [i], (*batch, 1), allow_negative_indices=False)
        j = L.where(L.lt(j, 0), L.add(j, np.int32(permutation_size)), j)
        read = L.clamp(np.int32(0), j, np.int32(permutation_size - 1))
        y = L.reshape(L.reduce_sum(L.where(L.eq(pos, read), perm, 0), axes=nb), (*batch, 1))
        perm = L.where(L.eq(pos, i), y, perm)
        return L.where(L.eq(pos, j), x, perm)
    return (L.fori_loop(0, k, body, permutation),)


def _permutation(pivots, *, m):
    return L.lu_pivots_to_permutation(pivots, m)


def lu_ffi(ctx, x, target: str) -> list:
    """jax's lu on a getrf kernel (LAPACK's, cuSOLVER's...): the factors, the 1-based pivots
    made 0-based, NaN factors where a batch member's call failed, and the permutation from
    the pivots through the platform's ``lu_pivots_to_permutation`` rule."""
    b = ctx.builder
    lu_aval, pivot_aval, perm_aval = ctx.avals_out
    batch = ctx.avals_in[0].shape[:-2]
    lu, pivot, info = ffi_call(ctx, target, [x], ctx.avals_in,
                               [lu_aval, pivot_aval, _aval(batch, np.int32)], aliases={0: 0})
    pivot = b.subtract(pivot, full_aval(b, 1, pivot_aval.shape, np.int32))
    # info > 0 is a zero pivot: the factorisation is still complete (and singular).
    lu = nan_unless(b, info_is(b, info, "GE"), lu)
    sub = ctx.replace(primitive=None, avals_in=[_aval(pivot_aval.shape, np.int32)],
                      avals_out=[perm_aval])
    (perm,) = lower_fun(_permutation)(sub, pivot, m=ctx.avals_in[0].shape[-2])
    return [lu, pivot, perm]


def _lu_cpu(ctx, x):
    return lu_ffi(ctx, x, lapack_target("getrf_ffi", ctx.avals_in[0].dtype))


# -- cholesky, triangular_solve -----------------------------------------------------------------

def _cholesky_cpu(ctx, a, **_):
    """LAPACK's potrf (lower), NaN where a batch member is not positive definite, as jax.jit's
    CPU rule: XLA's own expansion of ``cholesky`` differs from it in the last bits. Types
    LAPACK lacks keep XLA's op."""
    (a_aval,) = ctx.avals_in
    if np.dtype(a_aval.dtype) not in _LAPACK_PREFIX:
        return [ctx.builder.cholesky(a, lower=True)]
    batch = a_aval.shape[:-2]
    result, info = ffi_call(ctx, lapack_target("potrf_ffi", a_aval.dtype), [a], ctx.avals_in,
                            [a_aval, _aval(batch, np.int32)], aliases={0: 0}, uplo=_char("L"))
    return [nan_unless(ctx.builder, info_is(ctx.builder, info), result)]


def _triangular_solve_cpu(ctx, a, rhs, *, left_side, lower, transpose_a, conjugate_a,
                          unit_diagonal):
    """LAPACK's trsm, as jax.jit's CPU rule (XLA's own expansion differs in the last bits);
    types LAPACK lacks keep XLA's op."""
    b = ctx.builder
    if conjugate_a and not transpose_a:
        a = b.chlo_conj(a)
        conjugate_a = False
    a_aval, b_aval = ctx.avals_in
    if np.dtype(a_aval.dtype) not in _LAPACK_PREFIX:
        mode = "NO_TRANSPOSE" if not transpose_a else ("ADJOINT" if conjugate_a else
                                                       "TRANSPOSE")
        return [b.triangular_solve(a, rhs, left_side=left_side, lower=lower,
                                   unit_diagonal=unit_diagonal, transpose_a=mode)]
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    return list(ffi_call(ctx, lapack_target("trsm_ffi", a_aval.dtype), [a, rhs],
                         [a_aval, b_aval], ctx.avals_out, aliases={1: 0},
                         side=_char("L" if left_side else "R"),
                         uplo=_char("L" if lower else "U"), trans_x=_char(trans),
                         diag=_char("U" if unit_diagonal else "N")))


# -- registration ------------------------------------------------------------------------------

register_lowering("qr", lower_fun(_qr_impl))
register_lowering("lu_pivots_to_permutation", lower_fun(_pivots_to_permutation))
for _prim, _rule in {
        "geqrf": _geqrf_cpu, "geqp3": _geqp3_cpu,
        "householder_product": _householder_product_cpu, "ormqr": _ormqr_cpu,
        "eigh": _eigh_cpu, "svd": _svd_cpu, "eig": _eig_cpu, "schur": _schur_cpu,
        "hessenberg": _hessenberg_cpu, "tridiagonal": _tridiagonal_cpu,
        "tridiagonal_solve": _tridiagonal_solve_cpu, "lu": _lu_cpu,
        "cholesky": _cholesky_cpu, "triangular_solve": _triangular_solve_cpu}.items():
    register_lowering(_prim, _rule, platform="cpu")
