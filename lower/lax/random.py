"""Random numbers (jax.random's primitives) on raw threefry keys.

A key is its ``uint32[2]`` data (``jax.random.key_data(key)``), a batch of keys
``uint32[..., 2]`` (batch dimensions first): this core has no key dtypes, so
``random_wrap``/``random_unwrap``/``random_clone`` keep the raw array, and random_bits,
random_split and random_fold_in take threefry2x32 keys. ``random_seed`` makes the key data of
any of jax's implementations (``impl="philox4x32"``...). The bits match jax's partitionable
Threefry scheme (``jax_threefry_partitionable``, jax's default since 0.5) unless lowered
inside ``lower.rules.random.threefry_partitionable(False)``.
"""

from __future__ import annotations

import numpy as np

from ..core import ShapedArray
from ..tracing import (Tracer, builder_of, as_tracer, active_builders, bind, concatenate,
                       primitive, reshape, slice)

__all__ = ["threefry2x32", "threefry4x32", "philox2x32", "philox4x32", "threefry_2x32",
           "iota_2x32_shape", "random_bits", "random_split", "random_fold_in", "random_seed",
           "random_wrap", "random_unwrap", "random_clone", "rng_bit_generator", "rng_uniform",
           "RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"]

RNG_DEFAULT, RNG_THREE_FRY, RNG_PHILOX = 0, 1, 2  # lax.RandomAlgorithm's values

_U32 = np.dtype(np.uint32)


def _u32(b, x, name):
    x = as_tracer(b, x) if not isinstance(x, Tracer) else x
    if x.dtype != _U32:
        raise TypeError(f"{name} takes uint32 operands, got {x.dtype}")
    return x


def _hash(name, args, n_out):
    b = builder_of(args)
    ops = [_u32(b, v, name) for v in args]
    shape = tuple(np.broadcast_shapes(*(o.shape for o in ops)))
    return bind(name, ops, [ShapedArray(shape, _U32)] * n_out, multiple_results=True)


def threefry2x32(k1, k2, x1, x2):
    """The ``threefry2x32`` primitive: hash the counters (x1, x2) under the key (k1, k2); the
    operands broadcast (numpy style, trailing dimensions aligned). Returns (y1, y2)."""
    return _hash("threefry2x32", (k1, k2, x1, x2), 2)


def threefry4x32(k0, k1, k2, k3, x0, x1, x2, x3):
    """The ``threefry4x32`` primitive (20 rounds): four key words, four counter words, all
    broadcasting; returns four words."""
    return _hash("threefry4x32", (k0, k1, k2, k3, x0, x1, x2, x3), 4)


def philox2x32(k0, x0, x1):
    """The ``philox2x32`` primitive (10 rounds): one key word, two counter words."""
    return _hash("philox2x32", (k0, x0, x1), 2)


def philox4x32(k0, k1, x0, x1, x2, x3):
    """The ``philox4x32`` primitive (10 rounds): two key words, four counter words."""
    return _hash("philox4x32", (k0, k1, x0, x1, x2, x3), 4)


def threefry_2x32(keypair, count):
    """jax.prng.threefry_2x32: hash every element of ``count`` (any shape, uint32) with the
    key ``keypair`` (uint32[2]): the flattened counts are split in halves hashed as pairs."""
    k1 = reshape(slice(keypair, (0,), (1,)), ())
    k2 = reshape(slice(keypair, (1,), (2,)), ())
    n = int(np.prod(count.shape, dtype=np.int64))
    flat = reshape(count, (n,))
    odd = n % 2
    if odd:
        flat = concatenate([flat, reshape(as_tracer(count.builder, np.uint32(0)), (1,))], 0)
    half = (n + odd) // 2
    y1, y2 = threefry2x32(k1, k2, slice(flat, (0,), (half,)), slice(flat, (half,), (2 * half,)))
    out = concatenate([y1, y2], 0)
    if odd:
        out = slice(out, (0,), (n,))
    return reshape(out, count.shape)


def iota_2x32_shape(like: Tracer, shape):
    """(hi, lo): the row-major index of each element of ``shape`` as two uint32 words;
    ``like`` is any traced value of the function (it locates the trace)."""
    shape = tuple(int(d) for d in shape)
    return builder_of([like]).emit(primitive("iota_2x32_shape", True), [],
                                   [ShapedArray(shape, _U32)] * 2, {"shape": shape})


