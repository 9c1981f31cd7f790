"""Ops that index: dynamic_slice, dynamic_update_slice, gather, dynamic_gather, scatter, sort,
torch_index_select.

Gather and scatter follow the StableHLO spec's constraints (including the batching dimensions)
and its result-shape rule; their dimension numbers are ``GatherDimensionNumbers`` and
``ScatterDimensionNumbers`` (or dicts of their fields). Scatter's update computation and sort's
comparator are regions built from Python functions.
"""

from __future__ import annotations

from .. import op_forms as pf

from ..dense import i64_array
from ..mhlo_attributes import GatherDimensionNumbers, ScatterDimensionNumbers
from ..dtypes import i1
from ..types import TensorType, tensor
from ..ir import Value
from .control_flow import check_region
from .data_movement import (_bool, _i64, _tensor_of, check_inferred, integer_operand, ints,
                            result_tensor, shape_operand)
from .held import constant_ints
from .args import arg_names, results, value_list
from .spec import AttrSpec, OpSpec, builder_method, fail, region_arg, register, tensor_operand


def _list(xs) -> list:
    return list(xs)


def _sorted_unique(op, what, dims) -> None:
    if len(set(dims)) != len(dims):
        fail(op, f"{what} {_list(dims)} has repeated entries")
    if list(dims) != sorted(dims):
        fail(op, f"{what} {_list(dims)} must be sorted")


def _in_range(op, what, dims, rank, of) -> None:
    for d in dims:
        if not 0 <= d < rank:
            fail(op, f"{what} entry {d} is out of range for {of} of rank {rank}")


def _scalars(op, ts):
    return [region_arg(op, f"inputs[{i}]", t) for i, t in enumerate(ts)]


# -- dynamic_slice, dynamic_update_slice --------------------------------------------------------


def _start_indices(op, x, index_types) -> None:
    if len(index_types) != x.rank:
        fail(op, f"has {len(index_types)} start_indices, expected {x.rank} (one per dimension "
                 f"of operand {x})")
    first = None
    for i, t in enumerate(index_types):
        t = integer_operand(op, f"start_indices[{i}]", t, 0)
        if first is None:
            first = t
        elif t is not first:
            fail(op, f"operand start_indices[{i}] is {t}, expected {first} (start indices must "
                     "all have the same type)")


