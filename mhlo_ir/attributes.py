"""Builtin attributes: integers, floats, strings, arrays, dictionaries, symbols, types, units.

Attributes are immutable values with structural equality. ``render(dialect)`` gives the text
MLIR's printer would give for the same attribute, so that our output re-prints unchanged. Dense
element attributes live in ``dense.py``; MHLO's enums and structured attributes in
``mhlo_attributes.py``.
"""

from __future__ import annotations

import struct

import attrs
import numpy as np

from . import dtypes
from .dtypes import ElementType
from .floatfmt import format_float
from .text import check_string, is_bare_identifier, quote, symbol_name
from .types import Type, as_tuple


def _symbol(name):
    check_string(name, "symbol name")
    if not name:
        raise ValueError("symbol names must not be empty")
    return name

__all__ = [
    "Attribute", "IntegerAttr", "FloatAttr", "BoolAttr", "StringAttr", "UnitAttr", "ArrayAttr",
    "DictionaryAttr", "SymbolRefAttr", "TypeAttr", "DenseArrayAttr", "to_attribute",
    "UNIT", "TRUE", "FALSE", "i32_attr", "i64_attr",
]


class Attribute:
    """Base of all attributes."""

    __slots__ = ()

    def render(self, dialect) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


_pack_f64 = struct.Struct("<d").pack


def _float_bits(v) -> bytes:
    """Floats compare by their bits, as MLIR uniques float attributes: 0.0 and -0.0 are two
    attributes (``==`` merged them, and the printer's cross-print cache printed -0.0 as 0.0),
    and a NaN equals itself."""
    return _pack_f64(v) if isinstance(v, (float, np.floating, int)) else v


def _float_values_key(values: tuple) -> tuple:
    return tuple(_pack_f64(v) if isinstance(v, (float, np.floating)) else v for v in values)


def _check_int(value, et: ElementType, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}: expected an integer, got {value!r}")
    value = int(value)
    if et.kind == "uint":
        lo, hi = 0, (1 << et.bits) - 1
    elif et.kind == "sint":
        lo, hi = -(1 << (et.bits - 1)), (1 << et.bits) - 1  # signless: either reading fits
    else:
        raise TypeError(f"{what}: {et.name} is not an integer type")
    if not lo <= value <= hi:
        raise ValueError(f"{what}: {value} does not fit in {et.name}")
    return value


@attrs.frozen
class IntegerAttr(Attribute):
    """``3 : i64``."""

    value: int
    type: ElementType = dtypes.i64

    def __attrs_post_init__(self):
        _check_int(self.value, self.type, "IntegerAttr")

    def render(self, dialect=None) -> str:
        return f"{int(self.value)} : {self.type.name}"


@attrs.frozen
class FloatAttr(Attribute):
    """``1.000000e+00 : f32`` (inf and NaN print as hex bit patterns, as MLIR does)."""

    value: float = attrs.field(eq=_float_bits)
    type: ElementType = dtypes.f32

    def render(self, dialect=None) -> str:
        return f"{format_float(self.value, self.type)} : {self.type.name}"


@attrs.frozen
class BoolAttr(Attribute):
    """``true`` / ``false``."""

    value: bool

    def render(self, dialect=None) -> str:
        return "true" if self.value else "false"


@attrs.frozen
class StringAttr(Attribute):
    """A string, escaped on output so it can never break the text's structure."""

    value: str = attrs.field(validator=lambda _, __, v: check_string(v, "string attribute"))

    def render(self, dialect=None) -> str:
        return quote(self.value)


@attrs.frozen
class UnitAttr(Attribute):
    """``unit``: an attribute whose presence is the information."""

    def render(self, dialect=None) -> str:
        return "unit"


@attrs.frozen
class ArrayAttr(Attribute):
    """``[a, b, c]``."""

    elements: tuple = attrs.field(converter=lambda xs: tuple(to_attribute(x) for x in xs))

    def render(self, dialect) -> str:
        return "[" + ", ".join(_elided(a, dialect) for a in self.elements) + "]"


