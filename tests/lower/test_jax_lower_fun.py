"""Primitives JAX lowers through ``mlir.lower_fun`` (jax.experimental.sparse's), lowered by
ours through the same function (lower.jax_lower_fun): numbers against jax.jit, exactly."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.experimental import sparse

import lower.jax as lj
from lower import lower_jaxpr_to_module
from lower.jax_lower_fun import borrowed_rule

M = np.array([[1, 0, 2, 0], [0, 0, 3, 0], [4, 0, 0, 5]], np.float32)
V = np.arange(4, dtype=np.float32) + 1
W = np.arange(8, dtype=np.float32).reshape(4, 2)


def _same(fn, *args):
    want, got = jax.jit(fn)(*args), lj.jit(fn)(*args)
    assert jax.tree_util.tree_structure(want) == jax.tree_util.tree_structure(got)
    for w, g in zip(jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(got)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("fn", [
    lambda m, v, w: sparse.BCOO.fromdense(m, nse=6) @ v,
    lambda m, v, w: sparse.BCOO.fromdense(m, nse=6) @ w,
    lambda m, v, w: sparse.BCOO.fromdense(m, nse=6).T.todense(),
    lambda m, v, w: (sparse.BCOO.fromdense(m, nse=6) * 2).sum_duplicates(nse=6).todense(),
    lambda m, v, w: sparse.BCSR.fromdense(m, nse=6) @ v,
    lambda m, v, w: sparse.BCSR.fromdense(m, nse=6).todense(),
    lambda m, v, w: sparse.sparsify(lambda a, b: a @ b)(sparse.BCOO.fromdense(m, nse=6), w),
    lambda m, v, w: jax.grad(lambda a: (sparse.BCOO.fromdense(a, nse=6) @ v).sum())(m),
], ids=["bcoo-matvec", "bcoo-matmat", "bcoo-transpose", "sum-duplicates", "bcsr-matvec",
        "bcsr-todense", "sparsify", "grad"])
def test_sparse_programs_match_jax_jit(fn):
    _same(fn, M, V, W)


def test_a_sparse_argument_is_a_pytree_of_its_arrays():
    a = sparse.BCOO.fromdense(M)
    _same(lambda s, v: s @ v, a, V)


def test_the_rule_is_jaxs_function_traced_and_lowered_by_ours():
    # The program holds no custom call or callback: the BCOO product is XLA ops.
    closed = jax.make_jaxpr(lambda m, v: sparse.BCOO.fromdense(m, nse=6) @ v)(M, V)
    assert {e.primitive.name for e in closed.eqns} >= {"bcoo_fromdense", "bcoo_dot_general"}
    text = lower_jaxpr_to_module("f", closed).module.to_text(locations=False)
    assert "custom_call" not in text and "mhlo.dot_general" in text
    # Primitives with a rule of their own, or none in jax of this form, borrow nothing.
    assert borrowed_rule(jax.lax.add_p, "cpu") is None
    assert borrowed_rule("bcoo_todense", "cpu") is None  # (a name alone: no jax rule to read)
