"""jax's async collective pairs (``psum_start``/``psum_done``, ``ppermute_start``/...): the
start lowered as the synchronous collective, the done as its operand.

jax wraps the collective in a ``stablehlo.async_start`` region whose future ``async_done``
resolves. The values are the synchronous collective's either way, and XLA schedules
collectives asynchronously itself where the platform can overlap them; XLA:CPU runs them
in order. A future crossing a loop or call boundary is carried as its value.
"""

from __future__ import annotations

from ..mlir import lowering_rule, register_lowering

# start primitive -> the synchronous primitive whose rule it uses
_STARTS = {
    "all_gather_start": "all_gather", "all_gather_reduced_start": "all_gather_reduced",
    "psum_start": "psum", "psum_invariant_start": "psum_invariant",
    "unreduced_psum_start": "unreduced_psum", "reduce_scatter_start": "reduce_scatter",
    "unreduced_reduce_scatter_start": "unreduced_reduce_scatter",
    "all_to_all_start": "all_to_all", "pbroadcast_start": "pbroadcast",
    "ppermute_start": "ppermute",
}
_DONES = ("all_gather_done", "psum_done", "reduce_scatter_done", "all_to_all_done",
          "pbroadcast_done", "ppermute_done")


def _start(sync: str):
    def rule(ctx, *args, **params):
        platform = ctx.module_context.platform
        inner = [getattr(a, "inner_aval", a) for a in ctx.avals_out]
        return lowering_rule(sync, platform)(ctx.replace(avals_out=inner), *args, **params)
    rule.__name__ = f"_{sync}_start_lowering"
    return rule


for _start_name, _sync in _STARTS.items():
    register_lowering(_start_name, _start(_sync))
for _done in _DONES:
    register_lowering(_done, lambda ctx, *xs, **_: list(xs))
