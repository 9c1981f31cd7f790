"""lower.jax.jit with in/out shardings on several CPU devices: whole arrays in and out, equal
to jax.jit of the same function (on one device here, where sharding cannot change a value:
exact for integers and data movement, 1e-5 for float sums whose order the partitioning may
change); and, in a fresh process with 8 jax CPU devices, jax's own NamedShardings against
jax.jit with the same shardings."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj

RNG = np.random.default_rng(7)


def _close(got, want, exact=False):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        if exact or g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


ROWS = "{devices=[4,1]<=[4]}"
COLS = "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"
BOTH = "{devices=[2,2]<=[4]}"
HALF = "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"


@pytest.mark.parametrize("ins, outs", [
    ((ROWS, COLS), BOTH), ((BOTH, "{replicated}"), (ROWS,)), ((HALF, BOTH), None),
    (None, HALF), (("{replicated}", ROWS), "{maximal device=1}"),
])
def test_integer_programs_exactly_whatever_the_shardings(ins, outs):
    def f(a, b):
        return (a * 3 - b[::-1]) // 2
    a = RNG.integers(-50, 50, (8, 6), dtype=np.int32)
    b = RNG.integers(-50, 50, (8, 6), dtype=np.int32)
    jitted = lj.jit(f, in_shardings=ins, out_shardings=outs)
    _close(jitted(a, b), jax.jit(f)(a, b), exact=True)
    assert jitted.lower(a, b).num_partitions in (2, 4)


def test_uneven_tiles_are_padded_and_cropped():
    def f(x):
        return jnp.cumsum(x) + x[::-1]
    x = np.arange(10, dtype=np.int32)
    got = lj.jit(f, in_shardings="{devices=[4]<=[4]}", out_shardings="{devices=[4]3,1,0,2}")(x)
    _close(got, jax.jit(f)(x), exact=True)


def test_pytree_prefixes_match_as_jax_matches_them():
    def f(params, batch):
        h = jnp.tanh(batch["x"] @ params["w"] + params["b"])
        return {"h": h, "loss": ((h - batch["y"]) ** 2).mean()}
    params = {"w": RNG.standard_normal((5, 4)).astype(np.float32),
              "b": np.zeros(4, np.float32)}
    batch = {"x": RNG.standard_normal((8, 5)).astype(np.float32),
             "y": RNG.standard_normal((8, 4)).astype(np.float32)}
    jitted = lj.jit(f, in_shardings=("{replicated}", ROWS),
                    out_shardings={"h": ROWS, "loss": "{replicated}"})
    lowered = jitted.lower(params, batch)
    text = lowered.text
    assert text.count(f'mhlo.sharding = "{ROWS}"') == 3  # batch x, batch y, result h
    _close(jitted(params, batch), jax.jit(f)(params, batch))


def test_data_parallel_gradient_step():
    def loss(w, x, y):
        return ((jnp.tanh(x @ w) - y) ** 2).mean()

    def step(w, x, y):
        g = jax.grad(loss)(w, x, y)
        return w - 0.1 * g, loss(w, x, y)
    w = RNG.standard_normal((6, 3)).astype(np.float32)
    x = RNG.standard_normal((16, 6)).astype(np.float32)
    y = RNG.standard_normal((16, 3)).astype(np.float32)
    jitted = lj.jit(step, in_shardings=("{replicated}", ROWS, ROWS),
                    out_shardings=("{replicated}", "{replicated}"))
    _close(jitted(w, x, y), jax.jit(step)(w, x, y))


def test_a_debug_print_under_shardings_prints_once(capsys):
    def f(x):
        jax.debug.print("total {t}", t=x.sum())
        return x + 1
    x = np.arange(8, dtype=np.int32)
    got = lj.jit(f, in_shardings=ROWS.replace("4,1", "4"), out_shardings=None)(x)
    assert capsys.readouterr().out == "total 28\n"
    np.testing.assert_array_equal(got, x + 1)
    assert "{maximal device=0}" in lj.lower(f, x, in_shardings="{devices=[4]<=[4]}").text


def test_shardings_over_different_device_counts_are_refused_in_python():
    with pytest.raises(ValueError, match=r"sharding \{devices=\[2\]0,1\} tiles over 2 devices, "
                                         "but other shardings of the program name 4"):
        lj.lower(lambda a, b: a + b, np.ones(4), np.ones(4),
                 in_shardings=["{devices=[2]0,1}", "{devices=[4]<=[4]}"])


def test_sharding_counts_that_fit_nothing_are_refused():
    with pytest.raises(ValueError, match="in_shardings has 3 entries for 2 flat arguments"):
        lj.lower(lambda a, b: a + b, np.ones(2), np.ones(2),
                 in_shardings=["{replicated}"] * 3)


def _in_a_fresh_process(script: str) -> None:
    """Run ``script`` where jax has not started yet (it sets the CPU device count)."""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


_NAMED = textwrap.dedent("""
    import jax, numpy as np, jax.numpy as jnp
    jax.config.update("jax_num_cpu_devices", 8)
    from jax.sharding import NamedSharding, PartitionSpec as P
    import lower.jax as lj
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    def f(w, x):
        h = jnp.tanh(x @ w)
        return {"h": h, "s": h.sum(axis=0), "i": (x > 0).astype(jnp.int32).sum(1)}
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    ins = (NamedSharding(mesh, P(None, "y")), NamedSharding(mesh, P("x", None)))
    outs = {"h": NamedSharding(mesh, P("x", "y")), "s": NamedSharding(mesh, P()),
            "i": NamedSharding(mesh, P("x"))}
    theirs = jax.jit(f, in_shardings=ins, out_shardings=outs)(w, x)
    ours = lj.jit(f, in_shardings=ins, out_shardings=outs)(w, x)
    assert lj.lower(f, w, x, in_shardings=ins, out_shardings=outs).num_partitions == 8
    np.testing.assert_array_equal(ours["i"], np.asarray(theirs["i"]))
    for k in ("h", "s"):
        np.testing.assert_allclose(ours[k], np.asarray(theirs[k]), rtol=1e-5, atol=1e-6)
    print("ok")
