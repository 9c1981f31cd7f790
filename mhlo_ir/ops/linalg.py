"""Linear algebra: dot_general, dot, einsum, triangular_solve, cholesky, fft, batch norm,
topk, ragged_dot (and the trace marker). Convolution has a chapter of its own."""

from __future__ import annotations

from .. import op_forms as pf

from .. import dtypes
from ..attributes import (ArrayAttr, Attribute)
from ..dense import i64_array
from ..index_array import index_ints
from ..dtypes import i32
from ..mhlo_attributes import (DotAlgorithm, DotDimensionNumbers, EnumAttr, fft_type,
                               RaggedDotDimensionNumbers, precision, transpose)
from ..types import TensorType, tensor
from ..ir import VALUE_CLASSES, Operation, Value, _new_single_result_op
from ..location import checked_location
from ..quant import expressed_tensor
from . import convert
from .args import integer
from .args import ints as int_list
from .construct import memo, memo_get, result_type, tensor_type
from .convert import show
from .spec import (MHLO_ONLY, REGISTRY, AttrSpec, OpSpec, builder_method, fail, register,
                   tensor_operand)


def _precision_config(v):
    """One precision (DEFAULT, HIGH, HIGHEST) for both operands, or one per operand: MLIR
    wants an array of ``#mhlo<precision ..>`` of at most 2 entries ("expects precision config
    to be empty or have <= 2 elements")."""
    if isinstance(v, ArrayAttr):
        for i, p in enumerate(v.elements):
            if not (isinstance(p, EnumAttr) and p.kind == "precision"):
                raise TypeError(f"expected precisions (DEFAULT, HIGH, HIGHEST), got "
                                f"{show(p)} at index {i}")
        ps = v.elements
    else:
        if isinstance(v, (str, EnumAttr)):
            v = (v, v)  # one precision for both operands, as JAX allows
        elif isinstance(v, Attribute) or not isinstance(v, (list, tuple)):
            raise TypeError(f"expected a precision or a list of precisions (DEFAULT, HIGH, "
                            f"HIGHEST), got {show(v)}")
        ps = tuple(precision(p) for p in v)
    if len(ps) > 2:
        raise ValueError(f"at most 2 entries, got {len(ps)} (one precision per operand)")
    return v if isinstance(v, ArrayAttr) else ArrayAttr(ps)


def _dims_ok(op, side, dims, rank, used):
    for d in dims:
        if not 0 <= d < rank:
            fail(op, f"{side} dimension {d} is out of range for the {side} operand of rank {rank}")
        if d in used:
            fail(op, f"{side} dimension {d} is used twice in the dot dimension numbers")
        used.add(d)


def _dot_general(op, types, attributes, mixed=False):
    lhs = types[0]
    rhs = types[1]
    if lhs.__class__ is not TensorType or rhs.__class__ is not TensorType:
        lhs = tensor_operand(op, "lhs", lhs)
        rhs = tensor_operand(op, "rhs", rhs)
    dn = attributes["dot_dimension_numbers"]
    if not isinstance(dn, DotDimensionNumbers):
        fail(op, f"attribute dot_dimension_numbers must be DotDimensionNumbers, got {dn!r}")
    lb, rb = dn.lhs_batching_dimensions, dn.rhs_batching_dimensions
    lc, rc = dn.lhs_contracting_dimensions, dn.rhs_contracting_dimensions
    if len(lb) != len(rb):
        fail(op, f"lhs_batching_dimensions {list(lb)} and rhs_batching_dimensions {list(rb)} "
                 "differ in length")
    if len(lc) != len(rc):
        fail(op, f"lhs_contracting_dimensions {list(lc)} and rhs_contracting_dimensions "
                 f"{list(rc)} differ in length")
    ls, rs = lhs.shape, rhs.shape
    lu, ru = lb + lc, rb + rc  # (pairs: batching dimensions first, then contracting)
    if lu and not (min(lu) >= 0 and max(lu) < len(ls) and min(ru) >= 0 and max(ru) < len(rs)
                   and len(set(lu)) == len(lu) and len(set(ru)) == len(ru)):
        _dims_ok(op, "lhs", lu, len(ls), set())  # (which says what is wrong)
        _dims_ok(op, "rhs", ru, len(rs), set())
    for i, (a, b) in enumerate(zip(lu, ru)):
        if ls[a] != rs[b]:
            fail(op, f"{'batching' if i < len(lb) else 'contracting'} dimensions differ in "
                     f"size: lhs dimension {a} has size {ls[a]} but rhs dimension {b} has "
                     f"size {rs[b]} ({lhs} vs {rhs})")
    if not mixed and lhs.element_type is not rhs.element_type:
        _one_element_type(op, lhs, rhs)
    if lu:
        shape = (*[ls[d] for d in lb], *[n for d, n in enumerate(ls) if d not in lu],
                 *[n for d, n in enumerate(rs) if d not in ru])
    else:
        shape = ls + rs
    pc = attributes.get("precision_config")
    if pc is not None and len(pc.elements) > 2:
        fail(op, f"precision_config must have at most 2 entries, got {len(pc.elements)}")
    return (tensor(shape, lhs.element_type),)


