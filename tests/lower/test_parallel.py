"""Collectives lowered under axis contexts and run for real on 8 CPU devices: as 8 replicas
(ReplicaAxisContext), inside a manually partitioned SPMD region (SPMDAxisContext, entered
by shard_map), and an SPMD program that XLA's partitioner partitions itself."""

from __future__ import annotations

import re

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from lower import tracing as tr
from lower.axis_context import (AxisEnv, Mesh, P, ReplicaAxisContext, ShardingContext,
                                SPMDAxisContext, axis_groups, replica_groups,
                                replica_groups_array, spec_shard_shape, spec_to_hlo_sharding)
from tests.oracle import assert_fixed_point

F32 = np.float32


def lower_with_axis_context(closed, axis_context, *, num_replicas=None, num_partitions=None):
    return lower_jaxpr_to_module("collectives", closed, axis_context=axis_context,
                                 num_replicas=num_replicas,
                                 num_partitions=num_partitions).module


# -- replica groups: hand-derived ---------------------------------------------------------------

def test_axis_groups_row_major_over_replicas():
    env = AxisEnv(8, ("i", "j"), (2, 4))
    assert axis_groups(env, "i") == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert axis_groups(env, "j") == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert axis_groups(env, ("i", "j")) == ((0, 1, 2, 3, 4, 5, 6, 7),)
    assert axis_groups(env, ("j", "i")) == ((0, 4, 1, 5, 2, 6, 3, 7),)
    # trailing, unnamed replicas: 8 devices, one axis of 4
    assert axis_groups(AxisEnv(8, ("i",), (4,)), "i") == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert replica_groups(env, "j", [[0, 2], [1, 3]]) == [[0, 2], [1, 3], [4, 6], [5, 7]]
    np.testing.assert_array_equal(replica_groups_array([[0, 1, 2], [3]]),
                                  [[0, 1, 2], [3, -1, -1]])
    with pytest.raises(NameError, match="unbound axis name: 'k'"):
        axis_groups(env, "k")
    mesh = Mesh.create({"x": 2, "y": 4})
    assert SPMDAxisContext(mesh).axis_env == env._replace(names=("x", "y"))
    assert ShardingContext(8).axis_env.names == ()


# -- 8 replicas -------------------------------------------------------------------------------

ENV = AxisEnv(8, ("i", "j"), (2, 4))   # replica r has i = r // 4, j = r % 4
X = np.arange(8 * 4 * 3, dtype=F32).reshape(8, 4, 3) - 40   # replica r's operand: X[r]


def _replicated_program(v, n):
    return (lax.psum(v, "i"), lax.psum(v, ("i", "j")), lax.psum(v, ("j", 0)),
            lax.pmax(v, "j"), lax.pmin(v, "j", axis_index_groups=[[0, 3], [1, 2]]),
            lax.psum(n, "j"), lax.psum(tr.gt(n, 0), "i"),
            lax.axis_index("i", v), lax.axis_index("j", v),
            lax.all_gather(v, "j", axis_size=4), lax.all_gather(v, "i", axis_size=2, axis=1),
            lax.all_gather(v, "j", axis_size=4, tiled=True),
            lax.all_gather(v, "j", axis_size=2, axis_index_groups=[[0, 1], [2, 3]]),
            lax.ppermute(v, "j", [(0, 1), (1, 2), (2, 3), (3, 0)]),
            lax.ppermute(v, "i", [(0, 1)]),
            lax.all_to_all(v, "j", 0, 0, axis_size=4, tiled=True),
            lax.all_to_all(v, "j", 0, 1, axis_size=4),
            lax.pmean(v, "i", axis_size=2))


