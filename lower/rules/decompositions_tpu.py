"""Linear-algebra decompositions lowered for TPU as jax 0.10.2 lowers them.

XLA expands some decompositions itself from custom calls that name them (api_version 1 or 2,
an empty or string ``backend_config``): ``Qr`` (geqrf),
``ProductOfElementaryHouseholderReflectors`` (householder_product) and ``Eigh`` (a one-sided
Jacobi eigensolver) are expanded by every XLA compiler, XLA:CPU's too; ``LuDecomposition``
(lu) by XLA:TPU alone. ``ormqr`` and ``tridiagonal_solve`` are loops written against
``lower.lax`` (reflectors applied one at a time; the Thomas algorithm as two scans).
``svd`` is in ``lower.rules.polar``.

jax's ``eigh`` on TPU is QDWH-based: matrices up to 256 columns (the size at which its
spectral divide and conquer stops dividing) go to ``Eigh`` directly; larger ones (and subsets
of eigenvalues) to that divide and conquer, in ``lower.rules.eigh_tpu``.

jax registers the geqrf, householder_product, ormqr, tridiagonal_solve and svd rules for
every platform, but CUDA and ROCm have their own there (cuSOLVER and cuSPARSE targets in
jax's GPU plugins: ``decompositions_gpu``): these rules are registered for TPU alone.
"""

from __future__ import annotations

import numpy as np

from mhlo_ir.builder import as_results

from .. import lax as L
from ..lax.linalg import _conj
from ..mlir import aval_to_ir_type, lower_fun, register_lowering
from .decompositions import _name
from .eigh_tpu import TERMINATION_SIZE as EIGH_TERMINATION_SIZE
from .eigh_tpu import eigh_qdwh

# The Jacobi solver's sweep limit and tolerance, as jax writes them into "Eigh"'s config.
_JACOBI_MAX_SWEEPS, _JACOBI_TOL = 100, "1e-6"


def _expanded_call(ctx, target: str, operands, *, api_version: int = 1, config: str = ""):
    """A custom call that XLA's compiler expands (no runtime target): the results are the
    equation's outputs."""
    return as_results(ctx.builder.custom_call(
        target, list(operands), [aval_to_ir_type(a) for a in ctx.avals_out],
        backend_config=config, api_version=api_version))


def _geqrf(ctx, a):
    return list(_expanded_call(ctx, "Qr", [a]))


def _householder_product(ctx, a, taus):
    return list(_expanded_call(ctx, "ProductOfElementaryHouseholderReflectors", [a, taus]))


def _lu_tpu(ctx, x):
    return list(_expanded_call(ctx, "LuDecomposition", [x], api_version=2))


# -- eigh on TPU ------------------------------------------------------------------------------

def _jacobi_eigh(ctx, x, *, lower: bool, sort_eigenvalues: bool):
    """``[v, w]`` from XLA's Jacobi eigensolver; its config is "lower,sort,sweeps,tol"."""
    if ctx.avals_in[0].shape[-1] == 0:
        return lower_fun(_empty_eigh)(ctx, x)
    config = f"{int(bool(lower))},{int(bool(sort_eigenvalues))},{_JACOBI_MAX_SWEEPS},{_JACOBI_TOL}"
    return list(_expanded_call(ctx, "Eigh", [x], config=config))


def _empty_eigh(x):
    w = L.reshape(x, x.shape[:-1])
    return x, (L.real(w) if x.dtype.kind == "c" else w)


def _batched(mask, shape):
    return L.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))


def _eigh_tpu(ctx, x, *, lower, sort_eigenvalues, subset_by_index, algorithm=None):
    algorithm = _name(algorithm) or "QDWH"
    n = ctx.avals_in[0].shape[-1]
    whole = subset_by_index is None or tuple(subset_by_index) == (0, n)
    if algorithm == "QR":
        raise NotImplementedError("eigh: the QR algorithm is not supported on TPU")
    if algorithm == "JACOBI":
        if not whole:
            raise NotImplementedError("eigh: subset_by_index with the JACOBI algorithm is not "
                                      "supported on TPU (use the default, QDWH)")
        return _jacobi_eigh(ctx, x, lower=lower, sort_eigenvalues=sort_eigenvalues)
    if algorithm != "QDWH":
        raise ValueError(f"eigh: unknown algorithm {algorithm}")
    if n <= EIGH_TERMINATION_SIZE and whole:
        return _jacobi_eigh(ctx, x, lower=lower, sort_eigenvalues=sort_eigenvalues)
    return lower_fun(eigh_qdwh)(ctx, x, lower=lower, sort_eigenvalues=sort_eigenvalues,
                                subset_by_index=None if subset_by_index is None else
                                tuple(subset_by_index))


# -- ormqr -------------------------------------------------------------------------------------

