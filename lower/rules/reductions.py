"""Rules for the reduce_* primitives: one ``reduce`` with the matching region and init."""

from __future__ import annotations

import functools

import numpy as np

import mhlo_ir as hlo

from ..semantics import MONOIDS, monoid, monoid_identity
from ..mlir import register_lowering


@functools.lru_cache(maxsize=256)
def _init_attr(kind: str, dtype: np.dtype) -> hlo.DenseElementsAttr:
    """The init value's attribute, made once per (reduction, dtype): an immutable value, so
    the constant builder and the printer reuse their work on it (they key by identity)."""
    return hlo.DenseElementsAttr.from_array(monoid_identity(kind, dtype))


def _reduction(kind):
    def rule(ctx, x, *, axes, out_sharding=None):
        b = ctx.builder
        init = b.constant(_init_attr(kind, np.dtype(ctx.avals_in[0].dtype)))
        return [b.reduce(x, init, axes, monoid(kind, x.type.element_type))]
    rule.__name__ = f"_reduce_{kind}_lowering"
    return rule


for _kind in MONOIDS:
    register_lowering(f"reduce_{_kind}", _reduction(_kind))
