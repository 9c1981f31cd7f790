"""Rules for the reduce_* primitives: one ``reduce`` with the matching region and init."""

from __future__ import annotations

import numpy as np

from ..helpers import all_ones, highest, lowest, minmax_hlo
from ..mlir import register_lowering


def _init(dtype, kind):
    dtype = np.dtype(dtype)
    if kind == "sum" or kind == "or" or kind == "xor":
        return np.zeros((), dtype)
    if kind == "prod":
        return np.ones((), dtype)
    if kind == "and":
        return all_ones(dtype)
    return highest(dtype) if kind == "min" else lowest(dtype)


_COMBINE = {
    "sum": lambda r, a, e: r.add(a, e),
    "prod": lambda r, a, e: r.multiply(a, e),
    "max": lambda r, a, e: minmax_hlo(r, a, e, "max"),
    "min": lambda r, a, e: minmax_hlo(r, a, e, "min"),
    "and": lambda r, a, e: r.and_(a, e),
    "or": lambda r, a, e: r.or_(a, e),
    "xor": lambda r, a, e: r.xor(a, e),
}


def _reduction(kind):
    def rule(ctx, x, *, axes, out_sharding=None):
        b = ctx.builder
        init = b.constant(_init(ctx.avals_in[0].dtype, kind))
        return [b.reduce(x, init, axes, _COMBINE[kind])]
    rule.__name__ = f"_reduce_{kind}_lowering"
    return rule


for _kind in _COMBINE:
    register_lowering(f"reduce_{_kind}", _reduction(_kind))
