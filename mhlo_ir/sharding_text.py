"""What an ``mhlo.sharding`` string says about the value it annotates: how many of its tile
dimensions index the value (XLA's ``HloSharding`` text: ``{devices=[2,1,4]<=[8]
last_tile_dim_replicate}``, ``{devices=[4,2]0,2,4,6,1,3,5,7 last_tile_dims={manual}}``,
``{replicated}``, ``{maximal device=0}``, ``{manual}``, a tuple ``{{...}, {...}}``).

jaxlib's MLIR takes any string; XLA's conversion to HLO then refuses a tiled sharding whose
tile dimensions, less its subgroup dimensions, are not the value's rank ("Number of tile
assignment dimensions (excluding subgroups) is different than the input rank"). This reads
just enough of the text to say that first, naming the value; text it cannot read is left
to XLA (which takes some of it as opaque), never refused here.
"""

from __future__ import annotations

import re

from .types import TensorType, TupleType

__all__ = ["sharding_mismatch"]

# {devices=[d0,d1,...]<device list or iota> [last_tile_dim_replicate | last_tile_dims={..}]
#  [metadata=...]}
_TILED = re.compile(r"\{devices=\[([0-9,\s]+)\][^{}]*?"
                    r"(?:\s(last_tile_dim_replicate)|\slast_tile_dims=\{([a-z,\s]*)\})?"
                    r"(?:\s+metadata=\{.*\})?\s*\}")


def _tuple_elements(text: str) -> list | None:
    """The element shardings of a tuple sharding ``{{..}, {..}}``, or None if it is not one."""
    inner = text.strip()
    if not (inner.startswith("{{") and inner.endswith("}}")) and inner != "{}":
        return None
    inner = inner[1:-1]
    parts, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return None
        elif c == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    if depth:
        return None
    if inner.strip():
        parts.append(inner[start:].strip())
    return parts


def _tiled_rank(text: str) -> int | None:
    """The rank a tiled sharding's tiles index (tile dimensions less subgroup ones), or None
    for shardings that fit any rank (replicated, maximal, manual) or text not read here."""
    m = _TILED.fullmatch(text.strip())
    if m is None:
        return None
    dims = [d for d in m.group(1).replace(" ", "").split(",") if d]
    subgroups = 1 if m.group(2) else 0
    if m.group(3) is not None:
        subgroups = len([k for k in m.group(3).split(",") if k.strip()])
    return len(dims) - subgroups


def sharding_mismatch(text: str, t) -> str | None:
    """Why sharding ``text`` cannot annotate a value of type ``t`` (a tiled sharding of
    another rank, a tuple sharding of another arity), or None."""
    if not isinstance(text, str):
        return None
    if isinstance(t, TupleType):
        parts = _tuple_elements(text)
        if parts is None:
            return None
        if len(parts) != len(t.types):
            return (f"a tuple sharding of {len(parts)} elements annotates {t}, of "
                    f"{len(t.types)}")
        for i, (p, et) in enumerate(zip(parts, t.types)):
            why = sharding_mismatch(p, et)
            if why is not None:
                return f"element {i}: {why}"
        return None
    if not isinstance(t, TensorType):
        return None
    rank = _tiled_rank(text)
    if rank is not None and rank != len(t.shape):
        return (f"its tiles index {rank} dimensions (tile dimensions less subgroup ones), but "
                f"{t} has rank {len(t.shape)}")
    return None
