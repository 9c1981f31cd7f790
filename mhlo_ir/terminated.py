"""Refusing ops built after a block's terminator, at no cost to building.

``Builder.return_`` swaps the block's op list, once, for a ``_TerminatedOps`` whose ``append``
raises: the builder's hot paths append as before and pay nothing for the check.
"""

from __future__ import annotations

from .errors import OpBuildError

__all__ = ["terminated"]


def _after_terminator(ops, op):
    term = ops[-1]
    name = getattr(getattr(op, "spec", None), "name", None)
    what = f"'{name}'" if name is not None else f"{type(op).__name__} {op!r:.40}"
    raise OpBuildError(
        f"{what} cannot be added: the block already ends with '{term.spec.name}' (ops after a "
        f"terminator never run, and jaxlib rejects them): build it before return_")


class _TerminatedOps(list):
    """A block's op list once ``return_`` has built its terminator: appending after it raises
    OpBuildError.

    NOTE: the check lives here, not in the builder's methods, so building ops costs nothing
    more: the builder swaps the block's list for this one once per block, in ``return_``.
    Hand edits of the list (insert, pop, remove, item assignment...) are the user's: they
    disarm the check (the list becomes an ``_EditedOps``), and ``Module.verify`` reports an
    op left after the terminator. No ``__init__`` and no instance slots: made by list's own
    C constructor, once per region of every reduce, sort, map and loop built.
    """

    __slots__ = ()

    # (Each checks its class: ``ops.append(ops.pop(0))`` binds append before pop disarms.)
    def append(self, op):
        if self.__class__ is _TerminatedOps and self and self[-1].spec.terminator:
            _after_terminator(self, op)
        list.append(self, op)

    def extend(self, ops):
        ops = list(ops)
        if ops and self.__class__ is _TerminatedOps and self and self[-1].spec.terminator:
            _after_terminator(self, ops[0])
        list.extend(self, ops)

    def __iadd__(self, ops):
        self.extend(ops)
        return self

    def __reduce__(self):
        return (list, (list(self),))


class _EditedOps(list):
    """A terminated op list after a hand edit: a plain list again (the same layout, so the
    edit swaps the class in place)."""

    __slots__ = ()

    def __reduce__(self):
        return (list, (list(self),))


def _disarming(name):
    method = getattr(list, name)

    def edit(self, *args, **kwargs):
        self.__class__ = _EditedOps
        return method(self, *args, **kwargs)
    edit.__name__ = name
    return edit


for _name in ("insert", "pop", "remove", "clear", "sort", "reverse", "__setitem__",
              "__delitem__", "__imul__"):
    setattr(_TerminatedOps, _name, _disarming(_name))


def _terminated(block, op):
    """``op``, the terminator just appended to ``block``, whose op list now refuses more."""
    ops = block.operations
    if ops.__class__ is list:
        block.operations = _TerminatedOps(ops)
    return op


terminated = _terminated
