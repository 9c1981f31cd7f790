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
from .floatfmt import float_from_bits, format_float, parse_float_bits, round_f64_bits
from .text import check_string, is_bare_identifier, quote, symbol_name
from .types import Type, as_tuple, read_type


def _symbol(name):
    check_string(name, "symbol name")
    if not name:
        raise ValueError("symbol names must not be empty")
    return name

__all__ = [
    "Attribute", "IntegerAttr", "FloatAttr", "BoolAttr", "StringAttr", "UnitAttr", "ArrayAttr",
    "DictionaryAttr", "SymbolRefAttr", "TypeAttr", "DenseArrayAttr", "to_attribute",
    "UNIT", "TRUE", "FALSE", "i32_attr", "i64_attr", "parse_attribute", "read_attribute",
    "read_named", "read_number_literal", "register_attribute_parser",
]


class Attribute:
    """Base of all attributes."""

    __slots__ = ()

    def render(self, dialect) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


_pack_f64 = struct.Struct("<d").pack


def _float_bits(v):
    """Floats compare by their bits, as MLIR uniques float attributes: 0.0 and -0.0 are two
    attributes (``==`` merged them, and the printer's cross-print cache printed -0.0 as 0.0),
    and a NaN equals itself."""
    if v.__class__ is float or isinstance(v, int):
        return _pack_f64(v)
    if isinstance(v, np.generic):
        f = float(v)
        if f == f:
            return _pack_f64(f)
        # A NaN keeps its own bits: float() would quiet a signalling f32 NaN, and ml_dtypes'
        # scalars (bf16, f8, f4) are no np.floating, so they fell through to ``==``, by which
        # a parsed NaN never equalled the one it was printed from.
        return (v.dtype.name, v.tobytes())
    return v


def _float_values_key(values: tuple) -> tuple:
    return tuple(_float_bits(v) if isinstance(v, float) or (
        isinstance(v, np.generic) and v.dtype.kind in "fV") else v for v in values)


def _check_real(v, must: str) -> None:
    if isinstance(v, (bool, np.bool_, str, bytes, complex, np.complexfloating)) or \
            not isinstance(v, (float, int, np.number)) and not hasattr(v, "__float__"):
        raise TypeError(f"{must}, got {type(v).__name__} {v!r:.40}")


_pack_f32 = struct.Struct("<f").pack
_unpack_f32 = struct.Struct("<f").unpack


def _held_float(v, et: ElementType, what: str):
    """The value of float type ``et`` that the real number ``v`` rounds to, as MLIR rounds
    the literal ``v : et`` (once, to nearest even): a Python float, or for a NaN a numpy
    scalar of ``et`` (which keeps its payload); exactly what the printed text parses back to.
    What ``exact.exact_array`` refuses is a ValueError naming the value and the type: a
    finite value beyond the type (1e40 in f32, which printed as inf), zero or negative
    f8E8M0FNU, inf where the type has none. inf and nan given as such stay where they can."""
    if v.__class__ is float and v - v == 0:   # finite Python floats: the common case
        if et is dtypes.f64:
            return v
        if et is dtypes.f32:
            try:
                return _unpack_f32(_pack_f32(v))[0]    # one correct rounding, as numpy's
            except OverflowError:
                pass                                   # the message below
    if not isinstance(v, (float, int, np.generic)):
        v = float(v)                                   # Fraction, Decimal, ...
    from .exact import exact_array
    try:
        x = exact_array(v, et)[()]
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    f = float(x)
    if f != f:
        return x
    if f - f == 0 and (et.bits < 16 or et.name == "bf16"):
        m = float(v)
        if m != f:
            # ml_dtypes rounds some casts twice (through f32: bf16 of a hair above half the
            # smallest subnormal became 0); MLIR rounds the f64 once, and so do we.
            f = float_from_bits(round_f64_bits(m, et), et)
    return f