def _reference(r):
    i, j = divmod(r, 4)
    same_i = [i * 4 + k for k in range(4)]          # the "j" group of replica r
    same_j = [k * 4 + j for k in range(2)]          # the "i" group
    sub = [i * 4 + k for k in ([0, 3] if j in (0, 3) else [1, 2])]
    pair = [i * 4 + k for k in ([0, 1] if j < 2 else [2, 3])]
    v = X[r]
    src = i * 4 + (j - 1) % 4
    a2a_tiled = np.concatenate([X[g][j:j + 1] for g in same_i], 0)
    a2a = np.stack([X[g][j] for g in same_i], 0).T   # split axis 0, new concat axis 1
    return [X[same_j].sum(0), X.sum(0), X[same_i].sum((0, 1)),
            X[same_i].max(0), X[sub].min(0), (X[same_i].astype(np.int32) % 7).sum(0),
            ((X[same_j].astype(np.int32) % 7) > 0).sum(0).astype(np.int32),
            np.int32(i), np.int32(j),
            X[same_i], np.stack([X[g] for g in same_j], 1), np.concatenate(X[same_i], 0),
            X[pair], X[src], X[j] if i == 1 else np.zeros_like(v),
            a2a_tiled, a2a, X[same_j].mean(0)]


def test_collectives_on_8_replicas():
    n0 = (X[0].astype(np.int32) % 7)
    closed = tr.make_jaxpr(_replicated_program)(X[0], n0)
    m = lower_with_axis_context(closed, ReplicaAxisContext(ENV), num_replicas=8)
    text = assert_fixed_point(m)
    assert '"mhlo.channel_handle"' not in text and "use_global_device_ids" not in text
    exe = verify.compile(m, num_replicas=8)
    outs = exe.run_sharded([[X[r], X[r].astype(np.int32) % 7] for r in range(8)])
    for r in range(8):
        for k, (got, want) in enumerate(zip((o[r] for o in outs), _reference(r))):
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"replica {r}, output {k}")


def test_collectives_need_an_axis_context_and_bound_names():
    closed = tr.make_jaxpr(lambda v: lax.psum(v, "i"))(X[0])
    with pytest.raises(ValueError, match="'psum' names mesh axes.*without an axis context"):
        lower_jaxpr_to_module("f", closed)
    with pytest.raises(NameError, match="unbound axis name: 'i'"):
        lower_with_axis_context(closed, ReplicaAxisContext(AxisEnv(8, ("k",), (8,))))
    closed = tr.make_jaxpr(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]))(X[0])
    with pytest.raises(ValueError, match="sources and destinations must be unique"):
        lower_with_axis_context(closed, ReplicaAxisContext(ENV))


# -- SPMD: a manual region (shard_map) over a 2x4 mesh ---------------------------------------------

ROWS = "{devices=[8,1]0,1,2,3,4,5,6,7}"


