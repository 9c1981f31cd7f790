"""Tuples, tokens, custom calls, barriers, domain, fusion, composite and the async ops."""

from __future__ import annotations

from .. import op_forms as pf

import re

import attrs as _attrs

import numpy as _np

from ..attributes import ArrayAttr, Attribute, DictionaryAttr, StringAttr
from ..dtypes import i32
from ..mhlo_attributes import MISC_ENUM_VALUES as _ENUMS, MiscEnumAttr, OutputOperandAlias
from ..types import TOKEN, AsyncBundleType, TensorType, TokenType, TupleType, Type
from ..ir import Operation, Value
from . import convert
from typing import Sequence

from .args import arg_names, results, type_list, value_list
from .control_flow import Results
from .convert import show as _show
from .host_callbacks import check_call as check_callback, is_callback_target
from .spec import MHLO_ONLY, AttrSpec, OpSpec, builder_method, fail, register


def _tuple(op, types, attributes):
    return (TupleType(tuple(types)),)


register(OpSpec("tuple", ("val*",), infer=_tuple, pretty=pf.TUPLE_FORM))


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
                infer=_get_tuple_element, pretty=pf.GET_TUPLE_ELEMENT))

register(OpSpec("create_token", (), infer=lambda op, t, a: (TOKEN,), pretty=pf.NULLARY))


def _after_all(op, types, attributes):
    for i, t in enumerate(types):
        if not isinstance(t, TokenType):
            fail(op, f"operand inputs[{i}] must be a token, got {t}")
    return (TOKEN,)


register(OpSpec("after_all", ("inputs*",), infer=_after_all, pretty=pf.VARIADIC_NULLARY))


_bool = convert.boolean
_str = convert.string


def _backend_config(v):
    if isinstance(v, (StringAttr, DictionaryAttr)):
        return v
    if isinstance(v, dict):
        return DictionaryAttr(v)
    if isinstance(v, str):
        return StringAttr(v)
    raise TypeError(f"expected a string (api_version 1-3) or a dict (api_version 4), got "
                    f"{_show(v)}")


@_attrs.frozen
class IndexLayout(Attribute):
    """``dense<[1, 0]> : tensor<2xindex>``: the layout of one custom_call operand or result,
    its dimensions minor to major (a permutation of 0..rank-1; empty for scalars and tokens).

    NOTE: custom-call layouts are the one place MHLO wants ``index`` elements ("Array of
    layout (1D tensor of index type) attributes"; i64 is rejected), a type the dense
    attributes do not have, hence a kind of its own."""

    dims: tuple = _attrs.field(converter=lambda ds: tuple(convert.i64(d).value for d in ds))

    def __attrs_post_init__(self):
        if sorted(self.dims) != list(range(len(self.dims))):
            raise ValueError(f"layout {list(self.dims)} is not a permutation of "
                             f"0..{len(self.dims) - 1} (dimensions minor to major)")

    def render(self, dialect=None) -> str:
        n = len(self.dims)
        body = (str(self.dims[0]) if n == 1 else
                "[" + ", ".join(map(str, self.dims)) + "]" if n else "")
        return f"dense<{body}> : tensor<{n}xindex>"

    @classmethod
    def parse(cls, ts, dialect=None) -> "IndexLayout":
        """Reads ``dense<[1, 0]> : tensor<2xindex>`` (``dense<0> : tensor<1xindex>``,
        ``dense<> : tensor<0xindex>``)."""
        start = ts.expect("dense")
        ts.expect("<")
        if ts.at("["):
            dims = ts.comma_list(ts.integer, "]", open="[")
        elif ts.at(">"):
            dims = []
        else:
            dims = [ts.integer()]
        ts.expect(">")
        ts.expect(":")
        ts.expect("tensor")
        ts.expect("<")
        shape = ts.dimension_list()
        ts.expect("index")
        ts.expect(">")
        if len(shape) != 1 or (shape[0] != len(dims) and len(dims) != 1):
            raise ts.error(f"a layout is a 1-D tensor<Nxindex> of N dimensions, got "
                           f"{len(dims)} values for shape {list(shape)}", start)
        return ts.make(start, cls, dims * shape[0] if len(dims) == 1 else dims)


