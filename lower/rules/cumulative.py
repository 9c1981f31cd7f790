"""Rules for cumsum, cumprod, cummax, cummin and cumlogsumexp: one ``reduce_window`` whose
window spans the whole axis, padded on one side (JAX's scan-free lowering of the cumulative
reductions), so element j reduces elements 0..j (or j..n-1 with ``reverse``)."""

from __future__ import annotations

import numpy as np

from ..semantics import (compare_hlo, full_like, lowest, minmax_hlo, monoid,
                         monoid_identity)
from ..mlir import register_lowering
from .elementwise_complex import _log1p as complex_log1p


def _logaddexp(r, a, b):
    """log(exp(a) + exp(b)) without overflow; -inf + -inf stays -inf (as jnp.logaddexp).
    Complex values as jax's: amax + log1p(exp(a + b - 2 amax)), the imaginary part wrapped
    into [-pi, pi]."""
    amax = minmax_hlo(r, a, b, "max")
    if a.type.element_type.kind == "complex":
        delta = r.subtract(r.add(a, b), r.multiply(amax, full_like(r, 2, amax.type)))
        # (complex log1p as jax.jit's route computes it: mhlo's reaches XLA's own)
        out = r.add(amax, complex_log1p(r, r.exponential(delta)))
        return r.complex(r.real(out), _wrap_between(r, r.imag(out), np.pi))
    delta = r.subtract(a, b)
    tail = r.log_plus_one(r.exponential(r.negate(r.abs(delta))))
    return r.select(compare_hlo(r, delta, delta, "NE"), r.add(a, b), r.add(amax, tail))


def _wrap_between(r, x, a):
    """``x`` wrapped into [-a, a], as jax wraps it."""
    t = x.type
    half, whole = full_like(r, a, t), full_like(r, 2 * a, t)
    rem = r.remainder(r.add(x, half), whole)
    rem = r.select(compare_hlo(r, rem, full_like(r, 0, t), "LT"), r.add(rem, whole), rem)
    return r.subtract(rem, half)


# The running reductions and their monoids; logsumexp's identity is -inf, max's.
_MONOID_OF = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}
_RUNNING = (*_MONOID_OF, "cumlogsumexp")


def _init(dtype, name):
    if name == "cumlogsumexp":
        return lowest(dtype)
    return monoid_identity(_MONOID_OF[name], dtype)


def _cumulative(name):
    def rule(ctx, x, *, axis, reverse=False):
        b = ctx.builder
        aval = ctx.avals_in[0]
        rank, n = len(aval.shape), aval.shape[axis]
        if n == 0:
            return [x]
        window = [1] * rank
        window[axis] = n
        padding = [(0, 0)] * rank
        padding[axis] = (0, n - 1) if reverse else (n - 1, 0)
        init = b.constant(_init(aval.dtype, name))
        combine = _logaddexp if name == "cumlogsumexp" else \
            monoid(_MONOID_OF[name], x.type.element_type)
        return [b.reduce_window(x, init, window, combine, padding=padding)]
    rule.__name__ = f"_{name}_lowering"
    return rule


for _name in _RUNNING:
    register_lowering(_name, _cumulative(_name))