def _dot_algorithm(v) -> DotAlgorithm:
    if isinstance(v, DotAlgorithm):
        return v
    if isinstance(v, dict):
        return DotAlgorithm(**v)
    raise TypeError(f"expected a DotAlgorithm (or a dict of its fields), got {show(v)}")


def _dot_general_check(op, types, attributes, results, regions):
    _dot_algorithm_rules(op, attributes)
    expected = _dot_general(op, types, attributes, mixed=True)[0]
    r = results[0]
    if getattr(r, "shape", None) != expected.shape:
        fail(op, f"result must have shape {list(expected.shape)}, got {r}")


def _dot_general_infer(op, types, attributes):
    """The result type of operands of one element type, every rule of the check applied
    (``infer_checks``: the check would only infer the same shape again)."""
    _dot_algorithm_rules(op, attributes)
    return _dot_general(op, types, attributes)


def _dot_algorithm_rules(op, attributes) -> None:
    """An algorithm XLA knows, and DEFAULT precisions beside one."""
    algorithm = attributes.get("algorithm")
    if algorithm is None:
        return
    if not algorithm.known:
        # (MLIR: "dot algorithm not known to be supported on any hardware")
        fail(op, f"algorithm <{algorithm.body()}> is not one XLA knows (jax's "
                 "lax.DotAlgorithmPreset names the known ones)")
    precision = attributes.get("precision_config")
    if precision is not None and any(p.value != "DEFAULT" for p in precision.elements):
        # (jaxlib: "must specify DEFAULT precision config when algorithm is set")
        fail(op, f"precision_config {[p.value for p in precision.elements]} beside an "
                 "algorithm: the algorithm says how products are computed, so the precisions "
                 "must be DEFAULT (or left out)")


register(OpSpec("dot_general", ("lhs", "rhs"),
                {"dot_dimension_numbers": AttrSpec(
                    lambda v: v if isinstance(v, DotDimensionNumbers) else DotDimensionNumbers(**v),
                    True),
                 "precision_config": AttrSpec(_precision_config),
                 "algorithm": AttrSpec(_dot_algorithm)},
                infer=_dot_general_infer, check=_dot_general_check, infer_checks=True,
                pretty=pf.DOT_GENERAL, quantized="dot_like", n_results=1))