""")


def test_jax_named_shardings_on_eight_devices_match_jax_jit():
    _in_a_fresh_process(_NAMED)


# What the scripts of one axis "i" over 4 CPU devices start with.
_FOUR_DEVICES = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from jax import lax
    jax.config.update("jax_num_cpu_devices", 4)
    from jax.sharding import PartitionSpec as P
    import lower.jax as lj
    mesh = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))
""")


_ASYNC = _FOUR_DEVICES + textwrap.dedent("""
    from jax._src.lax import parallel as par
    def body(x):
        s = par.psum_start(x, "i")
        r = par.ppermute_start(x, "i", perm=[(0, 1), (1, 2), (2, 3), (3, 0)])
        g = par.all_gather_start(x, "i", tiled=True)
        return s.done() * 2, r.done(), g.done()
    f = jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=(P("i"), P("i"), P("i")))
    x = np.arange(8, dtype=np.int32)
    ours, theirs = lj.jit(f)(x), jax.jit(f)(x)
    assert lj.lower(f, x).num_partitions == 4
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, np.asarray(b))
    print("ok")
""")


def test_async_collective_pairs_in_shard_map_match_jax_jit():
    _in_a_fresh_process(_ASYNC)


_CONSTRAINT = textwrap.dedent("""
    import re, jax, numpy as np
    jax.config.update("jax_num_cpu_devices", 8)
    from jax.sharding import PartitionSpec as P
    import lower.jax as lj
    A = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), ("i", "j"), axis_types=(A, A))
    def part(x):   # manual over i only: the constraint's spec names j
        return jax.lax.with_sharding_constraint(x * 2, P(None, "j")) + 1
    def full(x):   # manual over every axis
        return jax.lax.with_sharding_constraint(x * 3, P())
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    for body, specs, want in (
            (part, dict(in_specs=P("i"), out_specs=P("i"), axis_names={"i"}),
             "{devices=[1,2,4]0,2,4,6,1,3,5,7 last_tile_dims={manual}}"),
            (full, dict(in_specs=P("i", "j"), out_specs=P("i", "j")), "{manual}")):
        f = jax.shard_map(body, mesh=mesh, **specs)
        text = lj.lower(f, x).text
        assert want in text, text
        np.testing.assert_array_equal(lj.jit(f)(x), np.asarray(jax.jit(f)(x)))
    print("ok")
""")


