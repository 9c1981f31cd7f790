"""XLA's named (mesh) shardings in ``mhlo.sharding`` text: ``{maximal_mesh[device_id=0]}`` and
``{mesh["x"=4,"y"=2], device_ids=([2,4]T(1,0)), [{"x"}, {}], replicated={"y"}}``, read as
XLA's ``ParseMesh`` / ``ParseSingleSharding(NamedSharding)`` read them (hlo_parser.cc), and
checked as its ``NamedSharding`` constructor checks them (``VerifyNamedSharding`` in
named_sharding.cc, ``AxisRef::Validate`` / ``CanCoexistWithoutOverlap`` / ``CanMerge`` in
mesh_and_axis.cc): a failed check there is a CHECK, which stops XLA's whole process.

Measured with jaxlib 0.10.2 (tests/mhlo_ir/test_sharding_oracle.py holds the strings):

- Axis names must be quoted (``mesh[a=2]`` is dropped). An axis reference that names no mesh
  axis is read as an axis *index* where absl's ``SimpleAtoi`` reads it (``"1"``, ``" 1"``,
  ``"+1"``, ``"01"``: the mesh's axis 1, printed back by its name); anything else, or an
  index out of range, stops the process.
- Sub-axes ``"x":(p)s`` (the size-``s`` part of axis ``x`` after its first ``p``): ``p >= 1``,
  ``s > 1``, ``p*s`` divides the axis size and ``s`` is less than it, else the process stops.
  Every two references to one mesh axis, across all dimensions and the ``replicated=``,
  ``unreduced=`` and ``manual=`` lists, must both be sub-axes that do not overlap, the upper
  one's pre-size a multiple of the lower one's ``p*s`` (``"x":(1)2`` and ``"x":(2)2`` on
  ``"x"=4`` are kept; ``"x":(1)2`` with ``"x"``, ``"x":(1)4`` with ``"x":(2)2``, or
  ``"x":(1)2`` with ``"x":(3)2`` on ``"x"=12`` stop it). Two neighbours in one dimension or
  one list must not be mergeable (``"x":(1)2, "x":(2)2``), and each list must be sorted by
  (mesh axis, pre-size, size). Repeated lists of one kind are concatenated, and XLA prints
  the lists as replicated, unreduced, manual whatever the order written.
- ``device_ids``: a list of the wrong length, or one listing the devices in order
  (``(0,1,2,3)``: "Non-iota device assignment has iota device id list"), stops the process;
  an iota written unlike a tile assignment's (``[2,2]`` without ``T(...)``, ``[4]T(0)``, a
  ``T`` entry outside ``[0, rank)``) is dropped. Unlike a tile assignment's iota, a ``T(...)``
  of another length than the reshape is not rejected: a longer one is cut to the reshape's
  rank, and a shorter one is read past its end (``[2,4]T(1)`` came back as ``T(1,0)``,
  ``[2,2,2]T(2)`` as ``T(2,0,-1727876632)``: memory that is not the list), so both are
  refused here. XLA prints an iota device order in its own normal form (``[2,2,2]T(2,0,1)``
  as ``[4,2]T(1,0)``), so ``devices`` below is what the order is, not how it was written.
"""

from __future__ import annotations

import math
import re

from .sharding_lexer import ShardingSyntaxError, Tokens

__all__ = ["read_named"]

_SPECIAL = ("replicated", "unreduced", "manual")
# absl::SimpleAtoi on an int64: ASCII whitespace around an optionally signed decimal.
_ATOI = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)[ \t\n\v\f\r]*\Z")


def _axis_name(tk: Tokens) -> str:
    if not tk.at("string"):
        raise ShardingSyntaxError(f"expected a quoted mesh axis name, found {tk.show()}")
    return tk.take("string")



def _device_ids(tk: Tokens, sizes: list) -> tuple:
    """``device_ids=(...)`` after its ``(`` through its ``)``: (devices, problem), devices as
    in read_named (``("written", ...)`` where there is a problem: compared as written)."""
    n = math.prod(sizes)
    if tk.eat("punct", "["):
        reshape, perm = tk.iota("a device_ids reshape")
        if len(reshape) == 1 and tk.at("ident", "T"):
            raise ShardingSyntaxError("T(...) after a device_ids reshape of one dimension")
        tk.take("punct", ")")
        written = f"device_ids T({','.join(map(str, perm))})"
        as_written = ("written", tuple(reshape), tuple(perm))
        rank = f"{len(perm)} entries for a reshape of {len(reshape)} dimensions"
        if len(perm) < len(reshape):
            return as_written, (f"{written} has {rank}; XLA reads past the end of the list "
                                f"(undefined: what follows it in memory)")
        if len(perm) > len(reshape):
            return as_written, (f"{written} has {rank}; XLA ignores the last "
                                f"{len(perm) - len(reshape)}")
        if sorted(perm) != list(range(len(reshape))):
            return as_written, f"{written} is not a permutation of {len(reshape)} dimensions"
        if math.prod(reshape) != n:
            return as_written, f"device_ids iota of {math.prod(reshape)} devices for a mesh of {n}"
        return ("iota", tuple(reshape), tuple(perm)), None
    ids = tk.ints(")")
    tk.take("punct", ")")
    as_written = ("written", tuple(ids))
    if len(ids) != n:
        return as_written, f"device_ids has {len(ids)} ids for a mesh of {n} devices"
    if sorted(ids) != list(range(n)):
        return as_written, ("device_ids are not a permutation of the mesh's device numbers "
                            "(XLA aborts)")
    if ids == list(range(n)):  # (a CHECK in XLA: the process stops)
        return as_written, (f"device_ids ({','.join(map(str, ids))}) list the devices in "
                            "order, which XLA aborts on (\"Non-iota device assignment has "
                            "iota device id list\"): leave device_ids out")
    return ("list", tuple(ids)), None


