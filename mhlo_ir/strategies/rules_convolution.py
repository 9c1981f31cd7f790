"""The convolution rule: drawn layouts (any permutation of batch, feature and spatial
dimensions on each side), strides, padding (negative too), dilations, window reversal,
feature or batch groups and precisions; and dynamic_conv, the same with the padding a
constant operand (XLA folds it into a convolution; padding computed at run time it cannot
translate)."""

from __future__ import annotations

import numpy as np

from ..mhlo_attributes import ConvDimensionNumbers
from ..ops.convolution import window_output_size
from ..types import tensor
from .rules_linalg import precision_config
from .scope import Skip
from .table import rule


@rule("convolution", "dynamic_conv")
def _convolution(s, name):
    lhs = s.operand(lambda et: et.kind in ("sint", "float", "complex") and et.bits >= 16,
                    lambda t: 3 <= t.rank <= 4 and all(n > 0 for n in t.shape))
    r = lhs.type.rank
    n_sp = r - 2
    lp = s.c.permutation(r)
    ib, if_, isp = lp[0], lp[1], lp[2:]
    batch, feat = lhs.type.shape[ib], lhs.type.shape[if_]
    groups = [g for g in range(1, feat + 1) if feat % g == 0]
    fgc = s.c.choice(groups) if s.c.boolean(0.3) else 1
    bgc = 1
    if fgc == 1 and s.c.boolean(0.2):
        bgc = s.c.choice([g for g in range(1, batch + 1) if batch % g == 0])
    out_feat = s.c.integer(1, 3) * fgc * bgc
    strides, padding, ldil, rdil, window = [], [], [], [], []
    for d in isp:
        n = lhs.type.shape[d]
        ld = s.c.integer(1, 2) if s.c.boolean(0.2) else 1
        lo, hi = s.c.integer(-1, 2), s.c.integer(-1, 2)
        size = (n - 1) * ld + 1 + lo + hi
        rd = s.c.integer(1, 2) if s.c.boolean(0.2) else 1
        top = (size - 1) // rd + 1 if size > 0 else 0
        if top < 1:
            raise Skip("window does not fit")
        window.append(s.c.integer(1, min(3, top)))
        strides.append(s.c.integer(1, 2))
        padding.append((lo, hi))
        ldil.append(ld)
        rdil.append(rd)
    kp = s.c.permutation(r)
    ki, ko, ksp = kp[0], kp[1], kp[2:]
    kshape = [0] * r
    kshape[ki] = feat // fgc
    kshape[ko] = out_feat
    for d, w in zip(ksp, window):
        kshape[d] = w
    op = s.c.permutation(r)
    dn = ConvDimensionNumbers(ib, if_, tuple(isp), ki, ko, tuple(ksp), op[0], op[1],
                              tuple(op[2:]))
    rhs = s.value_of(tensor(tuple(kshape), lhs.type.element_type))
    if lhs.type.element_type.kind != "sint":
        s.gen.traits.add("reassociates")
    reversal = [s.c.boolean(0.2) for _ in range(n_sp)] if s.c.boolean(0.2) else None
    kw = dict(window_strides=strides, lhs_dilation=ldil, rhs_dilation=rdil,
              window_reversal=reversal, feature_group_count=fgc, batch_group_count=bgc,
              precision_config=precision_config(s))
    if name == "convolution":
        return [s.b.convolution(lhs, rhs, dn, padding=padding, **kw)]
    shape = [0] * r
    shape[op[0]], shape[op[1]] = batch // bgc, out_feat
    for i, d in enumerate(isp):
        shape[op[2 + i]] = window_output_size(lhs.type.shape[d], window[i], strides[i],
                                              *padding[i], ldil[i], rdil[i])
    # (jaxlib's conversion zero-extends a negative padding narrower than i64:
    # jaxlib_conversion.narrow_negative_padding)
    narrow = min(min(p) for p in padding) >= 0 and s.c.boolean(0.5)
    pad = s.b.constant(np.array(padding, np.int32 if narrow else np.int64))
    return [s.b.dynamic_conv(lhs, rhs, pad, dn, tensor(tuple(shape), lhs.type.element_type),
                             **kw)]
