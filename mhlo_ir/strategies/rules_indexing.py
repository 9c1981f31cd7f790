"""Rules for the indexing chapter: dynamic_slice and dynamic_update_slice, gather and
dynamic_gather with drawn dimension numbers, scatter, sort, torch_index_select; indices sorted
(``indices_are_sorted``) or provably unique (``unique_indices``) are said so, sometimes, and a
sort of one operand is sometimes unstable.

Indices are in range by construction (constants drawn in range, or pool values clamped), so
no program depends on XLA's clamping of out-of-bounds starts or its skipping of out-of-bounds
scatter updates. Scatters with several updates use commutative, associative combiners, so
the order in which an executor applies them does not matter.
"""

from __future__ import annotations

import numpy as np

from ..mhlo_attributes import GatherDimensionNumbers, ScatterDimensionNumbers
from ..types import tensor
from .combiners import combiner
from .scope import Skip
from .table import rule


@rule("dynamic_slice")
def _dynamic_slice(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    sizes = [s.c.integer(0, n) for n in x.type.shape]
    et = s.index_type()
    starts = [s.index(n - k, et) for n, k in zip(x.type.shape, sizes)]
    return [s.b.dynamic_slice(x, starts, sizes)]


@rule("dynamic_update_slice")
def _dynamic_update_slice(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    sizes = tuple(s.c.integer(0, n) for n in x.type.shape)
    update = s.value_of(tensor(sizes, x.type.element_type))
    et = s.index_type()
    starts = [s.index(n - k, et) for n, k in zip(x.type.shape, sizes)]
    return [s.b.dynamic_update_slice(x, update, starts)]


def _index_values(s, shape, vector_dim, bounds, ascending=False) -> np.ndarray:
    """Start indices of ``shape`` whose index vectors (along ``vector_dim``) hold, at
    position j, a value in [0, bounds[j]]; ``ascending``: each position's values never
    decrease from one index vector to the next (in row-major order), so the vectors are
    sorted whatever order of their positions a consumer compares them in (what
    ``indices_are_sorted`` promises)."""
    n = int(np.prod(shape)) if shape else 1
    flat = np.zeros(n, np.int64)
    arr = flat.reshape(shape) if shape else flat.reshape(())
    if len(shape) > vector_dim:  # a view with the index vectors last (np.moveaxis's
        # argument checks cost more than the rest of this function)
        perm = [d for d in range(len(shape)) if d != vector_dim] + [vector_dim]
        moved = arr.transpose(perm)
    else:
        moved = arr[..., None]
    for idx in np.ndindex(moved.shape):
        moved[idx] = s.c.integer(0, bounds[idx[-1]])
    if ascending and moved.size:
        vectors = moved.reshape(-1, moved.shape[-1])  # (a copy when moved is no view)
        vectors.sort(axis=0)
        moved[...] = vectors.reshape(moved.shape)
    return arr


def _index_array(s, shape, vector_dim, bounds, et, ascending=False):
    return s.b.constant(_index_values(s, shape, vector_dim, bounds, ascending).astype(et.dtype))


def _gather_parts(s, x):
    """Dimension numbers, slice sizes, indices and whether they are sorted, for a gather
    from ``x``."""
    r = x.type.rank
    dims = list(range(r))
    index_map = s.c.subset(dims, 0, 2)
    sizes = [s.c.integer(0, n) if s.c.boolean(0.7) else min(1, n) for n in x.type.shape]
    collapsible = [d for d in dims if sizes[d] == 1]
    collapsed = sorted(s.c.subset(collapsible))
    batch = [s.c.integer(1, 3) for _ in range(s.c.integer(0, 2))]
    k = len(index_map)
    implicit = k == 1 and s.c.boolean(0.3)
    vector_dim = len(batch) if implicit else s.c.integer(0, len(batch))
    ishape = list(batch)
    if not implicit:
        ishape.insert(vector_dim, k)
    bounds = [x.type.shape[d] - sizes[d] for d in index_map]
    if any(b < 0 for b in bounds):
        raise Skip("empty dimension")
    et = s.index_type()
    ascending = s.c.boolean(0.3)
    indices = _index_array(s, tuple(ishape), vector_dim, bounds or [0], et, ascending)
    out_rank = len(batch) + r - len(collapsed)
    offset = sorted(s.c.subset(list(range(out_rank)), r - len(collapsed), r - len(collapsed)))
    dn = GatherDimensionNumbers(offset_dims=tuple(offset), collapsed_slice_dims=tuple(collapsed),
                                start_index_map=tuple(index_map), index_vector_dim=vector_dim)
    return dn, sizes, indices, ascending


@rule("gather")
def _gather(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    dn, sizes, indices, ascending = _gather_parts(s, x)
    return [s.b.gather(x, indices, dn, sizes, indices_are_sorted=ascending)]


@rule("dynamic_gather")
def _dynamic_gather(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    dn, sizes, indices, ascending = _gather_parts(s, x)
    return [s.b.dynamic_gather(x, indices, s.b.constant(np.array(sizes, np.int64)), dn,
                               indices_are_sorted=ascending)]


@rule("torch_index_select")
def _torch_index_select(s, name):
    x = s.pick(lambda t: t.rank >= 1 and all(n > 0 for n in t.shape))
    dim = s.c.integer(0, x.type.rank - 1)
    n = s.c.integer(1, 3)
    et = s.index_type()
    index = s.b.constant(np.array([s.c.integer(0, x.type.shape[dim] - 1) for _ in range(n)],
                                  et.dtype))
    return [s.b.torch_index_select(x, index, dim)]


@rule("scatter")
def _scatter(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    et = x.type.element_type
    r = x.type.rank
    dims = list(range(r))
    to_operand = s.c.subset(dims, 0, 2)
    sizes = [s.c.integer(0, n) if s.c.boolean(0.7) else min(1, n) for n in x.type.shape]
    inserted = sorted(s.c.subset([d for d in dims if sizes[d] == 1]))
    batch = [s.c.integer(1, 3) for _ in range(s.c.integer(0, 2))]
    many = int(np.prod(batch)) > 1 if batch else False
    comb = combiner(s, et)
    if comb is None or (not many and s.c.boolean(0.5)):
        comb = ("replace", lambda rb, old, new: new, None)
        batch = []
    k = len(to_operand)
    vector_dim = len(batch)
    ishape = list(batch) + [k]
    bounds = [x.type.shape[d] - sizes[d] for d in to_operand]
    if any(b < 0 for b in bounds):
        raise Skip("empty dimension")
    index_et = s.index_type()
    ascending = s.c.boolean(0.3)
    values = _index_values(s, tuple(ishape), vector_dim, bounds or [0], ascending)
    indices = s.b.constant(values.astype(index_et.dtype))
    window = [sizes[d] for d in dims if d not in inserted]
    urank = len(batch) + len(window)
    window_dims = sorted(s.c.subset(list(range(urank)), len(window), len(window)))
    ushape = [0] * urank
    it = iter(batch)
    wt = iter(window)
    for i in range(urank):
        ushape[i] = next(wt) if i in window_dims else next(it)
    if 0 in ushape:
        # XLA:CPU segfaults folding a scatter of zero-size updates into a constant operand
        # (docs/findings.md); a scatter of nothing is also no test of scatter
        raise Skip("empty updates")
    updates = s.value_of(tensor(tuple(ushape), et))
    dn = ScatterDimensionNumbers(update_window_dims=tuple(window_dims),
                                 inserted_window_dims=tuple(inserted),
                                 scatter_dims_to_operand_dims=tuple(to_operand),
                                 index_vector_dim=vector_dim)
    unique = _unique(values, [sizes[d] for d in to_operand]) and s.c.boolean()
    return [s.b.scatter(x, indices, updates, dn, comb[1], indices_are_sorted=ascending,
                        unique_indices=unique)]


def _unique(values, sizes) -> bool:
    """Whether a scatter's updates provably reach distinct operand elements (what
    ``unique_indices`` promises; the spec leaves the result to the executor when they do
    not): one index vector (``values`` holds them along its last dimension); or distinct
    vectors whose windows span one element along each dimension they index."""
    count = int(np.prod(values.shape[:-1]))
    if count <= 1:
        return True
    vectors = values.reshape(count, values.shape[-1]).tolist()
    return bool(sizes) and all(n == 1 for n in sizes) and \
        len(set(map(tuple, vectors))) == count


@rule("sort")
def _sort(s, name):
    x = s.pick(lambda t: t.rank >= 1 and t.element_type.kind != "complex")
    others = [s.value_of(tensor(x.type.shape, s.gen.element_type()))
              for _ in range(s.c.integer(0, 1))]
    # floats by total order: with NaNs, LT is no strict weak order and the result would be
    # the sort implementation's
    ct = "TOTALORDER" if x.type.element_type.kind == "float" else None
    direction = s.c.choice(("LT", "GT"))

    def comparator(r, *args):
        return r.compare(args[0], args[1], direction, ct)

    dim = s.c.integer(0, x.type.rank - 1)
    # Unstable only with one operand: elements its comparator calls equal are then the same
    # bits (integers; floats in total order), so no executor's order of them shows; with
    # more operands, the order of the others' elements at equal keys would.
    stable = bool(others) or not s.c.boolean(0.4)
    out = s.b.sort([x] + others, comparator, dim, is_stable=stable)
    return list(out) if isinstance(out, tuple) else [out]


