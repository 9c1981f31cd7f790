"""A lowering leaves no reference cycles behind: once its module is dropped, every op it made
is freed by reference counting at once, as a module built by hand is
(tests/mhlo_ir/test_ir_references.py). A cycle in the lowering's own state (a closure that
referenced itself held each jaxpr's environment, and through it the ops) kept a whole
lowering's IR alive until the cyclic collector ran, which then scanned and promoted it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from lower import lower_jaxpr_to_module  # noqa: E402


@jax.custom_jvp
def _sin(x):
    return jnp.sin(x)


_sin.defjvp(lambda p, t: (_sin(p[0]), t[0] * jnp.cos(p[0])))

PROGRAMS = {
    "while": lambda x: jax.lax.while_loop(lambda c: c[0] < 3,
                                          lambda c: (c[0] + 1, c[1] * 2), (0, x))[1],
    "cond": lambda x: jax.lax.cond(x.sum() > 0, lambda y: y + 1, lambda y: y - 1, x),
    "scan": lambda x: jax.lax.scan(lambda c, r: (c + r, c * r), x[0], x)[1],
    "custom_jvp grad": lambda x: jax.grad(lambda y: _sin(y).sum())(x),
    "nested jit, literals": lambda x: jax.jit(lambda y: jnp.tanh(y) @ y)(x) + 1.5,
    "sort, argmax, cumsum": lambda x: (jnp.sort(x, axis=0), jnp.argmax(x, axis=1),
                                       jnp.cumsum(x)),
    "random bits": lambda x: (jax.random.normal(jax.random.key(0), (3,)), x),
    "value_and_grad of a layer": lambda x: jax.value_and_grad(
        lambda w: jnp.tanh(x @ w).sum())(x),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_dropped_lowering_leaves_no_cyclic_garbage(name):
    closed = jax.jit(PROGRAMS[name]).trace(np.ones((4, 4), np.float32)).jaxpr
    lower_jaxpr_to_module("m", closed).module.to_text()  # warm the caches first use fills
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        lowered = lower_jaxpr_to_module("m", closed)
        lowered.module.to_text()
        del lowered
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
