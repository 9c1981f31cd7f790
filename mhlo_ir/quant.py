"""Quantized element types: MLIR's ``!quant.uniform``, which StableHLO and MHLO tensors may hold.

A uniformly quantized value is an integer ``q`` of a *storage* type standing for the real number
``(q - zero_point) * scale`` of an *expressed* float type. Per-tensor types have one scale and
zero point; per-axis types one pair per index of a ``quantization_dimension`` of the tensor::

    !quant.uniform<i8:f32, 0.0039188104517319626:-128>
    !quant.uniform<i8<-127:127>:f32:1, {0.5,0.25:3}>

A ``QuantizedType`` is an ``ElementType`` (kind ``"quant"``, the storage type's numpy dtype and
width), so tensor types, signatures and the printer take it as they take ``i8``; the op table
accepts it only where StableHLO's spec does (``mhlo_ir.quant_checks``), and
``mhlo_ir.quant_lowering`` rewrites a quantized program into integer and float math, the form
XLA runs (jaxlib 0.10.2's MLIR cannot even read these types).

The text is MLIR's own (``mlir/lib/Dialect/Quant/IR/TypeParser.cpp``): storage ``iN``/``uN``
with ``<min:max>`` only when not the storage type's full range, scales printed as MLIR prints a
double, zero points only when non-zero, per-axis pairs comma-separated without spaces. The
constraints are StableHLO's (spec.md, "QuantizedTensorElementType"), checked when a type is
made, so a bad type never reaches the printer.
"""

from __future__ import annotations

import math

from . import dtypes
from .dtypes import ElementType
from .types import TupleType, tensor

__all__ = ["QuantizedType", "quantized", "is_quantized", "storage_tensor", "expressed_tensor",
           "storage_range", "parse_quantized"]

# storage types MLIR's quant dialect takes (1 to 32 bits; i1 is not an integer here)
_STORAGE = {(t.kind == "sint", t.bits): t for t in (
    dtypes.i2, dtypes.i4, dtypes.i8, dtypes.i16, dtypes.i32,
    dtypes.ui2, dtypes.ui4, dtypes.ui8, dtypes.ui16, dtypes.ui32)}
_EXPRESSED = (dtypes.bf16, dtypes.f16, dtypes.f32, dtypes.f64)

# (storage, min, max, expressed, scales, zero points, axis) -> the type. The key holds the
# exact values (scales are positive finite floats, so -0.0 and NaN cannot alias); setdefault
# keeps two threads from interning two objects. Unbounded on purpose, as TensorType's table
# and MLIR's context are: a type's identity is its equality (checks compare with ``is``), so
# a table emptied when full would give two equal types two objects.
_INTERNED: dict = {}


