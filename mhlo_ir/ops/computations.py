"""Ops that run a computation held elsewhere: ``fusion`` (its region), ``composite`` (the
function it decomposes to) and the async triple (``async_start`` calls a function whose
results ``async_done`` waits for)."""

from __future__ import annotations

import re

from ..attributes import DictionaryAttr, StringAttr
from ..dtypes import i32
from ..ir import Operation, Value
from ..types import AsyncBundleType, TensorType, TupleType
from .. import op_forms as pf
from ..mhlo_attributes import misc_enum
from . import convert
from .args import arg_names, results, type_list, value_list
from .convert import show as _show
from .custom_call import _aliases, check_aliases
from .spec import MHLO_ONLY, AttrSpec, OpSpec, builder_method, fail, register

_i32 = convert.i32
_str = convert.string


# -- fusion -----------------------------------------------------------------------------------

def _fusion_check(op, types, attributes, results, regions):
    from .control_flow import check_region
    check_region(op, "fused_computation", regions[0], types, results)
    check_aliases(op, types, results, attributes)


register(OpSpec("fusion", ("inputs*",),
                {"fusion_kind": AttrSpec(misc_enum("fusion_kind"), True),
                 "output_operand_aliases": AttrSpec(_aliases)},
                regions=1, check=_fusion_check, dialects=MHLO_ONLY,
                doc="A fused computation: its region runs on the inputs (XLA-internal; "
                    "converting to HLO needs fusion_kind).", no_tuples=True))


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
    doc="A named op whose meaning is the call of its decomposition function.", pretty=pf.COMPOSITE,
    quantized="carrier"))


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
    elif not isinstance(decomposition, str):
        fail("composite", f"decomposition must be a Function, or a function's name with "
                          f"result_types, got {_show(decomposition)}")
    elif result_types is None:
        fail("composite", f"decomposition @{decomposition} given by name needs result_types")
    op = b.create("composite", (inputs,), {
        "name": name, "decomposition": decomposition,
        "composite_attributes": composite_attributes, "version": version},
        type_list("composite", "result_types", result_types), location=location)
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
