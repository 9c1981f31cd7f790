"""lower.jax: jax traces, our rules lower, verify runs; each program against jax.jit itself on
the same inputs (exact for integers and data movement, 1e-5 relative for float math), and the
signature cache against what jax.jit keys on."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj

RNG = np.random.default_rng(0)


def _same(got, want, rtol=1e-5):
    g, gt = jax.tree_util.tree_flatten(got)
    w, wt = jax.tree_util.tree_flatten(want)
    assert gt == wt
    for a, b in zip(g, w):
        b = np.asarray(b)
        assert isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        if a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-6)


def mlp(params, x):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return x.sum()


PARAMS = [(RNG.standard_normal((4, 8)).astype(np.float32), np.zeros(8, np.float32)),
          (RNG.standard_normal((8, 2)).astype(np.float32), np.ones(2, np.float32))]
X = RNG.standard_normal((3, 4)).astype(np.float32)

PROGRAMS = {
    "pytree_out": (lambda x, y: {"s": (x * y).sum(), "d": (x - y, x.T)}, (X, 2.0)),
    "mlp_value_and_grad": (jax.value_and_grad(mlp), (PARAMS, X)),
    "scan_cumsum": (lambda x: jax.lax.scan(lambda c, v: (c + v, c * v), 0.0, x), (X[0],)),
    "while_collatz": (lambda n: jax.lax.while_loop(lambda s: s[0] != 1, lambda s: (
        jnp.where(s[0] % 2 == 0, s[0] // 2, 3 * s[0] + 1), s[1] + 1), (n, 0)),
        (np.int32(27),)),
    "sort_and_gather": (lambda x, i: (jnp.sort(x, axis=1), x[i]), (X, np.array([2, 0]))),
    "integer_ops": (lambda a, b: (a * b + (a >> 1), jnp.bitwise_xor(a, b)),
                    (np.arange(6, dtype=np.int32), np.full(6, 7, np.int32))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jit_matches_jax_jit(name):
    fn, args = PROGRAMS[name]
    _same(lj.jit(fn)(*args), jax.jit(fn)(*args))


def test_one_compile_per_signature():
    f = lj.jit(lambda x, y: x * y)
    x = np.ones(3, np.float32)
    f(x, 2.0)
    f(x, 3.0)                      # another Python float: the same (weakly typed) signature
    assert f.cache_size == 1
    f(x, np.float32(3))            # a strongly typed f32 scalar: another signature, as in JAX
    assert f.cache_size == 2
    f(np.ones(4, np.float32), 2.0)  # another shape
    assert f.cache_size == 3
    jf = jax.jit(lambda x, y: x * y)
    for y in (2.0, np.float32(3)):
        _same(f(x, y), jf(x, y))


def test_static_arguments_and_pytrees_of_arguments():
    f = lj.jit(lambda p, n: jax.tree_util.tree_map(lambda a: a ** n, p), static_argnums=1)
    p = {"a": np.arange(3.0, dtype=np.float32), "b": (np.float32(2), np.ones(2, np.int32))}
    _same(f(p, 3), jax.jit(lambda p, n: jax.tree_util.tree_map(lambda a: a ** n, p),
                           static_argnums=1)(p, 3))
    f(p, 2)
    assert f.cache_size == 2
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        f(p, [2])


def test_jax_arrays_in_numpy_out():
    f = lj.jit(lambda x: x + 1)
    out = f(jnp.arange(3))
    assert isinstance(out, np.ndarray) and out.tolist() == [1, 2, 3]


def test_lower_gives_our_module_with_donation_and_shardings():
    low = lj.lower(lambda x, y: x + y, X, X, donate_argnums=0)
    assert low.donated == (True, False)
    assert "tf.aliasing_output = 0" in low.text
    # XLA takes the donation: the result may live in argument 0's buffer.
    assert "input_output_alias={ {}: (0, {}, may-alias) }" in low.compile().optimized_hlo()
    donating = lj.jit(lambda x, y: x + y, donate_argnums=0)
    before = X.copy()
    np.testing.assert_array_equal(donating(X, X), before + before)
    np.testing.assert_array_equal(X, before)   # numpy inputs are copied to the device
    sharded = lj.lower(lambda x: jnp.tanh(x), np.ones((8, 4), np.float32),
                       in_shardings=["{devices=[2,1]0,1}"], out_shardings=["{replicated}"])
    text = sharded.text
    assert 'mhlo.sharding = "{devices=[2,1]0,1}"' in text
    assert "mhlo.num_partitions = 2" in text
    import verify
    exe = verify.compile(sharded.module, num_partitions=2)
    assert exe.shard_shapes() == [(4, 4)]
    with pytest.raises(ValueError, match="in_shardings has 2 entries for 1 flat arguments"):
        lj.lower(lambda x: x, X, in_shardings=["{replicated}", "{replicated}"])
    with pytest.raises(ValueError, match="both static and donated"):
        lj.lower(lambda x: x, X, static_argnums=0, donate_argnums=0)


def test_x64_mode_on_and_off():
    f = lj.jit(lambda x: x * 2 + 1)
    x = np.arange(3, dtype=np.float64)
    out32 = f(x)                               # x64 off: jax traces it as f32
    assert out32.dtype == np.float32
    try:
        jax.config.update("jax_enable_x64", True)
        out64 = f(x)
        want = jax.jit(lambda x: x * 2 + 1)(x)
        assert out64.dtype == np.float64 == np.asarray(want).dtype
        np.testing.assert_array_equal(out64, want)
        big = lj.jit(lambda a: a * 3)(np.array([2**40], np.int64))
        assert big.dtype == np.int64 and big.tolist() == [3 * 2**40]
    finally:
        jax.config.update("jax_enable_x64", False)
    assert f.cache_size == 2                   # one signature per mode
    assert f(x).dtype == np.float32


def test_typed_prng_keys_in_and_out():
    def f(k):
        a, b = jax.random.split(k)
        return jax.random.uniform(a, (3,)), jax.random.normal(b, (2,)), b
    key = jax.random.key(42)
    u, n, k2 = lj.jit(f)(key)
    wu, wn, wk2 = jax.jit(f)(key)
    np.testing.assert_array_equal(u, np.asarray(wu))      # the same bits, exactly
    np.testing.assert_allclose(n, np.asarray(wn), rtol=1e-6)
    assert jax.dtypes.issubdtype(k2.dtype, jax.dtypes.prng_key)
    np.testing.assert_array_equal(jax.random.key_data(k2), jax.random.key_data(wk2))
    again = lj.jit(lambda k: jax.random.bits(k, (4,), np.uint32))(k2)   # a returned key in
    np.testing.assert_array_equal(again, np.asarray(jax.random.bits(wk2, (4,), np.uint32)))


def _scaled_sine(x):
    return jnp.sin(x) * 2  # the line the sine and the multiply come from


def test_locations_carry_jaxs_name_stacks_and_the_users_frames():
    import inspect

    def f(x):
        with jax.named_scope("block"):
            y = _scaled_sine(x)
        return y + 1
    lowered = lj.lower(f, np.ones(3, np.float32))
    line = inspect.getsourcelines(_scaled_sine)[1] + 1
    caller = inspect.getsourcelines(f)[1] + 2
    here = __file__
    sine = next(op for _, op in __import__("mhlo_ir").ir.walk(lowered.module)
                if op.spec.name == "sine")
    text = sine.location.render()
    assert text.startswith('"jit(f)/block/sin"(callsite("_scaled_sine"(')
    # The multiply comes from the same line: its own name and its own range there (chains
    # are shared between equations of one traceback only), the same caller.
    mul = next(op for _, op in __import__("mhlo_ir").ir.walk(lowered.module)
               if op.spec.name == "multiply")
    assert mul.location.name == "jit(f)/block/mul"
    assert f'"{here}":{line}:11 to :25' in mul.location.render()
    assert mul.location.child.caller == sine.location.child.caller
    assert f'"{here}":{line}:11 to :21' in text and f'"{here}":{caller}:16' in text
    # jax.jit's own text, read with our parser: the same name and the same innermost frames
    # (the outermost ones differ: jax appends the frames of the call that lowers, which ours
    # do not record).
    from mhlo_ir.location import parse_location, parse_location_aliases
    theirs_text = jax.jit(f).lower(np.ones(3, np.float32)).as_text(debug_info=True)
    aliases = parse_location_aliases(theirs_text)
    sine_line = next(t for t in theirs_text.splitlines() if "stablehlo.sine" in t)
    theirs = parse_location("loc(" + sine_line.rsplit(" loc(", 1)[1], aliases)
    ours = sine.location
    def frames(loc):
        out = []
        while isinstance(loc, __import__("mhlo_ir").CallSiteLoc):
            out.append(loc.callee)
            loc = loc.caller
        return out + [loc]
    assert ours.name == theirs.name == "jit(f)/block/sin"
    assert frames(ours.child)[:2] == frames(theirs.child)[:2]
    # jaxlib reads the text with its locations (ranges, call sites) and verifies it.
    import verify
    verify.check(lowered.module)


def _tanh_layer(w, x):
    return jnp.tanh(x @ w)  # the line every equation of a layer, and its transpose, comes from


def test_shared_location_chains_are_what_each_equation_builds_alone():
    """Locations are built once per distinct frame, chain link and (name, chain) within one
    lowering; each equation's location equals the one built for it with no cache at all."""
    from jax.extend import core as jcore

    import mhlo_ir as hlo
    from lower import core, lower_jaxpr_to_module
    from lower.locations import source_info_to_location

    def loss(w, x):
        return _tanh_layer(w, _tanh_layer(w, x)).sum()
    w = np.ones((4, 4), np.float32)
    closed = jax.jit(jax.value_and_grad(loss)).trace(w, np.ones((2, 4), np.float32)).jaxpr
    cache: dict = {}
    built, alone = [], []

    def walk(jaxpr, stack):
        for e in jaxpr.eqns:
            built.append(source_info_to_location(e.primitive, e.source_info, stack, cache))
            alone.append(source_info_to_location(e.primitive, e.source_info, stack))
            for v in e.params.values():
                for j in (v if isinstance(v, (tuple, list)) else (v,)):
                    if isinstance(j, jcore.ClosedJaxpr):
                        walk(j.jaxpr, stack)
    walk(closed.jaxpr, core.NameStack())
    assert built == alone and [b.render() for b in built] == [a.render() for a in alone]
    layer = [b for b in built if "_tanh_layer" in b.render()]
    assert len(layer) > 4
    # Different tracebacks of the line (forward, jvp, transpose) share one chain object.
    chains = {id(b.child) for b in layer if b.child is not None}
    texts = {b.child.render() for b in layer if b.child is not None}
    assert len(chains) == len(texts)
    text = lower_jaxpr_to_module("m", closed).module.to_text()
    assert text.count('"_tanh_layer"(') >= len(layer)
    assert isinstance(layer[0].child, hlo.CallSiteLoc)


