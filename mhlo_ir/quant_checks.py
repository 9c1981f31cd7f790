"""Which ops take quantized tensors, and how: StableHLO's spec, by family.

``OpSpec.validate`` sends every op with a quantized operand or result here. Each op's family is
its ``OpSpec.quantized``, declared with the op. The op's own rule
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

import math

from .errors import OpBuildError
from .quant import QuantizedType, expressed_tensor, is_quantized, quantized
from .types import TensorType, tensor

__all__ = ["validate_quantized", "refuse_quantized", "family_ops"]


def family_ops(family: str) -> frozenset:
    """The names of the ops of one ``OpSpec.quantized`` family (``"storage"``...)."""
    from .ops import REGISTRY
    return frozenset(n for n, spec in REGISTRY.items() if spec.quantized == family)


# The families' former names (name tables here before each OpSpec declared its family).
_FORMER = {"QDQ_OPS": "qdq", "DOT_LIKE": "dot_like", "STORAGE_OPS": "storage",
           "NOT_YET": "not_yet", "CARRIERS": "carrier"}


def __getattr__(name: str):
    if name in _FORMER:
        return family_ops(_FORMER[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    if name == "optimization_barrier":  # its operands are HLO_Tensors: per tensor only
        for _, t in _quantized(types):
            if t.element_type.axis is not None:
                _fail(name, f"takes tensors quantized per tensor only, got {t}")
    family = spec.quantized
    if name in ("uniform_quantize", "uniform_dequantize") or family == "carrier" or \
            spec.chapter == "opaque":
        return spec.validate_plain(types, attributes, result_types, regions)
    if family == "qdq":
        return _qdq(spec, types, attributes, result_types, regions)
    if family == "dot_like":
        return _dot_like(spec, types, attributes, result_types, regions)
    if family == "storage":
        return _storage(spec, types, attributes, result_types, regions)
    refuse_quantized(spec, _first_quantized(spec, types, result_types or ()))


def refuse_quantized(spec, what: str):
    """Refuse op ``spec`` a quantized tensor (``what``: "operand x is ..."), saying whether
    StableHLO defines the quantized op and what to do instead. Also raised by region ops
    given a per-axis type before their scalar block arguments exist (``ops.spec.region_arg``)."""
    name = spec.name
    why = (f"StableHLO defines quantized {name}, but mhlo_ir does not take it yet"
           if spec.quantized == "not_yet" else f"StableHLO defines quantized {name} nowhere")
    instead = ("make a float constant and quantize it (uniform_quantize)" if name == "constant"
               else "dequantize first (uniform_dequantize) and quantize the result "
                    "(uniform_quantize)")
    _fail(name, f"does not take quantized tensors ({what}): {why}; {instead}")


def _first_quantized(spec, types, results) -> str:
    """The first operand or result holding a quantized type, for a message."""
    for i, t in enumerate(types):
        if is_quantized(t):
            return f"operand {spec_operand(spec, i)} is {t}"
    i, t = next((i, t) for i, t in enumerate(results) if is_quantized(t))
    return f"result {i} is {t}"


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
    if q.axis is not None:
        return tuple(_per_axis_result(spec.name, quantized[0][1], r, attributes)
                     if isinstance(r, TensorType) and r.element_type is q.expressed else r
                     for r in inferred)
    return tuple(tensor(r.shape, q) if isinstance(r, TensorType) and r.element_type is
                 q.expressed else r for r in inferred)


def _per_axis_result(name, src, r, attributes) -> TensorType:
    """Inferred result ``r`` (expressed) of an op on per-axis ``src``, quantized as
    ``per_axis_element`` moves the axis."""
    if name == "transpose":
        et = per_axis_element(name, src, r.shape, permutation=attributes["permutation"].ints)
    elif name == "broadcast_in_dim":
        et = per_axis_element(name, src, r.shape,
                              broadcast_dimensions=attributes["broadcast_dimensions"].ints)
    else:
        et = per_axis_element(name, src, r.shape)
    return tensor(r.shape, et)


def per_axis_element(name, src, shape, *, permutation=None, broadcast_dimensions=None):
    """The element type of op ``name``'s result of ``shape`` from per-axis quantized ``src``,
    its axis moved as StableHLO's spec moves it: transpose to where ``permutation`` puts it,
    broadcast_in_dim to ``broadcast_dimensions[axis]`` (a size-1 axis spreads its one scale
    and zero point), reshape to the dimension that keeps its size and the number of elements
    before it; elementwise ops keep it. Other ops' per-axis results are refused."""
    q = src.element_type
    a = q.axis
    axis, scales, zps = a, q.scales, q.zero_points
    if name == "transpose":
        axis = tuple(permutation).index(a)
    elif name == "broadcast_in_dim":
        axis = broadcast_dimensions[a]
        if src.shape[a] == 1 and shape[axis] != 1:
            scales, zps = scales * shape[axis], zps * shape[axis]
    elif name == "reshape":
        before = math.prod(src.shape[:a])
        axis = next((b for b in range(len(shape)) if shape[b] == src.shape[a] and
                     math.prod(shape[:b]) == before), None)
        if axis is None:
            _fail(name, f"must keep the quantization dimension whole (its size, and the "
                        f"number of elements before it): {src} to shape {list(shape)}")
    elif len(shape) <= a or shape[a] != src.shape[a]:
        _fail(name, f"of per-axis quantized tensors is not supported ({src}): mhlo_ir knows "
                    f"how transpose, reshape and broadcast_in_dim move the quantization "
                    f"dimension, not how {name} does")
    if axis == a and scales is q.scales:
        return q
    return quantized(q.storage, q.expressed, list(scales), list(zps), axis=axis,
                     storage_min=q.storage_min, storage_max=q.storage_max)


