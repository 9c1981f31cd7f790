"""Whether XLA keeps an ``mhlo.sharding`` string as written, on a value of a given type.

jaxlib's MLIR takes any string. XLA's conversion to HLO (``ConvertSharding``) first tries the
string as a serialized ``OpSharding`` proto, then as HloSharding text (``ParseSharding`` in
``xla/hlo/parser/hlo_parser.cc``); text it cannot parse is DROPPED without a word, and the
program runs unsharded. Some text it parses is changed (a device list longer than its tile
assignment is cut short, a second ``shard_as`` replaces the first, a kind word after another
is ignored), some it rejects later (duplicate devices, an iota of the wrong size, a tile rank
other than the value's), and a few stop the process (``last_tile_dim_replicate`` with
``last_tile_dims``; a named sharding whose axes overlap: mhlo_ir.sharding_named). This
module reads the text as XLA does and says why a string would not be kept, so mhlo_ir
refuses it when it is set.

The grammar (tokens: mhlo_ir.sharding_lexer)::

    sharding  := '{' single-body '}' | '{' ( '{' single-body '}' (',' '{' single-body '}')* )? '}'
    single-body := named (mhlo_ir.sharding_named) | item*
    item      := 'replicated' | 'maximal' | 'manual' | 'unknown' | 'unreduced'
               | 'device=' int | 'devices=' tiles | 'last_tile_dim_replicate'
               | 'last_tile_dims=' '{' (kind (',' kind)*)? '}'
                                       (kind: manual, replicated, maximal, unreduced)
               | ('shard_as' | 'shard_like') int | 'metadata=' metadata
    tiles     := '[' int (',' int)* ']' ( int (',' int)* | '<=' '[' int (',' int)* ']' T? )
    T         := 'T' '(' int (',' int)* ')'      (required when the reshape has several dims,
                                                  not allowed after a one-dim reshape; entries
                                                  in [0, rank), as many as the reshape has
                                                  dims: else XLA drops the sharding)
    metadata  := '{' '}' | '{' md-item (','? md-item)* '}' | '{' '{' md '}' (',' '{' md '}')* '}'

Kept as written (measured, jaxlib 0.10.2): one kind word (repeats are harmless) or one
``devices=`` of positive tile dimensions whose distinct non-negative ids (listed, at least two,
or an iota of the same count with a permutation) fill it; subgroups counted in the rank;
at most one ``shard_as``/``shard_like`` with a non-negative id; ``metadata`` is read and then
dropped by jaxlib (not part of the meaning). The empty string is an empty serialized proto:
``{replicated}``. Device ids at or above the program's device count are kept by the
conversion (only compiling can judge them) and are not refused here. An iota ``T(...)`` of
the right length that is no permutation (``T(1,1)``) is kept by XLA, with a device order of
its own making, and refused here.
"""

from __future__ import annotations

import math

from .sharding_lexer import ShardingSyntaxError, Tokens
from .sharding_named import read_named
from .types import TensorType, TupleType

__all__ = ["sharding_problem", "ShardingSyntaxError", "read_sharding", "sharding_mismatch"]

_KINDS = ("replicated", "maximal", "manual", "unknown", "unreduced")
_SUBGROUP_KINDS = ("manual", "replicated", "maximal", "unreduced")
_MD_STRINGS = ("op_type", "op_name", "source_file", "deduplicated_name", "scheduling_name")
_MD_INTS = ("source_line", "source_end_line", "source_column", "source_end_column",
            "stack_frame_id")


def _md_body(tk: Tokens) -> None:
    seen = set()
    while not tk.at("punct", "}"):
        if seen:
            tk.eat("punct", ",")
        key = tk.take("attr", what="a metadata field (op_name=, source_line=, ...)")
        if key in seen:
            raise ShardingSyntaxError(f"metadata field {key}= given twice")
        seen.add(key)
        if key in _MD_STRINGS:
            tk.take("string", what=f"a string for {key}=")
        elif key in _MD_INTS:
            tk.take("int", what=f"an integer for {key}=")
        elif key == "profile_type":
            tk.take("punct", "{")
            tk.ints("}")
            tk.take("punct", "}")
        else:
            raise ShardingSyntaxError(f"unknown metadata field {key}=")
    tk.take("punct", "}")