@builder_method
def dot_general(b, lhs: Value, rhs: Value, contracting_dimensions=((), ()),
                batch_dimensions=((), ()), *, precision_config=None,
                result_element_type=None, algorithm=None, location=None) -> Value:
    """``contracting_dimensions=((lhs dims), (rhs dims))``, likewise ``batch_dimensions``.

    ``result_element_type`` sets a result element type other than the operands' (XLA's
    preferred element type, e.g. f32 results from bf16 operands); ``algorithm`` a
    ``DotAlgorithm`` (how the products are computed: jax's dot algorithm presets).
    """
    if contracting_dimensions.__class__ is DotDimensionNumbers:
        if batch_dimensions != ((), ()):
            fail("dot_general", "batch_dimensions cannot be given with a "
                                "DotDimensionNumbers (it holds the batch dimensions)")
        dn = contracting_dimensions
    else:
        try:
            (lc, rc), (lb, rb) = contracting_dimensions, batch_dimensions
            dn = (tuple(lb), tuple(rb), tuple(lc), tuple(rc))
        except (TypeError, ValueError):
            fail("dot_general", f"contracting_dimensions and batch_dimensions must each be "
                                f"a pair ((lhs dimensions), (rhs dimensions)), got "
                                f"{contracting_dimensions!r:.40} and {batch_dimensions!r:.40}")
        exact = True  # checked before keying: 1.0 and True equal 1
        for group in dn:
            for d in group:
                if d.__class__ is not int:
                    exact = False
        if not exact:
            dn = tuple(int_list("dot_general", what, xs) for what, xs in zip(
                ("lhs batch dimensions", "rhs batch dimensions",
                 "lhs contracting dimensions", "rhs contracting dimensions"), dn))
    # The memo key and the validation see the same value (a str or a generator would
    # otherwise be keyed as one thing and checked as another).
    if precision_config is None or precision_config.__class__ is ArrayAttr:
        pc = precision_config  # (an ArrayAttr: as an op holds it; the converter checks it)
    elif isinstance(precision_config, str) or not hasattr(precision_config, "__iter__"):
        fail("dot_general", f"precision_config must be a list of precisions (DEFAULT, "
                            f"HIGH, HIGHEST), one per operand, got "
                            f"{type(precision_config).__name__} {precision_config!r:.40}")
    else:
        pc = tuple(precision_config)
    key = ("dot_general", getattr(lhs, "type", None), getattr(rhs, "type", None), dn, pc,
           result_element_type, algorithm)
    try:
        hit = memo_get(key)
    except TypeError:
        hit = None
    if hit is not None and lhs.__class__ in VALUE_CLASSES and \
            rhs.__class__ in VALUE_CLASSES:  # memo's hit path, inlined
        block = b.block
        op = _new_single_result_op(hit[0], lhs, rhs, hit[1], hit[2],
                                   b.location if location is None
                                   else checked_location(location), block)
        block.operations.append(op)
        return op
    return memo(b, key, "dot_general", (lhs, rhs), location, _dot_general_make, lhs, rhs, dn,
                pc, result_element_type, algorithm)


# (lhs batch, rhs batch, lhs contracting, rhs contracting) tuples of ints -> the
# DotDimensionNumbers made of them: one object for every dot_general built with those numbers
# (at any shape), so their attribute mappings and printed texts are shared too. Bounded.
_DNUMS: dict = {}


def _dot_general_make(lhs, rhs, dn, precision_config, result_element_type, algorithm=None):
    if isinstance(dn, DotDimensionNumbers):
        dnums = dn
    else:  # (tuples of ints: the builder checked them before keying the memo with them)
        dnums = _DNUMS.get(dn)
        if dnums is None:
            try:
                dnums = DotDimensionNumbers(*dn)
            except (TypeError, ValueError) as e:
                fail("dot_general", f"dimension numbers: {e}")
            if len(_DNUMS) > 4096:
                _DNUMS.clear()
            _DNUMS[dn] = dnums
    attrs = {"dot_dimension_numbers": dnums, "precision_config": precision_config,
             "algorithm": algorithm}
    if result_element_type is None:
        return attrs, None
    spec = REGISTRY["dot_general"]
    conv = {k: spec.attributes[k].convert(v) for k, v in attrs.items() if v is not None}
    inferred = _dot_general("dot_general", (expressed_tensor(tensor_type(lhs, "dot_general")),
                                            expressed_tensor(tensor_type(rhs, "dot_general"))),
                            conv, mixed=True)[0]
    return attrs, (result_type("dot_general", inferred.shape, result_element_type),)


# -- shared converters ---------------------------------------------------------------------------

_i64 = convert.i64
_bool = convert.boolean
_f32 = convert.f32
_str = convert.string


def _float_or_complex(op, what, t):
    if t.element_type.kind not in ("float", "complex"):
        fail(op, f"operand {what} must have float or complex elements, got {t}")


def _same_et(op, names, ts):
    for n, t in zip(names[1:], ts[1:]):
        if t.element_type is not ts[0].element_type:
            fail(op, f"operand {n} has element type {t.element_type}, expected "
                     f"{ts[0].element_type} (as operand {names[0]}): {t} vs {ts[0]}")


