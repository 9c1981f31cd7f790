"""Rules for sort (several operands, ``num_keys`` keys), top_k, argmax, argmin and
approx_top_k (jax's ApproxTopK custom call, which XLA:CPU runs exactly).

Orders follow JAX's: sort's comparator is jax's (-0.0 equal to 0.0, NaNs last, but first for
the FNUZ float8 types, whose NaN has the sign bit; complex numbers lexicographically);
argmax/argmin return the first extremum, and the first NaN if there is one (for complex
numbers, which jax.jit refuses to lower, numpy's lexicographic order; a NaN is one with a NaN
part).
"""

from __future__ import annotations

import functools

import numpy as np

import mhlo_ir as hlo

from mhlo_ir.builder import as_results

from ..constants import aval_to_ir_type
from ..semantics import compare_hlo, highest, lowest, total_order_compare
from ..mlir import register_lowering


def _canonical(r, x):
    """jax's ``_canonicalize_float_for_sort``: -0.0 made 0.0, every NaN the type's own NaN
    (what ``np.nan`` is in it: negative for the FNUZ float8 types, which then sort first),
    so that the total order below ranks equal values equal."""
    dtype = x.type.element_type.dtype
    zero = np.array(0, dtype)  # (jax's _zero: 0xFF in f8E8M0FNU, which has no zero; a
    #      constant per use, in jax's order: its text, op for op)
    result = r.select(compare_hlo(r, x, r.constant(zero), "EQ"), r.constant(zero), x)
    is_nan = compare_hlo(r, x, x, "NE")
    return r.select(is_nan, r.constant(np.array(np.nan, dtype)), result)


def _keys(r, x):
    """A key operand as the scalars jax's sort comparator orders by (``_operands_to_keys``):
    floats canonical, complex numbers their canonical real and imaginary parts."""
    kind = x.type.element_type.kind
    if kind == "complex":
        return [_canonical(r, r.real(x)), _canonical(r, r.imag(x))]
    return [_canonical(r, x)] if kind == "float" else [x]


def _sort(ctx, *operands, dimension, is_stable, num_keys=1):
    """jax's sort, comparator op for op (``_sort_lt_comparator``): the keys canonicalized,
    then compared lexicographically in the total order (NaNs last but for the FNUZ types,
    -0.0 equal to 0.0)."""
    def comparator(r, *args):
        xs, ys = [], []
        for x, y in list(zip(args[0::2], args[1::2]))[:num_keys]:
            xs += _keys(r, x)
            ys += _keys(r, y)
        p = None
        for x, y in zip(reversed(xs), reversed(ys)):  # the first key decides, then the next
            lt = total_order_compare(r, x, y, "LT")
            p = lt if p is None else r.or_(lt, r.and_(total_order_compare(r, x, y, "EQ"), p))
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


# -- approx_top_k: jax's ApproxTopK custom call ---------------------------------------------

def _approx_top_k(ctx, x, *, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk, fallback=True):
    """jax's program: an ``ApproxTopK`` custom call of the operand, an iota of indices along
    the dimension, the init value (-inf for max-k, inf for min-k) and -1, calling a new
    comparator function of the values alone, its parameters in ``mhlo.backend_config``
    (``is_fallback`` everywhere but on TPU, where XLA runs the approximate algorithm).
    XLA:CPU expands the fallback into an unstable sort whose order ties and NaNs take, and
    k=1 into a reduction, which gives the last of tied values (a sort and a slice written
    out gave the first: a review against jax.jit, 2026-12-07)."""
    b = ctx.builder
    shape = x.type.shape
    dim = reduction_dimension % len(shape)
    et = x.type.element_type
    scalar, index = hlo.tensor((), et), hlo.tensor((), hlo.i32)
    name = f"top_k_{'gt' if is_max_k else 'lt'}_{et.name}_comparator"
    comparator = ctx.module_context.module.add_function(
        name, [scalar, scalar, index, index], [hlo.tensor((), hlo.i1)])
    cb = comparator.builder()
    p, q = comparator.arguments[:2]
    cb.return_(cb.compare(p, q, "GT" if is_max_k else "LT"))
    idx = b.iota(shape, hlo.i32, dim)
    none = b.constant(np.int32(-1))
    init = b.constant(np.array(-np.inf if is_max_k else np.inf, et.dtype))
    config = {"aggregate_to_topk": bool(aggregate_to_topk),
              "recall_target": hlo.FloatAttr(float(recall_target), hlo.f32),
              "reduction_dim": hlo.IntegerAttr(dim, hlo.i64),
              "reduction_input_size_override": hlo.IntegerAttr(
                  int(reduction_input_size_override), hlo.i64),
              "top_k": hlo.IntegerAttr(int(k), hlo.i64)}
    if fallback:
        config["is_fallback"] = True
    out_types = [aval_to_ir_type(a) for a in ctx.avals_out]
    vals, ids = b.custom_call("ApproxTopK", [x, idx, init, none],
                              out_types, backend_config="",
                              called_computations=[comparator.name])
    vals.owner.set_attr("mhlo.backend_config", config)
    return [vals, ids]


register_lowering("approx_top_k", _approx_top_k)
register_lowering("approx_top_k", functools.partial(_approx_top_k, fallback=False),
                  platform="tpu")
