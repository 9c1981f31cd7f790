"""jax's typed PRNG keys against jax.jit bit for bit: gather and scatter of key arrays
(indexing, ``.at[].set``) for threefry and rbg keys (key shapes [2] and [4]), and the gamma
sampler (gamma, loggamma) for every key implementation."""

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


# threefry2x32 has its own decomposition (tests/lower/test_special.py); the others go through
# jax's sampler (the same code for each): one of each family, as each compile takes seconds.
@pytest.mark.parametrize("impl", ["threefry4x32", "philox2x32", "rbg"])
def test_gamma_and_loggamma_for_the_other_key_implementations(impl):
    a = np.array([0.3, 4.5], np.float32)

    def f(a):
        k1, k2 = jax.random.split(jax.random.key(1, impl=impl))
        return jax.random.gamma(k1, a), jax.random.loggamma(k2, a[::-1])
    for got, want in zip(lj.jit(f)(a), jax.jit(f)(a)):
        np.testing.assert_array_equal(got, np.asarray(want))


def _data(f):
    return lambda *a: jax.random.key_data(f(*a))


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_comparing_tiling_stacking_and_scanning_key_arrays(impl):
    # eq/ne compare the key words and reduce over them (a scalar key broadcast against an
    # array of them); tile, stack and unstack leave the words whole; scan stacks keys.
    import jax.numpy as jnp
    from jax import lax
    k = jax.random.key(4, impl=impl)
    cases = [
        lambda k: jax.random.split(k, 3) == k,
        lambda k: (k != k, k == k),
        lambda k: jax.random.split(k, 3) != jax.random.split(k, 3)[::-1],
        _data(lambda k: jnp.tile(jax.random.split(k, 2), 2)),
        _data(lambda k: jnp.tile(jax.random.split(k, 2), (3, 1))),
        _data(lambda k: jnp.stack([k, jax.random.split(k)[1]])),
        _data(lambda k: jnp.unstack(jax.random.split(k, 2))[1]),
        _data(lambda k: lax.scan(lambda c, _: (jax.random.split(c)[0], c), k, None,
                                 length=3)[1]),
        _data(lambda k: lax.map(lambda kk: jax.random.split(kk)[1], jax.random.split(k, 3))),
    ]
    for f in cases:
        for got, want in zip(jax.tree_util.tree_leaves(lj.jit(f)(k)),
                             jax.tree_util.tree_leaves(jax.jit(f)(k))):
            want = np.asarray(want)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
