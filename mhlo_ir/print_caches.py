"""The printer's caches kept across prints: texts that depend only on the dialect and the hex
threshold (op names, attribute texts, signatures, each op kind's line parts, which specs have
no custom form) and whether an attribute name prints bare. Printing many small modules
(generated-program testing) would otherwise render every attribute and signature afresh.

The caches are keyed by op specs, interned types, or the identity of an immutable attribute or
OpAttributes mapping they also hold (so that id is not reused), never by equality; they are
replaced whole (not emptied in place) once any grows past the limit, so a printer that holds
the old ones in another thread is not disturbed. Nothing in them changes what is printed:
each entry is what the printer would make again.
"""

from __future__ import annotations

from .pretty_forms import custom_form
from .text import is_bare_identifier

__all__ = ["shared_caches", "bare"]

_SHARED: dict = {}
_SHARED_LIMIT = 8192


def shared_caches(dialect, hex_threshold) -> tuple:
    """(op names, attribute texts, signatures, line parts, attribute-dict parts, specs
    without a custom form in the dialect)."""
    key = (dialect, hex_threshold)
    caches = _SHARED.get(key)
    if caches is None or max(map(len, caches)) > _SHARED_LIMIT:
        # (op names and plain specs too: opaque ops add specs as they are read)
        if len(_SHARED) >= 8:  # bounded in hex thresholds and dialects too
            _SHARED.clear()
        caches = _SHARED[key] = ({}, {}, {}, {}, {}, _Plain(dialect))
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
