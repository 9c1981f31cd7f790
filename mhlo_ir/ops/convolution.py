"""Convolution: ``convolution`` and ``dynamic_conv`` (windowed products with strides,
padding, dilations and groups), and the window arithmetic and converters the windowed ops of
``windows`` share with them."""

from __future__ import annotations

import numpy as np

from ..attributes import Attribute, DenseArrayAttr
from ..dense import DenseElementsAttr, i64_array
from ..index_array import BoolArrayAttr, index_ints
from ..dtypes import i64
from ..mhlo_attributes import ConvDimensionNumbers
from ..types import TensorType, tensor
from ..ir import Value
from .. import op_forms as pf
from ..quant import expressed_tensor
from . import convert
from .args import integer, pairs
from .convert import show
from .held import constant_ints
from .linalg import _check_result_shape, _precision_config, _result_et
from .spec import REGISTRY, AttrSpec, OpSpec, builder_method, fail, register, tensor_operand

_i64 = convert.i64


# -- converters (the windowed ops of ``windows`` take padding the same way) --------------------

def _padding(v):
    """``[[lo, hi], ...]`` (or the flat ``[lo0, hi0, lo1, hi1, ...]``) as ``dense<...> :
    tensor<Nx2xi64>``; a DenseElementsAttr must already be that."""
    if isinstance(v, DenseElementsAttr):
        t = v.type
        if t.element_type is not i64 or t.rank != 2 or t.shape[1] != 2:
            raise TypeError(f"expected (low, high) pairs as a tensor<Nx2xi64>, got {t}")
        return v
    if isinstance(v, (str, bytes, Attribute)) or not hasattr(v, "__iter__"):
        raise TypeError(f"expected a list of (low, high) pairs, got {show(v)}")
    rows = list(v)
    flat = all(not hasattr(r, "__iter__") for r in rows)
    if flat:
        if len(rows) % 2:
            raise ValueError(f"a flat padding list needs an even number of integers, got "
                             f"{len(rows)}")
        rows = [rows[i:i + 2] for i in range(0, len(rows), 2)]
    out = []
    for i, r in enumerate(rows):
        if isinstance(r, (str, bytes, Attribute)) or not hasattr(r, "__iter__"):
            raise TypeError(f"entry {i} must be a (low, high) pair, got {show(r)}")
        r = tuple(r)
        if len(r) != 2:
            raise ValueError(f"entry {i} must be a (low, high) pair, got {len(r)} values")
        out.append([_i64(x).value for x in r])
    return DenseElementsAttr.from_array(np.array(out, dtype=np.int64).reshape(len(out), 2))


def _bools(v):
    """window_reversal: bools, a 1-D i1 DenseElementsAttr ("constant boolean vector/tensor
    attribute"; 0/1 integers or floats are refused there) or an ``array<i1: ...>`` (what
    StableHLO text holds); a BoolArrayAttr, which each output dialect spells its own way."""
    if isinstance(v, BoolArrayAttr):
        return v
    if isinstance(v, DenseElementsAttr):
        t = v.type
        if not t.element_type.is_bool or t.rank != 1:
            raise TypeError(f"expected a 1-D tensor of i1 (bools), got {t}")
        return BoolArrayAttr(tuple(v.listed().tolist()))
    if isinstance(v, DenseArrayAttr):
        if not v.type.is_bool:
            raise TypeError(f"expected array<i1: ...> (bools), got array<{v.type.name}>")
        return BoolArrayAttr(v.values)
    if isinstance(v, (str, bytes, Attribute)) or not hasattr(v, "__iter__"):
        raise TypeError(f"expected a list of bools, got {show(v)}")
    vs = list(v)
    for i, x in enumerate(vs):
        if not isinstance(x, (bool, np.bool_)):
            raise TypeError(f"expected bools, got {show(x)} at index {i}")
    return BoolArrayAttr(tuple(bool(x) for x in vs))


# -- convolution -----------------------------------------------------------------------------

