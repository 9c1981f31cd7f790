"""Custom-form pieces that spell one attribute each (``mhlo_ir.pretty_forms.Form``'s
pieces): an enum's bare value, an integer, an attribute in its own spelling, a quoted
string, a symbol, reduce_precision's ``e5m10`` and a constant's typed value. Each renders
its attribute from the op and reads it back into the reading's attributes."""

from __future__ import annotations

import re

import attrs

from .attributes import StringAttr
from .dense import DenseElementsAttr
from .pretty_arrays import enum_keyword
from .text import symbol_name
from .types import FunctionType, TensorType

__all__ = ["Enum", "Int", "Attr", "String", "Symbol", "ExpMantissa", "ValueAttr"]


@attrs.frozen
class Enum:
    """An enum attribute as its bare value: compare's ``LT``."""

    key: str

    def render(self, pr, op) -> str:
        return op.attributes[self.key].value

    def read(self, r) -> None:
        r.attrs[self.key] = enum_keyword(r.p.ts, self.key)


@attrs.frozen
class Int:
    """An integer attribute as its bare value: get_tuple_element's ``[1]``, topk's ``k = 3``."""

    key: str

    def render(self, pr, op) -> str:
        return str(int(op.attributes[self.key].value))

    def read(self, r) -> None:
        r.attrs[self.key] = r.p.ts.integer(f"the {self.key}")


@attrs.frozen
class Attr:
    """An attribute in its own spelling (composite's name ``"my.double"``)."""

    key: str

    def render(self, pr, op) -> str:
        return pr.attr_text(op.attributes[self.key])

    def read(self, r) -> None:
        r.attrs[self.key] = r.p.attribute()


@attrs.frozen
class String:
    """A string attribute as its quoted text (einsum's ``config = "ij,jk->ik"``)."""

    key: str

    def render(self, pr, op) -> str:
        return pr.attr_text(op.attributes[self.key])

    def read(self, r) -> None:
        ts = r.p.ts
        r.attrs[self.key] = StringAttr(ts.string_value(ts.expect_kind("string", "a string")))


@attrs.frozen
class Symbol:
    """A string attribute spelled as a symbol: custom_call's ``@target``."""

    key: str

    def render(self, pr, op) -> str:
        return "@" + symbol_name(op.attributes[self.key].value)

    def read(self, r) -> None:
        r.attrs[self.key] = StringAttr(r.p.symbol())


@attrs.frozen
class ExpMantissa:
    """reduce_precision's ``e5m10`` (exponent and mantissa bits)."""

    def render(self, pr, op) -> str:
        a = op.attributes
        return f"e{int(a['exponent_bits'].value)}m{int(a['mantissa_bits'].value)}"

    def read(self, r) -> None:
        ts = r.p.ts
        tok = ts.expect_kind("bare", "eXmY (exponent and mantissa bits)")
        m = re.fullmatch(r"e([0-9]+)m([0-9]+)", tok.text)
        if m is None:
            raise ts.expected("eXmY (exponent and mantissa bits)", tok)
        r.attrs["exponent_bits"] = int(m.group(1))
        r.attrs["mantissa_bits"] = int(m.group(2))


@attrs.frozen
class ValueAttr:
    """A constant's typed value, ``dense<...> : T``: the result has the value's type."""

    key: str = "value"

    def render(self, pr, op):
        v = op.attributes[self.key]
        if v.__class__ is DenseElementsAttr and v.prints_hex(pr.hex_threshold):
            return v.hex_pieces()  # big data: its hex a piece of its own, as in generic form
        return pr.attr_text(v)

    def read(self, r) -> None:
        ts = r.p.ts
        atok = ts.peek()
        if ts.at("(") and ts.at(")", 1):
            return self._read_typed(r, atok)
        value = r.p.attribute()
        t = getattr(value, "type", None)
        if not isinstance(t, TensorType):
            raise ts.error(f"'{r.name}' needs a typed value (dense<...> : tensor<...>)", atok)
        r.attrs[self.key] = value
        r.results = (t,)

    def _read_typed(self, r, atok) -> None:
        """MLIR's other spelling, ``() <{value = ...}> {...} : () -> T`` (or the value in the
        attribute dictionary), which MHLO's and StableHLO's constants read and StableHLO
        prints for a quantized constant (whose value holds the storage type's numbers)."""
        ts, p = r.p.ts, r.p
        ts.next()
        ts.next()
        attrs_ = p.properties()
        if ts.at("{"):
            for k, v in p.attr_dict().items():
                if k in attrs_:
                    raise ts.error(f"'{r.name}': attribute {k!r} is given twice", atok)
                attrs_[k] = v
        ts.expect(":")
        sig_tok = ts.peek()
        ftype = p.type()
        if not isinstance(ftype, FunctionType) or ftype.inputs or len(ftype.results) != 1:
            raise ts.error(f"'{r.name}' spelled with () takes the type () -> tensor<...>, got "
                           f"{ftype}", sig_tok)
        if self.key not in attrs_:
            raise ts.error(f"'{r.name}' needs its {self.key} (<{{{self.key} = dense<...> : "
                           "tensor<...>}>)", atok)
        r.attrs.update(attrs_)
        r.results = tuple(ftype.results)
