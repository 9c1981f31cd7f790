"""Mutable arrays through lower.jax.jit as through jax.jit: ``jax.new_ref`` inside the
function (in loops and under grad), ``run_state``, Ref arguments updated in place, and Refs
the function closes over (jax's error checking keeps its state in such Refs)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj

X = np.arange(3, dtype=np.float32)


def _same(fn, *args):
    want, got = jax.jit(fn)(*args), lj.jit(fn)(*args)
    for w, g in zip(jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(got)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    return got


def _bump(a):
    r = jax.new_ref(a)
    r[1] += 5.0
    return r[...] * 2


def _loop(a):
    r = jax.new_ref(jnp.zeros_like(a))

    def body(i, carry):
        r[...] += a * i
        return carry
    jax.lax.fori_loop(0, 4, body, 0)
    return r[...]


@pytest.mark.parametrize("fn", [_bump, _loop, jax.grad(lambda a: _bump(a).sum() ** 2)],
                         ids=["new_ref", "in_fori_loop", "grad"])
def test_refs_made_inside_the_function(fn):
    _same(fn, X)


def test_run_state_is_its_body_discharged():
    from jax._src.state.discharge import run_state

    def body(refs):
        a, b, c = refs
        c[...] = a[...] * 2
        a[...] = a[...] + b[...]
    got = _same(lambda a: run_state(body)((a, a * 2, a)), X)
    np.testing.assert_array_equal(got[0], X * 3)


def test_ref_arguments_are_updated_in_place():
    def step(r, x):
        r[...] += x
        return x.sum()

    ours, theirs = jax.new_ref(jnp.zeros(3)), jax.new_ref(jnp.zeros(3))
    f = lj.jit(step)
    for k in range(1, 3):  # (the second call takes the compiled program from the cache)
        assert float(f(ours, X)) == float(jax.jit(step)(theirs, X)) == 3.0
        np.testing.assert_array_equal(np.asarray(ours[...]), np.asarray(theirs[...]))
        np.testing.assert_array_equal(np.asarray(ours[...]), X * k)


def test_refs_closed_over_are_read_and_written_as_jax_jit_does():
    ours, theirs = jax.new_ref(jnp.zeros(3)), jax.new_ref(jnp.zeros(3))

    def make(r):
        def f(x):
            r[...] += x
            return r[...] * 2, x.sum()
        return f
    f, g = lj.jit(make(ours)), jax.jit(make(theirs))
    for _ in range(2):  # (the second call from the cache reads the Ref's value anew)
        (a, s), (b, t) = f(X), g(X)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert float(s) == float(t)
        np.testing.assert_array_equal(np.asarray(ours[...]), np.asarray(theirs[...]))
    ours[...] = jnp.ones(3)  # (written outside: the next call reads it)
    theirs[...] = jnp.ones(3)
    np.testing.assert_array_equal(np.asarray(f(X)[0]), np.asarray(g(X)[0]))
    low = lj.jit(make(ours)).lower(X)  # (args_info names fn's arguments alone)
    assert len(jax.tree_util.tree_leaves(low.args_info)) == 1


def test_jax_error_checking_through_refs_it_closes_over():
    from jax._src import error_check

    def h(a):
        error_check.set_error_if(a < 0, "negative!")
        return a * 2
    for jit in (jax.jit, lj.jit):
        np.testing.assert_array_equal(np.asarray(jit(h)(X)), X * 2)
        error_check.raise_if_error()  # (nothing recorded)
        jit(h)(-X - 1)
        with pytest.raises(error_check.JaxValueError, match="negative!"):
            error_check.raise_if_error()
    jax.config.update("jax_error_checking_behavior_nan", "raise")
    try:
        for jit in (jax.jit, lj.jit):
            jit(jnp.log)(-X)
            with pytest.raises(error_check.JaxValueError, match="NaN encountered"):
                error_check.raise_if_error()
    finally:
        jax.config.update("jax_error_checking_behavior_nan", "ignore")


def test_a_ref_and_an_array_of_its_shape_are_two_signatures():
    def f(r, x):
        if hasattr(r, "shape") and not isinstance(r, (np.ndarray, jax.Array)):
            r[...] += x
            return x
        return r * 2 + x

    for first_ref in (False, True):
        ours, fn = jax.new_ref(jnp.zeros(3)), lj.jit(f)
        calls = [(ours, X), (X, X)] if first_ref else [(X, X), (ours, X)]
        for args in calls:
            got = fn(*args)
            want = jax.jit(f)(*(jax.new_ref(jnp.zeros(3)) if a is ours else a for a in args))
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.asarray(ours[...]), X)
