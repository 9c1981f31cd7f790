"""Rules for collectives: psum, pmax, pmin, all_gather, all_to_all, ppermute, axis_index.

Named axes become replica groups through the module's axis context (lower.axis_context): under
a ReplicaAxisContext the groups list replica ids; under an SPMD context every collective gets a
fresh channel handle and ``use_global_device_ids`` so that XLA reads the ids as partitions.
Integer entries of ``axes`` (psum & co.) are positional axes, reduced locally first.
"""

from __future__ import annotations

import numpy as np

from mhlo_ir import tensor

from ..axis_context import axis_env_of, is_spmd, replica_groups, replica_groups_array
from ..helpers import minmax_hlo
from ..mlir import register_lowering
from .reductions import _COMBINE, _init

_DEVICE_TO_DEVICE = 1


def _spmd_args(ctx, global_ids: bool = True) -> dict:
    mctx = ctx.module_context
    if not is_spmd(mctx.axis_context):
        return {}
    args = {"channel_handle": (mctx.new_channel(), _DEVICE_TO_DEVICE)}
    if global_ids:
        args["use_global_device_ids"] = True
    return args


def _groups(ctx, prim, axis_name, axis_index_groups):
    env = axis_env_of(ctx, prim)
    return replica_groups(env, axis_name, axis_index_groups)


def _allreduce(kind: str):
    region = {"sum": lambda r, a, e: r.add(a, e),
              "max": lambda r, a, e: minmax_hlo(r, a, e, "max"),
              "min": lambda r, a, e: minmax_hlo(r, a, e, "min")}[kind]
    prim = {"sum": "psum", "max": "pmax", "min": "pmin"}[kind]

    def rule(ctx, *args, axes, axis_index_groups=None):
        b = ctx.builder
        named = [a for a in axes if not isinstance(a, (int, np.integer))]
        positional = tuple(int(a) for a in axes if isinstance(a, (int, np.integer)))
        if positional:
            args = [b.reduce(x, b.constant(_init(aval.dtype, kind)), positional,
                             _COMBINE[kind]) for aval, x in zip(ctx.avals_in, args)]
        if not named:
            return list(args)
        groups = replica_groups_array(_groups(ctx, prim, tuple(named), axis_index_groups))
        return [b.all_reduce(x, region, groups, **_spmd_args(ctx)) for x in args]
    rule.__name__ = f"_{prim}_lowering"
    return rule


for _kind in ("sum", "max", "min"):
    register_lowering({"sum": "psum", "max": "pmax", "min": "pmin"}[_kind], _allreduce(_kind))


def _all_gather(ctx, x, *, all_gather_dimension, axis_name, axis_size, tiled=False,
                axis_index_groups=None):
    b = ctx.builder
    (aval,) = ctx.avals_in
    if not tiled:
        shape = list(aval.shape)
        shape.insert(all_gather_dimension, 1)
        dims = [i for i in range(len(shape)) if i != all_gather_dimension]
        x = b.broadcast_in_dim(x, shape, dims)
    groups = _groups(ctx, "all_gather", axis_name, axis_index_groups)
    out_shape = ctx.avals_out[0].shape
    return [b.all_gather(x, all_gather_dimension, replica_groups_array(groups),
                         result_types=[tensor(out_shape, ctx.avals_out[0].dtype)],
                         **_spmd_args(ctx))]


register_lowering("all_gather", _all_gather)


def _all_to_all(ctx, x, *, split_axis, concat_axis, axis_name, axis_index_groups=None,
                tiled=False):
    groups = _groups(ctx, "all_to_all", axis_name, axis_index_groups)
    split_count = len(groups[0])
    if split_count == 1:
        return [x]
    if any(len(g) != split_count for g in groups):
        raise ValueError("all_to_all: replica groups must be equally sized, got "
                         f"{[len(g) for g in groups]}")
    return [ctx.builder.all_to_all(x, split_axis, concat_axis, split_count,
                                   replica_groups_array(groups),
                                   **_spmd_args(ctx, global_ids=False))]


register_lowering("all_to_all", _all_to_all)