def test_sharding_constraints_inside_shard_map_gain_its_manual_axes():
    _in_a_fresh_process(_CONSTRAINT)


def test_partitioned_debug_callbacks_under_shardings(capsys):
    seen = []

    def f(x):
        jax.debug.callback(lambda v: seen.append(np.asarray(v).shape), x, partitioned=True)
        return x * 2
    x = np.arange(8, dtype=np.int32)
    got = lj.jit(f, in_shardings="{devices=[4]<=[4]}", out_shardings="{devices=[4]<=[4]}")(x)
    np.testing.assert_array_equal(got, x * 2)
    assert seen and all(s in ((2,), (8,)) for s in seen)


def test_shardings_that_cannot_be_meant_are_refused_in_python():
    from jax.sharding import PartitionSpec
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="a PartitionSpec .* names mesh axes"):
        lj.lower(lambda a: a, x, in_shardings=PartitionSpec("x"))
    with pytest.raises(ValueError, match=r"names devices \[0, 3\]"):
        lj.lower(lambda a: a, x, in_shardings="{devices=[2]0,3}")


_KEYS = textwrap.dedent("""
    import jax, numpy as np
    jax.config.update("jax_num_cpu_devices", 2)
    from jax.sharding import NamedSharding, PartitionSpec as P
    import lower.jax as lj
    s = NamedSharding(jax.make_mesh((2,), ("x",)), P("x"))
    keys = jax.random.split(jax.random.key(0), 4)
    draw = lambda k: jax.vmap(lambda kk: jax.random.uniform(kk))(k)
    # A key array's sharding covers its words as trailing, whole dimensions: a rank-1
    # sharding on tensor<4x2xui32> crashed jaxlib (in) or was refused by it (out).
    assert "{devices=[2,1]<=[2]}" in lj.lower(draw, keys, in_shardings=s).text
    np.testing.assert_array_equal(lj.jit(draw, in_shardings=s)(keys),
                                  np.asarray(jax.jit(draw, in_shardings=s)(keys)))
    split = lambda k: jax.random.split(k, 4)
    ours = lj.jit(split, out_shardings=s)(jax.random.key(1))
    theirs = jax.jit(split, out_shardings=s)(jax.random.key(1))
    np.testing.assert_array_equal(jax.random.key_data(ours), jax.random.key_data(theirs))
    print("ok")
""")


def test_sharded_key_arrays_leave_their_words_whole():
    _in_a_fresh_process(_KEYS)