def _one_element_type(op, lhs, rhs) -> None:
    """Products of operands of two element types (bf16 x f32, f8E4M3FN x f8E5M2, i8 x f32:
    what jax lowers for mixed precision) are MHLO that XLA compiles, but their result's
    element type is not the operands': it must be given, not inferred."""
    if lhs.element_type is not rhs.element_type:
        fail(op, f"operands lhs and rhs have different element types ({lhs.element_type} "
                 f"and {rhs.element_type}), so the result's cannot be inferred: give it "
                 f"(result_element_type=, or the result type), got {lhs} and {rhs}")


def _check_result_shape(op, expected, results, index=0):
    r = results[index]
    if not isinstance(r, TensorType) or r.shape != expected.shape:
        fail(op, f"result {index} must have shape {list(expected.shape)}, got {r}")


# -- dot -------------------------------------------------------------------------------------

def _dot(op, types, attributes, mixed=False):
    lhs = tensor_operand(op, "lhs", types[0])
    rhs = tensor_operand(op, "rhs", types[1])
    if lhs.rank not in (1, 2) or rhs.rank not in (1, 2):
        fail(op, f"operands must have rank 1 or 2, got {lhs} and {rhs}")
    if lhs.shape[-1] != rhs.shape[0]:
        fail(op, f"contracting dimensions differ in size: lhs dimension {lhs.rank - 1} has "
                 f"size {lhs.shape[-1]} but rhs dimension 0 has size {rhs.shape[0]} "
                 f"({lhs} vs {rhs})")
    if not mixed:
        _one_element_type(op, lhs, rhs)
    pc = attributes.get("precision_config") if attributes else None
    if pc is not None and len(pc.elements) > 2:
        fail(op, f"precision_config must have at most 2 entries, got {len(pc.elements)}")
    return (tensor(lhs.shape[:-1] + rhs.shape[1:], lhs.element_type),)


register(OpSpec("dot", ("lhs", "rhs"), {"precision_config": AttrSpec(_precision_config)},
                infer=_dot, check=lambda op, t, a, r, g: _check_result_shape(
                    op, _dot(op, t, a, mixed=True)[0], r),
                doc="matrix/vector products of rank-1 and rank-2 tensors", pretty=pf.DOT,
                quantized="dot_like", n_results=1))


def _result_et(op, inferred, result_element_type):
    if result_element_type is None:
        return None
    try:
        return (tensor(inferred.shape, result_element_type),)
    except (TypeError, ValueError) as e:
        fail(op, f"result type: {e}")


@builder_method
def dot(b, lhs, rhs, *, precision_config=None, result_element_type=None, location=None) -> Value:
    """``mhlo.dot``: [m,k]x[k,n], [m,k]x[k], [k]x[k,n] or [k]x[k] products."""
    attrs = {"precision_config": precision_config}
    rt = None
    if result_element_type is not None:
        inferred = _dot("dot", (expressed_tensor(getattr(lhs, "type", None)),
                                expressed_tensor(getattr(rhs, "type", None))), {}, mixed=True)[0]
        rt = _result_et("dot", inferred, result_element_type)
    return b.create("dot", (lhs, rhs), attrs, rt, location=location).results[0]


# -- einsum ----------------------------------------------------------------------------------

def _parse_einsum(op, config):
    if config.count("->") != 1 or config.count(",") != 1:
        fail(op, f"einsum_config {config!r} must look like 'ab,bc->ac'")
    ins, out = config.split("->")
    lhs, rhs = ins.split(",")
    for part in (lhs, rhs, out):
        if not all(c.isalpha() for c in part):
            fail(op, f"einsum_config {config!r}: only letters are supported in subscripts "
                     f"(got {part!r})")
    return lhs, rhs, out


def _einsum(op, types, attributes):
    lhs = tensor_operand(op, "lhs", types[0])
    rhs = tensor_operand(op, "rhs", types[1])
    ls, rs, out = _parse_einsum(op, attributes["einsum_config"].value)
    sizes = {}
    for side, subs, t in (("lhs", ls, lhs), ("rhs", rs, rhs)):
        if len(subs) != t.rank:
            fail(op, f"einsum_config gives {len(subs)} subscripts ({subs!r}) for the {side} "
                     f"operand of rank {t.rank} ({t})")
        for c, n in zip(subs, t.shape):
            if sizes.setdefault(c, n) != n:
                fail(op, f"einsum subscript {c!r} has size {sizes[c]} and {n} ({lhs} vs {rhs})")
    for c in out:
        if c not in sizes:
            fail(op, f"einsum output subscript {c!r} appears in no input ({ls!r}, {rs!r})")
    if len(set(out)) != len(out):
        fail(op, f"einsum output subscripts {out!r} repeat a letter")
    if lhs.element_type is not rhs.element_type:
        # (jaxlib compiles bf16 x f32 -> f32 and f32 x f32 -> bf16 einsums, but the program
        # then returns another element type than its result's: ui8 x i8 -> i32 gives i8)
        fail(op, f"operands lhs and rhs must have one element type (XLA's einsum of two "
                 f"returns a result of another type than declared), got {lhs} and {rhs}")
    return (tensor([sizes[c] for c in out], lhs.element_type),)