def _conv_dnums(v):
    """A ConvDimensionNumbers, a dict of its fields, or the layout as MLIR prints it inside
    ``#mhlo.conv<...>``: ``"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"``."""
    if isinstance(v, ConvDimensionNumbers):
        return v
    if isinstance(v, dict):
        return ConvDimensionNumbers(**v)
    if isinstance(v, str):
        from ..attributes import parse_attribute
        from ..syntax import ParseError
        try:
            return parse_attribute(f"#mhlo.conv<{v}>")
        except ParseError as e:
            raise ValueError(f"{v!r} is not a convolution layout such as "
                             f"'[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]': {e}") from None
    raise TypeError(f"expected ConvDimensionNumbers (or a layout such as "
                    f"'[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]'), got {v!r}")


def _window_list(op, attributes, name, n, default):
    a = attributes.get(name)
    if a is None:
        return (default,) * n
    vals = index_ints(a)
    if len(vals) != n:
        fail(op, f"{name} has {len(vals)} entries, expected {n} (one per spatial dimension)")
    return vals


def _pads(op, attributes, n):
    a = attributes.get("padding")
    if a is None:
        return ((0, 0),) * n
    if a.type.shape != (n, 2):
        fail(op, f"padding must have shape [{n}, 2] (one [low, high] pair per spatial "
                 f"dimension), got {list(a.type.shape)}")
    return tuple((int(lo), int(hi)) for lo, hi in a.to_array())


def window_output_size(size, window, stride, lo, hi, base_dilation=1, window_dilation=1,
                       op=None, dim=None):
    """The number of windows along one dimension (StableHLO's shape rule for convolution and
    reduce_window). A negative padded size is an error: MLIR's verifier lets it through and
    XLA then aborts the process."""
    dilated = 0 if size == 0 else (size - 1) * base_dilation + 1
    padded = dilated + lo + hi
    if padded < 0:
        fail(op or "window", f"dimension {dim}: padding ({lo}, {hi}) on a (dilated) size of "
                             f"{dilated} leaves {padded} elements; it must not be negative")
    dw = 0 if window == 0 else (window - 1) * window_dilation + 1
    if padded < dw or padded <= 0:
        return 0
    return (padded - dw) // stride + 1


def _convolution(op, types, attributes):
    lhs = tensor_operand(op, "lhs", types[0])
    rhs = tensor_operand(op, "rhs", types[1])
    dn = attributes["dimension_numbers"]
    if not isinstance(dn, ConvDimensionNumbers):
        fail(op, f"attribute dimension_numbers must be ConvDimensionNumbers, got {dn!r}")
    n = len(dn.input_spatial_dimensions)
    if lhs.rank != n + 2:
        fail(op, f"lhs must have rank {n + 2} (batch, feature and {n} spatial dimensions per "
                 f"dimension_numbers), got {lhs}")
    if rhs.rank != n + 2 or len(dn.kernel_spatial_dimensions) != n or \
            len(dn.output_spatial_dimensions) != n:
        fail(op, f"rhs must have rank {n + 2} and the dimension numbers {n} spatial dimensions "
                 f"everywhere, got {rhs}")
    if lhs.element_type is not rhs.element_type:
        fail(op, f"operands lhs and rhs must have the same element type, got {lhs} and {rhs}")
    fgc = attributes["feature_group_count"].value
    bgc = attributes["batch_group_count"].value
    if fgc <= 0 or bgc <= 0:
        fail(op, f"feature_group_count ({fgc}) and batch_group_count ({bgc}) must be positive")
    if fgc != 1 and bgc != 1:
        fail(op, f"feature_group_count ({fgc}) and batch_group_count ({bgc}) cannot both "
                 "exceed 1")
    batch = lhs.shape[dn.input_batch_dimension]
    in_f = lhs.shape[dn.input_feature_dimension]
    k_in = rhs.shape[dn.kernel_input_feature_dimension]
    k_out = rhs.shape[dn.kernel_output_feature_dimension]
    if in_f % fgc:
        fail(op, f"input feature dimension size {in_f} is not divisible by feature_group_count "
                 f"{fgc}")
    if in_f // fgc != k_in:
        fail(op, f"kernel input feature dimension has size {k_in}, expected {in_f // fgc} "
                 f"(input features {in_f} / feature_group_count {fgc}): {lhs} vs {rhs}")
    if k_out % fgc:
        fail(op, f"kernel output feature dimension size {k_out} is not divisible by "
                 f"feature_group_count {fgc}")
    if batch % bgc:
        fail(op, f"input batch dimension size {batch} is not divisible by batch_group_count "
                 f"{bgc}")
    if k_out % bgc:
        fail(op, f"kernel output feature dimension size {k_out} is not divisible by "
                 f"batch_group_count {bgc}")
    strides = _window_list(op, attributes, "window_strides", n, 1)
    lhs_dil = _window_list(op, attributes, "lhs_dilation", n, 1)
    rhs_dil = _window_list(op, attributes, "rhs_dilation", n, 1)
    _window_list(op, attributes, "window_reversal", n, False)
    for name, vals in (("window_strides", strides), ("lhs_dilation", lhs_dil),
                       ("rhs_dilation", rhs_dil)):
        for i, s in enumerate(vals):
            if s <= 0:
                fail(op, f"{name}[{i}] = {s} must be positive")
    pads = _pads(op, attributes, n)
    pc = attributes.get("precision_config")
    if pc is not None and len(pc.elements) > 2:
        fail(op, f"precision_config must have at most 2 entries, got {len(pc.elements)}")
    shape = [0] * (n + 2)
    shape[dn.output_batch_dimension] = batch // bgc
    shape[dn.output_feature_dimension] = k_out
    for i in range(n):
        size = lhs.shape[dn.input_spatial_dimensions[i]]
        window = rhs.shape[dn.kernel_spatial_dimensions[i]]
        if window == 0:  # (jaxlib: "expects window to have positive value")
            fail(op, f"rhs spatial dimension {dn.kernel_spatial_dimensions[i]} (the window's "
                     f"dimension {i}) has size 0: windows must be at least 1 wide, got rhs "
                     f"{rhs}")
        shape[dn.output_spatial_dimensions[i]] = window_output_size(
            size, window, strides[i], pads[i][0], pads[i][1], lhs_dil[i], rhs_dil[i], op,
            dn.input_spatial_dimensions[i])
    return (tensor(shape, lhs.element_type),)


