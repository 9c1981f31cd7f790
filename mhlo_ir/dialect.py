"""Output dialects: how dialect-neutral op names and attributes are spelled in text.

The op table names ops neutrally (``add``, ``dot_general``); a Dialect maps them to ``mhlo.add``
or ``stablehlo.add`` and spells the dialect's token type, enum and structured attributes and
integer-array attributes. The op specs know no spelling: a second dialect is a second instance.
"""

from __future__ import annotations

import attrs

__all__ = ["Dialect", "MHLO", "STABLEHLO", "BY_PREFIX"]


@attrs.frozen(cache_hash=True)  # a key of the printer's shared caches, hashed per print
class Dialect:
    """How one output dialect spells ops, tokens and its enum/structured attributes."""

    name: str
    token_type: str
    # Enums printed as ``#mhlo<comparison_direction GT>``, except those listed here, which have
    # a mnemonic of their own (``#mhlo.rng_algorithm<THREE_FRY>``).
    own_mnemonic_enums: frozenset = frozenset()
    # How integer-array attributes (IndexArrayAttr: permutation, broadcast_dimensions, slice
    # bounds, window sizes...) are spelled: "dense" (``dense<[1, 2]> : tensor<2xi64>``, MHLO)
    # or "array" (``array<i64: 1, 2>``, StableHLO).
    index_arrays: str = attrs.field(default="dense", validator=attrs.validators.in_(
        ("dense", "array")))

    def op_name(self, neutral: str) -> str:
        return f"{self.name}.{neutral}"

    def has_op(self, spec) -> bool:
        """Whether this dialect can print the op of ``spec``: ops spelled through the dialect
        (``mhlo.copy``) need a twin in it; chlo and func ops keep their own names anywhere."""
        return spec.namespace != "hlo" or self.name in spec.dialects

    def enum(self, kind: str, value: str) -> str:
        if kind in self.own_mnemonic_enums:
            return f"#{self.name}.{kind}<{value}>"
        return f"#{self.name}<{kind} {value}>"

    def struct(self, mnemonic: str, body: str) -> str:
        return f"#{self.name}.{mnemonic}<{body}>"

    # -- reading the spellings back (``ts`` is a syntax.TokenStream) ----------------------

    def attribute_mnemonic(self, ts) -> str | None:
        """The mnemonic of the dialect attribute ``ts`` is at, not consumed: ``dot`` for
        ``#mhlo.dot<...>`` and MLIR's long form ``#mhlo<dot<...>>``, ``comparison_direction``
        for ``#mhlo<comparison_direction GT>``; None if the next token is not one of ours."""
        tok = ts.peek()
        if tok.kind != "#":
            return None
        name = tok.text[1:]
        if name == self.name:
            inner = ts.peek(2)
            return inner.text if _opens(ts, tok) and inner.kind == "bare" else None
        if name.startswith(self.name) and name[len(self.name)] == "." and _opens(ts, tok):
            return name[len(self.name) + 1:]
        return None

    def open_struct(self, ts, mnemonic: str) -> int:
        """Reads the head ``struct`` writes, ``#mhlo.dot<``, or MLIR's equivalent long form
        ``#mhlo<dot<``; returns how many ``>`` close it (give that to ``close_struct``)."""
        tok = ts.peek()
        if tok.kind == "#" and tok.text == f"#{self.name}.{mnemonic}" and _opens(ts, tok):
            ts.next()
            ts.expect("<")
            return 1
        if tok.kind == "#" and tok.text == f"#{self.name}" and _opens(ts, tok) \
                and ts.peek(2).text == mnemonic and ts.at("<", 3):
            for _ in range(4):
                ts.next()
            return 2
        raise ts.expected(f"#{self.name}.{mnemonic}<...>")

    def close_struct(self, ts, closing: int) -> None:
        for _ in range(closing):
            ts.expect(">")

    def read_enum(self, ts, kind: str):
        """Reads an enum of ``kind`` as ``enum`` writes it and gives the token of its value
        (not checked: the caller knows the values)."""
        if kind in self.own_mnemonic_enums:
            closing = self.open_struct(ts, kind)
            value = ts.expect_kind("bare", f"a {kind} value")
            self.close_struct(ts, closing)
            return value
        tok = ts.peek()
        if tok.kind != "#" or tok.text != f"#{self.name}" or not ts.at("<", 1) \
                or ts.peek(2).text != kind:
            raise ts.expected(self.enum(kind, "VALUE"))
        for _ in range(3):
            ts.next()
        value = ts.expect_kind("bare", f"a {kind} value")
        ts.expect(">")
        return value


MHLO = Dialect("mhlo", "!mhlo.token", frozenset({"rng_algorithm", "rng_distribution"}))

# Checked against jaxlib 0.10.2's stablehlo bindings (tests/mhlo_ir/test_index_array.py): every
# enum the table uses is ``#stablehlo<kind VALUE>`` (rng_algorithm and rng_distribution
# included; ``#stablehlo.rng_algorithm<...>`` is a parse error); structured attributes are
# ``#stablehlo.dot<...>``, ``.gather``, ``.scatter``, ``.conv``, ``.channel_handle``,
# ``.output_operand_alias`` as in MHLO.
STABLEHLO = Dialect("stablehlo", "!stablehlo.token", frozenset(), index_arrays="array")


# The output dialect an op name's prefix (``mhlo.add``, ``stablehlo.add``) selects, where text
# is read: its attribute and type spellings.
BY_PREFIX = {"mhlo": MHLO, "stablehlo": STABLEHLO}


def _opens(ts, tok) -> bool:
    """Whether a ``<`` follows the dialect attribute name ``tok`` (the next token) with
    nothing between: MLIR reads ``#mhlo <...>`` as a reference to an alias named ``#mhlo``."""
    after = ts.peek(1)
    return after.text == "<" and after.pos == tok.pos + len(tok.text)
