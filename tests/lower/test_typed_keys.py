"""Layout primitives on jax's typed PRNG keys, against jax.jit bit for bit: gather and scatter
of key arrays (indexing, ``.at[].set``), for threefry and rbg keys (key shapes [2] and [4])."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import lower.jax as lj


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_gather_and_scatter_of_key_arrays(impl):
    keys = jax.random.split(jax.random.key(3, impl=impl), 6).reshape(2, 3)
    idx = np.array([2, 0], np.int32)

    def f(k, i):
        picked = k[:, i]                       # gather along the key array's own dims
        moved = k.at[1, i].set(k[0, 1])        # scatter of one key into two places
        return jax.random.key_data(picked), jax.random.key_data(moved), \
            jax.random.bits(picked[0, 0], (3,))
    for got, want in zip(lj.jit(f)(keys, idx), jax.jit(f)(keys, idx)):
        np.testing.assert_array_equal(got, np.asarray(want))


def test_gamma_of_rbg_keys_is_refused_plainly():
    with pytest.raises(NotImplementedError, match="keys of the rbg implementation"):
        lj.jit(lambda a: jax.random.gamma(jax.random.key(1, impl="rbg"), a))(
            np.array([0.5, 2.0], np.float32))
