"""Ordered effects as tokens: which token sequences which effect (as JAX's ``TokenSet``)."""

from __future__ import annotations

import collections
from typing import Sequence

from mhlo_ir import Builder

from . import core

__all__ = ["TokenSet"]


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
    return isinstance(effect, core.OrderedEffect) or getattr(effect, "ordered", False)
