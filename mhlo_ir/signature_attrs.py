"""What XLA reads from a function's argument and result attributes, checked in Python
before jaxlib sees it (measured with jaxlib 0.10.2; docs/findings.md): an ``mhlo.sharding``
that fits its value, ``tf.aliasing_output`` naming a result of a tensor argument, no result
named twice. The verifier asks it of every function (``Module.verify``)."""

from __future__ import annotations

from .sharding_text import sharding_mismatch
from .types import TensorType

__all__ = ["entry_problem", "alias_problem", "shared_alias", "byte_size"]

def entry_problem(attrs, t) -> str | None:
    """Why the attributes ``attrs`` of an argument or result of type ``t`` are not what XLA
    can read, or None."""
    sharding = attrs.get("mhlo.sharding")
    if sharding is not None:
        why = sharding_mismatch(getattr(sharding, "value", None), t)
        if why is not None:
            return f"mhlo.sharding {sharding.value!r} does not fit: {why}"
    return None


def alias_problem(i: int, attrs, args, results) -> str | None:
    """Why argument ``i``'s ``tf.aliasing_output`` (in ``attrs``) names no result XLA can
    alias with it, or None: a result index in range, no jax.buffer_donor beside it, and a
    tensor on both sides (XLA aliases arrays: "RET_CHECK failure ... param_subshape.
    IsArray()" for a token)."""
    alias = attrs.get("tf.aliasing_output")
    if alias is None:
        return None
    k = getattr(alias, "value", None)
    if k.__class__ is not int or not 0 <= k < len(results):
        return (f"tf.aliasing_output {k!r} names no result (the function returns "
                f"{len(results)}: 0 to {len(results) - 1})")
    if getattr(attrs.get("jax.buffer_donor"), "value", False) is True:
        return (f"tf.aliasing_output {k} and jax.buffer_donor both given: jaxlib takes an "
                "argument aliased to a result for no other donation (\"already aliased with "
                "one output\"); keep one")
    if not isinstance(args[i], TensorType) or not isinstance(results[k], TensorType):
        return (f"tf.aliasing_output {k} aliases {args[i]} with result {k}, {results[k]}: "
                "XLA aliases tensors only")
    return None


def shared_alias(arg_attrs) -> str | None:
    """Two arguments aliased to one result (jaxlib: "output index {} is already aliased with
    param 0"), said, or None."""
    seen = {}
    for i, attrs in enumerate(arg_attrs or ()):
        k = getattr((attrs or {}).get("tf.aliasing_output"), "value", None)
        if k is None:
            continue
        if k in seen:
            return (f"arguments {seen[k]} and {i} are both aliased (tf.aliasing_output) to "
                    f"result {k}; a result can reuse one argument's buffer")
        seen[k] = i
    return None


def byte_size(t) -> int:
    """The bytes XLA:CPU stores a tensor of type ``t`` in: sub-byte elements packed (i4[3]
    in 2 bytes), i1 one byte each."""
    et = t.element_type
    bits = 8 if et.is_bool else et.bits
    return (t.num_elements * bits + 7) // 8
