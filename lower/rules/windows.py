"""Rules for reductions whose combiner is a region: the generic ``reduce`` and
``reduce_window`` (the reducer is a jaxpr), ``reduce_window_{sum,max,min}``, and the pooling
gradients ``select_and_scatter`` / ``select_and_scatter_add`` (max-pool VJP) and
``select_and_gather_add`` (max-pool JVP).

XLA does not let these regions read values defined outside them (MLIR's verifier does), so a
reducer jaxpr is lowered inside its region with its constants rebuilt there.

NOTE: XLA aborts the process (a failed CHECK in SelectAndScatterExpander, jaxlib 0.10.2; jax's
own lowering hits it too) on a select_and_scatter of rank 0, so scalars go through a
one-element window of rank 1.
"""

from __future__ import annotations

import itertools

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.builder import as_results

from ..semantics import (MONOIDS, compare_hlo, full_like, highest, lowest, monoid,
                         monoid_identity)
from ..mlir import TokenSet, ir_constants, jaxpr_subcomp, register_lowering


def jaxpr_region(ctx, jaxpr, consts=()):
    """A region body (``body(r, *scalars) -> values``) lowering ``jaxpr`` (a Jaxpr, or a
    ClosedJaxpr whose consts come first) on the region's block arguments."""
    if hasattr(jaxpr, "jaxpr"):
        consts = [*jaxpr.consts, *consts]
        jaxpr = jaxpr.jaxpr
    if getattr(jaxpr, "effects", None):
        raise NotImplementedError(f"{ctx.primitive.name}: a reducer with effects "
                                  f"({set(jaxpr.effects)}) cannot be a region")

    def body(r, *args):
        # In the region: constants from outside would be values it may not read.
        cvals = [ir_constants(r, c) for c in consts]
        outs, _ = jaxpr_subcomp(ctx.module_context, r, jaxpr, TokenSet(), cvals,
                                *[(a,) for a in args])
        return [v for o in outs for v in o]
    return body


def _pairs(padding) -> list:
    return [(int(lo), int(hi)) for lo, hi in padding]


def _ints(xs):
    return None if xs is None else [int(x) for x in xs]


# -- reduce -----------------------------------------------------------------------------------

def _reduce(ctx, *operands_and_inits, computation=None, jaxpr, dimensions):
    n = len(operands_and_inits) // 2
    ops, inits = list(operands_and_inits[:n]), list(operands_and_inits[n:])
    return list(as_results(ctx.builder.reduce(ops, inits, _ints(dimensions),
                                              jaxpr_region(ctx, jaxpr))))


register_lowering("reduce", _reduce)


# -- reduce_window ---------------------------------------------------------------------------

def _reduce_window(ctx, *operands_and_inits, jaxpr, consts, window_dimensions, window_strides,
                   padding, base_dilation, window_dilation):
    n = len(operands_and_inits) // 2
    ops, inits = list(operands_and_inits[:n]), list(operands_and_inits[n:])
    return list(as_results(ctx.builder.reduce_window(
        ops, inits, _ints(window_dimensions), jaxpr_region(ctx, jaxpr, consts),
        window_strides=_ints(window_strides), base_dilations=_ints(base_dilation),
        window_dilations=_ints(window_dilation), padding=_pairs(padding))))


register_lowering("reduce_window", _reduce_window)