def _layout_entry(i, e) -> IndexLayout:
    if e.__class__ is IndexLayout:
        return e
    if isinstance(e, (str, bytes, Attribute)) or not hasattr(e, "__iter__"):
        raise TypeError(f"entry {i} must be a list of dimensions, got {_show(e)}")
    return IndexLayout(tuple(e))


def _layouts(v) -> ArrayAttr:
    """custom_call's operand_layouts / result_layouts: one minor-to-major list per operand
    (result), each an IndexLayout (lists of integers are converted)."""
    return convert.array_of(v, lambda e: e.__class__ is IndexLayout, _layout_entry,
                            "an array of layouts (IndexLayout)",
                            "one layout (a list of dimensions, minor to major) per operand or "
                            "result")


def _aliases(v) -> ArrayAttr:
    """output_operand_aliases: OutputOperandAlias values (or dicts of their fields)."""
    if isinstance(v, ArrayAttr):
        items = v.elements
    elif isinstance(v, (str, bytes, Attribute)) or not isinstance(v, (list, tuple)):
        raise TypeError(f"expected a list of OutputOperandAlias, got {_show(v)}")
    else:
        items = [OutputOperandAlias(**a) if isinstance(a, dict) else a for a in v]
    for i, a in enumerate(items):
        if a.__class__ is not OutputOperandAlias:
            raise TypeError(f"expected OutputOperandAlias values (or dicts of their fields), "
                            f"got {_show(a)} at index {i}")
        if isinstance(a.operand_index, (bool, _np.bool_)) or \
                not isinstance(a.operand_index, (int, _np.integer)):
            raise TypeError(f"output_operand_alias operand_index must be an integer, got "
                            f"{_show(a.operand_index)}")
    return v if isinstance(v, ArrayAttr) else ArrayAttr(tuple(items))


def _subtype(op, what, t, path):
    for i in path:
        if not isinstance(t, TupleType) or not 0 <= i < len(t.types):
            fail(op, f"output_operand_alias: {what} tuple index {i} does not exist in {t}")
        t = t.types[i]
    return t


def check_aliases(op, types, results, attributes) -> None:
    """Each output_operand_alias names an operand and a result of the same type (jaxlib
    rejects mismatched shapes)."""
    for a in getattr(attributes.get("output_operand_aliases"), "elements", ()):
        if not 0 <= a.operand_index < len(types):
            fail(op, f"output_operand_alias operand_index {a.operand_index} is out of range "
                     f"for {len(types)} operands")
        operand = _subtype(op, "operand", types[a.operand_index], a.operand_tuple_indices)
        path = a.output_tuple_indices
        if len(results) == 1 and not path:
            result = results[0]
        elif path and 0 <= path[0] < len(results):
            result = _subtype(op, "output", results[path[0]], path[1:])
        else:
            fail(op, f"output_operand_alias output_tuple_indices {list(path)} do not name one "
                     f"of the {len(results)} results")
        if operand != result:
            fail(op, f"output_operand_alias: operand {a.operand_index} has type {operand} but "
                     f"the aliased output has type {result}")


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
    check_aliases(op, types, results, attributes)
    _check_layouts(op, types, results, attributes)
    if is_callback_target(target):
        check_callback(op, types, attributes, results)


def _check_layouts(op, types, results, attributes) -> None:
    ol, rl = attributes.get("operand_layouts"), attributes.get("result_layouts")
    if ol is None and rl is None:
        return
    if ol is None or rl is None:
        fail(op, "operand_layouts and result_layouts must be given together (MLIR: \"Layout "
                 "attributes should be specified for either both operands and results or "
                 "none\")")
    if len(results) == 1 and isinstance(results[0], TupleType):
        results = results[0].types
    for what, ts, layouts in (("operand", types, ol), ("result", results, rl)):
        if len(layouts.elements) != len(ts):
            fail(op, f"{what}_layouts has {len(layouts.elements)} entries, expected {len(ts)} "
                     f"(one per {what})")
        for i, (t, lay) in enumerate(zip(ts, layouts.elements)):
            rank = t.rank if isinstance(t, TensorType) else 0
            if len(lay.dims) != rank:
                fail(op, f"{what}_layouts[{i}] = {list(lay.dims)} does not fit {what} {i} of "
                         f"type {t}: expected a permutation of 0..{rank - 1}"
                         if rank else f"{what}_layouts[{i}] must be empty for {t}, got "
                         f"{list(lay.dims)}")