def test_locations_kept_across_lowerings_are_what_a_lowering_builds_afresh(monkeypatch):
    """A program lowered again, or another tracing the same lines of user code (here the
    same loss at a larger batch), finds its equations' locations kept from the first (the
    very objects), and prints what a lowering with nothing kept prints."""
    import mhlo_ir as hlo
    from lower import locations

    def loss(w, x):
        return _tanh_layer(w, _tanh_layer(w, x)).sum()
    w = np.ones((4, 4), np.float32)

    def lowered(batch):
        return lj.lower(jax.value_and_grad(loss), w, np.ones((batch, 4), np.float32)).module

    def ops_and_text(m):
        return [op for _, op in hlo.ir.walk(m)], m.to_text()
    monkeypatch.setattr(locations, "_KEPT", {})
    runs = [ops_and_text(lowered(batch)) for batch in (2, 3, 3)]
    (ops2, text2), (ops3, text3), (ops3_again, text3_again) = runs
    assert text3 == text3_again and text2 != text3
    located = [op for op in ops2 if "_tanh_layer" in op.location.render()]
    assert len(located) > 4
    # Shared: the batch-3 lowering holds the batch-2 lowering's location objects.
    first = {id(op.location) for op in located}
    assert sum(id(op.location) in first for op in ops3) >= len(located)
    # Nothing kept: the same texts.
    for batch, text in ((3, text3), (2, text2)):
        monkeypatch.setattr(locations, "_KEPT", {})
        assert lowered(batch).to_text() == text