def _signed_reading(v: int, et: ElementType) -> int:
    # Signless integers take either reading, but MLIR keeps and prints the signed one
    # (``255 : i8`` re-prints as ``-1 : i8``), so that is the value held: the text is then a
    # fixed point of MLIR's printer and the same attribute has one value.
    if et.kind == "sint" and v >= 1 << (et.bits - 1):
        return v - (1 << et.bits)
    return v


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
        v = _check_int(self.value, self.type, "IntegerAttr")
        v = _signed_reading(v, self.type)
        if v is not self.value:
            object.__setattr__(self, "value", v)

    def render(self, dialect=None) -> str:
        return f"{int(self.value)} : {self.type.name}"

    @classmethod
    def parse(cls, ts, dialect) -> "IntegerAttr":
        """Reads ``3 : i32`` (``3`` alone is an i64), decimal or hex: the inverse of render."""
        tok = ts.peek()
        a = _read_number(ts, dialect)
        if a.__class__ is not cls:
            raise ts.expected("an integer attribute", tok)
        return a


@attrs.frozen
class FloatAttr(Attribute):
    """``1.000000e+00 : f32`` (inf and NaN print as hex bit patterns, as MLIR does)."""

    value: float = attrs.field(eq=_float_bits)
    type: ElementType = dtypes.f32

    def __attrs_post_init__(self):
        # Checked here, not at print time: the printer caches texts by identity and a
        # FloatAttr of an integer type or a non-number prints text jaxlib rejects (or fails).
        if not isinstance(self.type, ElementType) or self.type.kind != "float":
            raise TypeError(f"FloatAttr: type must be a float element type, got "
                            f"{self.type!r}")
        v = self.value
        if isinstance(v, np.ndarray):  # a 0-d array is mutable: keep its (immutable) scalar
            if v.shape != ():
                raise TypeError(f"FloatAttr: value must be a scalar, got an array of shape "
                                f"{v.shape}")
            v = v[()]
            object.__setattr__(self, "value", v)
        _check_real(v, "FloatAttr: value must be a real number")
        # Held as the value of the type it rounds to, as MLIR holds it: FloatAttr(0.1, f32)
        # is the f32 nearest 0.1, so that it equals what its printed text parses to.
        held = _held_float(v, self.type, f"FloatAttr of {self.type.name}")
        if held is not v:
            object.__setattr__(self, "value", held)

    def render(self, dialect=None) -> str:
        return f"{format_float(self.value, self.type)} : {self.type.name}"

    @classmethod
    def parse(cls, ts, dialect) -> "FloatAttr":
        """Reads ``1.5 : f32`` (``1.5`` alone is an f64) or a hex bit pattern ``0x7FC00000 : f32``
        (how MLIR writes inf and NaN): the value comes back with its exact bits."""
        tok = ts.peek()
        a = _read_number(ts, dialect)
        if a.__class__ is not cls:
            raise ts.expected("a float attribute", tok)
        return a


@attrs.frozen
class BoolAttr(Attribute):
    """``true`` / ``false``."""

    value: bool

    def __attrs_post_init__(self):
        # Held as a Python bool: a 0-d numpy array is mutable, and the printer keeps an
        # attribute's text by identity, so an edit after one print would not show in the next.
        v = self.value
        if isinstance(v, np.ndarray) and v.shape == ():
            v = v[()]
        if v.__class__ is not bool:
            if not isinstance(v, np.bool_):
                raise TypeError(f"BoolAttr: value must be a bool, got {type(v).__name__} "
                                f"{v!r:.60}")
            v = bool(v)
        if v is not self.value:
            object.__setattr__(self, "value", v)

    def render(self, dialect=None) -> str:
        return "true" if self.value else "false"

    @classmethod
    def parse(cls, ts, dialect=None) -> "BoolAttr":
        """Reads ``true`` or ``false``."""
        if ts.accept("true"):
            return TRUE
        if ts.accept("false"):
            return FALSE
        raise ts.expected("'true' or 'false'")


@attrs.frozen
class StringAttr(Attribute):
    """A string, escaped on output so it can never break the text's structure."""

    value: str = attrs.field(validator=lambda _, __, v: check_string(v, "string attribute"))

    def render(self, dialect=None) -> str:
        return quote(self.value)

    @classmethod
    def parse(cls, ts, dialect=None) -> "StringAttr":
        """Reads a string literal, undoing ``quote``'s escapes."""
        tok = ts.expect_kind("string", "a string")
        if ts.at(":"):
            raise ts.error("typed string attributes (\"...\" : type) are not supported")
        return ts.make(tok, cls, ts.string_value(tok))


