"""Valid programs XLA:CPU (jaxlib 0.10.2) crashes on, as predicates over ops: ``verify``
refuses them before XLA sees them, and ``mhlo_ir.strategies`` does not generate them. Each is
a finding of docs/findings.md, measured in a subprocess (they take the process down).

Kept here, in the core package, because both of those use them and neither may import the
other (verify needs no hypothesis; mhlo_ir never imports verify).
"""

from __future__ import annotations

from .ir import defining_ops

__all__ = ["narrowing_signed_convert", "complex_quotient_of_constants", "bitwise_crash"]


def narrowing_signed_convert(value) -> bool:
    """Whether ``value`` is a ``convert`` from a signed integer type to a narrower one (i32
    to i8, i64 to i32...)."""
    op = getattr(value, "owner", None)
    if getattr(getattr(op, "spec", None), "name", None) != "convert":
        return False
    src, dst = op.operands[0].type.element_type, value.type.element_type
    return src.kind == "sint" and dst.kind == "sint" and src.bits > dst.bits


def bitwise_crash(op) -> bool:
    """``and``/``or`` of more than one element with an operand that is a narrowing signed
    convert: XLA:CPU segfaults compiling it (``jax.jit(lambda a, c: a.astype(jnp.int8) |
    c)`` on int32 ``a`` does too)."""
    return op.spec.name in ("and", "or") and op.results[0].type.num_elements > 1 and any(
        narrowing_signed_convert(v) for v in op.operands)


def complex_quotient_of_constants(value) -> bool:
    """Whether ``value`` is computed from constants alone and through a complex divide (an
    all_reduce or reduce_scatter of it aborts XLA:CPU's compile)."""
    ops = defining_ops(value)
    return ops is not None and any(
        op.spec.name == "divide" and op.results[0].type.element_type.is_complex for op in ops)
