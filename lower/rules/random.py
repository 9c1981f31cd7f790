"""Rules for random numbers: threefry2x32 (the Threefry-2x32 hash, 20 rounds, in uint32
arithmetic), iota_2x32_shape, random_bits / random_split / random_fold_in / random_seed on raw
threefry keys, random_wrap / random_unwrap, rng_bit_generator and rng_uniform.

Keys are raw ``uint32[..., 2]`` arrays: this core has no key dtypes, so random_wrap and
random_unwrap are identities and a "key array" is its key data (what ``jax.random.key_data``
returns). The bits follow jax's partitionable Threefry scheme (``jax_threefry_partitionable``,
the default since jax 0.5): element ``i`` (row-major) of ``random_bits(key, 32, shape)`` is
``y0 ^ y1`` where ``(y0, y1) = threefry2x32(key, (i >> 32, i & 0xffffffff))``.
"""

from __future__ import annotations

import math

import numpy as np

import mhlo_ir as hlo

from ..helpers import full_like
from ..mlir import register_lowering

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA


def threefry2x32_hlo(b, k1, k2, x1, x2):
    """Threefry-2x32 with 20 rounds on uint32 tensors of one shape; returns (y1, y2)."""
    t = x1.type

    def c(v):
        return full_like(b, np.uint32(v), t)

    def rotl(v, d):
        return b.or_(b.shift_left(v, c(d)), b.shift_right_logical(v, c(32 - d)))

    ks = (k1, k2, b.xor(b.xor(k1, k2), c(_PARITY)))
    x = [b.add(x1, ks[0]), b.add(x2, ks[1])]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x[0] = b.add(x[0], x[1])
            x[1] = b.xor(x[0], rotl(x[1], r))
        x[0] = b.add(x[0], ks[(i + 1) % 3])
        x[1] = b.add(b.add(x[1], ks[(i + 2) % 3]), c(i + 1))
    return x[0], x[1]


def _threefry2x32(ctx, k1, k2, x1, x2):
    b = ctx.builder
    aval = ctx.avals_out[0]
    shape, rank = aval.shape, len(aval.shape)
    out_t = hlo.tensor(shape, np.uint32)
    if 0 in shape:
        z = full_like(b, np.uint32(0), out_t)
        return [z, z]

    def bcast(v, a):
        if tuple(a.shape) == tuple(shape):
            return v
        if any(d != 1 and d != s for d, s in zip(a.shape, shape[rank - len(a.shape):])):
            raise ValueError(f"threefry2x32: operand of shape {a.shape} does not broadcast to "
                             f"{shape}")
        if 1 in a.shape:  # drop size-1 dims that broadcast
            lead = rank - len(a.shape)
            keep = [i for i, d in enumerate(a.shape) if d != 1 or shape[lead + i] == 1]
            v = b.reshape(v, [a.shape[i] for i in keep])
            dims = [rank - len(a.shape) + i for i in keep]
        else:
            dims = list(range(rank - len(a.shape), rank))
        return b.broadcast_in_dim(v, shape, dims)
    args = [bcast(v, a) for v, a in zip((k1, k2, x1, x2), ctx.avals_in)]
    return list(threefry2x32_hlo(b, *args))


register_lowering("threefry2x32", _threefry2x32)


def iota_2x32_hlo(b, shape):
    """The row-major index of each element of ``shape`` as a uint64, split into its high and
    low uint32 words."""
    if not shape:
        z = b.constant(np.uint32(0))
        return z, z
    u64 = hlo.tensor(shape, np.uint64)
    counts = None
    for dim in range(len(shape)):
        stride = math.prod(shape[dim + 1:])
        term = b.iota(shape, hlo.ui64, dim)
        if stride != 1:
            term = b.multiply(term, full_like(b, np.uint64(stride), u64))
        counts = term if counts is None else b.add(counts, term)
    hi = b.convert(b.shift_right_logical(counts, full_like(b, np.uint64(32), u64)), hlo.ui32)
    lo = b.convert(counts, hlo.ui32)
    return hi, lo


def _iota_2x32_shape(ctx, *, shape):
    return list(iota_2x32_hlo(ctx.builder, tuple(shape)))


register_lowering("iota_2x32_shape", _iota_2x32_shape)


def _key_words(ctx, key, what):
    b = ctx.builder
    kshape = tuple(ctx.avals_in[0].shape)
    if kshape != (2,) or np.dtype(ctx.avals_in[0].dtype) != np.uint32:
        raise NotImplementedError(f"{what}: expected one raw threefry key (uint32[2]), got "
                                  f"{ctx.avals_in[0]}")
    k1 = b.reshape(b.slice(key, [0], [1]), ())
    k2 = b.reshape(b.slice(key, [1], [2]), ())
    return k1, k2


def _hash_counts(b, k1, k2, shape):
    hi, lo = iota_2x32_hlo(b, shape)
    if shape:
        k1 = b.broadcast_in_dim(k1, shape, [])
        k2 = b.broadcast_in_dim(k2, shape, [])
    return threefry2x32_hlo(b, k1, k2, hi, lo)


_UINTS = {8: hlo.ui8, 16: hlo.ui16, 32: hlo.ui32, 64: hlo.ui64}


