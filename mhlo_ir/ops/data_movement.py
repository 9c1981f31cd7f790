"""Ops that create, reshape and move data: constant, iota, broadcast_in_dim, reshape,
transpose, slice, concatenate."""

from __future__ import annotations

from ..attributes import IntegerAttr
from ..dense import DenseElementsAttr, dense_i64
from ..dtypes import i64
from ..types import TensorType, tensor
from .spec import AttrSpec, OpSpec, fail, register, tensor_operand


def _i64(v):
    return v if isinstance(v, IntegerAttr) else IntegerAttr(int(v), i64)


def _dense_i64(v):
    return v if isinstance(v, DenseElementsAttr) else dense_i64(v)


def ints(attr) -> tuple:
    """The integers held by a dense i64 attribute (or an IntegerAttr), as a tuple."""
    if isinstance(attr, IntegerAttr):
        return (attr.value,)
    if attr.ints is not None:
        return attr.ints
    return tuple(int(x) for x in attr.to_array().reshape(-1))


def _constant(op, types, attributes):
    value = attributes["value"]
    if not isinstance(value, DenseElementsAttr):
        fail(op, f"attribute value must be a dense elements attribute, got {value!r}")
    return (value.type,)


def _dense_value(v):
    if isinstance(v, DenseElementsAttr):
        return v
    try:
        return DenseElementsAttr.from_array(v)
    except TypeError:
        raise TypeError(f"expected a dense elements attribute or a numeric array, got "
                        f"{type(v).__name__} {v!r:.60}") from None


register(OpSpec("constant", (), {"value": AttrSpec(_dense_value, True)},
                infer=_constant, chapter="data_movement"))


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
                chapter="data_movement"))


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
                {"broadcast_dimensions": AttrSpec(_dense_i64, True)},
                check=_broadcast_check, chapter="data_movement"))


def _reshape_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = results[0]
    if not isinstance(r, TensorType) or r.element_type is not x.element_type:
        fail(op, f"result must be a tensor of {x.element_type}, got {r}")
    if r.num_elements != x.num_elements:
        fail(op, f"result {r} has {r.num_elements} elements, expected {x.num_elements} (as "
                 f"operand {x})")


register(OpSpec("reshape", ("operand",), check=_reshape_check, chapter="data_movement"))


def _transpose(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    perm = ints(attributes["permutation"])
    if sorted(perm) != list(range(x.rank)):
        fail(op, f"permutation {list(perm)} is not a permutation of 0..{x.rank - 1} (operand "
                 f"{x})")
    return (tensor(tuple(x.shape[p] for p in perm), x.element_type),)


register(OpSpec("transpose", ("operand",), {"permutation": AttrSpec(_dense_i64, True)},
                infer=_transpose, chapter="data_movement"))


def _slice(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    start = ints(attributes["start_indices"])
    limit = ints(attributes["limit_indices"])
    strides = ints(attributes["strides"])
    for name, v in (("start_indices", start), ("limit_indices", limit), ("strides", strides)):
        if len(v) != x.rank:
            fail(op, f"{name} has {len(v)} entries, expected {x.rank} (the rank of operand {x})")
    shape = []
    for d, (s, l, st, n) in enumerate(zip(start, limit, strides, x.shape)):
        if st <= 0:
            fail(op, f"strides[{d}] = {st} must be positive")
        if not 0 <= s <= l <= n:
            fail(op, f"dimension {d}: need 0 <= start ({s}) <= limit ({l}) <= size ({n}) of "
                     f"operand {x}")
        shape.append(-(-(l - s) // st))
    return (tensor(shape, x.element_type),)


register(OpSpec("slice", ("operand",),
                {"start_indices": AttrSpec(_dense_i64, True),
                 "limit_indices": AttrSpec(_dense_i64, True),
                 "strides": AttrSpec(_dense_i64, True)},
                infer=_slice, chapter="data_movement"))


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
                infer=_concatenate, chapter="data_movement"))

__all__ = ["ints"]
