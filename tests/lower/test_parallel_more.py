"""The rest of the collectives family, run on 8 CPU devices: psum_scatter (reduce_scatter),
pbroadcast, jax's type-bookkeeping collectives (pvary, psum_invariant, all_gather_invariant and
the unreduced/reduced casts), ragged_all_to_all, and shard_map regions manual over only some
mesh axes (partial manual) or nested in another. Results are compared exactly with numpy;
the last tests lower jaxprs that jax itself traced, to pin jax 0.10's parameters."""

from __future__ import annotations

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from lower import tracing as tr
from lower.axis_context import (AxisEnv, Mesh, P, ReplicaAxisContext, SPMDAxisContext,
                                manual_sharding, spec_to_hlo_sharding)
from lower.core import ShapedArray
from tests.oracle import assert_fixed_point

F32 = np.float32
ENV = AxisEnv(8, ("i", "j"), (2, 4))   # replica r has i = r // 4, j = r % 4
# small integers: every sum is exact in f32
X = ((np.arange(8 * 4 * 6) % 23) - 11).astype(F32).reshape(8, 4, 6)
MESH = Mesh.create({"x": 2, "y": 4})   # device d: x = d // 4, y = d % 4


def _groups(r):
    i, j = divmod(r, 4)
    return [i * 4 + k for k in range(4)], [k * 4 + j for k in range(2)]   # "j", "i" groups


# -- replicas ---------------------------------------------------------------------------------

def _replica_program(v, n):
    flat = tr.reshape(v, (8, 3))
    return (lax.psum_scatter(v, "j", axis_size=4),
            lax.psum_scatter(v, "i", axis_size=2, scatter_dimension=1, tiled=True),
            lax.psum_scatter(flat, ("i", "j"), axis_size=8),
            lax.psum_scatter(v, "j", axis_size=2, axis_index_groups=[[0, 3], [1, 2]],
                             tiled=True),
            lax.psum_scatter(n, "j", axis_size=4, tiled=True),
            lax.pbroadcast(v, "j", 2), lax.pbroadcast(n, "i", 1),
            lax.pbroadcast(tr.gt(v, 0), ("j", "i"), 5),
            lax.pvary(v, "j"), lax.psum_invariant(v, ("i", "j")),
            lax.all_gather_invariant(v, "i", axis_size=2, axis=1),
            # jax's unreduced/reduced bookkeeping, bound as jax binds them
            tr.bind("unreduced_psum", [v], [v.aval], axes=("j",)),
            tr.bind("unreduced_reduce_scatter", [v], [v.aval.update(shape=(1, 6))],
                    axis_name=("j",), scatter_dimension=0, axis_size=4, tiled=True),
            tr.bind("all_gather_reduced", [v], [v.aval.update(shape=(4, 12))],
                    all_gather_dimension=1, axis_name=("i",), axis_size=2, tiled=True),
            tr.bind("preduced", [v], [v.aval], axes=("i",)),
            tr.bind("vary_unreduced_cast_p", [v], [v.aval], axes=("i",)),
            tr.bind("reduced_vary_cast_p", [v], [v.aval], axes=("i",)))


def _replica_reference(r):
    i, j = divmod(r, 4)
    same_i, same_j = _groups(r)
    sub = [i * 4 + k for k in ([0, 3] if j in (0, 3) else [1, 2])]
    n = X.astype(np.int32) * 3
    pos = sub.index(r)
    return [X[same_i].sum(0)[j], X[same_j].sum(0)[:, 3 * i:3 * i + 3],
            X.sum(0).reshape(8, 3)[r], X[sub].sum(0)[2 * pos:2 * pos + 2],
            n[same_i].sum(0, dtype=np.int32)[j:j + 1], X[i * 4 + 2], n[4 + j], X[6] > 0,
            X[r], X.sum(0), np.stack([X[g] for g in same_j], 1),
            X[same_i].sum(0), X[same_i].sum(0)[j:j + 1], np.concatenate(X[same_j], 1),
            X[r], X[r], X[r]]


def test_reduce_scatter_pbroadcast_and_bookkeeping_on_8_replicas():
    closed = tr.make_jaxpr(_replica_program)(X[0], X[0].astype(np.int32))
    m = lower_jaxpr_to_module("collectives", closed, axis_context=ReplicaAxisContext(ENV),
                              num_replicas=8).module
    text = assert_fixed_point(m)
    assert text.count('"mhlo.reduce_scatter"') == 6
    assert "collective_broadcast" not in text   # XLA:CPU cannot run it
    assert '"mhlo.channel_handle"' not in text and "use_global_device_ids" not in text
    exe = verify.compile(m, num_replicas=8)
    outs = exe.run_sharded([[X[r], X[r].astype(np.int32) * 3] for r in range(8)])
    for r in range(8):
        for k, want in enumerate(_replica_reference(r)):
            got = outs[k][r]
            assert got.shape == want.shape and got.dtype == want.dtype, (r, k, got, want)
            np.testing.assert_array_equal(got, want, err_msg=f"replica {r}, output {k}")


