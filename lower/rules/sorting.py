"""Rules for sort (several operands, ``num_keys`` keys), top_k, argmax, argmin and
approx_top_k (exact: a sort with the indices carried along, as jax's CPU fallback).

Orders follow JAX's: floats sort with NaNs last and -0.0 equal to 0.0 (a strict weak order, so
stable sorts keep ties in place); complex numbers lexicographically; argmax/argmin return the
first extremum, and the first NaN if there is one (for complex numbers, which JAX does not
lower, numpy's lexicographic order; a NaN is one with a NaN part).
"""

from __future__ import annotations

import numpy as np

from mhlo_ir.builder import as_results
from mhlo_ir.dtypes import from_numpy

from ..semantics import compare_hlo, highest, lowest
from ..mlir import register_lowering


def _lt_eq(r, x, y):
    """(x < y, x == y) as i1 scalars under the sort's total order."""
    kind = x.type.element_type.kind
    if kind == "complex":
        lt_re, eq_re = _lt_eq(r, r.real(x), r.real(y))
        lt_im, eq_im = _lt_eq(r, r.imag(x), r.imag(y))
        return r.or_(lt_re, r.and_(eq_re, lt_im)), r.and_(eq_re, eq_im)
    lt, eq = compare_hlo(r, x, y, "LT"), compare_hlo(r, x, y, "EQ")
    if kind != "float":
        return lt, eq
    x_nan, y_nan = compare_hlo(r, x, x, "NE"), compare_hlo(r, y, y, "NE")
    return (r.or_(lt, r.and_(y_nan, r.not_(x_nan))), r.or_(eq, r.and_(x_nan, y_nan)))


def _sort(ctx, *operands, dimension, is_stable, num_keys=1):
    def comparator(r, *args):
        pairs = list(zip(args[0::2], args[1::2]))[:num_keys]
        p = None
        for x, y in reversed(pairs):  # lexicographic: the first key decides, then the next
            lt, eq = _lt_eq(r, x, y)
            p = lt if p is None else r.or_(lt, r.and_(eq, p))
        return p
    return list(as_results(ctx.builder.sort(list(operands), comparator, int(dimension),
                                            bool(is_stable))))


register_lowering("sort", _sort)


def _top_k(ctx, x, *, k, axis=None):
    """chlo.top_k works on the last dimension: swap ``axis`` there and back."""
    b = ctx.builder
    rank = len(ctx.avals_in[0].shape)
    axis = rank - 1 if axis is None else axis % rank
    if axis == rank - 1:
        return list(b.chlo_top_k(x, int(k)))
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    values, indices = b.chlo_top_k(b.transpose(x, perm), int(k))
    return [b.transpose(values, perm), b.transpose(indices, perm)]


register_lowering("top_k", _top_k)


def _identity(dtype, kind):
    """The start of an argmax (the least value) or argmin (the greatest); for complex
    numbers, in both parts."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        part = _identity(np.finfo(dtype).dtype, kind)
        return np.array(complex(part, part), dtype)
    return lowest(dtype) if kind == "argmax" else highest(dtype)


def _argminmax(kind):
    direction = "GT" if kind == "argmax" else "LT"

    def rule(ctx, x, *, axes, index_dtype):
        b = ctx.builder
        (axis,) = axes
        aval = ctx.avals_in[0]
        idx_dtype = np.dtype(index_dtype)
        elem_kind = x.type.element_type.kind

        def body(r, acc_v, acc_i, v, i):
            # Whether (v, i) beats (acc_v, acc_i): a total order, so the reduction's result
            # does not depend on the order XLA combines in. Complex numbers compare
            # lexicographically (real part, then imaginary), as numpy orders them.
            if elem_kind == "complex":
                re_v, re_a, im_v, im_a = r.real(v), r.real(acc_v), r.imag(v), r.imag(acc_v)
                better = r.or_(compare_hlo(r, re_v, re_a, direction),
                               r.and_(compare_hlo(r, re_v, re_a, "EQ"),
                                      compare_hlo(r, im_v, im_a, direction)))
            else:
                better = compare_hlo(r, v, acc_v, direction)
            tie = compare_hlo(r, v, acc_v, "EQ")
            if elem_kind in ("float", "complex"):
                v_nan, a_nan = compare_hlo(r, v, v, "NE"), compare_hlo(r, acc_v, acc_v, "NE")
                better = r.or_(better, r.and_(v_nan, r.not_(a_nan)))
                tie = r.or_(tie, r.and_(v_nan, a_nan))
            pick = r.or_(better, r.and_(tie, compare_hlo(r, i, acc_i, "LT")))
            return [r.select(pick, v, acc_v), r.select(pick, i, acc_i)]

        iota = b.iota(aval.shape, idx_dtype, axis)
        inits = [b.constant(_identity(aval.dtype, kind)), b.constant(np.zeros((), idx_dtype))]
        _, index = b.reduce([x, iota], inits, [axis], body)
        return [index]
    rule.__name__ = f"_{kind}_lowering"
    return rule


register_lowering("argmax", _argminmax("argmax"))
register_lowering("argmin", _argminmax("argmin"))


# -- approx_top_k: exact, as jax's CPU fallback --------------------------------------------------

def _approx_top_k(ctx, x, *, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
    """Exact: the (floating) operand sorted along the dimension (largest first for max-k),
    indices carried along, then the first ``out`` entries (``k``, or the aval's size when
    not aggregated). Ties keep the lower index first (a stable sort), as ``top_k`` does;
    jax's fallback leaves their order unspecified."""
    b = ctx.builder
    shape = x.type.shape
    dim = reduction_dimension % len(shape)
    idx = b.iota(shape, from_numpy(np.dtype(np.int32)), dim)
    direction = "GT" if is_max_k else "LT"
    vals, ids = b.sort([x, idx], lambda r, p, q, _i, _j: r.compare(p, q, direction, "FLOAT"),
                       dim, True)
    n = ctx.avals_out[0].shape[dim]
    limit = list(shape)
    limit[dim] = n
    start = [0] * len(shape)
    return [b.slice(vals, start, limit), b.slice(ids, start, limit)]


register_lowering("approx_top_k", _approx_top_k)