@attrs.frozen
class UnitAttr(Attribute):
    """``unit``: an attribute whose presence is the information."""

    def render(self, dialect=None) -> str:
        return "unit"

    @classmethod
    def parse(cls, ts, dialect=None) -> "UnitAttr":
        ts.expect("unit")
        return UNIT


@attrs.frozen
class ArrayAttr(Attribute):
    """``[a, b, c]``."""

    elements: tuple = attrs.field(converter=lambda xs: tuple(to_attribute(x) for x in xs))

    def render(self, dialect) -> str:
        return "[" + ", ".join(_elided(a, dialect) for a in self.elements) + "]"

    @classmethod
    def parse(cls, ts, dialect) -> "ArrayAttr":
        """Reads ``[a, b]``; elements without a type are i64 integers and f64 floats, which
        is what ``_elided`` leaves out."""
        return cls(ts.comma_list(lambda: read_attribute(ts, dialect), "]", open="["))


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

    @classmethod
    def parse(cls, ts, dialect) -> "DictionaryAttr":
        """Reads ``{a = 1 : i32, "quoted name" = [], flag}`` (a name alone is a unit)."""
        return cls(read_named(ts, dialect))

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

    @classmethod
    def parse(cls, ts, dialect=None) -> "SymbolRefAttr":
        """Reads ``@name`` or ``@"quoted name"``."""
        tok = ts.expect_kind("@", "a symbol reference (@name)")
        name = ts.string_value(tok) if tok.text.startswith('@"') else tok.text[1:]
        if ts.at(":") and ts.at(":", 1):
            raise ts.error("nested symbol references (@a::@b) are not supported")
        return ts.make(tok, cls, name)


def _check_type(t) -> None:
    if not isinstance(t, (Type, ElementType)):
        raise TypeError(f"TypeAttr holds a Type or an element type, got {type(t).__name__} "
                        f"{t!r:.60}")


@attrs.frozen
class TypeAttr(Attribute):
    """A type used as an attribute (``function_type = (tensor<f32>) -> tensor<f32>``); an
    element type (``f32``) is one too, as in MLIR."""

    type: Type = attrs.field(validator=lambda _, __, t: _check_type(t))

    def render(self, dialect) -> str:
        return self.type.render(dialect)

    @classmethod
    def parse(cls, ts, dialect) -> "TypeAttr":
        """Reads a type (``tensor<2xf32>``, ``(i32) -> i32``, ``f32``) as an attribute."""
        return cls(read_type(ts, dialect))


def _array_float(v, et):
    """A float entry of a DenseArrayAttr: a real number its type can hold, held as the value
    of the type it rounds to (see ``_held_float``)."""
    if isinstance(v, np.ndarray) and v.shape == ():
        v = v[()]
    _check_real(v, f"DenseArrayAttr of {et.name}: entries must be real numbers")
    return _held_float(v, et, f"DenseArrayAttr of {et.name}")


def _array_bool(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)) and v in (0, 1):
        return bool(v)
    raise TypeError(f"DenseArrayAttr of i1: entries must be bools (or 0 and 1), got "
                    f"{type(v).__name__} {v!r:.40}")


@attrs.frozen
class DenseArrayAttr(Attribute):
    """``array<i64: 1, 2>``: a dense array of scalars (used by StableHLO and newer ops)."""

    values: tuple = attrs.field(converter=as_tuple, eq=_float_values_key)
    type: ElementType = dtypes.i64

    def __attrs_post_init__(self):
        et = self.type
        if et.is_complex or et.is_sub_byte:
            # MLIR: "element type bitwidth must be a multiple of 8" (i1 excepted).
            raise ValueError(f"DenseArrayAttr of {et.name}: MLIR's array<> holds i1 and "
                             "integers and floats of 8 bits or more")
        if et.is_integer:
            values = tuple(_signed_reading(_check_int(v, et, "DenseArrayAttr"), et)
                           for v in self.values)
        elif et.is_float:  # integers given for floats are those floats (1 is 1.0)
            values = tuple(_array_float(v, et) for v in self.values)
        else:  # i1: bools, or the integers 0 and 1
            values = tuple(_array_bool(v) for v in self.values)
        if values != self.values or any(a is not b for a, b in zip(values, self.values)):
            object.__setattr__(self, "values", values)

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

    @classmethod
    def parse(cls, ts, dialect=None) -> "DenseArrayAttr":
        """Reads ``array<i64: 1, 2>``, ``array<i1: true>``, ``array<f32: 1.5, 0x7FC00000>``,
        ``array<i32>`` (empty)."""
        ts.expect("array")
        ts.expect("<")
        tok = ts.peek()
        et = dtypes.parse_element_type(ts)
        if et.is_complex:
            raise ts.error("array<> holds integers, bools or floats, not complex", tok)
        values = []
        if ts.accept(":"):
            if et.is_bool:
                def one():
                    return BoolAttr.parse(ts).value
            elif et.is_float:
                def one():
                    t, spelling = read_number_literal(ts, "a float")
                    return float_from_bits(ts.make(t, parse_float_bits, spelling, et), et)
            else:
                def one():
                    return ts.integer("an integer")
            values.append(one())
            while ts.accept(","):
                values.append(one())
        ts.expect(">")
        return ts.make(tok, cls, tuple(values), et)