_REVIEWED = textwrap.dedent("""
    import jax, numpy as np, pytest
    jax.config.update("jax_num_cpu_devices", 8)
    from jax import lax
    from jax.sharding import NamedSharding, PartitionSpec as P
    import lower.jax as lj
    A = jax.sharding.AxisType.Auto
    m8 = jax.make_mesh((8,), ("x",), axis_types=(A,))
    m4 = jax.make_mesh((4,), ("x",), axis_types=(A,), devices=jax.devices()[:4])
    x = np.arange(16, dtype=np.int32).reshape(8, 2)
    def same(f, *args, **kw):
        ours, theirs = lj.jit(f, **kw)(*args), jax.jit(f, **kw)(*args)
        for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # a result replicated only by promise (check_vma=False) is the first device's copy
    same(jax.shard_map(lambda v: v * 2, mesh=m8, in_specs=P("x"), out_specs=P(),
                       check_vma=False), x.reshape(8, 2)[:, :1] * 10)
    # donation beside shardings that split the input but not the output
    s = NamedSharding(m8, P("x"))
    same(lambda a: a * 2, x, in_shardings=s, donate_argnums=0)
    same(lambda a: a * 2, x, in_shardings=s, out_shardings=NamedSharding(m8, P()),
         donate_argnums=0)
    same(jax.shard_map(lambda v: (lax.psum(v, "x"), v * 2), mesh=m8, in_specs=P("x"),
                       out_specs=(P(), P("x"))), x, donate_argnums=0)
    # typed keys into and out of a shard_map (their words a trailing dimension)
    keys = jax.random.split(jax.random.key(0), 8)
    same(jax.shard_map(jax.random.key_data, mesh=m8, in_specs=P("x"), out_specs=P("x")),
         keys)
    same(jax.shard_map(lambda k, v: v + jax.random.uniform(
        jax.random.fold_in(k, lax.axis_index("x")), v.shape), mesh=m8,
        in_specs=(P(), P("x")), out_specs=P("x")), jax.random.key(7),
        np.zeros((8, 2), np.float32))
    # devices that do not match, and a spec longer than the rank, refused in Python
    with pytest.raises(ValueError, match="Received incompatible devices"):
        lj.jit(lambda v: jax.shard_map(lambda u: lax.psum(u, "x"), mesh=m4, in_specs=P("x"),
                                       out_specs=P())(v), in_shardings=s)(x)
    with pytest.raises(ValueError, match="Received incompatible devices"):
        lj.jit(lambda v: lax.with_sharding_constraint(v * 2, s),
               in_shardings=NamedSharding(m4, P("x")))(x)
    with pytest.raises(ValueError, match="only valid for values of rank at least 1"):
        lj.jit(lambda a: a + 1, in_shardings=s)(np.int32(3))
    # results stay where the program puts them, as jax.jit's: XLA may propagate a sharding
    # to results without out_shardings, and a sharding constraint alone spreads the program
    from verify import _jaxlib
    xc, _ = _jaxlib.xla()
    for f, kw in ((lambda v: v + 1, dict(in_shardings=s)),
                  (lambda v: lax.with_sharding_constraint(v + 1, s), {})):
        j = lj.jit(f, **kw)
        np.testing.assert_array_equal(j(x), np.asarray(jax.jit(f, **kw)(x)))
        lowered, exe, _ = next(iter(j._cache.values()))
        assert lowered.num_partitions == 8
        (got,) = [xc.HloSharding.from_proto(p) for p in exe.loaded.get_output_shardings()]
        want = jax.jit(f, **kw)(x).sharding._to_xla_hlo_sharding(2)
        assert got == want, (str(got), str(want))
    print("ok")
""")


def test_reviewed_sharding_cases_match_jax_jit():
    """A review against jax.jit on 8 devices found each of these wrong or refused by XLA."""
    _in_a_fresh_process(_REVIEWED)


_CALLBACK_DEVICES = textwrap.dedent("""
    import jax, numpy as np
    jax.config.update("jax_num_cpu_devices", 8)
    from jax.experimental import io_callback
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding
    import lower.jax as lj
    devs = jax.devices()
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    # a callback placed on one device of the program's (device 5 of a mesh over devices
    # 4..7 is the program's device 1, as jax numbers it)
    for mesh_devs, dev, place in ((devs, 3, 3), (devs[4:], 5, 1)):
        mesh = Mesh(np.array(mesh_devs).reshape(2, -1), ("x", "y"))
        def f(v):
            b = io_callback(lambda u: u * 2, jax.ShapeDtypeStruct(v.shape, v.dtype), v,
                            sharding=SingleDeviceSharding(devs[dev]))
            return (b + 1).sum()
        s = NamedSharding(mesh, P("x", "y"))
        assert lj.jit(f, in_shardings=s)(a) == jax.jit(f, in_shardings=s)(a) == 4096
        assert f"maximal device={place}" in lj.lower(f, a, in_shardings=s).text
    # one outside the program's devices is refused, naming both
    mesh = Mesh(np.array(devs[4:]).reshape(2, 2), ("x", "y"))
    def g(v):
        return io_callback(lambda u: u, jax.ShapeDtypeStruct(v.shape, v.dtype), v,
                           sharding=SingleDeviceSharding(devs[1]))
    try:
        lj.jit(g, in_shardings=NamedSharding(mesh, P("x", "y")))(a)
        raise AssertionError("not refused")
    except ValueError as e:
        assert "Received incompatible devices" in str(e) and "[1]" in str(e), e
    print("ok")
""")


