"""Rules for shape primitives: broadcasts, reshapes, squeezes, ``broadcast_to`` (numpy
broadcasting), ``stack`` / ``unstack`` (concatenation of reshapes, slices), ``split`` and
``tile``."""

from __future__ import annotations

from ..mlir import register_lowering


def _broadcast_in_dim(ctx, x, *dyn, shape, broadcast_dimensions, sharding=None):
    return [ctx.builder.broadcast_in_dim(x, shape, broadcast_dimensions)]


def _reshape(ctx, x, *dyn, new_sizes, dimensions=None, sharding=None):
    b = ctx.builder
    if dimensions is not None:
        x = b.transpose(x, dimensions)
    return [b.reshape(x, new_sizes)]


def _squeeze(ctx, x, *, dimensions):
    return [ctx.builder.reshape(x, ctx.avals_out[0].shape)]


def _expand_dims(ctx, x, *, dimensions):
    return [ctx.builder.reshape(x, ctx.avals_out[0].shape)]


def _transpose(ctx, x, *, permutation):
    return [ctx.builder.transpose(x, permutation)]


def _concatenate(ctx, *xs, dimension):
    return [ctx.builder.concatenate(xs, dimension)]


def _slice(ctx, x, *, start_indices, limit_indices, strides=None):
    return [ctx.builder.slice(x, start_indices, limit_indices, strides)]


def _iota(ctx, *dyn, dtype, shape, dimension, sharding=None):
    return [ctx.builder.iota(shape, dtype, dimension)]


def _rev(ctx, x, *, dimensions):
    return [ctx.builder.reverse(x, dimensions)]


register_lowering("broadcast_in_dim", _broadcast_in_dim)
register_lowering("reshape", _reshape)
register_lowering("squeeze", _squeeze)
register_lowering("expand_dims", _expand_dims)
register_lowering("transpose", _transpose)
register_lowering("concatenate", _concatenate)
register_lowering("slice", _slice)
register_lowering("iota", _iota)
register_lowering("rev", _rev)


# -- numpy-style shapes ------------------------------------------------------------------------

def _broadcast_to(ctx, x, *, shape):
    """numpy broadcasting: trailing dimensions align, size-1 dimensions expand."""
    rank = len(x.type.shape)
    return [ctx.builder.broadcast_in_dim(x, tuple(shape), range(len(shape) - rank, len(shape)))]


register_lowering("broadcast_to", _broadcast_to)


def _stack(ctx, *xs, axis):
    b = ctx.builder
    out_shape = ctx.avals_out[0].shape
    piece = out_shape[:axis] + (1,) + out_shape[axis + 1:]
    return [b.concatenate([b.reshape(x, piece) for x in xs], axis)]


def _unstack(ctx, x, *, axis):
    b = ctx.builder
    shape = list(x.type.shape)
    outs = []
    for i, aval in enumerate(ctx.avals_out):
        start = [0] * len(shape)
        limit = list(shape)
        start[axis], limit[axis] = i, i + 1
        outs.append(b.reshape(b.slice(x, start, limit), aval.shape))
    return outs


register_lowering("stack", _stack)
register_lowering("unstack", _unstack)


def _split(ctx, x, *, sizes, axis):
    b = ctx.builder
    shape = x.type.shape
    outs, start = [], 0
    for n in sizes:
        lo = [0] * len(shape)
        hi = list(shape)
        lo[axis], hi[axis] = start, start + int(n)
        outs.append(b.slice(x, lo, hi))
        start += int(n)
    return outs


register_lowering("split", _split)


def _tile(ctx, x, *, reps):
    """tile: broadcast into an interleaved (rep, size) shape, then merge the pairs."""
    b = ctx.builder
    shape = x.type.shape
    reps = tuple(int(r) for r in reps)
    reps = (1,) * (len(shape) - len(reps)) + reps
    if len(reps) > len(shape):
        x = b.reshape(x, (1,) * (len(reps) - len(shape)) + shape)
        shape = x.type.shape
    wide = [d for r, s in zip(reps, shape) for d in (r, s)]
    y = b.broadcast_in_dim(x, wide, [2 * i + 1 for i in range(len(shape))])
    return [b.reshape(y, [r * s for r, s in zip(reps, shape)])]


register_lowering("tile", _tile)