def test_locations_kept_across_lowerings_follow_jaxs_user_file_rules(tmp_path, monkeypatch):
    """A library may tell jax that its files are not the user's (``register_exclusion``,
    often on import) between two lowerings of the same lines: the second leaves its frames
    out as jax.jit does, not as the kept locations of the first had them (a review found
    the kept ones served)."""
    import importlib.util

    from jax.extend import source_info_util

    from lower import locations
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "kept_helper.py").write_text("def h(x):\n    return x * 2.0 + 1.0\n")
    spec = importlib.util.spec_from_file_location("kept_helper", lib / "kept_helper.py")
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)

    def f(x):
        return helper.h(x)
    x = np.ones(3, np.float32)
    monkeypatch.setattr(locations, "_KEPT", {})

    def ours():
        return lj.lower(f, x).module.to_text()
    before = ours()
    assert "kept_helper.py" in before
    source_info_util.register_exclusion(str(lib) + "/")  # (only this test's directory)
    after = ours()
    assert "kept_helper.py" not in after
    assert "kept_helper.py" not in jax.jit(f).lower(x).as_text(debug_info=True)
    monkeypatch.setattr(locations, "_KEPT", {})
    assert ours() == after


@pytest.mark.parametrize("setting, value", [
    ("jax_traceback_in_locations_limit", 0), ("jax_traceback_in_locations_limit", 1),
    ("jax_traceback_in_locations_limit", 2), ("jax_traceback_in_locations_limit", -1),
    ("jax_hlo_source_file_canonicalization_regex", r"^.*/tests/")])