def test_shard_map_collectives_on_8_partitions():
    mesh = Mesh.create({"x": 2, "y": 4})             # device d: x = d // 4, y = d % 4
    full = np.arange(8 * 3, dtype=F32).reshape(8, 3) * 1.5 - 7   # device d's block: row d
    cols = np.arange(4 * 2, dtype=F32).reshape(4, 2)             # split over y only
    bias = np.array([1.0, -2.0, 0.5], F32)                       # a constant of the body

    def body(v, c):
        idx = tr.add(tr.mul(lax.axis_index("x", v), 10), lax.axis_index("y", v))
        return (lax.psum(v, "y"), lax.psum(v, "x"), lax.pmax(v, ("x", "y")) + bias,
                tr.broadcast_to(tr.convert_element_type(idx, F32), v.shape),
                lax.ppermute(v, "y", [(k, (k + 1) % 4) for k in range(4)]),
                tr.reshape(lax.all_gather(v, "y", axis_size=4, tiled=True), (1, 12)),
                tr.reshape(lax.all_to_all(tr.broadcast_to(v, (4, 3)), "y", 0, 0, axis_size=4,
                                          tiled=True), (1, 12)),
                lax.psum(c, "y"))

    def f(v, c):
        rows = P(("x", "y"))
        return lax.shard_map(body, mesh, in_specs=(rows, P("y")),
                             out_specs=(rows,) * 7 + (P(),))(v, c)
    closed = tr.make_jaxpr(f)(full, cols)
    by_y = spec_to_hlo_sharding(mesh, P("y"), 2)
    m = lower_jaxpr_to_module("shmap", closed, arg_shardings=[ROWS, by_y],
                              result_shardings=[ROWS] * 7 + ["{replicated}"],
                              num_partitions=8).module
    text = assert_fixed_point(m)
    assert text.count("use_global_device_ids") == 5     # all_reduce x4, all_gather
    # every collective on jax's shared channel (test_jax_sharded: branches picked per device)
    assert set(re.findall(r"#mhlo.channel_handle<handle = (\d+)", text)) == {"1"}
    assert '"{devices=[4,1,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"' in text
    exe = verify.compile(m, num_partitions=8)
    assert exe.shard_shapes() == [(1, 3), (1, 2)]
    outs = exe.run_sharded([[full[d:d + 1], cols[d % 4:d % 4 + 1]] for d in range(8)])
    for d in range(8):
        x, y = divmod(d, 4)
        row = [x * 4 + k for k in range(4)]
        want = [full[row].sum(0), full[[y, 4 + y]].sum(0), full.max(0) + bias,
                np.full(3, 10 * x + y, F32), full[x * 4 + (y - 1) % 4], full[row].reshape(-1),
                full[row].reshape(-1), cols.sum(0)]
        for k, w in enumerate(want):
            np.testing.assert_allclose(outs[k][d].reshape(w.shape), w, rtol=1e-6,
                                       err_msg=f"device {d}, output {k}")


def test_partition_spec_to_hlo_sharding():
    mesh = Mesh.create({"x": 2, "y": 4})
    assert spec_to_hlo_sharding(mesh, P(("x", "y")), 2) == ROWS
    assert spec_to_hlo_sharding(mesh, P(None, "x"), 2) == \
        "{devices=[1,2,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"
    # tile (i, j) of P("y", "x") holds device y=i, x=j, i.e. 4j + i
    assert spec_to_hlo_sharding(mesh, P("y", "x"), 2) == "{devices=[4,2]0,4,1,5,2,6,3,7}"
    assert spec_to_hlo_sharding(mesh, P(), 3) == "{replicated}"
    assert spec_shard_shape(mesh, P("y", "x"), (8, 6)) == (2, 3)
    with pytest.raises(ValueError, match="does not split evenly"):
        spec_shard_shape(mesh, P("y"), (6,))


# -- SPMD: XLA's partitioner inserts the collectives ---------------------------------------------

def test_sharded_matmul_partitioner_inserts_all_reduce():
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (4, 16)).astype(F32)
    w = rng.uniform(-1, 1, (16, 8)).astype(F32)
    closed = tr.make_jaxpr(lambda a, w: tr.tanh(tr.dot(a, w)))(a, w)
    # contraction dimension split over 8 devices; the result replicated
    m = lower_jaxpr_to_module("matmul", closed,
                              arg_shardings=["{devices=[1,8]0,1,2,3,4,5,6,7}", ROWS],
                              result_shardings=["{replicated}"], num_partitions=8).module
    text = assert_fixed_point(m)
    assert "all_reduce" not in text and "mhlo.sharding" in text      # none of our own
    exe = verify.compile(m, num_partitions=8)
    hlo_text = exe.loaded.hlo_modules()[0].to_string()
    assert "all-reduce(" in hlo_text
    assert exe.shard_shapes() == [(4, 2), (2, 8)]
    outs = exe.run_sharded([[a[:, 2 * d:2 * d + 2], w[2 * d:2 * d + 2]] for d in range(8)])
    for d in range(8):
        np.testing.assert_allclose(outs[0][d], np.tanh(a @ w), rtol=1e-5, atol=1e-6)
