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

_DEVICES = re.compile(r"\{\s*devices=\[([0-9,\s]+)\]")
_SUBGROUPS = re.compile(r"last_tile_dims=\{([a-z,\s]*)\}")


def _without_metadata(text: str) -> str:
    """``text`` without its ``metadata={...}`` parts (their braces may nest, and their strings
    may say anything)."""
    out, i = [], 0
    while True:
        j = text.find("metadata={", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        depth, k = 0, j + len("metadata=")
        while k < len(text):
            c = text[k]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            elif c == '"':
                k = text.find('"', k + 1)
                if k < 0:
                    return text  # unbalanced: leave it to XLA
            k += 1
        i = k + 1


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
    body = _without_metadata(text.strip())
    m = _DEVICES.match(body)
    if m is None or body.count("{") != 1 or not body.endswith("}"):
        return None  # (not one tiled sharding: left to XLA)
    dims = [d for d in m.group(1).replace(" ", "").split(",") if d]
    rest = body[m.end():]
    subgroups = 1 if "last_tile_dim_replicate" in rest else 0
    g = _SUBGROUPS.search(rest)
    if g is not None:
        subgroups = len([k for k in g.group(1).split(",") if k.strip()])
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
        leaves = _leaves(t)  # (XLA's tuple sharding is flat: one per leaf of nested tuples)
        if len(parts) != len(leaves):
            return (f"a tuple sharding of {len(parts)} elements annotates {t}, of "
                    f"{len(leaves)} leaves")
        for i, (p, leaf) in enumerate(zip(parts, leaves)):
            why = sharding_mismatch(p, leaf)
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


def _leaves(t) -> list:
    if isinstance(t, TupleType):
        return [leaf for e in t.types for leaf in _leaves(e)]
    return [t]