def test_locations_follow_jaxs_frame_limit_and_file_name_canonicalization(setting, value):
    """jax.jit keeps ``jax_traceback_in_locations_limit`` user frames (none for 0, 1,000 for
    a negative limit) and removes ``jax_hlo_source_file_canonicalization_regex`` from file
    names: so does our lowering, and a lowering under other settings (kept locations) does
    not leak into it, in either order. (jax.jit also appends the frames of the call that
    lowers, the test's and pytest's, which ours do not record: docs/findings.md, the
    fourteenth session's section; so the two innermost frames are compared.)"""
    import mhlo_ir as hlo
    from mhlo_ir.location import parse_location, parse_location_aliases

    def sine_frames(text, aliases=None):
        line = next(t for t in text.splitlines() if "sine" in t)
        loc = parse_location("loc(" + line.rsplit(" loc(", 1)[1], aliases).child
        out = []
        while isinstance(loc, hlo.CallSiteLoc):
            out.append(loc.callee.render())
            loc = loc.caller
        return out + ([loc.render()] if loc is not None else [])

    x = np.ones(3, np.float32)

    def f(x):
        return _scaled_sine(x) + 1

    def ours():
        return sine_frames(lj.lower(f, x).module.to_text())
    default = ours()
    assert len(default) == 2 and '"_scaled_sine"(' in default[0]
    saved = getattr(jax.config, setting)
    try:
        jax.config.update(setting, value)
        jax.clear_caches()
        theirs_text = jax.jit(f).lower(x).as_text(debug_info=True)
        theirs = sine_frames(theirs_text, parse_location_aliases(theirs_text))
        got = ours()
    finally:
        jax.config.update(setting, saved)
    assert ours() == default
    if setting.endswith("regex"):
        assert got == theirs[:2] != default and not any("tests/" in t for t in got)
        assert '"lower/test_jax_front_door.py":' in got[0]
    elif 0 <= value <= 2:
        assert got == theirs == default[:value]
    else:
        assert got == theirs[:2] == default and len(theirs) > 2


def test_the_benchmarks_workloads_are_located_as_user_code():
    """``python -m lower.bench`` compares with JAX's lowering, which locates the workloads'
    frames: ours must do the same work, though the file lives in this package."""
    import lower.bench_lowering as bl
    import lower.locations as locations
    import lower.mlir as lm
    assert locations._is_user_file(bl.__file__)
    assert not locations._is_user_file(lm.__file__)
    assert not locations._is_user_file(locations.__file__)