def _metadata(tk: Tokens) -> None:
    tk.take("punct", "{")
    if not tk.at("punct", "{"):
        _md_body(tk)
        return
    while True:
        tk.take("punct", "{")
        _md_body(tk)
        if not tk.eat("punct", ","):
            break
    tk.take("punct", "}")


class Single:
    """One (non-tuple) sharding as written: every word and attribute, repeats included, so
    that what XLA would merge, cut or ignore can be named."""

    def __init__(self):
        self.kinds: list = []
        self.device: list = []     # device=N, each time it is written
        self.tiles: list = []      # (dims, ids or None, reshape or None, perm or None)
        self.replicate_last = 0    # last_tile_dim_replicate, times written
        self.subgroups: list = []  # each last_tile_dims={...} list
        self.groups: list = []     # ('shard_as' | 'shard_like', id)
        self.named: dict | None = None
        self.order: list = []      # device= values and listed ids, in the order written

    def subgroup_kinds(self) -> list:
        return ["replicated"] * bool(self.replicate_last) + \
            [k for ks in self.subgroups for k in ks]


def _tiles(tk: Tokens) -> tuple:
    tk.take("punct", "[")
    dims = tk.ints()
    tk.take("punct", "]")
    if not tk.eat("leq"):
        return dims, tk.ints(), None, None
    tk.take("punct", "[")
    reshape, perm = tk.iota()
    if len(perm) != len(reshape):  # (XLA's tile assignment parser refuses it)
        raise ShardingSyntaxError(f"T(...) has {len(perm)} entries for a reshape of "
                                  f"{len(reshape)} dimensions")
    return dims, None, reshape, perm


def _single(tk: Tokens) -> Single:
    """One sharding's items, its ``{`` already taken, through its ``}``."""
    s = Single()
    if tk.at("ident") and tk.peek()[1] in ("mesh", "maximal_mesh"):
        s.named = read_named(tk, _metadata)
        return s
    while not tk.eat("punct", "}"):
        kind, value, at = tk.peek()
        if kind == "ident" and value in _KINDS:
            s.kinds.append(tk.take("ident"))
        elif kind == "ident" and value == "last_tile_dim_replicate":
            tk.take("ident")
            s.replicate_last += 1
        elif kind == "ident" and value in ("shard_as", "shard_like"):
            tk.take("ident")
            s.groups.append((value, tk.take("int", what=f"a group id after {value}")))
        elif kind == "attr" and value == "device":
            tk.take("attr")
            s.device.append(tk.take("int", what="an integer after device="))
            s.order = [s.device[-1]]  # (XLA's device= replaces the devices read so far)
        elif kind == "attr" and value == "devices":
            tk.take("attr")
            s.tiles.append(_tiles(tk))
            s.order += s.tiles[-1][1] or []
        elif kind == "attr" and value == "metadata":
            tk.take("attr")
            _metadata(tk)
        elif kind == "attr" and value == "last_tile_dims":
            tk.take("attr")
            tk.take("punct", "{")
            kinds = []
            while not tk.eat("punct", "}"):
                if kinds:
                    tk.take("punct", ",", "',' or '}'")
                k = tk.take("ident", what="a subgroup kind")
                if k not in _SUBGROUP_KINDS:
                    raise ShardingSyntaxError(f"{k!r} is not a subgroup kind (XLA reads "
                                              f"{', '.join(_SUBGROUP_KINDS)})")
                kinds.append(k)
            s.subgroups.append(kinds)
        else:
            raise ShardingSyntaxError(f"unexpected {tk.show()} at {at}")
    _parse_errors(s)
    return s


