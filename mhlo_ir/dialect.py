"""Output dialects: how dialect-neutral op names and attributes are spelled in text.

The op table names ops neutrally (``add``, ``dot_general``); a Dialect maps them to ``mhlo.add``
or ``stablehlo.add`` and spells the dialect's token type, enum and structured attributes and
integer-array attributes. The op specs know no spelling: a second dialect is a second instance.
"""

from __future__ import annotations

import attrs

__all__ = ["Dialect", "MHLO", "STABLEHLO"]


@attrs.frozen
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


MHLO = Dialect("mhlo", "!mhlo.token", frozenset({"rng_algorithm", "rng_distribution"}))

# Checked against jaxlib 0.10.2's stablehlo bindings (tests/mhlo_ir/test_index_array.py): every
# enum the table uses is ``#stablehlo<kind VALUE>`` (rng_algorithm and rng_distribution
# included; ``#stablehlo.rng_algorithm<...>`` is a parse error); structured attributes are
# ``#stablehlo.dot<...>``, ``.gather``, ``.scatter``, ``.conv``, ``.channel_handle``,
# ``.output_operand_alias`` as in MHLO.
STABLEHLO = Dialect("stablehlo", "!stablehlo.token", frozenset(), index_arrays="array")