def test_code_compiled_without_a_file_name_lowers_with_jaxs_ranges():
    # compile(..., "", ...) gives frames an empty file name; jax.jit writes their ranges as
    # "":line:col to :end, which MLIR keeps (a point would read back as "-").
    ns = {"jnp": jnp}
    exec(compile("def f(x):\n    return jnp.sin(x) * 3\n", "", "exec"), ns)
    x = np.ones(3, np.float32)
    lowered = lj.lower(ns["f"], x)
    import re

    import verify
    ours = lowered.module.to_text()
    theirs = jax.jit(ns["f"]).lower(x).as_text(debug_info=True)
    ranges = re.compile(r'"":\d+:\d+ to :\d+')
    assert set(ranges.findall(ours)) == set(ranges.findall(theirs))
    assert len(set(ranges.findall(ours))) == 2  # the sine's range and the multiply's
    assert "\"-\"" not in ours
    assert verify.check(lowered.module) == lowered.module.to_text(locations=True)
    _same(lj.jit(ns["f"])(x), jax.jit(ns["f"])(x))


MODULE_KEY = jax.random.key(3)


def test_a_key_captured_from_a_closure_is_its_key_data_constant():
    # The module-level key pattern: a typed key array as a constant of the jaxpr.
    x = np.zeros(3, np.float32)
    for f in (lambda a: a + jax.random.uniform(MODULE_KEY, (3,)),
              lambda a: jax.vmap(lambda k: jax.random.normal(k))(
                  jax.random.split(MODULE_KEY, 3)) + a,
              lambda a: jax.lax.cond(a.sum() > 1, lambda: a, lambda: a + jax.random.uniform(
                  jax.random.key(5, impl="rbg"), (3,)))):
        np.testing.assert_array_equal(lj.jit(f)(x), np.asarray(jax.jit(f)(x)))


def test_threefry_partitionable_is_read_when_lowering_as_jax_reads_it():
    # jax_threefry_partitionable changes the numbers random_bits gives; the jaxpr does not
    # record it, so the lowering (and its cache) must read it.
    f = lj.jit(lambda k: jax.random.uniform(k, (3,)))
    key = jax.random.key(0)
    before = jax.config.jax_threefry_partitionable
    try:
        for flag in (False, True, False):
            jax.config.update("jax_threefry_partitionable", flag)
            want = np.asarray(jax.jit(lambda k: jax.random.uniform(k, (3,)))(key))
            np.testing.assert_array_equal(f(key), want)
    finally:
        jax.config.update("jax_threefry_partitionable", before)
    assert f.cache_size == 2


def test_static_arguments_equal_in_value_but_not_in_type_trace_apart():
    f = lj.jit(lambda a, n: a * n, static_argnums=1)
    xi = np.arange(3, dtype=np.int32)
    for n in (2, 2.0, True, 2):
        got, want = f(xi, n), np.asarray(jax.jit(lambda a, n: a * n, static_argnums=1)(xi, n))
        assert got.dtype == want.dtype, n
        np.testing.assert_array_equal(got, want)
    assert f.cache_size == 3


def test_float0_tangents_lower_as_i1_as_jax_lowers_them():
    # float0 (an integer input's tangent; no bits): i1 in the program, false as a value.
    float0 = jax.dtypes.float0
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    cases = [
        (jax.grad(lambda a, i: a * i, argnums=(0, 1), allow_int=True), (np.float32(1.5), 3)),
        (lambda a, i: jax.vjp(lambda p, q: p * q, a, i)[1](a), (x, np.int32(2))),
        (lambda a, t: (a * 2, t), (x, np.zeros((2, 1), float0))),
    ]
    for f, args in cases:
        ours, theirs = lj.jit(f)(*args), jax.jit(f)(*args)
        for o, t in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            t = np.asarray(t)
            assert o.dtype == t.dtype and o.shape == t.shape
            if t.dtype != float0:
                np.testing.assert_array_equal(o, t)
    text = lj.lower(cases[0][0], *cases[0][1]).text
    assert "tensor<i1>" in text and "dense<false> : tensor<i1>" in text


def test_keyword_arguments_are_dynamic_unless_named_static():
    def f(a, n, *, axis=0, scale=1.0):
        return a.sum(axis) * n * scale
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = lj.jit(f, static_argnames="axis")
    theirs = jax.jit(f, static_argnames="axis")
    for args, kwargs in [((y, 2.0), {}), ((y,), {"n": 2.0}), ((y, 2.0), {"axis": 1}),
                         ((y,), {"n": np.float32(3), "axis": 1, "scale": 0.5}),
                         ((y,), {"scale": 0.5, "n": 1.0})]:
        got, want = ours(*args, **kwargs), np.asarray(theirs(*args, **kwargs))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert ours.lower(y, n=2.0, axis=1).text.count("tensor<2x3xf32>") >= 1
    # A negative static_argnums still names a positional argument, keywords given or not.
    neg = lj.jit(lambda a, n, *, s=1.0: a * n * s, static_argnums=-1)
    for kwargs in ({}, {"s": 2.0}):
        got = neg(y, 3, **kwargs)
        want = np.asarray(jax.jit(lambda a, n, *, s=1.0: a * n * s, static_argnums=-1)(
            y, 3, **kwargs))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        ours(y, n=1.0, axis=[1])


