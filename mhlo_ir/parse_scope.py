"""The SSA names the parser sees where it is. MLIR scopes a region's names inside the regions
around it: a body sees the values defined around it and may not define one of their names
again, while sibling regions may reuse each other's names.

One dict of every visible name per function (``frames[-1]``), as MLIR keeps it: a region
remembers how many names were visible when it opened, and closing it drops the names
defined since, which are the dict's last (a dict keeps insertion order and ``popitem``
takes the newest). So a name's lookup and the redefinition test (``name in frame``, which
every reader asks before defining) cost one dict operation at any nesting depth.
"""

from __future__ import annotations

__all__ = ["Scope"]


class Scope:
    """``frames``: a list holding the visible names' one dict (a list, so a function's body
    can start from a fresh one and put the module's back: it sees none of its values)."""

    __slots__ = ("frames", "_marks")

    def __init__(self):
        self.frames = [{}]
        self._marks: list = []

    def lookup(self, name):
        return self.frames[-1].get(name)

    def open(self) -> dict:
        """Enter a region: the names defined from now on are its own."""
        names = self.frames[-1]
        self._marks.append(len(names))
        return names

    def close(self) -> None:
        """Leave the innermost region: its names are no longer visible."""
        names = self.frames[-1]
        n = self._marks.pop()
        while len(names) > n:
            names.popitem()