register(OpSpec("custom_call", ("inputs*",), {
    "call_target_name": AttrSpec(_str, True),
    "has_side_effect": AttrSpec(_bool),
    "backend_config": AttrSpec(_backend_config),
    "api_version": AttrSpec(_i32),
    "called_computations": AttrSpec(convert.symbol_array),
    "operand_layouts": AttrSpec(_layouts),
    "result_layouts": AttrSpec(_layouts),
    "output_operand_aliases": AttrSpec(_aliases),
}, check=_custom_call_check, pretty=pf.CUSTOM_CALL))


# -- dependencies and barriers ---------------------------------------------------------------

def _add_dependency(op, types, attributes):
    if isinstance(types[0], TokenType):
        fail(op, "operand must be a tensor (or tuple), got a token")
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
                                    "across it.", pretty=pf.OPTIMIZATION_BARRIER))


@builder_method
def optimization_barrier(b, *values, location=None) -> Value | tuple:
    """The values, unchanged, behind a barrier XLA's optimisations do not cross: a Value for
    one, a tuple for several."""
    return results(b.create("optimization_barrier", (list(values),), location=location))


# -- enums these ops own -----------------------------------------------------------------------

def _enum(kind):
    def convert(v):
        if isinstance(v, MiscEnumAttr):
            if v.kind != kind:
                raise ValueError(f"expected a {kind} attribute, got {v.kind}")
            return v
        if not isinstance(v, str):
            raise TypeError(f"{kind}: {v!r:.60} is not one of {', '.join(_ENUMS[kind])}")
        return MiscEnumAttr(kind, v)
    return convert


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
    "kind": AttrSpec(_enum("kind"), True), "entry_metadata": AttrSpec(_sharding_text, True),
    "exit_metadata": AttrSpec(_sharding_text, True)}, infer=_domain, dialects=MHLO_ONLY,
    doc="XLA-internal marker of a sharding-domain boundary (an identity when run)."))


@builder_method
def domain(b, operand, entry_metadata, exit_metadata, kind="sharding", *, location=None) -> Value:
    """A ``domain`` boundary; the metadata are HLO sharding strings such as
    ``"{maximal device=0}"``."""
    return b._one("domain", (operand,), {"kind": kind, "entry_metadata": entry_metadata,
                                         "exit_metadata": exit_metadata}, location=location)


# -- fusion -----------------------------------------------------------------------------------

def _fusion_check(op, types, attributes, results, regions):
    from .control_flow import check_region
    check_region(op, "fused_computation", regions[0], types, results)
    check_aliases(op, types, results, attributes)


register(OpSpec("fusion", ("inputs*",), {"fusion_kind": AttrSpec(_enum("fusion_kind"), True),
                                         "output_operand_aliases": AttrSpec(_aliases)},
                regions=1, check=_fusion_check, dialects=MHLO_ONLY,
                doc="A fused computation: its region runs on the inputs (XLA-internal; "
                    "converting to HLO needs fusion_kind)."))


