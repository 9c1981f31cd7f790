"""Rule for conv_general_dilated: one ``mhlo.convolution`` with JAX's dimension numbers
(lhs_spec, rhs_spec, out_spec), strides, padding, dilations, feature and batch groups,
precision and preferred element type.

On cpu and gpu complex convolutions are expanded into three real ones (Gauss's trick), as JAX
does, because XLA's runtimes there do not convolve complex numbers.
"""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo

from ..mlir import register_lowering
from .linalg import _precision_config


def _specs(dimension_numbers, rank):
    if dimension_numbers is None:
        iota = tuple(range(rank))
        return iota, iota, iota
    if hasattr(dimension_numbers, "lhs_spec"):
        dn = dimension_numbers
        return tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)
    lhs, rhs, out = dimension_numbers
    return tuple(lhs), tuple(rhs), tuple(out)


def _conv_general_dilated(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation=None,
                          rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                          batch_group_count=1, precision=None, preferred_element_type=None,
                          expand_complex_convolutions=False, **_):
    b = ctx.builder
    lhs_spec, rhs_spec, out_spec = _specs(dimension_numbers, len(ctx.avals_in[0].shape))
    hdn = hlo.ConvDimensionNumbers(
        input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=lhs_spec[2:],
        kernel_output_feature_dimension=rhs_spec[0], kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=rhs_spec[2:],
        output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
        output_spatial_dimensions=out_spec[2:])
    nsp = len(rhs_spec) - 2
    in_dtype, out_dtype = ctx.avals_in[0].dtype, np.dtype(ctx.avals_out[0].dtype)

    def conv(x, y, dtype):
        return b.convolution(
            x, y, hdn, window_strides=tuple(window_strides) if nsp else None,
            padding=[tuple(p) for p in padding] if nsp else None,
            lhs_dilation=tuple(lhs_dilation) if lhs_dilation is not None and nsp else None,
            rhs_dilation=tuple(rhs_dilation) if rhs_dilation is not None and nsp else None,
            window_reversal=[False] * nsp if nsp else None,
            feature_group_count=int(feature_group_count),
            batch_group_count=int(batch_group_count),
            precision_config=_precision_config(precision),
            result_element_type=None if dtype == x.type.element_type.dtype else dtype)

    if expand_complex_convolutions and np.dtype(in_dtype).kind == "c":
        real_dtype = np.finfo(out_dtype).dtype
        lr, li, rr, ri = b.real(lhs), b.imag(lhs), b.real(rhs), b.imag(rhs)
        k1 = conv(b.add(lr, li), rr, real_dtype)
        k2 = conv(lr, b.subtract(ri, rr), real_dtype)
        k3 = conv(li, b.add(rr, ri), real_dtype)
        return [b.complex(b.subtract(k1, k3), b.add(k1, k2))]
    return [conv(lhs, rhs, out_dtype)]


def _expanded(ctx, *args, **params):
    return _conv_general_dilated(ctx, *args, **params, expand_complex_convolutions=True)


register_lowering("conv_general_dilated", _conv_general_dilated)
register_lowering("conv_general_dilated", _expanded, platform="cpu")
register_lowering("conv_general_dilated", _expanded, platform="gpu")
