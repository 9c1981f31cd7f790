"""Source locations carried by every operation: unknown, name, file:line:col, call site, fused.

XLA keeps the file:line:col part in its error messages and op metadata, and JAX's name stacks
arrive as name locations, so these are how a user finds the Python line behind an HLO op.
"""

from __future__ import annotations

import attrs

from .text import check_string, quote


def _filename(v):
    check_string(v, "location file name")
    if not v:
        # MLIR stores an empty file name as "-", the name of the text being parsed, so the
        # location would read back as a position in the text.
        raise ValueError("location file name must not be empty")


def _u32(v, what):
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**32:
        raise ValueError(f"location {what} must be an integer in [0, 2**32), got {v!r}")

__all__ = ["Location", "UnknownLoc", "NameLoc", "FileLineColLoc", "CallSiteLoc", "FusedLoc",
           "UNKNOWN", "loc"]


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


@attrs.frozen(cache_hash=True)
class FileLineColLoc(Location):
    """``"model.py":3:7``."""

    filename: str = attrs.field(validator=lambda _, __, v: _filename(v))
    line: int = attrs.field(default=0, validator=lambda _, __, v: _u32(v, "line"))
    column: int = attrs.field(default=0, validator=lambda _, __, v: _u32(v, "column"))

    def render(self) -> str:
        return f"{quote(self.filename)}:{int(self.line)}:{int(self.column)}"


@attrs.frozen(cache_hash=True)
class NameLoc(Location):
    """``"jit(f)/add"`` or ``"name"("file":1:2)``: a name with an optional child location."""

    name: str = attrs.field(validator=lambda _, __, v: check_string(v, "location name"))
    child: Location | None = None

    def render(self) -> str:
        if self.child is None or isinstance(self.child, UnknownLoc):
            return quote(self.name)
        return f"{quote(self.name)}({self.child.render()})"

    def children(self):
        return () if self.child is None else (self.child,)


@attrs.frozen(cache_hash=True)
class CallSiteLoc(Location):
    """``callsite(callee at caller)``."""

    callee: Location
    caller: Location

    def render(self) -> str:
        return f"callsite({self.callee.render()} at {self.caller.render()})"

    def children(self):
        return (self.callee, self.caller)


@attrs.frozen(cache_hash=True)
class FusedLoc(Location):
    """``fused[a, b]`` or ``fused<"metadata">[a, b]``."""

    locations: tuple = attrs.field(converter=_tuple)
    metadata: str | None = attrs.field(
        default=None,
        validator=lambda _, __, v: v is None or check_string(v, "fused location metadata"))

    def render(self) -> str:
        inner = ", ".join(loc.render() for loc in self.locations)
        meta = "" if self.metadata is None else f"<{quote(self.metadata)}>"
        return f"fused{meta}[{inner}]"

    def children(self):
        return self.locations


UNKNOWN = UnknownLoc()


def loc(where=None, line: int | None = None, column: int = 0) -> Location:
    """Shorthand: ``loc()`` unknown, ``loc("name")``, ``loc("file.py", 3, 7)``."""
    if where is None:
        return UNKNOWN
    if isinstance(where, Location):
        return where
    if line is None:
        return NameLoc(where)
    return FileLineColLoc(where, line, column)
