"""Which ops take quantized tensors, and how: StableHLO's spec, by family.

``OpSpec.validate`` sends every op with a quantized operand or result here. The op's own rule
still decides shapes and attributes: it runs on the op's types with each quantized element type
replaced by its expressed float type (what the values mean), and the family adds the quantized
constraints StableHLO's spec states for it:

- *dequantize-op-quantize* ops (elementwise math, compare, select, clamp, batch norm, ...;
  StableHLO evaluates them as ``quantize(op(dequantize(x)))``): if one float operand or result
  is quantized, all are, with one storage type, storage range and expressed type (the
  "baseline"); scales and zero points may differ (``add`` of two scales into a third);
- *dot-like* ops (dot, dot_general, convolution): quantized lhs, rhs and result with one
  expressed type, lhs per tensor, lhs and rhs one storage type, the result any storage
  (``i8 x i8 -> i32``); or *hybrid*: float lhs and result, quantized rhs (weight-only);
- *storage* ops (data movement, constants of quantized type aside): they move stored integers,
  so every quantized tensor they touch has one and the same type; transpose and
  broadcast_in_dim move a per-axis type's axis with the dimension;
- *carriers* (func.return, call, while, if, case, optimization_barrier, tuples, custom_call,
  composite, region returns): any types, as their own rules say.

Every other op refuses quantized tensors with an error naming the op, the operand and what to
do instead (dequantize first). ``uniform_quantize`` and ``uniform_dequantize`` have their own
rules (``mhlo_ir.ops.quantize``).
"""

from __future__ import annotations

from .errors import OpBuildError
from .quant import QuantizedType, expressed_tensor
from .types import TensorType

__all__ = ["validate_quantized", "QDQ_OPS", "DOT_LIKE", "STORAGE_OPS", "CARRIERS"]

# StableHLO's dequantize-op-quantize ops (stablehlo/transforms/
# StablehloLegalizeQuantizedOpToQDQ.cpp and the spec's "For quantized types:" lines).
QDQ_OPS = frozenset({
    "abs", "add", "atan2", "batch_norm_grad", "batch_norm_inference", "batch_norm_training",
    "cbrt", "ceil", "cholesky", "clamp", "compare", "cosine", "divide", "exponential",
    "exponential_minus_one", "floor", "log", "log_plus_one", "logistic", "maximum", "minimum",
    "multiply", "negate", "power", "reduce_precision", "remainder", "round_nearest_afz",
    "round_nearest_even", "rsqrt", "select", "sign", "sine", "sqrt", "subtract", "tan", "tanh",
    "triangular_solve"})
DOT_LIKE = frozenset({"dot", "dot_general", "convolution"})
# Ops that move stored integers: StableHLO's quantization lowering changes only their types.
STORAGE_OPS = frozenset({
    "broadcast_in_dim", "concatenate", "dynamic_broadcast_in_dim", "dynamic_reshape",
    "dynamic_slice", "gather", "get_dimension_size", "pad", "reshape", "slice", "transpose",
    "all_gather", "all_to_all", "collective_broadcast", "collective_permute"})
CARRIERS = frozenset({
    "func.return", "func.call", "return", "while", "if", "case", "optimization_barrier",
    "tuple", "get_tuple_element", "custom_call", "composite"})


def _fail(op: str, message: str):
    raise OpBuildError(f"'{op}' {message}")


def _expressed(types):
    return tuple(expressed_tensor(t) for t in types)


def _quantized(types) -> list:
    return [(i, t) for i, t in enumerate(types)
            if getattr(t, "element_type", None).__class__ is QuantizedType]


def validate_quantized(spec, types, attributes, result_types, regions) -> tuple:
    """``spec.validate`` for an op with a quantized operand or result (see the module
    docstring); the result types, inferred ones keeping the operands' quantized types."""
    name = spec.name
    if name in ("uniform_quantize", "uniform_dequantize") or name in CARRIERS or \
            spec.chapter == "opaque":
        return spec.validate_plain(types, attributes, result_types, regions)
    if name in QDQ_OPS:
        return _qdq(spec, types, attributes, result_types, regions)
    if name in DOT_LIKE:
        return _dot_like(spec, types, attributes, result_types, regions)
    if name in STORAGE_OPS:
        return _storage(spec, types, attributes, result_types, regions)
    where = _quantized(types)
    what = (f"operand {spec_operand(spec, where[0][0])} is {where[0][1]}" if where else
            f"result {_quantized(result_types)[0][0]} is {_quantized(result_types)[0][1]}")
    _fail(name, f"does not take quantized tensors ({what}): StableHLO defines quantized "
                f"{name} nowhere; dequantize first (uniform_dequantize) and quantize the "
                f"result (uniform_quantize)")


def spec_operand(spec, i: int) -> str:
    """Operand ``i``'s name in the spec (variadic groups by index)."""
    names = spec.operands
    if i < len(names) and not names[i].endswith("*"):
        return names[i]
    return str(i)


def _results(spec, types, attributes, result_types, regions) -> tuple:
    """The op's own rule over the expressed types; inferred results get the operands'
    quantized element type back where the rule keeps the operand's type."""
    if result_types is not None:
        spec.validate_plain(_expressed(types), attributes, _expressed(result_types), regions)
        return tuple(result_types)
    inferred = spec.validate_plain(_expressed(types), attributes, None, regions)
    quantized = _quantized(types)
    if not quantized:
        return inferred
    q = quantized[0][1].element_type
    from .types import tensor
    return tuple(tensor(r.shape, q) if isinstance(r, TensorType) and r.element_type is
                 q.expressed else r for r in inferred)


