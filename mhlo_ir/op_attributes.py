"""The read-only attribute mapping of an operation.

Builders share one mapping among all ops built from the same arguments (every layer of a
network), and the printer keeps the text of a mapping across prints, keyed by its identity.
Both are only exact if the mapping cannot change after it is made, so the builder and
``Operation.set_attr`` store an ``OpAttributes``: a dict whose mutating methods raise.
A user may still assign any mapping to ``op.attributes``; the printer then renders it afresh
on every print instead of trusting a cached text.
"""

from __future__ import annotations

__all__ = ["OpAttributes"]


def _read_only(self, *args, **kwargs):
    raise TypeError("an op's attributes are read-only (builders share them): use "
                    "op.set_attr(name, value), or assign a new mapping to op.attributes")


class OpAttributes(dict):
    """A dict of attribute name -> Attribute that refuses changes after it is made.

    A dict subclass (rather than ``MappingProxyType``) so that reads stay at C speed and the
    class alone proves the mapping is one of ours: a user's ``MappingProxyType(d)`` can still
    change through ``d``.
    """

    __slots__ = ()

    __setitem__ = __delitem__ = _read_only
    clear = pop = popitem = setdefault = update = __ior__ = _read_only

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (OpAttributes, (dict(self),))


# (names, ids of the values) -> the OpAttributes made of those very objects; bounded.
_MADE: dict = {}
_MADE_LIMIT = 16384


def shared_attributes(attrs: dict) -> OpAttributes:
    """An ``OpAttributes`` of ``attrs``: the one made before of the same attribute objects
    under the same names, else a new one (``attrs`` itself if it is an OpAttributes).

    Ops built alike at other shapes (a dot_general at every width) then share one mapping,
    and with it what is kept by the mapping's identity: the printer's text of it, the
    verifier's verdict on it. Keyed by the values' identity, never their equality
    (``FloatAttr(0.0) == FloatAttr(-0.0)``); the kept mapping holds its values, so no other
    object can take their ids while it is kept."""
    key = (tuple(attrs), tuple(map(id, attrs.values())))
    hit = _MADE.get(key)
    if hit is None:
        if len(_MADE) > _MADE_LIMIT:
            _MADE.clear()
        hit = _MADE.setdefault(key, attrs if attrs.__class__ is OpAttributes else
                               OpAttributes(attrs))
    return hit
