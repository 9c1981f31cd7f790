"""Op specs for ops the table does not know, so that parsed text using them prints back.

StableHLO's test programs use ops of dialects nobody here models (``"check.expect_eq_const"``),
and a reader of real programs meets more. Such an op is kept with everything the text says —
name, operands, attributes (which of them were properties), regions and result types — and
nothing is checked or inferred about it: its spec only tells the printer how to spell it.

Specs are interned by (name, property names, region count): one op kind gets one spec, so the
printer's per-kind caches see it as one kind, and the same text always makes the same spec
whatever was parsed before.
"""

from __future__ import annotations

import threading

from .ops.spec import AttrSpec, OpSpec

__all__ = ["opaque_spec", "is_opaque"]

_SPECS: dict = {}
_LOCK = threading.Lock()
_LIMIT = 4096


def _keep(value):
    return value


_KEEP = AttrSpec(_keep)


def opaque_spec(name: str, properties: tuple = (), regions: int = 0) -> OpSpec:
    """The spec of unknown op ``name`` whose attributes ``properties`` print as properties
    (``<{...}>``) and the rest as its attribute dictionary, with ``regions`` regions."""
    key = (name, properties, regions)
    spec = _SPECS.get(key)
    if spec is None:
        prefix = name.split(".", 1)[0] if "." in name else name
        spec = OpSpec(name=name, operands=("operands*",),
                      attributes={p: _KEEP for p in properties}, regions=regions,
                      namespace=prefix, dialects=frozenset({prefix}),
                      chapter="opaque", not_run="not in the op table")
        with _LOCK:
            if len(_SPECS) >= _LIMIT:
                _SPECS.clear()
            spec = _SPECS.setdefault(key, spec)
    return spec


def is_opaque(spec) -> bool:
    """Whether ``spec`` describes an op the table does not know."""
    return spec.chapter == "opaque"