def test_the_jit_cache_keys_jaxs_trace_time_configuration():
    # Under numpy_rank_promotion("raise") jax re-traces (and raises); a program traced
    # before under "allow" must not be reused.
    f = lj.jit(lambda a, b: a + b)
    a, b = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    np.testing.assert_array_equal(f(a, b), a + b)
    with jax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="rank_promotion"):
            f(a, b)
    np.testing.assert_array_equal(f(a, b), a + b)


def test_a_call_under_a_jax_transformation_is_jax_jits_as_jax_jit_composes():
    """grad, vmap, jit and eval_shape of a lower.jax.jit function give what they give of
    jax.jit's (jax runs it there; lower.jax.jit(jax.grad(f)) is ours), none compiled here."""
    f, g = lj.jit(jnp.sin), jax.jit(jnp.sin)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    for transform in (jax.vmap, jax.jit, lambda h: jax.grad(lambda a: h(a).sum())):
        np.testing.assert_array_equal(np.asarray(transform(f)(x)), np.asarray(transform(g)(x)))
    assert jax.eval_shape(f, x) == jax.eval_shape(g, x)
    assert f.cache_size == 0
    np.testing.assert_allclose(lj.jit(jax.grad(lambda a: jnp.sin(a).sum()))(x), np.cos(x),
                               rtol=1e-6)


def _tile(x, n=2):
    return jnp.tile(x, n)


def test_static_parameters_are_static_by_position_and_by_name_as_in_jax_jit():
    # jax.jit maps static_argnames to positions and static_argnums to names through the
    # function's signature: a static parameter passed the other way is still static.
    x = np.arange(3, dtype=np.float32)
    by_name, by_number = lj.jit(_tile, static_argnames="n"), lj.jit(_tile, static_argnums=1)
    for f in (by_name, by_number):
        for args, kwargs in [((x, 2), {}), ((x,), {"n": 3}), ((x,), {})]:
            want = np.asarray(jax.jit(_tile, static_argnums=1)(*args, **kwargs))
            np.testing.assert_array_equal(f(*args, **kwargs), want)
    with pytest.raises(ValueError, match=r"static_argnums=\(5,\), but only accepts 2"):
        lj.jit(_tile, static_argnums=5)


def _sum_all(*args):
    return sum(args)


def _scaled(a, n, m=1):
    return a * n + m


def _by_position(a, n, /):
    return a * n


@pytest.mark.parametrize("fn, options", [
    (_tile, dict(static_argnums=5)), (_tile, dict(static_argnums=-3)),
    (_scaled, dict(static_argnames="zz")), (_by_position, dict(static_argnames="n")),
    (_scaled, dict(donate_argnames="zz")), (_scaled, dict(donate_argnums=3)),
    (_scaled, dict(static_argnames="n", donate_argnames="n")),
    (_scaled, dict(static_argnums=1, donate_argnums=1)),
    (_scaled, dict(static_argnums=1, donate_argnames="n")),
])
def test_argument_numbers_and_names_are_checked_against_the_signature_as_jax_jit_checks(
        fn, options):
    with pytest.raises(ValueError) as theirs:
        jax.jit(fn, **options)
    with pytest.raises(ValueError) as ours:
        lj.jit(fn, **options)
    assert str(ours.value).split(".")[0] == str(theirs.value).split(".")[0]


def test_argument_numbers_past_the_arguments_given_name_none_as_in_jax_jit():
    x = np.arange(3, dtype=np.float32)
    for options, args in [(dict(static_argnums=1), (x,)), (dict(static_argnums=(-2,)), (x,)),
                          (dict(static_argnums=1), (x, 2.0)), (dict(donate_argnums=4), (x,))]:
        ours, theirs = lj.jit(_sum_all, **options), jax.jit(_sum_all, **options)
        _same(ours(*args), theirs(*args))
    # a negative number counts from the last argument given: x is static, and unhashable
    with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
        lj.jit(_tile, static_argnums=-1)(x)