register(OpSpec("einsum", ("lhs", "rhs"), {"einsum_config": AttrSpec(_str, True)},
                infer=_einsum, doc="Einstein summation of two tensors", pretty=pf.EINSUM))


@builder_method
def einsum(b, lhs, rhs, einsum_config: str, *, location=None) -> Value:
    """``mhlo.einsum`` with ``einsum_config`` like ``"ab,bc->ac"``."""
    return b.create("einsum", (lhs, rhs), {"einsum_config": einsum_config},
                    location=location).results[0]


# -- triangular_solve, cholesky ----------------------------------------------------------------

def _triangular_solve(op, types, attributes):
    a = tensor_operand(op, "a", types[0])
    b = tensor_operand(op, "b", types[1])
    _float_or_complex(op, "a", a)
    _same_et(op, ("a", "b"), (a, b))
    if a.rank < 2 or a.shape[-1] != a.shape[-2]:
        fail(op, f"operand a must be a batch of square matrices [..., m, m], got {a}")
    if b.rank != a.rank or b.shape[:-2] != a.shape[:-2]:
        fail(op, f"operand b must have the batch dimensions of a {list(a.shape[:-2])}, got {b}")
    if attributes["transpose_a"].value == "TRANSPOSE_INVALID":
        fail(op, "transpose_a TRANSPOSE_INVALID is not a transpose option: use NO_TRANSPOSE, "
                 "TRANSPOSE or ADJOINT")
    left = attributes["left_side"].value
    m = a.shape[-1]
    k = b.shape[-2] if left else b.shape[-1]
    if k != m:
        fail(op, f"with left_side = {str(left).lower()}, dimension {b.rank - (2 if left else 1)} "
                 f"of b must have size {m} (the size of a), got {b}")
    return (b,)


register(OpSpec("triangular_solve", ("a", "b"),
                {"left_side": AttrSpec(_bool, True), "lower": AttrSpec(_bool, True),
                 "unit_diagonal": AttrSpec(_bool, True),
                 "transpose_a": AttrSpec(transpose, True)},
                infer=_triangular_solve,
                doc="solves op(a) x = b (left_side) or x op(a) = b for triangular a",
                quantized="qdq"))


@builder_method
def triangular_solve(b, a, rhs, *, left_side=True, lower=True, unit_diagonal=False,
                     transpose_a="NO_TRANSPOSE", location=None) -> Value:
    return b.create("triangular_solve", (a, rhs),
                    {"left_side": left_side, "lower": lower, "unit_diagonal": unit_diagonal,
                     "transpose_a": transpose_a}, location=location).results[0]


def _cholesky(op, types, attributes):
    a = tensor_operand(op, "a", types[0])
    _float_or_complex(op, "a", a)
    if a.rank < 2 or a.shape[-1] != a.shape[-2]:
        fail(op, f"operand a must be a batch of square matrices [..., n, n], got {a}")
    return (a,)


register(OpSpec("cholesky", ("a",), {"lower": AttrSpec(_bool)}, infer=_cholesky,
                doc="Cholesky factor of Hermitian positive definite matrices", pretty=pf.CHOLESKY,
                quantized="qdq"))


@builder_method
def cholesky(b, a, *, lower=None, location=None) -> Value:
    return b.create("cholesky", (a,), {"lower": lower}, location=location).results[0]


# -- fft -------------------------------------------------------------------------------------

