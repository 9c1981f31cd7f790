"""Random primitives lowered, run by jaxlib, checked against a numpy Threefry-2x32 written
from the Threefry paper (Salmon et al., SC'11; Random123's published test vectors) and, where
jax is installed, bit for bit against jax itself: batched keys, both threefry counter layouts,
jax's six PRNG implementations through its typed-key jaxprs, the four hash primitives."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from lower import tracing as tr
from tests.lower.harness import check, run

U32 = np.uint32


# -- numpy reference --------------------------------------------------------------------------

def np_threefry2x32(key, x):
    """Threefry-2x32, 20 rounds: key (k0, k1), counters (x0, x1) of uint32 arrays."""
    with np.errstate(over="ignore"):
        k0, k1 = (np.asarray(k, U32) for k in key)
        x0, x1 = (np.asarray(v, U32).copy() for v in x)
        ks = [k0, k1, k0 ^ k1 ^ U32(0x1BD11BDA)]
        rot = [(13, 15, 26, 6), (17, 29, 16, 24)]

        def rotl(v, d):
            return (v << U32(d)) | (v >> U32(32 - d))
        x0 = x0 + ks[0]
        x1 = x1 + ks[1]
        for i in range(5):
            for r in rot[i % 2]:
                x0 = x0 + x1
                x1 = rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + U32(i + 1)
        return x0, x1


def np_counts(shape):
    i = np.arange(int(np.prod(shape)), dtype=np.uint64).reshape(shape)
    return (i >> np.uint64(32)).astype(U32), (i & np.uint64(0xFFFFFFFF)).astype(U32)


def np_random_bits(key, bit_width, shape):
    hi, lo = np_counts(shape)
    y0, y1 = np_threefry2x32((key[0], key[1]), (hi, lo))
    if bit_width == 64:
        return (y0.astype(np.uint64) << np.uint64(32)) | y1.astype(np.uint64)
    return (y0 ^ y1).astype(f"uint{bit_width}")


# Random123's known-answer vectors for threefry2x32_20 (also in jax's random tests).
VECTORS = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
           ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
           ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]


def test_numpy_reference_matches_published_vectors():
    for key, ctr, want in VECTORS:
        got = np_threefry2x32(tuple(U32(k) for k in key), tuple(U32(c) for c in ctr))
        assert (int(got[0]), int(got[1])) == want


# -- threefry2x32 -------------------------------------------------------------------------------

def test_threefry2x32_published_vectors_and_broadcasting():
    k0 = np.array([v[0][0] for v in VECTORS], U32)
    k1 = np.array([v[0][1] for v in VECTORS], U32)
    x0 = np.array([v[1][0] for v in VECTORS], U32)
    x1 = np.array([v[1][1] for v in VECTORS], U32)
    rng = np.random.default_rng(1)
    key = rng.integers(0, 2**32, 2, dtype=U32)
    ctr = rng.integers(0, 2**32, (2, 3, 4), dtype=U32)

    def f(a, b, c, d, key, ctr):
        y0, y1 = lax.threefry2x32(a, b, c, d)
        # scalar keys broadcast against (1, 3, 4) counters; a (1, 3, 1) counter against (2, 3, 4)
        k0 = tr.reshape(tr.slice(key, (0,), (1,)), ())
        k1 = tr.reshape(tr.slice(key, (1,), (2,)), ())
        z0, z1 = lax.threefry2x32(k0, k1, tr.slice(ctr, (0, 0, 0), (1, 3, 4)),
                                  tr.slice(ctr, (1, 0, 0), (2, 3, 4)))
        w0, w1 = lax.threefry2x32(k0, k1, tr.slice(ctr, (0, 0, 0), (1, 3, 1)), ctr)
        return y0, y1, z0, z1, w0, w1
    y0, y1, z0, z1, w0, w1 = run(f, k0, k1, x0, x1, key, ctr)
    assert [(int(a), int(b)) for a, b in zip(y0, y1)] == [v[2] for v in VECTORS]
    r0, r1 = np_threefry2x32(key, (ctr[0:1], ctr[1:2]))
    np.testing.assert_array_equal(z0, r0)
    np.testing.assert_array_equal(z1, r1)
    s0, s1 = np_threefry2x32(key, (np.broadcast_to(ctr[0:1, :, 0:1], ctr.shape), ctr))
    np.testing.assert_array_equal(w0, s0)
    np.testing.assert_array_equal(w1, s1)


def test_threefry_2x32_helper_odd_length():
    key = np.array([0x13198A2E, 0x03707344], U32)
    count = np.arange(7, dtype=U32)
    (out,) = run(lambda k, c: lax.threefry_2x32(k, c), key, count)
    padded = np.concatenate([count, [0]]).astype(U32)
    y0, y1 = np_threefry2x32(key, (padded[:4], padded[4:]))
    np.testing.assert_array_equal(out, np.concatenate([y0, y1])[:7])


# -- random_bits, split, fold_in, seed -------------------------------------------------------

@pytest.mark.parametrize("bit_width", [8, 16, 32, 64])
def test_random_bits_match_numpy(bit_width):
    key = np.array([0x243F6A88, 0x85A308D3], U32)
    shapes = [(), (5,), (3, 4), (2, 3, 5)]
    outs = run(lambda k: [lax.random_bits(k, bit_width, s) for s in shapes], key)
    for s, o in zip(shapes, outs):
        assert o.dtype == np.dtype(f"uint{bit_width}") and o.shape == s
        np.testing.assert_array_equal(o, np_random_bits(key, bit_width, s))


def test_iota_2x32_shape():
    def f(x):
        return lax.iota_2x32_shape(x, (3, 5, 2))
    hi, lo = run(f, np.zeros(1, np.float32))
    rh, rl = np_counts((3, 5, 2))
    np.testing.assert_array_equal(hi, rh)
    np.testing.assert_array_equal(lo, rl)


def test_split_fold_in_seed_wrap_unwrap():
    key = np.array([7, 0xDEADBEEF], U32)

    def f(k, seed32, seed64):
        return (lax.random_split(k, (3,)), lax.random_split(k, (2, 2)),
                lax.random_fold_in(k, 12345), lax.random_seed(seed32), lax.random_seed(seed64),
                lax.random_unwrap(lax.random_wrap(k)))
    seed32 = np.array(-5, np.int32)
    seed64 = np.array(0x123456789, np.int64)
    split3, split22, folded, k32, k64, same = run(f, key, seed32, seed64)
    y0, y1 = np_threefry2x32(key, np_counts((3,)))
    np.testing.assert_array_equal(split3, np.stack([y0, y1], -1))
    y0, y1 = np_threefry2x32(key, np_counts((2, 2)))
    np.testing.assert_array_equal(split22, np.stack([y0, y1], -1))
    f0, f1 = np_threefry2x32(key, (U32(0), U32(12345)))
    np.testing.assert_array_equal(folded, [f0, f1])
    np.testing.assert_array_equal(k32, [0, np.int32(-5).view(U32)])   # jax.random.PRNGKey(-5)
    np.testing.assert_array_equal(k64, [0x1, 0x23456789])
    np.testing.assert_array_equal(same, key)


# -- rng_bit_generator ---------------------------------------------------------------------------

def test_rng_bit_generator_key_forms_dtypes_and_determinism():
    key64 = np.array([0x0123456789ABCDEF, 42], np.uint64)
    key32 = key64.view(U32)

    def f(k32, k64):
        nk32, a = lax.rng_bit_generator(k32, (4, 8), np.uint32, lax.RNG_THREE_FRY)
        nk64, b = lax.rng_bit_generator(k64, (4, 8), np.uint32, lax.RNG_THREE_FRY)
        _, c = lax.rng_bit_generator(k32, (4, 8), np.int32, lax.RNG_THREE_FRY)
        _, d = lax.rng_bit_generator(nk32, (4, 8), np.uint32, lax.RNG_THREE_FRY)
        _, e = lax.rng_bit_generator(k32, (4, 8), np.uint32, lax.RNG_PHILOX)
        _, g = lax.rng_bit_generator(k64, (16,), np.uint64, lax.RNG_DEFAULT)
        return nk32, a, nk64, b, c, d, e, g
    nk32, a, nk64, b, c, d, e, g = run(f, key32, key64)
    assert a.dtype == np.uint32 and a.shape == (4, 8) and c.dtype == np.int32
    assert g.dtype == np.uint64 and g.shape == (16,)
    # a u32[4] key is the u64[2] key's little-endian words: same bits, same new state
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(nk32, nk64.view(U32))
    # int32 output: the same generator's uint32 bits, converted (wrapping)
    np.testing.assert_array_equal(c, a.view(np.int32))
    assert not np.array_equal(nk64, key64)            # the state advances
    assert not np.array_equal(d, a) and not np.array_equal(e, a)
    assert len(np.unique(a)) > 28                       # 32 draws of 32 bits: no collisions
    # and the run is deterministic
    again = run(f, key32, key64)
    for x, y in zip(again, (nk32, a, nk64, b, c, d, e, g)):
        np.testing.assert_array_equal(x, y)


def test_key_data_checks():
    for bad in (np.zeros((3,), U32), np.zeros((2, 3), U32), np.zeros((2,), np.int32),
                np.zeros((), U32)):
        with pytest.raises(TypeError, match=r"uint32\[\.\.\., 2\]"):
            tr.make_jaxpr(lambda k: lax.random_bits(k, 32, (2,)))(bad)


# -- batched keys ------------------------------------------------------------------------------

def test_batched_keys_match_numpy():
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 2**32, (2, 3, 2), dtype=U32)
    msgs = rng.integers(0, 2**32, (2, 3), dtype=U32)

    def f(k, m):
        return (lax.random_bits(k, 32, (4,)), lax.random_bits(k, 64, ()),
                lax.random_split(k, (2,)), lax.random_fold_in(k, m), lax.random_fold_in(k, 7),
                lax.random_clone(k))
    bits, bits64, split, folded, folded7, same = run(f, keys, msgs)
    assert bits.shape == (2, 3, 4) and bits64.shape == (2, 3) and split.shape == (2, 3, 2, 2)
    for i in np.ndindex(2, 3):
        np.testing.assert_array_equal(bits[i], np_random_bits(keys[i], 32, (4,)))
        np.testing.assert_array_equal(bits64[i], np_random_bits(keys[i], 64, ()))
        np.testing.assert_array_equal(split[i], np.stack(np_threefry2x32(keys[i], np_counts((2,))),
                                                         -1))
        np.testing.assert_array_equal(folded[i], np_threefry2x32(keys[i], (U32(0), msgs[i])))
        np.testing.assert_array_equal(folded7[i], np_threefry2x32(keys[i], (U32(0), U32(7))))
    np.testing.assert_array_equal(same, keys)


# -- against jax -------------------------------------------------------------------------------

def _jax():
    return pytest.importorskip("jax")


# (5,) gives the original layout an odd counter count
BITS = [(8, (5,)), (16, (2, 3)), (32, ()), (64, (5,))]


@pytest.mark.parametrize("partitionable", [True, False])
def test_batched_raw_keys_match_jax(partitionable):
    """Our front end on keys uint32[2, 3, 2] against jax's vmap of the one-key functions."""
    jax = _jax()
    from jax._src.random import prng
    from lower.rules.random import threefry_partitionable
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**32, (2, 3, 2), dtype=U32)
    msgs = rng.integers(0, 2**32, (2, 3), dtype=U32)

    def ours(k, m):
        out = [lax.random_bits(k, w, s) for w, s in BITS]
        return out + [lax.random_split(k, (3,)), lax.random_split(k, (2, 2)),
                      lax.random_fold_in(k, m), lax.random_fold_in(k, tr.slice(m, (0, 0), (1, 3))),
                      lax.random_fold_in(tr.slice(k, (0, 0, 0), (1, 1, 2)), m)]

    def theirs(k, m):
        wrap, data = jax.random.wrap_key_data, jax.random.key_data
        vv = lambda f: jax.vmap(jax.vmap(f))                        # noqa: E731

        def bits(w, s):
            return vv(lambda key: prng.random_bits(wrap(key), bit_width=w, shape=s))(k)
        out = [bits(w, s) for w, s in BITS]
        fold = vv(lambda k, m: data(jax.random.fold_in(wrap(k), m)))
        return out + [vv(lambda k: data(jax.random.split(wrap(k), 3)))(k),
                      vv(lambda k: data(jax.random.split(wrap(k), (2, 2))))(k),
                      fold(k, m), fold(k, jax.numpy.broadcast_to(m[:1], m.shape)),
                      fold(jax.numpy.broadcast_to(k[:1, :1], k.shape), m)]

    closed = tr.make_jaxpr(ours)(keys, msgs)
    with threefry_partitionable(partitionable):
        m = lower_jaxpr_to_module("jit_f", closed).module
    with jax.enable_x64(True), jax.threefry_partitionable(partitionable):
        want = jax.jit(theirs)(keys, msgs)
    with jax.threefry_partitionable(not partitionable):      # the flag does change the bits
        other = jax.random.key_data(jax.random.split(jax.random.wrap_key_data(keys[0, 0]), 3))
    assert not np.array_equal(np.asarray(other), np.asarray(want[-5][0, 0]))
    check(verify.run(m, keys, msgs), want)


