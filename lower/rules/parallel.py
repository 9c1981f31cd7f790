"""Rules for collectives: psum, pmax, pmin, all_gather, all_to_all, ppermute, reduce_scatter,
pbroadcast, ragged_all_to_all, axis_index, and the shard_map region they run in.

Named axes become replica groups through the module's axis context (lower.axis_context): under
a ReplicaAxisContext the groups list replica ids; under an SPMD context every collective gets a
fresh channel handle and ``use_global_device_ids`` so that XLA reads the ids as partitions.
Integer entries of ``axes`` (psum & co.) are positional axes, reduced locally first.

jax's varying/invariant/reduced bookkeeping primitives (pvary, psum_invariant,
all_gather_invariant, the unreduced and reduced casts) only change types at trace time; they
lower to the plain collective or to nothing, as in jax.
"""

from __future__ import annotations

import math

import numpy as np

from mhlo_ir import DenseElementsAttr, IntegerAttr, i64, tensor

from ..axis_context import (PartitionSpec, SPMDAxisContext, axis_env_of, is_spmd, manual_axes_of,
                            manual_sharding, replica_groups, replica_groups_array,
                            spec_to_hlo_sharding, partly_manual)
from ..semantics import MONOIDS, monoid_identity
from ..mlir import COLLECTIVE_CHANNEL, call_lowering, register_lowering
from .random import physical_aval

_DEVICE_TO_DEVICE = 1


def _spmd_args(ctx, global_ids: bool = True) -> dict:
    """A collective's channel and id attributes: under SPMD XLA reads replica groups as
    partition ids only with a channel handle (and ``use_global_device_ids`` where the op has
    it); among replicas both are left out, as jax leaves them."""
    mctx = ctx.module_context
    if not is_spmd(mctx.axis_context):
        return {}
    args = {"channel_handle": (COLLECTIVE_CHANNEL, _DEVICE_TO_DEVICE)}
    if global_ids:
        args["use_global_device_ids"] = True
    return args


def _groups(ctx, prim, axis_name, axis_index_groups):
    """The replica groups of a collective over ``axis_name``; ``prim`` names it in the error
    when the module has no axis context."""
    env = axis_env_of(ctx, prim)
    return replica_groups(env, axis_name, axis_index_groups)


def _manual(ctx, y):
    """``y``, a collective's result, marked manual over the region's axes when only some mesh
    axes are manual.

    NOTE: XLA's GSPMD partitioner aborts the process on an unmarked all_gather or all_to_all
    in a partly manual region ("Check failed: sharding.IsManualSubgroup()", jaxlib 0.10.2;
    jax's own GSPMD lowering of all_gather hits it too, its Shardy one does not). Every
    collective is marked, as jax's sharding-in-types lowering marks every value."""
    axis_context = ctx.module_context.axis_context
    manual = partly_manual(axis_context)
    if manual:
        y.set_attr("mhlo.sharding", manual_sharding(axis_context.mesh, manual,
                                                    len(y.type.shape)))
    return y


def _identity(ctx, x, **_):
    """jax's varying/reduced casts: type bookkeeping while tracing, no data moves."""
    return [x]


def _allreduce(prim: str, kind: str):
    """psum/pmax/pmin: positional axes are reduced on the device first, then named axes by
    one all_reduce per operand."""
    region = MONOIDS[kind]

    def rule(ctx, *args, axes, axis_index_groups=None):
        b = ctx.builder
        named = [a for a in axes if not isinstance(a, (int, np.integer))]
        positional = tuple(int(a) for a in axes if isinstance(a, (int, np.integer)))
        if positional:
            args = [b.reduce(x, b.constant(monoid_identity(kind, aval.dtype)), positional,
                             region) for aval, x in zip(ctx.avals_in, args)]
        if not named:
            return list(args)
        groups = replica_groups_array(_groups(ctx, prim, tuple(named), axis_index_groups))
        return [_manual(ctx, b.all_reduce(x, region, groups, **_spmd_args(ctx))) for x in args]
    rule.__name__ = f"_{prim}_lowering"
    return rule


