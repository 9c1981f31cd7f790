"""Elementwise ops: unary, binary and ternary families, compare, select, clamp, convert.

A family is one line: the op names, the element-type kinds they accept, and how the result's
element type follows from the operand's. Every op in a family shares one result rule.
"""

from __future__ import annotations

from .. import dtypes
from ..mhlo_attributes import comparison_direction, comparison_type
from ..types import TensorType, tensor
from .spec import AttrSpec, OpSpec, fail, register, same_shape, tensor_operand

INT = frozenset({"sint", "uint"})
SINT = frozenset({"sint"})
BOOL = frozenset({"bool"})
FLOAT = frozenset({"float"})
COMPLEX = frozenset({"complex"})
ALL = INT | BOOL | FLOAT | COMPLEX

_KIND_NAMES = {"sint": "signless integer", "uint": "unsigned integer", "bool": "i1",
               "float": "float", "complex": "complex"}


def _kinds_text(kinds) -> str:
    order = ["bool", "sint", "uint", "float", "complex"]
    return " or ".join(_KIND_NAMES[k] for k in order if k in kinds)


def _check_kind(op, what, t: TensorType, kinds):
    if t.element_type.kind not in kinds:
        fail(op, f"operand {what} must have {_kinds_text(kinds)} elements, got {t}")


def _same(et):
    return et


def _component(et):
    return et.component if et.kind == "complex" else et


def _to_i1(et):
    return dtypes.i1


def _to_complex(et):
    if et is dtypes.f32:
        return dtypes.complex64
    if et is dtypes.f64:
        return dtypes.complex128
    return None


def unary_rule(kinds, result=_same):
    def infer(op, types, attributes):
        t = tensor_operand(op, "operand", types[0])
        _check_kind(op, "operand", t, kinds)
        et = result(t.element_type)
        return (t if et is t.element_type else tensor(t.shape, et),)
    return infer


def binary_rule(kinds, result=_same):
    def infer(op, types, attributes):
        lhs = tensor_operand(op, "lhs", types[0])
        rhs = tensor_operand(op, "rhs", types[1])
        if lhs is not rhs and lhs != rhs:
            if lhs.shape != rhs.shape:
                fail(op, f"operands lhs and rhs must have the same shape, got {lhs} and {rhs}")
            fail(op, f"operands lhs and rhs must have the same element type, got {lhs} and {rhs}")
        _check_kind(op, "lhs", lhs, kinds)
        et = result(lhs.element_type)
        if et is None:
            fail(op, f"operand lhs must have f32 or f64 elements, got {lhs}")
        return (lhs if et is lhs.element_type else tensor(lhs.shape, et),)
    return infer


# name: (accepted kinds, result element type rule)
UNARY = {
    "abs": (SINT | FLOAT | COMPLEX, _component),
    "cbrt": (FLOAT, _same),  # the StableHLO spec allows complex; XLA does not
    "ceil": (FLOAT, _same),
    "cosine": (FLOAT | COMPLEX, _same),
    "count_leading_zeros": (INT, _same),
    "exponential": (FLOAT | COMPLEX, _same),
    "exponential_minus_one": (FLOAT | COMPLEX, _same),
    "floor": (FLOAT, _same),
    "imag": (FLOAT | COMPLEX, _component),
    "is_finite": (FLOAT, _to_i1),
    "log": (FLOAT | COMPLEX, _same),
    "log_plus_one": (FLOAT | COMPLEX, _same),
    "logistic": (FLOAT | COMPLEX, _same),
    "negate": (INT | FLOAT | COMPLEX, _same),
    "not": (BOOL | INT, _same),
    "popcnt": (INT, _same),
    "real": (FLOAT | COMPLEX, _component),
    "round_nearest_afz": (FLOAT, _same),
    "round_nearest_even": (FLOAT, _same),
    "rsqrt": (FLOAT | COMPLEX, _same),
    "sign": (SINT | FLOAT | COMPLEX, _same),
    "sine": (FLOAT | COMPLEX, _same),
    "sqrt": (FLOAT | COMPLEX, _same),
    "tan": (FLOAT | COMPLEX, _same),
    "tanh": (FLOAT | COMPLEX, _same),
}