IMPLS = [("threefry2x32", True), ("threefry2x32", False), ("rbg", True), ("rbg", False),
         ("unsafe_rbg", True), ("threefry4x32", True), ("philox2x32", True),
         ("philox4x32", True)]


@pytest.mark.parametrize("impl, partitionable", IMPLS)
def test_typed_keys_match_jax(impl, partitionable):
    """jax's own jaxprs over typed keys (key<fry>, key<phx4>...): seed, split, fold_in (both
    operands batched, either one, size-1 broadcasting) and bits (8, 32 and 64 bits; 16 bits
    take the 8-bit path), batched."""
    jax = _jax()
    from jax._src.random import prng
    from lower.rules.random import threefry_partitionable
    seeds = np.array([0, 7, -3], np.int32)
    msgs = np.array([1, 2, 0xFFFFFFFF, 9], U32)

    def f(seeds, msgs):
        data, vmap = jax.random.key_data, jax.vmap
        keys = vmap(lambda s: jax.random.key(s, impl=impl))(seeds)
        one = jax.random.key(11, impl=impl)
        col = jax.random.wrap_key_data(data(keys)[:, None], impl=impl)      # keys [3, 1]
        out = [data(keys), data(one), data(vmap(lambda k: jax.random.split(k, (2, 2)))(keys)),
               data(vmap(jax.random.fold_in)(keys, msgs[:3])),
               data(vmap(lambda k: jax.random.fold_in(k, 5))(keys)),
               data(vmap(jax.random.fold_in, (None, 0))(one, msgs)),
               data(prng.random_fold_in(col, msgs[None, :])),
               jax.random.bits(one, (5,), np.uint8)]
        return out + [vmap(partial(jax.random.bits, shape=(2, 3), dtype=np.dtype(f"uint{w}")))(
            keys) for w in (32, 64)]

    with jax.enable_x64(True), jax.threefry_partitionable(partitionable):
        closed = jax.make_jaxpr(f)(seeds, msgs)
        want = jax.jit(f)(seeds, msgs)
    with threefry_partitionable(partitionable):
        m = lower_jaxpr_to_module("jit_f", closed).module
    check(verify.run(m, seeds, msgs), want)


