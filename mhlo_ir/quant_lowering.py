"""Quantized programs as integer and float math: what XLA can run.

``lower_quantized(module)`` returns a new module in which no quantized type is left: stored
integers travel as their storage type, and every op on quantized values becomes the arithmetic
that defines it. It follows StableHLO's own lowering, ``stablehlo-legalize-quant-to-math``
(``stablehlo/transforms/StablehloLegalizeQuantToMath.cpp``, the pass StableHLO's reference
interpreter runs before it interprets a quantized program), pattern for pattern and constant
for constant, so that a program gives the numbers StableHLO's interpreter gives (its test
corpus holds the expected values):

- ``uniform_quantize`` of f32: ``convert(round_nearest_even(clamp(x / scale + zp)))`` with the
  scale, zero point and storage bounds as f32 constants; of a quantized value (requantize):
  ``x * (s_in / s_out) + (zp_out - zp_in * s_in / s_out)``, the merged constants computed in
  double and rounded to f32, clamped (below 32 bits), rounded to even;
- ``uniform_dequantize``: ``convert(convert(x, i32) - zp, f32) * scale``;
- ``add`` of per-tensor types: both operands requantized to the result's parameters in i32,
  ``l + r - zp``, clamped to the storage range;
- ``dot``/``dot_general``/``convolution`` of quantized lhs and rhs: the integer product in
  i32, the zero points' contribution subtracted (sums of the other operand over the
  contracting dimensions), scaled by ``s_l * s_r / s_res`` in f32 unless that is within 0.001
  of 1; convolutions only as StableHLO's lowering takes them (rhs zero point 0, NHWC/NCHW or
  NDHWC/NCDHW layouts, no lhs dilation), with the lhs padded by its zero point; hybrid
  (float lhs, quantized rhs) ops dequantize the rhs behind an ``optimization_barrier``;
- ops that move stored integers (transpose, reshape, gather, pad, slice, concatenate, ...;
  ``maximum``/``minimum``/``select`` of one type) on the storage type unchanged;
- every other op on quantized values (and the dot-like and add cases above that the patterns
  do not take): ``quantize(op(dequantize(x)))`` in f32.

Where it departs from the C++ pass, on purpose: values of any type pass through the ops that
only carry them (calls, loops, tuples, optimization_barrier, custom_call, collectives that
move values), which the pass refuses; the NCDHW integer convolution contracts the
kernel's input features, where the pass contracts its output features (see ``_CONV_LAYOUTS``);
and three faults of its integer dot products, where the spec decides (found 2026-12-07, each
wrong numbers from the pass): the result is clamped to its storage range before the final
convert (the pass wrapped an i8 result of 20000 to 32), rhs batching dimensions listed out
of order broadcast the zero-point sums to the right batch (``_bcast_contribution``), and a
dot or dot_general with a per-axis rhs and result takes the integer path only as the pass
takes such convolutions (zero points 0, one scale ratio: ``_uniform_per_axis``), else
dequantize-compute-quantize (the pass used the first scale for every column and dropped the
zero points).
Storage 32 bits wide (i32, ui32) departs further, where the pass's i32 and f32 arithmetic
gives other numbers than the spec (found 2026-12-07): differences with zero points, and
``add``'s sums, are computed in i64 (the pass wrapped 2147483000 + 2147483000 to -1296 and
read ui32 4294967295 as -1); a zero point of 32-bit storage is subtracted before the
conversion to f32 rounds the stored value (16777217 less 1 gave 16777215); and a narrowed
32-bit range (``i32<-100:100>``) is clamped to, as narrower storage is. Scales whose f32
value (or, for a scale divided by, its reciprocal) is subnormal are an error: XLA flushes
subnormals to zero, and would quantize everything to the zero point. What stays the pass's:
rounding through merged scales (``x * (s_in / s_out)``, not ``x * s_in / s_out``), each
``add`` operand rounded before the sum, the 0.001 window in which a dot's rescale is
skipped, and integer dot products accumulated in i32 (a product past 2**31 wraps).
Like the pass, it quantizes from and dequantizes to f32 only (requantization, add and
dot-like products are f32 or integer math whatever the expressed type), and anything it
cannot lower is an error naming the op, not a program that computes otherwise. The input
module is not changed.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .builder import Builder
from .errors import OpBuildError
from .ir import Module, make_operation, walk
from .quant import (_INTERNED, QuantizedType, expressed_tensor, is_quantized, storage_range,
                    storage_tensor)
from .rewrite import Rewriter, rewrite_module
from .types import FunctionType, TupleType, tensor

__all__ = ["lower_quantized", "has_quantized"]

_F32, _I32, _I64 = dtypes.f32, dtypes.i32, dtypes.i64


def _wide(*qs):
    """The integer type in which stored values of ``qs`` and their differences with zero
    points are exact: i32 (StableHLO's) below 32 bits; i64 for i32 and ui32 storage, whose
    values and zero points an i32 difference would wrap (and ui32's read as negative)."""
    return _I64 if any(q.storage.bits == 32 for q in qs) else _I32


def _narrowed(q, et) -> bool:
    """Whether ``q``'s storage range is narrower than integer type ``et`` holds."""
    return (q.storage_min, q.storage_max) != storage_range(et)


# f32's smallest normal magnitude: XLA flushes smaller ones (subnormals) to zero.
_F32_TINY = float(np.finfo(np.float32).tiny)


def _f32_scale(value: float, q: QuantizedType, op: str, what: str = "scale",
               divides: bool = False) -> np.float32:
    """``value`` (a scale, or a ratio of scales) as the f32 constant the lowering computes
    with; an error where XLA would compute with something else: 0, inf or a subnormal in f32
    (XLA flushes subnormals to zero: everything would quantize to the zero point, or
    dequantize to 0), or, for a scale the lowering divides by (``divides``), one whose
    reciprocal is subnormal (XLA multiplies by the reciprocal instead of dividing)."""
    f = np.float32(value)
    if not np.isfinite(f) or abs(float(f)) < _F32_TINY:
        problem = f"is {float(f)!r} in f32, outside f32's normal range"
    elif divides and abs(1.0 / float(f)) < _F32_TINY:
        problem = "has a reciprocal outside f32's normal range (XLA multiplies by it)"
    else:
        return f
    raise OpBuildError(
        f"'{op}': {what} {value!r} of {q.name} {problem}: XLA flushes subnormal f32 values "
        f"to zero, so the lowered program would not compute this type's values (the "
        f"quantization lowering computes in f32, as StableHLO's does; it takes scales from "
        f"{_F32_TINY!r} to {1 / _F32_TINY!r})")


def _q(t):
    et = getattr(t, "element_type", None)
    return et if et.__class__ is QuantizedType else None


def _lower_type(t):
    if isinstance(t, FunctionType):
        return FunctionType([_lower_type(x) for x in t.inputs],
                            [_lower_type(x) for x in t.results])
    if isinstance(t, TupleType):
        return TupleType([_lower_type(x) for x in t.types])
    return storage_tensor(t)


def has_quantized(module) -> bool:
    """Whether any function signature, operand or result of ``module`` is quantized."""
    if not _INTERNED:  # no quantized type was ever made in this process: none can be here
        return False
    q = is_quantized
    for fn in module.functions:
        if any(q(t) for t in fn.arg_types) or any(q(t) for t in fn.result_types or ()):
            return True
    for _, op in walk(module):
        if any(q(v.type) for v in op.operands) or any(q(r.type) for r in op.results):
            return True
    return False


def lower_quantized(module: Module) -> Module:
    """A new module computing what ``module`` computes, with no quantized type left (see the
    module docstring). Raises OpBuildError for what cannot be lowered, naming the op."""
    return rewrite_module(module, _Lowering)


class _Lowering(Rewriter):
    """One function's rewrite: quantized types become their storage types, ops on quantized
    values the math that defines them."""

    def type(self, t):
        return _lower_type(t)

    # -- dispatch -------------------------------------------------------------------------

    def op(self, b: Builder, op) -> tuple:
        name = op.spec.name
        qin = [_q(v.type) for v in op.operands]
        qout = [_q(r.type) for r in op.results]
        if not any(qin) and not any(qout):
            return self.copy(b, op)
        x = [self.values[v] for v in op.operands]
        if name == "uniform_quantize":
            return (self.quantize_op(b, op, x[0], qin[0], op.results[0].type),)
        if name == "uniform_dequantize":
            return (dequantize(b, x[0], qin[0]),)
        if name == "add" and all(qin) and all(qout) and \
                not any(q.axis is not None for q in qin + qout):
            return (_add(b, x[0], x[1], qin[0], qin[1], qout[0], op.results[0].type),)
        if name == "add" and all(qin) and all(qout) and qin[0] is qin[1] is qout[0] and \
                qout[0].storage.bits == 32:
            return (_add_per_axis(b, x[0], x[1], qout[0]),)
        if op.spec.quantized == "dot_like":
            lowered = self.dot_like(b, op, x, qin, qout)
            if lowered is not None:
                return lowered
            return self.qdq(b, op, x, qin)
        if name in ("maximum", "minimum", "select"):
            quantized = [q for q in qin + qout if q is not None]
            if all(q is quantized[0] for q in quantized) and quantized[0].axis is None:
                return self.copy(b, op)
            return self.qdq(b, op, x, qin)
        if op.spec.quantized in ("storage", "carrier") or op.spec.chapter == "opaque":
            return self.copy(b, op)
        return self.qdq(b, op, x, qin)

    def quantize_op(self, b, op, x, qin, result_type):
        q = result_type.element_type
        if qin is None:  # from floats of the expressed type: f32 only, as StableHLO's
            _f32_only(op.spec.name, q)
            return quantize(b, x, q)
        if qin.axis is not None and q.axis is not None and qin.axis != q.axis:
            raise OpBuildError("'uniform_quantize' cannot requantize while changing the "
                               "quantization axis")
        return requantize(b, x, qin, q, q.storage)

    def qdq(self, b, op, x, qin) -> tuple:
        """``quantize(op(dequantize(x)))``: StableHLO's fallback for every quantized op."""
        name = op.spec.name
        operands = [dequantize(b, v, q, name) if q is not None else v for v, q in zip(x, qin)]
        types = [expressed_tensor(r.type) for r in op.results]
        for r in op.results:
            if _q(r.type) is not None:
                _f32_only(op.spec.name, _q(r.type))
        regions = tuple(self.region(r) for r in op.regions)
        new = make_operation(op.spec, tuple(operands), types, op.attributes, regions,
                             op.location, b.block)
        b.block.operations.append(new)
        return tuple(quantize(b, v, _q(r.type), name) if _q(r.type) is not None else v
                     for v, r in zip(new.results, op.results))

    def dot_like(self, b, op, x, qin, qout):
        """The integer (or hybrid) lowering of a dot-like op, or None where StableHLO's
        patterns do not apply (then the op is dequantized, computed and quantized)."""
        name = op.spec.name
        ql, qr = qin[0], qin[1]
        qres = qout[0]
        if ql is None and qr is not None and qres is None:
            return (_hybrid(b, op, x[0], x[1], qr),)
        if not (ql is not None and ql.axis is None and qr is not None and qres is not None
                and (qr.axis is None) == (qres.axis is None)):
            return None
        if name == "convolution":
            dims = _conv_dims(op, qr, qres)
            if dims is None:
                return None
        elif not _uniform_per_axis(qr, qres):
            return None  # (a departure from the pass: it used scales[0], zero points 0)
        elif name == "dot":  # (a rank-1 lhs contracts its only dimension)
            dims = ((), (), (x[0].type.rank - 1,), (), (), (0,))
        else:
            dn = op.attr("dot_dimension_numbers")
            dims = (tuple(dn.lhs_batching_dimensions), (), tuple(dn.lhs_contracting_dimensions),
                    tuple(dn.rhs_batching_dimensions), (), tuple(dn.rhs_contracting_dimensions))
        return (_dot_like(b, op, x[0], x[1], ql, qr, qres, dims),)


def _uniform_per_axis(qr, qres) -> bool:
    """Whether a per-axis rhs and result fit the integer product the pass writes, which
    reads one scale and no zero point of them: zero points all 0 and one ratio of result to
    rhs scale. The pass asks it of a convolution (``_conv_dims``) but takes any per-axis dot
    or dot_general, whose numbers are then wrong (the first scale for every column, the zero
    points dropped); such dots are dequantized, computed and quantized here instead."""
    if qr.axis is None:
        return True
    if any(z != 0 for z in qr.zero_points + qres.zero_points):
        return False
    ratios = [rs / ks for rs, ks in zip(qres.scales, qr.scales)]
    return all(abs((r - ratios[0]) / ratios[0]) <= 0.001 for r in ratios)


def _f32_only(op: str, q: QuantizedType) -> None:
    if q.expressed is not _F32:
        raise OpBuildError(f"'{op}': the quantization lowering handles f32 expressed types only "
                           f"(as StableHLO's does), got {q.name}")


# -- constants and broadcasts --------------------------------------------------------------

def _scalar(b, value, et):
    return b.constant(np.array(value, dtype=et.dtype))


def _bcast(b, c, shape, dims=()):
    """Scalar (or per-axis vector, along ``dims``) constant ``c`` at ``shape``: what
    StableHLO's chlo broadcasting ops become."""
    return b.broadcast_in_dim(c, shape, dims)


def _params(b, q: QuantizedType, zet, op: str, divides: bool = False):
    """(scales, zero points, broadcast dims) as constants: f32 scales (checked by
    ``_f32_scale``), zero points of element type ``zet`` (f32, or the integer type
    ``_wide`` picks), scalars for per-tensor types, vectors along the axis for per-axis
    ones."""
    scales = [_f32_scale(s, q, op, divides=divides) for s in q.scales]
    if q.axis is None:
        return (_scalar(b, scales[0], _F32), _scalar(b, q.zero_points[0], zet), ())
    return (b.constant(np.array(scales, np.float32)),
            b.constant(np.array(q.zero_points, zet.dtype)), (q.axis,))


def _binary(b, fn, x, c, dims=()):
    return fn(x, _bcast(b, c, x.type.shape, dims))


def quantize(b, x, q: QuantizedType, op: str = "uniform_quantize"):
    """f32 ``x`` quantized as ``q``, StableHLO's way."""
    scales, zps, dims = _params(b, q, _F32, op, divides=True)
    r = _binary(b, b.divide, x, scales, dims)
    r = _binary(b, b.add, r, zps, dims)
    r = b.clamp(_scalar(b, np.float32(q.storage_min), _F32), r,
                _scalar(b, np.float32(q.storage_max), _F32))
    r = b.round_nearest_even(r)
    return _exact_bounds(b, b.convert(r, q.storage), q)


def _exact_bounds(b, x, q: QuantizedType):
    """Stored ``x`` clamped again in its integer type where a narrowed range's bound does not
    survive f32 (``i32<-16777219:16777219>``: f32's clamp rounds the bounds outward, and
    stored 16777220)."""
    lo, hi = q.storage_min, q.storage_max
    if not _narrowed(q, q.storage) or (int(np.float32(lo)) == lo and int(np.float32(hi)) == hi):
        return x  # (a full range: the convert saturates into it)
    return b.clamp(_scalar(b, lo, q.storage), x, _scalar(b, hi, q.storage))


def dequantize(b, x, q: QuantizedType, op: str = "uniform_dequantize"):
    """The f32 values stored ``x`` (of type ``q``) stands for: ``(x - zp) * scale``, the
    difference exact in integers (i32 as StableHLO's; i64 for 32-bit storage, where an i32
    difference wraps and ui32 values read as negative), converted to f32."""
    _f32_only(op, q)
    wide = _wide(q)
    scales, zps, dims = _params(b, q, wide, op)
    r = b.convert(x, wide)
    r = _binary(b, b.subtract, r, zps, dims)
    r = b.convert(r, _F32)
    return _binary(b, b.multiply, r, scales, dims)


def _merged(qin: QuantizedType, qout: QuantizedType):
    """Per channel: (merged scale, merged zero point) in double, as StableHLO computes them."""
    if qin.axis is None and qout.axis is None:
        s = qin.scales[0] / qout.scales[0]
        return [s], [qout.zero_points[0] - qin.zero_points[0] * s], None
    n = len((qout if qout.axis is not None else qin).scales)
    axis = qout.axis if qout.axis is not None else qin.axis
    scales, zps = [], []
    for i in range(n):
        s_in = qin.scales[i] if qin.axis is not None else qin.scales[0]
        s_out = qout.scales[i] if qout.axis is not None else qout.scales[0]
        z_in = qin.zero_points[i] if qin.axis is not None else qin.zero_points[0]
        z_out = qout.zero_points[i] if qout.axis is not None else qout.zero_points[0]
        s = s_in / s_out
        scales.append(s)
        zps.append(z_out - z_in * s)
    return scales, zps, axis


def requantize(b, x, qin: QuantizedType, qout: QuantizedType, out_et,
               op: str = "uniform_quantize"):
    """Stored ``x`` of ``qin`` as stored values of ``qout`` in element type ``out_et``:
    ``qout``'s storage (clamped to its storage range), or a wider integer type for the sum
    of an ``add`` (unclamped: the sum is clamped).

    As StableHLO's pass: ``x * (s_in / s_out) + (zp_out - zp_in * s_in / s_out)`` in f32.
    Where ``qin``'s storage is 32 bits wide (a value past 2**24 does not survive f32) and its
    zero point is not 0, the zero point is subtracted in i64 first, as the spec's dequantize
    subtracts it before converting: ``(x - zp_in) * (s_in / s_out) + zp_out``."""
    if qin is qout:
        return b.convert(x, out_et)
    scales, zps, axis = _merged(qin, qout)
    if qin.storage.bits == 32 and any(z != 0 for z in qin.zero_points):
        zin = (_scalar(b, qin.zero_points[0], _I64) if qin.axis is None else
               b.constant(np.array(qin.zero_points, np.int64)))
        r = b.convert(_binary(b, b.subtract, b.convert(x, _I64), zin,
                              () if qin.axis is None else (qin.axis,)), _F32)
        zps = [qout.zero_points[0 if qout.axis is None else i] for i in range(len(zps))]
    else:
        r = b.convert(x, _F32)  # f32 math whatever the expressed type, as StableHLO's
    scales = [_f32_scale(s, qout, op, "scale ratio (input scale / result scale)")
              for s in scales]
    if axis is None:
        r = _binary(b, b.multiply, r, _scalar(b, scales[0], _F32))
        if zps[0] != 0:
            r = _binary(b, b.add, r, _scalar(b, np.float32(zps[0]), _F32))
    else:
        r = _binary(b, b.multiply, r, b.constant(np.array(scales, np.float32)), (axis,))
        if any(z != 0 for z in zps):
            r = _binary(b, b.add, r, b.constant(np.array(zps, np.float32)), (axis,))
    final = out_et is qout.storage and (out_et.bits < 32 or _narrowed(qout, out_et))
    if final:
        # (a full 32-bit range's bounds round to +-2**31 in f32: XLA's convert saturates)
        r = b.clamp(_scalar(b, np.float32(qout.storage_min), _F32), r,
                    _scalar(b, np.float32(qout.storage_max), _F32))
    r = b.round_nearest_even(r)
    r = b.convert(r, out_et)
    return _exact_bounds(b, r, qout) if final else r


def _add(b, lhs, rhs, ql, qr, qres, result_type):
    """StableHLO's: both operands requantized to the result's parameters, ``l + r - zp``,
    clamped to the storage range. In i32 as the pass computes it, unless a requantized
    operand or the sum could pass i32's range (32-bit storage, or large scale ratios):
    then in i64, where the pass wrapped (2147483000 + 2147483000 stored -1296, the spec
    2147483647) and skipped the clamp of a narrowed 32-bit range."""
    wide = _I32
    for q in (ql, qr):
        scales, zps, _ = _merged(q, qres)
        reach = max(abs(q.storage_min), abs(q.storage_max)) * max(scales) + \
            max(abs(z) for z in zps) + abs(qres.zero_points[0])
        if reach >= 2**30 or qres.storage.bits == 32:
            wide = _I64
    lhs = requantize(b, lhs, ql, qres, wide, "add")
    rhs = requantize(b, rhs, qr, qres, wide, "add")
    s = b.subtract(b.add(lhs, rhs), _bcast(b, _scalar(b, qres.zero_points[0], wide),
                                           lhs.type.shape))
    s = b.clamp(_scalar(b, qres.storage_min, wide), s, _scalar(b, qres.storage_max, wide))
    return b.convert(s, qres.storage)


def _add_per_axis(b, lhs, rhs, q):
    """Per-axis ``add`` of one 32-bit type (the pass's pattern): ``l + r - zp`` per channel,
    in i64 and clamped to the storage range (the pass adds in the storage type, which wraps,
    and leaves a narrowed range unclamped)."""
    s = b.add(b.convert(lhs, _I64), b.convert(rhs, _I64))
    if any(z != 0 for z in q.zero_points):
        s = b.subtract(s, _bcast(b, b.constant(np.array(q.zero_points, np.int64)),
                                 s.type.shape, (q.axis,)))
    s = b.clamp(_scalar(b, q.storage_min, _I64), s, _scalar(b, q.storage_max, _I64))
    return b.convert(s, q.storage)


# -- dot-like ops --------------------------------------------------------------------------

def _hybrid(b, op, lhs, rhs, qr):
    """Weight-only quantization: float lhs times the dequantized rhs, as StableHLO lowers it
    (behind an optimization_barrier, so that XLA does not fold the dequantized weights)."""
    _f32_only(op.spec.name, qr)
    rhs = b.optimization_barrier(rhs)
    if qr.storage.bits == 32 and any(z != 0 for z in qr.zero_points):
        # (the pass subtracts the zero point in f32, where a 32-bit value past 2**24 is
        # rounded first: stored 16777217 less 1 gave 16777215, the spec 16777216)
        r = dequantize(b, rhs, qr, op.spec.name)
    else:
        scales, zps, dims = _params(b, qr, _F32, op.spec.name)
        r = b.convert(rhs, _F32)
        if any(z != 0 for z in qr.zero_points):
            r = _binary(b, b.subtract, r, zps, dims)
        r = _binary(b, b.multiply, r, scales, dims)
    return b.create(op.spec.name, (lhs, r), op.attributes,
                    result_types=[op.results[0].type]).results[0]


_CONV_LAYOUTS = {
    # (input b, f, spatial; kernel i, o, spatial; output b, f, spatial) -> DotLike dims
    (0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2)): ((0,), (1, 2), (3,), (), (0, 1), (2,)),
    (0, 1, (2, 3), 1, 0, (2, 3), 0, 1, (2, 3)): ((0,), (2, 3), (1,), (), (2, 3), (1,)),
    (0, 4, (1, 2, 3), 3, 4, (0, 1, 2), 0, 4, (1, 2, 3)):
        ((0,), (1, 2, 3), (4,), (), (0, 1, 2), (3,)),
    # NOTE: StableHLO's pass (isConvNCDHW) matches this kernel layout [i, o, 0, 1, 2] but
    # declares rhs contracting dimension 1, the output features: its lhs zero-point share
    # then sums the kernel over the wrong dimension (wrong numbers, or an invalid broadcast
    # when the feature counts differ). Here the input features, dimension 0, as the spec means.
    (0, 1, (2, 3, 4), 0, 1, (2, 3, 4), 0, 1, (2, 3, 4)):
        ((0,), (2, 3, 4), (1,), (), (2, 3, 4), (0,)),
}


def _conv_dims(op, qr, qres):
    """StableHLO's conditions for the integer convolution (verifyAndConstructDims), and its
    dimension roles; None when they do not hold."""
    if qr.axis is None:
        if qr.zero_points[0] != 0:
            return None
    elif qr.axis != op.operands[1].type.rank - 1 or not _uniform_per_axis(qr, qres):
        return None
    dil = op.attr("lhs_dilation")
    if dil is not None and any(d != 1 for d in dil):
        return None
    dn = op.attr("dimension_numbers")
    key = (dn.input_batch_dimension, dn.input_feature_dimension,
           tuple(dn.input_spatial_dimensions), dn.kernel_input_feature_dimension,
           dn.kernel_output_feature_dimension, tuple(dn.kernel_spatial_dimensions),
           dn.output_batch_dimension, dn.output_feature_dimension,
           tuple(dn.output_spatial_dimensions))
    return _CONV_LAYOUTS.get(key)


def _padding_pairs(op):
    pad = op.attr("padding")
    if pad is None:
        return None
    return [tuple(int(v) for v in row) for row in pad.to_array().reshape(-1, 2)]


def _kernel(b, op, lhs, rhs, ql, dims):
    """The integer product: dot_general/dot as is with an i32 result; a convolution with its
    lhs padded by the lhs zero point instead of zeros."""
    res_i32 = tensor(op.results[0].type.shape, _I32)
    attrs = dict(op.attributes or {})
    name = op.spec.name
    if name == "dot":
        name = "dot_general"
        attrs = {k: v for k, v in attrs.items() if k == "precision_config"}
        attrs["dot_dimension_numbers"] = {"lhs_contracting_dimensions": dims[2],
                                          "rhs_contracting_dimensions": (0,)}
    if name == "convolution":
        pads = _padding_pairs(op)
        if pads is not None and any(p != 0 for row in pads for p in row):
            rank = lhs.type.rank
            low, high = [0] * rank, [0] * rank
            for i, d in enumerate(dims[1]):
                low[d], high[d] = pads[i]
            # StableHLO pads with the zero point as an i8 constant (its lowering assumes i8)
            zp = b.constant(np.array(ql.zero_points[0], ql.storage.dtype))
            lhs = b.pad(lhs, zp, low, high, [0] * rank)
            attrs["padding"] = [(0, 0)] * (rank - 2)
    return lhs, b.create(name, (lhs, rhs), attrs, result_types=[res_i32]).results[0]


def _zp_partial(b, t, other_zp, reduction_dims):
    """Sum of ``t`` over ``reduction_dims`` in i32, times the other operand's zero point."""
    t = b.convert(t, _I32)
    s = b.reduce([t], [_scalar(b, 0, _I32)], list(reduction_dims),
                 lambda rb, x, y: rb.add(x, y))
    return b.multiply(s, _bcast(b, _scalar(b, other_zp, _I32), s.type.shape))


def _bcast_contribution(b, c, reduction_dims, batching_dims, start, out_shape):
    """``c`` (an operand summed over ``reduction_dims``) broadcast to the result: its batch
    dimensions to the result's in the order ``batching_dims`` lists them (the pass numbers
    them in the operand's order, wrong for rhs_batching_dimensions = [1, 0]), the others
    from ``start`` on."""
    dims = []
    other_idx = start
    original = 0
    for _ in range(c.type.rank):
        while original in reduction_dims:
            original += 1
        if original in batching_dims:
            dims.append(list(batching_dims).index(original))
        else:
            dims.append(other_idx)
            other_idx += 1
        original += 1
    return b.broadcast_in_dim(c, out_shape, dims)


def _zp_offset(b, lhs, rhs, lhs_zp, rhs_zp, out_shape, dims):
    """What the zero points add to the integer product: ``rhs_zp`` times the lhs summed over
    its contracting (and spatial) dimensions, ``lhs_zp`` times the rhs summed likewise, less
    ``lhs_zp * rhs_zp`` per product term, broadcast to the result (None when both are 0)."""
    lb, ls, lc, rb_, rs, rc = dims
    result = None
    if rhs_zp != 0:
        red = tuple(ls) + tuple(lc)
        c = _zp_partial(b, lhs, rhs_zp, red)
        result = _bcast_contribution(b, c, red, lb, len(lb), out_shape)
    if lhs_zp != 0:
        red = tuple(rs) + tuple(rc)
        c = _zp_partial(b, rhs, lhs_zp, red)
        start = lc[0] if ls and rs else lhs.type.rank - len(lc)
        c = _bcast_contribution(b, c, red, rb_, start, out_shape)
        result = c if result is None else b.add(result, c)
    if lhs_zp != 0 and rhs_zp != 0:
        terms = 1
        for d in tuple(rs) + tuple(rc):
            terms *= rhs.type.shape[d]
        # int32 arithmetic, wrapping as StableHLO's C++ does
        v = int(np.array((lhs_zp * rhs_zp * terms) & 0xFFFFFFFF, np.uint32).astype(np.int32))
        result = b.subtract(result, _bcast(b, _scalar(b, v, _I32), out_shape))
    return result


def _dot_like(b, op, lhs, rhs, ql, qr, qres, dims):
    lhs, res = _kernel(b, op, lhs, rhs, ql, dims)
    shape = res.type.shape
    # (only dot may have a rhs zero point: dot_general's C15 and the convolution conditions
    # above rule it out for the others)
    offset = _zp_offset(b, lhs, rhs, ql.zero_points[0],
                        qr.zero_points[0] if qr.axis is None else 0, shape, dims)
    combined = ql.scales[0] * qr.scales[0] / qres.scales[0]
    if abs(combined - 1.0) > 0.001:
        c = _scalar(b, _f32_scale(combined, qres, op.spec.name,
                                  "scale ratio (lhs scale * rhs scale / result scale)"), _F32)
        res = b.convert(b.multiply(b.convert(res, _F32), _bcast(b, c, shape)), _I32)
        if offset is not None:
            offset = b.convert(b.multiply(b.convert(offset, _F32), _bcast(b, c, shape)), _I32)
    zp = _scalar(b, qres.zero_points[0] if qres.axis is None else 0, _I32)
    if offset is not None:
        zp = b.subtract(_bcast(b, zp, shape), offset)
    else:
        zp = _bcast(b, zp, shape)
    res = b.add(res, zp)
    # Saturated into the storage range (as far as the i32 sum reaches), as the spec's
    # quantize does (a departure: the pass converts as it is, so an i8 result of 20000
    # wrapped to 32 instead of 127; a u32 one of -2 to 4294967294 instead of 0).
    lo, hi = max(qres.storage_min, -2**31), min(qres.storage_max, 2**31 - 1)
    if (lo, hi) != (-2**31, 2**31 - 1):
        res = b.clamp(_bcast(b, _scalar(b, lo, _I32), shape), res,
                      _bcast(b, _scalar(b, hi, _I32), shape))
    return b.convert(res, qres.storage)
