"""Ops that create, reshape and move data: constant, iota, broadcast_in_dim, broadcast, reshape,
transpose, reverse, slice, concatenate, pad, copy, bitcast, the dimension-size ops, and the
"dynamic" variants that take shapes as operands (dynamic_broadcast_in_dim, dynamic_reshape,
dynamic_iota, dynamic_pad, real_dynamic_slice).

The dynamic variants cannot infer their result types from operand types (the shapes are
values), so they take explicit result types and check what can be checked: ranks, element
types, and the length of each shape operand. This package's tensor types are static; XLA
compiles those ops with static results when their shape operands are constants (and, for
some, when they are arguments: see each spec's ``doc``).
"""

from __future__ import annotations

from .. import op_forms as pf
from typing import Sequence


from ..dense import dense_i64, i64_array
from ..index_array import index_ints
from ..dtypes import i32
from ..types import TensorType, TokenType, tensor
from ..ir import VALUE_CLASSES, BlockArgument, Value, _new_single_result_op
from ..location import checked_location
from ..quant_checks import per_axis_element
from .args import value_list
from .args import ints as int_list
from . import convert
from .construct import memo, memo_get, result_type, shape_arg, tensor_type
from .held import (dimension_size_held, dynamic_pad_held, holds_result_shape,
                   real_dynamic_slice_held)
from .spec import MHLO_ONLY, AttrSpec, OpSpec, builder_method, fail, register, tensor_operand


_i64 = convert.i64


# The integers of an integer-array attribute (an IndexArrayAttr; also a 1-D i64 dense tensor
# or an IntegerAttr, which ops edited with set_attr may hold), as a tuple.
ints = index_ints



def _iota_check(op, types, attributes, results, regions):
    r = results[0]
    if not isinstance(r, TensorType) or r.rank == 0:
        fail(op, f"result must be a tensor of rank at least 1, got {r}")
    d = attributes["iota_dimension"].value
    if not 0 <= d < r.rank:
        fail(op, f"iota_dimension {d} is out of range for result {r} of rank {r.rank}")
    if r.element_type.kind == "bool":
        fail(op, f"result must have integer, float or complex elements, got {r}")


register(OpSpec("iota", (), {"iota_dimension": AttrSpec(_i64, True)}, check=_iota_check,
                pretty=pf.IOTA, n_results=1, quantized="not_yet"))


def _broadcast_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = results[0]
    dims = ints(attributes["broadcast_dimensions"])
    if not isinstance(r, TensorType) or r.element_type is not x.element_type:
        fail(op, f"result must be a tensor of {x.element_type}, got {r}")
    if len(dims) != x.rank:
        fail(op, f"broadcast_dimensions has {len(dims)} entries, expected {x.rank} (the rank of "
                 f"operand {x})")
    if len(set(dims)) != len(dims):
        fail(op, f"broadcast_dimensions {list(dims)} has repeated entries")
    for i, d in enumerate(dims):
        if not 0 <= d < r.rank:
            fail(op, f"broadcast_dimensions[{i}] = {d} is out of range for result {r} of rank "
                     f"{r.rank}")
        if x.shape[i] != 1 and x.shape[i] != r.shape[d]:
            fail(op, f"operand dimension {i} has size {x.shape[i]}, expected 1 or {r.shape[d]} "
                     f"(result dimension {d}): {x} vs {r}")


register(OpSpec("broadcast_in_dim", ("operand",),
                {"broadcast_dimensions": AttrSpec(i64_array, True)},
                check=_broadcast_check, pretty=pf.BROADCAST_IN_DIM, quantized="storage",
                n_results=1))


def _reshape_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = results[0]
    if not isinstance(r, TensorType) or r.element_type is not x.element_type:
        fail(op, f"result must be a tensor of {x.element_type}, got {r}")
    if r.num_elements != x.num_elements:
        fail(op, f"result {r} has {r.num_elements} elements, expected {x.num_elements} (as "
                 f"operand {x})")