def test_hash_primitives_match_jax():
    """threefry2x32, threefry4x32, philox2x32 and philox4x32 from jax's jaxprs and from our
    front end, with scalar key words broadcast against counters."""
    jax = _jax()
    from jax._src.random import philox2x32, philox4x32, threefry2x32, threefry4x32
    rng = np.random.default_rng(3)
    k = rng.integers(0, 2**32, 4, dtype=U32)
    x = rng.integers(0, 2**32, (4, 2, 3), dtype=U32)
    prims = {"threefry2x32": (threefry2x32.threefry2x32_p, 2, 2),
             "threefry4x32": (threefry4x32.threefry4x32_p, 4, 4),
             "philox2x32": (philox2x32.philox2x32_p, 1, 2),
             "philox4x32": (philox4x32.philox4x32_p, 2, 4)}

    def theirs(k, x):
        return [o for p, nk, nx in prims.values()
                for o in p.bind(*(k[i] for i in range(nk)), *(x[i] for i in range(nx)))]

    def ours(k, x):
        words = [tr.reshape(tr.slice(k, (i,), (i + 1,)), ()) for i in range(4)]
        rows = [tr.reshape(tr.slice(x, (i, 0, 0), (i + 1, 2, 3)), (2, 3)) for i in range(4)]
        return [o for name, (_, nk, nx) in prims.items()
                for o in getattr(lax, name)(*words[:nk], *rows[:nx])]
    want = jax.jit(theirs)(k, x)
    check(verify.run(lower_jaxpr_to_module("jit_f", jax.make_jaxpr(theirs)(k, x)).module, k, x),
          want)
    check(run(ours, k, x), want)