@builder_method
def fusion(b, inputs, body, *, fusion_kind="kLoop", location=None) -> Value | tuple | Operation:
    """``body(b, *inputs) -> values`` as a fused computation; returns a Value for one result,
    a tuple for several.

    XLA cannot turn a fusion without ``fusion_kind`` into HLO ("requires fusion kind for HLO
    translation"), hence the default. jaxlib 0.10's CPU compiler aborts the process (Check
    failed: has_layout()) on a fusion with several results: keep fusions to one result when
    compiling for CPU."""
    from .control_flow import region_returns
    inputs = value_list("fusion", "inputs", inputs)
    seen = set()
    for i, x in enumerate(inputs):
        if id(x) in seen:
            # XLA aborts the process compiling it (hlo_computation.cc: "instruction_count()
            # == post_order.size()"), measured on jaxlib 0.10.2's CPU compiler
            fail("fusion", f"inputs[{i}] repeats an earlier input ({x!r:.60}); XLA aborts on a "
                           "fusion that takes one value twice: pass it once and use the block "
                           "argument twice")
        seen.add(id(x))
    region = b.region([getattr(x, "type", None) for x in inputs], body, op="fusion",
                      arg_names=arg_names(len(inputs), "x"))
    rts = region_returns("fusion", "fused_computation", region)
    return results(b.create("fusion", (inputs,), {"fusion_kind": fusion_kind}, rts,
                            regions=(region,), location=location))


# -- composite --------------------------------------------------------------------------------

_symbol = convert.symbol


_OP_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]*(\.[a-zA-Z0-9_$]+)+")


def _composite_name(v) -> StringAttr:
    """A namespaced op name (``"my.op"``), as MLIR requires of a composite's name."""
    v = _str(v)
    if _OP_NAME.fullmatch(v.value) is None:
        raise ValueError(f"expected a namespaced op name such as \"my_namespace.my_op\", got "
                         f"{v.value!r:.60}")
    return v


def _dictionary(v) -> DictionaryAttr:
    if isinstance(v, DictionaryAttr):
        return v
    if isinstance(v, dict):
        return DictionaryAttr(v)
    raise TypeError(f"expected a dict of attributes, got {_show(v)}")


def _composite_check(op, types, attributes, results, regions):
    name = attributes["name"].value
    if not name:
        fail(op, "attribute name must not be empty")
    ca = attributes.get("composite_attributes")
    if ca is not None and not isinstance(ca, DictionaryAttr):
        fail(op, f"composite_attributes must be a dictionary, got {ca!r}")


register(OpSpec("composite", ("inputs*",), {
    "name": AttrSpec(_composite_name, True), "decomposition": AttrSpec(_symbol, True),
    "composite_attributes": AttrSpec(_dictionary),
    "version": AttrSpec(_i32)}, check=_composite_check,
    doc="A named op whose meaning is the call of its decomposition function.", pretty=pf.COMPOSITE))


@builder_method
def composite(b, name, inputs, decomposition, *, composite_attributes=None, version=None,
              result_types=None, location=None) -> Value | tuple | Operation:
    """A ``composite`` named ``name`` (``"my.op"``) decomposing to the Function
    ``decomposition`` (or a function name with ``result_types``); returns a Value for one
    result, a tuple for several."""
    inputs = value_list("composite", "inputs", inputs)
    if hasattr(decomposition, "arg_types"):
        got = tuple(getattr(x, "type", None) for x in inputs)
        if got != decomposition.arg_types:
            fail("composite", f"inputs ({', '.join(map(str, got))}) do not match "
                              f"@{decomposition.name}'s arguments "
                              f"({', '.join(map(str, decomposition.arg_types))})")
        if result_types is None:
            result_types = decomposition.type.results
    elif result_types is None:
        fail("composite", f"decomposition @{decomposition} given by name needs result_types")
    op = b.create("composite", (inputs,), {
        "name": name, "decomposition": decomposition,
        "composite_attributes": composite_attributes, "version": version},
        tuple(result_types), location=location)
    return results(op)


# -- async ------------------------------------------------------------------------------------

def _maybe_tuple(types):
    return types[0] if len(types) == 1 else TupleType(tuple(types))


def _bundle(op, t, what="bundle"):
    if not isinstance(t, AsyncBundleType) or len(t.types) < 2:
        fail(op, f"operand {what} must be an async bundle of at least 2 components, got {t}")
    return t


