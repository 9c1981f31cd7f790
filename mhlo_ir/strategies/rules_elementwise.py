"""Rules for the elementwise chapter: the unary and binary families, compare, select, clamp,
the conversions and reduce_precision.

Undefined or crash-prone inputs are avoided by construction, not filtered: integer divisors
are made non-zero (and INT_MIN / -1 impossible) unless ``Options.division_by_zero``, and shift
amounts are masked into [0, bits). Integer overflow is defined (two's complement wrapping)
and stays in.
"""

from __future__ import annotations


from .. import dtypes
from ..jaxlib_conversion import stochastic_convert_layouts_differ
from ..ops.elementwise import BINARY, COMPARE_TYPES, UNARY, UNARY_WITHOUT_HLO
from ..types import tensor
from ..xla_cpu import (bitwise_crashes, chained_rank_changing_bitcasts, complex_iota,
                       narrowing_signed_convert, widening_sub_byte_bitwise)
from .scope import Skip
from .table import exclude, rule

# Float results XLA computes with approximations rather than correctly rounded (its
# polynomial exp, log, tanh...; complex arithmetic through real formulas).
APPROXIMATE = frozenset({
    "cbrt", "cosine", "erf", "exponential", "exponential_minus_one", "log", "log_plus_one",
    "logistic", "rsqrt", "sine", "tan", "tanh", "atan2", "power"})



def _kinds(name):
    return (UNARY.get(name) or BINARY[name])[0]


def no_arithmetic(et) -> bool:
    """f8E8M0FNU is a scale type (no zero, no sign): generated programs move and convert it
    but compute nothing in it, where XLA and the interpreter disagree on results outside
    its range (docs/findings.md)."""
    return et.name == "f8E8M0FNU"


def accepts(name):
    kinds = _kinds(name)
    return lambda et: et.kind in kinds and not no_arithmetic(et)


def _note(s, name, et):
    if name in APPROXIMATE or et.kind == "complex":
        if et.kind in ("float", "complex"):
            s.gen.traits.add("approximates")


@rule(*sorted(UNARY))
def _unary(s, name):
    x = s.operand(accepts(name))
    _note(s, name, x.type.element_type)
    if name == "abs" and complex_iota(x):  # (XLA:CPU aborts compiling it: mhlo_ir.xla_cpu)
        x = s.b.add(x, x)
    return [s.b.create(name, (x,)).results[0]]


def safe_divisor(s, lhs, rhs):
    """``rhs`` with zeros replaced by one, and -1 by one where ``lhs`` is the minimum of a
    signed type: the divisions XLA defines but the StableHLO interpreter traps on."""
    et = lhs.type.element_type
    b = s.b
    one = b.broadcast_in_dim(s.scalar(et, 1), rhs.type.shape, ())
    zero = b.broadcast_in_dim(s.scalar(et, 0), rhs.type.shape, ())
    bad = b.compare(rhs, zero, "EQ")
    if et.kind == "sint":
        lo = -(1 << (et.bits - 1))
        minus_one = b.broadcast_in_dim(s.scalar(et, -1), rhs.type.shape, ())
        at_min = b.compare(lhs, b.broadcast_in_dim(s.scalar(et, lo), rhs.type.shape, ()), "EQ")
        overflow = b.and_(at_min, b.compare(rhs, minus_one, "EQ"))
        if et.bits == 2:
            # XLA:CPU's compile does not finish on the one-select form of this guard for i2
            # when a convert feeds it (docs/findings.md); two selects compile
            return b.select(overflow, one, b.select(bad, one, rhs))
        bad = b.or_(bad, overflow)
    return b.select(bad, one, rhs)


def shift_amount(s, rhs):
    """``rhs`` brought into [0, bits): masked, or clamped where masking would be the ``and``
    of a narrowing signed convert, which XLA:CPU crashes on (``mhlo_ir.xla_cpu``)."""
    et = rhs.type.element_type
    if narrowing_signed_convert(rhs) and rhs.type.num_elements > 1:
        return s.b.clamp(s.scalar(et, 0), rhs, s.scalar(et, et.bits - 1))
    mask = s.b.broadcast_in_dim(s.scalar(et, et.bits - 1), rhs.type.shape, ())
    return s.b.and_(rhs, mask)


@rule(*sorted(n for n in BINARY if n != "complex"))
def _binary(s, name):
    lhs = s.operand(accepts(name))
    rhs = s.value_of(lhs.type)
    et = lhs.type.element_type
    _note(s, name, et)
    if et.is_integer and name in ("divide", "remainder") and not s.gen.options.division_by_zero:
        rhs = safe_divisor(s, lhs, rhs)
    if et.is_integer and name.startswith("shift"):
        rhs = shift_amount(s, rhs)
    if bitwise_crashes(name, (lhs, rhs)) or widening_sub_byte_bitwise(name, (lhs, rhs)):
        raise Skip("XLA:CPU fails on this and/or of converts")
    return [s.b.create(name, (lhs, rhs)).results[0]]