def _parse_errors(s: Single) -> None:
    """What XLA's parser itself refuses once a sharding's items are read (it then drops the
    whole attribute): the checks of ParseSingleSharding, on its one list of devices (each
    device= replaces it, each listed devices= extends it)."""
    if s.replicate_last and s.subgroups:  # (a CHECK in XLA's parser: the process stops)
        raise ShardingSyntaxError("last_tile_dim_replicate and last_tile_dims= together")
    first = next((k for k in _KINDS if k in s.kinds), None)
    if first == "maximal" and len(s.order) != 1:
        raise ShardingSyntaxError("maximal needs exactly one device=N")
    if first not in (None, "maximal") and s.order:
        raise ShardingSyntaxError(f"{first} shardings take no device ids")
    if first is not None:
        return
    if not s.tiles:
        raise ShardingSyntaxError("no kind (replicated, maximal, manual, unknown, unreduced) "
                                  "and no devices=[...]")
    if any(t[2] is not None for t in s.tiles):
        if s.order:  # (a CHECK in XLA's parser: the process stops)
            raise ShardingSyntaxError("an iota tile assignment with listed device ids")
    elif len(s.order) <= 1:
        raise ShardingSyntaxError("a listed tile assignment needs at least two device ids")



def _a_kind(dims: list, subgroups: list) -> bool:
    """Whether XLA turns this tiling into a kind: every data tile dimension 1 and the subgroup
    dimensions larger than 1 all replicated, all manual or all unreduced (one device: none)."""
    data = dims[:len(dims) - len(subgroups)]
    kinds = {k for k, d in zip(subgroups, dims[len(data):]) if d != 1}
    return all(d == 1 for d in data) and len(kinds) <= 1 and "maximal" not in kinds


def _problem(s: Single, rank: int | None) -> str | None:
    """Why XLA would not keep ``s`` as written on a value of ``rank`` (None: any)."""
    if s.named is not None:
        n = s.named
        if n["problem"] is None and rank is not None and n["rank"] not in (None, rank):
            return f"it shards {n['rank']} dimensions, but the value has rank {rank}"
        return n["problem"]
    if len(set(s.kinds)) > 1:
        return (f"it names {len(set(s.kinds))} kinds ({', '.join(dict.fromkeys(s.kinds))}); "
                f"XLA keeps the first and ignores the rest")
    if len(s.groups) > 1:
        return "it has more than one shard_as/shard_like; XLA keeps only the last id"
    if s.groups and s.groups[0][1] < 0:
        return f"shard group id {s.groups[0][1]} is negative; XLA drops the group"
    if s.kinds:
        if s.replicate_last or s.subgroups:
            return f"{s.kinds[0]} shardings ignore last_tile_dim(s)"
        if s.tiles or len(s.device) > 1:
            return f"{s.kinds[0]} shardings ignore devices= (and all but the last device=)"
        if s.kinds[0] == "maximal" and s.device[0] < 0:
            return f"device id {s.device[0]} is negative"
        return None
    if len(s.tiles) > 1 or s.device:
        return "devices= is given with another devices= or device=; XLA merges them"
    if len(s.subgroups) > 1:
        return "last_tile_dims= is given twice; XLA merges the lists"
    dims, ids, reshape, perm = s.tiles[0]
    shape = "x".join(map(str, dims))
    if any(d <= 0 for d in dims):
        return f"tile assignment dimensions {dims} are not all positive"
    if ids is not None and len(ids) != math.prod(dims):
        return (f"the device list has {len(ids)} ids for a {shape} tile assignment "
                f"({math.prod(dims)} tiles)")
    if ids is None:
        if any(d <= 0 for d in reshape):
            return f"iota reshape dimensions {reshape} are not all positive"
        if math.prod(reshape) != math.prod(dims):
            return (f"the iota <=[{','.join(map(str, reshape))}] has {math.prod(reshape)} "
                    f"devices for a {shape} tile assignment ({math.prod(dims)} tiles)")
        if sorted(perm) != list(range(len(reshape))):
            return f"T({','.join(map(str, perm))}) is not a permutation"
    subgroups = s.subgroup_kinds()
    if subgroups and len(subgroups) > len(dims):
        return f"{len(subgroups)} subgroup dimensions but only {len(dims)} tile dimensions"
    if _a_kind(dims, subgroups):
        return None  # (XLA makes it {replicated}, {manual} or {unreduced} before any check)
    if ids is not None:
        if any(d < 0 for d in ids):
            return f"device id {min(ids)} is negative"
        if len(set(ids)) != len(ids):
            twice = next(d for d in ids if ids.count(d) > 1)
            return f"device {twice} appears twice in the device list"
    subgroups = len(subgroups)
    if rank is not None and len(dims) - subgroups != rank:
        return (f"its tiles index {len(dims) - subgroups} dimensions (tile dimensions less "
                f"subgroup ones), but the value has rank {rank}")
    return None


