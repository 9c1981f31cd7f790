"""lower/rules/annotations.py: primitives that annotate a program, lowered as jax.jit lowers
them on CPU (each was "no MHLO lowering rule" before the review of 2026-12-07): results
compared exactly with jax.jit's, and the annotations found in our text."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo

jax = pytest.importorskip("jax")
jnp = jax.numpy
lj = pytest.importorskip("lower.jax")

X = np.arange(6, dtype=np.float32).reshape(3, 2) + 1


def _same(f, *args):
    want = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    got = jax.tree_util.tree_leaves(lj.jit(f)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _main_ops(f, *args):
    text = lj.jit(f).lower(*args).as_text()
    return hlo.parse(text), text


def test_a_debug_check_is_nothing_and_an_unfunctionalized_check_is_refused():
    from jax.experimental import checkify

    def f(x):
        checkify.debug_check(x.sum() > 0, "must be positive")
        return x * 2
    _same(f, X)

    def g(x):
        checkify.check(x.sum() > 0, "must be positive")
        return x * 2
    with pytest.raises(Exception, match="not functionalized"):
        jax.jit(g)(X)
    with pytest.raises(Exception, match="not functionalized"):
        lj.jit(g)(X)


def test_shard_alike_groups_both_operands():
    from jax.experimental.shard_alike import shard_alike

    def f(x):
        return shard_alike(x, x * 2)
    _same(f, X)
    m, _ = _main_ops(f, X)
    groups = [op.attr("mhlo.sharding").value for op in m.lookup("main").entry_block.operations
              if op.spec.name == "custom_call"]
    assert groups == ["{unknown shard_as 0}"] * 2


def test_xla_metadata_on_a_value_and_on_a_call():
    from jax.experimental.scheduling_groups import scheduling_group
    from jax.experimental.xla_metadata import set_xla_metadata

    def value(x):
        return set_xla_metadata(x * 2, foo="bar", on=True) + 1
    _same(value, X)
    m, _ = _main_ops(value, X)
    (mul,) = [op for op in m.lookup("main").entry_block.operations
              if op.spec.name == "multiply"]
    assert {k: v.value for k, v in mul.attr("mhlo.frontend_attributes").items} == \
        {"foo": "bar", "on": "true"}

    def call(x):
        return scheduling_group("g1")(lambda a, b: a * b + 1)(x, x * 2)
    _same(call, X)
    m, _ = _main_ops(call, X)
    (c,) = [op for op in m.lookup("main").entry_block.operations if op.spec.name == "func.call"]
    assert {k: v.value for k, v in c.attr("mhlo.frontend_attributes").items} == \
        {"scheduling_group": "g1"}
