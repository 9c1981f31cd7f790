"""The lowering rows of ``python -m lower.bench``: our lowering of real JAX jaxprs against JAX's
own lowering of the very same ClosedJaxpr objects, in one process (needs jax).

Each workload is a JAX function traced once (``jax.jit(f).trace(*args)``); both sides lower
``traced.jaxpr``:
  ours -- ``lower_jaxpr_to_module(...).module.to_text()``, locations included, after
          ``bench_build.clear_process_caches()`` (the ratio), and once more at once ("again":
          lowering the same shapes a second time, our memos warm);
  JAX  -- ``traced.lower().as_text()`` after ``jax.clear_caches()``, so nothing is reused.
Workloads: a chain of elementwise ops, a tanh MLP with its own weights per layer (forward,
and ``value_and_grad``), and pre-norm transformer blocks (layer norm, causal attention through
einsum, softmax, gelu MLP; forward and ``value_and_grad``): the nested pjit calls, einsum's
dot_generals, transposes and broadcasts of real programs. Samples of the two sides alternate;
each side's time is its median.
"""

from __future__ import annotations

import gc
import statistics
import time

import numpy as np


def _chain(n):
    def f(x, y):
        for i in range(n):
            x = x + y if i % 2 == 0 else x * y
        return x
    return f


def _mlp(params, x):
    import jax.numpy as jnp
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return x


def _layer_norm(x, g, b):
    import jax.numpy as jnp
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * g + b


def _block(p, x, heads):
    import jax
    import jax.numpy as jnp
    t, d = x.shape
    h = _layer_norm(x, p["ln1_g"], p["ln1_b"])
    q, k, v = (jnp.einsum("td,dhk->thk", h, p[n]) for n in ("wq", "wk", "wv"))
    s = jnp.einsum("thk,shk->hts", q, k) / np.sqrt(d // heads).astype(np.float32)
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -1e9)
    a = jnp.einsum("hts,shk->thk", jax.nn.softmax(s, axis=-1), v)
    x = x + jnp.einsum("thk,hkd->td", a, p["wo"])
    h = _layer_norm(x, p["ln2_g"], p["ln2_b"])
    return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]


def _transformer(params, x, heads=4):
    for p in params:
        x = _block(p, x, heads)
    return x


def workloads(quick: bool):
    """``(name, function, args)`` of each lowering workload."""
    import jax
    rng = np.random.default_rng(0)

    def arr(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    n = 1000 if quick else 5000
    layers = 10 if quick else 50
    mlp_params = [(arr(32, 32), arr(32)) for _ in range(layers)]
    x = arr(8, 32)
    blocks, t, d, heads = (1 if quick else 4), 16, 32, 4
    tf_params = [dict(ln1_g=arr(d) + 1, ln1_b=arr(d), wq=arr(d, heads, d // heads),
                      wk=arr(d, heads, d // heads), wv=arr(d, heads, d // heads),
                      wo=arr(heads, d // heads, d), ln2_g=arr(d) + 1, ln2_b=arr(d),
                      w1=arr(d, 4 * d), w2=arr(4 * d, d)) for _ in range(blocks)]
    tx = arr(t, d)

    def loss(f):
        return jax.value_and_grad(lambda p, x: f(p, x).sum())
    return [
        (f"lower chain {n}", _chain(n), (arr(8), arr(8))),
        (f"lower mlp {layers} fwd", _mlp, (mlp_params, x)),
        (f"lower mlp {layers} value_and_grad", loss(_mlp), (mlp_params, x)),
        (f"lower transformer {blocks} fwd", _transformer, (tf_params, tx)),
        (f"lower transformer {blocks} value_and_grad", loss(_transformer), (tf_params, tx)),
    ]


def _count_eqns(jaxpr) -> int:
    """Equations, those of nested jaxprs (pjit, custom_jvp calls...) included."""
    from jax.extend import core as jcore
    total = 0
    for e in jaxpr.eqns:
        total += 1
        for v in e.params.values():
            for j in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(j, jcore.ClosedJaxpr):
                    total += _count_eqns(j.jaxpr)
                elif isinstance(j, jcore.Jaxpr):
                    total += _count_eqns(j)
    return total


def lowering_rows(quick: bool, samples: int) -> list:
    """One row per workload: equations, our and JAX's microseconds per equation, the ratio."""
    try:
        import jax
    except ImportError:
        return []
    from . import lower_jaxpr_to_module
    from .bench_build import clear_process_caches
    samples = max(samples, 3 if quick else 7)
    rows = []
    for name, fn, args in workloads(quick):
        traced = jax.jit(fn).trace(*args)
        closed = traced.jaxpr
        ours, warm, theirs = [], [], []
        for _ in range(samples):
            # Ours as a first lowering (our process-wide memos emptied, as JAX's caches are
            # below), and again at once: what lowering the same shapes again costs.
            clear_process_caches()
            gc.collect()
            t0 = time.perf_counter()
            lower_jaxpr_to_module("bench", closed).module.to_text()
            ours.append(time.perf_counter() - t0)
            gc.collect()
            t0 = time.perf_counter()
            lower_jaxpr_to_module("bench", closed).module.to_text()
            warm.append(time.perf_counter() - t0)
            jax.clear_caches()
            gc.collect()
            t0 = time.perf_counter()
            traced.lower().as_text()
            theirs.append(time.perf_counter() - t0)
        mine, again, jaxs = (statistics.median(x) for x in (ours, warm, theirs))
        n = _count_eqns(closed.jaxpr)
        rows.append(dict(workload=name, eqns=n, lower_ms=mine * 1e3, jax_ms=jaxs * 1e3,
                         lower_again_ms=again * 1e3,
                         lower_us_per_eqn=mine / n * 1e6, jax_us_per_eqn=jaxs / n * 1e6,
                         jax_ratio=jaxs / mine, jax_ratio_again=jaxs / again))
    return rows


def print_table(rows) -> None:
    if not rows:
        print("\nlowering: jax is not installed")
        return
    print(f"\n{'lowering (+ print)':<38}{'eqns':>6}{'ours ms':>9}{'jax ms':>9}{'ratio':>8}"
          f"{'again ms':>10}{'ratio':>8}")
    for r in rows:
        print(f"{r['workload']:<38}{r['eqns']:>6}{r['lower_ms']:>9.2f}{r['jax_ms']:>9.2f}"
              f"{r['jax_ratio']:>7.1f}x{r['lower_again_ms']:>10.2f}{r['jax_ratio_again']:>7.1f}x")
