"""Float attributes compare and hash by their bits (as MLIR uniques them): the printer keeps
attribute texts across prints keyed by the attribute, so 0.0 == -0.0 printed -0.0 as 0.0."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import dtypes
from mhlo_ir.attributes import DenseArrayAttr, FloatAttr


def _nan(bits: int) -> float:
    return float(np.array([bits], np.uint64).view(np.float64)[0])


def test_float_attributes_are_keyed_by_bits():
    assert FloatAttr(0.0, dtypes.f32) != FloatAttr(-0.0, dtypes.f32)
    assert FloatAttr(float("nan")) == FloatAttr(float("nan"))
    assert FloatAttr(_nan(0x7FF8000000000001), dtypes.f64) != \
        FloatAttr(_nan(0x7FF8000000000002), dtypes.f64)
    # In f32 both are the same NaN (the low payload bits do not survive), as in MLIR.
    assert FloatAttr(_nan(0x7FF8000000000001)) == FloatAttr(_nan(0x7FF8000000000002))
    assert hash(FloatAttr(1.5, dtypes.f64)) == hash(FloatAttr(np.float64(1.5), dtypes.f64))
    assert DenseArrayAttr((0.0,), dtypes.f32) != DenseArrayAttr((-0.0,), dtypes.f32)
    assert DenseArrayAttr((1, 2)) == DenseArrayAttr([1, 2])
    assert len({FloatAttr(0.0), FloatAttr(-0.0)}) == 2


def test_printing_zero_then_negative_zero():
    texts = []
    for v in (0.0, -0.0):
        m = hlo.Module("m", attributes={"my.x": FloatAttr(v, dtypes.f32),
                                        "my.y": DenseArrayAttr((v,), dtypes.f32)})
        texts.append(hlo.print_module(m))
    assert "my.x = 0.000000e+00 : f32" in texts[0] and "array<f32: 0.000000e+00>" in texts[0]
    assert "my.x = -0.000000e+00 : f32" in texts[1] and "array<f32: -0.000000e+00>" in texts[1]