# Invariant (psum_invariant) and unreduced (unreduced_psum) sums differ from psum only in the
# types jax checks while tracing.
for _prim, _kind in (("psum", "sum"), ("pmax", "max"), ("pmin", "min"),
                     ("psum_invariant", "sum"), ("unreduced_psum", "sum")):
    register_lowering(_prim, _allreduce(_prim, _kind))
# Casts between varying, invariant, reduced and unreduced values: nothing moves.
for _name in ("pvary", "preduced", "vary_unreduced_cast_p", "reduced_vary_cast_p"):
    register_lowering(_name, _identity)


def _all_gather(ctx, x, *, all_gather_dimension, axis_name, axis_size, tiled=False,
                axis_index_groups=None):
    b = ctx.builder
    # (typed PRNG keys gather as their key data: the physical values, a trailing dimension)
    aval, out = physical_aval(ctx.avals_in[0]), physical_aval(ctx.avals_out[0])
    if not tiled:
        shape = list(aval.shape)
        shape.insert(all_gather_dimension, 1)
        dims = [i for i in range(len(shape)) if i != all_gather_dimension]
        x = b.broadcast_in_dim(x, shape, dims)
    groups = _groups(ctx, "all_gather", axis_name, axis_index_groups)
    return [_manual(ctx, b.all_gather(x, all_gather_dimension, replica_groups_array(groups),
                                      result_types=[tensor(out.shape, out.dtype)],
                                      **_spmd_args(ctx)))]


register_lowering("all_gather", _all_gather)
register_lowering("all_gather_invariant", _all_gather)
register_lowering("all_gather_reduced", _all_gather)


def _reduce_scatter(ctx, x, *, scatter_dimension, axis_name, axis_size, tiled=False,
                    axis_index_groups=None):
    """psum_scatter: a summing reduce_scatter; untiled, the scattered dimension (of size
    ``axis_size``) is dropped afterwards."""
    b = ctx.builder
    (aval,) = ctx.avals_in
    (aval_out,) = ctx.avals_out
    groups = _groups(ctx, "reduce_scatter", axis_name, axis_index_groups)
    k = len(groups[0])
    if any(len(g) != k for g in groups) or aval.shape[scatter_dimension] % k:
        raise ValueError(f"reduce_scatter: dimension {scatter_dimension} of size "
                         f"{aval.shape[scatter_dimension]} does not split over the groups "
                         f"{groups}")
    shape = list(aval.shape)
    shape[scatter_dimension] //= k
    y = _manual(ctx, b.reduce_scatter(x, scatter_dimension, MONOIDS["sum"],
                                      replica_groups_array(groups),
                                      result_type=tensor(shape, aval.dtype), **_spmd_args(ctx)))
    return [y if tiled else b.reshape(y, aval_out.shape)]


register_lowering("reduce_scatter", _reduce_scatter)
register_lowering("unreduced_reduce_scatter", _reduce_scatter)


def _pbroadcast_groups(ctx, axis_name, source):
    groups = _groups(ctx, "pbroadcast", axis_name, None)
    if not 0 <= source < len(groups[0]):
        raise ValueError(f"pbroadcast: source {source} is not an index along {axis_name!r} "
                         f"(of size {len(groups[0])})")
    return groups


