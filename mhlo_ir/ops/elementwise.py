"""Elementwise ops: unary, binary and ternary families, compare, select, clamp, the conversions
(convert, bitcast_convert, stochastic_convert) and reduce_precision.

A family is one line: the op names, the element-type kinds they accept, and how the result's
element type follows from the operand's. Every op in a family shares one result rule.
"""

from __future__ import annotations

from .. import op_forms as pf
from .. import dtypes, weak_scalars
from ..mhlo_attributes import comparison_direction, comparison_type
from ..result_accuracy import OPS as ACCURACY_OPS
from ..result_accuracy import result_accuracy
from ..types import TensorType, tensor
from ..ir import VALUE_CLASSES, Value
from . import convert
from .construct import memo, no_make, result_type, tensor_type
from .spec import (HLO_DIALECTS, MHLO_ONLY, AttrSpec, OpSpec, builder_method, fail, register,
                   tensor_operand)

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
    "erf": (FLOAT, _same),
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
    "mulhi": (INT, _same),  # XLA:CPU: signed mulhi compiles alone, not fused with other ops
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

# Elementwise ops StableHLO lacks: erf is chlo.erf there, mulhi has no counterpart.
NOT_IN_STABLEHLO: frozenset = frozenset({"erf", "mulhi"})

# is_finite of a per-tensor quantized tensor is StableHLO's too (its spec's "(C1) is_quantized
# ..." lines; jaxlib's verifier takes it), not taken here yet.
_QUANTIZED_NOT_YET = frozenset({"is_finite"})
# The elementwise ops StableHLO evaluates on quantized tensors as quantize(op(dequantize(x)))
# (its spec's "For quantized types" lines; StablehloLegalizeQuantizedOpToQDQ.cpp): their
# OpSpec.quantized family. The rest of UNARY and BINARY refuse quantized tensors.
QUANTIZED_QDQ: frozenset = frozenset({
    "abs", "add", "atan2", "cbrt", "ceil", "cosine", "divide", "exponential",
    "exponential_minus_one", "floor", "log", "log_plus_one", "logistic", "maximum", "minimum",
    "multiply", "negate", "power", "remainder", "round_nearest_afz", "round_nearest_even",
    "rsqrt", "sign", "sine", "sqrt", "subtract", "tan", "tanh"})

_ACCURACY = {"result_accuracy": AttrSpec(result_accuracy)}
for _name, (_kinds, _result) in UNARY.items():
    register(OpSpec(_name, ("operand",), _ACCURACY if _name in ACCURACY_OPS else {},
                    infer=unary_rule(_kinds, _result),
                    pretty=pf.ACCURATE if _name in ACCURACY_OPS else pf.ELEMENTWISE,
                    dialects=MHLO_ONLY if _name in NOT_IN_STABLEHLO else HLO_DIALECTS,
                    quantized="qdq" if _name in QUANTIZED_QDQ else
                    "not_yet" if _name in _QUANTIZED_NOT_YET else ""))
for _name, (_kinds, _result) in BINARY.items():
    register(OpSpec(_name, ("lhs", "rhs"), infer=binary_rule(_kinds, _result),
                    pretty=pf.COMPLEX_FORM if _name == "complex" else pf.ELEMENTWISE,
                    dialects=MHLO_ONLY if _name in NOT_IN_STABLEHLO else HLO_DIALECTS,
                    quantized="qdq" if _name in QUANTIZED_QDQ else ""))


# Unary ops the MHLO dialect declares but XLA has no HLO instruction for: converting them to
# HLO fails ("UNIMPLEMENTED: acos"). JAX emits chlo.acos & co. instead, which are decomposed
# before HLO (see chlo.py). They are kept out of UNARY so that the generic elementwise
# machinery (random programs, compile-everything tests) never picks them.
UNARY_WITHOUT_HLO = {name: (FLOAT | COMPLEX, _same)
                     for name in ("acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh")}


def _unary_method(name):
    def method(b, operand, *, location=None) -> Value:
        return b.create(name, (operand,), location=location).results[0]
    method.__name__ = name
    method.__doc__ = (f"Elementwise ``mhlo.{name}`` (XLA cannot compile it: use "
                      f"``chlo_{name}`` for programs that run).")
    return method


