"""The printer's caches kept across prints: texts that depend only on the dialect and the hex
threshold (op names, attribute texts, signatures, each op kind's line parts, which specs have
no custom form), whether an attribute name prints bare, and the numbered starts of block
label entries. Printing many small modules (generated-program testing) would otherwise
render every attribute and signature afresh.

The caches are keyed by op specs, interned types, or the identity of an immutable attribute or
OpAttributes mapping they also hold (so that id is not reused), never by equality; they are
replaced whole (not emptied in place) once any grows past the limit, so a printer that holds
the old ones in another thread is not disturbed. Nothing in them changes what is printed:
each entry is what the printer would make again.
"""

from __future__ import annotations

from .pretty_forms import custom_form
from .text import is_bare_identifier

__all__ = ["shared_caches", "bare", "signature_key", "arg_heads"]

_SHARED: dict = {}
_SHARED_LIMIT = 8192
_CHECK_EVERY = 64  # prints between two looks at the caches' sizes (a power of two)


def shared_caches(dialect, hex_threshold) -> tuple:
    """(op names, attribute texts, signatures, line parts, attribute-dict parts, specs
    without a custom form in the dialect).

    Keyed by the dialect's identity (the entry holds the dialect, so its id is not reused
    while the entry lives): hashing the attrs Dialect ran its Python ``__hash__``, a tenth
    of printing a one-op module. Each entry's sizes are looked at every ``_CHECK_EVERY``-th
    print, not every print (the look cost as much again), so a cache may pass the limit by
    what 64 prints add before it is replaced."""
    key = (id(dialect), hex_threshold)
    entry = _SHARED.get(key)
    if entry is not None and entry[0] is dialect:
        tick = entry[2]
        tick[0] += 1  # (a race between threads only moves when the next look comes)
        if tick[0] & (_CHECK_EVERY - 1) or max(map(len, entry[1])) <= _SHARED_LIMIT:
            return entry[1]
    # (op names and plain specs too: opaque ops add specs as they are read)
    if len(_SHARED) >= 8:  # bounded in hex thresholds and dialects too
        _SHARED.clear()
    caches = ({}, {}, {}, {}, {}, _Plain(dialect))
    _SHARED[key] = (dialect, caches, [0])
    return caches


class _Plain(dict):
    """spec -> whether its ops print in generic form with ``pretty=True`` too (no custom
    form in this dialect: they take the generic line parts), answered on first asking."""

    def __init__(self, dialect):
        super().__init__()
        self.dialect = dialect

    def __missing__(self, spec):
        plain = self[spec] = custom_form(spec, self.dialect) is None
        return plain


_BARE: dict = {}


def bare(k) -> bool:
    """Whether attribute name ``k`` prints without quotes (cached by the exact string)."""
    r = _BARE.get(k)
    if r is None:
        if len(_BARE) > _SHARED_LIMIT:
            _BARE.clear()
        r = _BARE[k] = is_bare_identifier(k)
    return r


def signature_key(operands, results) -> tuple:
    """(operand types..., None, result types...): the key of a signature's text among the
    printer's kept ones. One flat tuple: a key of three tuples kept three objects for the
    cyclic collector to scan, and every program met for the first time adds keys."""
    n = len(operands)
    if len(results) == 1:
        r = results[0].type
        return (operands[0].type, None, r) if n == 1 else \
            (operands[0].type, operands[1].type, None, r) if n == 2 else \
            (*[v.type for v in operands], None, r)
    return (*[v.type for v in operands], None, *[r.type for r in results])


def arg_heads(n: int) -> tuple:
    """(``"%arg0: "``, ``", %arg1: "``, ...), at least ``n`` of them: the starts of a
    numbered block label's entries. A pure memo of at most _KEPT_HEADS, replaced whole when
    it grows (atomic: a printer in another thread reads the old one or the new, never one
    being filled); a longer label's are made for it alone."""
    heads = _ARG_HEADS[0]
    if len(heads) < n:
        if n > _KEPT_HEADS:
            return _numbered_heads(n)
        heads = _ARG_HEADS[0] = _numbered_heads(min(max(n, 2 * len(heads)), _KEPT_HEADS))
    return heads


def _numbered_heads(n: int) -> tuple:
    return ("%arg0: ", *[f", %arg{i}: " for i in range(1, n)])


_KEPT_HEADS = 1024
_ARG_HEADS = [_numbered_heads(64)]
