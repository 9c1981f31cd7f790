"""Quantization: ``uniform_quantize`` and ``uniform_dequantize``, the two ops that move values
between float tensors and quantized ones (StableHLO spec, "uniform_quantize" and
"uniform_dequantize"). Which other ops take quantized tensors, and how, is
``mhlo_ir.quant_checks``.
"""

from __future__ import annotations

from .. import op_forms as pf
from ..ir import Value
from ..quant import QuantizedType
from ..types import TensorType, tensor
from .construct import memo, no_make, tensor_type
from .spec import OpSpec, builder_method, fail, register, tensor_operand


def _quantize_check(op, types, attributes, results, regions):
    # (C1) shape(operand) = shape(result); (C2) expressed_type(result) = operand's float type,
    # or the operand is quantized itself (requantization).
    x = tensor_operand(op, "operand", types[0])
    r = results[0]
    if not isinstance(r, TensorType) or r.element_type.__class__ is not QuantizedType:
        fail(op, f"result must be a tensor of a quantized type (!quant.uniform<...>), got {r}")
    if r.shape != x.shape:
        fail(op, f"result must have the operand's shape {list(x.shape)}, got {r}")
    q = r.element_type
    et = x.element_type
    if et.__class__ is QuantizedType:
        if et.expressed is not q.expressed:
            fail(op, f"requantizes {et.expressed.name} values into a type expressing "
                     f"{q.expressed.name}: operand {x}, result {r}")
        if et.axis is not None and q.axis is not None and et.axis != q.axis:
            fail(op, f"cannot change the quantization axis ({et.axis} -> {q.axis}): operand "
                     f"{x}, result {r}")
    elif et is not q.expressed:
        fail(op, f"operand must have the result's expressed type {q.expressed.name} (or be "
                 f"quantized), got {x}")


def _dequantize(op, types, attributes):
    # (C1) shape(result) = shape(operand); (C2) element_type(result) = expressed_type(operand)
    x = tensor_operand(op, "operand", types[0])
    q = x.element_type
    if q.__class__ is not QuantizedType:
        fail(op, f"operand must be a tensor of a quantized type (!quant.uniform<...>), got {x}")
    return (tensor(x.shape, q.expressed),)


register(OpSpec("uniform_quantize", ("operand",), check=_quantize_check,
                pretty=pf.ELEMENTWISE,
                doc="Quantize floats (or requantize) into the result's quantized type.",
                n_results=1))
register(OpSpec("uniform_dequantize", ("operand",), infer=_dequantize,
                pretty=pf.ELEMENTWISE,
                doc="The real numbers a quantized tensor stands for, in its expressed type."))


@builder_method
def uniform_quantize(b, x: Value, element_type: QuantizedType, *, location=None) -> Value:
    """``x`` (floats, or quantized values to requantize) as ``element_type``, a
    ``mhlo_ir.quant.quantized(...)`` type: ``clamp(round_nearest_even(x / scale +
    zero_point))`` in the storage range."""
    t = tensor_type(x, "uniform_quantize")
    if element_type.__class__ is not QuantizedType:
        fail("uniform_quantize", f"element_type must be a quantized type "
                                 f"(mhlo_ir.quant.quantized(...)), got {element_type!r:.60}")
    try:
        result = tensor(t.shape, element_type)
    except ValueError as e:
        fail("uniform_quantize", f"result type: {e}")
    return b.create("uniform_quantize", (x,), result_types=(result,), location=location).results[0]


@builder_method
def uniform_dequantize(b, x: Value, *, location=None) -> Value:
    """The values quantized tensor ``x`` stands for: ``(x - zero_point) * scale`` in its
    expressed type."""
    t = tensor_type(x, "uniform_dequantize")
    return memo(b, ("uniform_dequantize", t), "uniform_dequantize", (x,), location, no_make)
