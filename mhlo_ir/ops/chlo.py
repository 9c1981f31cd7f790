"""CHLO: the "client HLO" ops JAX lowers to, which XLA decomposes into MHLO before compiling.

Special functions (erf, lgamma, digamma, bessel_i1e, polygamma, zeta, ...), the inverse
trigonometric and hyperbolic functions, top_k, constants, and the ``broadcast_*`` binary ops,
which broadcast their operands numpy-style (the lower-rank operand's dimensions align with the
result's trailing ones, or with ``broadcast_dimensions`` when given). Builder methods are named
``chlo_<op>``. Ops keep their full names (``chlo.erf``) and print as such in every dialect.
"""

from __future__ import annotations

from .. import op_forms as pf
import numpy as np

from .. import dtypes
from ..attributes import Attribute, DenseArrayAttr, FloatAttr, IntegerAttr
from ..dense import DenseElementsAttr
from ..index_array import IndexArrayAttr
from ..mhlo_attributes import ChloEnumAttr
from ..types import tensor
from ..ir import Value
from .elementwise import (ALL, BINARY, BOOL, COMPLEX, FLOAT, INT, _check_kind, _compare_type_fits,
                          _same, _to_i1, unary_rule)
from . import convert
from .args import constant_attr
from .spec import CHLO, AttrSpec, OpSpec, builder_method, fail, register, tensor_operand

__all__ = ["ChloEnumAttr", "UNARY", "BINARY_BROADCAST", "broadcast_shape"]


def _chlo_enum(kind):
    def convert(v):
        if isinstance(v, ChloEnumAttr):
            if v.kind != kind:
                raise ValueError(f"expected a {kind} attribute, got {v.kind}")
            return v
        value = getattr(v, "value", v)  # an mhlo EnumAttr carries the same value
        return ChloEnumAttr(kind, str(value).upper())
    return convert


def _spec(name, operands, infer=None, attributes=None, check=None, doc="", not_run="",
          pretty=None):
    return register(OpSpec(f"chlo.{name}", operands, attributes or {}, infer=infer, check=check,
                           namespace="chlo", dialects=CHLO, doc=doc, not_run=not_run,
                           pretty=pretty))


def _method(name, fn, doc):
    fn.__name__ = f"chlo_{name}"
    fn.__doc__ = doc
    return builder_method(fn)


# -- unary ------------------------------------------------------------------------------------

# name: (accepted kinds, result element type rule); XLA decomposes all of them.
UNARY = {
    "acos": (FLOAT | COMPLEX, _same),
    "acosh": (FLOAT | COMPLEX, _same),
    "asin": (FLOAT | COMPLEX, _same),
    "asinh": (FLOAT | COMPLEX, _same),
    "atan": (FLOAT | COMPLEX, _same),
    "atanh": (FLOAT | COMPLEX, _same),
    "bessel_i1e": (FLOAT, _same),
    "conj": (FLOAT | COMPLEX, _same),
    "cosh": (FLOAT | COMPLEX, _same),
    "digamma": (FLOAT, _same),
    "erf": (FLOAT, _same),
    "erf_inv": (FLOAT, _same),
    "erfc": (FLOAT, _same),
    "lgamma": (FLOAT, _same),
    "sinh": (FLOAT | COMPLEX, _same),
    "square": (FLOAT | COMPLEX, _same),
    "tan": (FLOAT | COMPLEX, _same),
    "is_inf": (FLOAT, _to_i1),
    "is_neg_inf": (FLOAT, _to_i1),
    "is_pos_inf": (FLOAT, _to_i1),
    # The kernel shared by the complex asin/acos decompositions: for z in the upper half
    # plane, asin(z) = atan2(re z, re w) + i im w and acos(z) = atan2(re w, re z) - i im w.
    "_asin_acos_kernel": (COMPLEX, _same),
}


def _unary_builder(name):
    op = f"chlo.{name}"

    def method(b, operand, *, location=None) -> Value:
        return b.create(op, (operand,), location=location).results[0]
    return _method(name, method, f"Elementwise ``{op}``.")


# Ops jaxlib's chlo legalization has no 8- or 4-bit float form of ("failed to legalize
# operation 'chlo.erfc' that was explicitly marked illegal"; erf and lgamma have one).
_NOT_NARROW = frozenset({"erfc", "bessel_i1e"})


def _not_narrow(infer):
    def rule(op, types, attributes):
        out = infer(op, types, attributes)
        if types[0].element_type.bits < 16:
            fail(op, f"of {types[0]}: jaxlib has no form of it for 8- or 4-bit floats (\"failed "
                     "to legalize\"); convert to f16 or wider around it")
        return out
    return rule


