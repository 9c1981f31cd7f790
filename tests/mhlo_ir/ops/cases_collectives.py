"""Cases for the collectives, executed for real on several CPU devices (replicas, or SPMD
partitions for partition_id), each device's results checked against numpy."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
import verify
from mhlo_ir.mhlo_attributes import ChannelHandle
from tests.mhlo_ir.ops.cases import assert_close, case, module, rand

f32, i32 = hlo.f32, hlo.i32


def _run_on_devices(build, reference, *, partitions=False):
    """A Case ``run``: compile for n devices (n = len(per-device inputs)), run each device on
    its own inputs, and compare result r of device d with ``reference(inputs)[r][d]``."""
    def run():
        m, per_device = build()
        n = len(per_device)
        exe = verify.compile(m, num_replicas=1 if partitions else n,
                             num_partitions=n if partitions else 1)
        outs = exe.run_sharded(per_device)
        want = reference(per_device)
        assert len(outs) == len(want), f"{len(outs)} results, expected {len(want)}"
        for r, (got_r, want_r) in enumerate(zip(outs, want)):
            assert len(got_r) == n
            for d in range(n):
                assert_close(got_r[d], want_r[d], what=f"result {r} on device {d}")
    return run


def multi(op, name, reference, **kw):
    """Register ``build() -> (module, per-device input lists)`` as a multi-device case."""
    def register(build):
        return case(op, name, run=_run_on_devices(build, reference, **kw),
                    partitions=kw.get("partitions", False))(build)
    return register


def per_device(n, *specs):
    """n devices' inputs: ``specs`` are (shape, dtype) pairs."""
    return [[rand(s, dt) for s, dt in specs] for _ in range(n)]


def _groups_of(groups, d):
    return next(g for g in groups if d in g)


# -- all_reduce ---------------------------------------------------------------------------------

def _all_reduce_ref(groups, fn, k=0):
    def ref(ins):
        return [[fn([ins[e][k] for e in _groups_of(groups, d)]) for d in range(len(ins))]]
    return ref


@multi("all_reduce", "f32_sum_4", _all_reduce_ref([[0, 1, 2, 3]],
                                                  lambda xs: np.float32(sum(xs, np.float32(0)))))
def _():
    ins = [[np.arange(6, dtype=np.float32).reshape(2, 3) * (d + 1) + 0.5] for d in range(4)]
    return module([hlo.tensor((2, 3), f32)], lambda b, x: b.all_reduce(
        x, lambda bb, p, q: bb.add(p, q), replica_groups=[[0, 1, 2, 3]])), ins


@multi("all_reduce", "i32_max_two_groups",
       _all_reduce_ref([[0, 2], [1, 3]], lambda xs: np.maximum.reduce(xs)))
def _():
    return module([hlo.tensor((5,), i32)], lambda b, x: b.all_reduce(
        x, lambda bb, p, q: bb.maximum(p, q), replica_groups=[[0, 2], [1, 3]])), \
        per_device(4, ((5,), np.int32))


@multi("all_reduce", "bool_or", _all_reduce_ref([[0, 1]], lambda xs: np.logical_or.reduce(xs)))
def _():
    return module([hlo.tensor((6,), hlo.i1)], lambda b, x: b.all_reduce(
        x, lambda bb, p, q: bb.or_(p, q), replica_groups=[[0, 1]])), per_device(2, ((6,), bool))


@multi("all_reduce", "complex_sum", _all_reduce_ref([[0, 1]], lambda xs: xs[0] + xs[1]))
def _():
    return module([hlo.tensor((3,), hlo.complex64)], lambda b, x: b.all_reduce(
        x, lambda bb, p, q: bb.add(p, q), replica_groups=[[0, 1]])), \
        per_device(2, ((3,), np.complex64))


def _variadic_ref(ins):
    s = [ins[0][k] + ins[1][k] for k in range(2)]
    return [[s[0], s[0]], [s[1], s[1]]]