def read_sharding(text: str):
    """``text`` read as XLA's sharding parser reads it: a ``Single``, a list of them (a tuple
    sharding), or None for the empty string (an empty serialized proto: replicated). Raises
    ShardingSyntaxError where XLA's parser fails (and XLA drops the attribute)."""
    if text == "":
        return None
    tk = Tokens(text)
    tk.take("punct", "{", "'{' to start the sharding")
    if tk.at("punct", "{") or tk.at("punct", "}"):
        out = []
        while not tk.eat("punct", "}"):
            if out:
                tk.take("punct", ",", "',' or '}'")
            tk.take("punct", "{", "'{' to start a tuple element")
            out.append(_single(tk))
    else:
        out = _single(tk)
    if not tk.at("eof"):
        raise ShardingSyntaxError(f"{tk.show()} after the sharding's closing '}}'")
    return out


def _leaves(t) -> list:
    if isinstance(t, TupleType):
        return [leaf for e in t.types for leaf in _leaves(e)]
    return [t]


def _rank(t) -> int | None:
    return len(t.shape) if isinstance(t, TensorType) and t.shape is not None else None


# (text, type) -> sharding_mismatch's verdict. A program repeats a few shardings on many
# values (a lowering annotates each sharded op; verify and the parser judge them again), and
# reading one costs ~30 us. The verdict is a function of the key alone, so what is kept
# changes nothing any caller sees; bounded, cleared when full.
_VERDICTS: dict = {}
_VERDICTS_LIMIT = 4096


def sharding_problem(attr, t) -> str | None:
    """Why the ``mhlo.sharding`` attribute ``attr`` cannot annotate a value of type ``t``,
    as a message naming it, or None: a non-string (XLA drops it unread), or
    ``sharding_mismatch``'s reason. What the builder, a function's signature and the
    verifier all ask."""
    text = getattr(attr, "value", None)
    if not isinstance(text, str):
        return (f"mhlo.sharding {attr} is not a string (XLA drops it unread): write XLA's "
                "sharding text, e.g. \"{replicated}\"")
    why = sharding_mismatch(text, t)
    return None if why is None else f"mhlo.sharding {text!r:.80} does not fit: {why}"


def sharding_mismatch(text, t) -> str | None:
    """Why XLA would not keep sharding ``text`` on a value of type ``t`` as written (it
    would drop it unread, change it, or refuse it), or None. A non-string is not judged."""
    if not isinstance(text, str):
        return None
    key = (text, t)
    try:
        return _VERDICTS[key]
    except KeyError:
        pass
    except TypeError:  # (a type edited into something unhashable: judged, not kept)
        return _mismatch(text, t)
    why = _mismatch(text, t)
    if len(_VERDICTS) >= _VERDICTS_LIMIT:
        _VERDICTS.clear()
    _VERDICTS[key] = why
    return why


def _mismatch(text: str, t) -> str | None:
    try:
        read = read_sharding(text)
    except ShardingSyntaxError as e:
        return f"XLA cannot read it ({e}) and would drop it silently"
    if read is None:
        return None
    if isinstance(read, list):
        if not isinstance(t, TupleType):
            return f"a tuple sharding of {len(read)} elements annotates {t}, not a tuple"
        leaves = _leaves(t)  # (XLA's tuple sharding is flat: one per leaf of nested tuples)
        if len(read) != len(leaves):
            return (f"a tuple sharding of {len(read)} elements annotates {t}, of "
                    f"{len(leaves)} leaves")
        for i, (s, leaf) in enumerate(zip(read, leaves)):
            why = _problem(s, _rank(leaf))
            if why is not None:
                return f"element {i}: {why}"
        return None
    if isinstance(t, TupleType):  # (one sharding for every leaf: XLA checks it on each)
        for leaf in _leaves(t):
            why = _problem(read, _rank(leaf))
            if why is not None:
                return f"on {leaf}, a leaf of {t}: {why}"
        return _problem(read, None)
    return _problem(read, _rank(t))
