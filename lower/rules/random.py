"""Rules for random numbers: the counter-based hashes (threefry2x32, threefry4x32, philox2x32,
philox4x32), iota_2x32_shape, jax's key primitives (random_seed / random_split /
random_fold_in / random_bits / random_wrap / random_unwrap / random_clone) for its six PRNG
implementations, rng_bit_generator and rng_uniform.

Keys reach the rules in two forms:

- raw ``uint32[..., 2]`` threefry2x32 key data (batch dimensions first), what lower.core's
  jaxprs carry: that core has no key dtypes, so random_wrap / random_unwrap are identities and
  a "key array" is its key data (``jax.random.key_data``);
- jax's typed key avals (``key<fry>[3]``, ``key<phx4>[]``...) in jaxprs traced by jax, whose
  dtype names the implementation (``aval.dtype._impl``); the IR value is the same uint32
  array, with the implementation's key shape appended (``physical_aval``).

Batched keys behave as jax's ``vmap`` of the one-key implementation: ``random_bits`` of keys
``[*B]`` is ``[*B, *shape]``, ``random_split`` gives keys ``[*B, *shape]``, ``random_fold_in``
broadcasts keys against messages (rbg's generator, under vmap, runs once on the first key).
Threefry's counter layout follows ``jax_threefry_partitionable`` (jax's default since 0.5,
and here); the original layout is lowered inside ``with threefry_partitionable(False):``.

Typed keys cross function boundaries as their key data (``lower.mlir.aval_to_ir_types`` maps
avals through ``physical_aval``), and lower.rules.typed_keys lets the layout rules (slice,
reshape, broadcast_in_dim, select_n...) carry the trailing key dimensions.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from typing import NamedTuple

import numpy as np

import mhlo_ir as hlo

from .. import core
from ..semantics import full_like
from ..mlir import register_lowering

_U32 = np.dtype(np.uint32)
_UINTS = {8: hlo.ui8, 16: hlo.ui16, 32: hlo.ui32, 64: hlo.ui64}

# -- jax_threefry_partitionable ---------------------------------------------------------------

# NOTE: jax reads its flag when a rule is lowered (the jaxpr does not record it), so this is
# a lowering-time setting too; a context variable keeps it per thread.
_PARTITIONABLE = contextvars.ContextVar("threefry_partitionable", default=True)


@contextlib.contextmanager
def threefry_partitionable(enabled: bool = True):
    """Lower threefry's random_split and random_bits (and rbg's split) with jax's partitionable
    counter layout (``jax_threefry_partitionable=True``, the default) or its original one."""
    token = _PARTITIONABLE.set(bool(enabled))
    try:
        yield
    finally:
        _PARTITIONABLE.reset(token)


# -- the hashes -------------------------------------------------------------------------------

def _const(b, v, like):
    return full_like(b, np.uint32(v), like.type)


def _rotl(b, v, d):
    return b.or_(b.shift_left(v, _const(b, d, v)), b.shift_right_logical(v, _const(b, 32 - d, v)))


_ROT_2X32 = ((13, 15, 26, 6), (17, 29, 16, 24))
_ROT_4X32 = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20))
_PARITY = 0x1BD11BDA


def threefry2x32_hlo(b, k1, k2, x1, x2):
    """Threefry-2x32 with 20 rounds on uint32 tensors of one shape; returns (y1, y2)."""
    ks = (k1, k2, b.xor(b.xor(k1, k2), _const(b, _PARITY, k1)))
    x = [b.add(x1, ks[0]), b.add(x2, ks[1])]
    for i in range(5):
        for r in _ROT_2X32[i % 2]:
            x[0] = b.add(x[0], x[1])
            x[1] = b.xor(x[0], _rotl(b, x[1], r))
        x[0] = b.add(x[0], ks[(i + 1) % 3])
        x[1] = b.add(b.add(x[1], ks[(i + 2) % 3]), _const(b, i + 1, x[1]))
    return x[0], x[1]


def threefry4x32_hlo(b, k0, k1, k2, k3, x0, x1, x2, x3):
    """Threefry-4x32 with 20 rounds (Random123's R_32x4 rotations, as jax's threefry4x32)."""
    ks = (k0, k1, k2, k3, b.xor(b.xor(b.xor(b.xor(k0, k1), k2), k3), _const(b, _PARITY, k0)))
    x = [b.add(v, k) for v, k in zip((x0, x1, x2, x3), ks)]
    for rnd in range(20):
        r0, r1 = _ROT_4X32[rnd % 8]
        a, c = (1, 3) if rnd % 2 == 0 else (3, 1)   # odd rounds mix (0, 3) and (2, 1)
        x[0] = b.add(x[0], x[a])
        x[a] = b.xor(x[0], _rotl(b, x[a], r0))
        x[2] = b.add(x[2], x[c])
        x[c] = b.xor(x[2], _rotl(b, x[c], r1))
        if rnd % 4 == 3:
            j = rnd // 4
            x = [b.add(v, ks[(i + 1 + j) % 5]) for i, v in enumerate(x)]
            x[3] = b.add(x[3], _const(b, j + 1, x[3]))
    return tuple(x)


def _mulhilo(b, m, x):
    """(low, high) words of the 64-bit product of the constant ``m`` and ``x``."""
    u64 = hlo.tensor(x.type.shape, np.uint64)
    wide = b.multiply(b.convert(x, hlo.ui64), full_like(b, np.uint64(m), u64))
    hi = b.convert(b.shift_right_logical(wide, full_like(b, np.uint64(32), u64)), hlo.ui32)
    return b.multiply(x, _const(b, m, x)), hi


_PHILOX_M = (0xD2511F53, 0xCD9E8D57)   # 4x32's multipliers; 2x32 has 0xD256D193
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)   # Weyl key bumps


def philox2x32_hlo(b, k0, x0, x1):
    """Philox-2x32 with 10 rounds, a one-word key (as jax's philox2x32)."""
    for rnd in range(10):
        if rnd:
            k0 = b.add(k0, _const(b, _PHILOX_W[0], k0))
        lo, hi = _mulhilo(b, 0xD256D193, x0)
        x0, x1 = b.xor(b.xor(hi, x1), k0), lo
    return x0, x1


def philox4x32_hlo(b, k0, k1, x0, x1, x2, x3):
    """Philox-4x32 with 10 rounds, a two-word key (as jax's philox4x32)."""
    for rnd in range(10):
        if rnd:
            k0 = b.add(k0, _const(b, _PHILOX_W[0], k0))
            k1 = b.add(k1, _const(b, _PHILOX_W[1], k1))
        lo0, hi0 = _mulhilo(b, _PHILOX_M[0], x0)
        lo1, hi1 = _mulhilo(b, _PHILOX_M[1], x2)
        x0, x1, x2, x3 = b.xor(b.xor(hi1, x1), k0), lo1, b.xor(b.xor(hi0, x3), k1), lo0
    return x0, x1, x2, x3


def _broadcast_to(b, v, vshape, shape, what):
    """``v`` (of ``vshape``) broadcast numpy-style (trailing dimensions aligned) to ``shape``."""
    vshape, shape = tuple(vshape), tuple(shape)
    if vshape == shape:
        return v
    lead = len(shape) - len(vshape)
    if lead < 0 or any(d not in (1, s) for d, s in zip(vshape, shape[lead:])):
        raise ValueError(f"{what}: operand of shape {vshape} does not broadcast to {shape}")
    return b.broadcast_in_dim(v, shape, list(range(lead, len(shape))))


def _hash_rule(name, hash_hlo):
    def rule(ctx, *args):
        b = ctx.builder
        shape = tuple(ctx.avals_out[0].shape)
        if 0 in shape:
            return [full_like(b, np.uint32(0), hlo.tensor(shape, _U32))] * len(ctx.avals_out)
        return list(hash_hlo(b, *(_broadcast_to(b, v, a.shape, shape, name)
                                  for v, a in zip(args, ctx.avals_in))))
    return rule


for _name, _fn in (("threefry2x32", threefry2x32_hlo), ("threefry4x32", threefry4x32_hlo),
                   ("philox2x32", philox2x32_hlo), ("philox4x32", philox4x32_hlo)):
    register_lowering(_name, _hash_rule(_name, _fn))


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


register_lowering("iota_2x32_shape",
                  lambda ctx, *, shape: list(iota_2x32_hlo(ctx.builder, tuple(shape))))


# -- keys ---------------------------------------------------------------------------------------

class KeyImpl(NamedTuple):
    name: str
    tag: str
    key_shape: tuple


KEY_IMPLS = {i.name: i for i in (
    KeyImpl("threefry2x32", "fry", (2,)), KeyImpl("threefry4x32", "fry4", (4,)),
    KeyImpl("philox2x32", "phx2", (1,)), KeyImpl("philox4x32", "phx4", (2,)),
    KeyImpl("rbg", "rbg", (4,)), KeyImpl("unsafe_rbg", "urbg", (4,)))}
_BY_TAG = {i.tag: i for i in KEY_IMPLS.values()}


def key_impl(impl) -> KeyImpl:
    """The implementation named by a jax ``PRNGImpl``, a name (``"philox4x32"``) or a tag
    (``"phx4"``); None means threefry2x32, jax's default."""
    if impl is None:
        return KEY_IMPLS["threefry2x32"]
    name = str(getattr(impl, "name", impl))
    found = KEY_IMPLS.get(name) or _BY_TAG.get(name) or _BY_TAG.get(str(impl))
    if found is None:
        raise NotImplementedError(f"unknown PRNG implementation {impl!r}; known: "
                                  f"{', '.join(KEY_IMPLS)}")
    return found


def typed_key_impl(aval):
    """The jax ``PRNGImpl`` of a typed key aval (``key<fry>[3]``); None for any other aval."""
    impl = getattr(getattr(aval, "dtype", None), "_impl", None)
    return None if impl is None or not hasattr(impl, "key_shape") else impl


def physical_aval(aval):
    """The uint32 array behind a jax key aval (``key<fry>[3]`` -> ``uint32[3, 2]``); any other
    aval is returned as it is. ``lower.mlir.aval_to_ir_types`` maps avals through this."""
    impl = typed_key_impl(aval)
    if impl is None:
        return aval
    return core.ShapedArray(tuple(aval.shape) + tuple(impl.key_shape), _U32)


def _key_operand(aval, what):
    """(implementation, batch shape) of a key operand: a typed key aval, or raw threefry key
    data ``uint32[..., 2]``."""
    impl = typed_key_impl(aval)
    if impl is not None:
        return key_impl(impl), tuple(aval.shape)
    if np.dtype(aval.dtype) != _U32 or not aval.shape or aval.shape[-1] != 2:
        raise TypeError(f"{what}: expected threefry key data uint32[..., 2] or a typed key, "
                        f"got {getattr(aval, 'str_short', lambda: aval)()}")
    return KEY_IMPLS["threefry2x32"], tuple(aval.shape[:-1])


def _words(b, keys, batch, n):
    """The ``n`` key words of the keys ``batch + (n,)``, each of shape ``batch``."""
    if n == 1:
        return [b.reshape(keys, batch)]
    r = len(batch)
    return [b.reshape(b.slice(keys, [0] * r + [i], list(batch) + [i + 1]), batch)
            for i in range(n)]


def _pack(b, words, shape):
    """Key words of ``shape`` stacked into keys ``shape + (n,)``."""
    # NOTE: stacked as jax's jnp.stack does it, through ``shape + (n, 1)`` and a reshape.
    # XLA folds a slice of a plain concatenate back to the operand and then fuses the key's
    # hashing (a seed's, a split's) into every element and output word of the next hash:
    # threefry4x32's split of a seeded key then compiles in minutes instead of a second.
    if len(words) == 1:
        return b.reshape(words[0], tuple(shape) + (1,))
    parts = [b.reshape(w, tuple(shape) + (1, 1)) for w in words]
    return b.reshape(b.concatenate(parts, len(shape)), tuple(shape) + (len(parts),))


def _zeros(b, shape, dtype=_U32):
    return full_like(b, np.zeros((), dtype), hlo.tensor(tuple(shape), dtype))


def as_tracer(b, w, batch, shape):
    """A key word of ``batch`` broadcast over ``batch + shape``."""
    return w if not shape else b.broadcast_in_dim(w, tuple(batch) + tuple(shape),
                                                  list(range(len(batch))))


def _counts(b, batch, shape):
    """(hi, lo) counters of ``shape`` broadcast over ``batch + shape``."""
    hi, lo = iota_2x32_hlo(b, tuple(shape))
    out, dims = tuple(batch) + tuple(shape), list(range(len(batch), len(batch) + len(shape)))
    if not batch:
        return hi, lo
    return b.broadcast_in_dim(hi, out, dims), b.broadcast_in_dim(lo, out, dims)


def _to_bits(b, bit_width, hi, lo, mixed):
    """jax's random bits from hash words: ``hi << 32 | lo`` for 64 bits, else ``mixed`` (the
    xor of words) truncated to the width."""
    if bit_width == 64:
        t = hlo.tensor(hi.type.shape, np.uint64)
        return b.or_(b.shift_left(b.convert(hi, hlo.ui64), full_like(b, np.uint64(32), t)),
                     b.convert(lo, hlo.ui64))
    return mixed if bit_width == 32 else b.convert(mixed, _UINTS[bit_width])


def _xor(b, *ws):
    out = ws[0]
    for w in ws[1:]:
        out = b.xor(out, w)
    return out


def _seed_words(b, seeds, dtype):
    """threefry's seed words (hi, lo) of integer seeds: hi is 0 below 64 bits."""
    lo = b.convert(seeds, hlo.ui32)
    if dtype.itemsize == 8:
        shift = full_like(b, np.asarray(32, dtype), seeds.type)
        hi = b.convert(b.shift_right_logical(seeds, shift), hlo.ui32)
    else:
        hi = _zeros(b, seeds.type.shape)
    return hi, lo


# threefry2x32's original (not partitionable) layout hashes ``iota(n)`` split in halves.

def _threefry_iota(b, k1, k2, batch, n):
    """jax's ``threefry_2x32(key, iota(n))`` for each key of ``batch``: ``batch + (n,)``."""
    if n >= 2**32:
        raise NotImplementedError("threefry (not partitionable): more than 2**32 - 1 counters")
    half = (n + 1) // 2
    x0 = b.iota((half,), hlo.ui32, 0)
    x1 = b.add(x0, _const(b, half, x0))
    if n % 2:   # an odd count is padded with one zero counter, hashed with the last
        x1 = b.concatenate([b.slice(x1, [0], [half - 1]), b.constant(np.zeros(1, _U32))], 0)
    out, r = tuple(batch) + (half,), len(batch)
    y0, y1 = threefry2x32_hlo(b, *(b.broadcast_in_dim(k, out, list(range(r))) for k in (k1, k2)),
                              *(b.broadcast_in_dim(x, out, [r]) for x in (x0, x1)))
    y = b.concatenate([y0, y1], r)
    return b.slice(y, [0] * (r + 1), list(batch) + [n]) if n % 2 else y


def _threefry_split(b, k1, k2, batch, shape):
    if _PARTITIONABLE.get():
        hi, lo = _counts(b, batch, shape)
        return _pack(b, threefry2x32_hlo(b, as_tracer(b, k1, batch, shape),
                                         as_tracer(b, k2, batch, shape), hi, lo),
                     tuple(batch) + tuple(shape))
    flat = _threefry_iota(b, k1, k2, batch, 2 * math.prod(shape))
    return b.reshape(flat, tuple(batch) + tuple(shape) + (2,))


def _threefry_bits_original(b, k1, k2, batch, bit_width, shape):
    size, r = math.prod(shape), len(batch)
    n = -(-bit_width * size // 32)
    bits = _threefry_iota(b, k1, k2, batch, n)
    out = tuple(batch) + tuple(shape)
    if bit_width == 32:
        return b.reshape(bits, out)
    if bit_width == 64:   # the first half are the high words
        hi = b.slice(bits, [0] * (r + 1), list(batch) + [size])
        lo = b.slice(bits, [0] * r + [size], list(batch) + [n])
        return b.reshape(_to_bits(b, 64, hi, lo, None), out)
    # 8 and 16 bits: each word's little-endian pieces, in order
    per = 32 // bit_width
    wide = tuple(batch) + (n, per)
    pieces = b.shift_right_logical(
        b.broadcast_in_dim(bits, wide, list(range(r + 1))),
        b.multiply(b.iota(wide, hlo.ui32, r + 1), full_like(b, np.uint32(bit_width),
                                                             hlo.tensor(wide, _U32))))
    pieces = b.convert(b.reshape(pieces, tuple(batch) + (n * per,)), _UINTS[bit_width])
    return b.reshape(b.slice(pieces, [0] * (r + 1), list(batch) + [size]), out)


def _fry_seed(b, hi, lo):
    return [hi, lo]


def _fry_split(b, w, batch, shape):
    return _threefry_split(b, w[0], w[1], batch, shape)


def _fry_fold_in(b, w, m):
    return list(threefry2x32_hlo(b, w[0], w[1], _zeros(b, m.type.shape), m))


def _fry_bits(b, w, batch, bit_width, shape):
    if not _PARTITIONABLE.get():
        return _threefry_bits_original(b, w[0], w[1], batch, bit_width, shape)
    hi, lo = _counts(b, batch, shape)
    y1, y2 = threefry2x32_hlo(b, *(as_tracer(b, k, batch, shape) for k in w), hi, lo)
    return _to_bits(b, bit_width, y1, y2, b.xor(y1, y2))


def _fry4_seed(b, hi, lo):
    z = _zeros(b, hi.type.shape)
    return list(threefry4x32_hlo(b, hi, lo, z, z, z, z, z, z))


def _fry4_split(b, w, batch, shape):
    hi, lo = _counts(b, batch, shape)
    z = _zeros(b, hi.type.shape)
    out = threefry4x32_hlo(b, *(as_tracer(b, k, batch, shape) for k in w), z, z, hi, lo)
    return _pack(b, out, tuple(batch) + tuple(shape))


def _fry4_fold_in(b, w, m):
    z = _zeros(b, m.type.shape)
    return list(threefry4x32_hlo(b, *w, z, z, z, m))


def _fry4_bits(b, w, batch, bit_width, shape):
    hi, lo = _counts(b, batch, shape)
    z = _zeros(b, hi.type.shape)
    y = threefry4x32_hlo(b, *(as_tracer(b, k, batch, shape) for k in w), hi, lo, z, z)
    return _to_bits(b, bit_width, b.xor(y[0], y[2]), b.xor(y[1], y[3]), _xor(b, *y))


def _phx2_seed(b, hi, lo):
    return [philox2x32_hlo(b, _zeros(b, hi.type.shape), hi, lo)[0]]


def _phx2_split(b, w, batch, shape):
    hi, lo = _counts(b, batch, shape)
    return _pack(b, [philox2x32_hlo(b, as_tracer(b, w[0], batch, shape), hi, lo)[0]],
                 tuple(batch) + tuple(shape))


def _phx2_fold_in(b, w, m):
    return [philox2x32_hlo(b, w[0], _zeros(b, m.type.shape), m)[0]]


def _phx2_bits(b, w, batch, bit_width, shape):
    hi, lo = _counts(b, batch, shape)
    y0, y1 = philox2x32_hlo(b, as_tracer(b, w[0], batch, shape), hi, lo)
    return _to_bits(b, bit_width, y0, y1, b.xor(y0, y1))


def _phx4_seed(b, hi, lo):
    z = _zeros(b, hi.type.shape)
    return list(philox4x32_hlo(b, z, z, hi, lo, z, z)[:2])


def _phx4_split(b, w, batch, shape):
    hi, lo = _counts(b, batch, shape)
    z = _zeros(b, hi.type.shape)
    y = philox4x32_hlo(b, *(as_tracer(b, k, batch, shape) for k in w), z, z, hi, lo)
    return _pack(b, y[:2], tuple(batch) + tuple(shape))


def _phx4_fold_in(b, w, m):
    z = _zeros(b, m.type.shape)
    return list(philox4x32_hlo(b, *w, z, z, z, m)[:2])


def _phx4_bits(b, w, batch, bit_width, shape):
    hi, lo = _counts(b, batch, shape)
    z = _zeros(b, hi.type.shape)
    y = philox4x32_hlo(b, *(as_tracer(b, k, batch, shape) for k in w), hi, lo, z, z)
    return _to_bits(b, bit_width, y[0], y[1], _xor(b, *y))


# rbg and unsafe_rbg: XLA's RngBitGenerator, whose bits are the backend's. Under jax's vmap
# the generator runs once, on the batch's first key, for the whole batch.

def rng_bits_hlo(b, key, shape, dtype, algorithm="DEFAULT"):
    """(new key, bits) of RngBitGenerator, as jax: a uint32[4] key is used as uint64[2]; types
    other than unsigned integers are generated as uint32 and converted."""
    dtype = np.dtype(dtype)
    gen = dtype if dtype.kind == "u" else _U32
    u32_key = key.type.dtype == _U32
    if u32_key:
        key = b.bitcast_convert(b.reshape(key, (2, 2)), hlo.ui64)
    out_key, bits = b.rng_bit_generator(key, tuple(shape), hlo.from_numpy(gen), algorithm)
    if u32_key:
        out_key = b.reshape(b.bitcast_convert(out_key, hlo.ui32), (4,))
    if gen != dtype:
        bits = b.convert(bits, hlo.from_numpy(dtype))
    return out_key, bits


def _first(b, v):
    """The first element of ``v`` as a scalar."""
    r = len(v.type.shape)
    return b.reshape(b.slice(v, [0] * r, [1] * r), ()) if r else v


def _first_key(b, w):
    """The first key of a batch of words, as one uint32[4] key."""
    return _pack(b, [_first(b, v) for v in w], ())


def _rbg_seed(b, hi, lo):
    return [hi, lo, hi, lo]


def _rbg_split(b, w, batch, shape):
    halves = [_threefry_split(b, w[i], w[i + 1], batch, shape) for i in (0, 2)]
    return b.concatenate(halves, len(batch) + len(shape))


def _rbg_fold_in(b, w, m):
    return _fry_fold_in(b, w[:2], m) + _fry_fold_in(b, w[2:], m)


def _rbg_bits(b, w, batch, bit_width, shape):
    return rng_bits_hlo(b, _first_key(b, w), tuple(batch) + tuple(shape),
                        np.dtype(f"uint{bit_width}"))[1]


def _urbg_split(b, w, batch, shape):
    """Every tenth row of ``10 * n`` generated uint32[4] rows."""
    n, r = math.prod(shape), len(batch)
    _, rows = rng_bits_hlo(b, _first_key(b, w), tuple(batch) + (10 * n, 4), _U32)
    rows = b.slice(rows, [0] * (r + 2), list(batch) + [10 * n, 4], [1] * r + [10, 1])
    return b.reshape(rows, tuple(batch) + tuple(shape) + (4,))


class _Impl(NamedTuple):
    seed: object      # (b, hi, lo) -> words
    split: object     # (b, words of batch, batch, shape) -> keys batch + shape + key_shape
    fold_in: object   # (b, words, uint32 messages of one shape) -> words
    bits: object      # (b, words of batch, batch, bit_width, shape) -> bits batch + shape


_RULES = {"threefry2x32": _Impl(_fry_seed, _fry_split, _fry_fold_in, _fry_bits),
          "threefry4x32": _Impl(_fry4_seed, _fry4_split, _fry4_fold_in, _fry4_bits),
          "philox2x32": _Impl(_phx2_seed, _phx2_split, _phx2_fold_in, _phx2_bits),
          "philox4x32": _Impl(_phx4_seed, _phx4_split, _phx4_fold_in, _phx4_bits),
          "rbg": _Impl(_rbg_seed, _rbg_split, _rbg_fold_in, _rbg_bits),
          "unsafe_rbg": _Impl(_rbg_seed, _urbg_split, None, _rbg_bits)}  # _urbg_fold_in


def _random_seed(ctx, seeds, *, impl):
    impl = key_impl(impl)
    aval = ctx.avals_in[0]
    dtype = np.dtype(aval.dtype)
    if dtype.kind not in "iu":
        raise TypeError(f"random_seed: the seed must be an integer, got {aval}")
    b, shape = ctx.builder, tuple(aval.shape)
    if 0 in shape:
        return [_zeros(b, shape + impl.key_shape)]
    return [_pack(b, _RULES[impl.name].seed(b, *_seed_words(b, seeds, dtype)), shape)]


def _random_split(ctx, keys, *, shape):
    impl, batch = _key_operand(ctx.avals_in[0], "random_split")
    b, shape = ctx.builder, tuple(shape)
    if 0 in batch + shape:
        return [_zeros(b, batch + shape + impl.key_shape)]
    w = _words(b, keys, batch, impl.key_shape[0])
    return [_RULES[impl.name].split(b, w, batch, shape)]


def _random_bits(ctx, keys, *, bit_width, shape):
    if bit_width not in _UINTS:
        raise ValueError(f"random_bits: bit_width must be 8, 16, 32 or 64, got {bit_width}")
    impl, batch = _key_operand(ctx.avals_in[0], "random_bits")
    b, shape = ctx.builder, tuple(shape)
    if 0 in batch + shape:
        return [_zeros(b, batch + shape, np.dtype(f"uint{bit_width}"))]
    w = _words(b, keys, batch, impl.key_shape[0])
    return [_RULES[impl.name].bits(b, w, batch, bit_width, shape)]


def _random_fold_in(ctx, keys, msgs):
    impl, kshape = _key_operand(ctx.avals_in[0], "random_fold_in")
    b, mshape = ctx.builder, tuple(ctx.avals_in[1].shape)
    out = tuple(np.broadcast_shapes(kshape, mshape))
    if 0 in out:
        return [_zeros(b, out + impl.key_shape)]
    if np.dtype(ctx.avals_in[1].dtype) != _U32:
        msgs = b.convert(msgs, hlo.ui32)
    w = _words(b, keys, kshape, impl.key_shape[0])
    w = [_broadcast_to(b, v, kshape, out, "random_fold_in") for v in w]
    if impl.name == "unsafe_rbg":
        return [_urbg_fold_in(b, w, msgs, mshape, out)]
    m = _broadcast_to(b, msgs, mshape, out, "random_fold_in")
    return [_pack(b, _RULES[impl.name].fold_in(b, w, m), out)]


def _urbg_fold_in(b, w, msgs, mshape, out):
    """``key ^ rows[9]`` where ``rows`` are 10 generated uint32[4] rows under the rbg key of
    the message. Batched as jax's vmap does it: the generator runs once, keyed by the first
    message, with the dimensions along which the messages vary."""
    lead = len(out) - len(mshape)
    varying = [i for i in range(lead, len(out)) if mshape[i - lead] == out[i]]
    gen_key = _pack(b, _rbg_seed(b, *_seed_words(b, _first(b, msgs), _U32)), ())
    vshape = tuple(out[i] for i in varying)
    r = len(vshape)
    _, rows = rng_bits_hlo(b, gen_key, vshape + (10, 4), _U32)
    last = b.reshape(b.slice(rows, [0] * r + [9, 0], list(vshape) + [10, 4]), vshape + (4,))
    mask = b.broadcast_in_dim(last, out + (4,), varying + [len(out)])
    return b.xor(_pack(b, w, out), mask)


def _register_key_rules():
    # (keys of a user-defined implementation: lowered through its JAX functions)
    from .random_custom import dispatching
    for name, rule in (("random_seed", _random_seed), ("random_split", _random_split),
                       ("random_bits", _random_bits), ("random_fold_in", _random_fold_in)):
        register_lowering(name, dispatching(name, rule))


_register_key_rules()
for _name in ("random_wrap", "random_unwrap", "random_clone"):
    register_lowering(_name, lambda ctx, keys, **_: [keys])


# -- XLA's generators ---------------------------------------------------------------------------

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
    kaval = ctx.avals_in[0]
    kdtype = np.dtype(kaval.dtype)
    if not ((tuple(kaval.shape) == (4,) and kdtype == _U32)
            or (tuple(kaval.shape) == (2,) and kdtype == np.uint64)):
        raise TypeError(f"rng_bit_generator: the key must be uint32[4] or uint64[2], got {kaval}")
    return list(rng_bits_hlo(ctx.builder, key, tuple(shape), dtype, _algorithm(algorithm)))


register_lowering("rng_bit_generator", _rng_bit_generator)


def _rng_uniform(ctx, lo, hi, *, shape):
    """XLA's stateful generator (``mhlo.rng`` UNIFORM in [lo, hi)); unlike the threefry
    primitives its values are not reproducible across backends."""
    return [ctx.builder.rng(lo, hi, tuple(int(d) for d in shape), "UNIFORM")]


register_lowering("rng_uniform", _rng_uniform)