def test_pbroadcast_keeps_every_bit():
    """Only the source contributes to the sum, over the bits: -0.0, NaN payloads, infinities,
    complex and narrow floats arrive unchanged."""
    import ml_dtypes
    special = np.array([-0.0, np.nan, -np.inf, 1e-45, 3.0, -2.5], F32)
    special[1] = np.frombuffer(np.uint32(0x7FC0_1234).tobytes(), F32)[0]   # a NaN payload
    pair = np.stack([special, special[::-1]], -1).view(np.complex64)[:, 0]
    vals = [np.stack([special if r == 6 else special * (r + 1) for r in range(8)]),
            np.stack([pair if r == 6 else pair + r for r in range(8)]),
            np.stack([(special * (1 if r == 6 else r + 1)).astype(ml_dtypes.bfloat16)
                      for r in range(8)])]
    closed = tr.make_jaxpr(lambda *xs: [lax.pbroadcast(x, ("i", "j"), 6) for x in xs])(
        *(v[0] for v in vals))
    m = lower_jaxpr_to_module("bits", closed, axis_context=ReplicaAxisContext(ENV),
                              num_replicas=8).module
    exe = verify.compile(m, num_replicas=8)
    outs = exe.run_sharded([[v[r] for v in vals] for r in range(8)])
    for k, v in enumerate(vals):
        for r in range(8):
            assert outs[k][r].tobytes() == v[6].tobytes(), (k, r, outs[k][r], v[6])


def test_collective_errors():
    v = X[0]
    with pytest.raises(ValueError, match="must equal the axis size 4"):
        tr.make_jaxpr(lambda a: lax.psum_scatter(a, "j", axis_size=4, scatter_dimension=1))(v)
    with pytest.raises(ValueError, match="not divisible by the axis size 4"):
        tr.make_jaxpr(lambda a: lax.psum_scatter(a, "j", axis_size=4, scatter_dimension=1,
                                                 tiled=True))(v)
    closed = tr.make_jaxpr(lambda a: lax.pbroadcast(a, "i", 2))(v)
    with pytest.raises(ValueError, match="source 2 is not an index along 'i'"):
        lower_jaxpr_to_module("f", closed, axis_context=ReplicaAxisContext(ENV))
    with pytest.raises(ValueError, match="names mesh axis 'x', which is not manual"):
        tr.make_jaxpr(lax.shard_map(lambda a: a, MESH, in_specs=(P("x"),), out_specs=P(),
                                    axis_names={"y"}))(v)
    # positional axes are checked when traced, as jax does (the reduce failed to build)
    with pytest.raises(ValueError, match=r"axes \(-1,\) contains out-of-bounds indices"):
        tr.make_jaxpr(lambda a: lax.psum(a, (-1, "i")))(v)


# -- SPMD: shard_map regions ---------------------------------------------------------------------

FULL = ((np.arange(64) % 13) - 6).astype(F32).reshape(8, 8)
BY_XY = "{devices=[2,4]0,1,2,3,4,5,6,7}"


def _blocks(d):
    x, y = divmod(d, 4)
    return FULL[4 * x:4 * x + 4, 2 * y:2 * y + 2]


def test_sharding_texts_with_manual_axes():
    # inside a region manual over y: y is a manual subgroup (devices y-major), x replicated
    assert manual_sharding(MESH, {"y"}, 2) == \
        "{devices=[1,1,4,2]0,4,1,5,2,6,3,7 last_tile_dims={manual, replicated}}"
    assert manual_sharding(MESH, {"x"}, 0) == \
        "{devices=[2,4]0,1,2,3,4,5,6,7 last_tile_dims={manual, replicated}}"
    assert manual_sharding(MESH, {"x", "y"}, 2) == "{manual}"
    assert spec_to_hlo_sharding(MESH, P(None, "x"), 2, {"y"}) == \
        "{devices=[1,2,4]0,1,2,3,4,5,6,7 last_tile_dims={manual}}"
    assert spec_to_hlo_sharding(MESH, P("y"), 1, {"x"}) == \
        "{devices=[4,2]0,4,1,5,2,6,3,7 last_tile_dims={manual}}"
    mesh = Mesh.create({"a": 1, "b": 8})
    assert manual_sharding(mesh, {"a"}, 1) == "{replicated}"
    assert spec_to_hlo_sharding(mesh, P("b"), 1, {"a"}) == "{devices=[8]0,1,2,3,4,5,6,7}"
    with pytest.raises(ValueError, match="'y' is already manual"):
        spec_to_hlo_sharding(MESH, P("y"), 1, {"y"})