def _pbroadcast(ctx, x, *, axis_name, source):
    """Every device gets the value of the device at index ``source`` along the axes.

    XLA:CPU cannot run collective_broadcast (jax registers a GPU rule only). Instead: a summing
    all_reduce to which only the source contributes, over the bits of the value reinterpreted
    as unsigned integers, exact for every value (-0.0 and NaN payloads included), and without
    the group-size copies an all_gather would make."""
    b = ctx.builder
    groups = replica_groups_array(_pbroadcast_groups(ctx, axis_name, source))
    is_source = b.compare(_group_index(ctx, axis_name), b.constant(np.int32(source)), "EQ")

    def only_source(v):
        et = v.type.element_type
        if et.kind == "complex":
            return b.complex(only_source(b.real(v)), only_source(b.imag(v)))
        if et.kind in ("sint", "uint"):
            bits = v
        elif et.kind == "bool":
            bits = b.convert(v, np.uint8)
        elif et.bits in _UINT_BITS:
            bits = b.bitcast_convert(v, _UINT_BITS[et.bits])
        else:
            raise NotImplementedError(f"pbroadcast of {et.name} (a {et.bits}-bit float)")
        zero = b.constant(np.zeros((), bits.type.element_type.dtype))
        picked = b.select(is_source, bits, b.broadcast_in_dim(zero, bits.type.shape, ()))
        total = _manual(ctx, b.all_reduce(picked, MONOIDS["sum"], groups, **_spmd_args(ctx)))
        return total if bits is v else (b.convert(total, np.bool_) if et.kind == "bool"
                                        else b.bitcast_convert(total, et))
    return [only_source(x)]


_UINT_BITS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _group_index(ctx, axis_name):
    """This device's position (int32) in its group over the named axes, the first axis the
    slowest varying, as in ``axis_groups``."""
    b = ctx.builder
    env = axis_env_of(ctx, "pbroadcast")
    index = None
    for name in (axis_name if isinstance(axis_name, (tuple, list)) else (axis_name,)):
        (i,) = _axis_index(ctx, axis_name=name)
        size = np.int32(env.sizes[list(env.names).index(name)])
        index = i if index is None else b.add(b.multiply(index, b.constant(size)), i)
    return index


def _pbroadcast_gpu(ctx, x, *, axis_name, source):
    """jax's rule: collective_broadcast sends from each group's first device, so the source
    moves to the front of its group."""
    groups = _pbroadcast_groups(ctx, axis_name, source)
    groups = [[g[source], *g[:source], *g[source + 1:]] for g in groups]
    return [_manual(ctx, ctx.builder.collective_broadcast(
        x, replica_groups_array(groups), **_spmd_args(ctx, global_ids=False)))]


register_lowering("pbroadcast", _pbroadcast)
register_lowering("pbroadcast", _pbroadcast_gpu, platform="gpu")