for _name, (_kinds, _result) in UNARY.items():
    _rule = unary_rule(_kinds, _result)
    _spec(_name, ("operand",), _not_narrow(_rule) if _name in _NOT_NARROW else _rule,
          pretty=pf.CHLO_UNARY)
    _unary_builder(_name)


# -- binary, same shapes ----------------------------------------------------------------------

# name: (operand names, accepted kinds)
_BINARY = {
    "next_after": (("x", "y"), FLOAT),
    "polygamma": (("n", "x"), FLOAT),
    "zeta": (("x", "q"), FLOAT),
    "mulhi": (("lhs", "rhs"), INT),
}


def _same_type_rule(names, kinds):
    def infer(op, types, attributes):
        a = tensor_operand(op, names[0], types[0])
        b = tensor_operand(op, names[1], types[1])
        if a != b:
            fail(op, f"operands {names[0]} and {names[1]} must have the same type, got {a} and "
                     f"{b}")
        _check_kind(op, names[0], a, kinds)
        return (a,)
    return infer


def _binary_builder(name, names):
    op = f"chlo.{name}"

    def method(b, lhs, rhs, *, location=None) -> Value:
        return b.create(op, (lhs, rhs), location=location).results[0]
    return _method(name, method, f"Elementwise ``{op}`` of {names[0]} and {names[1]} (same "
                                 "types).")


for _name, (_names, _kinds) in _BINARY.items():
    _spec(_name, _names, _same_type_rule(_names, _kinds), pretty=pf.CHLO_UNARY)
    _binary_builder(_name, _names)


# -- broadcasting binary ops ------------------------------------------------------------------

def _dims_attr(v):
    if isinstance(v, DenseArrayAttr):
        if v.type is not dtypes.i64:
            raise TypeError(f"expected an array<i64>, got array<{v.type.name}>")
        return v
    if isinstance(v, DenseElementsAttr):
        t = v.type
        if not t.element_type.is_integer or t.rank != 1:
            raise TypeError(f"expected a list of integers (a 1-D integer tensor), got {t}")
        v = [int(x) for x in v.listed().reshape(-1)]
    elif isinstance(v, IndexArrayAttr):
        v = v.ints
    elif isinstance(v, (str, bytes, Attribute)) or not hasattr(v, "__iter__"):
        raise TypeError(f"expected a list of integers, got {type(v).__name__} {v!r:.60}")
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"expected integers, got {x!r}")
        out.append(int(x))
    return DenseArrayAttr(tuple(out), dtypes.i64)


def broadcast_shape(op, shapes, names, broadcast_dimensions=None) -> tuple:
    """The numpy-style broadcast of ``shapes``; with ``broadcast_dimensions`` (two operands of
    different ranks only), the lower-rank operand's dimension i lines up with result
    dimension ``broadcast_dimensions[i]`` instead of the trailing ones."""
    rank = max(len(s) for s in shapes)
    aligned = []
    for s, n in zip(shapes, names):
        if broadcast_dimensions is not None and len(s) < rank:
            dims = broadcast_dimensions
            if len(dims) != len(s):
                fail(op, f"broadcast_dimensions {list(dims)} has {len(dims)} entries, expected "
                         f"{len(s)} (the rank of operand {n} of shape {list(s)})")
            if len(set(dims)) != len(dims) or list(dims) != sorted(dims):
                fail(op, f"broadcast_dimensions {list(dims)} must be strictly increasing")
            full = [1] * rank
            for i, d in enumerate(dims):
                if not 0 <= d < rank:
                    fail(op, f"broadcast_dimensions[{i}] = {d} is out of range for a result of "
                             f"rank {rank}")
                full[d] = s[i]
            aligned.append(tuple(full))
        else:
            aligned.append((1,) * (rank - len(s)) + tuple(s))
    out = []
    for d in range(rank):
        sizes = {a[d] for a in aligned} - {1}
        if len(sizes) > 1:
            detail = ", ".join(f"{n} {list(s)}" for s, n in zip(shapes, names))
            fail(op, f"operand shapes do not broadcast: result dimension {d} would need sizes "
                     f"{sorted(sizes)} ({detail})")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _broadcast_rule(kinds, result):
    def infer(op, types, attributes):
        lhs = tensor_operand(op, "lhs", types[0])
        rhs = tensor_operand(op, "rhs", types[1])
        if lhs.element_type is not rhs.element_type:
            fail(op, f"operands lhs and rhs must have the same element type, got {lhs} and "
                     f"{rhs}")
        _check_kind(op, "lhs", lhs, kinds)
        bd = attributes.get("broadcast_dimensions") if attributes else None
        if bd is not None and lhs.rank == rhs.rank and list(bd.values) != list(
                range(lhs.rank)):
            fail(op, f"broadcast_dimensions {list(bd.values)} must be the identity for operands "
                     f"of equal rank ({lhs} and {rhs})")
        shape = broadcast_shape(op, (lhs.shape, rhs.shape), ("lhs", "rhs"),
                                None if bd is None else bd.values)
        if bd is not None and lhs.rank != rhs.rank:
            low = min(lhs.rank, rhs.rank)
            high = max(lhs.rank, rhs.rank)
            trailing = list(range(high - low, high))
            if list(bd.values) != trailing:
                # jaxlib's chlo legalization handles only these ("unsupported non
                # prefix-padded dynamic rank broadcast_dimensions"), even for static shapes
                fail(op, f"broadcast_dimensions {list(bd.values)} are not the trailing "
                         f"dimensions {trailing}: XLA's chlo legalization (jaxlib 0.10) "
                         f"accepts only numpy-style alignment; broadcast_in_dim the "
                         f"lower-rank operand first")
        et = result(lhs.element_type)
        if et is None:
            fail(op, f"operand lhs must have f32 or f64 elements, got {lhs}")
        if op.endswith("compare"):
            ct = attributes.get("compare_type")
            if ct is not None:
                _compare_type_fits(op, lhs, ct.value)
        return (tensor(shape, et),)
    return infer