class QuantizedType(ElementType):
    """``!quant.uniform<...>``: a storage integer type, an expressed float type, and scales
    with zero points (one pair, or one per index of dimension ``axis`` for per-axis types).

    Interned like every element type: equal types are the same object. ``dtype`` and
    ``bits`` are the storage type's; ``kind`` is ``"quant"``, so that checks written for
    integers or floats refuse it unless they allow quantized tensors on purpose.
    """

    __slots__ = ("storage", "expressed", "storage_min", "storage_max", "scales",
                 "zero_points", "axis")

    @property
    def is_per_axis(self) -> bool:
        return self.axis is not None

    @property
    def scale(self) -> float:
        """The scale of a per-tensor type (an error for a per-axis one)."""
        self._per_tensor("scale")
        return self.scales[0]

    @property
    def zero_point(self) -> int:
        """The zero point of a per-tensor type (an error for a per-axis one)."""
        self._per_tensor("zero_point")
        return self.zero_points[0]

    def _per_tensor(self, what):
        if self.axis is not None:
            raise ValueError(f"{self.name} is quantized per axis: read scales/zero_points, not "
                             f"{what}")

    @property
    def baseline(self) -> tuple:
        """What StableHLO's ``baseline_element_type`` keeps: storage type and range,
        expressed type (and whether per axis); two types with equal baselines differ only
        in their scales, zero points or axis."""
        return (self.storage, self.storage_min, self.storage_max, self.expressed,
                self.axis is not None)

    def with_axis(self, axis: int) -> "QuantizedType":
        """The same per-axis type quantized along ``axis`` (transpose moves the axis)."""
        return quantized(self.storage, self.expressed, self.scales, self.zero_points,
                         axis=axis, storage_min=self.storage_min, storage_max=self.storage_max)

    def check_shape(self, shape: tuple) -> None:
        """Raise ValueError unless a tensor of ``shape`` can hold this type: a per-axis type's
        dimension must exist and have one scale per index (StableHLO's C12, C13)."""
        if self.axis is None:
            return
        if self.axis >= len(shape):
            raise ValueError(f"{self.name} is quantized along dimension {self.axis}, but the "
                             f"tensor has rank {len(shape)}")
        if shape[self.axis] != len(self.scales):
            raise ValueError(f"{self.name} has {len(self.scales)} scales, but dimension "
                             f"{self.axis} of the tensor has size {shape[self.axis]}")

    def __repr__(self):
        return f"mhlo_ir.quant.parse_quantized({self.name!r})"

    def __reduce__(self):
        # through the validating constructor: a pickle cannot intern a type quantized() refuses
        return (_unpickle, (self.storage, self.storage_min, self.storage_max, self.expressed,
                            self.scales, self.zero_points, self.axis))

    @staticmethod
    def parse(ts, dialect=None) -> "QuantizedType":
        """Reads ``!quant.uniform<...>`` from token stream ``ts``: the inverse of ``render``."""
        return read_quantized(ts)


def storage_range(storage: ElementType) -> tuple:
    """The full range ``(min, max)`` of integer type ``storage``."""
    if storage.kind == "sint":
        return -(1 << (storage.bits - 1)), (1 << (storage.bits - 1)) - 1
    return 0, (1 << storage.bits) - 1


def _scale_range(expressed: ElementType) -> tuple:
    """The scales ``expressed`` can hold: its smallest subnormal to its largest finite."""
    import ml_dtypes
    info = ml_dtypes.finfo(expressed.dtype)
    return float(info.smallest_subnormal), float(info.max)


def _unpickle(storage, smin, smax, expressed, scales, zero_points, axis) -> QuantizedType:
    return quantized(storage, expressed, scales if axis is not None else scales[0],
                     zero_points if axis is not None else zero_points[0], axis=axis,
                     storage_min=smin, storage_max=smax)


def _make(storage, smin, smax, expressed, scales, zero_points, axis) -> QuantizedType:
    key = (storage, smin, smax, expressed, scales, zero_points, axis)
    t = _INTERNED.get(key)
    if t is not None:
        return t
    from .floatfmt import format_float
    lo, hi = storage_range(storage)
    bounds = "" if (smin, smax) == (lo, hi) else f"<{smin}:{smax}>"
    params = [format_float(s, dtypes.f64) + (f":{z}" if z else "")
              for s, z in zip(scales, zero_points)]
    text = ("!quant.uniform<" + ("i" if storage.kind == "sint" else "u") + str(storage.bits)
            + bounds + ":" + expressed.name
            + ("" if axis is None else f":{axis}") + ", "
            + (params[0] if axis is None else "{" + ",".join(params) + "}") + ">")
    t = object.__new__(QuantizedType)
    ElementType.__init__(t, text, storage.dtype, "quant", storage.bits)
    t.storage, t.expressed, t.storage_min, t.storage_max = storage, expressed, smin, smax
    t.scales, t.zero_points, t.axis = scales, zero_points, axis
    return _INTERNED.setdefault(key, t)


def _int(v, what: str) -> int:
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{what} must be an integer, got {type(v).__name__} {v!r:.40}")
    return int(v.__index__())