def test_donate_argnames_donates_by_name_and_by_position():
    x = np.arange(3, dtype=np.float32)
    f = lj.jit(_scaled, donate_argnames="n")
    for args, kwargs in [((x, x), {}), ((x,), {"n": x})]:
        low = f.lower(*args, **kwargs)
        assert "tf.aliasing_output" in low.text
        assert low.donated.count(True) == 1
        _same(f(*args, **kwargs), jax.jit(_scaled)(*args, **kwargs))
    assert "tf.aliasing_output" not in lj.jit(_scaled).lower(x, n=x).text


def test_a_jitted_method_binds_its_instance_as_jax_jit_does():
    import functools

    class Model:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Model) and other.k == self.k

        @functools.partial(lj.jit, static_argnums=0)
        def apply(self, x):
            return x * self.k

    x = np.arange(3, dtype=np.float32)
    _same(Model(3.0).apply(x), x * np.float32(3))
    _same(Model(2.0).apply(x), x * np.float32(2))
    assert Model.apply.cache_size == 2
    assert Model.__dict__["apply"].__get__(None, Model) is Model.__dict__["apply"]


def test_a_jitted_function_called_by_one_lower_jax_traces_is_a_call_in_its_program():
    helper = lj.jit(lambda v, n: v * n, static_argnums=1)
    outer = lj.jit(lambda v: helper(v, 3) + 1)
    x = np.arange(3, dtype=np.float32)
    _same(outer(x), x * 3 + 1)
    assert "func.call" in outer.lower(x).text  # (jax.jit's nested call, as jax.jit nests)
    assert helper.cache_size == 0  # traced into the outer program, not run


def test_a_shape_dtype_struct_argument_is_refused_before_compiling():
    f = lj.jit(lambda a: a * 2)
    with pytest.raises(TypeError, match="ShapeDtypeStruct.*lower"):
        f(jax.ShapeDtypeStruct((3,), jnp.float32))
    assert f.cache_size == 0
    assert f.lower(jax.ShapeDtypeStruct((3,), jnp.float32)).in_avals[0].shape == (3,)


@pytest.mark.parametrize("scope_first", [True, False])
def test_a_named_scope_and_a_transform_of_one_name_are_located_apart(scope_first):
    """jax's Scope("jvp") and Transform("jvp") are equal tuples that print as ``jvp`` and
    ``jvp()``: each equation's location names its own, in either order (jax.jit's names)."""
    import re

    def scoped(x):
        with jax.named_scope("jvp"):
            return jnp.sin(x)

    def transformed(x):
        return jax.jvp(jnp.sin, (x,), (x,))[0]

    def f(x):
        return scoped(x) + transformed(x) if scope_first else transformed(x) + scoped(x)
    x = np.ones((2,), np.float32)

    def names(text):
        return sorted(set(re.findall(r'"([^"]*/sin)"', text)))
    want = names(jax.jit(f).lower(x).as_text(debug_info=True))
    assert want == ["jit(f)/jvp()/sin", "jit(f)/jvp/sin"]
    assert names(lj.lower(f, x).text) == want


def test_static_arguments_equal_but_not_identical_trace_apart():
    """0.0 and -0.0 (and (0.0,), (-0.0,)) are equal static arguments: each gets its own
    program, whichever came first (jax.jit would serve the second with the first's)."""
    x = np.ones((2,), np.float32)
    for order in ((0.0, -0.0), (-0.0, 0.0)):
        f = lj.jit(lambda x, s: x * s[0] if isinstance(s, tuple) else x * s,
                   static_argnums=1)
        for s in order:
            for arg in (s, (s,)):
                got = f(x, arg)
                assert np.array_equal(np.signbit(got), np.signbit(x * np.float32(s))), (order, arg)


