"""Rules for shape primitives."""

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