def _convolution_check(op, types, attributes, results, regions):
    _check_result_shape(op, _convolution(op, types[:2], attributes)[0], results)


_CONV_ATTRS = {
    "window_strides": AttrSpec(i64_array),
    "padding": AttrSpec(_padding),
    "lhs_dilation": AttrSpec(i64_array),
    "rhs_dilation": AttrSpec(i64_array),
    "window_reversal": AttrSpec(_bools),
    "dimension_numbers": AttrSpec(_conv_dnums, True),
    "feature_group_count": AttrSpec(_i64, True),
    "batch_group_count": AttrSpec(_i64, True),
    "precision_config": AttrSpec(_precision_config),
}

register(OpSpec("convolution", ("lhs", "rhs"), dict(_CONV_ATTRS), infer=_convolution,
                check=_convolution_check, pretty=pf.CONVOLUTION,
                doc="windowed products with strides, padding, dilations and groups",
                quantized="dot_like", n_results=1))


def _dynamic_conv_check(op, types, attributes, results, regions):
    pad = tensor_operand(op, "d_padding", types[2])
    if pad.element_type.kind not in ("sint", "uint"):
        fail(op, f"operand d_padding must have integer elements, got {pad}")
    spatial = types[0].rank - 2 if isinstance(types[0], TensorType) else None
    if spatial is not None and pad.shape != (spatial, 2):
        # (jaxlib: "expects padding to be of shape [2, 2], but got [3, 2]")
        fail(op, f"operand d_padding must have shape [{spatial}, 2] (a [low, high] pair per "
                 f"spatial dimension of lhs {types[0]}), got {pad}")
    _convolution(op, types[:2], attributes)  # all but the padding-dependent spatial sizes
    r = results[0]
    if not isinstance(r, TensorType) or r.rank != types[0].rank:
        fail(op, f"result must be a tensor of rank {types[0].rank} (as lhs {types[0]}), got {r}")