def quantized(storage, expressed, scale, zero_point=0, *, axis: int | None = None,
              storage_min: int | None = None, storage_max: int | None = None) -> QuantizedType:
    """The uniformly quantized element type of ``storage`` integers standing for
    ``expressed`` floats: ``quantized(i8, f32, 0.5, -128)``; per axis, ``axis`` with one
    scale and zero point per index (``quantized(i8, f32, [0.5, 0.25], [0, 3], axis=1)``;
    ``zero_point`` may stay 0 for all). ``storage_min``/``storage_max`` narrow the storage
    range (``i8<-127:127>``).

    Raises ValueError or TypeError for what StableHLO refuses: a storage type that is not a
    2- to 32-bit integer, an expressed type that is not bf16, f16, f32 or f64, a scale that is
    not positive and finite, a zero point or range outside the storage type."""
    st = dtypes.from_numpy(storage)
    if st.kind not in ("sint", "uint") or (st.kind == "sint", st.bits) not in _STORAGE:
        raise ValueError(f"quantized storage type must be a 2- to 32-bit integer type (i2..i32, "
                         f"ui2..ui32), got {st.name}")
    ex = dtypes.from_numpy(expressed)
    if ex not in _EXPRESSED:
        raise ValueError(f"quantized expressed type must be bf16, f16, f32 or f64, got "
                         f"{ex.name}")
    if axis is None:
        scales, zps = (scale,), (zero_point,)
    else:
        axis = _int(axis, "quantization axis")
        if axis < 0:
            raise ValueError(f"quantization axis must be non-negative, got {axis}")
        if isinstance(scale, (str, bytes)) or not hasattr(scale, "__len__"):
            raise TypeError(f"a per-axis quantized type takes a sequence of scales, got "
                            f"{type(scale).__name__} {scale!r:.40}")
        scales = tuple(scale)
        # one zero point for every channel, or one each
        zps = (zero_point,) * len(scales) if hasattr(zero_point, "__index__") \
            else tuple(zero_point)
        if not scales:
            raise ValueError("a per-axis quantized type needs at least one scale")
        if len(zps) != len(scales):
            raise ValueError(f"{len(scales)} scales but {len(zps)} zero points")
    out_scales = []
    for s in scales:
        if isinstance(s, bool) or not isinstance(s, (int, float)) and \
                not hasattr(s, "__float__"):
            raise TypeError(f"quantization scale must be a number, got {type(s).__name__} "
                            f"{s!r:.40}")
        s = float(s)
        if not (s > 0 and math.isfinite(s)):
            raise ValueError(f"quantization scale must be positive and finite, got {s!r}")
        lo_s, hi_s = _scale_range(ex)
        if not lo_s <= s <= hi_s:
            # MLIR's quant verifier: "scale out of expressed type range"
            raise ValueError(f"quantization scale {s!r} is out of {ex.name}'s range "
                             f"[{lo_s!r}, {hi_s!r}]")
        out_scales.append(s)
    lo, hi = storage_range(st)
    smin = lo if storage_min is None else _int(storage_min, "storage_min")
    smax = hi if storage_max is None else _int(storage_max, "storage_max")
    if not lo <= smin < smax <= hi:
        raise ValueError(f"storage range [{smin}, {smax}] must be a non-empty range within "
                         f"{st.name}'s [{lo}, {hi}]")
    out_zps = []
    for z in zps:
        z = _int(z, "zero point")
        if not smin <= z <= smax:
            raise ValueError(f"zero point {z} is outside the storage range [{smin}, {smax}]")
        out_zps.append(z)
    return _make(st, smin, smax, ex, tuple(out_scales), tuple(out_zps), axis)


def is_quantized(t) -> bool:
    """Whether ``t`` (a type or element type) is or holds a quantized element type, tuples
    through their elements."""
    if getattr(t, "element_type", t).__class__ is QuantizedType:
        return True
    return t.__class__ is TupleType and any(map(is_quantized, t.types))


def storage_tensor(t):
    """``t`` with a quantized element type replaced by its storage type (else ``t``)."""
    et = getattr(t, "element_type", None)
    if et.__class__ is not QuantizedType:
        return t
    return tensor(t.shape, et.storage)