def _float_tensor(spec, types, results):
    """``(where, type)`` of the first float operand or result (where: "operand lhs",
    "result 0"), or None: beside quantized tensors, one the op would compute with as is."""
    for i, t in enumerate(list(types) + list(results)):
        et = getattr(t, "element_type", None)
        if et is not None and et.kind == "float":
            where = (f"operand {spec_operand(spec, i)}" if i < len(types)
                     else f"result {i - len(types)}")
            return where, t
    return None


def _baseline_fail(name, a, b):
    _fail(name, f"quantized tensors must share storage type, storage range and expressed type "
                f"(only scales and zero points may differ): {a} vs {b}")


def _qdq(spec, types, attributes, result_types, regions) -> tuple:
    # StableHLO: HLO_Tensor takes per-tensor quantized types only, except for add
    # (verifyBinaryOpQuantizationConstraints, add_c2..c7); select's branches and result have
    # one type (select_c2); the rest keep their baseline (storage type and range, expressed
    # type), only scales and zero points may differ
    name = spec.name
    results = _results(spec, types, attributes, result_types, regions)
    quantized = _quantized(list(types) + list(results))
    first = quantized[0][1]
    mixed = _float_tensor(spec, types, results)
    if mixed is not None:
        _fail(name, f"mixes quantized and float tensors ({mixed[0]} is {mixed[1]}, but {first} "
                    f"is quantized): StableHLO quantizes all or none of them")
    if name == "add":
        _add_constraints(name, types[0], types[1], results[0])
        return results
    for _, t in quantized:
        if t.element_type.axis is not None:
            _fail(name, f"takes tensors quantized per tensor only (StableHLO quantizes {name} "
                        f"per axis nowhere), got {t}")
    if name == "select" and not types[1] is types[2] is results[0]:
        _fail(name, f"branches and result must have one type (StableHLO's select_c2), got "
                    f"{types[1]}, {types[2]} and {results[0]}")
    for _, t in quantized[1:]:
        if t.element_type.baseline != first.element_type.baseline:
            _baseline_fail(name, first, t)
    return results


def _add_constraints(name, lhs, rhs, res):
    """StableHLO's add_c2..c7: all quantized, one storage type, one expressed type; a per-axis
    operand makes a per-axis result along the same dimension."""
    el, er, eres = lhs.element_type, rhs.element_type, res.element_type
    if not (el.__class__ is er.__class__ is eres.__class__ is QuantizedType):
        _fail(name, f"quantizes all or none of lhs, rhs and result, got {lhs}, {rhs}, {res}")
    if not el.storage is er.storage is eres.storage or \
            not el.expressed is er.expressed is eres.expressed:
        _fail(name, f"lhs, rhs and result must share storage and expressed types, got {lhs}, "
                    f"{rhs} and {res}")
    per_axis = [t for t in (el, er) if t.axis is not None]
    if per_axis and eres.axis is None:
        _fail(name, f"a per-axis quantized operand gives a per-axis result, got {res}")
    if (el.axis is None) != (eres.axis is None):
        # StableHLO infers add's result type from lhs: the two are quantized alike
        _fail(name, f"result must be quantized per {'tensor' if el.axis is None else 'axis'} "
                    f"like lhs (StableHLO infers it from lhs), got {lhs} and {res}")
    if any(t.axis != eres.axis for t in per_axis):
        _fail(name, f"per-axis operands and result must share the quantization dimension, got "
                    f"{lhs}, {rhs} and {res}")