def _partial_y(v):
    """Manual over y only; v is full along x's rows: FULL[:, 2y:2y+2]."""
    return (lax.psum(v, "y"),
            v + tr.convert_element_type(lax.axis_index("y", v), F32),
            lax.ppermute(v, "y", [(k, (k + 1) % 4) for k in range(4)]),
            lax.psum_scatter(v, "y", axis_size=4, tiled=True),
            lax.all_gather(v, "y", axis_size=4, axis=1, tiled=True),
            lax.all_to_all(v, "y", 0, 0, axis_size=4, tiled=True),
            lax.pbroadcast(v, "y", 3))


def _partial_x(v):
    return lax.psum(v, "x") + tr.convert_element_type(lax.axis_index("x", v), F32)


def _nested(v):
    """Manual over x, then over y inside: the inner region's shardings keep x manual."""
    inner = lax.shard_map(lambda w: lax.psum(w, "y") * 2.0, MESH, in_specs=(P(None, "y"),),
                          out_specs=P(None, "y"), axis_names={"y"})(v)
    return lax.psum(inner, "x")


def _partial_program(a):
    by = P(None, "y")
    outs = lax.shard_map(_partial_y, MESH, in_specs=(by,),
                         out_specs=(by, by, by, P("y"), P(), by, by), axis_names={"y"})(a)
    return (*outs,
            lax.shard_map(_partial_x, MESH, in_specs=(P("x"),), out_specs=P("x"),
                          axis_names={"x"})(a),
            lax.shard_map(_nested, MESH, in_specs=(P("x"),), out_specs=P(),
                          axis_names={"x"})(a))


def test_partially_manual_shard_map_on_8_partitions():
    closed = tr.make_jaxpr(_partial_program)(FULL)
    m = lower_jaxpr_to_module("partial", closed, arg_shardings=[BY_XY],
                              result_shardings=["{replicated}"] * 9, num_partitions=8).module
    text = assert_fixed_point(m)
    assert 'backend_config = "unspecified_dims=[0,1]"' in text
    assert "last_tile_dims={manual, replicated}" in text
    # the nested region: its argument enters with x manual already
    assert '"{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dims={manual}}"' in text
    exe = verify.compile(m, num_partitions=8)
    assert exe.shard_shapes() == [(4, 2)]
    outs = exe.run_sharded([[_blocks(d)] for d in range(8)])
    cols = [FULL[:, 2 * y:2 * y + 2] for y in range(4)]
    total = sum(cols)
    rows = FULL[:4] + FULL[4:]
    a2a = np.concatenate([np.concatenate([c[2 * y:2 * y + 2] for c in cols]) for y in range(4)],
                         1)
    want = [np.tile(total, (1, 4)), np.concatenate([c + y for y, c in enumerate(cols)], 1),
            np.concatenate([cols[(y - 1) % 4] for y in range(4)], 1), total, FULL, a2a,
            np.tile(cols[3], (1, 4)), np.concatenate([rows, rows + 1]),
            np.tile(total.reshape(2, 4, 2).sum(0) * 2, (1, 4))]
    for d in range(8):
        for k, w in enumerate(want):
            np.testing.assert_array_equal(outs[k][d], w, err_msg=f"device {d}, output {k}")