register(OpSpec("reshape", ("operand",), check=_reshape_check, pretty=pf.FUNCTIONAL_FORM,
                quantized="storage", n_results=1))


def _transpose(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    perm = ints(attributes["permutation"])
    if sorted(perm) != list(range(x.rank)):
        fail(op, f"permutation {list(perm)} is not a permutation of 0..{x.rank - 1} (operand "
                 f"{x})")
    return (tensor(tuple(x.shape[p] for p in perm), x.element_type),)


register(OpSpec("transpose", ("operand",), {"permutation": AttrSpec(i64_array, True)},
                infer=_transpose, pretty=pf.TRANSPOSE, quantized="storage"))


def _slice(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    start = ints(attributes["start_indices"])
    limit = ints(attributes["limit_indices"])
    strides = ints(attributes["strides"])
    for name, v in (("start_indices", start), ("limit_indices", limit), ("strides", strides)):
        if len(v) != x.rank:
            fail(op, f"{name} has {len(v)} entries, expected {x.rank} (the rank of operand {x})")
    shape = []
    for d, (s, lim, st, n) in enumerate(zip(start, limit, strides, x.shape)):
        if st <= 0:
            fail(op, f"strides[{d}] = {st} must be positive")
        if not 0 <= s <= lim <= n:
            fail(op, f"dimension {d}: need 0 <= start ({s}) <= limit ({lim}) <= size ({n}) of "
                     f"operand {x}")
        shape.append(-(-(lim - s) // st))
    return (tensor(shape, x.element_type),)


register(OpSpec("slice", ("operand",),
                {"start_indices": AttrSpec(i64_array, True),
                 "limit_indices": AttrSpec(i64_array, True),
                 "strides": AttrSpec(i64_array, True)},
                infer=_slice, pretty=pf.SLICE, quantized="storage"))


def _concatenate(op, types, attributes):
    if not types:
        fail(op, "needs at least one operand")
    ts = [tensor_operand(op, f"inputs[{i}]", t) for i, t in enumerate(types)]
    first = ts[0]
    d = attributes["dimension"].value
    if not 0 <= d < first.rank:
        fail(op, f"dimension {d} is out of range for operand {first} of rank {first.rank}")
    total = 0
    for i, t in enumerate(ts):
        if t.element_type is not first.element_type:
            fail(op, f"operand inputs[{i}] has element type {t.element_type}, expected "
                     f"{first.element_type}: {t}")
        if t.rank != first.rank or any(a != b for k, (a, b) in
                                       enumerate(zip(t.shape, first.shape)) if k != d):
            fail(op, f"operand inputs[{i}] has shape {list(t.shape)}, which differs from "
                     f"{list(first.shape)} outside dimension {d}")
        total += t.shape[d]
    shape = list(first.shape)
    shape[d] = total
    return (tensor(shape, first.element_type),)


register(OpSpec("concatenate", ("inputs*",), {"dimension": AttrSpec(_i64, True)},
                infer=_concatenate, pretty=pf.CONCATENATE, quantized="storage"))


# -- builder methods: static data movement (constant: ``constants.py``) ---------------------

@builder_method
def iota(b, shape, element_type, dimension: int = 0, *, location=None) -> Value:
    # Validated once per (shape, element type, dimension): every causal mask and one-hot
    # makes one. Ints are checked before keying (1.0 and True equal 1), and the element
    # type is keyed with its class (np.dtype("float64") == float, which is f32 here).
    if shape.__class__ is list:
        shape = tuple(shape)
    if shape.__class__ is tuple and dimension.__class__ is int:
        for d in shape:
            if d.__class__ is not int:
                break
        else:
            return memo(b, ("iota", shape, element_type.__class__, element_type, dimension),
                        "iota", (), location, _iota_make, shape, element_type, dimension)
    return b._one("iota", (), {"iota_dimension": dimension},
                  (result_type("iota", shape, element_type),), location=location)


def _iota_make(shape, element_type, dimension):
    return {"iota_dimension": dimension}, (result_type("iota", shape, element_type),)


@builder_method
def broadcast_in_dim(b, x: Value, shape, broadcast_dimensions, *, location=None) -> Value:
    t = getattr(x, "type", None)
    if t.__class__ is not TensorType:
        t = tensor_type(x, "broadcast_in_dim")
    cls = shape.__class__
    if cls is not tuple:
        shape = tuple(shape) if cls is list else shape_arg("broadcast_in_dim", shape, t)
    dims = broadcast_dimensions
    cls = dims.__class__
    if cls is not tuple:
        dims = tuple(dims) if cls is list else int_list("broadcast_in_dim",
                                                        "broadcast_dimensions", dims)
    # Dimensions are checked to be ints before keying (1.0 and True equal 1).
    for d in shape:
        if d.__class__ is not int:
            shape = shape_arg("broadcast_in_dim", shape, t)
            break
    for d in dims:
        if d.__class__ is not int:
            dims = int_list("broadcast_in_dim", "broadcast_dimensions", dims)
            break
    key = ("broadcast_in_dim", t, shape, dims)
    hit = memo_get(key)
    if hit is not None and x.__class__ in VALUE_CLASSES:  # memo's hit path, inlined
        block = b.block
        op = _new_single_result_op(hit[0], x, None, hit[1], hit[2],
                                   b.location if location is None
                                   else checked_location(location), block)
        block.operations.append(op)
        return op
    return memo(b, key, "broadcast_in_dim", (x,), location, _broadcast_make, t, shape, dims)


def _broadcast_make(t, shape, dims):
    et = t.element_type
    if getattr(et, "axis", None) is not None:  # per-axis quantized: the axis moves
        et = per_axis_element("broadcast_in_dim", t, _dims(shape), broadcast_dimensions=dims)
    return ({"broadcast_dimensions": dense_i64(dims)},
            (result_type("broadcast_in_dim", shape, et),))


def _dims(shape) -> tuple:
    return tuple(shape) if isinstance(shape, (tuple, list)) else shape


@builder_method
def reshape(b, x: Value, shape, *, location=None) -> Value:
    t = tensor_type(x, "reshape")
    shape = shape_arg("reshape", shape, t)
    return memo(b, ("reshape", t, shape), "reshape", (x,), location, _reshape_make, t, shape)


def _reshape_make(t, shape):
    et = t.element_type
    if getattr(et, "axis", None) is not None:  # per-axis quantized: the axis moves
        et = per_axis_element("reshape", t, _dims(shape))
    return None, (result_type("reshape", shape, et),)


@builder_method
def transpose(b, x: Value, permutation, *, location=None) -> Value:
    perm = int_list("transpose", "permutation", permutation)
    return memo(b, ("transpose", tensor_type(x, "transpose"), perm), "transpose", (x,),
                location, _transpose_make, perm)


def _transpose_make(perm):
    return {"permutation": dense_i64(perm)}, None


def _slice_method(b, x: Value, start_indices, limit_indices, strides=None, *,
                  location=None) -> Value:
    start = int_list("slice", "start_indices", start_indices)
    limit = int_list("slice", "limit_indices", limit_indices)
    strides = (1,) * len(start) if strides is None else int_list("slice", "strides", strides)
    return memo(b, ("slice", tensor_type(x, "slice"), start, limit, strides), "slice", (x,),
                location, _slice_make, start, limit, strides)


# Not defined as ``slice``, so the builtin keeps its name in this module.
_slice_method.__name__ = "slice"
builder_method(_slice_method)


def _slice_make(start, limit, strides):
    return {"start_indices": dense_i64(start), "limit_indices": dense_i64(limit),
            "strides": dense_i64(strides)}, None


@builder_method
def concatenate(b, inputs: Sequence[Value], dimension: int, *, location=None) -> Value:
    inputs = value_list("concatenate", "inputs", inputs)
    # (memo's validation takes the operands flat, which for one input reads as a group.)
    if dimension.__class__ is not int or len(inputs) < 2:  # 1.0 and True would key as 1
        return b._one("concatenate", (inputs,), {"dimension": dimension}, location=location)
    key = ("concatenate", tuple([getattr(v, "type", None) for v in inputs]), dimension)
    return memo(b, key, "concatenate", inputs, location, _concatenate_make, dimension)


def _concatenate_make(dimension):
    return {"dimension": dimension}, None


# -- shared helpers (also used by the indexing chapter) -----------------------------------------


_i32 = convert.i32
_bool = convert.boolean


def _types(ts) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def result_tensor(op, r, element_type=None, rank=None) -> TensorType:
    """The (single) explicit result type, checked to be a tensor (of the given element type
    and rank when those are given)."""
    if not isinstance(r, TensorType):
        fail(op, f"result must be a tensor, got {r}")
    if element_type is not None and r.element_type is not element_type:
        fail(op, f"result must have element type {element_type} (as the operand), got {r}")
    if rank is not None and r.rank != rank:
        fail(op, f"result must have rank {rank}, got {r} of rank {r.rank}")
    return r


def check_inferred(op, expected, results) -> None:
    """Explicit result types must equal what the op's rule infers."""
    if tuple(results) != tuple(expected):
        fail(op, f"result types {_types(results)} differ from the inferred {_types(expected)}")


def integer_operand(op, what, t, rank=None) -> TensorType:
    """An operand holding indices or sizes: integer elements (and the given rank)."""
    t = tensor_operand(op, what, t)
    if t.element_type.kind not in ("sint", "uint"):
        fail(op, f"operand {what} must have integer elements, got {t}")
    if rank is not None and t.rank != rank:
        fail(op, f"operand {what} must have rank {rank}, got {t}")
    return t


def shape_operand(op, what, t, length) -> TensorType:
    """A 1-D integer operand holding one entry per dimension (``length`` of them)."""
    t = integer_operand(op, what, t, 1)
    if t.shape[0] != length:
        fail(op, f"operand {what} must have {length} entries (one per dimension), got {t}")
    return t


def unique_in_range(op, what, dims, rank, of) -> None:
    if len(set(dims)) != len(dims):
        fail(op, f"{what} {list(dims)} has repeated entries")
    for d in dims:
        if not 0 <= d < rank:
            fail(op, f"{what} entry {d} is out of range for {of} of rank {rank}")


def _scalar_of(op, what, t, element_type) -> TensorType:
    t = tensor_operand(op, what, t)
    if t.rank != 0 or t.element_type is not element_type:
        fail(op, f"operand {what} must be tensor<{element_type.name}> (a scalar of the "
                 f"operand's element type), got {t}")
    return t


def _tensor_of(b, x, op) -> TensorType:
    t = getattr(x, "type", None)
    if not isinstance(t, TensorType):
        fail(op, f"operand must be a tensor Value, got {x!r:.60}")
    return t


def _explicit_result(op, shape, element_type) -> TensorType:
    if isinstance(shape, TensorType):
        return shape
    try:
        return tensor(shape, element_type)
    except (TypeError, ValueError) as e:
        fail(op, f"result type: {e}")


# -- pad ----------------------------------------------------------------------------------------


def _pad(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    _scalar_of(op, "padding_value", types[1], x.element_type)
    low = ints(attributes["edge_padding_low"])
    high = ints(attributes["edge_padding_high"])
    interior = ints(attributes["interior_padding"])
    for name, v in (("edge_padding_low", low), ("edge_padding_high", high),
                    ("interior_padding", interior)):
        if len(v) != x.rank:
            fail(op, f"{name} has {len(v)} entries, expected {x.rank} (the rank of operand {x})")
    shape = []
    for d, (lo, hi, it, n) in enumerate(zip(low, high, interior, x.shape)):
        if it < 0:
            fail(op, f"interior_padding[{d}] = {it} must be non-negative")
        size = lo + hi + n + max(n - 1, 0) * it
        if size < 0:
            fail(op, f"dimension {d}: padding low {lo}, high {hi}, interior {it} of size {n} "
                     f"gives negative size {size}")
        shape.append(size)
    return (tensor(shape, x.element_type),)


register(OpSpec("pad", ("operand", "padding_value"),
                {"edge_padding_low": AttrSpec(i64_array, True),
                 "edge_padding_high": AttrSpec(i64_array, True),
                 "interior_padding": AttrSpec(i64_array, True)},
                infer=_pad,
                doc="Pad with padding_value: low/high edge padding (negative crops) and "
                    "interior padding between elements.", pretty=pf.PAD, quantized="storage"))


@builder_method
def pad(b, x, padding_value, low, high, interior=None, *, location=None) -> Value:
    """``pad`` ``x`` with the scalar ``padding_value``: ``low``/``high`` per-dimension edge
    padding (negative values remove elements), ``interior`` between elements (default 0)."""
    low = int_list("pad", "edge_padding_low", low)
    high = int_list("pad", "edge_padding_high", high)
    interior = (0,) * len(low) if interior is None else int_list("pad", "interior_padding",
                                                                 interior)
    return b._one("pad", (x, padding_value), {"edge_padding_low": low,
                                              "edge_padding_high": high,
                                              "interior_padding": interior},
                  location=location)


# -- reverse, broadcast, copy, bitcast ----------------------------------------------------------


def _reverse(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    unique_in_range(op, "dimensions", ints(attributes["dimensions"]), x.rank, f"operand {x}")
    return (x,)


register(OpSpec("reverse", ("operand",), {"dimensions": AttrSpec(i64_array, True)},
                infer=_reverse, pretty=pf.REVERSE, quantized="storage"))


@builder_method
def reverse(b, x, dimensions, *, location=None) -> Value:
    """Reverse the order of elements of ``x`` along each of ``dimensions``."""
    return b._one("reverse", (x,), {"dimensions": int_list("reverse", "dimensions", dimensions)},
                  location=location)


def _broadcast(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    sizes = ints(attributes["broadcast_sizes"])
    for i, s in enumerate(sizes):
        if s < 0:
            fail(op, f"broadcast_sizes[{i}] = {s} must be non-negative")
    return (tensor(tuple(sizes) + x.shape, x.element_type),)


register(OpSpec("broadcast", ("operand",), {"broadcast_sizes": AttrSpec(i64_array, True)},
                infer=_broadcast,
                doc="Prepend dimensions of broadcast_sizes: result shape sizes ++ operand shape.",
                pretty=pf.BROADCAST))


@builder_method
def broadcast(b, x, sizes, *, location=None) -> Value:
    """``x`` repeated over new leading dimensions of ``sizes`` (result shape sizes + x.shape)."""
    return b._one("broadcast", (x,), {"broadcast_sizes": int_list("broadcast", "broadcast_sizes",
                                                                   sizes)},
                  location=location)


def _copy_operand_check(op, operands, attributes, results):
    """A copy XLA prefetches across programs (``cross_program_prefetch_index``) copies a block
    argument, the buffer it prefetches; of any other value jaxlib says "synchronous CopyOp
    should not include cross_program_prefetch_index attribute". A token is no value to copy:
    jaxlib's conversion of such a copy fails naming nothing ("Unable to convert MHLO to
    StableHLO")."""
    if operands[0].type.__class__ is TokenType:
        fail(op, "the operand is a !mhlo.token, which has no value to copy: use the token "
                 "itself (jaxlib cannot convert a copy of one)")
    if attributes and attributes.get("cross_program_prefetch_index") is not None and \
            not isinstance(operands[0], BlockArgument):
        owner = getattr(operands[0], "owner", None)
        fail(op, "cross_program_prefetch_index needs a copy of a block argument (the buffer "
                 "XLA prefetches); the operand is a result of "
                 f"'{getattr(getattr(owner, 'spec', None), 'name', '?')}'")


def prefetch_misuse(module, copies):
    """``copy``'s uses_check: the first use in ``module`` of a prefetching copy's result (a
    copy of ``copies`` with a cross_program_prefetch_index) that is not its function's
    ``func.return``, as ``(function, user op, message)``, or None: such a copy's result may
    only be returned by its function. jaxlib refuses any other use, a region's
    ``mhlo.return`` included (a ``while`` body's or an ``if`` branch's: "synchronous CopyOp
    should not include cross_program_prefetch_index attribute"); it folds away some uses
    before it looks (a tuple read back, a loop that never runs), which is its choice, so
    those are refused here too."""
    from ..ir import walk
    results = {c.results[0]: c for c in copies
               if c.attributes and c.attributes.get("cross_program_prefetch_index") is not None}
    if not results:
        return None
    for fn, op in walk(module):
        if op.spec.name != "func.return":
            for v in op.operands:
                if v in results:
                    loc = results[v].location.render()
                    return fn, op, (f"uses the result of a copy with a "
                                    f"cross_program_prefetch_index (location {loc}), which "
                                    "may only be returned by its function's func.return "
                                    "(jaxlib: \"synchronous CopyOp should not include "
                                    "cross_program_prefetch_index attribute\")")
    return None


register(OpSpec("copy", ("operand",), {"cross_program_prefetch_index": AttrSpec(_i32)},
                infer=lambda op, types, attributes: (types[0],), dialects=MHLO_ONLY,
                operand_check=_copy_operand_check, uses_check=prefetch_misuse,
                pretty=pf.ELEMENTWISE))


@builder_method
def copy(b, x, *, cross_program_prefetch_index=None, location=None) -> Value:
    """A copy of ``x`` (same type)."""
    return b._one("copy", (x,), {"cross_program_prefetch_index": cross_program_prefetch_index},
                  location=location)


def _bitcast_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    if len(results) != 1:
        fail(op, f"has one result, got {len(results)}")
    r = result_tensor(op, results[0])
    xb, rb = x.num_elements * x.element_type.bits, r.num_elements * r.element_type.bits
    if xb != rb:
        fail(op, f"result {r} holds {rb} bits, expected {xb} (as operand {x}): XLA's bitcast "
                 "keeps the byte size")


register(OpSpec("bitcast", ("operand",), check=_bitcast_check, dialects=MHLO_ONLY,
                doc="Reinterpret the operand's buffer as the (explicit) result type. XLA "
                    "compiles it only where it is an identity or a layout-only change: on CPU a "
                    "bitcast to another shape or element type fails with 'Unexpected bitcast "
                    "operation seen during layout assignment' (use bitcast_convert or reshape).",
                pretty=pf.FUNCTIONAL_FORM))


@builder_method
def bitcast(b, x, result_type, *, location=None) -> Value:
    """``mhlo.bitcast`` of ``x`` to ``result_type`` (a TensorType; same number of bits)."""
    return b._one("bitcast", (x,), None, (result_type,), location=location)


# -- dimension sizes ----------------------------------------------------------------------------


def _dimension_of(op, x, attributes):
    d = attributes["dimension"].value
    if not 0 <= d < x.rank:
        fail(op, f"dimension {d} is out of range for operand {x} of rank {x.rank}")
    return d


def _get_dimension_size(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    _dimension_of(op, x, attributes)
    return (tensor((), i32),)


register(OpSpec("get_dimension_size", ("operand",), {"dimension": AttrSpec(_i64, True)},
                infer=_get_dimension_size,
                doc="The size of one dimension as tensor<i32>.", pretty=pf.DIM_FORM,
                quantized="storage"))


@builder_method
def get_dimension_size(b, x, dimension, *, location=None) -> Value:
    """The size of ``x``'s ``dimension`` as a ``tensor<i32>``."""
    return b._one("get_dimension_size", (x,), {"dimension": dimension}, location=location)


def _set_dimension_size(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    size = tensor_operand(op, "size", types[1])
    if size.rank != 0 or size.element_type is not i32:
        fail(op, f"operand size must be tensor<i32>, got {size}")
    _dimension_of(op, x, attributes)
    return (x,)


register(OpSpec("set_dimension_size", ("operand", "size"), {"dimension": AttrSpec(_i64, True)},
                infer=_set_dimension_size, operand_check=dimension_size_held,
                doc="Mark one dimension as dynamically sized (size <= its static size). The "
                    "result type stays static here; XLA treats the elements beyond size as "
                    "padding (reductions skip them).", pretty=pf.DIM_FORM))


@builder_method
def set_dimension_size(b, x, size, dimension, *, location=None) -> Value:
    """``x`` with ``dimension``'s runtime size set to the ``tensor<i32>`` ``size``."""
    return b._one("set_dimension_size", (x, size), {"dimension": dimension}, location=location)


# -- dynamic (shape-operand) variants -----------------------------------------------------------


def _dynamic_broadcast_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = result_tensor(op, results[0], x.element_type)
    shape_operand(op, "output_dimensions", types[1], r.rank)
    _broadcast_check(op, types[:1], attributes, results, regions)
    seen = set()
    for name in ("known_expanding_dimensions", "known_nonexpanding_dimensions"):
        attr = attributes.get(name)
        if attr is None:
            continue
        known = ints(attr)
        unique_in_range(op, name, known, x.rank, f"operand {x}")
        both = seen & set(known)
        if both:
            fail(op, f"operand dimensions {sorted(both)} are listed as both known expanding "
                     "and known non-expanding")
        seen |= set(known)


register(OpSpec("dynamic_broadcast_in_dim", ("operand", "output_dimensions"),
                {"broadcast_dimensions": AttrSpec(i64_array, True),
                 "known_expanding_dimensions": AttrSpec(i64_array),
                 "known_nonexpanding_dimensions": AttrSpec(i64_array)},
                check=_dynamic_broadcast_check,
                operand_check=holds_result_shape(1, "output_dimensions"),
                doc="broadcast_in_dim to the shape held by output_dimensions (explicit result "
                    "type). XLA compiles it with a static result type, the shape operand being "
                    "a constant or an argument.", pretty=pf.DYNAMIC_BROADCAST_IN_DIM,
                    quantized="storage", n_results=1))


def _known(v):
    return None if v is None else tuple(v)


@builder_method
def dynamic_broadcast_in_dim(b, x, output_dimensions, broadcast_dimensions, result_type, *,
                             known_expanding_dimensions=None,
                             known_nonexpanding_dimensions=None, location=None) -> Value:
    """``broadcast_in_dim`` of ``x`` to the shape held by the 1-D integer tensor
    ``output_dimensions``; ``result_type`` is a TensorType or a static shape."""
    t = _tensor_of(b, x, "dynamic_broadcast_in_dim")
    rt = _explicit_result("dynamic_broadcast_in_dim", result_type, t.element_type)
    return b._one("dynamic_broadcast_in_dim", (x, output_dimensions), {
        "broadcast_dimensions": int_list("dynamic_broadcast_in_dim", "broadcast_dimensions",
                                         broadcast_dimensions),
        "known_expanding_dimensions": _known(known_expanding_dimensions),
        "known_nonexpanding_dimensions": _known(known_nonexpanding_dimensions)}, (rt,),
        location=location)


def _dynamic_reshape_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = result_tensor(op, results[0], x.element_type)
    shape_operand(op, "output_shape", types[1], r.rank)
    _reshape_check(op, types[:1], attributes, results, regions)


register(OpSpec("dynamic_reshape", ("operand", "output_shape"), check=_dynamic_reshape_check,
                operand_check=holds_result_shape(1, "output_shape"),
                doc="reshape to the shape held by output_shape (explicit result type). With a "
                    "static result type XLA uses the result type; a constant output_shape must "
                    "hold it (jaxlib reads the constant; so does operand_check).",
                pretty=pf.FUNCTIONAL_FORM, quantized="storage", n_results=1))


@builder_method
def dynamic_reshape(b, x, output_shape, result_type, *, location=None) -> Value:
    """``reshape`` of ``x`` to the shape held by ``output_shape`` (1-D integer tensor);
    ``result_type`` is a TensorType or a static shape."""
    t = _tensor_of(b, x, "dynamic_reshape")
    rt = _explicit_result("dynamic_reshape", result_type, t.element_type)
    return b._one("dynamic_reshape", (x, output_shape), None, (rt,), location=location)


def _dynamic_iota_check(op, types, attributes, results, regions):
    r = result_tensor(op, results[0])
    shape_operand(op, "output_shape", types[0], r.rank)
    _iota_check(op, (), attributes, results, regions)


register(OpSpec("dynamic_iota", ("output_shape",), {"iota_dimension": AttrSpec(_i64, True)},
                check=_dynamic_iota_check,
                # (jaxlib takes a constant shape other than the result's and runs the result's)
                operand_check=holds_result_shape(0, "output_shape"),
                doc="iota of the shape held by output_shape (explicit result type).",
                pretty=pf.DYNAMIC_IOTA, n_results=1, quantized="not_yet"))


@builder_method
def dynamic_iota(b, output_shape, result_type, dimension=0, *, location=None) -> Value:
    """``iota`` along ``dimension`` with the shape held by ``output_shape``; ``result_type``
    is a TensorType."""
    return b._one("dynamic_iota", (output_shape,), {"iota_dimension": dimension},
                  (result_type,), location=location)


def _dynamic_pad_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    _scalar_of(op, "padding_value", types[1], x.element_type)
    result_tensor(op, results[0], x.element_type, x.rank)
    for i, name in enumerate(("edge_padding_low", "edge_padding_high", "interior_padding")):
        shape_operand(op, name, types[2 + i], x.rank)


register(OpSpec("dynamic_pad", ("operand", "padding_value", "edge_padding_low",
                                "edge_padding_high", "interior_padding"),
                check=_dynamic_pad_check, operand_check=dynamic_pad_held,
                doc="pad with paddings held by operands (explicit result type). XLA compiles it "
                    "only when the paddings are constants (it folds to pad); with argument "
                    "paddings: \"'stablehlo.dynamic_pad' op can't be translated to XLA HLO\".",
                pretty=pf.FUNCTIONAL_FORM, n_results=1, quantized="not_yet"))


@builder_method
def dynamic_pad(b, x, padding_value, low, high, interior, result_type, *, location=None) -> Value:
    """``pad`` with paddings held by 1-D integer tensors; ``result_type`` is a TensorType or a
    static shape."""
    t = _tensor_of(b, x, "dynamic_pad")
    rt = _explicit_result("dynamic_pad", result_type, t.element_type)
    return b._one("dynamic_pad", (x, padding_value, low, high, interior), None, (rt,),
                  location=location)


def _real_dynamic_slice_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    result_tensor(op, results[0], x.element_type, x.rank)
    first = None
    for i, name in enumerate(("start_indices", "limit_indices", "strides")):
        t = shape_operand(op, name, types[1 + i], x.rank)
        if first is None:
            first = t
        elif t is not first:
            fail(op, f"operand {name} must have the same type as start_indices ({first}), "
                     f"got {t}")


register(OpSpec("real_dynamic_slice", ("operand", "start_indices", "limit_indices", "strides"),
                check=_real_dynamic_slice_check, operand_check=real_dynamic_slice_held,
                doc="slice with bounds held by operands (explicit result type). XLA compiles it "
                    "only when the bounds are constants (it folds to slice); with argument "
                    "bounds: \"'stablehlo.real_dynamic_slice' op can't be translated to XLA "
                    "HLO\".", pretty=pf.FUNCTIONAL_FORM, n_results=1))


@builder_method
def real_dynamic_slice(b, x, start_indices, limit_indices, strides, result_type, *,
                       location=None) -> Value:
    """``slice`` with bounds held by 1-D integer tensors; ``result_type`` is a TensorType or
    a static shape."""
    t = _tensor_of(b, x, "real_dynamic_slice")
    rt = _explicit_result("real_dynamic_slice", result_type, t.element_type)
    return b._one("real_dynamic_slice", (x, start_indices, limit_indices, strides), None,
                  (rt,), location=location)


__all__ = ["ints", "result_tensor", "check_inferred", "integer_operand", "shape_operand",
           "unique_in_range"]
