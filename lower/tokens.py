"""Ordered effects as tokens: which token sequences which effect (as JAX's ``TokenSet``)."""

from __future__ import annotations

import collections
import sys
from typing import Sequence

from mhlo_ir import Builder

from . import core

__all__ = ["TokenSet", "ordered_in_order"]


class TokenSet:
    """An immutable, ordered map from ordered effects to the token that sequences them."""

    __slots__ = ("_tokens",)

    def __init__(self, items=()):
        self._tokens = collections.OrderedDict(items)

    @classmethod
    def create(cls, b: Builder, effects: Sequence) -> "TokenSet":
        return cls((eff, b.create_token()) for eff in effects)

    def __len__(self):
        return len(self._tokens)

    def get(self, effect):
        return self._tokens[effect]

    def effects(self) -> tuple:
        return tuple(self._tokens)

    def tokens(self) -> tuple:
        return tuple(self._tokens.values())

    def items(self) -> tuple:
        return tuple(self._tokens.items())

    def subset(self, effects) -> "TokenSet":
        return TokenSet((e, self._tokens[e]) for e in effects)

    def update_tokens(self, tokens: "TokenSet") -> "TokenSet":
        return TokenSet((e, tokens._tokens.get(e, t)) for e, t in self._tokens.items())


def _is_ordered(effect) -> bool:
    """Whether ``effect`` must be sequenced by a token: our own ``core.OrderedEffect``s, and
    the types jax registers as ordered (``jax._src.effects.ordered_effects``: its ordered IO
    and debug effects), read from jax only when jax made the jaxpr (it is loaded then)."""
    if isinstance(effect, core.OrderedEffect) or getattr(effect, "ordered", False):
        return True
    jax_effects = sys.modules.get("jax._src.effects")
    registry = getattr(jax_effects, "ordered_effects", None)
    return registry is not None and registry.contains(effect)


def ordered_in_order(effects) -> list:
    """The ordered effects among ``effects`` (a set, as jaxprs keep them), in an order that
    does not depend on hashing: by type, then by text. Token arguments and results follow
    this order, so the printed program is the same in every process."""
    out = {e for e in effects if _is_ordered(e)}
    return sorted(out, key=lambda e: (type(e).__module__, type(e).__qualname__, str(e)))