@rule("complex")
def _complex(s, name):
    lhs = s.operand(lambda et: et in (dtypes.f32, dtypes.f64))
    return [s.b.complex(lhs, s.value_of(lhs.type))]


def compare_types(et) -> tuple:
    """The compare_type values for ``et`` (None: unset), from the op table's own list."""
    return (None,) + tuple(sorted(COMPARE_TYPES[et.kind]))


@rule("compare")
def _compare(s, name):
    x = s.operand(lambda et: True)
    et = x.type.element_type
    directions = ("EQ", "NE") if et.kind == "complex" else ("EQ", "NE", "LT", "LE", "GT", "GE")
    ct = s.c.choice(compare_types(et))
    return [s.b.compare(x, s.value_of(x.type), s.c.choice(directions), ct)]


def predicate(s, shape):
    """An i1 tensor of ``shape``: usually a comparison of pool values, so that it varies."""
    if s.c.boolean(0.6):
        x = s.pick(lambda t: t.shape == shape and t.element_type.kind in ("sint", "uint", "float"))
        return s.b.compare(x, s.value_of(x.type), s.c.choice(("LT", "GE", "EQ", "NE")))
    return s.value_of(tensor(shape, dtypes.i1))


@rule("select")
def _select(s, name):
    x = s.operand(lambda et: True)
    shape = () if s.c.boolean(0.25) else x.type.shape
    try:
        pred = predicate(s, shape)
    except Skip:
        pred = s.value_of(tensor(shape, dtypes.i1))
    return [s.b.select(pred, x, s.value_of(x.type))]


@rule("clamp")
def _clamp(s, name):
    # (XLA:CPU cannot compile a clamp of i1 in a loop body: mhlo_ir.xla_cpu)
    x = s.operand(lambda et: et.kind != "complex" and not (s.in_loop and et.name == "i1"))
    bound = tensor((), x.type.element_type) if s.c.boolean() else x.type
    return [s.b.clamp(s.value_of(bound), x, s.value_of(bound))]


def convertible(src, dst) -> bool:
    return not (src.kind == "complex" and dst.kind != "complex")


@rule("convert")
def _convert(s, name):
    x = s.pick()
    et = s.gen.element_type(lambda t: t is not x.type.element_type
                            and convertible(x.type.element_type, t))
    return [s.convert(x, et)]  # (floats clamped into an integer type's range first)


@rule("bitcast_convert")
def _bitcast_convert(s, name):
    x = s.pick(lambda t: t.element_type.kind != "bool")
    bits = x.type.element_type.bits
    complex_ = x.type.element_type.kind == "complex"
    same = [t for t in s.gen.types if t.bits == bits and t.kind != "bool" and t.bits >= 8
            and t is not x.type.element_type and (t.kind == "complex") == complex_]
    wider = [t for t in s.gen.types if t.kind not in ("bool", "complex") and t.bits > bits
             and bits >= 8 and x.type.rank and x.type.shape[-1] == t.bits // bits]
    narrower = [t for t in s.gen.types if t.kind not in ("bool", "complex") and 8 <= t.bits < bits
                and x.type.element_type.kind != "complex"]
    options = same + wider + narrower
    if x.type.element_type.bits < 8 or not options:
        raise Skip("no bitcast target")
    out = s.b.bitcast_convert(x, s.c.choice(options))
    if chained_rank_changing_bitcasts(out.owner):  # XLA rejects it (mhlo_ir.xla_cpu)
        raise Skip("two rank-changing bitcasts in a row")
    return [out]


@rule("reduce_precision")
def _reduce_precision(s, name):
    x = s.operand(lambda et: et.kind == "float" and not no_arithmetic(et))
    return [s.b.reduce_precision(x, s.c.integer(1, 11), s.c.integer(0, 23))]


@rule("stochastic_convert")
def _stochastic_convert(s, name):
    x = s.operand(lambda et: et.kind == "float" and et.bits >= 8)
    uint = {8: dtypes.ui8, 16: dtypes.ui16, 32: dtypes.ui32,
            64: dtypes.ui64}[x.type.element_type.bits]
    targets = [t for t in (dtypes.i8, dtypes.i16, dtypes.i32) if t.bits < x.type.element_type.bits]
    if not targets:
        raise Skip("no narrower signed type")
    out = s.b.stochastic_convert(x, s.value_of(tensor(x.type.shape, uint)), s.c.choice(targets))
    if stochastic_convert_layouts_differ(out.owner):
        # jaxlib's conversion rejects it (mhlo_ir.jaxlib_conversion); Scope.fill removes it
        raise Skip("operand and random bits through different transposes")
    return [out]


exclude("XLA has no HLO instruction for it (chlo's op of the same name is generated instead)",
        *UNARY_WITHOUT_HLO)
