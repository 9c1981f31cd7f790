"""The state a program is drawn in: a pool of typed values per block, and the ways a rule gets
an operand of the type it needs.

A rule (``mhlo_ir.strategies.rules``) asks its ``Scope`` for operands: ``operand(accepts)`` takes
a value of the pool whose element type the op accepts, or converts one; ``value_of(type)`` takes
a value of exactly that type, or derives one from the pool (``convert``, ``reshape``, one
element broadcast) or makes a constant. So programs are DAGs whose ops feed each other across
element types and shapes, not chains over one type.
"""

from __future__ import annotations

import functools

import attrs
import numpy as np

from .. import dtypes
from ..builder import Builder
from ..ir import Module
from ..jaxlib_conversion import constant_in_closed_region
from ..types import TensorType, tensor
from .table import REFUSED
from .values import array_from_words, storage_bits

__all__ = ["Skip", "Options", "Generation", "Scope", "INDEX_TYPES"]

INDEX_TYPES = (dtypes.i32, dtypes.i64)



def _never(et) -> bool:
    return False


def _refused(op: str):
    """The test of element types XLA refuses for ``op`` (``table.REFUSED``), looked up once
    per candidate list rather than per candidate."""
    entry = REFUSED.get(op)
    return _never if entry is None else entry[1]

@functools.lru_cache(maxsize=4096)
def _allowed(types: tuple, op: str) -> tuple:
    """Which of ``types`` op ``op`` may compute on (a pure function of its arguments, so
    memoised: the generator asks it for every operand it draws)."""
    refused = _refused(op)
    return tuple(t for t in types if not refused(t))


class Skip(Exception):
    """A rule cannot apply in this scope (no operand it could use): draw another op."""


@attrs.frozen
class Options:
    """What a generator may draw. ``element_types``: the types of arguments and of the values
    ops compute on (indices, predicates and shape operands use i1, i32 and i64 whatever this
    says); ``ops``: op table names; ``division_by_zero``: let integer divisors be zero
    (XLA defines the result; StableHLO's interpreter dies of SIGFPE)."""

    ops: tuple
    element_types: tuple
    max_ops: int = 8
    max_rank: int = 3
    max_dim: int = 4
    max_depth: int = 2
    max_args: int = 3
    division_by_zero: bool = False

    def __attrs_post_init__(self):
        # (max_dim 0 cannot be honoured: a dimension is 1 or more, or now and then 0)
        for name, least in (("max_ops", 1), ("max_rank", 0), ("max_dim", 1),
                            ("max_depth", 1), ("max_args", 1)):
            n = getattr(self, name)
            if n.__class__ is bool or not isinstance(n, int) or n < least:
                raise ValueError(f"Options.{name} must be an int >= {least}, got {n!r}")
        if self.max_dim ** max(self.max_rank, 1) > MAX_ELEMENTS:
            raise ValueError(f"Options: arrays of up to max_dim ** max_rank = {self.max_dim}"
                             f" ** {self.max_rank} elements; at most {MAX_ELEMENTS} are drawn "
                             "(each argument is one such array)")
        if self.division_by_zero.__class__ is not bool:
            raise TypeError(f"Options.division_by_zero must be True or False, got "
                            f"{self.division_by_zero!r}")
        if not isinstance(self.ops, tuple) or not self.ops or \
                not isinstance(self.element_types, tuple) or not self.element_types:
            raise ValueError("Options.ops and Options.element_types must be non-empty "
                             "tuples (default_options makes them from names)")


# The most elements an argument of generated programs may have (max_dim ** max_rank).
MAX_ELEMENTS = 1 << 26


INEXACT_TRAITS = frozenset({"reassociates", "approximates"})


class _Traits(set):
    """The program's traits; adding an inexact one also marks the op being drawn as inexact
    (``Scope.fill`` reads and resets ``drawn_inexact`` around each rule)."""

    __slots__ = ("drawn_inexact",)

    def __init__(self):
        super().__init__()
        self.drawn_inexact = False

    def add(self, trait) -> None:
        if trait in INEXACT_TRAITS:
            self.drawn_inexact = True
        set.add(self, trait)


