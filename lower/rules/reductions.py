"""Rules for the reduce_* primitives: one ``reduce`` with the matching region and init."""

from __future__ import annotations

from ..helpers import MONOIDS, monoid_identity
from ..mlir import register_lowering


def _reduction(kind):
    combine = MONOIDS[kind]

    def rule(ctx, x, *, axes, out_sharding=None):
        b = ctx.builder
        init = b.constant(monoid_identity(kind, ctx.avals_in[0].dtype))
        return [b.reduce(x, init, axes, combine)]
    rule.__name__ = f"_reduce_{kind}_lowering"
    return rule


for _kind in MONOIDS:
    register_lowering(f"reduce_{_kind}", _reduction(_kind))