def test_a_callback_on_one_device_of_a_sharded_program_runs_there_as_in_jax_jit():
    _in_a_fresh_process(_CALLBACK_DEVICES)


# What the 8-device scripts below start with: jax on 8 CPU devices, a 4x2 mesh of automatic
# axes, lower.jax, and jaxlib's HloSharding (to read a compiled program's shardings).
_MESH_8 = textwrap.dedent("""
    import jax, numpy as np, jax.numpy as jnp
    jax.config.update("jax_num_cpu_devices", 8)
    from jax import lax
    from jax.sharding import NamedSharding, PartitionSpec as P
    import lower.jax as lj
    from verify import _jaxlib
    xc, _ = _jaxlib.xla()
    A = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(A, A))
""")

_PARTLY_MANUAL_LOOPS = _MESH_8 + textwrap.dedent("""
    bodies = {
        "scan ys": lambda v: lax.scan(lambda c, _: (c + 1, c * 2), v, None, length=2),
        "map": lambda v: lax.map(lambda r: r * 2, v),
        "grad of scan": lambda v: jax.grad(lambda a: lax.scan(
            lambda c, _: (jnp.sin(c), None), a, None, length=3)[0].sum())(v),
        "grad of fori": lambda v: jax.grad(lambda a: lax.fori_loop(
            0, 3, lambda i, c: jnp.sin(c), a).sum())(v),
    }
    x = (np.arange(64, dtype=np.float32).reshape(8, 8) - 20) / 9
    specs = {"scan ys": (P("x"), P("x"), P(None, "x"))}
    # all_to_all with split and concat dimensions apart: (in_specs, out_specs) per case
    bodies["all_to_all 1->0"] = lambda v: lax.all_to_all(v, "x", 1, 0, tiled=True)
    specs["all_to_all 1->0"] = (P("x"), P(None, "x"))
    bodies["all_to_all 0->1"] = lambda v: lax.all_to_all(v, "x", 0, 1, tiled=True)
    specs["all_to_all 0->1"] = (P(None, "x"), P("x"))
    bodies["all_to_all 3d"] = lambda v: lax.all_to_all(v.reshape(2, 4, 2), "x", 1, 2,
                                                       tiled=True).reshape(2, 8)
    for name, body in bodies.items():
        ins, *outs = specs.get(name, (P("x"), P("x")))
        outs = tuple(outs) if len(outs) > 1 else outs[0]
        f = jax.shard_map(body, mesh=mesh, in_specs=ins, out_specs=outs, axis_names={"x"})
        want = jax.jit(f)(x)
        got = lj.jit(f)(x)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6,
                                       err_msg=name)
    print("ok")
""")


def test_loops_stacking_outputs_in_a_partly_manual_shard_map_run_as_jax_jit():
    """A scan's stacked outputs (lax.map's, the residuals of grad through scan or fori) in a
    region manual over some mesh axes only: XLA's partitioner aborted the process on the
    unmarked buffer and step counter (Check failed: sharding.IsManualSubgroup()); and an
    all_to_all whose split and concat dimensions differ there, which jaxlib refused
    ("Number of tile assignment dimensions ... is different than the input rank")."""
    _in_a_fresh_process(_PARTLY_MANUAL_LOOPS)