def expressed_tensor(t):
    """``t`` with a quantized element type replaced by its expressed type (else ``t``)."""
    et = getattr(t, "element_type", None)
    if et.__class__ is not QuantizedType:
        return t
    return tensor(t.shape, et.expressed)


# -- reading ------------------------------------------------------------------------------

def _storage_of(ts):
    tok = ts.peek()
    text = tok.text if tok.kind == "bare" else ""
    signed = text[:1] == "i"
    digits = text[1:]
    st = _STORAGE.get((signed, int(digits))) if text[:1] in ("i", "u") and digits.isdigit() \
        else None
    if st is None:
        raise ts.expected("a quantized storage type (i2, i4, i8, i16, i32, u2, ..., u32)")
    ts.next()
    return tok, st


def _number(ts, what: str) -> float:
    neg = ts.accept("-")
    tok = ts.peek()
    if tok.kind not in ("float", "int"):
        raise ts.expected(what)
    if tok.kind == "int" and not tok.text.startswith("0x"):
        raise ts.error(f"{what} is a float: the decimal integer {tok.text} is not one to MLIR "
                       f"(write {tok.text}.0)", tok)
    ts.next()
    if tok.text.startswith("0x"):
        # MLIR's float syntax: a hex integer is the double's bit pattern (what MLIR prints
        # for a scale whose shortest decimal would not read back as the same double)
        import struct
        bits = int(tok.text, 16)
        if bits >= 1 << 64:
            raise ts.error(f"{tok.text} has more than 64 bits: not an f64 bit pattern", tok)
        v = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
    else:
        v = float(tok.text)
    return -v if neg else v


def _param(ts) -> tuple:
    scale = _number(ts, "a scale")
    zp = ts.integer("a zero point") if ts.accept(":") else 0
    return scale, zp


def read_quantized(ts) -> QuantizedType:
    """Reads ``!quant.uniform<storage[<min:max>]:expressed[:axis], params>``; other quant
    types (``!quant.any``, ``!quant.calibrated``, sub-channel ``uniform``) are refused by
    name."""
    start = ts.peek()
    if start.kind != "!" or start.text != "!quant.uniform":
        if start.kind == "!" and start.text.startswith("!quant."):
            raise ts.error(f"{start.text} types are not supported: only !quant.uniform (the "
                           f"quantized types StableHLO takes)")
        raise ts.expected("!quant.uniform<...>")
    ts.next()
    ts.expect("<")
    stok, st = _storage_of(ts)
    smin = smax = None
    if ts.accept("<"):
        smin = ts.integer("the storage minimum")
        ts.expect(":")
        smax = ts.integer("the storage maximum")
        ts.expect(">")
    ts.expect(":")
    from .dtypes import parse_element_type
    ex = parse_element_type(ts)
    axis = ts.integer("the quantization dimension") if ts.accept(":") else None
    ts.expect(",")
    if axis is None:
        if ts.at("{"):
            raise ts.error("per-axis scales need a quantization dimension "
                           "(!quant.uniform<i8:f32:1, {...}>)")
        scale, zp = _param(ts)
    else:
        if not ts.at("{"):
            raise ts.expected("'{' and the per-axis scales")
        if ts.at("{", 1):
            raise ts.error("sub-channel quantized types (block sizes) are not supported")
        pairs = ts.comma_list(lambda: _param(ts), "}", open="{")
        scale, zp = [s for s, _ in pairs], [z for _, z in pairs]
    ts.expect(">")
    return ts.make(stok, quantized, st, ex, scale, zp, axis=axis, storage_min=smin,
                   storage_max=smax)


def parse_quantized(text: str) -> QuantizedType:
    """The quantized type spelled by all of ``text`` (``"!quant.uniform<i8:f32, 0.5:-3>"``).
    Raises ``syntax.ParseError``."""
    from .syntax import TokenStream
    ts = TokenStream(text)
    t = read_quantized(ts)
    ts.expect_end()
    return t
