"""Rules for quantization: an f32 value quantized, worked on as quantized values, dequantized.

Quantized values stay inside the rule: the pool holds the float, integer and complex tensors
every other rule knows. A draw quantizes an f32 value with a drawn type (signed storage, a scale
and a zero point), applies up to three quantized steps (requantization, an elementwise op by
dequantize-compute-quantize, add, transpose, reshape), and dequantizes. Both executors see
the same program: XLA through mhlo_ir's lowering (``verify.compile``), StableHLO's
interpreter through its own (``verify.quantized``), so a disagreement is a lowering's, XLA's
or the interpreter's.

NaN and infinities are replaced before quantizing (by zero and a finite bound): converting
them to integers is left to the implementation, where the two executors differ.
"""

from __future__ import annotations

from .. import dtypes
from ..quant import quantized, storage_range
from ..types import tensor
from .table import rule

# NOTE: signed storage, full ranges and per-tensor types only (``hst.quantized_types`` draws
# the rest): StableHLO's own lowering (which the interpreter executor runs) converts to
# unsigned storage as if it were signed (u4 and u8 results wrap), its pipeline cannot legalize
# the broadcasts of per-axis scales, and the interpreter aborts on narrowed storage ranges
# ("LLVM ERROR: Unsupported op"): docs/findings.md 21. Drawing them would only find those
# three again. And no i32 storage: StableHLO's lowering computes its sums and zero points
# in i32 and f32, which wrap and round where the spec (and our lowering since 2026-12-07)
# does not; the interpreter runs that lowering, so such programs would only find it again.
_STORAGE = (dtypes.i8, dtypes.i8, dtypes.i8, dtypes.i4, dtypes.i16, dtypes.i2)
# Per-tensor ops StableHLO quantizes by dequantize-compute-quantize, the correctly rounded
# ones: a last-ulp difference of an approximated function (XLA's polynomial tanh, exp...)
# becomes a whole quantization step once requantized, which no comparison can tell from a bug.
_UNARY = ("negate", "abs", "sign", "floor", "ceil", "round_nearest_afz", "round_nearest_even",
          "sqrt")
_LIMIT = 1e6  # what quantized inputs are clamped to


def _scale(s) -> float:
    # powers of two times a mantissa: from 2**-10 to 2**6, both exact and odd ones
    return (1 + s.c.integer(0, 255) / 256) * 2.0 ** s.c.integer(-10, 6)


def draw_type(s, storage=None):
    """A per-tensor quantized type of ``storage`` (drawn if None) expressing f32."""
    st = storage if storage is not None else s.c.choice(_STORAGE)
    return quantized(st, dtypes.f32, _scale(s), s.c.integer(*storage_range(st)))


def _finite(s, x):
    """``x`` with NaN as 0 and values clamped into [-_LIMIT, _LIMIT]."""
    b = s.b
    lo, hi = s.scalar(dtypes.f32, -_LIMIT), s.scalar(dtypes.f32, _LIMIT)
    zero = b.broadcast_in_dim(s.scalar(dtypes.f32, 0), x.type.shape, ())
    return b.select(b.compare(x, x, "NE"), zero, b.clamp(lo, x, hi))


def _quantize(s, q=None, shape=None):
    pred = (lambda t: True) if shape is None else (lambda t: t.shape == shape)
    x = s.operand(lambda et: et is dtypes.f32, pred)
    return s.b.uniform_quantize(_finite(s, x), q if q is not None else draw_type(s))


def _step(s, v):
    b = s.b
    q, t = v.type.element_type, v.type
    kind = s.c.choice(("requantize", "unary", "add", "transpose", "reshape"))
    if kind == "requantize":
        return b.uniform_quantize(v, draw_type(s, q.storage if s.c.boolean(0.5) else None))
    if kind == "unary":
        name = s.c.choice(_UNARY)
        return b.create(name, (v,), result_types=[tensor(t.shape, draw_type(s, q.storage))]) \
            .results[0]
    if kind == "add":
        other = _quantize(s, draw_type(s, q.storage), t.shape)
        return b.create("add", (v, other),
                        result_types=[tensor(t.shape, draw_type(s, q.storage))]).results[0]
    if kind == "transpose" and t.rank >= 2:
        perm = s.c.permutation(t.rank)
        return b.create("transpose", (v,), {"permutation": perm},
                        result_types=[tensor(tuple(t.shape[p] for p in perm), q)]).results[0]
    if kind == "reshape" and t.rank >= 1:
        return b.reshape(v, (t.num_elements,))
    return v


@rule("uniform_quantize", "uniform_dequantize")
def _quantized_values(s, name):
    v = _quantize(s)
    for _ in range(s.c.integer(0, 3)):
        v = _step(s, v)
    return [s.b.uniform_dequantize(v)]