_NESTED_JIT = _MESH_8 + textwrap.dedent("""
    inner = jax.jit(lambda b: b * 2, in_shardings=NamedSharding(mesh, P(None, "x")),
                    out_shardings=NamedSharding(mesh, P("y", "x")))
    f = lambda a: inner(a) + 1
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    for outer in (None, NamedSharding(mesh, P("x", "y"))):
        want = jax.jit(f, in_shardings=outer)(x)
        lowered = lj.jit(f, in_shardings=outer).lower(x)
        assert lowered.num_partitions == 8, lowered.num_partitions
        exe = lowered.compile()
        got = exe.run_global(x)[0]
        assert np.array_equal(got, np.asarray(want))
        sharding = xc.HloSharding.from_proto(exe.loaded.get_output_shardings()[0])
        assert str(sharding) == str(want.sharding._to_xla_hlo_sharding(2)), (sharding, outer)
    # Inside a shard_map manual over "x" only, its shardings are over the region's "y".
    with jax.set_mesh(mesh):
        inner_y = jax.jit(lambda b: b * 2, out_shardings=P(None, "y"))
        region = jax.shard_map(lambda v: inner_y(v) + 1, in_specs=P("x"), out_specs=P("x"),
                               axis_names={"x"})
        want = jax.jit(region)(x)
        exe = lj.jit(region).lower(x).compile()
        assert np.array_equal(exe.run_global(x)[0], np.asarray(want))
        got = xc.HloSharding.from_proto(exe.loaded.get_output_shardings()[0])
        assert got == want.sharding._to_xla_hlo_sharding(2), got
    # A nested jit on other devices (or the same in another order) is refused, as jax.jit
    # refuses it ("Received incompatible devices").
    devices = jax.devices()
    outer = NamedSharding(mesh, P("x"))
    for other in (jax.sharding.Mesh(np.array(devices[::-1]), ("i",)),
                  jax.sharding.Mesh(np.array(devices[4:]), ("i",))):
        g = jax.jit(lambda b: b * 2, out_shardings=NamedSharding(other, P("i")))
        for jit in (jax.jit, lj.jit):
            try:
                jit(lambda a: g(a) + 1, in_shardings=outer)(x)
                raise AssertionError("not refused")
            except ValueError as e:
                assert "Received incompatible devices" in str(e), e
    print("ok")
""")


def test_a_nested_jits_shardings_constrain_its_call_as_in_jax_jit():
    """jax.jit(g, in_shardings=..., out_shardings=...) called inside the program: its
    shardings constrain the call's arguments and results (they were dropped: the program
    ran on one device, or its result took the outer input's sharding)."""
    _in_a_fresh_process(_NESTED_JIT)


_SET_MESH = _MESH_8 + textwrap.dedent("""
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    cases = [(lambda a: lax.with_sharding_constraint(a * 2, P("x", "y")) + 1, {}),
             (lambda a: a + 1, dict(in_shardings=P("x"), out_shardings=P(None, "y")))]
    with jax.set_mesh(mesh):
        for f, kw in cases:
            want = jax.jit(f, **kw)(x)
            lowered = lj.jit(f, **kw).lower(x)
            assert lowered.num_partitions == 8, lowered.num_partitions
            exe = lowered.compile()
            assert np.array_equal(exe.run_global(x)[0], np.asarray(want))
            got = xc.HloSharding.from_proto(exe.loaded.get_output_shardings()[0])
            if kw:  # (a constraint's result is left to XLA's propagation, as in jax)
                assert str(got) == str(want.sharding._to_xla_hlo_sharding(2)), got
        traced = lj.jit(cases[1][0], **cases[1][1]).trace(x)
        inside = traced.lower().as_text()
    assert traced.lower().as_text() == inside  # (the mesh traced under, as jax's Traced)
    print("ok")
""")


def test_partition_specs_on_the_mesh_jax_set_mesh_sets_are_read_as_jax_reads_them():
    """Under jax.set_mesh, a PartitionSpec constraint ran the program on one device (its
    abstract mesh counted none) and in_shardings=P(...) were refused."""
    _in_a_fresh_process(_SET_MESH)


_INDIVISIBLE = _MESH_8 + textwrap.dedent("""
    s = NamedSharding(jax.make_mesh((8,), ("i",), axis_types=(A,)), P("i"))
    x = np.ones((10, 3), np.float32)
    for kw in (dict(in_shardings=s), dict(out_shardings=s)):
        for run in (lambda: jax.jit(lambda a: a + 1, **kw)(x),
                    lambda: lj.jit(lambda a: a + 1, **kw)(x)):
            try:
                run()
                raise AssertionError(f"not refused: {kw}")
            except ValueError as e:  # (jax's IndivisibleError)
                assert "evenly divide the shape" in str(e), e
    print("ok")
""")