def _dynamic_conv_held(op, operands, attributes, results):
    """A constant padding must give the result type's shape: jaxlib folds the op into a
    convolution with that padding and only then compares ("'mhlo.convolution' op inferred
    shape '[1, 5, 2, 2]' is incompatible with return type")."""
    held = constant_ints(operands[2], op, "d_padding")
    if held is None:
        return
    pairs = np.array(held, np.int64).reshape(-1, 2)
    want = _convolution(op, [v.type for v in operands[:2]],
                        dict(attributes, padding=_padding(pairs)))[0]
    if want.shape != results[0].shape:
        fail(op, f"the padding held ({pairs.tolist()}) makes the result {want}, but the result "
                 f"type is {results[0]}")


register(OpSpec("dynamic_conv", ("lhs", "rhs", "d_padding"), dict(_CONV_ATTRS),
                check=_dynamic_conv_check, operand_check=_dynamic_conv_held,
                doc="convolution whose padding is an operand. jaxlib's conversion to HLO "
                    "folds a constant padding into a convolution; padding computed from an "
                    "argument \"can't be translated to XLA HLO\" (verify.check says so).",
                n_results=1, quantized="not_yet"))


def _conv_builder_attrs(op, dimension_numbers, window_strides, padding, lhs_dilation,
                        rhs_dilation, window_reversal, feature_group_count, batch_group_count,
                        precision_config):
    # The group counts' converter takes int(v) and the padding's numpy.asarray(v, int64):
    # both would truncate 1.5, so the front doors check them.
    return {"dimension_numbers": dimension_numbers, "window_strides": window_strides,
            "padding": pairs(op, "padding", padding), "lhs_dilation": lhs_dilation,
            "rhs_dilation": rhs_dilation, "window_reversal": window_reversal,
            "feature_group_count": integer(op, "feature_group_count", feature_group_count),
            "batch_group_count": integer(op, "batch_group_count", batch_group_count),
            "precision_config": precision_config}


@builder_method
def convolution(b, lhs, rhs, dimension_numbers, *, window_strides=None, padding=None,
                lhs_dilation=None, rhs_dilation=None, window_reversal=None,
                feature_group_count=1, batch_group_count=1, precision_config=None,
                result_element_type=None, location=None) -> Value:
    """``mhlo.convolution``; ``dimension_numbers`` is a ConvDimensionNumbers or its layout as
    the printer writes it (``"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"``: batch, feature and
    spatial dimensions of the input, kernel and output), ``padding`` a list of ``(low, high)``
    pairs per spatial dimension."""
    attrs = _conv_builder_attrs("convolution", dimension_numbers, window_strides, padding,
                                lhs_dilation, rhs_dilation, window_reversal,
                                feature_group_count, batch_group_count, precision_config)
    rt = None
    if result_element_type is not None:
        spec = REGISTRY["convolution"]
        conv = {}
        for k, v in attrs.items():
            if v is not None:
                try:
                    conv[k] = spec.attributes[k].convert(v)
                except (TypeError, ValueError) as e:
                    fail("convolution", f"attribute {k}: {e}")
        # (the shape, from the types quantized ones stand for: the spec's rule for them)
        inferred = _convolution("convolution", (expressed_tensor(getattr(lhs, "type", None)),
                                                expressed_tensor(getattr(rhs, "type", None))),
                                conv)[0]
        rt = _result_et("convolution", inferred, result_element_type)
    return b.create("convolution", (lhs, rhs), attrs, rt, location=location).results[0]


@builder_method
def dynamic_conv(b, lhs, rhs, d_padding, dimension_numbers, result_type, *, window_strides=None,
                 padding=None, lhs_dilation=None, rhs_dilation=None, window_reversal=None,
                 feature_group_count=1, batch_group_count=1, precision_config=None,
                 location=None) -> Value:
    """``mhlo.dynamic_conv``: a convolution with the padding given as an ``Nx2`` operand; its
    result type depends on that operand's value, so the caller states it."""
    attrs = _conv_builder_attrs("dynamic_conv", dimension_numbers, window_strides, padding,
                                lhs_dilation, rhs_dilation, window_reversal,
                                feature_group_count, batch_group_count, precision_config)
    return b.create("dynamic_conv", (lhs, rhs, d_padding), attrs, (result_type,),
                    location=location).results[0]
