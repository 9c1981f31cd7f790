"""Rules for linear algebra primitives."""

from __future__ import annotations

from ..mlir import register_lowering

_PRECISIONS = {None: None, "DEFAULT": "DEFAULT", "HIGH": "HIGH", "HIGHEST": "HIGHEST"}


def _precision_config(precision):
    """jax's precision param: None, one Precision, or a pair -> two mhlo precisions."""
    if precision is None:
        return None
    pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
    names = [getattr(p, "name", p) for p in pair]
    if all(n is None for n in names):
        return None
    return [n or "DEFAULT" for n in names]


def _dot_general(ctx, lhs, rhs, *, dimension_numbers, precision=None,
                 preferred_element_type=None, out_sharding=None, **_):
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = ctx.avals_out[0].dtype
    if lhs.type.element_type is not rhs.type.element_type:
        # jax allows mixed operand types with a preferred element type: convert both to it.
        from ..helpers import convert_hlo
        lhs = convert_hlo(ctx.builder, lhs, out_dtype)
        rhs = convert_hlo(ctx.builder, rhs, out_dtype)
    in_dtype = lhs.type.dtype
    result = None if out_dtype is in_dtype or out_dtype == in_dtype else out_dtype
    return [ctx.builder.dot_general(lhs, rhs, (lc, rc), (lb, rb),
                                   precision_config=None if precision is None else
                                   _precision_config(precision),
                                   result_element_type=result)]


register_lowering("dot_general", _dot_general)
