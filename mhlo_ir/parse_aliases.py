"""The ``#loc3 = loc(...)`` alias definitions of a text, for the parser: MLIR prints them after
the module that refers to them, so they are found by a scan of the whole text, made only when
a first reference needs them."""

from __future__ import annotations

import re

from .location import read_location
from .syntax import ParseError, TokenStream

__all__ = ["Aliases", "read_aliases"]

_ALIAS_LINE = re.compile(r"^(#[A-Za-z_$.\-][A-Za-z0-9_$.\-]*)[ \t]*=[ \t]*loc\(", re.M)


class Aliases:
    """A text's location aliases by name (``"#loc3"``), read on the first ``get``."""

    __slots__ = ("text", "source", "table")

    def __init__(self, text: str, source=None):
        self.text = text
        self.source = source
        self.table = None

    def get(self, name):
        if self.table is None:
            self.table = read_aliases(self.text, self.source)
        return self.table.get(name)


def read_aliases(text: str, source=None) -> dict:
    """``#name = loc(...)`` definitions, wherever they are at top level, by name; an undefined
    alias raises ParseError at its place."""
    found = []
    # str.find, not a multi-line regex search: a 16 MiB constant's hex would take the regex a
    # tenth of a second.
    at = 0 if text.startswith("#") else text.find("\n#")
    while at >= 0:
        m = _ALIAS_LINE.match(text, at + (text[at] == "\n"))
        if m is not None:
            found.append(m)
        at = text.find("\n#", at + 1)
    if not found:
        return {}
    aliases: dict = {}
    pending = found
    # An alias may use one defined after it; read until nothing new resolves.
    while pending:
        left = []
        for m in pending:
            ts = TokenStream(text, source)
            ts._pos = m.end()
            try:
                loc = read_location(ts, aliases)
                ts.expect(")")
            except ParseError as e:
                if "undefined location alias" in e.message:
                    left.append(m)
                    continue
                raise
            aliases[m.group(1)] = loc
        if len(left) == len(pending):
            m = left[0]
            ts = TokenStream(text, source)
            ts._pos = m.end()
            read_location(ts, aliases)  # raises the undefined alias at its place
        pending = left
    return aliases