def _random_bits(ctx, key, *, bit_width, shape):
    if bit_width not in _UINTS:
        raise ValueError(f"random_bits: bit_width must be 8, 16, 32 or 64, got {bit_width}")
    b = ctx.builder
    shape = tuple(shape)
    k1, k2 = _key_words(ctx, key, "random_bits")
    y1, y2 = _hash_counts(b, k1, k2, shape)
    if bit_width == 64:
        t = hlo.tensor(shape, np.uint64)
        hi, lo = b.convert(y1, hlo.ui64), b.convert(y2, hlo.ui64)
        return [b.or_(b.shift_left(hi, full_like(b, np.uint64(32), t)), lo)]
    bits = b.xor(y1, y2)
    return [bits if bit_width == 32 else b.convert(bits, _UINTS[bit_width])]


register_lowering("random_bits", _random_bits)


def _random_split(ctx, key, *, shape):
    b = ctx.builder
    shape = tuple(shape)
    k1, k2 = _key_words(ctx, key, "random_split")
    y1, y2 = _hash_counts(b, k1, k2, shape)
    out = shape + (1,)
    return [b.concatenate([b.reshape(y1, out), b.reshape(y2, out)], len(shape))]


register_lowering("random_split", _random_split)


def _random_fold_in(ctx, key, msg):
    b = ctx.builder
    k1, k2 = _key_words(ctx, key, "random_fold_in")
    m = b.convert(msg, hlo.ui32) if np.dtype(ctx.avals_in[1].dtype) != np.uint32 else msg
    y1, y2 = threefry2x32_hlo(b, k1, k2, b.constant(np.uint32(0)), m)
    return [b.concatenate([b.reshape(y1, (1,)), b.reshape(y2, (1,))], 0)]


register_lowering("random_fold_in", _random_fold_in)


def _impl_name(impl) -> str:
    return str(getattr(impl, "name", impl))


def _random_seed(ctx, seeds, *, impl):
    """threefry's seed: a key (hi, lo) from the seed's 64 bits (hi is 0 for 32-bit seeds)."""
    if impl is not None and _impl_name(impl) not in ("threefry2x32", "fry"):
        raise NotImplementedError(f"random_seed: only the threefry2x32 implementation, got "
                                  f"{_impl_name(impl)}")
    b = ctx.builder
    aval = ctx.avals_in[0]
    dtype = np.dtype(aval.dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"random_seed: the seed must be an integer, got {aval}")
    shape = tuple(aval.shape)
    lo = b.convert(seeds, hlo.ui32)
    if dtype.itemsize == 8:
        hi = b.convert(b.shift_right_logical(seeds, full_like(b, np.asarray(32, dtype),
                                                              seeds.type)), hlo.ui32)
    else:
        hi = full_like(b, np.uint32(0), hlo.tensor(shape, np.uint32))
    out = shape + (1,)
    return [b.concatenate([b.reshape(hi, out), b.reshape(lo, out)], len(shape))]


register_lowering("random_seed", _random_seed)
register_lowering("random_wrap", lambda ctx, base, *, impl: [base])
register_lowering("random_unwrap", lambda ctx, keys: [keys])

_ALGORITHMS = {0: "DEFAULT", 1: "THREE_FRY", 2: "PHILOX"}


def _algorithm(algorithm) -> str:
    name = getattr(algorithm, "name", None)
    if name is None:
        name = _ALGORITHMS.get(algorithm, algorithm) if isinstance(algorithm, int) else algorithm
    name = str(name).upper().replace("RNG_", "")
    if name not in _ALGORITHMS.values():
        raise ValueError(f"rng_bit_generator: unknown algorithm {algorithm!r}")
    return name


def _rng_bit_generator(ctx, key, *, shape, dtype, algorithm, out_sharding=None):
    """As jax: a uint32[4] key is used as uint64[2]; non-unsigned dtypes are generated as
    uint32 and converted."""
    b = ctx.builder
    kaval = ctx.avals_in[0]
    kdtype = np.dtype(kaval.dtype)
    if not ((tuple(kaval.shape) == (4,) and kdtype == np.uint32)
            or (tuple(kaval.shape) == (2,) and kdtype == np.uint64)):
        raise TypeError(f"rng_bit_generator: the key must be uint32[4] or uint64[2], got {kaval}")
    dtype = np.dtype(dtype)
    gen = dtype if dtype in (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32),
                             np.dtype(np.uint64)) else np.dtype(np.uint32)
    if kdtype == np.uint32:
        key = b.bitcast_convert(b.reshape(key, (2, 2)), hlo.ui64)
    out_key, bits = b.rng_bit_generator(key, tuple(shape), hlo.from_numpy(gen),
                                        _algorithm(algorithm))
    if kdtype == np.uint32:
        out_key = b.reshape(b.bitcast_convert(out_key, hlo.ui32), (4,))
    if gen != dtype:
        bits = b.convert(bits, hlo.from_numpy(dtype))
    return [out_key, bits]


register_lowering("rng_bit_generator", _rng_bit_generator)


def _rng_uniform(ctx, lo, hi, *, shape):
    """XLA's stateful generator (``mhlo.rng`` UNIFORM in [lo, hi)); unlike the threefry
    primitives its values are not reproducible across backends."""
    return [ctx.builder.rng(lo, hi, tuple(int(d) for d in shape), "UNIFORM")]


register_lowering("rng_uniform", _rng_uniform)
