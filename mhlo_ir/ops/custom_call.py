"""``custom_call``: a call to a target XLA looks up by name (a library kernel, a host
callback, an XLA-internal rewrite), with its backend config, operand and result layouts
(``IndexLayout``, the one attribute of ``index`` elements) and output-operand aliases."""

from __future__ import annotations

from typing import Sequence

import attrs as _attrs
import numpy as _np

from .. import op_forms as pf
from ..attributes import ArrayAttr, Attribute, DictionaryAttr, IntegerAttr, StringAttr
from ..dtypes import i32
from ..ir import Value
from ..mhlo_attributes import OutputOperandAlias
from ..types import TensorType, TupleType, Type
from . import convert
from .args import results, type_list, value_list
from .control_flow import Results
from .convert import show as _show
from ..op_attributes import OpAttributes
from .host_callbacks import FFI_CONFIG, check_call as check_callback, is_callback_target
from .spec import AttrSpec, OpSpec, builder_method, fail, register

_i32 = convert.i32
_bool = convert.boolean
_str = convert.string


def _backend_config(v):
    if isinstance(v, (StringAttr, DictionaryAttr)):
        return v
    if isinstance(v, dict):
        return DictionaryAttr(v)
    if isinstance(v, (str, bytes, bytearray)):
        return _str(v)  # (bytes: a serialized config, which MLIR strings hold as they are)
    raise TypeError(f"expected a string or bytes (api_version 1-3) or a dict (api_version 4), got "
                    f"{_show(v)}")


@_attrs.frozen
class IndexLayout(Attribute):
    """``dense<[1, 0]> : tensor<2xindex>``: a 1-D dense attribute of ``index`` elements. As
    custom_call's ``operand_layouts``/``result_layouts`` entry it is one operand's or result's
    layout, its dimensions minor to major (a permutation of 0..rank-1, checked there and
    when built from a list; empty for scalars and tokens); elsewhere (a discardable
    attribute) it holds any integers, as MLIR reads them.

    NOTE: custom-call layouts are the one place MHLO wants ``index`` elements ("Array of
    layout (1D tensor of index type) attributes"; i64 is rejected), a type the dense
    attributes do not have, hence a kind of its own."""

    dims: tuple = _attrs.field(converter=lambda ds: tuple(convert.i64(d).value for d in ds))

    def render(self, dialect=None) -> str:
        dims = self.dims
        n = len(dims)
        body = (str(dims[0]) if n and dims.count(dims[0]) == n else  # a splat, as MLIR's
                "[" + ", ".join(map(str, dims)) + "]" if n else "")
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


def _layout_problem(dims) -> str | None:
    if sorted(dims) != list(range(len(dims))):
        return (f"layout {list(dims)} is not a permutation of 0..{len(dims) - 1} "
                "(dimensions minor to major)")
    return None


def _layout_entry(i, e) -> IndexLayout:
    if e.__class__ is not IndexLayout:
        if isinstance(e, (str, bytes, Attribute)) or not hasattr(e, "__iter__"):
            raise TypeError(f"entry {i} must be a list of dimensions, got {_show(e)}")
        e = IndexLayout(tuple(e))
    why = _layout_problem(e.dims)
    if why is not None:
        raise ValueError(why)
    return e


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
        if len(results) == 1:  # (the indices walk into the one result's tuple, as jaxlib's)
            result = _subtype(op, "output", results[0], path)
        elif path and 0 <= path[0] < len(results):
            result = _subtype(op, "output", results[path[0]], path[1:])
        else:
            fail(op, f"output_operand_alias output_tuple_indices {list(path)} do not name one "
                     f"of the {len(results)} results")
        if operand != result:
            fail(op, f"output_operand_alias: operand {a.operand_index} has type {operand} but "
                     f"the aliased output has type {result}")