@multi("all_reduce", "f32_variadic", _variadic_ref)
def _():
    # Two operands: one element type, two shapes. (With a channel_handle too, XLA:CPU fails to
    # compile it: see test_collectives_errors.py.)
    return module([hlo.tensor((2,), f32), hlo.tensor((2, 2), f32)], lambda b, x, y: b.all_reduce(
        [x, y], lambda bb, p, q: bb.add(p, q), replica_groups=[[0, 1]])), \
        [[np.float32([1, 2]), np.float32([[1, 2], [3, 4]])],
         [np.float32([10, 20]), np.float32([[10, 20], [30, 40]])]]


@multi("all_reduce", "i32_channel_global_device_ids",
       _all_reduce_ref([[0, 1]], lambda xs: xs[0] * xs[1]))
def _():
    return module([hlo.tensor((2, 2), i32)], lambda b, x: b.all_reduce(
        x, lambda bb, p, q: bb.multiply(p, q), replica_groups=[[0, 1]],
        channel_handle=ChannelHandle(1, 1), use_global_device_ids=True)), \
        per_device(2, ((2, 2), np.int32))


# -- all_gather ---------------------------------------------------------------------------------

@multi("all_gather", "f32_dim1",
       lambda ins: [[np.concatenate([ins[0][0], ins[1][0]], axis=1)] * 2])
def _():
    return module([hlo.tensor((2, 3), f32)], lambda b, x: b.all_gather(
        x, 1, replica_groups=[[0, 1]])), per_device(2, ((2, 3), np.float32))


@multi("all_gather", "i8_variadic_groups_reversed",
       lambda ins: [[np.concatenate([ins[1][0], ins[0][0]])] * 2,
                    [np.concatenate([ins[1][1], ins[0][1]])] * 2])
def _():
    # The group lists replica 1 first: its data comes first.
    return module([hlo.tensor((3,), hlo.i8), hlo.tensor((1, 2), hlo.i8)],
                  lambda b, x, y: b.all_gather([x, y], 0, replica_groups=[[1, 0]])), \
        per_device(2, ((3,), np.int8), ((1, 2), np.int8))


@multi("all_gather", "bool_all_replicas_explicit_result",
       lambda ins: [[np.concatenate([i[0] for i in ins])] * 3])
def _():
    # Empty replica_groups: one group of every replica; the result type must be given.
    return module([hlo.tensor((2,), hlo.i1)], lambda b, x: b.all_gather(
        x, 0, result_types=[hlo.tensor((6,), hlo.i1)])), per_device(3, ((2,), bool))


# -- all_to_all ---------------------------------------------------------------------------------

def _a2a_ref(ins, split, concat, k=0):
    n = len(ins)
    pieces = [np.split(ins[s][k], n, axis=split) for s in range(n)]
    return [np.concatenate([pieces[s][d] for s in range(n)], axis=concat) for d in range(n)]


@multi("all_to_all", "f32_split0_concat1", lambda ins: [_a2a_ref(ins, 0, 1)])
def _():
    return module([hlo.tensor((4, 3), f32)], lambda b, x: b.all_to_all(
        x, 0, 1, 2, replica_groups=[[0, 1]])), per_device(2, ((4, 3), np.float32))


@multi("all_to_all", "bool_single_replica_group",
       lambda ins: [_a2a_ref(ins[:2], 0, 0) + _a2a_ref(ins[2:], 0, 0)])
def _():
    return module([hlo.tensor((2, 3), hlo.i1)], lambda b, x: b.all_to_all(
        x, 0, 0, 2, replica_groups=[[0, 1], [2, 3]])), per_device(4, ((2, 3), bool))


@multi("all_to_all", "i32_tuple_form",
       lambda ins: [[ins[0][0], ins[0][1]], [ins[1][0], ins[1][1]]])
def _():
    # No split attributes, one operand per replica: replica d's result i is operand d of
    # replica i.
    return module([hlo.tensor((3,), i32), hlo.tensor((3,), i32)], lambda b, x, y:
                  b.all_to_all([x, y], replica_groups=[[0, 1]])), \
        per_device(2, ((3,), np.int32), ((3,), np.int32))


# -- reduce_scatter -----------------------------------------------------------------------------