def _dot_like(spec, types, attributes, result_types, regions) -> tuple:
    # StableHLO's verifyConvolutionDotGeneralCommonQuantizationConstraints and the dot_general
    # and convolution ones (spec: dot_general C14-C20, convolution C28-C34)
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
    if name == "dot_general":  # (StableHLO's dot has no such constraint)
        if any(z != 0 for z in er.zero_points):
            _fail(name, f"rhs must have zero points 0 (StableHLO's C15), got {rhs}")
    if name in ("dot", "dot_general"):
        if er.axis is not None:
            dn = attributes.get("dot_dimension_numbers") if attributes else None
            contracting = (0,) if name == "dot" else \
                tuple(dn.rhs_contracting_dimensions) if dn is not None else ()
            if er.axis in contracting:
                _fail(name, f"rhs is quantized along dimension {er.axis}, which it "
                            f"contracts (StableHLO's C16): {rhs}")
    else:
        dn = attributes["dimension_numbers"]
        if er.axis is not None and er.axis != dn.kernel_output_feature_dimension:
            _fail(name, f"rhs must be quantized along its kernel output feature dimension "
                        f"{dn.kernel_output_feature_dimension}, got {rhs}")
        eres = res.element_type
        if eres.__class__ is QuantizedType and eres.axis is not None and \
                eres.axis != dn.output_feature_dimension:
            _fail(name, f"result must be quantized along its output feature dimension "
                        f"{dn.output_feature_dimension}, got {res}")
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
        if er.axis is None and eres.axis is not None:
            _fail(name, f"a rhs quantized per tensor gives a result quantized per tensor, "
                        f"got {res}")
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
    quantized = _quantized(list(types) + list(results))
    first = quantized[0][1].element_type
    mixed = _float_tensor(spec, types, results)
    if mixed is not None:
        _fail(name, f"moves quantized values, so {mixed[0]} must be quantized like the "
                    f"others, got {mixed[1]}")
    if first.axis is not None and name in _PER_AXIS:
        src, dst = types[0], results[0]
        if dst.element_type.__class__ is not QuantizedType or \
                src.element_type.__class__ is not QuantizedType:
            _fail(name, f"moves quantized values: operand {src} and result {dst} must both be "
                        f"quantized")
        _PER_AXIS[name](name, src, dst, attributes)
        return results
    for _, t in quantized:
        if t.element_type is not first:
            _fail(name, f"moves stored integers, so its quantized tensors must have one type: "
                        f"{quantized[0][1]} vs {t} (requantize with uniform_quantize first)")
    if first.axis is not None and name != "get_dimension_size":
        _fail(name, f"of per-axis quantized tensors is not supported ({quantized[0][1]}): "
                    f"mhlo_ir knows how transpose, reshape and broadcast_in_dim move the "
                    f"quantization dimension, not how {name} does")
    return results


def _same_params(name, src, dst):
    a, b = src.element_type, dst.element_type
    if a.baseline != b.baseline or a.scales != b.scales or a.zero_points != b.zero_points:
        _fail(name, f"must keep the quantization (scales and zero points): {src} vs {dst}")


def _transpose_axis(name, src, dst, attributes):
    # StableHLO's transpose_c1, transpose_c4
    _same_params(name, src, dst)
    perm = attributes["permutation"].ints
    if perm[dst.element_type.axis] != src.element_type.axis:
        _fail(name, f"result must be quantized along the dimension the operand's "
                    f"quantization dimension {src.element_type.axis} moves to, got {dst}")


def _reshape_axis(name, src, dst, attributes):
    # StableHLO's reshape_c1, reshape_c3: the quantized dimension keeps its size and what
    # comes before it its number of elements
    _same_params(name, src, dst)
    a, b = src.element_type.axis, dst.element_type.axis
    before = (math.prod(src.shape[:a]), math.prod(dst.shape[:b]))
    if src.shape[a] != dst.shape[b] or before[0] != before[1]:
        _fail(name, f"must keep the quantization dimension whole (its size, and the number "
                    f"of elements before it): {src} vs {dst}")


def _broadcast_axis(name, src, dst, attributes):
    # StableHLO's broadcast_in_dim_c6: the axis maps through broadcast_dimensions; a
    # size-1 quantized dimension may broadcast its one scale to many
    dims = attributes["broadcast_dimensions"].ints
    a, b = src.element_type, dst.element_type
    if b.axis != dims[a.axis]:
        _fail(name, f"result must be quantized along broadcast_dimensions[{a.axis}] = "
                    f"{dims[a.axis]}, got {dst}")
    if src.shape[a.axis] == 1:
        if a.baseline != b.baseline or set(b.scales) != {a.scales[0]} or \
                set(b.zero_points) != {a.zero_points[0]}:
            _fail(name, f"broadcasts one scale and zero point: every result scale and zero "
                        f"point must be the operand's, got {src} to {dst}")
    else:
        _same_params(name, src, dst)


_PER_AXIS = {"transpose": _transpose_axis, "reshape": _reshape_axis,
             "broadcast_in_dim": _broadcast_axis}
