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
