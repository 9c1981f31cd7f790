"""Tuples, tokens and custom calls."""

from __future__ import annotations

from ..attributes import (ArrayAttr, BoolAttr, DictionaryAttr, IntegerAttr, StringAttr,
                          to_attribute)
from ..dtypes import i32
from ..mhlo_attributes import OutputOperandAlias
from ..types import TOKEN, TokenType, TupleType
from .spec import AttrSpec, OpSpec, fail, register


def _tuple(op, types, attributes):
    return (TupleType(tuple(types)),)


register(OpSpec("tuple", ("val*",), infer=_tuple, chapter="tuple"))


def _i32(v):
    return v if isinstance(v, IntegerAttr) else IntegerAttr(int(v), i32)


def _get_tuple_element(op, types, attributes):
    t = types[0]
    if not isinstance(t, TupleType):
        fail(op, f"operand must be a tuple, got {t}")
    i = attributes["index"].value
    if not 0 <= i < len(t.types):
        fail(op, f"index {i} is out of range for {t} with {len(t.types)} elements")
    return (t.types[i],)


register(OpSpec("get_tuple_element", ("operand",), {"index": AttrSpec(_i32, True)},
                infer=_get_tuple_element, chapter="tuple"))

register(OpSpec("create_token", (), infer=lambda op, t, a: (TOKEN,), chapter="token"))


def _after_all(op, types, attributes):
    for i, t in enumerate(types):
        if not isinstance(t, TokenType):
            fail(op, f"operand inputs[{i}] must be a token, got {t}")
    return (TOKEN,)


register(OpSpec("after_all", ("inputs*",), infer=_after_all, chapter="token"))


def _bool(v):
    return v if isinstance(v, BoolAttr) else to_attribute(bool(v))


def _str(v):
    return v if isinstance(v, StringAttr) else StringAttr(v)


def _backend_config(v):
    if isinstance(v, (StringAttr, DictionaryAttr)):
        return v
    if isinstance(v, dict):
        return DictionaryAttr(v)
    return StringAttr(v)


def _custom_call_check(op, types, attributes, results, regions):
    target = attributes["call_target_name"].value
    if target.startswith("$"):
        fail(op, f"call_target_name {target!r}: targets starting with '$' are reserved for "
                 "XLA's internal use")
    api = attributes.get("api_version")
    cfg = attributes.get("backend_config")
    version = api.value if api is not None else 1
    if version not in (1, 2, 3, 4):
        fail(op, f"api_version must be 1, 2, 3 or 4, got {version}")
    if cfg is not None:
        if version == 4 and not isinstance(cfg, DictionaryAttr):
            fail(op, "backend_config must be a dictionary for api_version 4, got a string")
        if version != 4 and not isinstance(cfg, StringAttr):
            fail(op, f"backend_config must be a string for api_version {version}, got a "
                     "dictionary")
    for a in getattr(attributes.get("output_operand_aliases"), "elements", ()):
        if not 0 <= a.operand_index < len(types):
            fail(op, f"output_operand_alias operand_index {a.operand_index} is out of range "
                     f"for {len(types)} operands")


register(OpSpec("custom_call", ("inputs*",), {
    "call_target_name": AttrSpec(_str, True),
    "has_side_effect": AttrSpec(_bool),
    "backend_config": AttrSpec(_backend_config),
    "api_version": AttrSpec(_i32),
    "called_computations": AttrSpec(to_attribute),
    "operand_layouts": AttrSpec(to_attribute),
    "result_layouts": AttrSpec(to_attribute),
    "output_operand_aliases": AttrSpec(
        lambda v: v if isinstance(v, ArrayAttr) else ArrayAttr(
            tuple(a if isinstance(a, OutputOperandAlias) else OutputOperandAlias(**a) for a in v))),
}, check=_custom_call_check, chapter="custom_call"))
