"""MLIR's compact reduce, ``mhlo.reduce(%x init: %i) applies mhlo.add across dimensions =
[0] : ...``: which reduces print that way (a body of one commutative binary op of its two
arguments, returned) and the body the name stands for when read. Printer and reader of
``mhlo_ir.pretty_forms.Reduce`` share these, so what one writes the other reads.
"""

from __future__ import annotations

from .combining import CombiningRegion
from .types import TensorType

__all__ = ["COMMUTATIVE", "compact_reducer", "compact_body"]

# Ops a reduce may name with ``applies``: MLIR's compact form needs a commutative binary op
# (mulhi: MHLO's alone, as jaxlib's reader and printer take it).
COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor", "mulhi"})


def compact_reducer(op):
    """The inner op's spec when MLIR prints ``op`` (a reduce) as ``applies mhlo.add``: one
    input, a body of one commutative op of the block's two scalar arguments, in order, whose
    result the return gives (MLIR's isEligibleForCompactPrint). Unlike MLIR's check, an
    inner op with attributes is not eligible: MLIR's compact print drops them, ours prints
    the body in full and keeps what the module holds (MLIR reads it)."""
    n = len(op.operands) // 2
    region = op.regions[0]
    if region.__class__ is CombiningRegion and not region.made:
        # A recipe (its block not made): eligible as the block it stands for would be.
        spec = region.spec
        et = op.operands[0].type.element_type
        if n != 1 or spec.namespace != "hlo" or spec.name not in COMMUTATIVE or \
                region.scalar is not TensorType((), et) or region.result_type is not \
                region.scalar:
            return None
        return spec
    if n != 1 or len(region.blocks) != 1:
        return None
    block = op.regions[0].blocks[0]
    ops = block.operations
    if len(ops) != 2:
        return None
    inner, ret = ops
    spec = inner.spec
    if spec.namespace != "hlo" or spec.name not in COMMUTATIVE or inner.attributes or \
            inner.regions or len(inner.results) != 1:
        return None
    et = op.operands[0].type.element_type
    if tuple(inner.operands) != tuple(block.arguments) or \
            inner.operands[0].type is not TensorType((), et):
        return None
    if not ret.spec.terminator or tuple(ret.operands) != tuple(inner.results):
        return None
    return spec


def compact_body(p, r, itok):
    """The body ``applies`` names: ``^bb0(%a, %b): %c = op %a, %b; return %c``."""
    from .ir import Block, Region
    from .location import UNKNOWN
    from .ops.spec import REGISTRY  # (the table imports the forms)
    name = itok.text
    prefix, _, kind = name.partition(".")
    own = r.name.partition(".")[0]
    if prefix != own or kind not in COMMUTATIVE or own not in REGISTRY[kind].dialects:
        ops = ", ".join(f"{own}.{k}" for k in sorted(COMMUTATIVE)
                        if own in REGISTRY[k].dialects)
        raise p.ts.error(f"'{r.name}' applies {name}: expected a commutative binary op of "
                         f"{own} ({ops})", itok)  # (as MLIR's reader refuses it)
    et = r.operands[0].type.element_type
    t = TensorType((), et)
    block = Block([t, t])
    a, b = block.arguments
    inner = p.make(name, [a, b], {}, {}, (), (t,), UNKNOWN, itok, block)
    block.operations.append(inner)
    ret = p.make(f"{prefix}.return", [inner.results[0]], {}, {}, (), (), UNKNOWN, itok, block)
    block.operations.append(ret)
    return Region([block])