class _Axes:
    """The mesh's axes and the axis references read against them, with XLA's checks."""

    def __init__(self, names: list, sizes: list):
        self.names, self.sizes = names, sizes
        self.problem: str | None = None  # (the first; each one stops XLA's process)

    def fail(self, why: str) -> None:
        self.problem = self.problem or why

    def read_ref(self, tk: Tokens) -> tuple | None:
        """One reference ``"x"`` or ``"x":(pre)size``: (axis index, pre, size), pre and size
        None for the whole axis; None where it names no axis."""
        name = _axis_name(tk)
        sub = None
        if tk.eat("punct", ":"):
            tk.take("punct", "(")
            pre = tk.take("int")
            tk.take("punct", ")")
            sub = (pre, tk.take("int"))
        index = self._index(name)
        if index is None:
            return None
        if sub is None:
            return (index, None, None)
        pre, size = sub
        full = self.sizes[index]
        shown = f"{self.names[index]!r}:({pre}){size}"
        if pre < 1 or size < 2:
            self.fail(f"sub-axis {shown} needs a pre-size of at least 1 and a size of at least 2")
        elif full % (pre * size) or size >= full:
            self.fail(f"sub-axis {shown} is not a part of the axis of size {full} (pre-size "
                      f"times size must divide it, size must be less)")
        return (index, pre, size)

    def _index(self, name: str) -> int | None:
        if name in self.names:
            return self.names.index(name)
        m = _ATOI.match(name)
        if m and 0 <= int(m.group(1)) < len(self.names):
            return int(m.group(1))
        self.fail(f"axis {name!r} is not an axis of the mesh {self.names} (nor an index of one)")
        return None

    def show(self, ref: tuple | None) -> str:
        if ref is None:
            return "<no axis>"
        index, pre, size = ref
        return f"'{self.names[index]}'" + (f":({pre}){size}" if pre is not None else "")

    def _span(self, ref: tuple) -> tuple:
        index, pre, size = ref
        return (1, self.sizes[index]) if pre is None else (pre, pre * size)

    def _key(self, ref: tuple) -> tuple:
        lo, hi = self._span(ref)
        return (ref[0], lo, hi // lo)

    def _mergeable(self, a: tuple, b: tuple) -> bool:
        return a[0] == b[0] and a[1] is not None and b[1] is not None and \
            self._span(a)[1] == self._span(b)[0]

    def check(self, dims: list, lists: dict) -> None:
        """XLA's VerifyNamedSharding on the references read (all of them well-formed)."""
        refs = [r for d in dims for r in d] + [r for k in _SPECIAL for r in lists[k]]
        for i, a in enumerate(refs):
            for b in refs[:i]:
                if a[0] != b[0]:
                    continue
                (a0, a1), (b0, b1) = self._span(a), self._span(b)
                if a[1] is None and b[1] is None:
                    return self.fail(f"axis {self.show(a)} is used twice (XLA aborts: \"Axes "
                                     f"cannot coexist or axes overlap\")")
                if a[1] is None or b[1] is None or (a1 > b0 and b1 > a0):
                    return self.fail(f"{self.show(b)} and {self.show(a)} overlap (XLA aborts: "
                                     f"\"Axes cannot coexist or axes overlap\")")
                if max(a0, b0) % min(a1, b1):
                    return self.fail(f"{self.show(b)} and {self.show(a)} leave a gap that is "
                                     f"no sub-axis (XLA aborts: \"Axes cannot coexist\")")
        for where, seq in [("a dimension sharding", d) for d in dims] + \
                          [(f"the {k} axes", lists[k]) for k in _SPECIAL]:
            for a, b in zip(seq, seq[1:]):
                if self._mergeable(a, b):
                    pre, size = a[1], a[2] * b[2]
                    one = (a[0], None, None) if size == self.sizes[a[0]] else (a[0], pre, size)
                    return self.fail(f"{self.show(a)}, {self.show(b)} in {where} can be merged "
                                     f"(XLA aborts on that): write {self.show(one)}")
        for k in _SPECIAL:
            if [self._key(r) for r in lists[k]] != sorted(self._key(r) for r in lists[k]):
                return self.fail(f"the {k} axes are not sorted by mesh axis, pre-size and "
                                 f"size, which XLA aborts on")
        return None


def read_named(tk: Tokens, metadata) -> dict:
    """One named sharding after its ``{`` (``tk`` at ``mesh`` or ``maximal_mesh``), through its
    ``}``: a dict with ``canonical`` (XLA's printed form, less its device_ids), ``devices``
    (the mesh's device order: None for the identity, ``("iota", reshape, perm)`` or ``("list",
    ids)``), ``rank`` (dimension shardings, or None for a form that fits any rank) and
    ``problem`` (why XLA would not keep it, or None). ``metadata`` reads a ``metadata=`` value."""
    word = tk.take("ident")
    tk.take("punct", "[")
    if word == "maximal_mesh":
        if tk.take("attr", what="'device_id='") != "device_id":
            raise ShardingSyntaxError("expected device_id= in maximal_mesh")
        device = tk.take("int", what="a device id")
        tk.take("punct", "]")
        if tk.eat("punct", ","):
            if tk.take("attr", what="'metadata='") != "metadata":
                raise ShardingSyntaxError("expected metadata= after maximal_mesh[...],")
            metadata(tk)
        tk.take("punct", "}")
        return {"canonical": f"{{maximal_mesh[device_id={device}]}}", "devices": None,
                "rank": None,
                "problem": f"device id {device} is negative" if device < 0 else None}
    names, sizes = [], []
    if not tk.at("punct", "]"):
        while True:
            names.append(_axis_name(tk))
            tk.take("punct", "=")
            sizes.append(tk.take("int", what="an axis size"))
            if not tk.eat("punct", ","):
                break
    tk.take("punct", "]")
    axes = _Axes(names, sizes)
    if len(set(names)) != len(names):
        axes.fail("the mesh names an axis twice")
    elif any(s <= 0 for s in sizes):
        axes.fail(f"mesh axis sizes {sizes} are not all positive")
    tk.eat("punct", ",")
    devices = None
    if tk.at("attr", "device_ids"):
        tk.take("attr")
        tk.take("punct", "(")
        devices, why = _device_ids(tk, sizes)
        if why is not None:
            axes.fail(why)
        if devices is not None and devices[0] == "iota" and \
                list(devices[2]) == list(range(len(devices[2]))):
            devices = None  # (the devices in order: XLA prints no device_ids)
        tk.eat("punct", ",")

    def axis_refs(close: str, open_ok: bool) -> tuple:
        refs, is_open = [], False
        while not tk.at("punct", close):
            if refs or is_open:
                tk.take("punct", ",")
            if open_ok and tk.eat("punct", "?"):
                is_open = True
                if not tk.at("punct", close):
                    raise ShardingSyntaxError("an axis after '?' in a dimension sharding")
                continue
            refs.append(axes.read_ref(tk))
        tk.take("punct", close)
        return refs, is_open

    rank, dims, lists, special = None, [], {k: [] for k in _SPECIAL}, None
    if tk.at("ident") and tk.peek()[1] in _SPECIAL:
        special = tk.take("ident")
    else:
        tk.take("punct", "[")
        while not tk.at("punct", "]"):
            if dims:
                tk.take("punct", ",")
            tk.take("punct", "{")
            dims.append(axis_refs("}", True))
        tk.take("punct", "]")
        rank = len(dims)
    while not tk.at("punct", "}"):
        tk.take("punct", ",", "',' or '}'")
        name = tk.take("attr", what="replicated=, unreduced=, manual= or metadata=")
        if name == "metadata":
            metadata(tk)
        elif name in _SPECIAL and rank is not None:
            tk.take("punct", "{")
            lists[name] += axis_refs("}", False)[0]
        else:
            raise ShardingSyntaxError(f"unexpected {name}= in a named sharding")
    tk.take("punct", "}")
    dim_refs = [refs for refs, _ in dims]
    if axes.problem is None:  # (every reference read is then well-formed)
        axes.check(dim_refs, lists)
    parts = ["mesh[" + ",".join(f"'{a}'={s}" for a, s in zip(names, sizes)) + "]"]
    if special is not None:
        parts.append(special)
    else:
        parts.append("[" + ", ".join(
            "{" + ", ".join([axes.show(r) for r in refs] + ["?"] * is_open) + "}"
            for refs, is_open in dims) + "]")
        parts += [f"{k}={{{', '.join(axes.show(r) for r in lists[k])}}}"
                  for k in _SPECIAL if lists[k]]  # (XLA prints no empty list)
    return {"canonical": "{" + ", ".join(parts) + "}", "devices": devices, "rank": rank,
            "problem": axes.problem}
