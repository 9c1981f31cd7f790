"""More held-out programs (see ``programs``): nn, random and typed keys, scipy.special, fft,
linalg, gradients of small models, callbacks, x64, donation, static arguments and SPMD
shardings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as jss
import numpy as np
from jax import lax
from jax.experimental import io_callback

from .programs import f32, i32, program

# -- jax.nn ------------------------------------------------------------------------------------


@program("nn_activations", lambda r: (f32(r, 3, 5) * 3,))
def _(x):
    return (jax.nn.relu(x), jax.nn.gelu(x), jax.nn.gelu(x, approximate=False), jax.nn.silu(x),
            jax.nn.elu(x), jax.nn.leaky_relu(x), jax.nn.softplus(x), jax.nn.sigmoid(x),
            jax.nn.hard_tanh(x), jax.nn.celu(x), jax.nn.glu(x[:, :4]), jax.nn.mish(x))


@program("nn_softmax_one_hot", lambda r: (f32(r, 4, 6), r.integers(0, 6, 4).astype(np.int32)))
def _(x, y):
    return (jax.nn.softmax(x), jax.nn.log_softmax(x, axis=0), jax.nn.one_hot(y, 6),
            jax.nn.standardize(x, axis=1), -(jax.nn.log_softmax(x) * jax.nn.one_hot(y, 6)).sum())


@program("attention", lambda r: (f32(r, 2, 5, 4), f32(r, 2, 7, 4), f32(r, 2, 7, 4)), rtol=1e-4)
def _(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / 2.0
    mask = jnp.tril(jnp.ones((5, 7), bool))
    p = jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1)
    return jnp.einsum("bqk,bkd->bqd", p, v)


# -- random (typed keys and raw keys: bit for bit) ---------------------------------------------

@program("random_samplers", lambda r: (jax.random.key(42),), exact=True)
def _(key):
    k = jax.random.split(key, 8)
    return (jax.random.normal(k[0], (3,)), jax.random.uniform(k[1], (2, 2), minval=-1.0),
            jax.random.randint(k[2], (4,), 0, 10), jax.random.bernoulli(k[3], 0.3, (5,)),
            jax.random.categorical(k[4], jnp.log(jnp.array([0.2, 0.5, 0.3])), shape=(6,)),
            jax.random.permutation(k[5], 7), jax.random.choice(k[6], 10, (3,), replace=False),
            jax.random.truncated_normal(k[7], -1.0, 1.0, (3,)))


@program("random_gamma_and_friends",
         lambda r: (jax.random.key(7), np.array([0.3, 1.0, 4.5], np.float32)), rtol=1e-5)
def _(key, a):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return (jax.random.gamma(k1, a), jax.random.exponential(k2, (3,)),
            jax.random.laplace(k3, (2,)), jax.random.cauchy(k4, (2,)))


@program("keys_in_and_out", lambda r: (jax.random.key(3), np.arange(4, dtype=np.int32)),
         exact=True)
def _(key, data):
    key, sub = jax.random.split(key)
    folded = jax.random.fold_in(sub, 11)
    return key, jax.vmap(jax.random.fold_in, (None, 0))(folded, data), \
        jax.random.bits(folded, (2,), jnp.uint32)


@program("raw_keys_and_other_impls", lambda r: (np.array([0, 5], np.uint32),), exact=True)
def _(raw):
    k = jax.random.wrap_key_data(raw)
    p = jax.random.key(9, impl="rbg")
    return jax.random.key_data(jax.random.split(k)), jax.random.uniform(p, (3,))


# -- scipy.special, fft, linalg --------------------------------------------------------------

@program("scipy_special", lambda r: (np.abs(f32(r, 6)) + 0.1, f32(r, 6)), rtol=1e-4, atol=1e-5)
def _(p, x):
    return (jss.erf(x), jss.erfc(x), jss.gammaln(p), jss.digamma(p), jss.xlogy(p, p),
            jss.expit(x), jss.ndtr(x), jss.ndtri(jnp.clip(p / 3, 0.01, 0.99)),
            jss.gammainc(p, p * 2), jss.betainc(p, 2.0, jnp.clip(p / 3, 0, 1)), jss.i0e(x),
            jss.logsumexp(x), jss.entr(p), jss.log_ndtr(x))


@program("fft_family", lambda r: (f32(r, 4, 8),), rtol=1e-4, atol=1e-4)
def _(x):
    return (jnp.fft.fft(x), jnp.fft.ifft(x, axis=0), jnp.fft.rfft(x), jnp.fft.irfft(x[:, :5]),
            jnp.fft.fft2(x), jnp.fft.fftshift(x), jnp.fft.rfftn(x, s=(4, 6)))


def _spd(r, n):
    a = f32(r, n, n)
    return a @ a.T + n * np.eye(n, dtype=np.float32)


@program("linalg_solves", lambda r: (_spd(r, 4), f32(r, 4, 2)), rtol=1e-4, atol=1e-4)
def _(a, b):
    return (jnp.linalg.inv(a), jnp.linalg.solve(a, b), jnp.linalg.cholesky(a),
            jnp.linalg.det(a), jnp.linalg.slogdet(a),
            jax.scipy.linalg.solve_triangular(jnp.tril(a), b, lower=True),
            jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), b))


@program("linalg_decompositions", lambda r: (_spd(r, 4), f32(r, 5, 3)), rtol=1e-4, atol=1e-4)
def _(s, m):
    w, v = jnp.linalg.eigh(s)
    q, rr = jnp.linalg.qr(m)
    u, sv, vt = jnp.linalg.svd(m, full_matrices=False)
    lu, piv, perm = lax.linalg.lu(s)
    # Invariants, not the factors' signs: reconstructions and spectra.
    return (w, (v * w) @ v.T, q @ rr, jnp.abs(rr), sv, (u * sv) @ vt, lu, perm,
            jnp.linalg.norm(m, 2), jnp.linalg.matrix_rank(m), jnp.linalg.pinv(m) @ m)


# -- gradients of small models ------------------------------------------------------------------

def _mlp_params(r):
    return [(f32(r, 4, 8) * 0.5, np.zeros(8, np.float32)), (f32(r, 8, 3) * 0.5,
                                                             np.zeros(3, np.float32))]


def _mlp(params, x):
    for w, b in params[:-1]:
        x = jax.nn.gelu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


@program("mlp_value_and_grad", lambda r: (_mlp_params(r), f32(r, 6, 4),
                                          r.integers(0, 3, 6).astype(np.int32)), rtol=1e-4)
def _(params, x, y):
    def loss(p):
        logits = _mlp(p, x)
        return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean()
    return jax.value_and_grad(loss)(params)


@program("sgd_steps_in_a_scan", lambda r: (_mlp_params(r), f32(r, 5, 6, 4), f32(r, 5, 6, 3)),
         rtol=1e-4, atol=1e-5)
def _(params, xs, ys):
    def step(p, batch):
        x, y = batch
        loss, g = jax.value_and_grad(lambda q: ((_mlp(q, x) - y) ** 2).mean())(p)
        return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), loss
    return lax.scan(step, params, (xs, ys))


@program("hessian_jvp_vjp", lambda r: (f32(r, 3),), rtol=1e-4)
def _(x):
    def f(v):
        return jnp.sum(jnp.sin(v) * v ** 2)
    _, tangent = jax.jvp(f, (x,), (jnp.ones_like(x),))
    _, pullback = jax.vjp(lambda v: jnp.tanh(v) * 2, x)
    return jax.hessian(f)(x), tangent, pullback(x)[0]


@program("custom_jvp_vjp_and_remat", lambda r: (f32(r, 5),), rtol=1e-5)
def _(x):
    @jax.custom_jvp
    def safe_log(v):
        return jnp.log(v)
    safe_log.defjvp(lambda p, t: (safe_log(p[0]), t[0] / jnp.maximum(p[0], 1e-3)))

    @jax.custom_vjp
    def clip_grad(v):
        return v
    clip_grad.defvjp(lambda v: (v, None), lambda _, g: (jnp.clip(g, -0.1, 0.1),))

    def f(v):
        h = jax.checkpoint(lambda u: jnp.sin(u) * u)(v)
        return jnp.sum(safe_log(jnp.abs(h) + 1) + clip_grad(v) ** 2)
    return jax.value_and_grad(f)(x)


@program("grad_through_while_and_cond", lambda r: (f32(r, 4),), rtol=1e-5)
def _(x):
    def f(v):
        v = lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) + c * 0.5, v)
        return lax.cond(v.sum() > 0, lambda u: (u ** 2).sum(), lambda u: u.sum(), v)
    return jax.grad(f)(x)


@program("vmap_of_grad", lambda r: (f32(r, 4, 3),), rtol=1e-5)
def _(xs):
    return jax.vmap(jax.grad(lambda v: jnp.sum(jnp.tanh(v) ** 3)))(xs), jax.jacrev(jnp.sin)(xs[0])


# -- callbacks, x64, donation, static arguments, shardings -------------------------------------

@program("pure_and_io_callbacks", lambda r: (f32(r, 3),), callbacks=True, rtol=1e-6)
def _(x, log):
    y = jax.pure_callback(lambda v: np.cumsum(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    def note(v):
        log.append(np.asarray(v).tolist())
        return np.asarray(v) * 2
    z = lax.fori_loop(0, 2, lambda i, c: io_callback(note, jax.ShapeDtypeStruct(c.shape,
                                                                                c.dtype),
                                                       c, ordered=True), y)
    jax.debug.callback(lambda v: log.append(("debug", np.asarray(v).tolist())), z[0])
    return z


@program("x64_math", lambda r: (r.standard_normal((3, 3)), r.integers(-2**40, 2**40, 4)),
         x64=True, rtol=1e-12, atol=1e-12)
def _(a, n):
    return (a @ a, jnp.linalg.inv(a + 3 * jnp.eye(3)), n * 3 + 1, n // 7, n.astype(jnp.uint64)
            >> 3, jnp.exp(a).sum(), jnp.cumsum(n), jax.random.uniform(jax.random.key(0), (2,)))


@program("donated_update", lambda r: (f32(r, 6), f32(r, 6)), jit={"donate_argnums": (0,)},
         rtol=1e-6)
def _(w, g):
    return w - 0.1 * g, (g ** 2).sum()


@program("static_shape_argument", lambda r: (f32(r, 12), 3), jit={"static_argnums": (1,)},
         exact=True)
def _(x, k):
    return x.reshape(k, -1), jnp.zeros((k,), jnp.int32) + k, jnp.arange(k * 2)


_ROWS8 = "{devices=[8,1]<=[8]}"
_BLOCK = "{devices=[4,2]<=[8]}"
_REPL = "{replicated}"


@program("spmd_data_parallel_mlp", lambda r: (_mlp_params(r), f32(r, 16, 4)), rtol=1e-4,
         ours={"in_shardings": (_REPL, _ROWS8), "out_shardings": _ROWS8})
def _(params, x):
    return _mlp(params, x)


@program("spmd_blocked_matmul_reduce", lambda r: (f32(r, 8, 8), f32(r, 8, 8)), rtol=1e-4,
         atol=1e-5, ours={"in_shardings": (_BLOCK, "{devices=[1,8]<=[8]}"),
                          "out_shardings": (_BLOCK, _REPL)})
def _(a, b):
    c = a @ b
    return jnp.tanh(c), c.sum(0)


@program("spmd_integer_scatter_sort", lambda r: (i32(r, 16), i32(r, 16, lo=0, hi=16)),
         exact=True, ours={"in_shardings": ("{devices=[8]<=[8]}", _REPL),
                           "out_shardings": ("{devices=[8]<=[8]}", _REPL)})
def _(x, i):
    return jnp.sort(x).at[i].add(1), jnp.cumsum(x)
