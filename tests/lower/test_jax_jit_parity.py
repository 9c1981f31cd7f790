"""lower.jax.jit where it behaved apart from jax.jit, each against jax.jit itself: keyword
arguments with in_shardings, ordered effects over several devices, jax_debug_nans and
jax_debug_infs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj


def _outcome(call):
    """(result, None) or (None, (exception type, message))."""
    try:
        return call(), None
    except Exception as e:  # noqa: BLE001 (compared with jax.jit's)
        return None, (type(e), str(e))


SINGLE = "{replicated}"


@pytest.mark.parametrize("options, kwargs", [
    ({}, {"y": 2.0}),
    ({"static_argnames": "y"}, {"y": 2.0}),   # static keywords count too
    ({}, {}),
])
def test_keyword_arguments_with_in_shardings_are_refused_as_jax_jit_refuses_them(
        options, kwargs):
    def f(x, y=1.0):
        return x + y
    sharding = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
    theirs = _outcome(lambda: jax.jit(f, in_shardings=sharding, **options)(1.0, **kwargs))
    ours = _outcome(lambda: lj.jit(f, in_shardings=SINGLE, **options)(1.0, **kwargs))
    assert ours[1] == theirs[1]
    if kwargs:
        assert ours[1] == (ValueError,
                           "pjit does not support kwargs when in_shardings is specified.")
        with pytest.raises(ValueError, match="pjit does not support kwargs"):
            lj.jit(f, in_shardings=(SINGLE,), **options).lower(1.0, **kwargs)
    else:
        assert ours[0] == theirs[0] == 2.0
    # (in_shardings=None is no in_shardings, for both)
    assert lj.jit(f, in_shardings=None)(1.0, y=3.0) == jax.jit(f, in_shardings=None)(1.0, y=3.0)


_ORDERED = textwrap.dedent("""
    import re, jax, numpy as np
    jax.config.update("jax_num_cpu_devices", 4)
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jax.experimental import io_callback
    import lower.jax as lj
    mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
    rows = NamedSharding(mesh, P("x"))
    calls = []
    def host(v):
        calls.append(v)
        return np.asarray(v) + 1
    def printed(x):
        jax.debug.print("s {}", x.sum(), ordered=True)
        return x * 2
    def io(x):
        return x * io_callback(host, jax.ShapeDtypeStruct((), np.float32), x.sum(),
                               ordered=True)
    def both(x):
        jax.debug.print("s {}", x.sum(), ordered=True)
        return io(x)
    def in_shard_map(x):
        def body(b):
            jax.debug.print("s {}", b.sum(), ordered=True)
            return b
        return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)
    def unordered(x):
        jax.debug.print("s {}", x.sum())
        return x + 1
    x = np.arange(8, dtype=np.float32)
    addr = re.compile(r" at 0x[0-9a-f]+")
    for fn, options in ((printed, dict(in_shardings=rows)), (io, dict(in_shardings=rows)),
                        (both, dict(out_shardings=rows)), (in_shard_map, {}),
                        (unordered, dict(in_shardings=rows)), (printed, {})):
        outcomes = []
        for jit, sharding in ((jax.jit, options), (lj.jit, options)):
            calls.clear()
            try:
                outcomes.append((np.asarray(jit(fn, **options)(x)).tolist(), len(calls)))
            except ValueError as e:
                outcomes.append(("ValueError", addr.sub("", str(e))))
        assert outcomes[0] == outcomes[1], (fn.__name__, outcomes)
        if fn in (both, in_shard_map) or (fn is printed and options):
            assert outcomes[0][1].startswith("The following ordered effects are not "
                                             "supported for more than 1 device: [<jax"), outcomes
        else:
            assert outcomes[0][0] != "ValueError", outcomes
    print("ok")
""")


def test_ordered_effects_over_several_devices_are_refused_as_jax_jit_refuses_them():
    """jax.jit refuses an ordered effect over more than one device unless jax declares it
    shardable (io_callback's ordered effect is; an ordered debug print is not)."""
    out = subprocess.run([sys.executable, "-c", _ORDERED], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def _log(x):
    return jnp.log(x)


def _nan_literal(x):
    return x + jnp.nan


def _divide(x):
    return x / 0.0


def _pytree(x):
    return {"a": x, "b": (jnp.sqrt(x), jnp.arange(3))}


def _masked(x):   # a NaN inside, none out: not checked
    return jnp.where(jnp.isnan(jnp.log(x)), 0.0, 1.0)


def _integer(x):
    return x // 2


def _complex(x):
    return jnp.sqrt(x) * jnp.nan


def _static(x, n):
    return jnp.log(x) * n


CASES = [(_log, (-1.0,)), (_log, (np.float32(2.0),)), (_nan_literal, (1.0,)),
         (_divide, (1.0,)), (_divide, (np.ones(2, np.float32),)), (_pytree, (-4.0,)),
         (_masked, (-1.0,)), (_integer, (7,)), (_complex, (1.0 + 0j,)),
         (_log, (jnp.bfloat16(-1),)), (_log, (np.array([1.0, np.nan], np.float32),))]


def _compare(fn, args, capsys, **options):
    # (jax.jit's executables cached from an earlier call, checked by its C++ fast path, name
    # the function "jit"; its first call "jit(fn)", as ours always do)
    jax.clear_caches()
    theirs = _outcome(lambda: jax.jit(fn, **options)(*args))
    printed = capsys.readouterr().out
    ours = _outcome(lambda: lj.jit(fn, **options)(*args))
    assert capsys.readouterr().out == printed
    assert ours[1] == theirs[1], (ours, theirs)
    if theirs[1] is None:
        for a, b in zip(jax.tree_util.tree_leaves(ours[0]), jax.tree_util.tree_leaves(theirs[0])):
            np.testing.assert_array_equal(a, np.asarray(b))
    return theirs


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize("nans, infs", [(True, False), (False, True), (True, True)])
def test_debug_nans_and_infs_raise_as_jax_jit_raises(nans, infs, capsys):
    raised = set()
    try:
        jax.config.update("jax_debug_nans", nans)
        jax.config.update("jax_debug_infs", infs)
        for fn, args in CASES:
            if _compare(fn, args, capsys)[1] is not None:
                raised.add(fn.__name__)
        if _compare(_static, (-1.0, 3), capsys, static_argnums=1)[1] is not None:
            raised.add("_static")
    finally:
        jax.config.update("jax_debug_nans", False)
        jax.config.update("jax_debug_infs", False)
    if nans:
        assert {"_log", "_nan_literal", "_pytree", "_complex", "_static"} <= raised
    if infs:
        assert "_divide" in raised
    assert not raised & {"_masked", "_integer"}


def test_debug_nans_is_read_per_call_context_managers_included(capsys):
    f = lj.jit(_log)
    assert np.isnan(f(-1.0))                       # off: no check
    with jax.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in "
                                                     "log"):
            f(-1.0)
        assert f(2.0) == np.float32(np.log(2.0))
    assert "de-optimized version" in capsys.readouterr().out
    assert np.isnan(f(-1.0)) and f.cache_size == 1  # (the check is not in the program)
    with jax.debug_infs(True):   # an Inf argument: jax's eager run raises taking it in
        _compare(_static, (np.inf, 2), capsys, static_argnums=1)
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered"):
            lj.jit(_static, static_argnums=1)(np.inf, 2)
