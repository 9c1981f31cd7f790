"""Lowering a sub-jaxpr inline: what every rule with a nested jaxpr (calls, loops, branches,
custom derivatives, special functions given as jaxprs) does with its body."""

from __future__ import annotations

from .mlir import as_values, flat_values, ir_constants, jaxpr_subcomp


def lower_closed(mctx, b, closed, tokens, args) -> tuple:
    """Lower a ClosedJaxpr inline at the builder ``b`` on ``args``, its constants rebuilt
    there (``ir_constants`` reads JAX's device arrays back through ``__array__``). Returns
    (the output IR values, flat; the tokens after it)."""
    consts = [ir_constants(b, c) for c in closed.consts]
    outs, tokens = jaxpr_subcomp(mctx, b, closed.jaxpr, tokens, consts,
                                 *[as_values(a) for a in args])
    return flat_values(outs), tokens