def _elided(a, dialect) -> str:
    # Inside arrays MLIR leaves out the default types: i64 integers and f64 floats.
    if a.__class__ is IntegerAttr and a.type is dtypes.i64:
        return str(int(a.value))
    if a.__class__ is FloatAttr and a.type is dtypes.f64:
        return format_float(a.value, dtypes.f64)
    return a.render(dialect)


def _dict_items(d) -> tuple:
    items = d.items() if hasattr(d, "items") else d
    out = {}
    for k, v in items:
        if not isinstance(k, str) or not k:
            raise TypeError(f"attribute names must be non-empty strings, got {k!r}")
        check_string(k, "attribute name")
        out[k] = to_attribute(v)
    return tuple(sorted(out.items()))


def render_named(items, dialect) -> str:
    """``a = 1 : i32, b`` for sorted (name, attribute) pairs, as MLIR prints dictionaries."""
    parts = []
    for k, v in items:
        key = k if is_bare_identifier(k) else quote(k)
        parts.append(key if isinstance(v, UnitAttr) else f"{key} = {v.render(dialect)}")
    return ", ".join(parts)


@attrs.frozen
class DictionaryAttr(Attribute):
    """``{a = 1 : i32, b}``: entries kept sorted by name, as MLIR stores them."""

    items: tuple = attrs.field(converter=_dict_items)

    def render(self, dialect) -> str:
        return "{" + render_named(self.items, dialect) + "}"

    def __getitem__(self, key):
        for k, v in self.items:
            if k == key:
                return v
        raise KeyError(key)


@attrs.frozen
class SymbolRefAttr(Attribute):
    """``@name``, or ``@"quoted name"`` when the name is not a bare identifier."""

    name: str = attrs.field(validator=lambda _, __, v: _symbol(v))

    def render(self, dialect=None) -> str:
        return "@" + symbol_name(self.name)


@attrs.frozen
class TypeAttr(Attribute):
    """A type used as an attribute (``function_type = (tensor<f32>) -> tensor<f32>``)."""

    type: Type

    def render(self, dialect) -> str:
        return self.type.render(dialect)


@attrs.frozen
class DenseArrayAttr(Attribute):
    """``array<i64: 1, 2>``: a dense array of scalars (used by StableHLO and newer ops)."""

    values: tuple = attrs.field(converter=as_tuple, eq=_float_values_key)
    type: ElementType = dtypes.i64

    def render(self, dialect=None) -> str:
        if not self.values:
            return f"array<{self.type.name}>"
        if self.type.is_bool:
            body = ", ".join("true" if v else "false" for v in self.values)
        elif self.type.is_float:
            body = ", ".join(format_float(v, self.type) for v in self.values)
        else:
            body = ", ".join(str(int(v)) for v in self.values)
        return f"array<{self.type.name}: {body}>"


UNIT = UnitAttr()
TRUE = BoolAttr(True)
FALSE = BoolAttr(False)


def i32_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, dtypes.i32)


def i64_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, dtypes.i64)


def to_attribute(x) -> Attribute:
    """Python values as attributes: bool, int (i64), float (f64), str, list, tuple, dict, type."""
    if isinstance(x, Attribute):
        return x
    if isinstance(x, (bool, np.bool_)):
        return TRUE if x else FALSE
    if isinstance(x, (int, np.integer)):
        return IntegerAttr(int(x), dtypes.i64)
    if isinstance(x, (float, np.floating)):
        return FloatAttr(float(x), dtypes.f64)
    if isinstance(x, str):
        return StringAttr(x)
    if isinstance(x, (list, tuple)):
        return ArrayAttr(x)
    if isinstance(x, dict):
        return DictionaryAttr(x)
    if isinstance(x, Type):
        return TypeAttr(x)
    raise TypeError(f"cannot turn {type(x).__name__} {x!r} into an attribute")