def _all_to_all(ctx, x, *, split_axis, concat_axis, axis_name, axis_index_groups=None,
                tiled=False):
    groups = _groups(ctx, "all_to_all", axis_name, axis_index_groups)
    split_count = len(groups[0])
    if split_count == 1:
        return [x]
    if any(len(g) != split_count for g in groups):
        raise ValueError("all_to_all: replica groups must be equally sized, got "
                         f"{[len(g) for g in groups]}")
    b = ctx.builder
    if split_axis == concat_axis or not partly_manual(ctx.module_context.axis_context):
        return [_manual(ctx, b.all_to_all(x, split_axis, concat_axis, split_count,
                                          replica_groups_array(groups),
                                          **_spmd_args(ctx, global_ids=False)))]
    # A partly manual region: XLA's partitioner refuses an all_to_all whose split and concat
    # dimensions differ ("Number of tile assignment dimensions (excluding subgroups) is
    # different than the input rank", jaxlib 0.10.2; jax's GSPMD lowering aborts on it).
    # The same exchange along a leading axis of the chunks, which it takes: the split
    # dimension's chunks moved in front, exchanged, then laid side by side along concat.
    shape, n = x.type.shape, split_count
    chunked = shape[:split_axis] + (n, shape[split_axis] // n) + shape[split_axis + 1:]
    front = [split_axis] + [i for i in range(len(chunked)) if i != split_axis]
    y = b.transpose(b.reshape(x, chunked), front)
    y = _manual(ctx, b.all_to_all(y, 0, 0, n, replica_groups_array(groups),
                                  **_spmd_args(ctx, global_ids=False)))
    rank = len(shape)
    back = list(range(1, concat_axis + 1)) + [0] + list(range(concat_axis + 1, rank + 1))
    out = list(shape)
    out[split_axis] //= n
    out[concat_axis] *= n
    return [b.reshape(b.transpose(y, back), tuple(out))]


register_lowering("all_to_all", _all_to_all)


def _ragged_all_to_all(ctx, operand, output, input_offsets, send_sizes, output_offsets,
                       recv_sizes, *, axis_name, axis_index_groups=None):
    """jax's rule: XLA's ``ragged_all_to_all`` custom call (api 4) with the groups and a
    channel in the backend config.

    NOTE: jaxlib 0.10.2 crashes (segfault) converting this custom call to HLO when the config
    has no ``channel_id``; channel 0 means "no channel" to XLA and is written for replicas."""
    groups = _groups(ctx, "ragged_all_to_all", axis_name, axis_index_groups)
    if any(len(g) != len(groups[0]) for g in groups):
        raise ValueError("ragged_all_to_all: replica groups must be equally sized, got "
                         f"{[len(g) for g in groups]}")
    mctx = ctx.module_context
    channel = COLLECTIVE_CHANNEL if is_spmd(mctx.axis_context) else 0
    array = replica_groups_array(groups)
    config = {"channel_id": IntegerAttr(channel, i64),
              "replica_groups": DenseElementsAttr.from_array(array, tensor(array.shape, i64))}
    y = ctx.builder.custom_call(
        "ragged_all_to_all",
        [operand, output, input_offsets, send_sizes, output_offsets, recv_sizes],
        [output.type], api_version=4, backend_config=config)
    return [_manual(ctx, y)]


register_lowering("ragged_all_to_all", _ragged_all_to_all)


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
    extra = {}
    if manual_axes_of(ctx.module_context.axis_context):
        extra = {"channel_handle": (COLLECTIVE_CHANNEL, _DEVICE_TO_DEVICE)}
    return [_manual(ctx, ctx.builder.collective_permute(x, pairs.reshape(-1, 2), **extra))]


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
    axis_context = ctx.module_context.axis_context
    manual = manual_axes_of(axis_context)
    if manual and manual != frozenset(env.names):
        if env.sizes[pos] == 1:
            return [b.constant(np.int32(0))]
        return [_axis_index_fully_manual(ctx, axis_name)]
    trailing = env.nreps // int(np.prod(env.sizes, dtype=np.int64))
    div = b.constant(np.uint32(trailing * int(np.prod(env.sizes[pos + 1:], dtype=np.int64))))
    mod = b.constant(np.uint32(env.sizes[pos]))
    device = b.partition_id() if is_spmd(axis_context) else b.replica_id()
    index = b.remainder(b.divide(device, div), mod)
    return [b.convert(index, np.int32)]


def _axis_index_fully_manual(ctx, axis_name):
    """Inside a partly manual region partition_id means nothing to XLA's partitioner; as in
    jax, the index is computed in a nested region manual over every mesh axis."""
    mctx = ctx.module_context
    outer = mctx.axis_context
    mesh = outer.mesh
    fn = mctx.module.add_function("shmap_body", [], [tensor((), np.int32)],
                                  visibility="private")
    fb = fn.builder()
    inner = mctx.replace(axis_context=SPMDAxisContext(mesh, frozenset(mesh.axis_names)))
    (index,) = _axis_index(ctx.replace(builder=fb, module_context=inner), axis_name=axis_name)
    fb.return_(index)
    index = ctx.builder.call(fn, [])
    return _leave_manual(ctx.builder, index, mesh, frozenset(mesh.axis_names), outer.manual_axes,
                         PartitionSpec(), (), partial=True)


register_lowering("axis_index", _axis_index)


# -- shard_map: a manually partitioned region -------------------------------------------------


def _spmd_op(b, target, x, result_type, sharding, unspecified):
    """A ``Sharding``/``SPMD*Shape`` custom call. ``unspecified`` dimensions (partly manual
    regions) leave the automatic axes' sharding to XLA's propagation."""
    config = f"unspecified_dims=[{','.join(map(str, unspecified))}]" if unspecified else None
    y = b.custom_call(target, [x], [result_type], backend_config=config)
    y.set_attr("mhlo.sharding", sharding)
    return y


def _enter_manual(b, x, mesh, manual, outer_manual, spec, inner_shape, partial):
    ndim = len(x.type.shape)
    unspecified = tuple(range(ndim)) if partial else ()
    sx = _spmd_op(b, "Sharding", x, x.type,
                  spec_to_hlo_sharding(mesh, spec, ndim, outer_manual), unspecified)
    return _spmd_op(b, "SPMDFullToShardShape", sx, tensor(inner_shape, x.type.element_type),
                    manual_sharding(mesh, manual, ndim), unspecified)


def _leave_manual(b, x, mesh, manual, outer_manual, spec, full_shape, partial):
    ndim = len(x.type.shape)
    unspecified = tuple(range(ndim)) if partial else ()
    sx = _spmd_op(b, "Sharding", x, x.type, manual_sharding(mesh, manual, ndim), unspecified)
    return _spmd_op(b, "SPMDShardToFullShape", sx, tensor(full_shape, x.type.element_type),
                    spec_to_hlo_sharding(mesh, spec, ndim, outer_manual), unspecified)


def _shard_map(ctx, *args, jaxpr, mesh, in_specs, out_specs, check_vma=True,
               newly_manual_axes=None, manual_axes=None, **_):
    """As jax's (GSPMD) shard_map lowering: each argument gets its sharding and enters the
    manual region (``Sharding`` + ``SPMDFullToShardShape`` custom calls), the body is a
    private function lowered under an SPMDAxisContext, and each result leaves the region
    (``SPMDShardToFullShape``).

    ``newly_manual_axes`` (jax 0.10's name; ``manual_axes`` before) are the mesh axes the
    region makes manual, all of them by default. With fewer (partial manual), the shardings
    leave every dimension's automatic axes unspecified for XLA's propagation; inside another
    region, the axes manual already are a manual subgroup of every sharding. A region whose
    new manual axes all have size 1 needs no custom calls."""
    from ..core import ClosedJaxpr

    outer_manual = manual_axes_of(ctx.module_context.axis_context)
    given = newly_manual_axes if newly_manual_axes is not None else manual_axes
    new = (frozenset(given) or frozenset(mesh.axis_names)) - outer_manual
    manual = outer_manual | new
    partial = len(new) < len(mesh.axis_names)
    trivial = math.prod(mesh.shape[a] for a in new) == 1
    b = ctx.builder
    closed = jaxpr if hasattr(jaxpr, "jaxpr") else ClosedJaxpr(jaxpr, [])
    inner_in = [v.aval for v in closed.jaxpr.invars]
    # (a typed key's words are trailing dimensions no spec names: the physical shapes)
    shards = args if trivial else [
        _enter_manual(b, x, mesh, manual, outer_manual, spec, physical_aval(inner).shape,
                      partial)
        for x, spec, inner in zip(args, in_specs, inner_in)]
    sub = ctx.module_context.replace(axis_context=SPMDAxisContext(mesh, manual))
    outs = call_lowering(ctx.replace(module_context=sub), "shmap_body", closed, *shards)
    outs = [o[0] if isinstance(o, (list, tuple)) else o for o in outs]
    if trivial:
        return outs
    return [_leave_manual(b, o, mesh, manual, outer_manual, spec, physical_aval(aval).shape,
                          partial)
            for o, spec, aval in zip(outs, out_specs, ctx.avals_out)]


register_lowering("shard_map", _shard_map)
