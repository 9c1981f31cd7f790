"""Rules for the data-movement chapter: broadcasts, reshape, transpose, concatenate, pad,
reverse, slice, iota, constant, copy, bitcast, dimension sizes, and the shape-operand
(dynamic_*) variants, whose shape operands are constants so that shapes stay static."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..types import tensor

from .table import rule


def _factorings(n: int, max_rank: int) -> list:
    """Shapes with ``n`` elements and rank 1..max_rank (a few of them)."""
    out = [(n,)]
    for a in range(2, n + 1):
        if n % a == 0:
            out.append((a, n // a))
            if max_rank >= 3:
                for c in range(2, n // a + 1):
                    if (n // a) % c == 0:
                        out.append((a, c, n // a // c))
    return out


@rule("broadcast_in_dim")
def _broadcast_in_dim(s, name):
    x = s.pick(lambda t: t.rank < 3)
    extra = s.c.integer(0, max(0, s.gen.options.max_rank - x.type.rank))
    rank = x.type.rank + extra
    dims = sorted(s.c.subset(list(range(rank)), x.type.rank, x.type.rank))
    shape = [s.gen.dim() for _ in range(rank)]
    for i, d in enumerate(dims):
        size = x.type.shape[i]
        shape[d] = size if size != 1 or s.c.boolean() else s.gen.dim(1)
    return [s.b.broadcast_in_dim(x, tuple(shape), dims)]


@rule("broadcast")
def _broadcast(s, name):
    x = s.pick(lambda t: t.rank < 3)
    sizes = [s.gen.dim() for _ in range(s.c.integer(0, 3 - x.type.rank))]
    return [s.b.broadcast(x, sizes)]


@rule("reshape")
def _reshape(s, name):
    x = s.pick()
    n = x.type.num_elements
    shapes = _factorings(n, 3) if n else [(0,), (2, 0), (0, 3)]
    if n == 1:
        shapes.append(())
    return [s.b.reshape(x, s.c.choice(shapes))]


@rule("transpose")
def _transpose(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    return [s.b.transpose(x, s.c.permutation(x.type.rank))]


@rule("concatenate")
def _concatenate(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    d = s.c.integer(0, x.type.rank - 1)
    parts = [x]
    for _ in range(s.c.integer(0, 2)):
        shape = list(x.type.shape)
        shape[d] = s.gen.dim()
        parts.append(s.value_of(tensor(tuple(shape), x.type.element_type)))
    order = s.c.permutation(len(parts))
    return [s.b.concatenate([parts[i] for i in order], d)]


@rule("pad")
def _pad(s, name):
    x = s.pick()
    low, high, interior = [], [], []
    for n in x.type.shape:
        i = s.c.integer(0, 2)
        size = n + max(0, n - 1) * i
        low.append(s.c.integer(-min(size, 2), 2))
        high.append(s.c.integer(-min(size + low[-1], 2) if size + low[-1] > 0 else 0, 2))
        interior.append(i)
    value = s.value_of(tensor((), x.type.element_type))
    return [s.b.pad(x, value, low, high, interior)]


@rule("reverse")
def _reverse(s, name):
    x = s.pick()
    return [s.b.reverse(x, sorted(s.c.subset(list(range(x.type.rank)))))]


def slice_bounds(s, shape):
    starts, limits, strides = [], [], []
    for n in shape:
        a = s.c.integer(0, n)
        starts.append(a)
        limits.append(s.c.integer(a, n))
        strides.append(s.c.integer(1, 3))
    return starts, limits, strides


@rule("slice")
def _slice(s, name):
    x = s.pick()
    return [s.b.slice(x, *slice_bounds(s, x.type.shape))]


@rule("iota")
def _iota(s, name):
    # not f8E8M0FNU: it has no zero, where every iota starts
    et = s.gen.element_type(lambda t: t.kind in ("sint", "uint", "float", "complex")
                            and t.name != "f8E8M0FNU")
    shape = s.gen.shape(min_rank=1)
    return [s.b.iota(shape, et, s.c.integer(0, len(shape) - 1))]


@rule("constant")
def _constant(s, name):
    t = tensor(s.gen.shape(), s.gen.element_type())
    return [s.constant(t)]


@rule("copy")
def _copy(s, name):
    return [s.b.copy(s.pick())]


@rule("bitcast")
def _bitcast(s, name):
    x = s.pick()
    return [s.b.bitcast(x, x.type)]


@rule("get_dimension_size")
def _get_dimension_size(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    return [s.b.get_dimension_size(x, s.c.integer(0, x.type.rank - 1))]


@rule("set_dimension_size")
def _set_dimension_size(s, name):
    # The result has a bounded dynamic dimension; an integer sum over it (which skips the
    # elements past the runtime size) brings the program back to static shapes.
    x = s.operand(lambda et: et.kind in ("sint", "uint"), lambda t: t.rank >= 1)
    d = s.c.integer(0, x.type.rank - 1)
    size = s.index(x.type.shape[d], dtypes.i32)
    y = s.b.set_dimension_size(x, size, d)
    et = x.type.element_type
    return [s.b.reduce(y, s.scalar(et, 0), [d], lambda r, a, e: r.add(a, e))]


def _shape_constant(s, values, et=None):
    return s.b.constant(np.array(values, dtype=(et or s.index_type()).dtype))


@rule("dynamic_broadcast_in_dim")
def _dynamic_broadcast_in_dim(s, name):
    x = s.pick(lambda t: t.rank < 3)
    rank = x.type.rank + s.c.integer(0, 3 - x.type.rank)
    dims = sorted(s.c.subset(list(range(rank)), x.type.rank, x.type.rank))
    shape = [s.gen.dim(1) for _ in range(rank)]
    for i, d in enumerate(dims):
        shape[d] = x.type.shape[i] if x.type.shape[i] != 1 else shape[d]
    known = {}
    if s.c.boolean(0.3):  # hints, which must be true: operand dimensions of size 1 that
        # grow, and dimensions whose size stays
        grow = [i for i, d in enumerate(dims) if x.type.shape[i] == 1 != shape[d]]
        stay = [i for i, d in enumerate(dims) if x.type.shape[i] == shape[d]]
        known = {"known_expanding_dimensions": sorted(s.c.subset(grow)),
                 "known_nonexpanding_dimensions": sorted(s.c.subset(stay))}
    return [s.b.dynamic_broadcast_in_dim(x, _shape_constant(s, shape), dims, tuple(shape),
                                         **known)]


@rule("dynamic_reshape")
def _dynamic_reshape(s, name):
    x = s.pick(lambda t: t.num_elements > 0)
    shape = s.c.choice(_factorings(x.type.num_elements, 3))
    return [s.b.dynamic_reshape(x, _shape_constant(s, shape), shape)]


@rule("dynamic_iota")
def _dynamic_iota(s, name):
    et = s.gen.element_type(lambda t: t.kind in ("sint", "uint", "float"))
    shape = s.gen.shape(min_rank=1)
    return [s.b.dynamic_iota(_shape_constant(s, shape), tensor(shape, et),
                             s.c.integer(0, len(shape) - 1))]


@rule("dynamic_pad")
def _dynamic_pad(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    low = [s.c.integer(0, 2) for _ in x.type.shape]
    high = [s.c.integer(0, 2) for _ in x.type.shape]
    interior = [s.c.integer(0, 1) for _ in x.type.shape]
    out = tuple(lo + hi + n + max(0, n - 1) * i
                for lo, hi, n, i in zip(low, high, x.type.shape, interior))
    value = s.value_of(tensor((), x.type.element_type))
    et = s.index_type()
    c = [_shape_constant(s, v, et) for v in (low, high, interior)]
    return [s.b.dynamic_pad(x, value, *c, out)]


@rule("real_dynamic_slice")
def _real_dynamic_slice(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    starts, limits, strides = slice_bounds(s, x.type.shape)
    out = tuple(-(-(hi - lo) // st) for lo, hi, st in zip(starts, limits, strides))
    et = s.index_type()
    c = [_shape_constant(s, v, et) for v in (starts, limits, strides)]
    return [s.b.real_dynamic_slice(x, *c, out)]


