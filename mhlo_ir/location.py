"""Source locations carried by every operation: unknown, name, file:line:col, call site, fused.

XLA keeps the file:line:col part in its error messages and op metadata, and JAX's name stacks
arrive as name locations, so these are how a user finds the Python line behind an HLO op.
"""

from __future__ import annotations

import attrs

from .text import check_string, quote


def _filename(v):
    check_string(v, "location file name")


# MLIR reads ``"":3:7`` back as ``"-":3:7`` (the name of the text being parsed): a point in an
# empty file name would read back as a position in the text. A range keeps the empty name
# (``"":3:7 to :21``, what JAX writes for code compiled from a string without a file name).
_EMPTY_POINT = ("location file name must not be empty outside a range: MLIR reads \"\":line:col "
                "back as \"-\":line:col (a position in the text read); give a name, or a "
                "range (end_column), which keeps \"\"")


def _u32(v, what):
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**32:
        raise ValueError(f"location {what} must be an integer in [0, 2**32), got {v!r}")

__all__ = ["Location", "UnknownLoc", "NameLoc", "FileLineColLoc", "CallSiteLoc", "FusedLoc",
           "UNKNOWN", "loc", "read_location", "read_location_text", "parse_location",
           "parse_location_aliases"]


def _tuple(xs) -> tuple:
    # A Python function, not the builtin: see mhlo_ir.types.as_tuple.
    return tuple(xs)


