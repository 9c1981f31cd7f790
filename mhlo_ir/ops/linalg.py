"""dot_general: batched, contracted products of two tensors."""

from __future__ import annotations

from ..attributes import ArrayAttr
from ..mhlo_attributes import DotDimensionNumbers, precision
from ..types import tensor
from .spec import AttrSpec, OpSpec, fail, register, tensor_operand


def _precision_config(v):
    if isinstance(v, ArrayAttr):
        return v
    return ArrayAttr(tuple(precision(p) for p in v))


def _dims_ok(op, side, dims, rank, used):
    for d in dims:
        if not 0 <= d < rank:
            fail(op, f"{side} dimension {d} is out of range for the {side} operand of rank {rank}")
        if d in used:
            fail(op, f"{side} dimension {d} is used twice in the dot dimension numbers")
        used.add(d)


def _dot_general(op, types, attributes):
    lhs = tensor_operand(op, "lhs", types[0])
    rhs = tensor_operand(op, "rhs", types[1])
    dn = attributes["dot_dimension_numbers"]
    if not isinstance(dn, DotDimensionNumbers):
        fail(op, f"attribute dot_dimension_numbers must be DotDimensionNumbers, got {dn!r}")
    lb, rb = dn.lhs_batching_dimensions, dn.rhs_batching_dimensions
    lc, rc = dn.lhs_contracting_dimensions, dn.rhs_contracting_dimensions
    if len(lb) != len(rb):
        fail(op, f"lhs_batching_dimensions {list(lb)} and rhs_batching_dimensions {list(rb)} "
                 "differ in length")
    if len(lc) != len(rc):
        fail(op, f"lhs_contracting_dimensions {list(lc)} and rhs_contracting_dimensions "
                 f"{list(rc)} differ in length")
    lused, rused = set(), set()
    _dims_ok(op, "lhs", lb + lc, lhs.rank, lused)
    _dims_ok(op, "rhs", rb + rc, rhs.rank, rused)
    for kind, ld, rd in (("batching", lb, rb), ("contracting", lc, rc)):
        for a, b in zip(ld, rd):
            if lhs.shape[a] != rhs.shape[b]:
                fail(op, f"{kind} dimensions differ in size: lhs dimension {a} has size "
                         f"{lhs.shape[a]} but rhs dimension {b} has size {rhs.shape[b]} "
                         f"({lhs} vs {rhs})")
    if lhs.element_type is not rhs.element_type:
        fail(op, f"operands lhs and rhs must have the same element type, got {lhs} and {rhs}")
    shape = [lhs.shape[d] for d in lb]
    shape += [n for d, n in enumerate(lhs.shape) if d not in lused]
    shape += [n for d, n in enumerate(rhs.shape) if d not in rused]
    pc = attributes.get("precision_config")
    if pc is not None and len(pc.elements) not in (0, 2):
        fail(op, f"precision_config must have 0 or 2 entries, got {len(pc.elements)}")
    return (tensor(shape, lhs.element_type),)


def _dot_general_check(op, types, attributes, results, regions):
    expected = _dot_general(op, types, attributes)[0]
    r = results[0]
    if getattr(r, "shape", None) != expected.shape:
        fail(op, f"result must have shape {list(expected.shape)}, got {r}")


register(OpSpec("dot_general", ("lhs", "rhs"),
                {"dot_dimension_numbers": AttrSpec(
                    lambda v: v if isinstance(v, DotDimensionNumbers) else DotDimensionNumbers(**v),
                    True),
                 "precision_config": AttrSpec(_precision_config)},
                infer=_dot_general, check=_dot_general_check, chapter="linalg"))
