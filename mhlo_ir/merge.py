"""Merging modules: one module's functions moved into another (the seed's
``merge_mhlo_modules``), for programs assembled from separately built pieces.

Functions whose names are taken in the destination are renamed (``f`` to ``f_0``...), as
MLIR's SymbolTable does on insertion, and every symbol reference to them in the moved
functions' ops is rewritten: ``func.call``'s callee, ``called_computations``, a composite's
decomposition, references nested in arrays and dictionaries (not references in the
functions' own argument or result attributes, which jax's merge leaves too). The source's
``main`` becomes a private function named ``name``; its new name is returned, to call it by;
other functions keep their visibility (as the seed's). Host callbacks move too: the source's
callables are appended to the destination's ``host_callbacks`` and the moved callback ops'
indices shifted by as many. The source's module attributes (``mhlo.num_partitions``...) do
not move: the destination's stand for the merged program.
"""

from __future__ import annotations

from .attributes import ArrayAttr, DictionaryAttr, IntegerAttr, SymbolRefAttr
from .errors import IRError
from .ir import Module, _check_symbol, walk

__all__ = ["merge_modules"]


def merge_modules(dst: Module, src: Module, name: str) -> str:
    """Move every function of ``src`` into ``dst`` (``src`` is left empty) and return the
    name ``src``'s ``main`` has there: ``name``, or ``name_0``... if that is taken. The
    moved ``main`` is private: call it with ``Builder.call``."""
    if dst is src:
        raise IRError("merge_modules: a module cannot be merged into itself")
    if src.lookup("main") is None:
        raise IRError(f"merge_modules: the source module @{src.name} has no @main to insert "
                      f"as @{name}")
    _check_symbol(name, "merge_modules name")  # before anything moves
    moved = list(src.functions)
    offset = len(dst.host_callbacks)
    renames: dict = {}
    entry = None
    src.functions.clear()
    src._symbols.clear()
    src._next_suffix.clear()
    for fn in moved:
        old = fn.name
        if old == "main":
            fn.name, fn.visibility = name, "private"
        dst.insert(fn)
        if fn.name != old:
            renames[old] = fn.name
        if old == "main":
            entry = fn.name
    dst.host_callbacks.extend(src.host_callbacks)
    src.host_callbacks.clear()
    for fn in moved:
        for _, op in walk(fn):
            attrs = op.attributes
            if not attrs:
                continue
            for key, attr in list(attrs.items()):
                new = _renamed(attr, renames)
                if new is not attr:
                    op.set_attr(key, new)
            if offset and op.spec.name == "custom_call":
                _shift_callback(op, offset)
    return entry


def _renamed(attr, renames: dict):
    """``attr`` with symbol references renamed (the same object if none is)."""
    if not renames:
        return attr
    if isinstance(attr, SymbolRefAttr):
        new = renames.get(attr.name)
        return attr if new is None else SymbolRefAttr(new)
    if isinstance(attr, ArrayAttr):
        elements = [_renamed(e, renames) for e in attr.elements]
        if all(a is b for a, b in zip(elements, attr.elements)):
            return attr
        return ArrayAttr(elements)
    if isinstance(attr, DictionaryAttr):
        items = [(k, _renamed(v, renames)) for k, v in attr.items]
        if all(a is b for (_, a), (_, b) in zip(items, attr.items)):
            return attr
        return DictionaryAttr(dict(items))
    return attr


def _shift_callback(op, offset: int) -> None:
    from .ops.host_callbacks import callback_index, ffi_config
    index = callback_index(op)
    if index is None:
        return
    _, cfg, name = ffi_config(op.attributes)  # (api 4's, or JAX's spelling of it)
    entries = dict(cfg.items)
    entries["index"] = IntegerAttr(index + offset, entries["index"].type)
    op.set_attr(name, DictionaryAttr(entries))
