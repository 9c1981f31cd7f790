"""Rules for chlo: the unary functions XLA decomposes, the same-shape binary ops, the
``broadcast_*`` ops with numpy-style or explicit broadcast dimensions, and the constants.
(``chlo.top_k`` is drawn with the linear-algebra rules, beside ``topk``.)"""

from __future__ import annotations

from .. import dtypes
from ..ops import chlo as chlo_ops
from ..types import tensor
from ..jaxlib_conversion import closed_region_constant_in
from ..xla_cpu import bitwise_crashes, widening_sub_byte_bitwise
from .rules_elementwise import (APPROXIMATE, compare_types, no_arithmetic, safe_divisor,
                                shift_amount)
from .scope import Skip
from .table import rule

_EXACT_UNARY = frozenset({"conj", "is_inf", "is_neg_inf", "is_pos_inf", "square"})


def _f32_or_f64(et):
    return et in (dtypes.f32, dtypes.f64)


def _kinds_ok(kinds):
    return lambda et: et.kind in kinds and not no_arithmetic(et)


@rule(*sorted("chlo." + n for n in chlo_ops.UNARY))
def _unary(s, name):
    short = name[5:]
    x = s.operand(_kinds_ok(chlo_ops.UNARY[short][0]))
    if short not in _EXACT_UNARY or x.type.element_type.kind == "complex":
        s.gen.traits.add("approximates")
    return [s.b.create(name, (x,)).results[0]]


@rule("chlo.next_after", "chlo.polygamma", "chlo.zeta", "chlo.mulhi")
def _binary(s, name):
    kinds = ("sint", "uint") if name == "chlo.mulhi" else ("float",)
    x = s.operand(_kinds_ok(kinds))
    if name in ("chlo.polygamma", "chlo.zeta"):
        s.gen.traits.add("approximates")
    y = s.value_of(x.type)
    return [s.b.create(name, (x, y)).results[0]]


def _broadcast_partner(s, t):
    """A shape that broadcasts against ``t`` and, when explicit dimensions are drawn, the
    broadcast_dimensions that map it into ``t``'s."""
    shape = list(t.shape)
    if s.c.boolean(0.3):
        return tuple(shape), None
    if s.c.boolean(0.5) and shape:
        # explicit dimensions, the trailing ones (all that chlo's legalization takes)
        keep = s.c.integer(0, len(shape) - 1)
        dims = list(range(len(shape) - keep, len(shape)))
        sub = tuple(shape[d] if s.c.boolean(0.7) else 1 for d in dims)
        return sub, dims
    keep = s.c.integer(0, len(shape))
    tail = shape[len(shape) - keep:]
    return tuple(n if s.c.boolean(0.7) else 1 for n in tail), None


@rule(*sorted("chlo.broadcast_" + n for n in chlo_ops.BINARY_BROADCAST))
def _broadcast(s, name):
    short = name[len("chlo.broadcast_"):]
    kinds, _ = chlo_ops.BINARY_BROADCAST[short]
    accepts = _kinds_ok(kinds) if short != "complex" else _f32_or_f64
    lhs = s.operand(accepts)
    et = lhs.type.element_type
    shape, dims = _broadcast_partner(s, lhs.type)
    rhs = s.value_of(tensor(shape, et))
    if s.c.boolean():
        lhs, rhs = rhs, lhs
        if dims is not None:
            raise Skip("explicit dimensions map the second operand only")
    if et.is_integer and short in ("divide", "remainder") and not s.gen.options.division_by_zero:
        if rhs.type.shape != lhs.type.shape:
            raise Skip("divisor guard needs equal shapes")
        rhs = safe_divisor(s, lhs, rhs)
    if et.is_integer and short.startswith("shift"):
        rhs = shift_amount(s, rhs)
    if bitwise_crashes(short, (lhs, rhs)) or widening_sub_byte_bitwise(short, (lhs, rhs)):
        raise Skip("XLA:CPU fails on this and/or of converts")
    if short in APPROXIMATE or short in ("polygamma", "zeta") or et.kind == "complex":
        if et.kind in ("float", "complex"):
            s.gen.traits.add("approximates")
    kw = {} if dims is None else {"broadcast_dimensions": dims}
    if short == "compare":
        directions = ("EQ", "NE") if et.kind == "complex" else ("EQ", "NE", "LT", "GE")
        ct = s.c.choice(compare_types(et))
        return [s.b.chlo_broadcast_compare(lhs, rhs, s.c.choice(directions), ct, **kw)]
    return [getattr(s.b, "chlo_broadcast_" + short)(lhs, rhs, **kw)]


@rule("chlo.broadcast_select")
def _broadcast_select(s, name):
    # jaxlib's conversion rejects it beside a constant in a closed region (finding in
    # docs/findings.md; mhlo_ir.jaxlib_conversion): Scope.fill keeps later ones out
    if closed_region_constant_in(s.gen.module):
        raise Skip("a closed region holds a constant")
    x = s.operand(lambda et: True)
    pshape, _ = _broadcast_partner(s, x.type)
    if len(pshape) not in (0, x.type.rank) or pshape != x.type.shape and pshape:
        pshape = x.type.shape
    pred = s.value_of(tensor(pshape, dtypes.i1))
    out = s.b.chlo_broadcast_select(pred, x, s.value_of(x.type))
    s.gen.broadcast_select = True
    return [out]


@rule("chlo.constant")
def _constant(s, name):
    t = tensor(s.gen.shape(), s.gen.element_type())
    return [s.b.chlo_constant(s.gen.array(t), t.element_type)]


@rule("chlo.constant_like")
def _constant_like(s, name):
    x = s.operand(lambda et: et.kind in ("sint", "uint", "float") and et.bits >= 8)
    et = x.type.element_type
    v = s.c.integer(0, 9) if et.kind != "sint" else s.c.integer(-9, 9)
    if et.name == "f8E8M0FNU":
        v = 2 ** s.c.integer(-3, 3)  # powers of two only: no zero, no sign
    return [s.b.chlo_constant_like(float(v) if et.kind == "float" else v, x)]
