"""Cases for uniform_quantize and uniform_dequantize: jaxlib runs them through
mhlo_ir.quant_lowering (verify lowers quantized programs), against numpy models of StableHLO's
spec; a main returning a quantized tensor returns its stored integers."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.quant import quantized
from tests.mhlo_ir.ops.cases import case, module

Q = quantized(hlo.i8, hlo.f32, 0.25, -3)
Q2 = quantized(hlo.i8, hlo.f32, 0.5, 4)
PER_AXIS = quantized(hlo.ui8, hlo.f32, [0.5, 2.0], [10, 0], axis=0)
X = np.array([[-40.0, -1.3, 0.0, 0.125, 2.6, 100.0], [1.0, 3.0, -7.0, 9.5, 510.0, -2.0]],
             np.float32)


def stored(x, q):
    """spec.md's quantize in f32: round half to even of x / scale + zero point, clamped."""
    shape = (-1,) + (1,) * (x.ndim - 1) if q.axis == 0 else ()
    s = np.array(q.scales, np.float32).reshape(shape) if shape else np.float32(q.scales[0])
    z = np.array(q.zero_points, np.float32).reshape(shape) if shape else \
        np.float32(q.zero_points[0])
    return np.clip(np.round(x / s + z), q.storage_min, q.storage_max).astype(q.storage.dtype)


def values(q_x, q):
    shape = (-1,) + (1,) * (q_x.ndim - 1) if q.axis == 0 else ()
    s = np.array(q.scales, np.float32).reshape(shape) if shape else np.float32(q.scales[0])
    z = np.array(q.zero_points, np.int32).reshape(shape) if shape else np.int32(q.zero_points[0])
    return (q_x.astype(np.int32) - z).astype(np.float32) * s


@case("uniform_quantize", "per_tensor", reference=lambda x: [stored(x, Q)])
def _():
    return module([hlo.tensor(X.shape, hlo.f32)], lambda b, x: b.uniform_quantize(x, Q)), [X]


@case("uniform_quantize", "per_axis", reference=lambda x: [stored(x, PER_AXIS)])
def _():
    return module([hlo.tensor(X.shape, hlo.f32)],
                  lambda b, x: b.uniform_quantize(x, PER_AXIS)), [X]


# Requantizing values Q holds exactly into Q2 (twice the step): no value falls between steps
# of Q2 except at ties, which round to even.
@case("uniform_quantize", "requantize",
      reference=lambda x: [stored(values(stored(x, Q), Q), Q2)])
def _():
    return module([hlo.tensor(X.shape, hlo.f32)],
                  lambda b, x: b.uniform_quantize(b.uniform_quantize(x, Q), Q2)), [X]


@case("uniform_dequantize", "per_tensor", reference=lambda x: [values(stored(x, Q), Q)])
def _():
    return module([hlo.tensor(X.shape, hlo.f32)],
                  lambda b, x: b.uniform_dequantize(b.uniform_quantize(x, Q))), [X]


@case("uniform_dequantize", "per_axis",
      reference=lambda x: [values(stored(x, PER_AXIS), PER_AXIS)])
def _():
    return module([hlo.tensor(X.shape, hlo.f32)],
                  lambda b, x: b.uniform_dequantize(b.uniform_quantize(x, PER_AXIS))), [X]