for _name, (_kinds, _result) in UNARY_WITHOUT_HLO.items():
    register(OpSpec(_name, ("operand",), infer=unary_rule(_kinds, _result), dialects=MHLO_ONLY,
                    pretty=pf.ELEMENTWISE,
                    not_run=f"XLA has no HLO instruction for mhlo.{_name}: compiling fails with "
                            f"UNIMPLEMENTED (chlo.{_name} is the form that runs)"))
    builder_method(_unary_method(_name))


# The comparison types XLA accepts per element kind (it rejects others at compile time:
# TOTALORDER on integers, i1 or complex numbers fails its verifier, "Expected comparison type
# SIGNED", once the operands are not one value compared with itself, which it folds first).
COMPARE_TYPES = {"sint": frozenset({"SIGNED"}), "uint": frozenset({"UNSIGNED"}),
                 "bool": frozenset({"UNSIGNED"}), "float": frozenset({"FLOAT", "TOTALORDER"}),
                 "complex": frozenset({"FLOAT"})}


def _compare(op, types, attributes):
    lhs = tensor_operand(op, "lhs", types[0])
    rhs = tensor_operand(op, "rhs", types[1])
    if lhs != rhs:
        fail(op, f"operands lhs and rhs must have the same type, got {lhs} and {rhs}")
    ct = attributes.get("compare_type") if attributes else None
    if ct is not None:
        _compare_type_fits(op, lhs, ct.value)
    return (tensor(lhs.shape, dtypes.i1),)


def _compare_type_fits(op, lhs: TensorType, value: str) -> None:
    if value != "NOTYPE":
        allowed = COMPARE_TYPES[lhs.element_type.kind]
        if value not in allowed:
            fail(op, f"compare_type {value} does not fit {lhs.element_type} operands; "
                     f"expected {' or '.join(sorted(allowed))}")


register(OpSpec(
    "compare", ("lhs", "rhs"),
    {"comparison_direction": AttrSpec(comparison_direction, required=True),
     "compare_type": AttrSpec(comparison_type)},
    infer=_compare, pretty=pf.COMPARE, quantized="qdq"))


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


register(OpSpec("select", ("pred", "on_true", "on_false"), infer=_select,
                pretty=pf.SELECT_FORM, quantized="qdq"))


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


register(OpSpec("clamp", ("min", "operand", "max"), infer=_clamp, pretty=pf.ELEMENTWISE,
                quantized="qdq"))


def _convert_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = results[0]
    if not isinstance(r, TensorType) or r.shape != x.shape:
        fail(op, f"result must be a tensor of shape {list(x.shape)}, got {r}")


register(OpSpec("convert", ("operand",), check=_convert_check, pretty=pf.ELEMENTWISE,
                doc="Convert elements to the result's element type (result type is explicit).",
                n_results=1))


# -- builder methods: compare, select, clamp, convert ------------------------------------------

@builder_method
def compare(b, lhs: Value, rhs: Value, direction: str, compare_type: str | None = None,
            *, location=None) -> Value:
    """``direction`` is EQ, NE, GE, GT, LE or LT; ``compare_type`` FLOAT, TOTALORDER,
    SIGNED or UNSIGNED (left unset when None). One operand may be a Python scalar (see
    ``add``)."""
    if lhs.__class__ not in VALUE_CLASSES or rhs.__class__ not in VALUE_CLASSES:
        lhs, rhs = weak_scalars.weak_pair(b, "compare", ("lhs", "rhs"), lhs, rhs, location)
    key = ("compare", lhs.type, rhs.type, direction, compare_type)
    return memo(b, key, "compare", (lhs, rhs), location, _compare_make, direction,
                compare_type)


def _compare_make(direction, compare_type):
    try:
        attrs = {"comparison_direction": comparison_direction(direction)}
        if compare_type is not None:
            attrs["compare_type"] = comparison_type(compare_type)
    except ValueError as e:
        fail("compare", f"attribute {e}")
    return attrs, None


