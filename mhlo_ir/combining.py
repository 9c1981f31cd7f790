"""Combining regions: the one-block region most region-holding ops of a program hold,

    ^bb0(%a: T, %b: T):
      %c = inner(%a, %b)
      return(%c)

(every reduction's body, reduce_window's, all_reduce's, scatter's update, sort's comparator),
told from others and made anew in one place: the parser makes such an op whole from one it
read before (``mhlo_ir.parse_regions``, ``parse_templates``), and the verifier judges such
ops alike once (their rules see the region's types and its inner op's kind only).
"""

from __future__ import annotations

from .ir import Block, Region, make_operation
from .location import UNKNOWN
from .op_attributes import OpAttributes

__all__ = ["combining_ops", "combining_recipe", "combining_regions"]


def combining_ops(op):
    """``(inner, return, %a, %b)`` when ``op``'s one region is one block
    ``^bb0(%a, %b): %c = inner(%a, %b); return(%c)`` (the return without attributes); else
    None. What the printer's one-piece path and ``combining_recipe`` both ask first."""
    regions = op.regions
    if len(regions) != 1 or len(regions[0].blocks) != 1:
        return None
    block = regions[0].blocks[0]
    ops = block.operations
    args = block.arguments
    if len(ops) != 2 or len(args) != 2:
        return None
    inner, ret = ops
    x, y = args
    if ret.attributes or ret.regions or ret.results or inner.regions or \
            len(inner.results) != 1 or tuple(inner.operands) != (x, y) or \
            tuple(ret.operands) != inner.results:
        return None
    return inner, ret, x, y


def combining_recipe(op, implied: bool = False):
    """``(type of %a, type of %b, inner spec, its attributes, its result type, return spec,
    inner location, return location)`` when ``op``'s one region is a combining block
    (``combining_ops``) whose arguments have no location and whose inner op's attributes
    are read-only (what a reduction holds); else None.

    ``implied``: arguments located where the whole block and ``op`` are (one location
    object) are taken too: the body MLIR makes of a reduce's ``applies mhlo.add``, which the
    custom form implies rather than spells (who asks must tell it from one without
    locations, by comparing the inner location with ``op.location``)."""
    parts = combining_ops(op)
    if parts is None:
        return None
    inner, ret, x, y = parts
    if x.location is not UNKNOWN or y.location is not UNKNOWN:
        loc = op.location
        if not implied or x.location is not loc or y.location is not loc or \
                inner.location is not loc or ret.location is not loc:
            return None
    attributes = inner.attributes
    if attributes is not None and attributes.__class__ is not OpAttributes:
        return None
    return (x.type, y.type, inner.spec, attributes, inner.results[0].type, ret.spec,
            inner.location, ret.location)


def combining_regions(recipe, inner_location, return_location,
                      argument_location=UNKNOWN) -> tuple:
    """The one region ``recipe`` (``combining_recipe``'s first six) describes, new, as a
    regions tuple, its ops and arguments at the locations given."""
    t0, t1, spec, attributes, rt, ret_spec = recipe
    block = Block((t0, t1), None if argument_location is UNKNOWN else
                  (argument_location, argument_location))
    x, y = block.arguments
    inner = make_operation(spec, (x, y), (rt,), attributes, (), inner_location, block)
    ops = block.operations
    ops.append(inner)
    ops.append(make_operation(ret_spec, (inner,), (), None, (), return_location, block))
    return (Region([block]),)