def _baseline_fail(name, a, b):
    _fail(name, f"quantized tensors must share storage type, storage range and expressed type "
                f"(only scales and zero points may differ): {a} vs {b}")


def _qdq(spec, types, attributes, result_types, regions) -> tuple:
    name = spec.name
    results = _results(spec, types, attributes, result_types, regions)
    everything = list(types) + list(results)
    quantized = _quantized(everything)
    first = quantized[0][1]
    for i, t in enumerate(everything):
        et = getattr(t, "element_type", None)
        if et is not None and et.kind == "float":
            where = (f"operand {spec_operand(spec, i)}" if i < len(types)
                     else f"result {i - len(types)}")
            _fail(name, f"mixes quantized and float tensors ({where} is {t}, but {first} is "
                        f"quantized): StableHLO quantizes all or none of them")
    for _, t in quantized[1:]:
        if t.element_type.baseline != first.element_type.baseline:
            _baseline_fail(name, first, t)
    axes = {t.element_type.axis for _, t in quantized if t.element_type.axis is not None}
    if len(axes) > 1:
        _fail(name, f"per-axis quantized tensors must share their quantization dimension, got "
                    f"{sorted(axes)}")
    return results


def _dot_like(spec, types, attributes, result_types, regions) -> tuple:
    name = spec.name
    if result_types is None:
        _fail(name, "with quantized operands needs explicit result types (the result's "
                    "quantized type is the caller's choice)")
    results = _results(spec, types, attributes, result_types, regions)
    lhs, rhs, res = types[0], types[1], results[0]
    ql, qr, qres = (t.element_type.__class__ is QuantizedType for t in (lhs, rhs, res))
    if not qr:
        _fail(name, f"with quantized tensors needs a quantized rhs, got {rhs} (lhs {lhs}, "
                    f"result {res})")
    er = rhs.element_type
    if ql:
        if not qres:
            _fail(name, f"of quantized lhs and rhs must have a quantized result, got {res}")
        el, eres = lhs.element_type, res.element_type
        if el.axis is not None:
            _fail(name, f"lhs must be quantized per tensor, got {lhs}")
        if el.storage is not er.storage or el.expressed is not er.expressed:
            _fail(name, f"lhs and rhs must share storage and expressed types, got {lhs} and "
                        f"{rhs}")
        if eres.expressed is not el.expressed:
            _fail(name, f"result must express {el.expressed.name} like its operands, got {res}")
    else:
        # hybrid (weight-only) quantization: float lhs and result, quantized rhs
        if qres:
            _fail(name, f"with a float lhs ({lhs}) must have a float result (hybrid "
                        f"quantization), got {res}")
        if lhs.element_type is not er.expressed or res.element_type is not er.expressed:
            _fail(name, f"hybrid quantization takes lhs and result of rhs's expressed type "
                        f"{er.expressed.name}, got {lhs} and {res}")
    return results


def _storage(spec, types, attributes, result_types, regions) -> tuple:
    name = spec.name
    results = _results(spec, types, attributes, result_types, regions)
    everything = list(types) + list(results)
    quantized = _quantized(everything)
    first = quantized[0][1].element_type
    for i, t in enumerate(everything):
        et = getattr(t, "element_type", None)
        if et is not None and et.kind == "float":
            where = (f"operand {spec_operand(spec, i)}" if i < len(types)
                     else f"result {i - len(types)}")
            _fail(name, f"moves quantized values, so {where} must be quantized like the "
                        f"others, got {t}")
    if name == "transpose" and first.axis is not None:
        perm = attributes["permutation"].ints
        src, dst = types[0].element_type, results[0].element_type
        if dst.__class__ is not QuantizedType or dst.axis is None or \
                dst.baseline != src.baseline or dst.scales != src.scales or \
                dst.zero_points != src.zero_points or perm[dst.axis] != src.axis:
            _fail(name, f"of a per-axis quantized {types[0]} must give "
                        f"the same type quantized along the permuted dimension, got "
                        f"{results[0]}")
        return results
    if name == "broadcast_in_dim" and first.axis is not None:
        dims = attributes["broadcast_dimensions"].ints
        src, dst = types[0].element_type, results[0].element_type
        if dst.__class__ is not QuantizedType or src.axis is None or \
                dst.baseline != src.baseline or dst.axis != dims[src.axis] or \
                dst.scales != src.scales or dst.zero_points != src.zero_points:
            _fail(name, f"of a per-axis quantized {types[0]} must give the same type "
                        f"quantized along the mapped dimension, got {results[0]}")
        return results
    for _, t in quantized:
        if t.element_type is not first:
            _fail(name, f"moves stored integers, so its quantized tensors must have one type: "
                        f"{quantized[0][1]} vs {t} (requantize with uniform_quantize first)")
    if first.axis is not None and name not in ("get_dimension_size",):
        _fail(name, f"of per-axis quantized tensors is not supported ({quantized[0][1]}): the "
                    f"quantization dimension would have to be tracked through the op")
    return results
