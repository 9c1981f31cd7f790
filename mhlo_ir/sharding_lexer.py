"""Tokens of XLA's HloSharding text, as XLA's HLO lexer cuts them (``xla/hlo/parser/
hlo_lexer.cc``): whitespace and ``/* */`` or ``//`` comments between tokens, punctuation,
``<=``, decimal integers with an optional ``-`` (no ``+``, no hex; leading zeros are fine),
identifiers, an identifier written straight before ``=`` as one attribute-name token
(``devices=``; ``devices =`` is an identifier and a stray ``=``), and quoted strings.

Used by mhlo_ir.sharding_text and mhlo_ir.sharding_named; a token is ``(kind, value, at)``.
"""

from __future__ import annotations

import re

__all__ = ["ShardingSyntaxError", "Tokens"]

_INT64 = 1 << 63
_TOKEN = re.compile(r"""
    (?P<space>\s+|/\*.*?\*/|//[^\n]*)
  | (?P<leq><=)
  | (?P<int>-?[0-9]+)(?![A-Za-z_])
  | (?P<attr>[A-Za-z_][A-Za-z0-9_.\-]*)=
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.\-]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<punct>[{}\[\](),:?=])
""", re.X | re.S)


class ShardingSyntaxError(ValueError):
    """Text XLA's sharding parser does not read (XLA then drops the attribute silently)."""


class Tokens:
    """A cursor over the tokens of one sharding text."""

    def __init__(self, text: str):
        self.toks, i = [], 0
        while i < len(text):
            m = _TOKEN.match(text, i)
            if m is None:
                raise ShardingSyntaxError(f"unexpected character {text[i]!r} at {i}")
            kind = m.lastgroup
            if kind != "space":
                value = m.group(kind)
                if kind == "int":
                    value = int(value)
                    if not -_INT64 <= value < _INT64:
                        raise ShardingSyntaxError(f"{m.group(kind)} at {i} is not an int64")
                elif kind == "string":
                    value = value[1:-1]
                self.toks.append((kind, value, i))
            i = m.end()
        self.toks.append(("eof", None, len(text)))
        self.i = 0

    def peek(self, offset: int = 0):
        return self.toks[min(self.i + offset, len(self.toks) - 1)]

    def at(self, kind: str, value=None) -> bool:
        k, v, _ = self.peek()
        return k == kind and (value is None or v == value)

    def take(self, kind: str, value=None, what: str | None = None):
        k, v, at = self.peek()
        if k != kind or (value is not None and v != value):
            want = what or repr(value if value is not None else kind)
            raise ShardingSyntaxError(f"expected {want} at {at}, found {self.show()}")
        self.i += 1
        return v

    def eat(self, kind: str, value=None) -> bool:
        if self.at(kind, value):
            self.i += 1
            return True
        return False

    def show(self) -> str:
        k, v, _ = self.peek()
        if k == "eof":
            return "the end of the text"
        if k == "attr":
            return repr(f"{v}=")
        return repr(v) if k != "string" else f"string {v!r}"

    def ints(self, close: str | None = None) -> list:
        """``int (',' int)*`` (empty only where ``close`` follows at once)."""
        if close is not None and self.at("punct", close):
            return []
        out = [self.take("int", what="an integer")]
        while self.eat("punct", ","):
            out.append(self.take("int", what="an integer"))
        return out

    def iota(self, what: str = "a reshape") -> tuple:
        """An iota's ``d0,d1,...]T(p0,p1,...)``, its ``[`` already taken: (reshape, perm),
        perm ``[0]`` for one dimension (XLA reads ``T(...)`` only after several). A ``T``
        entry outside ``[0, rank)`` is a syntax error (XLA drops the string); a ``T`` of
        another length than the reshape is for the caller to judge (the two grammars
        differ there). ``what`` names the iota in messages."""
        reshape = self.ints()
        self.take("punct", "]")
        perm = [0]
        if len(reshape) > 1:
            self.take("ident", "T", f"'T(' after {what} of several dimensions")
            self.take("punct", "(")
            perm = self.ints()
            self.take("punct", ")")
            if any(not 0 <= p < len(reshape) for p in perm):
                raise ShardingSyntaxError(f"T({','.join(map(str, perm))}) is out of range "
                                          f"for {what} of {len(reshape)} dimensions")
        return reshape, perm