def test_random_seed_of_every_impl_and_clone_match_jax():
    jax = _jax()
    from lower.rules.random import KEY_IMPLS
    seeds = np.array([0, 1, -5], np.int32)

    def ours(s):
        return [lax.random_seed(s, impl) for impl in KEY_IMPLS] + [
            lax.random_clone(lax.random_seed(s))]

    def theirs(s):
        data = jax.random.key_data
        return [data(jax.vmap(partial(jax.random.key, impl=impl))(s)) for impl in KEY_IMPLS
                ] + [data(jax.random.clone(jax.vmap(jax.random.key)(s)))]
    want = jax.jit(theirs)(seeds)
    check(run(ours, seeds), want)
    check(verify.run(lower_jaxpr_to_module("jit_f", jax.make_jaxpr(theirs)(seeds)).module,
                     seeds), want)


def test_typed_key_arguments_and_results():
    """Keys crossing the function boundary: lower.mlir.aval_to_ir_types maps jax's key avals
    to their physical uint32 arrays (rules.random.physical_aval)."""
    jax = _jax()
    key, keys = jax.random.key(3), jax.random.split(jax.random.key(4), 3)
    msgs = np.arange(3, dtype=U32)

    def f(key, keys, msgs):
        return (jax.random.bits(key, (3,)), jax.random.split(key), jax.random.clone(keys),
                jax.vmap(jax.random.fold_in)(keys, msgs))
    m = lower_jaxpr_to_module("jit_f", jax.make_jaxpr(f)(key, keys, msgs)).module
    assert [str(t) for t in m.functions[0].type.inputs[:2]] == [
        "tensor<2xui32>", "tensor<3x2xui32>"]
    want = [o if o.dtype == np.uint32 else jax.random.key_data(o)
            for o in jax.jit(f)(key, keys, msgs)]
    check(verify.run(m, jax.random.key_data(key), jax.random.key_data(keys), msgs), want)