def test_fully_manual_reduce_scatter_and_pbroadcast_on_8_partitions():
    def body(v):   # v: device d's 4x2 block
        return (lax.psum_scatter(v, "y", axis_size=4, tiled=True),
                lax.psum_scatter(tr.reshape(v, (8,)), ("x", "y"), axis_size=8, tiled=True),
                lax.pbroadcast(v, "x", 1), lax.pbroadcast(v, ("x", "y"), 6),
                lax.psum_invariant(v, "x"), lax.pvary(v, "y"))

    xy = P("x", "y")
    closed = tr.make_jaxpr(lax.shard_map(body, MESH, in_specs=(xy,),
                                         out_specs=(xy, P(("x", "y")), xy, xy, xy, xy)))(FULL)
    m = lower_jaxpr_to_module("full", closed, arg_shardings=[BY_XY],
                              result_shardings=["{replicated}"] * 6, num_partitions=8).module
    text = assert_fixed_point(m)
    assert text.count("use_global_device_ids") == 5   # reduce_scatter x2, all_reduce x3
    assert "last_tile_dims" not in text and "unspecified_dims" not in text
    exe = verify.compile(m, num_partitions=8)
    outs = exe.run_sharded([[_blocks(d)] for d in range(8)])
    blocks = [_blocks(d) for d in range(8)]
    rs = [sum(blocks[x * 4 + k] for k in range(4))[y:y + 1] for x in range(2) for y in range(4)]
    want = [np.block([[rs[x * 4 + y] for y in range(4)] for x in range(2)]),
            sum(b.reshape(8) for b in blocks),
            np.block([[blocks[4 + y] for y in range(4)]] * 2),
            np.tile(blocks[6], (2, 4)),
            np.block([[blocks[y] + blocks[4 + y] for y in range(4)]] * 2), FULL]
    for d in range(8):
        for k, w in enumerate(want):
            np.testing.assert_array_equal(outs[k][d], w, err_msg=f"device {d}, output {k}")


# -- ragged_all_to_all: XLA:CPU compiles no ragged-all-to-all ---------------------------------

def _ragged_args(n=4):
    """Replica r sends rows [2j, 2j + 2) of its operand to replica j, which writes them at
    rows [2r, 2r + 2) of its output: a transpose of 2-row blocks."""
    operand = np.arange(n * 8 * 3, dtype=F32).reshape(n, 8, 3)
    output = np.full((n, 8, 3), -1, F32)
    in_off = np.tile(np.arange(0, 8, 2, dtype=np.int32), (n, 1))
    sizes = np.full((n, 4), 2, np.int32)
    out_off = np.repeat(np.arange(0, 8, 2, dtype=np.int32)[:, None], 4, 1)
    return operand, output, in_off, sizes, out_off, sizes


def test_ragged_all_to_all_lowers_and_converts_to_hlo():
    args = _ragged_args()
    closed = tr.make_jaxpr(lambda *a: lax.ragged_all_to_all(*a, "i"))(*(a[0] for a in args))
    m = lower_jaxpr_to_module("ragged", closed,
                              axis_context=ReplicaAxisContext(AxisEnv(4, ("i",), (4,))),
                              num_replicas=4).module
    text = assert_fixed_point(m)
    # channel 0 (none): without a channel_id jaxlib 0.10.2 crashes converting it to HLO
    assert "backend_config = {channel_id = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]>" \
        in text
    verify.check(m)           # jaxlib's parser, verifier and HLO conversion
    try:
        exe = verify.compile(m, num_replicas=4)
    except verify.CompileError as e:
        assert "ragged-all-to-all` is not supported by XLA:CPU" in str(e)
        return
    outs = exe.run_sharded([[a[r] for a in args] for r in range(4)])   # a newer jaxlib
    for r in range(4):
        want = np.concatenate([args[0][s][2 * r:2 * r + 2] for s in range(4)])
        np.testing.assert_array_equal(outs[0][r], want)


def test_ragged_all_to_all_and_pbroadcast_under_spmd_and_for_gpu():
    args = [ShapedArray(a.shape[1:], a.dtype) for a in _ragged_args()]
    closed = tr.make_jaxpr(lambda *a: lax.ragged_all_to_all(*a, "y"))(*args)
    ctx = SPMDAxisContext(MESH, frozenset({"x", "y"}))
    text = assert_fixed_point(lower_jaxpr_to_module("ragged", closed, axis_context=ctx).module)
    assert "channel_id = 1 : i64, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]>" in text
    # on GPUs pbroadcast is jax's collective_broadcast, the source first in each group
    closed = tr.make_jaxpr(lambda v: lax.pbroadcast(v, "y", 2))(X[0])
    m = lower_jaxpr_to_module("pb", closed, platform="cuda", axis_context=ctx).module
    text = assert_fixed_point(m)
    assert "dense<[[2, 0, 1, 3], [6, 4, 5, 7]]>" in text and '"mhlo.collective_broadcast"' in text
    verify.check(m)


# -- jaxprs traced by jax itself ----------------------------------------------------------------