# name: (accepted kinds, result element type rule), from the mhlo op each decomposes into.
BINARY_BROADCAST = {
    name: BINARY[name] for name in (
        "add", "and", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "or",
        "power", "remainder", "shift_left", "shift_right_arithmetic", "shift_right_logical",
        "subtract", "xor")}
BINARY_BROADCAST.update({
    "next_after": (FLOAT, _same),
    "polygamma": (FLOAT, _same),
    "zeta": (FLOAT, _same),
    "compare": (ALL, _to_i1),
})

_DIMS = {"broadcast_dimensions": AttrSpec(_dims_attr)}


def _broadcast_builder(name):
    op = f"chlo.broadcast_{name}"
    if name == "compare":
        def method(b, lhs, rhs, direction, compare_type=None, *, broadcast_dimensions=None,
                   location=None) -> Value:
            attrs = {"comparison_direction": direction, "compare_type": compare_type,
                     "broadcast_dimensions": broadcast_dimensions}
            return b.create(op, (lhs, rhs), attrs, location=location).results[0]
        doc = (f"``{op}``: compare with ``direction`` (EQ, NE, GE, GT, LE, LT) and optional "
               "``compare_type`` (FLOAT, TOTALORDER, SIGNED, UNSIGNED), broadcasting numpy-style.")
    else:
        def method(b, lhs, rhs, *, broadcast_dimensions=None, location=None) -> Value:
            return b.create(op, (lhs, rhs), {"broadcast_dimensions": broadcast_dimensions},
                            location=location).results[0]
        doc = (f"``{op}``: elementwise {name} of lhs and rhs broadcast numpy-style (or along "
               "``broadcast_dimensions`` for the lower-rank operand).")
    return _method(f"broadcast_{name}", method, doc)


for _name, (_kinds, _result) in BINARY_BROADCAST.items():
    _attrs = dict(_DIMS)
    if _name == "compare":
        _attrs["comparison_direction"] = AttrSpec(_chlo_enum("comparison_direction"), True)
        _attrs["compare_type"] = AttrSpec(_chlo_enum("comparison_type"))
    _spec(f"broadcast_{_name}", ("lhs", "rhs"), _broadcast_rule(_kinds, _result), _attrs,
          pretty=pf.FUNCTIONAL_FORM)
    _broadcast_builder(_name)


def _broadcast_select(op, types, attributes):
    pred = tensor_operand(op, "pred", types[0])
    on_true = tensor_operand(op, "on_true", types[1])
    on_false = tensor_operand(op, "on_false", types[2])
    if pred.element_type is not dtypes.i1:
        fail(op, f"operand pred must have i1 elements, got {pred}")
    if on_true.element_type is not on_false.element_type:
        fail(op, f"operands on_true and on_false must have the same element type, got "
                 f"{on_true} and {on_false}")
    shape = broadcast_shape(op, (pred.shape, on_true.shape, on_false.shape),
                            ("pred", "on_true", "on_false"))
    return (tensor(shape, on_true.element_type),)