def _rs_ref(groups, dim):
    def ref(ins):
        out = []
        for d in range(len(ins)):
            g = _groups_of(groups, d)
            total = sum((ins[e][0] for e in g), np.zeros_like(ins[0][0]))
            out.append(np.split(total, len(g), axis=dim)[g.index(d)])
        return [out]
    return ref


@multi("reduce_scatter", "f32_add_two_groups", _rs_ref([[0, 1], [2, 3]], 1))
def _():
    ins = [[np.arange(8, dtype=np.float32).reshape(2, 4) + 100 * d] for d in range(4)]
    return module([hlo.tensor((2, 4), f32)], lambda b, x: b.reduce_scatter(
        x, 1, lambda bb, p, q: bb.add(p, q), replica_groups=[[0, 1], [2, 3]])), ins


@multi("reduce_scatter", "i32_add_reordered_group", _rs_ref([[1, 0]], 0))
def _():
    return module([hlo.tensor((4,), i32)], lambda b, x: b.reduce_scatter(
        x, 0, lambda bb, p, q: bb.add(p, q), replica_groups=[[1, 0]])), \
        per_device(2, ((4,), np.int32))


# -- collective_permute, collective_broadcast, cross-replica-sum --------------------------------

def _permute_ref(pairs):
    def ref(ins):
        src = {t: s for s, t in pairs}
        return [[ins[src[d]][0] if d in src else np.zeros_like(ins[d][0])
                 for d in range(len(ins))]]
    return ref


@multi("collective_permute", "f32_ring_4", _permute_ref([(0, 1), (1, 2), (2, 3), (3, 0)]))
def _():
    return module([hlo.tensor((2, 2), f32)], lambda b, x: b.collective_permute(
        x, [[0, 1], [1, 2], [2, 3], [3, 0]])), per_device(4, ((2, 2), np.float32))


@multi("collective_permute", "i32_partial_gets_zeros", _permute_ref([(0, 2), (2, 1)]))
def _():
    # Replica 0 is nobody's target: it gets zeros. (With a channel_handle XLA would read the
    # pairs as partition ids instead: there is one partition here.)
    return module([hlo.tensor((3,), i32)], lambda b, x: b.collective_permute(
        x, [[0, 2], [2, 1]])), \
        per_device(3, ((3,), np.int32))


@case("collective_broadcast", "f32_verified")
def _():
    return module([hlo.tensor((3,), f32)], lambda b, x: b.collective_broadcast(
        x, [[0, 1]], channel_handle=1)), [rand((3,), np.float32)]


@multi("cross-replica-sum", "f32_two_groups",
       _all_reduce_ref([[0, 3], [1, 2]], lambda xs: xs[0] + xs[1]))
def _():
    return module([hlo.tensor((4,), f32)], lambda b, x: b.cross_replica_sum(
        x, [[0, 3], [1, 2]])), per_device(4, ((4,), np.float32))


# -- replica_id, partition_id -------------------------------------------------------------------

@multi("replica_id", "four_replicas",
       lambda ins: [[np.uint32(d) for d in range(4)], [ins[d][0] + d for d in range(4)]])
def _():
    def body(b, x):
        r = b.replica_id()
        return r, b.add(x, b.broadcast_in_dim(b.convert(r, f32), (2,), ()))
    return module([hlo.tensor((2,), f32)], body), per_device(4, ((2,), np.float32))


@multi("partition_id", "spmd_manual_two_partitions",
       lambda ins: [[np.full((2,), d, np.uint32) for d in range(2)]], partitions=True)
def _():
    # Under SPMD partitioning XLA accepts partition_id only in manually sharded code: mark it
    # {manual} and assemble the per-partition values with SPMDShardToFullShape (as shard_map).
    def body(b):
        manual = {"mhlo.sharding": "{manual}"}
        p = b.partition_id(**manual)
        v = b.create("broadcast_in_dim", (p,), {"broadcast_dimensions": [], **manual},
                     [hlo.tensor((2,), hlo.ui32)]).results[0]
        return b.custom_call("SPMDShardToFullShape", [v], hlo.tensor((4,), hlo.ui32),
                             **{"mhlo.sharding": "{devices=[2]0,1}"})
    return module([], body), [[], []]
