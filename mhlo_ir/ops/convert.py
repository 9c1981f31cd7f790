"""Attribute converters the chapters share: a Python value, or an attribute of the kind the op
wants, becomes exactly the attribute jaxlib's op definition asks for; anything else is refused.

Each converter raises TypeError or ValueError, which the builder reports as
``'op' attribute NAME: ...``. Passing attributes through by class alone was not enough: MLIR's
op definitions fix the width (``dimension = 1 : i32`` on concatenate: "64-bit signless integer
attribute"; ``api_version = 1 : i64`` on custom_call: "Invalid attribute in property
conversion"), and ``int()`` made 1.5, True or "3" into dimension numbers.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..attributes import (FALSE, TRUE, UNIT, ArrayAttr, Attribute, BoolAttr, DictionaryAttr,
                          FloatAttr, IntegerAttr, StringAttr, SymbolRefAttr, UnitAttr)
from ..text import bytes_string

__all__ = ["integer", "i64", "i32", "f32", "boolean", "string", "symbol", "symbol_array",
           "array_of", "show", "unit", "dictionaries"]


def show(v) -> str:
    """``v`` for an error message: its kind and a short repr."""
    return f"{type(v).__name__} {v!r:.60}"


def integer(et):
    """The converter of an integer attribute of element type ``et``: an IntegerAttr of that
    type, or a Python or numpy integer in its signed range (not a bool, float or string)."""
    lo, hi = -(1 << (et.bits - 1)), (1 << (et.bits - 1)) - 1

    def convert(v) -> IntegerAttr:
        if v.__class__ is IntegerAttr:
            if v.type is not et:
                raise TypeError(f"expected an {et.name} integer, got {v.render()} (the op "
                                f"wants {et.name})")
            return v
        if isinstance(v, (bool, np.bool_, Attribute)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"expected an integer, got {v!r:.60} (the op wants {et.name})")
        v = int(v)
        if not lo <= v <= hi:
            raise ValueError(f"{v} does not fit in {et.name}")
        return IntegerAttr(v, et)

    convert.__name__ = et.name
    return convert


i64 = integer(dtypes.i64)
i32 = integer(dtypes.i32)


def f32(v) -> FloatAttr:
    """An f32 FloatAttr, or a Python or numpy real number that f32 holds (ints too; not bools).
    """
    if v.__class__ is FloatAttr:
        if v.type is not dtypes.f32:
            raise TypeError(f"expected an f32 float, got {v.render()} (the op wants f32)")
        return v
    if isinstance(v, (bool, np.bool_, Attribute)) or \
            not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"expected a number, got {v!r:.60} (the op wants f32)")
    x = float(v)
    # (f32's range checked without a cast, which warns "overflow encountered" on the way)
    if x == x and abs(x) != float("inf") and abs(x) >= _F32_OVERFLOW:
        raise ValueError(f"{x!r} overflows f32")
    return FloatAttr(x, dtypes.f32)


# The least magnitude that rounds to inf in f32: the largest f32 plus half its last step.
_F32_OVERFLOW = float(np.finfo(np.float32).max) + 2.0 ** 103


def unit(v) -> UnitAttr:
    """A unit attribute (a flag that is there or not): True or UnitAttr."""
    if isinstance(v, UnitAttr) or v is True:
        return UNIT
    raise ValueError(f"expected True (a unit attribute; leave it unset for False), got {v!r}")


def dictionaries(v) -> ArrayAttr:
    """An array of dictionaries (func.call's arg_attrs, res_attrs): one per value."""
    if not isinstance(v, ArrayAttr):
        if isinstance(v, (str, bytes, Attribute)) or not isinstance(v, (list, tuple)):
            raise TypeError(f"expected a list of dictionaries, got {show(v)}")
        v = ArrayAttr(tuple(DictionaryAttr(e) if isinstance(e, dict) else e for e in v))
    for i, e in enumerate(v.elements):
        if not isinstance(e, DictionaryAttr):
            raise TypeError(f"expected a dictionary at index {i}, got {show(e)}")
    return v


def boolean(v) -> BoolAttr:
    """A BoolAttr, a bool (numpy's too) or the int 0 or 1."""
    if v.__class__ is BoolAttr:
        return v
    if isinstance(v, (bool, np.bool_)) or (v.__class__ is int and v in (0, 1)):
        return TRUE if v else FALSE
    raise TypeError(f"expected a bool, got {v!r:.60}")


def string(v) -> StringAttr:
    """A StringAttr, a str, or bytes (an MLIR string holds any: mhlo_ir.text)."""
    if v.__class__ is StringAttr:
        return v
    if isinstance(v, str):
        return StringAttr(v)
    if isinstance(v, (bytes, bytearray)):
        return StringAttr(bytes_string(bytes(v)))
    raise TypeError(f"expected a string, got {v!r:.60}")


def symbol(v) -> SymbolRefAttr:
    """A SymbolRefAttr, a function name (str) or a Function (anything with a str ``name``
    that is not an attribute)."""
    if v.__class__ is SymbolRefAttr:
        return v
    if isinstance(v, str):
        return SymbolRefAttr(v)
    name = getattr(v, "name", None)
    if isinstance(name, str) and not isinstance(v, Attribute):
        return SymbolRefAttr(name)
    raise TypeError(f"expected a function or its name, got {v!r:.60}")


def array_of(v, element_ok, entry, elements: str, wanted: str) -> ArrayAttr:
    """``v`` as an ArrayAttr: an ArrayAttr already, each element passing ``element_ok``
    ("expected {elements}, got ... at index i"), or a list or tuple whose entries
    ``entry(i, e)`` converts (raising TypeError naming the entry); anything else is
    "expected {wanted}". The skeleton of every array-of-X converter (called_computations,
    custom_call's layouts, infeed's layout)."""
    if isinstance(v, ArrayAttr):
        for i, e in enumerate(v.elements):
            if not element_ok(e):
                raise TypeError(f"expected {elements}, got {show(e)} at index {i}")
        return v
    if isinstance(v, (str, bytes, Attribute)) or not isinstance(v, (list, tuple)):
        raise TypeError(f"expected {wanted}, got {show(v)}")
    return ArrayAttr(tuple(entry(i, e) for i, e in enumerate(v)))


def _symbol_entry(i, e) -> SymbolRefAttr:
    try:
        return symbol(e)
    except TypeError as err:
        raise TypeError(f"entry {i}: {err}") from None


def symbol_array(v) -> ArrayAttr:
    """A list of functions or names (``["body"]``) as an array of symbol references, as
    custom_call's ``called_computations`` must be ("flat symbol ref array attribute")."""
    return array_of(v, lambda e: e.__class__ is SymbolRefAttr, _symbol_entry,
                    "an array of symbol references", "a list of functions or function names")