# XLA's own targets that annotate one value (measured on jaxlib 0.10.2, XLA:CPU): another
# number of operands or results aborts or segfaults the compile (sharding_remover.cc:66
# "Sharding instruction must have exactly one operand"; LayoutConstraint of none segfaults,
# of two results "Check failed: output_shape.IsArray()"); a result not of the operand's type
# fails it (RET_CHECK "CompatibleIgnoringFpPrecision"). The SPMD pair changes the shape
# (full to shard, shard to full) in a partitioned program: one operand and one result only.
_ONE_TO_ONE = {"Sharding": True, "LayoutConstraint": True, "MoveToHost": True,
               "MoveToDevice": True, "annotate_device_placement": True,
               "SPMDFullToShardShape": False, "SPMDShardToFullShape": False}


def annotation_problem(target, types, results) -> str | None:
    """Why a custom_call to ``target``, one of XLA's own annotations of one value
    (``_ONE_TO_ONE``), with operands of ``types`` and ``results`` is one XLA aborts or fails
    compiling; None (any other target too) where it is not."""
    same = _ONE_TO_ONE.get(target)
    if same is None:
        return None
    if len(types) != 1 or len(results) != 1:
        return (f"call_target_name {target!r} (XLA's own annotation of one value) takes one "
                f"operand and returns one result, got {len(types)} operand(s) and "
                f"{len(results)} result(s) (XLA aborts or fails compiling any other)")
    if same and results[0] != types[0]:
        return (f"call_target_name {target!r} returns its operand's type {types[0]}, got "
                f"{results[0]} (XLA's compile fails: \"CompatibleIgnoringFpPrecision\")")
    if not same and (getattr(results[0], "element_type", None) is not
                     getattr(types[0], "element_type", None)):
        return (f"call_target_name {target!r} returns its operand's element type (the shard "
                f"or the full shape of it), got {results[0]} from {types[0]}")
    return None


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
    jax_config = attributes.get(FFI_CONFIG)
    if jax_config is not None:
        # JAX's spelling of a typed-FFI call, which XLA takes in this form only
        if not isinstance(jax_config, DictionaryAttr):
            fail(op, f"{FFI_CONFIG} must be a dictionary (a typed-FFI call's configuration), "
                     f"got {jax_config}")
        if version != 1 or cfg is not None and cfg != StringAttr(""):
            fail(op, f"{FFI_CONFIG} (JAX's spelling of api_version 4) goes with api_version "
                     f"1 and an empty backend_config, got api_version {version} and "
                     f"backend_config {cfg} (XLA: \"failed to legalize operation "
                     "'stablehlo.custom_call'\")")
    if cfg is not None:
        if version == 4 and not isinstance(cfg, DictionaryAttr):
            fail(op, "backend_config must be a dictionary for api_version 4, got a string")
        if version != 4 and not isinstance(cfg, StringAttr):
            fail(op, f"backend_config must be a string for api_version {version}, got a "
                     "dictionary")
    if (why := annotation_problem(target, types, results)) is not None:
        fail(op, why)
    check_aliases(op, types, results, attributes)
    _check_layouts(op, types, results, attributes)
    if is_callback_target(target):
        check_callback(op, types, attributes, results)


def _custom_call_dialect(op, dialect):
    """MHLO spells JAX's typed-FFI custom call (``FFI_CONFIG``) as XLA's conversion of it
    does, api_version 4 with the configuration as backend_config: the attributes to print
    there (MHLO reads the other spelling as an untyped call, which XLA cannot compile)."""
    attributes = op.attributes
    if dialect.name != "mhlo" or not attributes or FFI_CONFIG not in attributes:
        return None
    out = {k: v for k, v in attributes.items() if k not in (FFI_CONFIG, "backend_config")}
    out["api_version"] = IntegerAttr(4, i32)
    out["backend_config"] = attributes[FFI_CONFIG]
    return OpAttributes(out)


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
            why = _layout_problem(lay.dims)
            if why is not None:  # (one read from text: any index dense attribute reads)
                fail(op, f"{what}_layouts[{i}]: {why}")
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
}, check=_custom_call_check, pretty=pf.CUSTOM_CALL, quantized="carrier",
    dialect_check=_custom_call_dialect,
    dialect_check_when=lambda attributes: bool(attributes) and FFI_CONFIG in attributes))


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