def test_a_namedtuple_static_argument_is_not_the_tuple_of_its_values():
    """Keyed by exact value, a static namedtuple still keeps its class: a rule may read it
    apart from a plain tuple (here the function does)."""
    import collections
    P = collections.namedtuple("P", "a b")

    def f(x, p):
        return x + (10 if isinstance(p, P) else 0) + p[0]
    jitted = lj.jit(f, static_argnums=1)
    x = np.ones(2, np.int32)
    for p in ((1, 2), P(1, 2), (1, 2)):
        np.testing.assert_array_equal(jitted(x, p), np.asarray(jax.jit(f, static_argnums=1)(x, p)))


@pytest.mark.parametrize("static", [None, 1, np.int64(1), (1,), [-1]])
def test_lower_reads_argument_numbers_as_jax_jit_does(static):
    """None (none), an index of any integer type, or a sequence of them, as jax.jit reads
    static_argnums and donate_argnums; the scalar stays static (its value in the program)."""
    x = np.arange(3, dtype=np.float32)

    def f(x, y):
        return x * y
    got = lj.lower(f, x, 2.0, static_argnums=static, donate_argnums=None).as_text()
    want = jax.jit(f, static_argnums=static, donate_argnums=None).trace(x, 2.0).lower()
    assert got.count("%arg") == want.as_text().count("%arg")
    assert ("2.0" in got) == (static is not None)


def test_lowered_args_info_is_jax_jits():
    """``Lowered.args_info``: jax.stages.ArgInfo (abstract value, donated) in the input
    pytree, keyword arguments and weak types included, equal to jax.jit's."""
    args = (np.ones(2, np.float32), {"b": np.ones((3,), np.int32)})

    def f(a, d, c=1.0):
        return a + d["b"].sum() * c
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the int32 donation is not usable)
        ours = lj.jit(f, donate_argnums=1).lower(*args, c=2.0).args_info
        theirs = jax.jit(f, donate_argnums=1).lower(*args, c=2.0).args_info
    assert ours == theirs
    assert jax.tree_util.tree_leaves(ours)[1].donated


def test_trace_is_jax_jits_trace_then_lowers_as_lower():
    """``jit(f).trace(*args)``: the jaxpr, name, argument info (donation, weak types,
    keyword arguments), output info and output avals are jax.jit's ``Traced``'s; its
    ``lower()`` is ``jit(f).lower(*args)``, unused arguments pruned there only (the
    trace keeps every argument, as jax's does), and it runs as jax.jit runs."""
    x = np.arange(4, dtype=np.float32).reshape(2, 2)

    def f(x, y, unused, *, scale):
        return {"s": jnp.sin(x) * y * scale, "t": (x @ x.T).sum()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (the weak scalar's donation)
        ours = lj.jit(f, donate_argnums=1).trace(x, 2.0, x, scale=np.float32(3))
        theirs = jax.jit(f, donate_argnums=1).trace(x, 2.0, x, scale=np.float32(3))
    assert str(ours.jaxpr) == str(theirs.jaxpr)
    assert ours.fun_name == theirs.fun_name == "f"
    assert ours.args_info == theirs.args_info
    assert ours.out_info == theirs.out_info
    assert ours.out_avals == theirs.out_avals
    low = ours.lower()
    assert low.text == lj.jit(f, donate_argnums=1).lower(x, 2.0, x, scale=np.float32(3)).text
    assert low.kept_var_idx == (0, 1, 3) and len(ours.jaxpr.in_avals) == 4
    got = low.compile()(x, np.float32(2), np.float32(3))
    want = jax.jit(f)(x, 2.0, x, scale=np.float32(3))
    np.testing.assert_array_equal(got[0], want["s"])
    np.testing.assert_array_equal(got[1], want["t"])


def test_trace_lowers_for_the_platform_named_and_one_only():
    """``Traced.lower(lowering_platforms=("tpu",))`` lowers the same jaxpr for another
    platform (jax's keyword); several platforms at once are refused, naming them."""
    traced = lj.trace(lambda x: jnp.linalg.cholesky(x), np.eye(2, dtype=np.float32))
    assert traced.lower().platform == "cpu"
    on_tpu = traced.lower(lowering_platforms=("tpu",))
    assert on_tpu.platform == "tpu"
    assert "lapack" in traced.lower().text and "lapack" not in on_tpu.text
    with pytest.raises(ValueError, match=r"one platform at a time.*'cpu', 'tpu'"):
        traced.lower(lowering_platforms=("cpu", "tpu"))