@builder_method
def select(b, pred: Value, on_true: Value, on_false: Value, *, location=None) -> Value:
    """``on_true`` where ``pred`` holds, else ``on_false``; one of them may be a Python
    scalar, made a constant of the other's type (see ``add``)."""
    if on_true.__class__ not in VALUE_CLASSES or on_false.__class__ not in VALUE_CLASSES:
        on_true, on_false = weak_scalars.weak_pair(b, "select", ("on_true", "on_false"),
                                                   on_true, on_false, location)
    key = ("select", getattr(pred, "type", None), on_true.type, on_false.type)
    return memo(b, key, "select", (pred, on_true, on_false), location, no_make)


@builder_method
def clamp(b, min: Value, x: Value, max: Value, *, location=None) -> Value:
    """``x`` limited to [min, max]; ``min`` and ``max`` may be Python scalars, made scalar
    constants of ``x``'s element type (clamp takes scalar bounds)."""
    if min.__class__ not in VALUE_CLASSES or max.__class__ not in VALUE_CLASSES:
        if x.__class__ in VALUE_CLASSES:
            if min.__class__ not in VALUE_CLASSES:
                min = weak_scalars.weak_constant(b, "clamp", "min", min, "x", x, (), location)
            if max.__class__ not in VALUE_CLASSES:
                max = weak_scalars.weak_constant(b, "clamp", "max", max, "x", x, (), location)
    key = ("clamp", getattr(min, "type", None), getattr(x, "type", None),
           getattr(max, "type", None))
    return memo(b, key, "clamp", (min, x, max), location, no_make)


def _convert_method(b, x: Value, element_type, *, location=None) -> Value:
    """Convert to ``element_type`` (XLA semantics: to i1 means ``!= 0``)."""
    t = tensor_type(x, "convert")
    return memo(b, ("convert", t, element_type), "convert", (x,), location, _convert_make, t,
                element_type)


# Not defined as ``convert``, which in this module is the converters' module.
_convert_method.__name__ = "convert"
builder_method(_convert_method)


def _convert_make(t, element_type):
    return None, (result_type("convert", t.shape, element_type),)


# -- reduce_precision -------------------------------------------------------------------------

_i32 = convert.i32