class Location:
    """Base of all locations; ``render()`` gives the text inside ``loc(...)``."""

    __slots__ = ()

    def render(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def children(self) -> tuple:
        return ()


@attrs.frozen
class UnknownLoc(Location):
    def render(self) -> str:
        return "unknown"

    @classmethod
    def parse(cls, ts, aliases=None) -> "UnknownLoc":
        ts.expect("unknown")
        return UNKNOWN


def _text_field():
    """The ``_text`` of the locations that keep their rendered text (file, name, callsite):
    a location is immutable and its text a function of it alone, and JAX's callsite chains
    share their outer links among many ops, so each link renders once however many chains
    and prints hold it. Outside equality, hashing and repr; None until rendered (set in
    ``__init__``: a slot left unset would raise on its first read). Each ``render`` reads it
    inline (a shared base ``render`` calling ``_render`` measured 13% slower on first
    renders)."""
    return attrs.field(default=None, init=False, eq=False, hash=False, repr=False)


def _inner(v, what):
    """A location's inner location ``what`` must be a Location (printing asks it for its
    text); checked when the location is made, not when a module holding it is printed."""
    if not isinstance(v, Location):
        raise TypeError(f"{what} must be a Location (hlo.NameLoc('x'), "
                        f"hlo.FileLineColLoc('f.py', 3, 7)...), got {type(v).__name__} "
                        f"{v!r:.60}")


def _end(v, what):
    if v is not None:
        _u32(v, what)


@attrs.frozen(cache_hash=True)
class FileLineColLoc(Location):
    """``"model.py":3:7``, or a range ``"model.py":3:7 to :21`` (``end_column`` on the same
    line) / ``"model.py":3:7 to 5:2`` (``end_line`` too), as MLIR's FileLineColRange prints
    them (JAX's locations carry the ranges Python reports)."""

    filename: str = attrs.field(validator=lambda _, __, v: _filename(v))
    line: int = attrs.field(default=0, validator=lambda _, __, v: _u32(v, "line"))
    column: int = attrs.field(default=0, validator=lambda _, __, v: _u32(v, "column"))
    end_line: int | None = attrs.field(default=None, validator=lambda _, __, v: _end(v, "end"))
    end_column: int | None = attrs.field(default=None,
                                         validator=lambda _, __, v: _end(v, "end column"))
    _text: str | None = _text_field()

    def __attrs_post_init__(self):
        if self.end_line is not None:
            if self.end_column is None:
                raise ValueError("a location range needs an end column (end_line alone "
                                 "is not a range)")
            if self.end_line == self.line:  # one spelling per range: "to :col"
                object.__setattr__(self, "end_line", None)
        if self.end_line is None and self.end_column == self.column:
            object.__setattr__(self, "end_column", None)  # MLIR prints an empty range so
        if not self.filename and self.end_column is None:
            raise ValueError(_EMPTY_POINT)

    def render(self) -> str:
        text = self._text
        if text is None:
            text = f"{quote(self.filename)}:{int(self.line)}:{int(self.column)}"
            if self.end_column is not None:
                if self.end_line is None or self.end_line == self.line:
                    text = f"{text} to :{int(self.end_column)}"
                else:
                    text = f"{text} to {int(self.end_line)}:{int(self.end_column)}"
            object.__setattr__(self, "_text", text)
        return text

    @classmethod
    def parse(cls, ts, aliases=None) -> "FileLineColLoc":
        """Reads ``"file":line:col`` (or ``"file":line``, column 0, as MLIR reads it), and
        ranges: ``... to :col`` or ``... to line:col``. An empty file name outside a range
        reads as ``"-"``, as MLIR reads ``"":3:7`` (the name of the text read)."""
        tok = ts.expect_kind("string", "a file name")
        ts.expect(":")
        line = ts.integer("a line number")
        column = ts.integer("a column number") if ts.accept(":") else None
        end_line = end_column = None
        if column is not None and ts.accept("to"):  # (MLIR reads no range without a column)
            if ts.accept(":"):
                end_column = ts.integer("an end column")
            else:
                end_line = ts.integer("an end line")
                ts.expect(":")
                end_column = ts.integer("an end column")
        column = 0 if column is None else column
        name = ts.string_value(tok)
        if not name and (end_column is None or end_column == column and end_line in (None, line)):
            name = "-"  # (MLIR itself keeps "" in "":3 and "":3:7 to :7, rarely met)
        return ts.make(tok, cls, name, line, column, end_line, end_column)


@attrs.frozen(cache_hash=True)
class NameLoc(Location):
    """``"jit(f)/add"`` or ``"name"("file":1:2)``: a name with an optional child location."""

    name: str = attrs.field(validator=lambda _, __, v: check_string(v, "location name"))
    child: Location | None = attrs.field(
        default=None, validator=lambda _, __, v: v is None or _inner(v, "NameLoc's child"))
    _text: str | None = _text_field()

    def render(self) -> str:
        text = self._text
        if text is None:
            child = self.child
            if child is None or isinstance(child, UnknownLoc):
                text = quote(self.name)
            else:
                if child.__class__ is not CallSiteLoc and not _shallow(child):
                    _render_nested(child)
                text = f"{quote(self.name)}({child.render()})"
            object.__setattr__(self, "_text", text)
        return text

    @classmethod
    def parse(cls, ts, aliases=None) -> "NameLoc":
        """Reads ``"name"`` or ``"name"(child)``; an unknown child is no child, as MLIR prints
        both the same. A chain of names (``"a"("b"("c"))``) in a loop, not a recursion per
        link: how deep a chain reads must not depend on the stack (nor on whether its text
        was read before, which the parser's tables remember)."""
        names = [ts.expect_kind("string", "a location name")]
        child = None
        inner = False
        while ts.accept("("):
            if ts.peek().kind == "string" and not ts.at(":", 1):
                names.append(ts.next())
                continue
            child = read_location(ts, aliases)
            inner = True
            break
        if inner:
            ts.expect(")")
            if child.__class__ is UnknownLoc:
                child = None
        loc = ts.make(names[-1], cls, ts.string_value(names[-1]), child)
        for tok in reversed(names[:-1]):
            ts.expect(")")
            loc = ts.make(tok, cls, ts.string_value(tok), loc)
        return loc

    def children(self):
        return () if self.child is None else (self.child,)


@attrs.frozen(cache_hash=True)
class CallSiteLoc(Location):
    """``callsite(callee at caller)``."""

    callee: Location = attrs.field(validator=lambda _, __, v: _inner(v, "CallSiteLoc's callee"))
    caller: Location = attrs.field(validator=lambda _, __, v: _inner(v, "CallSiteLoc's caller"))
    _text: str | None = _text_field()

    def render(self) -> str:
        text = self._text
        if text is None:
            # The caller chain is rendered from its far end, each link's text kept: a chain
            # as deep as a recursion would otherwise recurse once per link (a traceback of a
            # thousand frames overflowed Python's stack). Callees (and the chain's last
            # caller) that hold more than a level render through _render_nested.
            chain, link = [], self
            while link.__class__ is CallSiteLoc and link._text is None:
                chain.append(link)
                link = link.caller
            if not _shallow(link):
                _render_nested(link)
            for link in reversed(chain):
                callee = link.callee
                if not _shallow(callee):
                    _render_nested(callee)
                object.__setattr__(link, "_text", f"callsite({callee.render()} at "
                                                  f"{link.caller.render()})")
            text = self._text
        return text

    @classmethod
    def parse(cls, ts, aliases=None) -> "CallSiteLoc":
        """Reads ``callsite(callee at caller)``; a chain of callers (``callsite(a at
        callsite(b at ...))``, one link per frame of a traceback) in a loop, not a
        recursion per link."""
        callees = []
        while True:
            ts.expect("callsite")
            ts.expect("(")
            callees.append(read_location(ts, aliases))
            ts.expect("at")
            if not ts.at("callsite"):
                break
        loc = read_location(ts, aliases)
        for callee in reversed(callees):
            ts.expect(")")
            loc = cls(callee, loc)
        return loc

    def children(self):
        return (self.callee, self.caller)


@attrs.frozen(cache_hash=True)
class FusedLoc(Location):
    """``fused[a, b]`` or ``fused<"metadata">[a, b]``."""

    locations: tuple = attrs.field(
        converter=_tuple,
        validator=lambda _, __, v: [_inner(x, f"FusedLoc's locations[{i}]")
                                    for i, x in enumerate(v)])
    metadata: str | None = attrs.field(
        default=None,
        validator=lambda _, __, v: v is None or check_string(v, "fused location metadata"))
    _text: str | None = _text_field()

    def render(self) -> str:
        text = self._text
        if text is None:
            for x in self.locations:
                if x.__class__ is not CallSiteLoc and not _shallow(x):
                    _render_nested(x)
            inner = ", ".join([x.render() for x in self.locations])
            meta = "" if self.metadata is None else f"<{quote(self.metadata)}>"
            text = f"fused{meta}[{inner}]"
            object.__setattr__(self, "_text", text)
        return text

    @classmethod
    def parse(cls, ts, aliases=None) -> "FusedLoc":
        """Reads ``fused[a, b]`` or ``fused<"metadata">[a, b]`` (string metadata only)."""
        ts.expect("fused")
        metadata = None
        if ts.accept("<"):
            if ts.peek().kind != "string":
                raise ts.expected("a string (only string metadata is supported)")
            metadata = ts.string()
            ts.expect(">")
        return cls(ts.comma_list(lambda: read_location(ts, aliases), "]", open="["), metadata)

    def children(self):
        return self.locations


UNKNOWN = UnknownLoc()
# The locations that hold locations (and keep their rendered text).
_NESTING = frozenset({NameLoc, CallSiteLoc, FusedLoc})


def _shallow(loc) -> bool:
    """Whether ``loc`` renders recursing one level at most: rendered already, a leaf, or a
    name of a leaf or of a rendered location. A render asks such children (and a CallSiteLoc,
    which walks its callers in a loop) for their text directly, and any other through
    _render_nested: rendering never recurses more than a few levels, however deep the
    location (JAX's, a name of a callsite chain of names of file positions, never needs
    _render_nested)."""
    cls = loc.__class__
    if cls is NameLoc:
        if loc._text is not None:
            return True
        child = loc.child
        return child is None or child.__class__ not in _NESTING or child._text is not None
    return cls not in _NESTING or loc._text is not None


def _render_nested(root) -> str:
    """``root.render()`` without recursion: the locations nested in it are rendered first,
    innermost first, from an explicit stack, each keeping its text, so that rendering any
    location asks its children for text they already have. A chain of callers as long as a
    deep traceback, or of names inside names, would otherwise recurse once per link, and
    overflow Python's stack or not depending on which of its links an earlier print had
    rendered."""
    stack = [root]
    while stack:
        loc = stack[-1]
        todo = [x for x in loc.children() if x.__class__ in _NESTING and x._text is None]
        if todo:
            stack.extend(todo)
        else:
            stack.pop()
            loc.render()  # (its nested locations have their text: no recursion)
    return root._text


def loc(where=None, line: int | None = None, column: int = 0) -> Location:
    """Shorthand: ``loc()`` unknown, ``loc("name")``, ``loc("file.py", 3, 7)``."""
    if where is None:
        return UNKNOWN
    if isinstance(where, Location):
        return where
    if line is None:
        return NameLoc(where)
    return FileLineColLoc(where, line, column)


def read_location(ts, aliases=None) -> Location:
    """Reads the location inside ``loc(...)`` from token stream ``ts``. ``#loc3`` aliases are
    looked up in ``aliases`` (a mapping from ``"#loc3"`` to a Location)."""
    tok = ts.peek()
    if tok.kind == "string":
        if ts.at(":", 1):
            return FileLineColLoc.parse(ts, aliases)
        return NameLoc.parse(ts, aliases)
    if tok.kind == "bare":
        parse = _KEYWORDS.get(tok.text)
        if parse is not None:
            return parse(ts, aliases)
    elif tok.kind == "#":
        found = None if aliases is None else aliases.get(tok.text)
        if found is None:
            raise ts.error(f"undefined location alias {tok.text}", tok)
        ts.next()
        return found
    raise ts.expected("a location")


_KEYWORDS = {"unknown": UnknownLoc.parse, "callsite": CallSiteLoc.parse,
             "fused": FusedLoc.parse}


# What read_location_text reads: a string without escapes, and a file location's
# ``:line:col`` with its range (`` to :col``, `` to line:col``).
_PLAIN_STRING = None
_FILE_POSITION = None
_DEEPEST = 200  # nesting it reads; deeper texts go the token way (which reads any depth)


def read_location_text(text: str, callers: dict | None = None):
    """The location ``text`` spells, all of it, as JAX's and our printers write
    locations (names, ``callsite(... at ...)``, ``"file":line:col`` and its ranges,
    ``unknown``; strings without escapes, MLIR's exact spacing), or None where the token
    reader must read it or say what is wrong (escapes, fused locations, aliases, other
    spacing, bad numbers): one pass over the characters, no tokens made.

    ``callers`` (a dict the caller keeps, e.g. for one module's lines) remembers each
    callsite's caller by the rest of the text from it: a program's locations share their
    outer frames, and the text after a caller (closing parentheses) tells its depth, so a
    rest met before is the same caller, read once."""
    global _PLAIN_STRING, _FILE_POSITION
    if _PLAIN_STRING is None:
        import re
        _PLAIN_STRING = re.compile(r'"([^"\\\n\v\f]*)"')
        _FILE_POSITION = re.compile(r":([0-9]+):([0-9]+)(?: to ([0-9]+)?:([0-9]+))?")
    try:
        got = _read_plain(text, 0, 0, callers)
    except (ValueError, TypeError):  # (a value a location refuses: the tokens say where)
        return None
    return got[0] if got is not None and got[1] == len(text) else None


def _read_plain(text: str, i: int, depth: int, callers=None):
    """(location, end) of the location at ``text[i:]`` (see read_location_text), or None."""
    if depth > _DEEPEST:
        return None
    if text.startswith('"', i):
        m = _PLAIN_STRING.match(text, i)
        if m is None:
            return None
        value, i = m.group(1), m.end()
        if text.startswith(":", i):  # "file":line:col[ to [line]:col]
            m = _FILE_POSITION.match(text, i)
            if m is None:
                return None
            line, column, end_line, end_column = [None if x is None else int(x)
                                                  for x in m.groups()]
            i = m.end()
            if not value and (end_column is None or end_column == column and
                              end_line in (None, line)):
                value = "-"  # (as FileLineColLoc.parse reads "":3:7)
            return FileLineColLoc(value, line, column, end_line, end_column), i
        if text.startswith("(", i):  # "name"(child)
            got = _read_plain(text, i + 1, depth + 1, callers)
            if got is None or not text.startswith(")", got[1]):
                return None
            child = got[0]
            return NameLoc(value, None if child.__class__ is UnknownLoc else child), got[1] + 1
        return NameLoc(value), i
    if text.startswith("callsite(", i):
        callee = _read_plain(text, i + 9, depth + 1, callers)
        if callee is None or not text.startswith(" at ", callee[1]):
            return None
        j = callee[1] + 4
        rest = text[j:] if callers is not None else None
        hit = None if rest is None else callers.get(rest)
        if hit is not None:  # (the caller's location and length)
            caller = hit[0], j + hit[1]
        else:
            caller = _read_plain(text, j, depth + 1, callers)
            if caller is None:
                return None
            if rest is not None:
                if len(callers) > 4096:
                    callers.clear()
                callers[rest] = caller[0], caller[1] - j
        if not text.startswith(")", caller[1]):
            return None
        return CallSiteLoc(callee[0], caller[0]), caller[1] + 1
    if text.startswith("unknown", i):
        return UNKNOWN, i + 7
    return None


def parse_location(text: str, aliases=None) -> Location:
    """The location spelled by all of ``text``: ``loc("f.py":3:7)`` or just what is inside
    ``loc(...)`` (what ``render`` gives). Raises ``syntax.ParseError``."""
    from .syntax import TokenStream, nested_too_deeply
    ts = TokenStream(text)
    wrapped = ts.at("loc") and ts.at("(", 1)
    if wrapped:
        ts.next()
        ts.next()
    try:
        location = read_location(ts, aliases)
    except RecursionError:
        raise nested_too_deeply(ts) from None
    if wrapped:
        ts.expect(")")
    ts.expect_end()
    return location


def parse_location_aliases(text: str, aliases=None) -> dict:
    """The ``#loc3 = loc(...)`` definitions that end MLIR's (and our ``locations="alias"``)
    output, as a dict from ``"#loc3"`` to its Location; each may use those before it (and
    any in ``aliases``). Other lines are skipped."""
    from .syntax import TokenStream
    out = dict(aliases or {})
    for line in text.splitlines():
        if not line.startswith("#"):
            continue
        ts = TokenStream(line)
        name = ts.next()
        if name.kind != "#" or not ts.at("="):
            continue
        ts.next()
        ts.expect("loc")
        ts.expect("(")
        out[name.text] = read_location(ts, out)
        ts.expect(")")
        ts.expect_end()
    return out


def checked_location(location) -> Location:
    """``location`` (a builder method's ``location=``) if it is a Location; anything else is
    an OpBuildError saying what to pass, here and not when the module is printed."""
    if isinstance(location, Location):
        return location
    from .errors import OpBuildError
    raise OpBuildError(f"location= must be a Location (hlo.NameLoc('x'), "
                       f"hlo.FileLineColLoc('f.py', 3, 7)) or None, got "
                       f"{type(location).__name__} {location!r:.60}; or build inside "
                       f"b.at_location('f.py', 3, 7)")