_spec("broadcast_select", ("pred", "on_true", "on_false"), _broadcast_select,
      pretty=pf.FUNCTIONAL_FORM)


@builder_method
def chlo_broadcast_select(b, pred, on_true, on_false, *, location=None) -> Value:
    """``chlo.broadcast_select``: ``select`` with the three operands broadcast numpy-style."""
    return b.create("chlo.broadcast_select", (pred, on_true, on_false),
                    location=location).results[0]


# -- constants --------------------------------------------------------------------------------

def _dense_value(v):
    if isinstance(v, DenseElementsAttr):
        return v
    return DenseElementsAttr.from_array(np.asarray(v))


def _chlo_constant(op, types, attributes):
    value = attributes["value"]
    if not isinstance(value, DenseElementsAttr):
        fail(op, f"attribute value must be a dense elements attribute, got {value!r}")
    return (value.type,)


_spec("constant", (), _chlo_constant, {"value": AttrSpec(_dense_value, True)},
      pretty=pf.CHLO_CONSTANT)


@builder_method
def chlo_constant(b, value, dtype=None, *, location=None) -> Value:
    """``chlo.constant`` of a numpy array or scalar, converted as ``Builder.constant``
    converts (exactly; Python numbers and lists of them become i32, f32 or complex64 without
    ``dtype``)."""
    if not isinstance(value, DenseElementsAttr) or dtype is not None:
        value = constant_attr("chlo.constant", value, dtype)
    return b.create("chlo.constant", (), {"value": value}, location=location).results[0]


def _scalar_attr(v):
    if isinstance(v, (IntegerAttr, FloatAttr)):
        return v
    raise TypeError(f"expected an IntegerAttr or FloatAttr (chlo_constant_like converts Python "
                    f"scalars), got {v!r}")


def _constant_like(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    value = attributes["value"]
    if value.type is not x.element_type:
        fail(op, f"attribute value has type {value.type}, expected {x.element_type} (the "
                 f"element type of operand {x})")
    return (x,)


_spec("constant_like", ("operand",), _constant_like, {"value": AttrSpec(_scalar_attr, True)},
      doc="A splat of the scalar value, shaped like the operand.")


@builder_method
def chlo_constant_like(b, value, operand, *, location=None) -> Value:
    """``chlo.constant_like``: ``value`` in every element of a tensor typed like ``operand``
    (integer or float element types)."""
    t = tensor_operand("chlo.constant_like", "operand", getattr(operand, "type", None))
    et = t.element_type
    if not isinstance(value, (IntegerAttr, FloatAttr)):
        if et.kind not in ("sint", "uint", "float"):
            fail("chlo.constant_like", f"builds integer or float splats only, got operand {t}")
        arr = constant_attr("chlo.constant_like", value, et).to_array()  # checked exactly
        if arr.shape != ():  # (the attribute is one number: int() and float() would fail)
            fail("chlo.constant_like", f"value must be a scalar, got {type(value).__name__} "
                                       f"{value!r:.40} of shape {list(arr.shape)}")
        value = IntegerAttr(int(arr), et) if et.kind != "float" else FloatAttr(float(value), et)
    return b.create("chlo.constant_like", (operand,), {"value": value},
                    location=location).results[0]


# -- top_k ------------------------------------------------------------------------------------

_i64 = convert.i64


def _top_k(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    k = attributes["k"].value
    if x.rank == 0:
        fail(op, f"operand must have rank at least 1, got {x}")
    if not 0 <= k <= x.shape[-1]:
        fail(op, f"k = {k} is out of range for operand {x}: expected 0 <= k <= "
                 f"{x.shape[-1]} (its last dimension)")
    _check_kind(op, "operand", x, INT | BOOL | FLOAT)  # i1 is a signless integer in MLIR
    shape = (*x.shape[:-1], k)
    return (tensor(shape, x.element_type), tensor(shape, dtypes.i32))


_spec("top_k", ("operand",), _top_k, {"k": AttrSpec(_i64, True)}, pretty=pf.CHLO_TOP_K,
      doc="The k largest entries along the last dimension, in descending order, and their "
          "indices (i32).")


@builder_method
def chlo_top_k(b, operand, k: int, *, location=None) -> tuple:
    """``chlo.top_k``: ``(values, indices)`` of the ``k`` largest entries along the last
    dimension, largest first (ties: lower index first)."""
    return tuple(b.create("chlo.top_k", (operand,), {"k": k}, location=location).results)