@pytest.mark.parametrize("impl", ["threefry2x32", "philox2x32", "rbg"])
def test_typed_key_arrays_sliced_reshaped_and_selected(impl):
    """jax's layout ops on typed key arrays (lower.rules.typed_keys): ``key, sub = split(key)``
    is a slice and a squeeze of each half; reshape, transpose, broadcast, concatenate, rev,
    select_n with one predicate per key, dynamic (update) slices at a traced index, a scan
    over keys. They failed to build before (the key dimensions were missing from the params).
    """
    jax = _jax()
    jnp, jr = jax.numpy, jax.random

    def f(s):
        key, sub = jr.split(jr.key(s, impl=impl))
        ks = jr.split(key, (2, 3))
        flat = ks.reshape(6)
        both = jnp.concatenate([flat, jr.split(sub, 2)])
        picked = jnp.where(jnp.arange(8) % 3 == 0, both, jnp.flip(both))
        i = s % 6
        total = jax.lax.scan(lambda c, k: (c + jr.bits(k), None), jnp.uint32(0), flat)[0]
        return [jr.key_data(k) for k in (
            sub, ks[1, 2], ks.T, picked, jnp.broadcast_to(sub, (3,)), jnp.expand_dims(sub, 0),
            jax.lax.dynamic_index_in_dim(flat, i, keepdims=False),
            jax.lax.dynamic_update_index_in_dim(flat, sub, i, 0))] + [
            jr.bits(sub, (2,)), total]
    seed = np.int32(3)
    closed = jax.make_jaxpr(f)(seed)
    assert {"slice", "squeeze"} <= {e.primitive.name for e in closed.jaxpr.eqns}
    check(verify.run(lower_jaxpr_to_module("jit_f", closed).module, seed), jax.jit(f)(seed))