UNIT = UnitAttr()
TRUE = BoolAttr(True)
FALSE = BoolAttr(False)


def i32_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, dtypes.i32)


def i64_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, dtypes.i64)


def to_attribute(x) -> Attribute:
    """Python values as attributes: bool, int (i64), float (f64), str, list, tuple, dict, type;
    a numpy scalar keeps its dtype (``np.float32(1.5)`` is ``1.500000e+00 : f32``,
    ``np.int8(3)`` is ``3 : i8``, bf16 and the other ml_dtypes floats too)."""
    if isinstance(x, Attribute):
        return x
    if isinstance(x, (bool, np.bool_)):
        return TRUE if x else FALSE
    if x.__class__ is int:
        return IntegerAttr(x, dtypes.i64)
    if x.__class__ is float:
        return FloatAttr(x, dtypes.f64)
    if isinstance(x, np.generic) and x.dtype.kind in "iufV":
        try:
            et = dtypes.from_numpy(x.dtype)
        except TypeError as e:     # np.longdouble
            raise TypeError(f"cannot turn {type(x).__name__} {x!r:.40} into an attribute: "
                            f"{e}") from None
        if et.is_float:
            return FloatAttr(x, et)
        if et.is_integer:
            return IntegerAttr(int(x), et)
    if isinstance(x, int):      # int subclasses (IntEnum)
        return IntegerAttr(int(x), dtypes.i64)
    if isinstance(x, float):
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


# -- parsing: the dispatch on the first token -----------------------------------------------

def read_number_literal(ts, what: str = "a number") -> tuple:
    """Consumes a number with an optional ``-``; gives its token and its spelling with the
    sign (``-1.5``, ``0x7F``). Float spellings have a ``.``, integer ones (hex too) none."""
    neg = ts.accept("-")
    tok = ts.peek()
    if tok.kind not in ("int", "float"):
        raise ts.expected(what)
    ts.next()
    return tok, "-" + tok.text if neg else tok.text


def _int_value(spelling: str) -> int:
    body = spelling.lstrip("-")
    v = int(body, 16) if body.startswith("0x") else int(body)
    return -v if spelling.startswith("-") else v


def _read_number(ts, dialect) -> Attribute:
    """``3``, ``-3 : i8``, ``1.5 : f32``, ``0x7F800000 : f32``, ``1 : i1`` (which is ``true``)."""
    start = ts.peek()
    _, spelling = read_number_literal(ts)
    is_float = "." in spelling  # hex integers have no "."
    if ts.accept(":"):
        ttok = ts.peek()
        et = read_type(ts, dialect)
        if not isinstance(et, ElementType) or et.is_complex:
            raise ts.error("expected an integer or float type for a number", ttok)
    else:
        et = dtypes.f64 if is_float else dtypes.i64
    if et.is_float:
        bits = ts.make(start, parse_float_bits, spelling, et)
        return FloatAttr(float_from_bits(bits, et), et)
    if is_float:
        raise ts.error(f"floating point value not valid for type {et.name}", start)
    v = _int_value(spelling)
    if not v and spelling.startswith("-"):  # (MLIR negates and requires a negative result)
        raise ts.error(f"integer constant {spelling} out of range for {et.name}", start)
    if et.is_bool:
        if v not in (0, 1, -1):
            raise ts.error(f"integer constant {v} out of range for i1", start)
        return TRUE if v else FALSE
    return ts.make(start, IntegerAttr, v, et)