def _dynamic_slice(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    _start_indices(op, x, types[1:])
    sizes = ints(attributes["slice_sizes"])
    if len(sizes) != x.rank:
        fail(op, f"slice_sizes has {len(sizes)} entries, expected {x.rank} (the rank of operand "
                 f"{x})")
    for d, (s, n) in enumerate(zip(sizes, x.shape)):
        if not 0 <= s <= n:
            fail(op, f"slice_sizes[{d}] = {s} is out of range: need 0 <= size <= {n} (operand "
                     f"dimension {d} of {x})")
    return (tensor(sizes, x.element_type),)


register(OpSpec("dynamic_slice", ("operand", "start_indices*"),
                {"slice_sizes": AttrSpec(i64_array, True)},
                infer=_dynamic_slice,
                doc="A slice of slice_sizes at runtime start indices (scalars; clamped so the "
                    "slice stays in bounds).", pretty=pf.DYNAMIC_SLICE, quantized="storage"))


@builder_method
def dynamic_slice(b, x, start_indices, slice_sizes, *, location=None) -> Value:
    """The ``slice_sizes`` slice of ``x`` starting at ``start_indices`` (one integer scalar
    Value per dimension; XLA clamps them so the slice is in bounds)."""
    return b._one("dynamic_slice", (x, value_list("dynamic_slice", "start_indices",
                                                 start_indices)),
                  {"slice_sizes": slice_sizes}, location=location)


def _dynamic_update_slice(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    u = tensor_operand(op, "update", types[1])
    if u.element_type is not x.element_type:
        fail(op, f"operand update must have element type {x.element_type}, got {u}")
    if u.rank != x.rank:
        fail(op, f"operand update must have rank {x.rank} (as operand {x}), got {u}")
    for d, (s, n) in enumerate(zip(u.shape, x.shape)):
        if s > n:
            fail(op, f"update dimension {d} has size {s}, larger than operand dimension {d} "
                     f"({n}): {u} vs {x}")
    _start_indices(op, x, types[2:])
    return (x,)


register(OpSpec("dynamic_update_slice", ("operand", "update", "start_indices*"),
                infer=_dynamic_update_slice,
                doc="operand with update written at runtime start indices (clamped).",
                pretty=pf.FUNCTIONAL_FORM, quantized="storage"))


@builder_method
def dynamic_update_slice(b, x, update, start_indices, *, location=None) -> Value:
    """``x`` with ``update`` written at ``start_indices`` (integer scalar Values, clamped)."""
    return b._one("dynamic_update_slice", (x, update, value_list(
        "dynamic_update_slice", "start_indices", start_indices)), location=location)


# -- gather -------------------------------------------------------------------------------------


def _gather_dims(v):
    if isinstance(v, GatherDimensionNumbers):
        return v
    if isinstance(v, dict):
        return GatherDimensionNumbers(**v)
    raise TypeError(f"expected GatherDimensionNumbers or a dict of its fields, got {v!r:.80}")


def _scatter_dims(v):
    if isinstance(v, ScatterDimensionNumbers):
        return v
    if isinstance(v, dict):
        return ScatterDimensionNumbers(**v)
    raise TypeError(f"expected ScatterDimensionNumbers or a dict of its fields, got {v!r:.80}")


def _batch_shape(op, what, idx, ivd, batching, start_map_what, start_map, of) -> list:
    """Checks shared by gather and scatter on the indices operand; returns its shape without
    the index vector dimension."""
    if not 0 <= ivd <= idx.rank:
        fail(op, f"index_vector_dim {ivd} is out of range: need 0 <= index_vector_dim <= "
                 f"{idx.rank} (the rank of {what} {idx})")
    if len(set(batching[1])) != len(batching[1]):
        fail(op, f"{batching[0]} {_list(batching[1])} has repeated entries")
    for d in batching[1]:
        if not 0 <= d < idx.rank or d == ivd:
            fail(op, f"{batching[0]} entry {d} must be a dimension of {what} {idx} other than "
                     f"index_vector_dim {ivd}")
    n_index = idx.shape[ivd] if ivd < idx.rank else 1
    if len(start_map) != n_index:
        fail(op, f"{start_map_what} has {len(start_map)} entries, expected {n_index} (the size "
                 f"of index_vector_dim {ivd} of {what} {idx})")
    if len(set(start_map)) != len(start_map):
        fail(op, f"{start_map_what} {_list(start_map)} has repeated entries")
    _in_range(op, start_map_what, start_map, of[1], of[0])
    return [n for i, n in enumerate(idx.shape) if i != ivd]


def gather_shape(op, x: TensorType, idx: TensorType, dn: GatherDimensionNumbers, sizes,
                 check_sizes=True) -> tuple:
    """The result shape of a gather (StableHLO spec C1-C21), or an OpBuildError. With
    ``sizes=None`` (dynamic_gather) the offset dimensions' sizes are returned as None."""
    offset, collapsed = dn.offset_dims, dn.collapsed_slice_dims
    obatch, ibatch = dn.operand_batching_dims, dn.start_indices_batching_dims
    if x.rank != len(offset) + len(collapsed) + len(obatch):
        fail(op, f"operand {x} has rank {x.rank}, expected len(offset_dims) + "
                 f"len(collapsed_slice_dims) + len(operand_batching_dims) = {len(offset)} + "
                 f"{len(collapsed)} + {len(obatch)}")
    _sorted_unique(op, "offset_dims", offset)
    _sorted_unique(op, "collapsed_slice_dims", collapsed)
    _sorted_unique(op, "operand_batching_dims", obatch)
    both = set(collapsed) & set(obatch)
    if both:
        fail(op, f"dimensions {sorted(both)} are in both collapsed_slice_dims and "
                 "operand_batching_dims")
    of = (f"operand {x}", x.rank)
    _in_range(op, "collapsed_slice_dims", collapsed, x.rank, of[0])
    _in_range(op, "operand_batching_dims", obatch, x.rank, of[0])
    if len(obatch) != len(ibatch):
        fail(op, f"operand_batching_dims {_list(obatch)} and start_indices_batching_dims "
                 f"{_list(ibatch)} differ in length")
    batch = _batch_shape(op, "start_indices", idx, dn.index_vector_dim,
                         ("start_indices_batching_dims", ibatch), "start_index_map",
                         dn.start_index_map, of)
    for a, c in zip(obatch, ibatch):
        if x.shape[a] != idx.shape[c]:
            fail(op, f"operand batching dimension {a} has size {x.shape[a]} but "
                     f"start_indices batching dimension {c} has size {idx.shape[c]}")
    in_batch = set(dn.start_index_map) & set(obatch)
    if in_batch:
        fail(op, f"start_index_map entries {sorted(in_batch)} are operand_batching_dims")
    if sizes is not None:
        if len(sizes) != x.rank:
            fail(op, f"slice_sizes has {len(sizes)} entries, expected {x.rank} (the rank of "
                     f"operand {x})")
        for d, (s, n) in enumerate(zip(sizes, x.shape)):
            if check_sizes and not 0 <= s <= n:
                fail(op, f"slice_sizes[{d}] = {s} is out of range: need 0 <= size <= {n} "
                         f"(operand dimension {d} of {x})")
        for what, dims in (("collapsed_slice_dims", collapsed), ("operand_batching_dims", obatch)):
            for d in dims:
                if sizes[d] > 1:
                    fail(op, f"slice_sizes[{d}] = {sizes[d]} must be 0 or 1: dimension {d} is "
                             f"in {what}")
        per_index = 1
        for d, size in enumerate(sizes):
            if d not in collapsed and d not in obatch:
                per_index *= size
        for d in (*collapsed, *obatch):
            if sizes[d] == 0 and per_index and all(batch):
                # (StableHLO allows it; XLA takes the slices as empty, but the result type
                # drops the dimension and keeps the others: its folder rejects the count.
                # With no indices the result is empty whatever the slices: jax gathers a
                # batch of 0 so, and XLA takes it)
                fail(op, f"slice_sizes[{d}] = 0 on a dimension the result drops: the slices "
                         f"are empty, but the result keeps {per_index} elements per index "
                         "(XLA: \"number of output elements ... doesn't match\"); make a kept "
                         "dimension's slice size 0 too, so the result is empty")
        offset_sizes = [s for d, s in enumerate(sizes) if d not in collapsed and d not in obatch]
    else:
        offset_sizes = [None] * len(offset)
    rank = len(offset) + len(batch)
    _in_range(op, "offset_dims", offset, rank, "the result")
    shape, bi, oi = [], iter(batch), iter(offset_sizes)
    for d in range(rank):
        shape.append(next(oi) if d in offset else next(bi))
    return tuple(shape)


def _gather(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    idx = integer_operand(op, "start_indices", types[1])
    dn = attributes["dimension_numbers"]
    shape = gather_shape(op, x, idx, dn, ints(attributes["slice_sizes"]))
    return (tensor(shape, x.element_type),)


def _gather_check(op, types, attributes, results, regions):
    check_inferred(op, _gather(op, types, attributes), results)


_GATHER_ATTRS = {"dimension_numbers": AttrSpec(_gather_dims, True),
                 "indices_are_sorted": AttrSpec(_bool)}

register(OpSpec("gather", ("operand", "start_indices"),
                {**_GATHER_ATTRS, "slice_sizes": AttrSpec(i64_array, True)},
                infer=_gather, check=_gather_check,
                doc="Slices of operand at the start indices held by start_indices.",
                quantized="storage"))


@builder_method
def gather(b, x, start_indices, dimension_numbers, slice_sizes, *, indices_are_sorted=False,
           location=None) -> Value:
    """``gather`` slices of ``slice_sizes`` from ``x``; ``dimension_numbers`` is a
    GatherDimensionNumbers or a dict of its fields (offset_dims, collapsed_slice_dims,
    start_index_map, index_vector_dim, operand_batching_dims, start_indices_batching_dims)."""
    return b._one("gather", (x, start_indices), {
        "dimension_numbers": dimension_numbers,
        "slice_sizes": slice_sizes,
        "indices_are_sorted": indices_are_sorted}, location=location)


def _dynamic_gather_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    idx = integer_operand(op, "start_indices", types[1])
    shape_operand(op, "slice_sizes", types[2], x.rank)
    expected = gather_shape(op, x, idx, attributes["dimension_numbers"], None)
    r = result_tensor(op, results[0], x.element_type, len(expected))
    for d, (got, want) in enumerate(zip(r.shape, expected)):
        if want is not None and got != want:
            fail(op, f"result dimension {d} has size {got}, expected {want} (from start_indices "
                     f"{idx}): {r}")


def _dynamic_gather_held(op, operands, attributes, results):
    """Constant slice sizes are read as gather's (<= 1 where collapsed, within the operand)
    and must make the result type (jaxlib: "inferred type(s) 'tensor<1x2xf32>' are
    incompatible with return type(s)")."""
    sizes = constant_ints(operands[2], op, "slice_sizes")
    if sizes is None:
        return
    x, idx = operands[0].type, operands[1].type
    want = tensor(gather_shape(op, x, idx, attributes["dimension_numbers"], list(sizes)),
                  x.element_type)
    if want != results[0]:
        fail(op, f"the slice sizes held, {list(sizes)}, make result {want}, not {results[0]}")


register(OpSpec("dynamic_gather", ("operand", "start_indices", "slice_sizes"), _GATHER_ATTRS,
                check=_dynamic_gather_check, operand_check=_dynamic_gather_held,
                doc="gather with slice sizes held by an operand (explicit result type, inferred "
                    "by the builder when slice_sizes is a constant). XLA compiles it only when "
                    "slice_sizes is a constant (it folds to gather); with an argument: "
                    "\"'stablehlo.dynamic_gather' op can't be translated to XLA HLO\".",
                n_results=1, quantized="not_yet"))


@builder_method
def dynamic_gather(b, x, start_indices, slice_sizes, dimension_numbers, result_type=None, *,
                   indices_are_sorted=False, location=None) -> Value:
    """``gather`` with ``slice_sizes`` a 1-D integer tensor Value. Without ``result_type`` the
    slice sizes must come from a ``constant`` op, whose values give the result shape."""
    try:
        dn = _gather_dims(dimension_numbers)
    except (TypeError, ValueError) as e:
        fail("dynamic_gather", f"dimension_numbers: {e}")
    if result_type is None:
        sizes = constant_ints(slice_sizes, "dynamic_gather", "slice_sizes")
        if sizes is None:
            fail("dynamic_gather", "cannot infer the result type: slice_sizes is not a "
                                   "constant; pass result_type")
        x_t = _tensor_of(b, x, "dynamic_gather")
        idx = integer_operand("dynamic_gather", "start_indices",
                              _tensor_of(b, start_indices, "dynamic_gather"))
        result_type = tensor(gather_shape("dynamic_gather", x_t, idx, dn, list(sizes)),
                             x_t.element_type)
    return b._one("dynamic_gather", (x, start_indices, slice_sizes), {
        "dimension_numbers": dn, "indices_are_sorted": indices_are_sorted},
        (result_type,), location=location)


# -- scatter ------------------------------------------------------------------------------------


def _scatter(op, types, attributes):
    if len(types) % 2 != 1 or len(types) < 3:
        fail(op, f"needs inputs, scatter_indices and as many updates as inputs, got "
                 f"{len(types)} operands")
    n = (len(types) - 1) // 2
    inputs = [tensor_operand(op, f"inputs[{i}]", t) for i, t in enumerate(types[:n])]
    idx = integer_operand(op, "scatter_indices", types[n])
    updates = [tensor_operand(op, f"updates[{i}]", t) for i, t in enumerate(types[n + 1:])]
    x, u = inputs[0], updates[0]
    for i, t in enumerate(inputs):
        if t.shape != x.shape:
            fail(op, f"operand inputs[{i}] has shape {_list(t.shape)}, expected "
                     f"{_list(x.shape)} (as inputs[0])")
    for i, (t, it) in enumerate(zip(updates, inputs)):
        if t.shape != u.shape:
            fail(op, f"operand updates[{i}] has shape {_list(t.shape)}, expected "
                     f"{_list(u.shape)} (as updates[0])")
        if t.element_type is not it.element_type:
            fail(op, f"operand updates[{i}] must have element type {it.element_type} (as "
                     f"inputs[{i}]), got {t}")
    dn = attributes["scatter_dimension_numbers"]
    window, inserted = dn.update_window_dims, dn.inserted_window_dims
    ibatch, sbatch = dn.input_batching_dims, dn.scatter_indices_batching_dims
    if x.rank != len(window) + len(inserted) + len(ibatch):
        fail(op, f"inputs have rank {x.rank}, expected len(update_window_dims) + "
                 f"len(inserted_window_dims) + len(input_batching_dims) = {len(window)} + "
                 f"{len(inserted)} + {len(ibatch)}")
    _sorted_unique(op, "update_window_dims", window)
    _in_range(op, "update_window_dims", window, u.rank, f"updates {u}")
    _sorted_unique(op, "inserted_window_dims", inserted)
    _sorted_unique(op, "input_batching_dims", ibatch)
    both = set(inserted) & set(ibatch)
    if both:
        fail(op, f"dimensions {sorted(both)} are in both inserted_window_dims and "
                 "input_batching_dims")
    of = (f"inputs {x}", x.rank)
    _in_range(op, "inserted_window_dims", inserted, x.rank, of[0])
    _in_range(op, "input_batching_dims", ibatch, x.rank, of[0])
    if len(ibatch) != len(sbatch):
        fail(op, f"input_batching_dims {_list(ibatch)} and scatter_indices_batching_dims "
                 f"{_list(sbatch)} differ in length")
    scatter_sizes = _batch_shape(op, "scatter_indices", idx, dn.index_vector_dim,
                                 ("scatter_indices_batching_dims", sbatch),
                                 "scatter_dims_to_operand_dims",
                                 dn.scatter_dims_to_operand_dims, of)
    for a, c in zip(ibatch, sbatch):
        if x.shape[a] != idx.shape[c]:
            fail(op, f"input batching dimension {a} has size {x.shape[a]} but scatter_indices "
                     f"batching dimension {c} has size {idx.shape[c]}")
    in_batch = set(dn.scatter_dims_to_operand_dims) & set(ibatch)
    if in_batch:
        fail(op, f"scatter_dims_to_operand_dims entries {sorted(in_batch)} are "
                 "input_batching_dims")
    if u.rank != len(window) + len(scatter_sizes):
        fail(op, f"updates {u} has rank {u.rank}, expected len(update_window_dims) + "
                 f"{len(scatter_sizes)} (the scatter_indices dimensions other than "
                 f"index_vector_dim) = {len(window) + len(scatter_sizes)}")
    scatter_dims = [d for d in range(u.rank) if d not in window]
    for d, want in zip(scatter_dims, scatter_sizes):
        if u.shape[d] != want:
            fail(op, f"updates dimension {d} has size {u.shape[d]}, expected {want} (from "
                     f"scatter_indices {idx}): {u}")
    input_window = [d for d in range(x.rank) if d not in inserted and d not in ibatch]
    for d, xd in zip(window, input_window):
        if u.shape[d] > x.shape[xd]:
            fail(op, f"updates window dimension {d} has size {u.shape[d]}, larger than inputs "
                     f"dimension {xd} ({x.shape[xd]}): {u} vs {x}")
    return tuple(inputs)


def _scatter_check(op, types, attributes, results, regions):
    inputs = _scatter(op, types, attributes)
    check_inferred(op, inputs, results)
    scalars = _scalars(op, inputs)
    check_region(op, "update_computation", regions[0], scalars + scalars, scalars)


register(OpSpec("scatter", ("inputs*", "scatter_indices", "updates*"),
                {"scatter_dimension_numbers": AttrSpec(_scatter_dims, True),
                 "indices_are_sorted": AttrSpec(_bool),
                 "unique_indices": AttrSpec(_bool)},
                regions=1, infer=_scatter, check=_scatter_check,
                doc="inputs with updates combined in by update_computation at the indices held "
                    "by scatter_indices.",
                closed_regions=True, quantized="not_yet"))


@builder_method
def scatter(b, inputs, scatter_indices, updates, dimension_numbers, update_computation, *,
            indices_are_sorted=False, unique_indices=False, location=None) -> Value | tuple:
    """``scatter`` ``updates`` into ``inputs`` (a Value or a list) at ``scatter_indices``.

    ``dimension_numbers`` is a ScatterDimensionNumbers or a dict of its fields;
    ``update_computation(b, *olds, *news)`` combines the current and the update elements
    (scalars) and returns the new ones, e.g. ``lambda r, old, new: r.add(old, new)``.
    Returns a Value for one input, else a tuple.
    """
    inputs = value_list("scatter", "inputs", inputs)
    updates = value_list("scatter", "updates", updates)
    scalars = _scalars("scatter", [_tensor_of(b, v, "scatter") for v in inputs])
    region = b.region(scalars + scalars, update_computation, op="scatter",
                      what="update_computation", arg_names=arg_names(len(inputs), "old", "new"))
    op = b.create("scatter", (inputs, scatter_indices, updates), {
        "scatter_dimension_numbers": dimension_numbers,
        "indices_are_sorted": indices_are_sorted, "unique_indices": unique_indices},
        regions=(region,), location=location)
    return results(op)


# -- sort ---------------------------------------------------------------------------------------


def _sort(op, types, attributes):
    if not types:
        fail(op, "needs at least one input")
    inputs = [tensor_operand(op, f"inputs[{i}]", t) for i, t in enumerate(types)]
    first = inputs[0]
    for i, t in enumerate(inputs):
        if t.shape != first.shape:
            fail(op, f"operand inputs[{i}] has shape {_list(t.shape)}, expected "
                     f"{_list(first.shape)} (as inputs[0])")
    dim = attributes.get("dimension")
    d = -1 if dim is None else dim.value
    if first.rank == 0 or not -first.rank <= d < first.rank:
        fail(op, f"dimension {d} is out of range for inputs of rank {first.rank} (need "
                 f"-rank <= dimension < rank)")
    return tuple(inputs)


def _comparator_args(op, types):
    args = []
    for i, t in enumerate(types):
        s = region_arg(op, f"inputs[{i}]", t)
        args += [s, s]
    return args


def _sort_check(op, types, attributes, results, regions):
    inputs = _sort(op, types, attributes)
    check_inferred(op, inputs, results)
    check_region(op, "comparator", regions[0], _comparator_args(op, inputs),
                 (tensor((), i1),))


register(OpSpec("sort", ("inputs*",),
                {"dimension": AttrSpec(_i64), "is_stable": AttrSpec(_bool)},
                regions=1, infer=_sort, check=_sort_check,
                doc="Sort inputs together along dimension, ordered by the comparator region.",
                closed_regions=True, quantized="not_yet"))


@builder_method
def sort(b, inputs, comparator, dimension=-1, is_stable=False, *, location=None) -> Value | tuple:
    """Sort ``inputs`` (a Value or a list of same-shaped Values) along ``dimension``.

    ``comparator(b, lhs_0, rhs_0, lhs_1, rhs_1, ...)`` gets scalar pairs of each input's
    elements and returns a ``tensor<i1>``: whether lhs goes before rhs, e.g.
    ``lambda r, x, y: r.compare(x, y, "LT")``. Returns a Value for one input, else a tuple.
    """
    inputs = value_list("sort", "inputs", inputs)
    args = _comparator_args("sort", [_tensor_of(b, v, "sort") for v in inputs])
    region = b.region(args, comparator, op="sort", what="comparator",
                      arg_names=arg_names(len(inputs), "lhs", "rhs", interleave=True))
    op = b.create("sort", (inputs,), {"dimension": dimension, "is_stable": is_stable},
                  regions=(region,), location=location)
    return results(op)


# -- torch_index_select -------------------------------------------------------------------------


def _torch_index_select(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    index = integer_operand(op, "index", types[1])
    dim, bd = attributes["dim"].value, attributes["batch_dims"].value
    if not 0 <= dim < x.rank:
        fail(op, f"dim {dim} is out of range for operand {x} of rank {x.rank}")
    if not 0 <= bd <= min(dim, index.rank):
        fail(op, f"batch_dims {bd} is out of range: need 0 <= batch_dims <= dim ({dim}) and "
                 f"<= the rank of index {index}")
    if x.shape[:bd] != index.shape[:bd]:
        fail(op, f"the first {bd} (batch) dimensions of operand {x} and index {index} differ")
    shape = x.shape[:dim] + index.shape[bd:] + x.shape[dim + 1:]
    return (tensor(shape, x.element_type),)


def _torch_index_select_check(op, types, attributes, results, regions):
    check_inferred(op, _torch_index_select(op, types, attributes), results)


register(OpSpec("torch_index_select", ("operand", "index"),
                {"dim": AttrSpec(_i64, True), "batch_dims": AttrSpec(_i64, True)},
                infer=_torch_index_select, check=_torch_index_select_check,
                doc="torch.index_select: entries of operand along dim at index (with leading "
                    "batch dimensions shared by operand and index)."))


@builder_method
def torch_index_select(b, x, index, dim, batch_dims=0, *, location=None) -> Value:
    """``torch.index_select(x, dim, index)``, with ``batch_dims`` leading dimensions shared by
    ``x`` and ``index``; the result shape is x.shape[:dim] + index.shape[batch_dims:] +
    x.shape[dim + 1:]."""
    return b._one("torch_index_select", (x, index), {"dim": dim, "batch_dims": batch_dims},
                  location=location)


__all__ = ["gather_shape"]