def _fft(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    kind = attributes["fft_type"].value
    lengths = index_ints(attributes["fft_length"])
    if not 1 <= len(lengths) <= 3:
        fail(op, f"fft_length must have 1 to 3 entries, got {list(lengths)}")
    if any(n < 0 for n in lengths):
        fail(op, f"fft_length entries must be non-negative, got {list(lengths)}")
    if x.rank < len(lengths):
        fail(op, f"operand {x} has fewer dimensions than fft_length {list(lengths)}")
    et = x.element_type
    tail = x.shape[x.rank - len(lengths):]
    shape = list(x.shape)
    if kind in ("FFT", "IFFT"):
        if et.kind != "complex":
            fail(op, f"{kind} needs a complex operand, got {x}")
        out = et
        expect = lengths
    elif kind == "RFFT":
        if et not in (dtypes.f32, dtypes.f64):
            fail(op, f"RFFT needs an f32 or f64 operand, got {x}")
        out = dtypes.complex64 if et is dtypes.f32 else dtypes.complex128
        expect = lengths
        # (n // 2 + 1 complex values; none of none, as jaxlib infers)
        shape[-1] = lengths[-1] // 2 + 1 if lengths[-1] else 0
    else:
        if et.kind != "complex":
            fail(op, f"IRFFT needs a complex operand, got {x}")
        out = et.component
        # (n // 2 + 1 complex values in; for a length of 0, StableHLO's 0 // 2 + 1 = 1, which
        # jax emits, or none: jaxlib takes both)
        expect = lengths[:-1] + (lengths[-1] // 2 + 1,)
        if not lengths[-1] and tail[-1:] == (0,):
            expect = tail
        shape[-1] = lengths[-1]
    if tail != expect:
        fail(op, f"the trailing dimensions of operand {x} must be {list(expect)} for {kind} "
                 f"with fft_length {list(lengths)}, got {list(tail)}")
    return (tensor(shape, out),)


register(OpSpec("fft", ("operand",), {"fft_type": AttrSpec(fft_type, True),
                                      "fft_length": AttrSpec(i64_array, True)},
                infer=_fft, doc="FFT, IFFT, RFFT and IRFFT over the last "
                                                  "1-3 dimensions", pretty=pf.FFT))


@builder_method
def fft(b, x, fft_type, fft_length, *, location=None) -> Value:
    """``fft_type`` is FFT, IFFT, RFFT or IRFFT; ``fft_length`` the transform's lengths."""
    return b.create("fft", (x,), {"fft_type": fft_type, "fft_length": fft_length},
                    location=location).results[0]


# -- batch norm ------------------------------------------------------------------------------

def _bn_common(op, names, types, attributes):
    ts = [tensor_operand(op, n, t) for n, t in zip(names, types)]
    x = ts[0]
    if x.element_type.kind != "float":
        fail(op, f"operand {names[0]} must have float elements, got {x}")
    _same_et(op, names, ts)
    fi = attributes["feature_index"].value
    if not 0 <= fi < x.rank:
        fail(op, f"feature_index {fi} is out of range for operand {x} of rank {x.rank}")
    feat = tensor((x.shape[fi],), x.element_type)
    for n, t in zip(names[1:], ts[1:]):
        if t.shape != x.shape and t.rank == x.rank and n.startswith("grad"):
            fail(op, f"operand {n} must have the shape of {names[0]} {x}, got {t}")
        if not n.startswith("grad") and t.shape != feat.shape:
            fail(op, f"operand {n} must be {feat} (the size of dimension {fi} of "
                     f"{names[0]}), got {t}")
    return x, feat


def _bn_training(op, types, attributes):
    x, feat = _bn_common(op, ("operand", "scale", "offset"), types, attributes)
    return (x, feat, feat)


def _bn_inference(op, types, attributes):
    x, _ = _bn_common(op, ("operand", "scale", "offset", "mean", "variance"), types, attributes)
    return (x,)


def _bn_grad(op, types, attributes):
    x, feat = _bn_common(op, ("operand", "scale", "mean", "variance", "grad_output"), types,
                         attributes)
    if types[4].shape != x.shape:
        fail(op, f"operand grad_output must have the shape of operand {x}, got {types[4]}")
    return (x, feat, feat)


_BN_ATTRS = {"epsilon": AttrSpec(_f32, True), "feature_index": AttrSpec(_i64, True)}
register(OpSpec("batch_norm_training", ("operand", "scale", "offset"), dict(_BN_ATTRS),
                infer=_bn_training,
                doc="normalizes over all but feature_index; returns output, mean, variance",
                pretty=pf.BATCH_NORM_TRAINING, quantized="qdq"))
register(OpSpec("batch_norm_inference", ("operand", "scale", "offset", "mean", "variance"),
                dict(_BN_ATTRS), infer=_bn_inference, quantized="qdq"))
register(OpSpec("batch_norm_grad", ("operand", "scale", "mean", "variance", "grad_output"),
                dict(_BN_ATTRS), infer=_bn_grad, pretty=pf.BATCH_NORM_GRAD, quantized="qdq"))


@builder_method
def batch_norm_training(b, x, scale, offset, *, epsilon, feature_index, location=None) -> tuple:
    """Returns (normalized, batch mean, batch variance)."""
    return b.create("batch_norm_training", (x, scale, offset),
                    {"epsilon": epsilon, "feature_index": feature_index},
                    location=location).results


@builder_method
def batch_norm_inference(b, x, scale, offset, mean, variance, *, epsilon, feature_index,
                         location=None) -> Value:
    return b.create("batch_norm_inference", (x, scale, offset, mean, variance),
                    {"epsilon": epsilon, "feature_index": feature_index},
                    location=location).results[0]


@builder_method
def batch_norm_grad(b, x, scale, mean, variance, grad_output, *, epsilon, feature_index,
                    location=None) -> tuple:
    """Returns (grad_operand, grad_scale, grad_offset)."""
    return b.create("batch_norm_grad", (x, scale, mean, variance, grad_output),
                    {"epsilon": epsilon, "feature_index": feature_index},
                    location=location).results


# -- topk ------------------------------------------------------------------------------------

def _topk(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    if x.rank < 1:
        fail(op, f"operand must have rank at least 1, got {x}")
    k = attributes["k"].value
    if not 0 <= k <= x.shape[-1]:
        fail(op, f"k = {k} must be between 0 and the last dimension's size {x.shape[-1]} "
                 f"({x})")
    shape = x.shape[:-1] + (k,)
    return (tensor(shape, x.element_type), tensor(shape, i32))


register(OpSpec("topk", ("operand",), {"k": AttrSpec(_i64, True), "largest": AttrSpec(_bool)},
                infer=_topk, dialects=MHLO_ONLY,
                doc="the k largest (or smallest) entries along the last dimension, and their "
                    "i32 indices", pretty=pf.TOPK))


@builder_method
def topk(b, x, k, *, largest=None, location=None) -> tuple:
    """Returns (values, indices) of the ``k`` largest (``largest=False``: smallest) entries."""
    return b.create("topk", (x,), {"k": integer("topk", "k", k), "largest": largest},
                    location=location).results


# -- ragged_dot ------------------------------------------------------------------------------

def _ragged_dnums(v):
    if isinstance(v, RaggedDotDimensionNumbers):
        return v
    raise TypeError(f"expected RaggedDotDimensionNumbers, got {v!r}")


def _ragged_dot(op, types, attributes, mixed=False):
    lhs = tensor_operand(op, "lhs", types[0])
    rhs = tensor_operand(op, "rhs", types[1])
    gs = tensor_operand(op, "group_sizes", types[2])
    rd = attributes["ragged_dot_dimension_numbers"]
    dn = rd.dot_dimension_numbers
    if gs.element_type.kind not in ("sint", "uint") or gs.rank < 1:
        fail(op, f"operand group_sizes must be an integer tensor of rank >= 1, got {gs}")
    ragged_at = rd.lhs_ragged_dimensions[0] if len(rd.lhs_ragged_dimensions) == 1 else 0
    before = tuple(lhs.shape[:ragged_at]) if 0 <= ragged_at < lhs.rank else ()
    if gs.rank > 1 and gs.shape[:-1] != before:
        # (jaxlib: "expected group_sizes to have rank 1", or "... to have shape [3, 2]": the
        # lhs dimensions before the ragged one, then the groups)
        fail(op, f"operand group_sizes {gs} must be [groups] or [lhs dimensions before the "
                 f"ragged one..., groups] ({list(before)} here)")
    if len(rd.lhs_ragged_dimensions) != 1:
        fail(op, f"needs exactly one lhs ragged dimension, got {list(rd.lhs_ragged_dimensions)}")
    (ragged,) = rd.lhs_ragged_dimensions
    if not 0 <= ragged < lhs.rank:
        fail(op, f"lhs ragged dimension {ragged} is out of range for lhs {lhs}")
    group = rd.rhs_group_dimensions
    g = gs.shape[-1]
    non_contracting = ragged not in dn.lhs_contracting_dimensions + dn.lhs_batching_dimensions
    if non_contracting:
        if len(group) != 1:
            fail(op, "needs exactly one rhs group dimension when the lhs ragged dimension is "
                     f"non-contracting, got {list(group)}")
        if not 0 <= group[0] < rhs.rank or rhs.shape[group[0]] != g:
            fail(op, f"rhs group dimension {group[0]} must exist and have size {g} (the number "
                     f"of groups in {gs}), got {rhs}")
    elif group:
        fail(op, f"takes no rhs group dimension when the lhs ragged dimension is batch or "
                 f"contracting, got {list(group)}")
    # The product is a dot_general of lhs and rhs without its group dimension.
    rshape = [n for d, n in enumerate(rhs.shape) if d not in group]
    remap = [d - sum(1 for x in group if x < d) for d in range(rhs.rank)]
    inner = DotDimensionNumbers(dn.lhs_batching_dimensions,
                                [remap[d] for d in dn.rhs_batching_dimensions],
                                dn.lhs_contracting_dimensions,
                                [remap[d] for d in dn.rhs_contracting_dimensions])
    for d in dn.rhs_batching_dimensions + dn.rhs_contracting_dimensions:
        if d in group:
            fail(op, f"rhs dimension {d} is both a group and a batch/contracting dimension")
    if not mixed:
        _one_element_type(op, lhs, rhs)  # (of the operands as given)
    (res,) = _dot_general(op, (lhs, tensor(rshape, rhs.element_type)),
                          {"dot_dimension_numbers": inner,
                           "precision_config": attributes.get("precision_config")}, True)
    if ragged in dn.lhs_contracting_dimensions:
        return (tensor((g,) + res.shape, res.element_type),)
    return (res,)


def _ragged_dot_check(op, types, attributes, results, regions):
    _check_result_shape(op, _ragged_dot(op, types, attributes, mixed=True)[0], results)


register(OpSpec("ragged_dot", ("lhs", "rhs", "group_sizes"),
                {"ragged_dot_dimension_numbers": AttrSpec(_ragged_dnums, True),
                 "precision_config": AttrSpec(_precision_config)},
                infer=_ragged_dot, check=_ragged_dot_check, dialects=MHLO_ONLY,
                doc="dot_general whose lhs ragged dimension is split into groups",
                not_run="XLA:CPU cannot compile it: \"HLO opcode `ragged-dot` is not supported "
                        "by XLA:CPU ThunkEmitter\" (jaxlib 0.10)", n_results=1))


@builder_method
def ragged_dot(b, lhs, rhs, group_sizes, ragged_dot_dimension_numbers, *, precision_config=None,
               result_element_type=None, location=None) -> Value:
    """``result_element_type``: the result's, where it is not the operands' (or they have
    two), as dot_general's."""
    attrs = {"ragged_dot_dimension_numbers": ragged_dot_dimension_numbers,
             "precision_config": precision_config}
    rt = None
    if result_element_type is not None:
        spec = REGISTRY["ragged_dot"]
        conv = {k: spec.attributes[k].convert(v) for k, v in attrs.items() if v is not None}
        types = tuple(expressed_tensor(tensor_type(v, "ragged_dot"))
                      for v in (lhs, rhs, group_sizes))
        rt = _result_et("ragged_dot", _ragged_dot("ragged_dot", types, conv, mixed=True)[0],
                        result_element_type)
    return b.create("ragged_dot", (lhs, rhs, group_sizes), attrs, rt,
                    location=location).results[0]


# -- trace -----------------------------------------------------------------------------------

def _trace(op, types, attributes):
    tensor_operand(op, "operand", types[0])
    return ()


register(OpSpec("trace", ("operand",), {"tag": AttrSpec(_str, True)}, infer=_trace,
                dialects=MHLO_ONLY, doc="an internal debugging marker; it has no results and XLA "
                                    "drops it", pretty=pf.TRACE))


@builder_method
def trace(b, x, tag: str, *, location=None) -> Operation:
    """``mhlo.trace``: tags ``x`` for debugging; returns nothing."""
    return b.create("trace", (x,), {"tag": tag}, location=location)
