"""A design probe for the IR's storage (issue #13): is a block whose ops are rows of ints
flat in cost per op from 1,000 to 100,000 ops, where today's object IR is not?

    python benchmarks/columnar_probe.py

Today every op is one GC-tracked object that lives as long as its module, so a 100,000-op
chain makes CPython's cyclic collector scan ~100,000 survivors in its young generations and
again in full collections (``python -m lower.bench``'s "in GC" column). Here a block keeps
its ops as parallel lists of ints (kind, operand indices, type index), which the collector
never visits, and the builder hands out a small handle per op that the caller drops at the
next op. Only an elementwise chain is modelled: no attributes, regions, locations or
multi-result ops, and no checks beyond the type lookup, so its numbers are a floor for such
a design, not a measurement of one. Both sides build and print the same chain (the probe's
text matches ``lower.bench_build.ours_chain``'s body), GC enabled, best of five samples.

The third column asks what keeping today's identity of values costs in such a design: that
``block.operations[i] is x`` for the ``x`` the builder returned, which needs the block to
find a live handle by its row. A registry of weak references is the only way that does not
keep every handle alive, and a weak reference is itself an object the collector tracks, one
per op: at 100,000 ops that column loses the rows' advantage (the tenth session's runs).
So a columnar IR pays only where handles compare and hash by (block, row) and ``is`` between
two handles of one op no longer holds: an API decision, not an implementation detail.
"""

from __future__ import annotations

import gc
import time
import weakref

from lower.bench_build import _ours_print, ours_chain

KINDS = ("add", "multiply")
TYPES = ("tensor<128x128xf32>",)
_VALUE_NAMES = [f"%{i}" for i in range(100_001)]


class Handle:
    """What the builder returns for an op: the block and the op's row (arguments first)."""

    __slots__ = ("block", "row")

    def __init__(self, block, row):
        self.block = block
        self.row = row


class ColumnarBlock:
    handle = Handle  # the class of the handles it gives out

    def __init__(self, n_args: int, type_index: int):
        self.n_args = n_args
        self.arg_types = [type_index] * n_args
        self.kind: list = []
        self.lhs: list = []
        self.rhs: list = []
        self.type: list = []

    def binary(self, kind: int, x: Handle, y: Handle) -> Handle:
        n = self.n_args
        t = self.type[x.row - n] if x.row >= n else self.arg_types[x.row]
        self.kind.append(kind)
        self.lhs.append(x.row)
        self.rhs.append(y.row)
        self.type.append(t)
        return self.handle(self, n + len(self.kind) - 1)


class RegisteredHandle(Handle):
    __slots__ = ("__weakref__",)


class RegisteredBlock(ColumnarBlock):
    """A ColumnarBlock that keeps a weak reference to each handle it gives out, by row: what
    finding the caller's own handle again (identity) would need."""

    handle = RegisteredHandle

    def __init__(self, n_args: int, type_index: int):
        super().__init__(n_args, type_index)
        self.handles: dict = {}

    def binary(self, kind: int, x, y):
        h = super().binary(kind, x, y)
        self.handles[h.row] = _weak(h)
        return h


_weak = weakref.ref


def registered_chain(n: int) -> RegisteredBlock:
    return columnar_chain(n, RegisteredBlock)


def columnar_chain(n: int, kind=ColumnarBlock) -> ColumnarBlock:
    block = kind(2, 0)
    x, y = Handle(block, 0), Handle(block, 1)
    for i in range(n):
        x = block.binary(i % 2, x, y)
    return block


def columnar_print(block: ColumnarBlock) -> str:
    names = [f"%arg{i}" for i in range(block.n_args)] + _VALUE_NAMES[:len(block.kind)]
    heads = [f' = "mhlo.{k}"(' for k in KINDS]
    parts: dict = {}
    out = []
    append = out.append
    lhs, rhs, types, values = block.lhs, block.rhs, block.type, _VALUE_NAMES
    for i, k in enumerate(block.kind):
        t = types[i]
        p = parts.get((k, t))
        if p is None:
            tt = TYPES[t]
            p = parts[(k, t)] = heads[k], f") : ({tt}, {tt}) -> {tt}\n"
        append(f"    {values[i]}{p[0]}{names[lhs[i]]}, {names[rhs[i]]}{p[1]}")
    return "".join(out)


def _best(build, print_, n: int) -> tuple:
    inner = max(1, 20_000 // n)
    best = None
    for _ in range(5):
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(inner):
            m = build(n)
        t1 = time.perf_counter()
        for _ in range(inner):
            print_(m)
        t2 = time.perf_counter()
        r = ((t1 - t0) / inner / n * 1e6, (t2 - t1) / inner / n * 1e6)
        best = r if best is None or sum(r) < sum(best) else best
    return best


def main() -> int:
    print(f"{'ops':>8} {'columnar build + print':>24} {'with a weak registry':>22} "
          f"{'object IR build + print':>25}  us/op")
    for n in (1_000, 10_000, 100_000):
        c = _best(columnar_chain, columnar_print, n)
        r = _best(registered_chain, columnar_print, n)
        o = _best(ours_chain, _ours_print, n)
        print(f"{n:>8} {c[0]:>9.2f} + {c[1]:.2f} = {sum(c):.2f} {r[0]:>7.2f} + {r[1]:.2f} = "
              f"{sum(r):.2f} {o[0]:>10.2f} + {o[1]:.2f} = {sum(o):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