def read_named(ts, dialect) -> list:
    """``{name = attr, flag}`` as (name, attribute) pairs in text order; names are bare
    identifiers or strings, a name alone is a unit, a name twice is an error."""
    seen = set()

    def entry():
        tok = ts.peek()
        if tok.kind == "bare":
            ts.next()
            name = tok.text
        elif tok.kind == "string":
            ts.next()
            name = ts.string_value(tok)
            if not name:
                raise ts.error("attribute names must not be empty", tok)
        else:
            raise ts.expected("an attribute name")
        if name in seen:
            raise ts.error(f"duplicate key {name!r} in dictionary attribute", tok)
        seen.add(name)
        return name, read_attribute(ts, dialect) if ts.accept("=") else UNIT

    return ts.comma_list(entry, "}", open="{")


_TYPE_KEYWORDS = frozenset({"tensor", "tuple", "complex"})
_KEYWORDS = {"true": BoolAttr.parse, "false": BoolAttr.parse, "unit": UnitAttr.parse,
             "array": DenseArrayAttr.parse}
# ``#name...`` attributes of other dialects than the output dialect (``#chlo<...>``), by the
# name after ``#`` up to the first ``.`` or ``<``: modules that define such attributes register
# a parser here.
_HASH_PARSERS: dict = {}


def register_attribute_parser(prefix: str, parse) -> None:
    """Makes ``read_attribute`` hand ``#<prefix>...`` attributes to ``parse(ts, dialect)``
    (the output dialect's own ``#mhlo...`` attributes are parsed by mhlo_attributes)."""
    _HASH_PARSERS[prefix] = parse


def read_attribute(ts, dialect) -> Attribute:
    """Reads one attribute of any kind from token stream ``ts``, as ``dialect`` spells it."""
    tok = ts.peek()
    kind = tok.kind
    if kind == "punct":
        if tok.text == "[":
            return ArrayAttr.parse(ts, dialect)
        if tok.text == "{":
            return DictionaryAttr.parse(ts, dialect)
        if tok.text == "-":
            return _read_number(ts, dialect)
        if tok.text == "(":
            return TypeAttr.parse(ts, dialect)
    elif kind == "int" or kind == "float":
        return _read_number(ts, dialect)
    elif kind == "string":
        return StringAttr.parse(ts, dialect)
    elif kind == "@":
        return SymbolRefAttr.parse(ts, dialect)
    elif kind == "bare":
        parse = _KEYWORDS.get(tok.text)
        if parse is not None:
            return parse(ts, dialect)
        if tok.text == "dense":
            from .dense import DenseElementsAttr
            return DenseElementsAttr.parse(ts, dialect)
        if tok.text in _TYPE_KEYWORDS or tok.text in dtypes._BARE_NAMES:
            return TypeAttr.parse(ts, dialect)
    elif kind == "!":
        return TypeAttr.parse(ts, dialect)
    elif kind == "#":
        name = tok.text[1:]
        prefix = name.split(".", 1)[0]
        if prefix == dialect.name:
            from .mhlo_attributes import read_dialect_attribute
            return read_dialect_attribute(ts, dialect)
        if prefix == "chlo":
            from .mhlo_attributes import ChloEnumAttr
            return ChloEnumAttr.parse(ts, dialect)
        parse = _HASH_PARSERS.get(prefix)
        if parse is not None:
            return parse(ts, dialect)
        raise ts.error(f"unknown attribute {tok.text!r}: expected a #{dialect.name} attribute "
                       "(attribute aliases are not supported)")
    raise ts.expected("an attribute")


def parse_attribute(text: str, dialect=None) -> Attribute:
    """The attribute spelled by all of ``text`` (``"dense<[1, 2]> : tensor<2xi32>"``,
    ``"#mhlo<comparison_direction GT>"``), as ``dialect`` (default MHLO) spells it.
    Raises ``syntax.ParseError``."""
    from .dialect import MHLO
    from .syntax import TokenStream, nested_too_deeply
    ts = TokenStream(text)
    try:
        a = read_attribute(ts, MHLO if dialect is None else dialect)
    except RecursionError:
        raise nested_too_deeply(ts) from None
    ts.expect_end()
    return a