BINARY = {
    "add": (ALL, _same),
    "subtract": (INT | FLOAT | COMPLEX, _same),
    "multiply": (ALL, _same),
    "divide": (INT | FLOAT | COMPLEX, _same),
    "remainder": (INT | FLOAT, _same),
    "maximum": (ALL, _same),
    "minimum": (ALL, _same),
    "power": (INT | FLOAT | COMPLEX, _same),
    "atan2": (FLOAT | COMPLEX, _same),
    "and": (BOOL | INT, _same),
    "or": (BOOL | INT, _same),
    "xor": (BOOL | INT, _same),
    "shift_left": (INT, _same),
    "shift_right_arithmetic": (INT, _same),
    "shift_right_logical": (INT, _same),
    "complex": (FLOAT, _to_complex),
}

# Same-typed elementwise ops that MLIR has no custom (pretty) form for: the printer's
# pretty option prints these generic.
NO_PRETTY: frozenset = frozenset({"complex"})

for _name, (_kinds, _result) in UNARY.items():
    register(OpSpec(_name, ("operand",), infer=unary_rule(_kinds, _result), chapter="elementwise"))
for _name, (_kinds, _result) in BINARY.items():
    register(OpSpec(_name, ("lhs", "rhs"), infer=binary_rule(_kinds, _result),
                    chapter="elementwise"))


# The comparison types XLA accepts per element kind (it rejects others at compile time).
_COMPARE_TYPES = {"sint": {"SIGNED"}, "uint": {"UNSIGNED"}, "bool": {"UNSIGNED"},
                  "float": {"FLOAT", "TOTALORDER"}, "complex": {"FLOAT", "TOTALORDER"}}


def _compare(op, types, attributes):
    lhs = tensor_operand(op, "lhs", types[0])
    rhs = tensor_operand(op, "rhs", types[1])
    if lhs != rhs:
        fail(op, f"operands lhs and rhs must have the same type, got {lhs} and {rhs}")
    ct = attributes.get("compare_type") if attributes else None
    if ct is not None and ct.value != "NOTYPE":
        allowed = _COMPARE_TYPES[lhs.element_type.kind]
        if ct.value not in allowed:
            fail(op, f"compare_type {ct.value} does not fit {lhs.element_type} operands; "
                     f"expected {' or '.join(sorted(allowed))}")
    return (tensor(lhs.shape, dtypes.i1),)


register(OpSpec(
    "compare", ("lhs", "rhs"),
    {"comparison_direction": AttrSpec(comparison_direction, required=True),
     "compare_type": AttrSpec(comparison_type)},
    infer=_compare, chapter="elementwise"))


def _select(op, types, attributes):
    pred = tensor_operand(op, "pred", types[0])
    on_true = tensor_operand(op, "on_true", types[1])
    on_false = tensor_operand(op, "on_false", types[2])
    if pred.element_type is not dtypes.i1:
        fail(op, f"operand pred must have i1 elements, got {pred}")
    if on_true != on_false:
        fail(op, f"operands on_true and on_false must have the same type, got {on_true} and "
                 f"{on_false}")
    if pred.shape and pred.shape != on_true.shape:
        fail(op, f"operand pred must be a scalar or have shape {list(on_true.shape)}, got {pred}")
    return (on_true,)


register(OpSpec("select", ("pred", "on_true", "on_false"), infer=_select, chapter="elementwise"))


def _clamp(op, types, attributes):
    lo = tensor_operand(op, "min", types[0])
    x = tensor_operand(op, "operand", types[1])
    hi = tensor_operand(op, "max", types[2])
    for what, t in (("min", lo), ("max", hi)):
        if t.element_type is not x.element_type:
            fail(op, f"operand {what} must have element type {x.element_type}, got {t}")
        if t.shape and t.shape != x.shape:
            fail(op, f"operand {what} must be a scalar or have shape {list(x.shape)}, got {t}")
    return (x,)


register(OpSpec("clamp", ("min", "operand", "max"), infer=_clamp, chapter="elementwise"))


def _convert_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = results[0]
    if not isinstance(r, TensorType) or r.shape != x.shape:
        fail(op, f"result must be a tensor of shape {list(x.shape)}, got {r}")


register(OpSpec("convert", ("operand",), check=_convert_check, chapter="elementwise",
                doc="Convert elements to the result's element type (result type is explicit)."))

__all__ = ["UNARY", "BINARY", "NO_PRETTY", "unary_rule", "binary_rule"]
