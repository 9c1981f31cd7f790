"""Keys of a PRNG implementation the user defines (jax.extend.random.define_prng_impl): its
JAX functions lowered as jax.jit lowers them, the numbers compared with jax.jit's exactly."""

from __future__ import annotations

import jax
import jax.extend as jex
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj


def _seed(s):
    return jnp.stack([jnp.uint32(s), jnp.uint32(7), jnp.uint32(9)])


def _split(k, shape):
    n = int(np.prod(shape))
    return (k[None] + jnp.arange(n, dtype=jnp.uint32)[:, None] * 3).reshape(*shape, 3)


def _bits(k, bit_width, shape):
    n = int(np.prod(shape))
    b = (jnp.arange(n, dtype=jnp.uint32) * jnp.uint32(2654435761) + k[0] * 97 + k[1] + k[2])
    return b.reshape(shape).astype({8: jnp.uint8, 16: jnp.uint16, 32: jnp.uint32}[bit_width])


IMPL = jex.random.define_prng_impl(
    key_shape=(3,), seed=_seed, split=_split, random_bits=_bits,
    fold_in=lambda k, d: k + d.astype(jnp.uint32), name="toy_for_tests")
KEY = jax.random.key(3, impl=IMPL)


def _same(fn, *args):
    want, got = jax.jit(fn)(*args), lj.jit(fn)(*args)
    for w, g in zip(jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(got)):
        if jnp.issubdtype(w.dtype, jax.dtypes.prng_key):
            w, g = jax.random.key_data(w), jax.random.key_data(g)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("fn", [
    lambda k: jax.random.split(k, 2),
    lambda k: jax.random.uniform(jax.random.fold_in(k, 4), (3,)),
    lambda k: jax.random.key_data(k),
    lambda k: jax.vmap(lambda q: jax.random.normal(q, (2,)))(jax.random.split(k, 3)),
    lambda k: jax.random.randint(k, (4,), 0, 100, dtype=jnp.int8),
    lambda k: jax.random.bits(k, (2, 2), jnp.uint16),
], ids=["split", "fold_in-uniform", "key_data", "vmap-normal", "randint-int8", "bits-u16"])
def test_keys_in_and_out(fn):
    _same(fn, KEY)


def test_a_key_made_inside_from_a_seed():
    _same(lambda s: jax.random.uniform(jax.random.key(s, impl=IMPL), (2,)), np.int32(5))


def test_jaxs_own_implementations_keep_their_rules(monkeypatch):
    """A threefry, philox or rbg key is lowered by our rules, not through its JAX functions
    (which would trace them again, vmapped, for every equation)."""
    import lower.jax_lower_fun as borrowed

    def refuse(*args, **kwargs):
        raise AssertionError("a key of jax's own implementation went through jax's functions")
    monkeypatch.setattr(borrowed, "lower_jax_function", refuse)
    for impl in ("threefry2x32", "philox4x32", "rbg"):
        key = jax.random.key(1, impl=impl)
        want = jax.jit(lambda k: jax.random.bits(jax.random.split(k)[1], (3,)))(key)
        got = lj.jit(lambda k: jax.random.bits(jax.random.split(k)[1], (3,)))(key)
        np.testing.assert_array_equal(got, want)


def test_a_user_implementation_named_as_one_of_jaxs_is_the_users():
    impl = jex.random.define_prng_impl(
        key_shape=(3,), seed=_seed, split=_split, random_bits=_bits,
        fold_in=lambda k, d: k + d.astype(jnp.uint32), name="threefry2x32")
    _same(lambda k: (jax.random.bits(k, (3,)), jax.random.key_data(jax.random.split(k))),
          jax.random.key(1, impl=impl))


def _fry(k):
    return jax.random.wrap_key_data(k, impl="threefry2x32")


# A user's implementation that draws as well as threefry (through it): the gamma samplers
# loop until they accept, which the toy bits above need not let them do.
FRY = jex.random.define_prng_impl(
    key_shape=(2,), seed=lambda s: jax.random.key_data(jax.random.key(s)),
    split=lambda k, shape: jax.random.key_data(jax.random.split(_fry(k), shape)),
    random_bits=lambda k, bw, shape: jax.random.bits(_fry(k), shape, f"uint{bw}"),
    fold_in=lambda k, d: jax.random.key_data(jax.random.fold_in(_fry(k), d)),
    name="threefry_by_hand")


def test_gamma_family_samplers_with_a_users_keys():
    key = jax.random.key(4, impl=FRY)
    _same(lambda k: (jax.random.gamma(k, 2.5, (3,)), jax.random.beta(k, 2.0, 3.0, (2,))),
          key)