class Generation:
    """One program being drawn: its module, its decisions, its op budget, and what the
    comparison of executors must know (``traits``: "reassociates" when float sums may be
    computed in another order, "approximates" for ops whose float results are not correctly
    rounded, "random" when results depend on implementation-defined random bits,
    "e8m0_lossy" when values are converted into f8E8M0FNU, which cannot hold them all;
    ``inexact``: the values computed, directly or through others, by ops of the first two
    kinds, whose exact bits the spec leaves to the executor)."""

    def __init__(self, choices, options: Options, rules):
        self.c = choices
        self.options = options
        self.rules = rules
        self.module = Module("generated")
        self.ops_left = options.max_ops
        self.traits = _Traits()
        # id -> value (held, so that ids of values dropped with a skipped rule are not reused)
        self.inexact: dict = {}
        self.ops_used: list = []
        self._functions = 0
        self.types = tuple(options.element_types)
        self.current = ""  # the op being drawn, whose refused element types are left out
        # a chlo.broadcast_select was drawn: no constants in closed regions from then on
        # (mhlo_ir.jaxlib_conversion.hoisted_region_constant)
        self.broadcast_select = False
        self._channels = 0

    def channel(self) -> int:
        """A channel id no other collective of the program has: XLA takes collectives of one
        id for one collective, with one layout (two all_reduces of ranks 1 and 2 sharing
        handle 1 failed to compile: "layout minor_to_major field contains 1 elements")."""
        self._channels += 1
        return self._channels

    def function_name(self) -> str:
        self._functions += 1
        return f"f{self._functions}"

    # -- types and arrays ----------------------------------------------------------------

    def element_type(self, accepts=None):
        allowed = _allowed(self.types, self.current)
        pool = allowed if accepts is None else [t for t in allowed if accepts(t)]
        if not pool:
            raise Skip("no allowed element type fits")
        return self.c.choice(pool)

    def shape(self, min_rank: int = 0, max_rank: int | None = None, min_dim: int = 0):
        hi = self.options.max_rank if max_rank is None else max_rank
        rank = self.c.integer(min_rank, max(min_rank, hi))
        return tuple(self.dim(min_dim) for _ in range(rank))

    def dim(self, min_dim: int = 0) -> int:
        # zero-size dimensions are rare but present
        if min_dim == 0 and self.c.boolean(0.04):
            return 0
        return self.c.integer(max(1, min_dim), max(1, min_dim, self.options.max_dim))

    def array(self, t: TensorType) -> np.ndarray:
        """An input or constant of type ``t``: raw bit patterns (every value, NaNs and
        subnormals included) or small numbers (where integer arithmetic and comparisons do
        something more interesting than overflow), chosen per array."""
        et = t.element_type
        storage, per, nbits = storage_bits(et)
        n = t.num_elements
        if et.kind == "bool" or self.c.boolean(0.5):
            return array_from_words(self.c.words(per * n, nbits), t)
        lo, hi = (0, 9) if et.kind == "uint" else (-9, 9)
        small = [self.c.integer(lo, hi) for _ in range(per * n)]
        if et.kind == "complex":
            parts = np.array(small, np.float64).reshape(-1, 2) / 2
            return (parts[:, 0] + 1j * parts[:, 1]).astype(et.dtype).reshape(t.shape)
        if et.kind == "float":
            vals = np.array(small, np.float64) / (2 if self.c.boolean() else 1)
            with np.errstate(all="ignore"):
                return vals.astype(et.dtype).reshape(t.shape)
        return _wrap_ints(small, et).reshape(t.shape)


@functools.lru_cache(maxsize=None)
def _float_bounds(src, et) -> tuple:
    """The smallest and largest values of float type ``src`` inside integer type ``et``'s
    range (its extremes themselves may round outward in the float type)."""
    lo_i = -(1 << (et.bits - 1)) if et.kind == "sint" else 0
    hi_i = (1 << (et.bits - 1)) - 1 if et.kind == "sint" else (1 << et.bits) - 1
    dt = src.dtype
    if src.bits <= 16:
        nbits = 8 * dt.itemsize
        values = np.arange(2 ** nbits, dtype=np.uint16 if nbits == 16 else np.uint8).view(dt)
        with np.errstate(all="ignore"):
            f = values.astype(np.float64)
        f = f[np.isfinite(f)]
        inside = f[(f >= lo_i) & (f <= hi_i)]
        return float(inside.min()), float(inside.max())
    lo, hi = np.array([lo_i, hi_i], np.float64).astype(dt)
    while float(hi) > hi_i:
        hi = np.nextafter(hi, dt.type(0))
    while float(lo) < lo_i:
        lo = np.nextafter(lo, dt.type(0))
    return float(lo), float(hi)