def _async_start_check(op, types, attributes, results, regions):
    if len(results) != 1:
        fail(op, f"has one result (the bundle), got {len(results)}")
    bt = _bundle(op, results[0], "result")
    if bt.types[0] not in (_maybe_tuple(types), TupleType(tuple(types))):
        fail(op, f"bundle component #0 {bt.types[0]} does not match the inputs "
                 f"({', '.join(map(str, types))})")
    if not attributes["execution_thread"].value:
        fail(op, "execution_thread must not be empty")


register(OpSpec("async_start", ("inputs*",), {
    "called_computation": AttrSpec(_symbol, True), "execution_thread": AttrSpec(_str, True)},
    check=_async_start_check,
    doc="Starts the called computation; its results come from async_done."))

register(OpSpec("async_update", ("bundle",),
                infer=lambda op, t, a: (_bundle(op, t[0]),), dialects=MHLO_ONLY,
                not_run="XLA rejects it in the programs XLA:CPU can run: async computations "
                        "must be one instruction, and the runnable ones (all-reduce, "
                        "all-gather, collective-permute start/done) fail HLO conversion with "
                        "'Async update requires its operand to be an asynchronous op'; a "
                        "generic async pair fails XLA's HLO verifier",
                doc="Marks progress of an async computation; the bundle passes through."))


def _async_done(op, types, attributes):
    r = _bundle(op, types[0]).types[1]
    return tuple(r.types) if isinstance(r, TupleType) else (r,)


register(OpSpec("async_done", ("bundle",), infer=_async_done,
                doc="Waits for an async computation and returns its results."))


@builder_method
def async_start(b, inputs, called_computation, *, execution_thread="main", location=None) -> Value:
    """Start the Function ``called_computation`` on ``inputs``; returns the bundle for
    async_update / async_done. The callee gets the ``execution_thread`` attribute MHLO
    requires (set here when it has none)."""
    fn = called_computation
    inputs = value_list("async_start", "inputs", inputs)
    if not hasattr(fn, "arg_types"):
        fail("async_start", f"called_computation must be a Function, got {fn!r}")
    got = tuple(getattr(x, "type", None) for x in inputs)
    if got != fn.arg_types:
        fail("async_start", f"inputs ({', '.join(map(str, got))}) do not match "
                            f"@{fn.name}'s arguments ({', '.join(map(str, fn.arg_types))})")
    thread = fn.attributes.get("execution_thread")
    if thread is None:
        fn.attributes["execution_thread"] = _str(execution_thread)
    elif thread.value != execution_thread:
        fail("async_start", f"execution_thread {execution_thread!r} differs from "
                            f"@{fn.name}'s {thread.value!r}")
    bundle = AsyncBundleType((TupleType(got), _maybe_tuple(fn.type.results),
                              TensorType((), i32)))
    return b._one("async_start", (inputs,), {"called_computation": fn,
                                             "execution_thread": execution_thread},
                  (bundle,), location=location)


@builder_method
def async_update(b, bundle, *, location=None) -> Value:
    return b._one("async_update", (bundle,), location=location)


@builder_method
def async_done(b, bundle, *, location=None) -> Value | tuple | Operation:
    """The async computation's results: a Value for one, a tuple for several."""
    return results(b.create("async_done", (bundle,), location=location))


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


@builder_method
def custom_call(b, call_target_name: str, operands: Sequence[Value], result_types,
                *, backend_config=None, has_side_effect=None, api_version=None,
                output_operand_aliases=None, location=None, **attributes) -> Results:
    """``custom_call`` to ``call_target_name``; ``backend_config`` is a string (api 1-3)
    or a dict (api 4). Extra keyword attributes are passed through. ``result_types`` is a
    Type or a list; returns a Value for one result, a tuple for several, the Operation
    for none."""
    attrs = dict(call_target_name=call_target_name, backend_config=backend_config,
                 has_side_effect=has_side_effect, api_version=api_version,
                 output_operand_aliases=output_operand_aliases, **attributes)
    if isinstance(result_types, Type):
        result_types = (result_types,)
    return results(b.create("custom_call",
                               (value_list("custom_call", "operands", operands),), attrs,
                               type_list("custom_call", "result_types", result_types),
                               location=location))