def _check_key(key, what):
    if key.dtype != _U32 or not key.ndim or key.shape[-1] != 2:
        raise TypeError(f"{what} takes threefry key data (uint32[..., 2]), got "
                        f"{key.aval.str_short()}")
    return key.shape[:-1]


def random_bits(key, bit_width: int, shape):
    """Random unsigned integers of ``bit_width`` bits (8, 16, 32 or 64): ``batch + shape``
    for keys ``batch + (2,)``."""
    batch = _check_key(key, "random_bits")
    shape = tuple(int(d) for d in shape)
    if bit_width not in (8, 16, 32, 64):
        raise ValueError(f"bit_width must be 8, 16, 32 or 64, got {bit_width}")
    return bind("random_bits", [key], [ShapedArray(batch + shape, np.dtype(f"uint{bit_width}"))],
                bit_width=int(bit_width), shape=shape)


def random_split(key, shape=(2,)):
    """New keys ``batch + shape`` (an array ``batch + shape + (2,)`` of uint32)."""
    batch = _check_key(key, "random_split")
    shape = tuple(int(d) for d in shape)
    return bind("random_split", [key], [ShapedArray(batch + shape + (2,), _U32)], shape=shape)


def random_fold_in(key, data):
    """New keys from ``key`` and integers ``data`` (as uint32); the keys' batch shape and
    ``data``'s shape broadcast (as jax: a scalar, or equal ranks)."""
    batch = _check_key(key, "random_fold_in")
    data = as_tracer(key.builder, np.uint32(data) if isinstance(data, int) else data)
    out = tuple(np.broadcast_shapes(batch, data.shape))
    return bind("random_fold_in", [key, data], [ShapedArray(out + (2,), _U32)])


def random_seed(seed, impl="threefry2x32"):
    """The key data of integer seeds (``jax.random.key_data(jax.random.key(seed, impl=impl))``):
    ``seed.shape + key_shape``, e.g. ``(2,)`` for threefry2x32, ``(4,)`` for rbg."""
    if isinstance(seed, int):
        raise TypeError("random_seed takes a traced integer (convert Python ints first)")
    from ..rules.random import key_impl   # not at import: lower.rules imports lower.lax
    key_shape = key_impl(impl).key_shape
    return bind("random_seed", [seed], [ShapedArray(seed.shape + key_shape, _U32)], impl=impl)


def random_wrap(base, impl="threefry2x32"):
    return bind("random_wrap", [base], [base.aval], impl=impl)


def random_unwrap(keys):
    return bind("random_unwrap", [keys], [keys.aval])


def random_clone(keys):
    """jax.random.clone: the same keys (a fresh value for jax's key-reuse checker)."""
    return bind("random_clone", [keys], [keys.aval])


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RNG_DEFAULT):
    """XLA's RngBitGenerator: (new key, random bits of ``shape`` and ``dtype``); the key is
    uint32[4] (or uint64[2])."""
    shape = tuple(int(d) for d in shape)
    return bind("rng_bit_generator", [key], [key.aval, ShapedArray(shape, dtype)],
                multiple_results=True, shape=shape, dtype=np.dtype(dtype), algorithm=algorithm,
                out_sharding=None)


def rng_uniform(a, b, shape):
    """jax.lax.rng_uniform: XLA's stateful uniform numbers in [a, b) (scalars of one dtype)."""
    if isinstance(a, Tracer) or isinstance(b, Tracer):
        bld = builder_of((a, b))
    else:  # constant bounds: the function being traced
        stack = active_builders()
        if not stack:
            raise TypeError("rng_uniform: call this inside a function given to make_jaxpr")
        bld = stack[-1]
    a, b = as_tracer(bld, a), as_tracer(bld, b)
    if a.ndim or b.ndim or a.dtype != b.dtype:
        raise TypeError(f"rng_uniform takes two scalars of one dtype, got {a.aval.str_short()} "
                        f"and {b.aval.str_short()}")
    shape = tuple(int(d) for d in shape)
    return bind("rng_uniform", [a, b], [ShapedArray(shape, a.dtype)], shape=shape)
