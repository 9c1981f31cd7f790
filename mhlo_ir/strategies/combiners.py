"""Reduction bodies with their identities: what reduce, reduce_window, scatter, all_reduce
and select_and_scatter combine with. Init values are the combiner's identity, because XLA may
apply the init value more than once (the StableHLO spec leaves other inits to the
implementation)."""

from __future__ import annotations

from .. import dtypes
from ..xla_cpu import collective_ops

__all__ = ["combiner", "extreme"]


def extreme(et, low: bool):
    """The least (``low``) or greatest value of ``et`` (``dtypes.extreme``)."""
    return dtypes.extreme(et.dtype, low)


def combiner(s, et, exact_only: bool = False, collective: bool = False):
    """``(name, body, identity)``: a commutative, associative combiner of ``et`` (float sums
    and products only when not ``exact_only``; they mark the program "reassociates").
    ``collective``: only those XLA:CPU's all-reduce implements (``xla_cpu.collective_ops``:
    "Unsupported reduction computation" otherwise)."""
    kind = et.kind
    if kind == "bool":
        options = [("and", True), ("or", False), ("xor", False)]
    elif kind in ("sint", "uint"):
        options = [("add", 0), ("multiply", 1), ("maximum", extreme(et, True)),
                   ("minimum", extreme(et, False)), ("and", -1 if kind == "sint" else
                                                    extreme(et, False)),
                   ("or", 0), ("xor", 0)]
    elif kind == "float":
        options = [("maximum", extreme(et, True)), ("minimum", extreme(et, False))]
        if not exact_only and et.name != "f8E8M0FNU":
            options += [("add", 0.0), ("multiply", 1.0)]
    else:
        options = [] if exact_only else [("add", 0), ("multiply", 1)]
    if collective:
        keep = collective_ops(et)
        options = [o for o in options if o[0] in keep]
    if not options:
        return None
    name, identity = s.c.choice(options)
    if kind in ("float", "complex") and name in ("add", "multiply"):
        s.gen.traits.add("reassociates")
    method = {"and": "and_", "or": "or_"}.get(name, name)
    return name, (lambda r, acc, x: getattr(r, method)(acc, x)), identity
