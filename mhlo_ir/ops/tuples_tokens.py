"""Ops that group, order or mark values without computing on them: tuples and their
elements, tokens and their joins, a value made to wait for a token (add_dependency), the
optimization barrier, and XLA's sharding-domain marker."""

from __future__ import annotations

from typing import Sequence

from .. import op_forms as pf
from ..attributes import StringAttr
from ..ir import Value
from ..types import TOKEN, TensorType, TokenType, TupleType
from ..mhlo_attributes import misc_enum
from . import convert
from .args import results, value_list
from .spec import MHLO_ONLY, AttrSpec, OpSpec, builder_method, fail, register

_str = convert.string


def _tuple(op, types, attributes):
    return (TupleType(tuple(types)),)


register(OpSpec("tuple", ("val*",), infer=_tuple, pretty=pf.TUPLE_FORM, quantized="carrier"))


_i32 = convert.i32


def _get_tuple_element(op, types, attributes):
    t = types[0]
    if not isinstance(t, TupleType):
        fail(op, f"operand must be a tuple, got {t}")
    i = attributes["index"].value
    if not 0 <= i < len(t.types):
        fail(op, f"index {i} is out of range for {t} with {len(t.types)} elements")
    return (t.types[i],)


register(OpSpec("get_tuple_element", ("operand",), {"index": AttrSpec(_i32, True)},
                infer=_get_tuple_element, pretty=pf.GET_TUPLE_ELEMENT, quantized="carrier"))

register(OpSpec("create_token", (), infer=lambda op, t, a: (TOKEN,), pretty=pf.NULLARY))


def _after_all(op, types, attributes):
    for i, t in enumerate(types):
        if not isinstance(t, TokenType):
            fail(op, f"operand inputs[{i}] must be a token, got {t}")
    return (TOKEN,)


register(OpSpec("after_all", ("inputs*",), infer=_after_all, pretty=pf.VARIADIC_NULLARY))



# -- dependencies and barriers ---------------------------------------------------------------

def _add_dependency(op, types, attributes):
    if not isinstance(types[0], TensorType):  # (a token; a tuple, which MHLO takes no more)
        fail(op, f"operand must be a tensor, got {types[0]}")
    if not isinstance(types[1], TokenType):
        fail(op, f"operand token must be a token, got {types[1]}")
    return (types[0],)


register(OpSpec("add_dependency", ("operand", "token"), infer=_add_dependency,
                dialects=MHLO_ONLY, doc="The operand, ordered after the token's side effects.",
                pretty=pf.FUNCTIONAL_FORM))


@builder_method
def add_dependency(b, operand, token, *, location=None) -> Value:
    return b._one("add_dependency", (operand, token), location=location)


register(OpSpec("optimization_barrier", ("operand*",), infer=lambda op, t, a: tuple(t),
                doc="Its operands unchanged; XLA does not move computations "
                                    "across it.", pretty=pf.OPTIMIZATION_BARRIER,
                                    quantized="carrier", no_tuples=True))


@builder_method
def optimization_barrier(b, *values, location=None) -> Value | tuple:
    """The values, unchanged, behind a barrier XLA's optimisations do not cross: a Value for
    one, a tuple for several."""
    return results(b.create("optimization_barrier", (list(values),), location=location))


# -- domain -----------------------------------------------------------------------------------

def _domain(op, types, attributes):
    if not isinstance(types[0], (TensorType, TokenType, TupleType)):
        fail(op, f"operand must be a tensor, token or tuple, got {types[0]}")
    return (types[0],)


def _sharding_text(v) -> StringAttr:
    """domain's metadata: an HLO sharding string (``"{maximal device=0}"``); XLA cannot
    translate a domain whose metadata is not in braces. Only the braces are checked here."""
    v = _str(v)
    text = v.value.strip()
    if text and not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"expected an HLO sharding in braces (e.g. \"{{maximal device=0}}\"), "
                         f"got {v.value!r:.60}")
    return v


register(OpSpec("domain", ("operand",), {
    "kind": AttrSpec(misc_enum("kind"), True),
    "entry_metadata": AttrSpec(_sharding_text, True),
    "exit_metadata": AttrSpec(_sharding_text, True)}, infer=_domain, dialects=MHLO_ONLY,
    doc="XLA-internal marker of a sharding-domain boundary (an identity when run).",
    no_tuples=True))


@builder_method
def domain(b, operand, entry_metadata, exit_metadata, kind="sharding", *, location=None) -> Value:
    """A ``domain`` boundary; the metadata are HLO sharding strings such as
    ``"{maximal device=0}"``."""
    return b._one("domain", (operand,), {"kind": kind, "entry_metadata": entry_metadata,
                                         "exit_metadata": exit_metadata}, location=location)


# -- builder methods: tuples, tokens, custom calls -----------------------------------------

def _tuple_method(b, values: Sequence[Value], *, location=None) -> Value:
    return b._one("tuple", (value_list("tuple", "values", values),), location=location)


# Not defined as ``tuple``, so the builtin keeps its name in this module.
_tuple_method.__name__ = "tuple"
builder_method(_tuple_method)


@builder_method
def get_tuple_element(b, t: Value, index: int, *, location=None) -> Value:
    return b._one("get_tuple_element", (t,), {"index": index}, location=location)


@builder_method
def create_token(b, *, location=None) -> Value:
    return b._one("create_token", (), location=location)


@builder_method
def after_all(b, *tokens: Value, location=None) -> Value:
    return b._one("after_all", (list(tokens),), location=location)
