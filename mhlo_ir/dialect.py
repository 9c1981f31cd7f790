"""Output dialects: how dialect-neutral op names and attributes are spelled in text.

The op table names ops neutrally (``add``, ``dot_general``); a Dialect maps them to ``mhlo.add``
and spells the dialect's enum and structured attributes. Only MHLO exists today; StableHLO will be
a second instance, with no change to the op specs.
"""

from __future__ import annotations

import attrs

__all__ = ["Dialect", "MHLO"]


@attrs.frozen
class Dialect:
    """How one output dialect spells ops, tokens and its enum/structured attributes."""

    name: str
    token_type: str
    # Enums printed as ``#mhlo<comparison_direction GT>``, except those listed here, which have
    # a mnemonic of their own (``#mhlo.rng_algorithm<THREE_FRY>``).
    own_mnemonic_enums: frozenset = frozenset()

    def op_name(self, neutral: str) -> str:
        return f"{self.name}.{neutral}"

    def enum(self, kind: str, value: str) -> str:
        if kind in self.own_mnemonic_enums:
            return f"#{self.name}.{kind}<{value}>"
        return f"#{self.name}<{kind} {value}>"

    def struct(self, mnemonic: str, body: str) -> str:
        return f"#{self.name}.{mnemonic}<{body}>"


MHLO = Dialect("mhlo", "!mhlo.token", frozenset({"rng_algorithm", "rng_distribution"}))