def test_a_jax_sharding_that_does_not_divide_the_array_is_refused_as_in_jax_jit():
    """(Sharding text that does not divide is padded and cropped by XLA: taken, above.)"""
    _in_a_fresh_process(_INDIVISIBLE)


_BRANCHES = _FOUR_DEVICES + textwrap.dedent("""
    def body(a):
        picked = lax.cond(lax.axis_index("i") % 2 == 0, lambda v: lax.psum(v, "i"),
                          lambda v: lax.psum(v * 2, "i"), a)
        return picked + lax.switch(lax.axis_index("i") % 3, [
            lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
            lambda v: lax.ppermute(v * 3, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
            lambda v: lax.ppermute(v + 1, "i", [(0, 1), (1, 2), (2, 3), (3, 0)])], a)
    f = jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False)
    x = np.arange(16, dtype=np.int32)
    np.testing.assert_array_equal(lj.jit(f)(x), np.asarray(jax.jit(f)(x)))
    print("ok")
""")


def test_collectives_in_branches_picked_per_device_meet_as_in_jax_jit():
    # (each collective had a channel of its own: XLA:CPU's devices then waited at different
    # rendezvous, and the process aborted after 40 s; jax gives them all channel 1)
    _in_a_fresh_process(_BRANCHES)


_NARROW_AND_KEYS = _FOUR_DEVICES + textwrap.dedent("""
    sm = lambda f, out=P("i"): jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=out,
                                             check_vma=False)
    bodies = [lambda a: lax.all_gather(a, "i", tiled=True),
              lambda a: lax.ppermute(a, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
              lambda a: lax.all_to_all(a, "i", 0, 0, tiled=True)]
    x = (np.arange(32) % 15 - 7).astype(jnp.int4)
    for body in bodies:  # (many runs: a corrupted heap shows late)
        f, want = lj.jit(sm(body)), np.asarray(jax.jit(sm(body))(x))
        for _ in range(25):
            np.testing.assert_array_equal(np.asarray(f(x)), want)
    keys = jax.random.split(jax.random.key(0), 8)
    g = lambda k: jax.random.key_data(sm(lambda k: lax.all_gather(k, "i", tiled=True),
                                         out=P())(k))
    np.testing.assert_array_equal(np.asarray(lj.jit(g)(keys)), np.asarray(jax.jit(g)(keys)))
    print("ok")
""")


def test_four_bit_collectives_and_gathered_keys_in_shard_map_as_jax_jit():
    # (4-bit collectives with a channel were refused for XLA:CPU's heap corruption, measured
    # among replicas; among partitions XLA widens them, and they run as jax.jit's. Keys were
    # gathered as their logical type: a TypeError)
    _in_a_fresh_process(_NARROW_AND_KEYS)


_DEVICE_ORDER = textwrap.dedent("""
    import jax, numpy as np, pytest
    from jax import lax
    jax.config.update("jax_num_cpu_devices", 4)
    from jax.sharding import NamedSharding, PartitionSpec as P
    import lower.jax as lj
    devs = np.array(jax.devices())
    plain = jax.sharding.Mesh(devs.reshape(2, 2), ("x", "y"))
    reversed_ = jax.sharding.Mesh(devs[::-1].reshape(2, 2), ("x", "y"))
    body = lambda a: a + lax.psum(a, "y")
    f = lambda mesh: jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"),
                                   out_specs=P("x", "y"))
    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    for fn in (lambda a: f(reversed_)(f(plain)(a)),
               lambda a: f(plain)(lax.with_sharding_constraint(a, NamedSharding(reversed_,
                                                                                P("x"))))):
        for jit in (jax.jit, lj.jit):
            with pytest.raises(ValueError, match="Received incompatible devices"):
                jit(fn)(x)
    np.testing.assert_array_equal(lj.jit(f(reversed_))(x), np.asarray(jax.jit(f(reversed_))(x)))
    print("ok")
""")


def test_the_same_devices_in_another_order_are_refused_as_jax_jit_refuses_them():
    _in_a_fresh_process(_DEVICE_ORDER)
