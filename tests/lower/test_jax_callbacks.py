"""JAX's host callbacks (pure_callback, io_callback ordered and unordered, debug.callback,
debug.print) lowered by our rules and run through verify, without jax's runtime: the same
results, the same calls in the same order and the same printed text as ``jax.jit``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import io_callback

import lower.jax as lj
from verify.errors import CallbackError

X = np.array([0.25, -1.5, 2.0], np.float32)


def _both(fn, *args):
    """``fn`` through jax.jit and through lower.jax.jit: (theirs, ours), each with the calls
    its callbacks logged."""
    out = []
    for jit in (jax.jit, lj.jit):
        log: list = []
        res = jit(fn(log))(*args)
        out.append((jax.tree_util.tree_map(np.asarray, res), log))
    return out


def test_pure_callback_results_feed_later_ops():
    def make(log):
        def host(x, n):
            log.append(("host", x.tolist(), int(n)))
            return np.sin(x) * n, (x > 0).astype(np.int32)

        def f(x, n):
            spec = (jax.ShapeDtypeStruct(x.shape, x.dtype),
                    jax.ShapeDtypeStruct(x.shape, jnp.int32))
            s, pos = jax.pure_callback(host, spec, x, n)
            return s * 2 + pos, pos.sum()
        return f
    (theirs, tlog), (ours, olog) = _both(make, X, np.int32(3))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1] == theirs[1] and ours[1].dtype == theirs[1].dtype
    assert olog == tlog


def test_debug_print_writes_what_jax_writes(capsys):
    def f(x):
        jax.debug.print("x = {x}, total {t:.3f}", x=x, t=x.sum())
        jax.debug.print("plain", x[0], x.astype(jnp.int32), skip_format_check=True)
        y = x * 2
        jax.debug.print("{} and {}", y[1], y[2:])
        return y
    jax.jit(f)(X)
    jax.effects_barrier()
    theirs = capsys.readouterr().out
    lj.jit(f)(X)
    ours = capsys.readouterr().out
    assert ours == theirs and "total 0.750" in ours


def test_ordered_io_callbacks_keep_program_order_through_loops_and_calls():
    def make(log):
        def note(tag, returns=True):
            def cb(v):
                log.append((tag, np.asarray(v).tolist()))
                return np.asarray(v) + 1 if returns else None
            return cb

        @jax.jit
        def inner(v):
            return io_callback(note("inner"), jax.ShapeDtypeStruct(v.shape, v.dtype), v,
                               ordered=True)

        def f(x):
            y = io_callback(note("first"), jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                            ordered=True)

            def body(i, c):
                io_callback(note("loop", returns=False), None, i, ordered=True)
                return inner(c)
            z = jax.lax.fori_loop(0, 3, body, y)
            w = jax.lax.cond(z[0] > 0, lambda v: inner(v), lambda v: v * 0, z)
            return io_callback(note("last"), jax.ShapeDtypeStruct(x.shape, x.dtype), w,
                               ordered=True)
        return f
    (theirs, tlog), (ours, olog) = _both(make, X)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert olog == tlog and [t for t, _ in olog] == [
        "first", "loop", "inner", "loop", "inner", "loop", "inner", "inner", "last"]


def test_ordered_debug_prints_in_a_scan(capsys):
    def f(xs):
        def step(c, x):
            jax.debug.print("c={c} x={x}", c=c, x=x, ordered=True)
            return c + x, c * x
        return jax.lax.scan(step, jnp.float32(1), xs)
    want = jax.jit(f)(X)
    jax.effects_barrier()
    theirs = capsys.readouterr().out
    got = lj.jit(f)(X)
    ours = capsys.readouterr().out
    assert ours == theirs and ours.count("\n") == 3
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def test_unordered_io_and_debug_callbacks_run_once_each():
    def make(log):
        def f(x):
            jax.debug.callback(lambda v: log.append(("debug", v.tolist())), x * 2)
            io_callback(lambda v: log.append(("io", v.tolist())), None, x + 1)
            return x
        return f
    (_, tlog), (_, olog) = _both(make, X)
    assert sorted(olog) == sorted(tlog) and len(olog) == 2


def test_vmapped_pure_callback_calls_back_with_the_batch():
    def make(log):
        def host(x):
            log.append(x.shape)
            return np.cos(x)

        def g(x):
            return jax.pure_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                     vmap_method="expand_dims")

        def f(xs):
            return jax.vmap(g)(xs)
        return f
    xs = np.stack([X, X * 2])
    (theirs, tlog), (ours, olog) = _both(make, xs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert olog == tlog == [(2, 3)]


def test_a_raising_callback_is_jax_jits_error_caused_by_a_callback_error_naming_it():
    def exploding(x):
        raise ZeroDivisionError("no luck")

    def f(x):
        return jax.pure_callback(exploding, jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1
    with pytest.raises(jax.errors.JaxRuntimeError):
        jax.block_until_ready(jax.jit(f)(X))
    jitted = lj.jit(f)
    with pytest.raises(jax.errors.JaxRuntimeError, match=r"'exploding' .*raised "
                                                         r"ZeroDivisionError: no luck") as e:
        jitted(X)
    assert isinstance(e.value.__cause__, CallbackError)
    assert isinstance(e.value.__cause__.__cause__, ZeroDivisionError)


def test_a_callback_returning_the_wrong_dtype_is_refused_as_jax_refuses_it():
    def f(x):
        return jax.pure_callback(lambda v: np.asarray(v).astype(np.int32),
                                 jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    with pytest.raises(Exception, match="Incorrect output dtype"):
        jax.block_until_ready(jax.jit(f)(X))
    with pytest.raises(jax.errors.JaxRuntimeError, match="expected dtype float32, got int32") \
            as e:
        lj.jit(f)(X)
    assert isinstance(e.value.__cause__, CallbackError)


def test_float64_results_are_narrowed_with_x64_off_as_jax_does():
    def f(x):
        return jax.pure_callback(lambda v: np.asarray(v, np.float64) * 2.0,
                                 jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    got = lj.jit(f)(X)[()]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.asarray(jax.jit(f)(X)))


def test_the_lowered_text_names_each_callable_by_index():
    def f(x):
        jax.debug.print("{}", x)
        return jax.pure_callback(np.tanh, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    lowered = lj.lower(f, X)
    assert [h.name for h in lowered.module.host_callbacks] == ["debug_print", "tanh"]
    text = lowered.text
    assert text.count('call_target_name = "xla_ffi_python_cpu_callback"') == 2
    assert "index = 0 : ui64" in text and "index = 1 : ui64" in text


def test_a_pure_callback_without_results_is_dead_code_as_in_jax_jit():
    # XLA drops it from jax's program (the callback never runs there); we make no op.
    seen = []
    x = np.zeros(3, np.float32)

    def f(a):
        jax.pure_callback(lambda u: seen.append(u) or (), (), a)
        return a + 1
    np.testing.assert_array_equal(lj.jit(f)(x), np.asarray(jax.jit(f)(x)))
    assert seen == [] and "custom_call" not in lj.lower(f, x).text


def test_callbacks_get_jax_arrays_and_print_them_as_jax_jit_does(capsys):
    """jax hands a callback jax Arrays on its CPU device: their methods work, and a repr
    (``{!r}``, an array inside a tuple) prints as jax.jit's."""
    def make(log):
        def host(v):
            log.append(type(v).__name__)
            return v.at[0].set(7.0)  # (a jax.Array method)

        def f(x, i):
            jax.debug.print("{!r} | {}", i, (x, i))
            y = io_callback(host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, ordered=True)
            jax.debug.callback(lambda v: log.append(repr(v)), y[:2])
            return y
        return f
    (theirs, tlog), (ours, olog) = _both(make, X, np.int32(7))
    jax.effects_barrier()
    printed = capsys.readouterr().out.splitlines()
    np.testing.assert_array_equal(ours, theirs)
    assert olog == tlog and tlog[0] == "ArrayImpl"
    assert printed[0] == printed[1] and printed[0].startswith("Array(7, dtype=int32) | (Array(")


def test_spsolve_is_a_host_callback_into_scipy_as_jaxs():
    """jax.experimental.sparse.linalg.spsolve on CPU (it was "no MHLO lowering rule")."""
    pytest.importorskip("scipy")
    from jax.experimental import sparse
    from jax.experimental.sparse.linalg import spsolve
    a = sparse.CSR.fromdense(np.array([[4., 1, 0], [1, 3, 1], [0, 1, 2]], np.float32))
    b = np.array([1, 2, 5], np.float32)

    def f(b):
        return spsolve(a.data, a.indices, a.indptr, b)
    got, want = np.asarray(lj.jit(f)(b)), np.asarray(jax.jit(f)(b))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(a.todense() @ got, b, rtol=1e-5)


def test_a_nested_jit_of_a_function_named_nothing():
    """jax writes an invalid symbol for it (``@<<INVALID EMPTY SYMBOL>>``) and runs; ours
    named the function "" and refused it."""
    def inner(x):
        return x * 11
    inner.__name__ = ""
    x = np.ones((2,), np.float32)
    np.testing.assert_array_equal(lj.jit(lambda x: jax.jit(inner)(x) + 1)(x), [12, 12])
