"""Valid programs that jaxlib's conversion of MHLO to HLO (0.10.2) rejects, as predicates
over ops: ``verify`` says why in Python before jaxlib's own, misleading message, and
``mhlo_ir.strategies`` does not generate them. Each is a finding of docs/findings.md.

Kept in the core package for the reason ``mhlo_ir.xla_cpu`` is: verify and the strategies
both use them, and neither may import the other.
"""

from __future__ import annotations

__all__ = ["constant_in_closed_region", "closed_region_constant_in", "hoisted_region_constant",
           "stochastic_convert_layouts_differ", "unfoldable_bounds"]


def constant_in_closed_region(ops) -> bool:
    """Whether a constant sits in the region of one of ``ops`` (or of an op nested in them)
    whose regions are closed (reduction bodies, comparators, map bodies: the op table's
    ``closed_regions``), or is used there from outside it (the verifier's one capture
    allowed: where jaxlib's legalization hoists a region's constants, the two are alike)."""
    stack = [(op, False) for op in ops]
    while stack:
        op, closed = stack.pop()
        if closed and (op.spec.name == "constant" or any(
                getattr(v, "spec", None) is not None and v.spec.name == "constant"
                for v in op.operands)):
            return True
        if op.regions:
            inner = closed or op.spec.closed_regions
            for region in op.regions:
                for block in region.blocks:
                    stack.extend((o, inner) for o in block.operations)
    return False


def closed_region_constant_in(module) -> bool:
    """``constant_in_closed_region`` over every function of ``module``."""
    return constant_in_closed_region([op for fn in module.functions
                                      for block in fn.body.blocks
                                      for op in block.operations])


def hoisted_region_constant(module) -> bool:
    """A ``chlo.broadcast_select`` in a module whose closed regions hold (or use) a constant:
    jaxlib's legalization of chlo to MHLO (which that op's presence sets off) moves constants
    out of every region into the function, and its export to HLO then rejects the closed region
    ("requires all operands to be defined in the parent region for export"). While and if
    bodies, whose export captures outer values, are not affected."""
    from .ir import walk
    return any(op.spec.name == "chlo.broadcast_select" for _, op in walk(module)) and \
        closed_region_constant_in(module)


def _through_transpose(value) -> bool:
    """Whether ``value`` is computed through a non-identity transpose or an einsum (which
    XLA's HLO spells with transposes)."""
    from .ir import producers
    for op in producers(value):
        name = op.spec.name
        if name == "einsum":
            return True
        if name == "transpose":
            perm = tuple(op.attributes["permutation"].ints)
            if perm != tuple(range(len(perm))):
                return True
    return False


def stochastic_convert_layouts_differ(op) -> bool:
    """A ``stochastic_convert`` whose operand or random bits come through a transpose (or
    an einsum): XLA's conversion gives a transpose's result a permuted layout, which some
    ops pass on (elementwise ones, bitcast_convert) and others reset (a slice to a scalar
    and a broadcast), and its HLO verifier then compares the two operands' shapes layouts
    included ("Stochastic convert operand shape does not match random tensor shape:
    f32[2,2,1] vs u32[2,2,1]"). Which layout each side ends with is XLA's to work out, so
    any transpose upstream counts (both sides transposed alike would convert)."""
    return op.spec.name == "stochastic_convert" and any(
        _through_transpose(v) for v in op.operands[:2])


# Ops whose bound operands (from this index on) jaxlib's conversion to HLO folds into a
# static op when they are constants, and cannot translate otherwise ("'stablehlo.
# real_dynamic_slice' op can't be translated to XLA HLO"; measured on 0.10.2).
_STATIC_BOUNDS = {"real_dynamic_slice": 1, "dynamic_pad": 2, "dynamic_gather": 2,
                  "dynamic_conv": 2}


def unfoldable_bounds(op) -> str | None:
    """The name of the op when it is ``real_dynamic_slice``, ``dynamic_pad``,
    ``dynamic_gather`` (its slice sizes) or ``dynamic_conv`` (its padding) with a bound
    computed from a function's argument (which no folding makes a constant); else None."""
    from .ir import defining_ops
    name = op.spec.name
    first = _STATIC_BOUNDS.get(name)
    if first is None:
        return None
    for v in op.operands[first:]:
        if defining_ops(v) is None:
            return name
    return None


def stablehlo_import_problem(op) -> str | None:
    """Why XLA cannot compile ``op`` read from StableHLO (the TPU plugin's way in, and a
    portable artifact's), where it compiles the op read from MHLO, or None: a
    ``dynamic_conv``, which StableHLO has but XLA's import of it does not ("'stablehlo.
    dynamic_conv' op can't be translated to XLA HLO"; MHLO's import folds a constant padding
    into a convolution; measured on 0.10.2)."""
    if op.spec.name == "dynamic_conv":
        return ("XLA's import of StableHLO has no 'dynamic_conv' (\"can't be translated to XLA "
                "HLO\"; MHLO's folds a constant padding into a convolution): use convolution")
    return None


def narrow_negative_padding(op):
    """The element type of a ``dynamic_conv``'s constant padding when it is narrower than
    i64 and holds a negative value, else None: jaxlib's conversion, folding the op into a
    convolution, zero-extends the padding to i64 (-1 in i32 reads as 4294967295: "inferred
    shape '[1, 4294967300, 1]' is incompatible with return type"; measured on 0.10.2 for i8,
    i16 and i32)."""
    if op.spec.name != "dynamic_conv":
        return None
    from .ops.held import constant_ints
    et = op.operands[2].type.element_type
    held = constant_ints(op.operands[2])
    if held is None or et.bits >= 64 or et.kind != "sint" or min(held, default=0) >= 0:
        return None
    return et


def unsigned_constant_start(op):
    """A ``dynamic_slice`` whose start indices are all constants, one of an unsigned type
    with its top bit set: ``(index, its element type)``, else None. jaxlib's conversion
    makes such an op a static slice, reading the starts as signed and clamping that (ui8 255
    reads as -1, clamped to 0: the slice at 0 where the spec clamps 255 to the last start;
    wrong numbers, measured on 0.10.2). Starts computed at run time are read right."""
    if op.spec.name != "dynamic_slice":
        return None
    from .ops.held import constant_ints
    found = None
    for v in op.operands[1:]:
        held = constant_ints(v)
        if held is None:
            return None
        et = v.type.element_type
        if found is None and et.kind == "uint" and held and held[0] >= 1 << (et.bits - 1):
            found = (held[0], et)
    return found


def empty_scatter_of_constants(op) -> bool:
    """A ``scatter`` of no updates (a zero-size updates operand) whose operand, indices and
    updates are all computed from constants: jaxlib's conversion to HLO folds it and
    segfaults the process (measured on 0.10.2; with any of them from an argument it runs)."""
    if op.spec.name != "scatter":
        return False
    from .ir import defining_ops
    n = len(op.operands)
    updates = op.operands[(n + 1) // 2:]
    return any(getattr(u.type, "num_elements", 1) == 0 for u in updates) and all(
        defining_ops(v) is not None for v in op.operands)