def _ppermute(ctx, x, *, axis_name, perm):
    groups = _groups(ctx, "ppermute", axis_name, None)
    size = len(groups[0])
    srcs = [s % size for s, _ in perm]
    dsts = [d % size for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}")
    pairs = np.zeros((len(groups), len(perm), 2), np.int64)
    for i, g in enumerate(groups):
        g = sorted(g)
        for j, (s, d) in enumerate(perm):
            pairs[i, j] = (g[s], g[d])
    axis_context = ctx.module_context.axis_context
    extra = {}
    if getattr(axis_context, "manual_axes", None):
        extra = {"channel_handle": (ctx.module_context.new_channel(), _DEVICE_TO_DEVICE)}
    return [ctx.builder.collective_permute(x, pairs.reshape(-1, 2), **extra)]


register_lowering("ppermute", _ppermute)


def _axis_index(ctx, *, axis_name):
    if isinstance(axis_name, (tuple, list)):
        if len(axis_name) != 1:
            raise NotImplementedError("axis_index of several axis names: index each one")
        (axis_name,) = axis_name
    b = ctx.builder
    env = axis_env_of(ctx, "axis_index")
    if axis_name not in env.names:
        raise NameError(f"unbound axis name: {axis_name!r} (the axis environment names "
                        f"{list(env.names)})")
    pos = list(env.names).index(axis_name)
    trailing = env.nreps // int(np.prod(env.sizes, dtype=np.int64))
    div = b.constant(np.uint32(trailing * int(np.prod(env.sizes[pos + 1:], dtype=np.int64))))
    mod = b.constant(np.uint32(env.sizes[pos]))
    device = b.partition_id() if is_spmd(ctx.module_context.axis_context) else b.replica_id()
    index = b.remainder(b.divide(device, div), mod)
    return [b.convert(index, np.int32)]


register_lowering("axis_index", _axis_index)


# -- shard_map: a manually partitioned region -------------------------------------------------

def _shard_map(ctx, *args, jaxpr, mesh, in_specs, out_specs, check_vma=True,
               manual_axes=frozenset(), **_):
    """As jax's (GSPMD) shard_map lowering: each argument gets its sharding and enters the
    manual region (``Sharding`` + ``SPMDFullToShardShape`` custom calls), the body is a
    private function lowered under an SPMDAxisContext, and each result leaves the region
    (``SPMDShardToFullShape``). Only fully manual regions (every mesh axis manual)."""
    from ..axis_context import SPMDAxisContext, spec_to_hlo_sharding
    from ..core import ClosedJaxpr
    from ..mlir import call_lowering, wrap_with_sharding_op

    manual = frozenset(manual_axes) or frozenset(mesh.axis_names)
    if manual != frozenset(mesh.axis_names):
        raise NotImplementedError("shard_map with some mesh axes left automatic (partial "
                                  "manual) is not supported: make every axis manual")
    b = ctx.builder
    closed = jaxpr if hasattr(jaxpr, "jaxpr") else ClosedJaxpr(jaxpr, [])
    inner_in = [v.aval for v in closed.jaxpr.invars]
    inner_out = [v.aval for v in closed.jaxpr.outvars]
    shards = []
    for x, spec, aval, inner in zip(args, in_specs, ctx.avals_in, inner_in):
        sx = wrap_with_sharding_op(b, x, spec_to_hlo_sharding(mesh, spec, len(aval.shape)))
        (y,) = b.custom_call("SPMDFullToShardShape", [sx], [tensor(inner.shape, inner.dtype)])
        y.set_attr("mhlo.sharding", "{manual}")
        shards.append(y)
    mctx = ctx.module_context
    sub = mctx.replace(axis_context=SPMDAxisContext(mesh, manual))
    outs = call_lowering(ctx.replace(module_context=sub), "shmap_body", closed, *shards)
    results = []
    for o, spec, aval, inner in zip(outs, out_specs, ctx.avals_out, inner_out):
        o = o[0] if isinstance(o, (list, tuple)) else o
        so = wrap_with_sharding_op(b, o, "{manual}")
        (z,) = b.custom_call("SPMDShardToFullShape", [so], [tensor(aval.shape, aval.dtype)])
        z.set_attr("mhlo.sharding", spec_to_hlo_sharding(mesh, spec, len(aval.shape)))
        results.append(z)
    return results


register_lowering("shard_map", _shard_map)
