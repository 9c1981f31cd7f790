"""Serial numbers: the int that stands for a type or an op kind in a long-lived cache key.

Why: CPython's cyclic collector scans every tracked container, and a tuple stays tracked as
long as it holds one tracked object (a TensorType, an OpSpec). The builder's and printer's
memos keep an entry for every op kind, type combination and attribute mapping a process meets,
so keys of such objects made each first-sight program leave ~100 tracked tuples behind, which
the collector then scanned again and again (a third of building and printing a 20-op program
at new shapes went to collections). A key of ints and strings is untracked at the first
collection that sees it and costs the collector nothing after.

A serial is taken once, when the object is made, from one counter of negative numbers: it is
never reused (unlike ``id()``, it does not outlive its object into another's), never equal to
an ``id()`` (always positive), and never equal to another kind's serial, so keys that mix
serials with ids and with each other cannot collide.
"""

from __future__ import annotations

import itertools

__all__ = ["serial"]

# next() of an itertools.count is one C call under the GIL: threads never get the same number.
serial = itertools.count(-1, -1).__next__
