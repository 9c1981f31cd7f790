"""Simple primitives (chlo functions, complex helpers, identities, split/tile, cholesky,
triangular_solve, fft), on JAX's own jaxprs, against jax.jit."""

from __future__ import annotations

import numpy as np
import pytest

import verify
from lower import lower_jaxpr_to_module

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

X = np.linspace(-0.9, 0.9, 6, dtype=np.float32).reshape(2, 3)
P = np.linspace(1.1, 3.0, 6, dtype=np.float32).reshape(2, 3)
Z = (X + 1j * P).astype(np.complex64)
M = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)

CASES = {
    "acos": (jnp.arccos, (X,)), "asin": (jnp.arcsin, (X,)), "atan": (jnp.arctan, (X,)),
    "atanh": (jnp.arctanh, (X,)), "acosh": (jnp.arccosh, (P,)), "asinh": (jnp.arcsinh, (X,)),
    "cosh": (jnp.cosh, (X,)), "sinh": (jnp.sinh, (X,)), "erfc": (jax.scipy.special.erfc, (X,)),
    "bessel_i1e": (jax.scipy.special.i1e, (X,)), "conj": (jnp.conj, (Z,)),
    "complex": (jlax.complex, (X, P)), "square": (jnp.square, (X,)),
    "stop_gradient": (jlax.stop_gradient, (X,)), "split": (lambda a: jnp.split(a, [1], 1), (X,)),
    "tile": (lambda a: jnp.tile(a, (2, 1, 2)), (X,)),
    "reduce_window_sum": (lambda a: jlax.reduce_window(a, 0.0, jlax.add, (2, 2), (1, 1),
                                                       "SAME"), (P,)),
    "reduce_window_max": (lambda a: jlax.reduce_window(a, -np.inf, jlax.max, (1, 2), (1, 1),
                                                       "VALID"), (P,)),
    "cholesky": (jnp.linalg.cholesky, (M,)),
    "triangular_solve": (lambda a, b: jlax.linalg.triangular_solve(a, b, left_side=True,
                                                                    lower=True), (M, M)),
    "fft": (jnp.fft.fft, (Z,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
    fn, args = CASES[name]
    closed = jax.make_jaxpr(fn)(*args)
    got = verify.run(lower_jaxpr_to_module(name, closed).module, *args)
    want = jax.jit(fn)(*args)
    want = want if isinstance(want, (list, tuple)) else [want]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=2e-5, atol=2e-6, err_msg=name)
