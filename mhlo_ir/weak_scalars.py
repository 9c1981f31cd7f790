"""Python scalars as operands: ``b.add(x, 1.0)`` makes a constant of ``x``'s type.

JAX and numpy promote such "weak" scalars to the other operand's type; so do the binary
elementwise methods, compare, select and clamp. Only the builder's slow path (an operand that
is not a Value) comes here.
"""

from __future__ import annotations

import struct

import numpy as np

from .dense import DenseElementsAttr
from .exact import exact_array
from .ir import VALUE_CLASSES, Value
from .ops.args import check_values as _values
from .ops.spec import fail
from .types import TensorType, tensor

__all__ = ["weak_pair", "weak_constant"]


def _weak_pair(b, op, names, a, c, location) -> tuple:
    """Operands ``a`` and ``c`` of a same-typed op when one of them is not a Value: a Python
    scalar there becomes a constant of the other's type and shape (JAX's weak typing: an int
    goes into integer and float tensors, a float into float tensors, a bool only into i1);
    anything else is an OpBuildError. Only the builder's slow path calls this."""
    if a.__class__ in VALUE_CLASSES:
        t = getattr(a, "type", None)
        return a, _weak_constant(b, op, names[1], c, names[0], a,
                                 t.shape if t.__class__ is TensorType else (), location)
    if c.__class__ in VALUE_CLASSES:
        t = getattr(c, "type", None)
        return _weak_constant(b, op, names[0], a, names[1], c,
                              t.shape if t.__class__ is TensorType else (), location), c
    if a.__class__ in _WEAK_KINDS and c.__class__ in _WEAK_KINDS:
        fail(op, f"operands {names[0]} and {names[1]} are both Python scalars ({a!r}, {c!r}): "
                 f"one must be a Value, whose type the other takes (make one with "
                 f"b.constant(...))")
    _values(op, "operand", (a, c))  # raises: neither is a Value
    return a, c  # pragma: no cover - other Value subclasses


_WEAK_KINDS = {bool: ("bool",), int: ("sint", "uint", "float", "complex"),
               float: ("float", "complex"), complex: ("complex",)}


def _weak_constant(b, op, what, v, other_name, other, shape, location) -> Value:
    """The constant Python scalar ``v`` stands for next to the Value ``other``: ``other``'s
    element type, ``shape`` (a splat), built at ``location``."""
    cls = v.__class__
    kinds = _WEAK_KINDS.get(cls)
    if kinds is None and not isinstance(v, np.generic):
        # Subclasses of Python's scalars (an IntEnum, a float subclass) are their value.
        for base in (int, float, complex):
            if isinstance(v, base):
                v = base(v)
                cls = base
                kinds = _WEAK_KINDS[base]
                break
    t = getattr(other, "type", None)
    if kinds is not None:
        # Literals repeat (x + 1.0 in every layer): their attributes are kept per tensor type
        # and exact value (a float by its bits: 0.0 and -0.0 differ), so the constant's
        # builder memo hits too.
        key = (t, shape, cls, _bits(v) if cls is float or cls is complex else v)
        attr = _WEAK_CACHE.get(key)
        if attr is not None:
            return b.constant(attr, location=location)
    if kinds is None and not isinstance(v, np.generic):
        fail(op, f"operand {what} must be a Value (the result of an op or a block argument) "
                 f"or a Python scalar, got {type(v).__name__} {v!r:.60}: make a constant with "
                 f"b.constant(...)")
    if t.__class__ is not TensorType:
        fail(op, f"operand {other_name} must be a tensor to type the Python scalar {v!r} "
                 f"given as {what}, got {other!r:.60}")
    et = t.element_type
    if kinds is None:  # a numpy scalar has its own dtype: it must be the tensor's
        if v.dtype != et.dtype or v.dtype.name != et.dtype.name:
            fail(op, f"operand {what} is numpy {v.dtype} {v!r}, but {other_name} is {t}: "
                     f"pass a Python scalar or a {et.dtype.name} scalar")
    elif et.kind not in kinds:
        hint = _QUANT_HINT if et.kind == "quant" else _WEAK_HINTS[cls](et)
        fail(op, f"operand {what}: Python {cls.__name__} {v!r} does not go into {other_name}'s "
                 f"type {t} ({hint})")
    try:
        attr = DenseElementsAttr.from_array(exact_array(v, et), tensor(shape, et))
    except (TypeError, ValueError) as e:
        fail(op, f"operand {what}: {e}")
    if kinds is not None:
        if len(_WEAK_CACHE) >= 4096:
            _WEAK_CACHE.clear()
        _WEAK_CACHE[key] = attr
    return b.constant(attr, location=location)


_WEAK_CACHE: dict = {}
_DOUBLES = struct.Struct("<2d")


def _bits(v) -> bytes:
    """A float's or complex's exact bits, for keys (``0.0 == -0.0``, ``nan != nan``)."""
    return _DOUBLES.pack(v.real, v.imag)


_WEAK_HINTS = {
    bool: lambda et: "a bool is an i1 value: pass 0 or 1 for numbers",
    int: lambda et: "an int does not go into an i1 tensor: pass True or False",
    float: lambda et: "a float goes into float tensors only: convert the tensor first "
                      "(b.convert(x, f32)) or pass an int",
    complex: lambda et: "a complex goes into complex tensors only: convert the tensor first",
}
# (a quantized tensor takes no Python scalar, whatever its class)
_QUANT_HINT = ("a quantized tensor takes no Python scalar: quantize a constant of its "
               "expressed type (b.uniform_quantize(b.constant(...), type)) and pass that")


weak_pair, weak_constant = _weak_pair, _weak_constant
