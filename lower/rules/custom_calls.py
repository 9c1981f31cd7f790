"""Rules for primitives that become a call XLA resolves by name:

- ``composite``: an ``mhlo.composite`` whose decomposition is the lowered ``jaxpr``, its
  parameters written as jax's ``ir_attribute`` writes them (``attribute``);
- ``scaled_dot``: ``composite "xla.scaled_dot"`` decomposing to jax's bfloat16 product;
- ``ffi_call``: a ``custom_call`` with the params' attributes as an API 4 backend_config;
- ``shape_assertion``: jax's side-effecting ``custom_call @shape_assertion``.
"""

from __future__ import annotations

import attrs
import numpy as np

from mhlo_ir import (ArrayAttr, Attribute, BoolAttr, DenseElementsAttr, DictionaryAttr,
                     FloatAttr, IntegerAttr, OutputOperandAlias, StringAttr)
from mhlo_ir.builder import as_results
from mhlo_ir.dtypes import from_numpy

from .. import lax as L
from ..mlir import aval_to_ir_type, lower_fun, lower_jaxpr_to_fun, register_lowering
from .decompositions import IndexLayout


@attrs.frozen
class ElementTypeAttr(Attribute):
    """An element type as an attribute (``d = f32``): how jax writes a dtype parameter."""

    element_type: object

    def render(self, dialect=None) -> str:
        return self.element_type.name


def attribute(v):
    """A parameter value as jax's ``ir_attribute`` writes it: numpy scalars keep their type,
    Python ints are i64, floats f64, arrays dense, dtypes types."""
    if isinstance(v, (bool, np.bool_)):
        return BoolAttr(bool(v))
    if hasattr(v, "val") and isinstance(getattr(v, "val"), np.ndarray):  # HashableArray
        v = v.val
    if isinstance(v, np.ndarray) and v.ndim:
        return DenseElementsAttr.from_array(v)
    if isinstance(v, (np.generic, np.ndarray)):
        et = from_numpy(v.dtype)
        if et.kind == "float":
            return FloatAttr(float(v), et)
        return IntegerAttr(int(v), et)
    if isinstance(v, int):
        return IntegerAttr(v, from_numpy(np.dtype(np.int64)))
    if isinstance(v, float):
        return FloatAttr(v, from_numpy(np.dtype(np.float64)))
    if isinstance(v, str):
        return StringAttr(v)
    if isinstance(v, np.dtype):
        return ElementTypeAttr(from_numpy(v))
    if isinstance(v, (list, tuple)):
        return ArrayAttr([attribute(x) for x in v])
    d = getattr(v, "_d", v)  # FrozenDict
    if isinstance(d, dict):
        return DictionaryAttr({k: attribute(x) for k, x in d.items()})
    raise TypeError(f"cannot write {type(v).__name__} {v!r} as an attribute")


def _composite(ctx, *args, name, attributes, version, jaxpr):
    """``attributes`` are (name, leaves, treedef) triples; None values are left out."""
    fn = lower_jaxpr_to_fun(ctx.body_context(), name, jaxpr)
    attrs = {}
    for key, leaves, treedef in attributes:
        v = treedef.unflatten(leaves)
        if v is not None:
            attrs[key] = attribute(v)
    return list(as_results(ctx.builder.composite(
        name, args, fn, composite_attributes=DictionaryAttr(attrs), version=version)))


register_lowering("composite", _composite)


# -- scaled_dot ----------------------------------------------------------------------------------

def _scale_broadcast(scale, operand_shape, contracting):
    """Each scale repeated over its block (subchannel) of a contracting dimension."""
    for i in contracting:
        if scale.shape[i] != operand_shape[i]:
            shape = list(scale.shape)
            shape.insert(i + 1, operand_shape[i] // scale.shape[i])
            scale = L.broadcast_in_dim(scale, shape, [d + (d > i) for d in range(scale.ndim)])
            shape[i] *= shape.pop(i + 1)
            scale = L.reshape(scale, shape)
    return scale


def _scaled_dot_impl(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                     preferred_element_type=None):
    """``(lhs * lhs_scale) @ (rhs * rhs_scale)`` in bfloat16, as jax's decomposition."""
    (lc, rc), _ = dimension_numbers
    bf16 = np.dtype("bfloat16")

    def scaled(x, s, contracting):
        s = _scale_broadcast(s, x.shape, contracting)
        return L.mul(L.convert_element_type(x, bf16), L.convert_element_type(s, bf16))
    return L.dot_general(scaled(lhs, lhs_scale, lc), scaled(rhs, rhs_scale, rc),
                         dimension_numbers, preferred_element_type=preferred_element_type)


def _scaled_dot(ctx, *args, dimension_numbers, preferred_element_type=None):
    """``composite "xla.scaled_dot"`` whose decomposition is jax's (XLA may substitute a
    native scaled dot; on CPU it calls the decomposition)."""
    params = dict(dimension_numbers=dimension_numbers,
                  preferred_element_type=preferred_element_type)
    fn = ctx.module_context.module.add_function(
        "xla.scaled_dot", [a.type for a in args], [aval_to_ir_type(ctx.avals_out[0])],
        visibility="private")
    fb = fn.builder()
    outs = lower_fun(_scaled_dot_impl)(ctx.replace(builder=fb), *fn.arguments, **params)
    fb.return_(*[v for out in outs for v in (out if isinstance(out, (list, tuple)) else [out])])
    attrs = {k: attribute(v) for k, v in params.items() if v is not None}
    return list(as_results(ctx.builder.composite(
        "xla.scaled_dot", args, fn, composite_attributes=DictionaryAttr(attrs), version=0)))


register_lowering("scaled_dot", _scaled_dot)


# -- custom calls --------------------------------------------------------------------------------

def _layouts(avals, given):
    if given is None:
        given = [None] * len(avals)
    return [IndexLayout(range(len(a.shape) - 1, -1, -1) if lay is None else lay)
            for a, lay in zip(avals, given)]


def _ffi_call(ctx, *args, target_name, has_side_effect=False, input_layouts=None,
              output_layouts=None, input_output_aliases=(), custom_call_api_version=4,
              legacy_backend_config=None, attributes=(), **_):
    """A ``custom_call`` to ``target_name``; API 4 takes the attributes as a dictionary,
    older APIs the legacy string."""
    multi = len(ctx.avals_out) > 1
    aliases = [OutputOperandAlias(output_tuple_indices=(o,) if multi else (),
                                  operand_index=i, operand_tuple_indices=())
               for i, o in input_output_aliases]
    if custom_call_api_version == 4:
        config = DictionaryAttr({k: attribute(v) for k, v in attributes})
    else:
        config = legacy_backend_config or ""
    outs = ctx.builder.custom_call(
        target_name, list(args), [aval_to_ir_type(a) for a in ctx.avals_out],
        api_version=custom_call_api_version, backend_config=config,
        has_side_effect=has_side_effect or None,
        operand_layouts=_layouts(ctx.avals_in, input_layouts),
        result_layouts=_layouts(ctx.avals_out, output_layouts),
        output_operand_aliases=aliases or None)
    return list(as_results(outs))


register_lowering("ffi_call", _ffi_call)


def _shape_assertion(ctx, assert_what, *error_inputs, error_message):
    ctx.builder.custom_call("shape_assertion", [assert_what, *error_inputs], [],
                            has_side_effect=True, error_message=StringAttr(error_message))
    return []


register_lowering("shape_assertion", _shape_assertion)