def _ormqr(a, taus, c, *, left, transpose):
    """``Q @ c`` (and the other three products) from geqrf's reflectors, one reflector
    ``H_i = I - tau_i v_i v_i^H`` at a time, as jax's generic rule (its dots at HIGHEST)."""
    *batch, m, _ = a.shape
    k = taus.shape[-1]
    nb = len(batch)
    cplx = a.dtype.kind == "c"
    # The reflectors: below the diagonal of a's first k columns, with a unit diagonal.
    rows = L.iota(a, np.int32, (m, k), 0)
    cols = L.iota(a, np.int32, (m, k), 1)
    v_all = L.slice(a, (0,) * (nb + 2), (*batch, m, k))
    v_all = L.where(_batched(L.gt(rows, cols), (*batch, m, k)), v_all, 0)
    v_all = L.add(v_all, _batched(L.convert_element_type(L.eq(rows, cols), a.dtype),
                                  (*batch, m, k)))
    t_all = _conj(taus) if (transpose and cplx) else taus
    backwards = left != transpose  # Q c and c Q^H take the reflectors last to first
    bdims = tuple(range(nb))

    def body(i, c):
        j = (k - 1) - i if backwards else i
        v = L.reshape(L.dynamic_slice(v_all, [0] * (nb + 1) + [j], (*batch, m, 1),
                                      allow_negative_indices=False), (*batch, m))
        tau = L.dynamic_slice(t_all, [0] * nb + [j], (*batch, 1), allow_negative_indices=False)
        vh = _conj(v) if cplx else v
        if left:  # c - tau v (v^H c)
            w = L.dot_general(vh, c, (((nb,), (nb,)), (bdims, bdims)), precision="HIGHEST")
            update = L.mul(L.broadcast_in_dim(v, c.shape, (*bdims, nb)),
                           L.broadcast_in_dim(w, c.shape, (*bdims, nb + 1)))
        else:  # c - tau (c v) v^H
            w = L.dot_general(c, v, (((nb + 1,), (nb,)), (bdims, bdims)), precision="HIGHEST")
            update = L.mul(L.broadcast_in_dim(w, c.shape, (*bdims, nb)),
                           L.broadcast_in_dim(vh, c.shape, (*bdims, nb + 1)))
        tau = L.broadcast_in_dim(tau, c.shape, (*bdims, nb + 1))
        return L.sub(c, L.mul(tau, update))
    return L.fori_loop(0, k, body, c)


# -- tridiagonal_solve ---------------------------------------------------------------------

def _to_front(x, axis: int):
    perm = (axis, *[d for d in range(x.ndim) if d != axis])
    return L.transpose(x, perm)


def _from_front(x, axis: int):
    perm = list(range(1, x.ndim))
    perm.insert(axis, 0)
    return L.transpose(x, tuple(perm))


def thomas_tridiagonal_solve(dl, d, du, b, *, perturb_singular):
    """The Thomas algorithm (no pivoting) as jax's generic rule: a forward scan eliminating
    the sub-diagonal, a reverse scan substituting back. The systems' axis is scanned over;
    batch members ride along in the carry."""
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not supported "
                                  "on this platform")
    nb = dl.ndim - 1
    m = dl.shape[-1]
    if m == 0:
        return b
    lower_d, diag, upper_d = (_to_front(x, nb) for x in (dl, d, du))
    rhs = _to_front(b, nb)  # (m, *batch, k)
    shape = rhs.shape[1:]

    def col(x):  # a (*batch) value against a (*batch, k) one
        return L.broadcast_in_dim(x, shape, tuple(range(nb)))

    def first(x):
        return L.reshape(L.slice(x, (0,) * x.ndim, (1, *x.shape[1:])), x.shape[1:])

    def rest(x):
        return L.slice(x, (1,) + (0,) * (x.ndim - 1), x.shape)

    def forward(carry, xs):
        cp, dp = carry
        a, bd, c, r = xs
        denom = L.sub(bd, L.mul(a, cp))
        cp_next = L.div(c, denom)
        dp_next = L.div(L.sub(r, L.mul(col(a), dp)), col(denom))
        return (cp_next, dp_next), (cp, dp)

    d0 = first(diag)
    init = (L.div(first(upper_d), d0), L.div(first(rhs), col(d0)))
    (_, last), (cps, dps) = L.scan(
        forward, init, (rest(lower_d), rest(diag), rest(upper_d), rest(rhs)), unroll=32)

    def backward(x_next, xs):
        cp, dp = xs
        return L.sub(dp, L.mul(col(cp), x_next)), x_next

    x0, xs = L.scan(backward, last, (cps, dps), unroll=32, reverse=True)
    x = L.concatenate([L.reshape(x0, (1, *shape)), xs], 0)
    return _from_front(x, nb)


# -- registration ------------------------------------------------------------------------------

# jax registers all but lu's and eigh's for every platform, but CUDA and ROCm have their own
# (cuSOLVER, cuSPARSE: decompositions_gpu.py).
for _prim, _rule in {
        "geqrf": _geqrf, "householder_product": _householder_product,
        "ormqr": lower_fun(_ormqr, multiple_results=False),
        "tridiagonal_solve": lower_fun(thomas_tridiagonal_solve, multiple_results=False),
        "lu": _lu_tpu, "eigh": _eigh_tpu}.items():
    register_lowering(_prim, _rule, platform="tpu")