def _wrap_ints(values, et) -> np.ndarray:
    if et.bits < 8:
        lo = -(1 << (et.bits - 1)) if et.kind == "sint" else 0
        span = 1 << et.bits
        return np.array([(v - lo) % span + lo for v in values], dtype=et.dtype)
    return np.array(values, dtype=np.int64).astype(et.dtype)


class Scope:
    """One block being filled: its builder and its pool of tensor values.

    ``closed`` scopes (reduction bodies, comparators) may use only their own arguments; the
    bodies of while, if and case may use outer values too (their pool starts with them)."""

    def __init__(self, gen: Generation, builder: Builder, values, depth: int = 0,
                 in_loop: bool = False):
        self.gen = gen
        self.c = gen.c
        self.b = builder
        self.values = [v for v in values if isinstance(v.type, TensorType)]
        self.depth = depth
        # Inside a while loop's or scan's body, however deep: XLA:CPU cannot compile a
        # domain or a clamp of i1 there (mhlo_ir.xla_cpu).
        self.in_loop = in_loop

    # -- the pool ------------------------------------------------------------------------

    def add(self, *values) -> None:
        for v in values:
            if isinstance(v.type, TensorType):
                self.values.append(v)

    def candidates(self, pred) -> list:
        refused = _refused(self.gen.current)
        return [v for v in self.values if pred(v.type) and not refused(v.type.element_type)]

    def pick(self, pred=lambda t: True):
        vs = self.candidates(pred)
        if not vs:
            raise Skip("no value fits")
        # the newest values more often, so that ops feed each other
        if len(vs) > 2 and self.c.boolean(0.4):
            return vs[-1]
        return self.c.choice(vs)

    def operand(self, accepts, pred=lambda t: True):
        """A tensor whose element type ``accepts`` (and whose type satisfies ``pred``): one of
        the pool, or one converted from the pool to an allowed type the op accepts."""
        refused = _refused(self.gen.current)
        ok = [v for v in self.values if accepts(v.type.element_type) and pred(v.type)
              and v.type.element_type in self.gen.types
              and not refused(v.type.element_type)]
        if ok and self.c.boolean(0.8):
            return self.c.choice(ok) if len(ok) < 3 or self.c.boolean(0.6) else ok[-1]
        et = self.gen.element_type(accepts)
        srcs = self.candidates(lambda t: pred(tensor(t.shape, et)))
        if not srcs:
            if ok:
                return self.c.choice(ok)
            raise Skip("no value of a fitting shape")
        src = self.c.choice(srcs)
        return self.convert(src, et)

    def value_of(self, t: TensorType):
        """A value of exactly type ``t``, from the pool or derived from it."""
        vs = self.values
        exact = [v for v in vs if v.type == t]
        if exact and self.c.boolean(0.85):
            return self.c.choice(exact)
        same_shape = [v for v in vs if v.type.shape == t.shape]
        if same_shape and self.c.boolean(0.6):
            return self.convert(self.c.choice(same_shape), t.element_type)
        same_n = [v for v in vs if v.type.num_elements == t.num_elements and v.type.rank > 0
                  and t.rank > 0]
        if same_n and self.c.boolean(0.5):
            v = self.c.choice(same_n)
            return self.convert(self.b.reshape(v, t.shape), t.element_type)
        nonempty = [v for v in vs if v.type.num_elements > 0]
        if nonempty and self.c.boolean(0.4):
            v = self.c.choice(nonempty)
            one = self.element(v)
            return self.b.broadcast_in_dim(self.convert(one, t.element_type), t.shape, ())
        return self.constant(t)

    def element(self, v):
        """One element of ``v`` (non-empty) as a scalar, at a drawn position."""
        t = v.type
        if t.rank == 0:
            return v
        starts = [self.c.integer(0, d - 1) for d in t.shape]
        piece = self.b.slice(v, starts, [s + 1 for s in starts])
        return self.b.reshape(piece, ())

    def convert(self, v, et):
        """``v`` converted to ``et``. Floats going to integers are first clamped into the
        integer type's range and NaNs replaced by zero: StableHLO leaves the conversion of
        out-of-range values to the implementation (XLA saturates, the interpreter wraps)."""
        src = v.type.element_type
        if src is et:
            return v
        if et.name == "f8E8M0FNU":
            # Zero, negative and NaN values have no f8E8M0FNU encoding: what they become is
            # each executor's choice (verify.differential's rule e8m0_no_zero).
            self.gen.traits.add("e8m0_lossy")
        if src.kind == "complex" and et.kind in ("sint", "uint"):
            v, src = self.b.real(v), src.component
        if src.kind == "float" and et.kind in ("sint", "uint"):
            v = self._in_int_range(v, et)
        return self.b.convert(v, et)

    def _in_int_range(self, v, et):
        src = v.type.element_type
        lo, hi = _float_bounds(src, et)
        b = self.b
        shape = v.type.shape
        clamped = b.clamp(self.scalar(src, lo), v, self.scalar(src, hi))
        zero = b.broadcast_in_dim(self.scalar(src, 0), shape, ())
        return b.select(b.compare(v, v, "NE"), zero, clamped)

    def constant(self, t: TensorType):
        return self.b.constant(self.gen.array(t), t.element_type)

    def scalar(self, et, value):
        return self.b.constant(np.array(value, dtype=et.dtype), et)

    def index_type(self):
        return self.c.choice(INDEX_TYPES)

    def index(self, hi: int, et=None):
        """A scalar integer in [0, hi]: a constant, or a pool value clamped into range (so
        that index arithmetic in the program feeds indexing ops, without leaving it)."""
        et = et or self.index_type()
        ints = self.candidates(lambda t: t.rank == 0 and t.element_type.kind in ("sint",))
        if ints and self.c.boolean(0.5):
            v = self.convert(self.c.choice(ints), et)
            return self.b.clamp(self.scalar(et, 0), v, self.scalar(et, hi))
        return self.scalar(et, self.c.integer(0, hi))

    # -- drawing ops ---------------------------------------------------------------------

    def child(self, builder: Builder, values, loop: bool = False) -> "Scope":
        """The scope of a nested region (``loop``: a while loop's or a scan's body)."""
        return Scope(self.gen, builder, values, self.depth + 1, self.in_loop or loop)

    def fill(self, n: int, names=None) -> None:
        """Draw up to ``n`` ops into this scope (fewer when the program's budget runs out),
        among ``names`` (default: every op the options allow)."""
        names = names or self.gen.options.ops
        for _ in range(n):
            if self.gen.ops_left <= 0:
                return
            self.c.span(lambda: self._one_op(names))

    def _one_op(self, names) -> None:
        """Draw one op among ``names`` into this scope (up to 8 tries of a rule)."""
        rules = self.gen.rules
        for _attempt in range(8):
            rule = rules[self.c.op(names)]
            if rule.nests and self.depth >= self.gen.options.max_depth:
                continue
            saved = len(self.b.block.operations)
            outer, self.gen.current = self.gen.current, rule.name
            left = self.gen.ops_left
            self.gen.ops_left -= 1  # before the rule: ops in its regions count after it
            traits = self.gen.traits
            outer_inexact, traits.drawn_inexact = traits.drawn_inexact, False
            try:
                out = rule.fn(self)
                if self.gen.broadcast_select and constant_in_closed_region(
                        self.b.block.operations[saved:]):
                    raise Skip("a constant in a closed region after a broadcast_select")
            except Skip:
                del self.b.block.operations[saved:]
                self.gen.ops_left = left
                continue
            finally:
                self.gen.current = outer
                inexact, traits.drawn_inexact = traits.drawn_inexact, outer_inexact
            self._mark_inexact(self.b.block.operations[saved:], inexact)
            self.gen.ops_used.append(rule.name)
            self.add(*out)
            return

    def _mark_inexact(self, ops, drawn_inexact: bool) -> None:
        """Record the results of a rule's ``ops`` as inexact when the rule drew an inexact
        op, or when any of them (or of the ops in their regions) reads an inexact value."""
        marked = self.gen.inexact
        if not drawn_inexact:
            if not marked:
                return
            stack = list(ops)
            while stack and not drawn_inexact:
                op = stack.pop()
                drawn_inexact = any(id(v) in marked for v in op.operands)
                for region in op.regions:
                    for block in region.blocks:
                        stack.extend(block.operations)
            if not drawn_inexact:
                return
        for op in ops:
            for v in op.results:
                marked[id(v)] = v
