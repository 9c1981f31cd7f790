"""The held-out programs of the JAX differential suite: real code written with jax.numpy, lax,
nn, random, scipy.special, fft and linalg, each with its inputs and how it is compared.

A ``Program`` is a function, a function making its arguments from a numpy Generator, and the
comparison: ``exact`` (integers and data movement: bit for bit), or ``rtol``/``atol`` for float
math. ``jit`` options (static_argnums, donate_argnums, shardings) go to both jax.jit and
lower.jax.jit, except shardings, which only ours take here: jax in the test process has one
CPU device, and a sharding does not change a value (only float sums' order, hence the
tolerance). ``x64`` programs run with jax_enable_x64 on.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

PROGRAMS: dict = {}


@dataclasses.dataclass(frozen=True)
class Program:
    fn: Callable
    args: Callable
    exact: bool = False
    rtol: float = 1e-5
    atol: float = 1e-6
    jit: dict = dataclasses.field(default_factory=dict)
    ours: dict = dataclasses.field(default_factory=dict)  # lower.jax.jit options only
    x64: bool = False
    callbacks: bool = False   # logs what it calls back with: compared too


def program(name, args, **kw):
    def register(fn):
        if name in PROGRAMS:
            raise ValueError(f"program {name!r} declared twice")
        PROGRAMS[name] = Program(fn, args, **kw)
        return fn
    return register


def f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def i32(rng, *shape, lo=-100, hi=100):
    return rng.integers(lo, hi, shape, dtype=np.int32)


# -- jax.numpy: elementwise, reductions, data movement -----------------------------------------

@program("softplus_logsumexp", lambda r: (f32(r, 4, 5),))
def _(x):
    return jnp.logaddexp(x, 0.0), jax.nn.logsumexp(x, axis=1), jnp.log1p(jnp.exp(-jnp.abs(x)))


@program("integer_arithmetic", lambda r: (i32(r, 6), i32(r, 6, lo=1, hi=9)), exact=True)
def _(a, b):
    return (a // b, a % b, jnp.floor_divide(-a, b), a << 2, a >> 1, a & b, a | b, a ^ b,
            jnp.abs(a), jnp.sign(a), jnp.left_shift(b, 3), jnp.gcd(a, b), jnp.lcm(b, 3))


@program("bit_ops_unsigned", lambda r: (r.integers(0, 2**32, 8, dtype=np.uint32),),
         exact=True)
def _(x):
    return (lax.population_count(x), lax.clz(x), x >> 3, jnp.invert(x),
            jnp.bitwise_count(x))


@program("rounding_and_clipping", lambda r: (f32(r, 8) * 3,))
def _(x):
    return (jnp.round(x), jnp.floor(x), jnp.ceil(x), jnp.trunc(x), jnp.rint(x),
            jnp.clip(x, -1, 1), jnp.where(x > 0, x, 0.1 * x), jnp.fmod(x, 0.7),
            jnp.remainder(x, 0.7), jnp.copysign(1.0, x))


@program("statistics", lambda r: (f32(r, 5, 6),))
def _(x):
    return (x.mean(0), x.var(1), x.std(), jnp.median(x, axis=0), jnp.percentile(x, 30.0),
            jnp.nanmean(jnp.where(x > 1, jnp.nan, x)), jnp.average(x, 1, weights=jnp.arange(6.)))


@program("argmax_argmin_sort", lambda r: (f32(r, 4, 7),), exact=True)
def _(x):
    return (jnp.argmax(x, 1), jnp.argmin(x, 0), jnp.sort(x, 1), jnp.argsort(x, 0),
            lax.top_k(x, 3), jnp.sort(x, axis=None)[::-1])


@program("cumulative", lambda r: (f32(r, 3, 6), i32(r, 3, 6, lo=-3, hi=4)))
def _(x, n):
    return (jnp.cumsum(x, 1), jnp.cumprod(x, 0), lax.cummax(x, 1), lax.cummin(n, 0),
            jnp.cumsum(n, 1), lax.cumlogsumexp(x, 1))


@program("searchsorted_bincount_histogram",
         lambda r: (np.sort(f32(r, 10)), f32(r, 6), r.integers(0, 5, 12).astype(np.int32)))
def _(edges, q, counts):
    return (jnp.searchsorted(edges, q), jnp.bincount(counts, length=6),
            jnp.histogram(q, bins=4, range=(-2.0, 2.0))[0], jnp.digitize(q, edges))


@program("shape_ops", lambda r: (f32(r, 2, 3, 4), f32(r, 3, 4)), exact=True)
def _(a, b):
    return (a.reshape(6, 4).T, jnp.concatenate([a[0], b], 0), jnp.stack([b, b * 2], 2),
            jnp.split(b, 2, axis=1)[1], jnp.expand_dims(b, 1).squeeze(1), jnp.moveaxis(a, 0, 2),
            jnp.swapaxes(a, 1, 2), jnp.ravel(b, order="F"))


@program("pad_modes", lambda r: (f32(r, 3, 4),), exact=True)
def _(x):
    return tuple(jnp.pad(x, ((1, 2), (2, 1)), mode=m)
                 for m in ("constant", "edge", "reflect", "symmetric", "wrap")) + \
        (jnp.pad(x, 1, constant_values=-7.0), lax.pad(x, 0.0, [(1, -1, 1), (0, 2, 2)]))


@program("roll_flip_tile_repeat", lambda r: (i32(r, 3, 4),), exact=True)
def _(x):
    return (jnp.roll(x, 2, axis=1), jnp.roll(x, -1), jnp.flip(x), jnp.rot90(x),
            jnp.tile(x, (2, 1)), jnp.repeat(x, 2, axis=0), jnp.repeat(x, 3))


@program("fancy_indexing", lambda r: (f32(r, 5, 6), np.array([4, 0, 2, 2], np.int32)),
         exact=True)
def _(x, i):
    return (x[i], x[:, i], x[i, i[::-1]], x[1:4:2, ::-2], jnp.where(x[:, :1] > 0.0, x, 0.0)[-1],
            jnp.take(x, i, axis=1, mode="clip"), jnp.take_along_axis(x, jnp.argsort(x, 1), 1),
            x[None, ..., 2])


@program("at_updates", lambda r: (f32(r, 6), np.array([1, 3, 1, 5], np.int32), f32(r, 4)))
def _(x, i, v):
    return (x.at[i].set(v), x.at[i].add(v), x.at[i].multiply(v), x.at[i].max(v),
            x.at[i].min(v), x.at[2:4].set(0.0), x.at[i].get(mode="fill", fill_value=-1.0))


@program("dynamic_slices", lambda r: (f32(r, 6, 6), np.int32(2)), exact=True)
def _(x, k):
    s = lax.dynamic_slice(x, (k, k + 1), (3, 2))
    return s, lax.dynamic_update_slice(x, s * 10, (k, 0)), lax.dynamic_index_in_dim(x, k, 1)


@program("einsum_variants", lambda r: (f32(r, 2, 3, 4), f32(r, 4, 5), f32(r, 2, 5, 3)),
         rtol=1e-4)
def _(a, b, c):
    return (jnp.einsum("bij,jk->bik", a, b), jnp.einsum("bij,bki->bjk", a, c),
            jnp.einsum("bij->j", a), jnp.einsum("ij,ij->", b, b), jnp.einsum("bii->bi", c[:, :3]))


@program("matrix_helpers", lambda r: (f32(r, 4, 4), f32(r, 3)), exact=True)
def _(m, v):
    return (jnp.tril(m), jnp.triu(m, 1), jnp.diag(m), jnp.diag(v), jnp.trace(m),
            jnp.kron(v[:2], m[:2, :2]), jnp.meshgrid(v, v[:2])[1], jnp.outer(v, v),
            jnp.eye(3, 4, k=1), jnp.identity(2))


@program("complex_numbers", lambda r: (f32(r, 4) + 1j * f32(r, 4),), rtol=1e-5)
def _(z):
    z = z.astype(jnp.complex64)
    return (jnp.abs(z), jnp.angle(z), jnp.exp(z), jnp.log(z), jnp.sqrt(z), z.conj() * z,
            jnp.real(z @ z), jnp.tanh(z), jnp.sin(z), jnp.cos(z))


@program("comparisons_and_logic", lambda r: (f32(r, 8), f32(r, 8)), exact=True)
def _(a, b):
    return (a < b, jnp.isclose(a, b, atol=0.5), jnp.logical_xor(a > 0, b > 0),
            jnp.any(a > 1), jnp.all(a > -3), jnp.isnan(a / (a - a)), jnp.maximum(a, b),
            jnp.fmin(a, jnp.where(b > 0, jnp.nan, b)), jnp.count_nonzero(a > 0))


@program("dtype_conversions", lambda r: (f32(r, 6) * 100,), exact=True)
def _(x):
    return (x.astype(jnp.int8), x.astype(jnp.uint8), x.astype(jnp.bfloat16),
            x.astype(jnp.float16), lax.bitcast_convert_type(x, jnp.int32),
            lax.reduce_precision(x, 5, 10), x.astype(bool))


# -- lax: loops, control flow, windows, convolutions -------------------------------------------

@program("fori_and_while", lambda r: (f32(r, 3), np.int32(5)))
def _(x, n):
    y = lax.fori_loop(0, n, lambda i, c: c * 0.9 + i, x)
    z = lax.while_loop(lambda s: s[0] < n * 3, lambda s: (s[0] + 2, s[1] + s[0]),
                       (0, jnp.int32(0)))
    return y, z


@program("scan_rnn", lambda r: (f32(r, 4, 4) * 0.5, f32(r, 6, 4)))
def _(w, xs):
    def cell(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()
    return lax.scan(cell, jnp.zeros(4, jnp.float32), xs)


@program("scan_reverse_unroll", lambda r: (f32(r, 5),))
def _(xs):
    return (lax.scan(lambda c, x: (c + x, c * x), 1.0, xs, reverse=True),
            lax.scan(lambda c, x: (c * 0.5 + x, c), 0.0, xs, unroll=2))


@program("cond_switch", lambda r: (f32(r, 4), np.int32(2)))
def _(x, k):
    a = lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x)
    b = lax.switch(k, [jnp.sin, jnp.cos, lambda v: v ** 2, jnp.exp], x)
    c = lax.switch(k + 10, [jnp.sin, jnp.cos], x)   # clamped index
    return a, b, c


@program("nested_control_flow", lambda r: (f32(r, 6),))
def _(xs):
    def body(c, x):
        c = lax.cond(x > 0, lambda: c + x, lambda: lax.fori_loop(0, 3, lambda i, v: v * 0.5, c))
        return c, c
    return lax.scan(body, 1.0, xs)


@program("associative_scan_and_map", lambda r: (f32(r, 8), f32(r, 3, 4)))
def _(x, m):
    return (lax.associative_scan(jnp.add, x), lax.associative_scan(jnp.maximum, x,
                                                                   reverse=True),
            lax.map(lambda row: row @ row, m))


@program("pooling", lambda r: (f32(r, 1, 6, 6, 2),))
def _(x):
    mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    avg = lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9
    return mx, avg


@program("conv_forward_and_grad", lambda r: (f32(r, 2, 3, 8, 8), f32(r, 4, 3, 3, 3)),
         rtol=1e-4, atol=1e-4)
def _(x, k):
    def f(x, k):
        y = lax.conv_general_dilated(x, k, (1, 1), "SAME", rhs_dilation=(1, 2))
        y = lax.conv_general_dilated(jax.nn.relu(y), jnp.ones((2, 4, 3, 3)) * k.mean(),
                                     (2, 2), ((1, 0), (0, 1)))
        return (y ** 2).mean()
    return jax.value_and_grad(f, argnums=(0, 1))(x, k)


@program("conv_transpose_grouped", lambda r: (f32(r, 1, 8, 8, 4), f32(r, 3, 3, 2, 4)),
         rtol=1e-4, atol=1e-5)
def _(x, k):
    g = lax.conv_general_dilated(x, k, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO",
                                                                         "NHWC"),
                                 feature_group_count=2)
    t = lax.conv_transpose(x, k.transpose(0, 1, 3, 2), (2, 2), "SAME",
                           dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return g, t


@program("dot_general_batched", lambda r: (f32(r, 3, 4, 5), f32(r, 3, 5, 2)), rtol=1e-5)
def _(a, b):
    return (lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
            lax.batch_matmul(a, b), jnp.matmul(a, b[0]),
            lax.dot(a[0], b[0], precision=lax.Precision.HIGHEST))


@program("sort_multiple_operands", lambda r: (i32(r, 10, lo=0, hi=4), f32(r, 10)), exact=True)
def _(k, v):
    return (lax.sort((k, v), num_keys=1), lax.sort_key_val(k, v), jnp.lexsort((v, k)),
            jnp.unique(k, size=4, fill_value=-1))


@program("select_and_clamp", lambda r: (i32(r, 6, lo=0, hi=3), f32(r, 3, 6)), exact=True)
def _(w, c):
    return lax.select_n(w, c[0], c[1], c[2]), lax.clamp(-0.5, c, 0.5), jnp.choose(w, c, mode="clip")


@program("segment_reductions", lambda r: (i32(r, 10), np.sort(r.integers(0, 4, 10)).astype(
    np.int32)), exact=True)
def _(x, seg):
    return (jax.ops.segment_sum(x, seg, num_segments=4), jax.ops.segment_max(x, seg, 4),
            jax.ops.segment_min(x, seg, 4, indices_are_sorted=True))


@program("polynomials_and_interp", lambda r: (f32(r, 4), np.sort(f32(r, 6)), f32(r, 6)),
         rtol=1e-5)
def _(c, xp, fp):
    return (jnp.polyval(c, fp), jnp.interp(fp * 0.5, xp, fp), jnp.polyder(c),
            jnp.vander(c, 3))


@program("convolve_correlate", lambda r: (f32(r, 9), f32(r, 3)), rtol=1e-5)
def _(a, v):
    return (jnp.convolve(a, v), jnp.convolve(a, v, mode="same"),
            jnp.correlate(a, v, mode="valid"))


@program("layer_norm_grad", lambda r: (f32(r, 4, 6), f32(r, 6), f32(r, 6)), rtol=1e-4,
         atol=1e-5)
def _(x, g, b):
    def f(x, g, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (((x - mu) * lax.rsqrt(var + 1e-5) * g + b) ** 2).sum()
    return jax.grad(f, argnums=(0, 1, 2))(x, g, b)


@program("integer_powers", lambda r: (f32(r, 5), i32(r, 5, lo=-5, hi=6)))
def _(x, n):
    return (x ** 3, lax.integer_pow(x, -2), jnp.power(x, 2), n ** 2, jnp.power(n, 3),
            jnp.float_power(jnp.abs(x), 0.5), lax.pow(jnp.abs(x) + 1, x))


@program("nan_handling", lambda r: (f32(r, 3, 4),), exact=True)
def _(x):
    y = jnp.where(x > 0.8, jnp.nan, x)
    y = jnp.where(x < -1.2, jnp.inf, y)
    return (jnp.nan_to_num(y), jnp.nanmax(y, 1), jnp.nansum(y, 0), jnp.nanargmin(y, 1),
            jnp.isfinite(y), jnp.isinf(y))


@program("vmap_nested_in_axes", lambda r: (f32(r, 3, 4), f32(r, 4, 2)), rtol=1e-5)
def _(a, b):
    inner = jax.vmap(lambda row, col: jnp.dot(row, col), in_axes=(None, 1))
    return jax.vmap(inner, in_axes=(0, None))(a, b), jax.vmap(jnp.outer, (0, None))(a, b[:, 0])


@program("lax_reductions", lambda r: (i32(r, 4, 5), f32(r, 4, 5)), exact=True)
def _(n, x):
    return (lax.reduce(n, 0, lax.add, (0,)), lax.reduce(x, -jnp.inf, lax.max, (1,)),
            lax.argmax(x, 1, jnp.int32), lax.reduce_and(n > -50, (0, 1)),
            lax.reduce_or(n > 90, (1,)), lax.reduce_xor(n, (0,)), jnp.prod(n % 3 + 1, 1))


def _c64(rng, *shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


# A review's edge values: complex running logsumexp (did not lower), complex squares past
# f32's range (multiply overflowed where jax's chlo.square does not), logistic as jax writes
# it (mhlo.logistic differs by an ulp in bf16 and by NaN in float8 types without inf).
@program("complex_cumlogsumexp_and_square", lambda r: (_c64(r, 6),
                                                       np.array([3e38 + 3e38j, 2 - 1j],
                                                                np.complex64)), exact=True)
def _(z, big):
    return lax.cumlogsumexp(z), lax.cumlogsumexp(z, reverse=True), jnp.square(big)


@program("logistic_in_narrow_floats", lambda r: (np.linspace(-20, 20, 41, dtype=np.float32),),
         exact=True)
def _(x):
    import ml_dtypes
    return tuple(jax.nn.sigmoid(x.astype(t)) for t in (
        jnp.bfloat16, jnp.float16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2))


_COMPLEX_EDGES = np.array([-4, -4 - 1e-30j, -1e10 - 1j, -1e20 - 1j, 1e20 - 1e-20j, 3e38 + 3e38j,
                           1 + 1e-20j, 0.6 + 0.8j, 1e-40 + 1e-40j, 0, 2j, -1 + 1j,
                           complex(np.inf, 1), complex(-np.inf, 2), complex(1, -np.inf)])


# Complex sqrt and log as jaxlib's StableHLO expander computes them (jax.jit's route): an mhlo
# op reaches XLA's own, which gave sqrt(-4+0j) = -8.7e-08+2j and log(3e38+3e38j) = inf+...
@program("complex_sqrt_and_log_exactly", lambda r: (
    np.concatenate([_COMPLEX_EDGES, _c64(r, 40) * 10.0 ** r.integers(-30, 30, 40)]).astype(
        np.complex64),), exact=True)
def _(z):
    return jnp.sqrt(z), jnp.log(z), jnp.sqrt(z * z), jnp.log(jnp.exp(z))


@program("complex128_sqrt_and_log_exactly", lambda r: (
    np.concatenate([_COMPLEX_EDGES, (_c64(r, 40) * 10.0 ** r.integers(-200, 200, 40))]).astype(
        np.complex128),), exact=True, x64=True)
def _(z):
    return jnp.sqrt(z), jnp.log(z), jnp.log10(z)
