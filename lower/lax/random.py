"""Random numbers (jax.random's primitives) on raw threefry keys.

A key is its ``uint32[2]`` data (``jax.random.key_data(key)``): this core has no key dtypes, so
``random_wrap``/``random_unwrap`` keep the raw array. The bits match jax's partitionable
Threefry scheme (``jax_threefry_partitionable``, jax's default since 0.5).
"""

from __future__ import annotations

import numpy as np

from ..core import ShapedArray
from ..tracing import (Tracer, _builder_of, _lift, active_builders, bind, concatenate,
                       primitive, reshape, slice)

__all__ = ["threefry2x32", "threefry_2x32", "iota_2x32_shape", "random_bits", "random_split",
           "random_fold_in", "random_seed", "random_wrap", "random_unwrap", "rng_bit_generator",
           "rng_uniform", "RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"]

RNG_DEFAULT, RNG_THREE_FRY, RNG_PHILOX = 0, 1, 2  # lax.RandomAlgorithm's values

_U32 = np.dtype(np.uint32)


def _u32(b, x):
    x = _lift(b, x) if not isinstance(x, Tracer) else x
    if x.dtype != _U32:
        raise TypeError(f"threefry2x32 takes uint32 operands, got {x.dtype}")
    return x


def threefry2x32(k1, k2, x1, x2):
    """The ``threefry2x32`` primitive: hash the counters (x1, x2) under the key (k1, k2); the
    operands broadcast (numpy style, trailing dimensions aligned). Returns (y1, y2)."""
    b = _builder_of((k1, k2, x1, x2))
    ops = [_u32(b, v) for v in (k1, k2, x1, x2)]
    shape = tuple(np.broadcast_shapes(*(o.shape for o in ops)))
    return bind("threefry2x32", ops, [ShapedArray(shape, _U32)] * 2, multiple_results=True)


def threefry_2x32(keypair, count):
    """jax.prng.threefry_2x32: hash every element of ``count`` (any shape, uint32) with the
    key ``keypair`` (uint32[2]): the flattened counts are split in halves hashed as pairs."""
    k1 = reshape(slice(keypair, (0,), (1,)), ())
    k2 = reshape(slice(keypair, (1,), (2,)), ())
    n = int(np.prod(count.shape, dtype=np.int64))
    flat = reshape(count, (n,))
    odd = n % 2
    if odd:
        flat = concatenate([flat, reshape(_lift(count.builder, np.uint32(0)), (1,))], 0)
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
    return like.builder.emit(primitive("iota_2x32_shape", True), [],
                             [ShapedArray(shape, _U32)] * 2, {"shape": shape})


def _check_key(key, what):
    if key.shape != (2,) or key.dtype != _U32:
        raise TypeError(f"{what} takes one raw threefry key (uint32[2]), got {key.aval}")


def random_bits(key, bit_width: int, shape):
    """Random unsigned integers of ``bit_width`` bits (8, 16, 32 or 64) and ``shape``."""
    _check_key(key, "random_bits")
    shape = tuple(int(d) for d in shape)
    if bit_width not in (8, 16, 32, 64):
        raise ValueError(f"bit_width must be 8, 16, 32 or 64, got {bit_width}")
    return bind("random_bits", [key], [ShapedArray(shape, np.dtype(f"uint{bit_width}"))],
                bit_width=int(bit_width), shape=shape)


def random_split(key, shape=(2,)):
    """New keys of ``shape`` (an array ``shape + (2,)`` of uint32)."""
    _check_key(key, "random_split")
    shape = tuple(int(d) for d in shape)
    return bind("random_split", [key], [ShapedArray(shape + (2,), _U32)], shape=shape)


def random_fold_in(key, data):
    """A new key from ``key`` and an integer scalar ``data`` (as uint32)."""
    _check_key(key, "random_fold_in")
    data = _lift(key.builder, np.uint32(data) if isinstance(data, int) else data)
    return bind("random_fold_in", [key, data], [ShapedArray((2,), _U32)])


def random_seed(seed, impl="threefry2x32"):
    """The threefry key of an integer seed (``jax.random.key_data(jax.random.key(seed))``)."""
    if isinstance(seed, int):
        raise TypeError("random_seed takes a traced integer (convert Python ints first)")
    return bind("random_seed", [seed], [ShapedArray(seed.shape + (2,), _U32)], impl=impl)


def random_wrap(base, impl="threefry2x32"):
    return bind("random_wrap", [base], [base.aval], impl=impl)


def random_unwrap(keys):
    return bind("random_unwrap", [keys], [keys.aval])


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
        bld = _builder_of((a, b))
    else:  # constant bounds: the function being traced
        stack = active_builders()
        if not stack:
            raise TypeError("rng_uniform: call this inside a function given to make_jaxpr")
        bld = stack[-1]
    a, b = _lift(bld, a), _lift(bld, b)
    if a.ndim or b.ndim or a.dtype != b.dtype:
        raise TypeError(f"rng_uniform takes two scalars of one dtype, got {a.aval.str_short()} "
                        f"and {b.aval.str_short()}")
    shape = tuple(int(d) for d in shape)
    return bind("rng_uniform", [a, b], [ShapedArray(shape, a.dtype)], shape=shape)