def _reduce_precision(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    _check_kind(op, "operand", x, FLOAT)
    e, m = attributes["exponent_bits"].value, attributes["mantissa_bits"].value
    if e < 1:
        fail(op, f"attribute exponent_bits must be at least 1, got {e}")
    if m < 0:
        fail(op, f"attribute mantissa_bits must be at least 0, got {m}")
    return (x,)


register(OpSpec("reduce_precision", ("operand",),
                {"exponent_bits": AttrSpec(_i32, True), "mantissa_bits": AttrSpec(_i32, True)},
                infer=_reduce_precision, pretty=pf.REDUCE_PRECISION,
                doc="Round to a float format of exponent_bits and mantissa_bits (same type).",
                quantized="qdq"))


@builder_method
def reduce_precision(b, x, exponent_bits: int, mantissa_bits: int, *, location=None) -> Value:
    """Round ``x`` to the nearest value (ties to even) of a float format with ``exponent_bits``
    and ``mantissa_bits`` (overflow gives inf, underflow signed zero); the type is unchanged."""
    return b.create("reduce_precision", (x,), {"exponent_bits": exponent_bits,
                                               "mantissa_bits": mantissa_bits},
                    location=location).results[0]


# -- bitcast_convert --------------------------------------------------------------------------

def _bits(et) -> int:
    return et.bits


def bitcast_shape(op, x: TensorType, et) -> tuple:
    """The result shape of bitcasting ``x`` to element type ``et``: the same shape for equal
    bit widths; one more trailing dimension of size ratio when ``et`` is narrower; one less
    (which must have size ratio) when it is wider."""
    src, dst = x.element_type, et
    if (src.kind == "complex") != (dst.kind == "complex"):
        fail(op, f"cannot bitcast between real and complex element types: {x} to {dst}")
    if src.kind == "bool" or dst.kind == "bool":
        if src is not dst:
            fail(op, f"cannot bitcast i1 to or from another element type: {x} to {dst}")
        return x.shape
    a, b = _bits(src), _bits(dst)
    if a == b:
        return x.shape
    if a > b:
        if a % b:
            fail(op, f"{src} ({a} bits) is not a whole number of {dst} ({b} bits)")
        return (*x.shape, a // b)
    if b % a:
        fail(op, f"{dst} ({b} bits) is not a whole number of {src} ({a} bits)")
    if not x.shape or x.shape[-1] != b // a:
        fail(op, f"bitcasting {x} to the wider {dst} needs a last dimension of size {b // a} "
                 f"(= {b} / {a} bits), got shape {list(x.shape)}")
    return x.shape[:-1]


def _bitcast_convert_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    r = results[0]
    if not isinstance(r, TensorType):
        fail(op, f"result must be a tensor, got {r}")
    shape = bitcast_shape(op, x, r.element_type)
    if r.shape != shape:
        fail(op, f"result {r} must have shape {list(shape)} to hold the bits of operand {x}")


register(OpSpec("bitcast_convert", ("operand",), check=_bitcast_convert_check,
                pretty=pf.FUNCTIONAL_FORM,
                doc="Reinterpret the bits of each element as another element type (result type "
                    "is explicit; the shape gains or loses a trailing dimension when the bit "
                    "widths differ).", quantized="not_yet", n_results=1))


def _element_type(op, et):
    try:
        return dtypes.from_numpy(et)
    except TypeError as e:
        fail(op, f"result element type: {e}")


@builder_method
def bitcast_convert(b, x, element_type, *, location=None) -> Value:
    """Reinterpret ``x``'s bits as ``element_type``; narrower types add a trailing dimension
    (f32[3] -> i16[3, 2], low half first), wider ones consume it."""
    t = tensor_operand("bitcast_convert", "operand", getattr(x, "type", None))
    et = _element_type("bitcast_convert", element_type)
    shape = bitcast_shape("bitcast_convert", t, et)
    return b.create("bitcast_convert", (x,), None, (tensor(shape, et),),
                    location=location).results[0]


# -- stochastic_convert -----------------------------------------------------------------------

def _stochastic_convert_check(op, types, attributes, results, regions):
    x = tensor_operand(op, "operand", types[0])
    rnd = tensor_operand(op, "random", types[1])
    r = results[0]
    _check_kind(op, "operand", x, FLOAT)
    if rnd.element_type.kind != "uint" or rnd.element_type.bits != x.element_type.bits:
        fail(op, f"operand random must have unsigned integer elements of {x.element_type.bits} "
                 f"bits (the width of operand {x}), got {rnd}")
    if rnd.shape != x.shape:
        fail(op, f"operand random has shape {list(rnd.shape)}, expected {list(x.shape)} (the "
                 f"shape of operand {x})")
    if not isinstance(r, TensorType) or r.shape != x.shape:
        fail(op, f"result must be a tensor of shape {list(x.shape)}, got {r}")
    if r.element_type.kind not in ("sint", "float"):
        fail(op, f"result must have signless integer or float elements, got {r}")


register(OpSpec("stochastic_convert", ("operand", "random"), check=_stochastic_convert_check,
                dialects=MHLO_ONLY,
                doc="Convert floats to a narrower type, rounding up with probability equal to "
                    "the fraction, decided by the random bits (result type is explicit).",
                n_results=1))


@builder_method
def stochastic_convert(b, x, random, element_type, *, location=None) -> Value:
    """Round ``x`` to ``element_type``, up when ``random`` is below the fraction's share of
    the random range (XLA's CPU backend supports float to signed integer only)."""
    t = tensor_operand("stochastic_convert", "operand", getattr(x, "type", None))
    et = _element_type("stochastic_convert", element_type)
    return b.create("stochastic_convert", (x, random), None, (tensor(t.shape, et),),
                    location=location).results[0]


__all__ = ["UNARY", "BINARY", "UNARY_WITHOUT_HLO", "NO_PRETTY", "COMPARE_TYPES", "unary_rule",
           "binary_rule",
           "bitcast_shape"]
