"""The SSA names the parser sees where it is: one frame per open region, innermost last, each
region's frame answering for the frames around it (MLIR scopes a region's names inside them,
so a body may not redefine a value it can see)."""

from __future__ import annotations

__all__ = ["Scope"]


class Scope:
    """The values visible where the parser is: one dict per open region, innermost last (a
    function starts a fresh list: it sees none of its module's values)."""

    __slots__ = ("frames",)

    def __init__(self):
        self.frames = [{}]

    def lookup(self, name):
        for frame in reversed(self.frames):
            v = frame.get(name)
            if v is not None:
                return v
        return None

    def open(self) -> dict:
        """A new innermost frame, for a region: it sees the frames around it, and a name
        they define is taken there too (MLIR: "redefinition of SSA value")."""
        frame = _Nested()
        frame.outer = self.frames[-1]
        self.frames.append(frame)
        return frame


class _Nested(dict):
    """A region's frame: ``name in frame`` (what every definition asks first) answers for the
    frames around it too. A function's own frame stays a plain dict, so only ops in regions
    pay for the longer question."""

    __slots__ = ("outer",)

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or name in self.outer