def _monoid_reduce_window(kind):
    """reduce_window_{sum,max,min}: the monoid's identity is the init, and what padding and
    base-dilation holes hold."""
    def rule(ctx, x, *, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
        b = ctx.builder
        init = b.constant(monoid_identity(kind, ctx.avals_in[0].dtype))
        return [b.reduce_window(x, init, _ints(window_dimensions),
                                monoid(kind, x.type.element_type),
                                window_strides=_ints(window_strides),
                                base_dilations=_ints(base_dilation),
                                window_dilations=_ints(window_dilation),
                                padding=_pairs(padding))]
    rule.__name__ = f"_reduce_window_{kind}_lowering"
    return rule


for _kind in ("sum", "max", "min"):
    register_lowering(f"reduce_window_{_kind}", _monoid_reduce_window(_kind))


# -- pooling gradients ------------------------------------------------------------------------

_DIRECTIONS = {"ge": "GE", "le": "LE", "gt": "GT", "lt": "LT"}


def _direction(select_prim) -> str:
    """The comparison a select_prim (JAX's ge_p/le_p, ours, or its name) makes."""
    name = getattr(select_prim, "name", select_prim)
    if name not in _DIRECTIONS:
        raise NotImplementedError(f"select_prim {name!r}: expected one of "
                                  f"{', '.join(_DIRECTIONS)}")
    return _DIRECTIONS[name]


def _never_selected(dtype, direction):
    """A value no element loses to: what padding must hold so it is never picked."""
    return lowest(dtype) if direction in ("GE", "GT") else highest(dtype)


def _select_and_scatter_op(b, operand, source, init, select, scatter, dims, strides,
                           padding):
    """``b.select_and_scatter``; a scalar is one window of one element of rank 1 (rank 0
    aborts XLA, see above)."""
    if operand.type.shape:
        return b.select_and_scatter(operand, source, init, select, scatter,
                                    window_dimensions=dims, window_strides=strides,
                                    padding=padding)
    out = b.select_and_scatter(b.reshape(operand, (1,)), b.reshape(source, (1,)), init, select,
                               scatter, window_dimensions=[1], window_strides=[1])
    return b.reshape(out, ())


def _select_and_scatter(ctx, operand, source, init_value, *, select_jaxpr, select_consts,
                        scatter_jaxpr, scatter_consts, window_dimensions, window_strides,
                        padding):
    return [_select_and_scatter_op(
        ctx.builder, operand, source, init_value, jaxpr_region(ctx, select_jaxpr, select_consts),
        jaxpr_region(ctx, scatter_jaxpr, scatter_consts), _ints(window_dimensions),
        _ints(window_strides), _pairs(padding))]


register_lowering("select_and_scatter", _select_and_scatter)


def _select_and_scatter_add(ctx, source, operand, *, select_prim, window_dimensions,
                            window_strides, padding):
    """Each window's selected operand element (the first max for ``ge``) receives the
    window's source value; contributions add up.

    Positive padding is made explicit: the operand is padded with a value that is never
    selected, and the result sliced back. XLA's CPU and GPU backends have crashed on padded
    select_and_scatter (JAX does the same for them); any negative padding stays on the op."""
    b = ctx.builder
    direction = _direction(select_prim)
    shape = ctx.avals_in[1].shape
    pads = _pairs(padding)
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
    if any(lo or hi for lo, hi in grow):
        fill = b.constant(_never_selected(ctx.avals_in[1].dtype, direction))
        operand = b.pad(operand, fill, [lo for lo, _ in grow], [hi for _, hi in grow],
                        [0] * len(shape))
    rest = [(min(lo, 0), min(hi, 0)) for lo, hi in pads]
    zero = b.constant(np.zeros((), ctx.avals_in[0].dtype))
    # Booleans add up as jax's bitwise or.
    scatter = MONOIDS["or" if ctx.avals_in[0].dtype == np.bool_ else "sum"]
    out = _select_and_scatter_op(
        b, operand, source, zero, lambda r, x, y: compare_hlo(r, x, y, direction), scatter,
        _ints(window_dimensions), _ints(window_strides),
        rest if any(lo or hi for lo, hi in rest) else None)
    if any(lo or hi for lo, hi in grow):
        out = b.slice(out, [lo for lo, _ in grow], [lo + n for (lo, _), n in zip(grow, shape)])
    return [out]


register_lowering("select_and_scatter_add", _select_and_scatter_add)


def _select_and_gather_add(ctx, tangents, operand, *, select_prim, window_dimensions,
                           window_strides, padding, base_dilation, window_dilation):
    """For each window, the tangent at the operand element ``select_prim`` picks (the first
    max for ``ge``): one reduce_window over (operand, tangent) pairs that keeps the pair
    whose operand wins. Padding and base-dilation holes hold (never-selected, 0)."""
    b = ctx.builder
    direction = _direction(select_prim)
    inits = [b.constant(_never_selected(ctx.avals_in[1].dtype, direction)),
             b.constant(np.zeros((), ctx.avals_in[0].dtype))]

    def keep_winner(r, acc_x, acc_t, x, t):
        first = compare_hlo(r, acc_x, x, direction)
        return [r.select(first, acc_x, x), r.select(first, acc_t, t)]

    _, out = b.reduce_window(
        [operand, tangents], inits, _ints(window_dimensions), keep_winner,
        window_strides=_ints(window_strides), base_dilations=_ints(base_dilation),
        window_dilations=_ints(window_dilation), padding=_pairs(padding))
    return [out]


register_lowering("select_and_gather_add", _select_and_gather_add)

# XLA:CUDA has no variadic reduce_window (JAX's b/183233858), so for GPUs the (operand,
# tangent) pairs are folded without one: packed into one unsigned word of twice the width
# when both fit in 32 bits, else by an unrolled walk over the window's offsets. Both pick what
# the variadic form picks, starting from the same (never-selected, 0) pair.

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _gather_packed(b, tangents, operand, x_dtype, t_dtype, direction, dims, window):
    """One reduce_window over ``operand << bits | tangent`` words."""
    bits = 8 * x_dtype.itemsize
    word, double = np.dtype(_UINT[x_dtype.itemsize]), np.dtype(_UINT[2 * x_dtype.itemsize])

    def pack(x, t):
        hi = b.convert(b.bitcast_convert(x, word), double)
        lo = b.convert(b.bitcast_convert(t, word), double)
        return b.or_(b.shift_left(hi, full_like(b, bits, hi.type)), lo)

    def keep_winner(r, acc, w):
        def operand_part(v):
            high = r.shift_right_logical(v, r.constant(np.array(bits, double)))
            return r.bitcast_convert(r.convert(high, word), x_dtype)
        return r.select(compare_hlo(r, operand_part(acc), operand_part(w), direction), acc, w)

    init = pack(b.constant(_never_selected(x_dtype, direction)),
                b.constant(np.zeros((), t_dtype)))
    out = b.reduce_window(pack(operand, tangents), init, dims, keep_winner, **window)
    return b.bitcast_convert(b.convert(out, word), t_dtype)


def _gather_unrolled(b, tangents, operand, x_dtype, t_dtype, direction, dims, window,
                     out_shape):
    """Pad and dilate both arrays, then fold one strided slice per window offset, in the
    window's row-major order."""
    pads, strides = window["padding"], window["window_strides"]
    base, wdil = window["base_dilations"], window["window_dilations"]
    acc_x = full_like(b, _never_selected(x_dtype, direction), hlo.tensor(out_shape, x_dtype))
    acc_t = full_like(b, np.zeros((), t_dtype), hlo.tensor(out_shape, t_dtype))
    if 0 in out_shape or 0 in dims:
        return acc_t
    lo, hi = [p[0] for p in pads], [p[1] for p in pads]
    interior = [d - 1 for d in base]
    xp = b.pad(operand, b.constant(_never_selected(x_dtype, direction)), lo, hi, interior)
    tp = b.pad(tangents, b.constant(np.zeros((), t_dtype)), lo, hi, interior)
    steps = strides if any(st != 1 for st in strides) else None
    for offsets in itertools.product(*map(range, dims)):
        start = [k * d for k, d in zip(offsets, wdil)]
        limit = [s + (n - 1) * st + 1 for s, n, st in zip(start, out_shape, strides)]
        x, t = b.slice(xp, start, limit, steps), b.slice(tp, start, limit, steps)
        first = compare_hlo(b, acc_x, x, direction)
        acc_x, acc_t = b.select(first, acc_x, x), b.select(first, acc_t, t)
    return acc_t


def _packable(dtype) -> bool:
    """Numbers whose bits fill their storage, up to 32 of them: two fit one wider word."""
    et = hlo.from_numpy(dtype)
    return et.kind in ("float", "sint", "uint") and et.bits == 8 * dtype.itemsize <= 32


def _select_and_gather_add_gpu(ctx, tangents, operand, *, select_prim, window_dimensions,
                               window_strides, padding, base_dilation, window_dilation):
    b = ctx.builder
    direction = _direction(select_prim)
    x_dtype, t_dtype = np.dtype(ctx.avals_in[1].dtype), np.dtype(ctx.avals_in[0].dtype)
    rank = len(ctx.avals_in[1].shape)
    dims = _ints(window_dimensions)
    window = {"window_strides": _ints(window_strides) or [1] * rank,
              "base_dilations": _ints(base_dilation) or [1] * rank,
              "window_dilations": _ints(window_dilation) or [1] * rank,
              "padding": _pairs(padding)}
    if _packable(x_dtype) and _packable(t_dtype) and x_dtype.itemsize == t_dtype.itemsize:
        return [_gather_packed(b, tangents, operand, x_dtype, t_dtype, direction, dims,
                               window)]
    return [_gather_unrolled(b, tangents, operand, x_dtype, t_dtype, direction, dims, window,
                             tuple(ctx.avals_out[0].shape))]


register_lowering("select_and_gather_add", _select_and_gather_add_gpu, platform="gpu")