def test_jax_traced_collectives_on_8_partitions():
    jax = pytest.importorskip("jax")
    from jax.sharding import AbstractMesh, AxisType
    from jax.sharding import PartitionSpec as JP
    jlax = jax.lax
    mesh = AbstractMesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

    def full_body(v):   # 4x2 blocks
        return (jlax.psum_scatter(v, "y", tiled=True),
                jlax.psum_scatter(v.reshape(8), ("x", "y"), tiled=True),
                jlax.pbroadcast(v, "y", 1), jlax.all_gather(v, "y", axis=1, tiled=True,
                                                           to="invarying"),
                jlax.psum(v, "x"), jlax.pcast(jax.numpy.float32(2.0), "y", to="varying") * v)

    def partial_body(v):   # 8x2 columns
        return jlax.psum(v, "y") + jlax.axis_index("y").astype(v.dtype)

    def f(a):
        full = jax.shard_map(full_body, mesh=mesh, in_specs=JP("x", "y"),
                             out_specs=(JP(("x", "y")), JP(("x", "y")), JP("x", "y"), JP("x"),
                                        JP(None, "y"), JP("x", "y")))(a)
        part = jax.shard_map(partial_body, mesh=mesh, in_specs=JP(None, "y"),
                             out_specs=JP(None, "y"), axis_names={"y"})(a)
        return (*full, part)

    closed = jax.make_jaxpr(f)(FULL)
    prims = {e.primitive.name for s in closed.jaxpr.eqns for e in s.params["jaxpr"].eqns}
    assert {"reduce_scatter", "pbroadcast", "all_gather_invariant", "psum_invariant",
            "pvary", "axis_index"} <= prims, prims
    m = lower_jaxpr_to_module("jax_shmap", closed, arg_shardings=[BY_XY],
                              result_shardings=["{replicated}"] * 7, num_partitions=8).module
    assert_fixed_point(m)
    exe = verify.compile(m, num_partitions=8)
    outs = exe.run_sharded([[_blocks(d)] for d in range(8)])
    blocks = [_blocks(d) for d in range(8)]
    rs = [sum(blocks[x * 4 + k] for k in range(4))[y:y + 1] for x in range(2) for y in range(4)]
    cols = [FULL[:, 2 * y:2 * y + 2] for y in range(4)]
    want = [np.concatenate(rs), sum(b.reshape(8) for b in blocks),
            np.block([[blocks[x * 4 + 1]] * 4 for x in range(2)]),
            FULL,
            np.concatenate([blocks[y] + blocks[4 + y] for y in range(4)], 1), 2 * FULL,
            np.concatenate([sum(cols) + y for y in range(4)], 1)]
    for d in range(8):
        for k, w in enumerate(want):
            np.testing.assert_array_equal(outs[k][d], w, err_msg=f"device {d}, output {k}")


def test_shard_map_over_size_1_axes_needs_no_region():
    mesh = Mesh.create({"a": 1, "b": 8})

    def body(v):
        return lax.psum(v, "a") + tr.convert_element_type(lax.axis_index("a", v), F32)

    closed = tr.make_jaxpr(lax.shard_map(body, mesh, in_specs=(P("a"),), out_specs=P("a"),
                                         axis_names={"a"}))(FULL)
    m = lower_jaxpr_to_module("trivial", closed, arg_shardings=[BY_XY],
                              result_shardings=["{replicated}"], num_partitions=8).module
    text = assert_fixed_point(m)
    assert "custom_call" not in text and "partition_id" not in text
    exe = verify.compile(m, num_partitions=8)
    outs = exe.run_sharded([[_blocks(d)] for d in range(8)])
    for d in range(8):
        np.testing.assert_array_equal(outs[0][d], FULL)


def test_a_call_cached_for_a_dropped_axis_context_is_not_reused_at_its_address():
    """call_lowering keys its cache by the axis context's id: an entry made in a shard_map
    region whose context is gone (its address then free for the next region's) must not
    serve another context. Made deterministic by planting such an entry by hand."""
    from lower.mlir import ModuleContext, call_lowering, LoweringRuleContext
    from lower.tokens import TokenSet
    import mhlo_ir as hlo
    callee = tr.make_jaxpr(lambda v: v * 2.0)(FULL)
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((8, 8), hlo.f32)])
    b = f.builder()
    here, gone = object(), object()
    mctx = ModuleContext(m, "cpu", axis_context=here)
    planted = m.add_function("planted", [hlo.tensor((8, 8), hlo.f32)],
                             [hlo.tensor((8, 8), hlo.f32)], visibility="private")
    planted.builder().return_(planted.arguments[0])
    mctx.cached_call_jaxpr_lowerings[(id(callee), (), id(here))] = (callee, gone, planted)
    ctx = LoweringRuleContext(mctx, b, None, None, None, TokenSet())
    (out,) = call_lowering(ctx, "f", callee, f.arguments[0])
    b.return_(*out)
    callee_name = out[0].owner.attributes["callee"].name
    assert callee_name != "planted", "a call cached for another axis context was reused"
    (got,) = verify.run(m, FULL)
    np.testing.assert_array_equal(got, FULL * 2)
