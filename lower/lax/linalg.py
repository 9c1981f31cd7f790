"""Front end for the linear-algebra decompositions: jax.lax.linalg's functions, recording jax
0.10's primitives with their params (``qr``, ``geqrf``, ``householder_product``, ``eigh``,
``svd``, ``lu``, ``lu_pivots_to_permutation``, ``eig``, ``schur``, ``hessenberg``,
``tridiagonal``, ``tridiagonal_solve``, ``ormqr``, ``geqp3``).

Every primitive works on a batch of matrices ``[..., m, n]``. Where jax's wrapper does more
than bind (``eigh`` symmetrizes its input, ``svd`` reorders its results) this one does the same
thing, so a function traced here gives the jaxpr JAX's own tracing gives.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..core import ShapedArray
from ..tracing import Tracer, add, bind, div, transpose

__all__ = ["eig", "eigh", "geqp3", "geqrf", "hessenberg", "householder_product", "lu",
           "lu_pivots_to_permutation", "ormqr", "qr", "schur", "svd", "symmetrize", "tridiagonal",
           "tridiagonal_solve"]


def _real_dtype(dtype) -> np.dtype:
    return np.empty((), dtype).real.dtype


def _complex_dtype(dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


def _aval(x: Tracer, shape, dtype=None) -> ShapedArray:
    return ShapedArray(shape, x.dtype if dtype is None else dtype)


def _matrix(x: Tracer, what: str):
    if x.ndim < 2:
        raise ValueError(f"{what} takes a batch of matrices [..., m, n], got shape {x.shape}")
    return x.shape[:-2], x.shape[-2], x.shape[-1]


def _square(x: Tracer, what: str):
    batch, m, n = _matrix(x, what)
    if m != n:
        raise ValueError(f"{what} takes square matrices, got shape {x.shape}")
    return batch, n


def _conj(x: Tracer) -> Tracer:
    return bind("conj", [x], [x.aval], input_dtype=x.dtype)


def _complex(re: Tracer, im: Tracer) -> Tracer:
    """``re + i im`` (jax's lax.complex), of the complex type of ``re``'s precision."""
    return bind("complex", [re, im], [ShapedArray(re.shape, _complex_dtype(re.dtype))])


def _adjoint(x: Tracer) -> Tracer:
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    xt = transpose(x, perm)
    return _conj(xt) if x.dtype.kind == "c" else xt


def symmetrize(x: Tracer) -> Tracer:
    """``(x + x^H) / 2``, as jax.lax.linalg.symmetrize computes it."""
    return div(add(x, _adjoint(x)), 2)


# -- QR ----------------------------------------------------------------------------------------

def geqrf(a: Tracer):
    """``(a, taus)``: R in the upper triangle of ``a``, Householder reflectors below it."""
    batch, m, n = _matrix(a, "geqrf")
    return tuple(bind("geqrf", [a], [a.aval, _aval(a, (*batch, builtins.min(m, n)))],
                      multiple_results=True))


def geqp3(a: Tracer, jpvt: Tracer, *, use_magma=None):
    """Column-pivoted QR: ``(a, jpvt, taus)`` with 1-based pivots in ``jpvt``."""
    batch, m, n = _matrix(a, "geqp3")
    return tuple(bind("geqp3", [a, jpvt],
                      [a.aval, jpvt.aval, _aval(a, (*batch, builtins.min(m, n)))],
                      multiple_results=True, use_magma=use_magma))


def householder_product(a: Tracer, taus: Tracer) -> Tracer:
    """The product of the elementary reflectors in ``a`` and ``taus`` (LAPACK's orgqr)."""
    _, m, n = _matrix(a, "householder_product")
    if m < n:
        raise ValueError(f"householder_product needs at least as many rows as columns, got "
                         f"shape {a.shape}")
    return bind("householder_product", [a, taus], [a.aval])


def ormqr(a: Tracer, taus: Tracer, c: Tracer, *, left: bool = True,
          transpose: bool = False) -> Tracer:
    """``Q @ c``, ``Q^H @ c``, ``c @ Q`` or ``c @ Q^H`` without forming Q."""
    return bind("ormqr", [a, taus, c], [c.aval], left=bool(left), transpose=bool(transpose))


def qr(x: Tracer, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """``(q, r)``, or ``(q, r, p)`` with column pivots ``p`` when ``pivoting``."""
    batch, m, n = _matrix(x, "qr")
    k = m if full_matrices else builtins.min(m, n)
    out = [_aval(x, (*batch, m, k)), _aval(x, (*batch, k, n))]
    if pivoting:
        out.append(_aval(x, (*batch, n), np.int32))
    return tuple(bind("qr", [x], out, multiple_results=True, pivoting=bool(pivoting),
                      full_matrices=bool(full_matrices), use_magma=use_magma))


# -- eigen and singular values -------------------------------------------------------------

def eigh(x: Tracer, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None, algorithm=None):
    """``(v, w)``: eigenvectors (columns) and ascending real eigenvalues of a Hermitian
    matrix, reading its ``lower`` (or upper) triangle."""
    batch, n = _square(x, "eigh")
    if symmetrize_input:
        x = symmetrize(x)
    d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    v, w = bind("eigh", [x], [_aval(x, (*batch, n, d)),
                              _aval(x, (*batch, d), _real_dtype(x.dtype))],
                multiple_results=True, lower=bool(lower), sort_eigenvalues=sort_eigenvalues,
                subset_by_index=subset_by_index, algorithm=algorithm)
    return v, w


def svd(x: Tracer, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index=None, algorithm=None):
    """``(u, s, vh)`` (or ``s`` alone without ``compute_uv``); the primitive records
    ``(s, u, vh)``, as JAX's does."""
    batch, m, n = _matrix(x, "svd")
    rank = builtins.min(m, n)
    if subset_by_index is not None:
        rank = builtins.min(rank, subset_by_index[1] - subset_by_index[0])
    out = [_aval(x, (*batch, rank), _real_dtype(x.dtype))]
    if compute_uv:
        out += [_aval(x, (*batch, m, m if full_matrices else rank)),
                _aval(x, (*batch, n if full_matrices else rank, n))]
    res = bind("svd", [x], out, multiple_results=True, full_matrices=bool(full_matrices),
               compute_uv=bool(compute_uv), subset_by_index=subset_by_index,
               algorithm=algorithm)
    if not compute_uv:
        return res[0]
    s, u, vh = res
    return u, s, vh


def eig(x: Tracer, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation=None):
    """``[w, vl?, vr?]``: complex eigenvalues and left/right eigenvectors (columns)."""
    batch, n = _square(x, "eig")
    ct = _complex_dtype(x.dtype)
    count = 1 + bool(compute_left_eigenvectors) + bool(compute_right_eigenvectors)
    out = [_aval(x, (*batch, n), ct)] + [_aval(x, (*batch, n, n), ct)] * (count - 1)
    return bind("eig", [x], out, multiple_results=True,
                compute_left_eigenvectors=bool(compute_left_eigenvectors),
                compute_right_eigenvectors=bool(compute_right_eigenvectors),
                enable_eigvec_derivs=bool(enable_eigvec_derivs), implementation=implementation)


def schur(x: Tracer, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
    """``(t, z)`` (or ``(t,)``) with ``x = z t z^H``, ``t`` (quasi-)upper triangular."""
    _square(x, "schur")
    out = [x.aval, x.aval] if compute_schur_vectors else [x.aval]
    return tuple(bind("schur", [x], out, multiple_results=True,
                      compute_schur_vectors=bool(compute_schur_vectors),
                      sort_eig_vals=bool(sort_eig_vals), select_callable=select_callable))


def hessenberg(a: Tracer):
    """``(a, taus)``: the upper Hessenberg form and its reflectors (LAPACK's gehrd)."""
    batch, n = _square(a, "hessenberg")
    return tuple(bind("hessenberg", [a], [a.aval, _aval(a, (*batch, n - 1))],
                      multiple_results=True))


def tridiagonal(a: Tracer, *, lower: bool = True):
    """``(a, d, e, taus)``: reduction of a Hermitian matrix to real tridiagonal form."""
    batch, n = _square(a, "tridiagonal")
    rt = _real_dtype(a.dtype)
    return tuple(bind("tridiagonal", [a],
                      [a.aval, _aval(a, (*batch, n), rt), _aval(a, (*batch, n - 1), rt),
                       _aval(a, (*batch, n - 1))], multiple_results=True, lower=bool(lower)))


def tridiagonal_solve(dl: Tracer, d: Tracer, du: Tracer, b: Tracer, *,
                      perturb_singular: bool = False) -> Tracer:
    """Solve the tridiagonal system (sub-, main and super-diagonals ``dl``, ``d``, ``du``;
    ``dl[..., 0]`` and ``du[..., -1]`` unused) for the right-hand sides ``b[..., m, k]``."""
    return bind("tridiagonal_solve", [dl, d, du, b], [b.aval],
                perturb_singular=bool(perturb_singular))


# -- LU ----------------------------------------------------------------------------------------

def lu(x: Tracer):
    """``(lu, pivots, permutation)``: ``x[..., permutation, :] == L @ U``, L unit lower
    triangular below the diagonal of ``lu``, U on and above it."""
    batch, m, n = _matrix(x, "lu")
    return tuple(bind("lu", [x], [x.aval, _aval(x, (*batch, builtins.min(m, n)), np.int32),
                                  _aval(x, (*batch, m), np.int32)], multiple_results=True))


def lu_pivots_to_permutation(pivots: Tracer, permutation_size: int) -> Tracer:
    """The permutation that LAPACK-style row swaps (``pivots``, 0-based) perform."""
    if permutation_size < pivots.shape[-1]:
        raise ValueError(f"permutation_size {permutation_size} is smaller than the number "
                         f"of pivots {pivots.shape[-1]}")
    return bind("lu_pivots_to_permutation", [pivots],
                [_aval(pivots, (*pivots.shape[:-1], permutation_size), np.int32)],
                permutation_size=int(permutation_size))

