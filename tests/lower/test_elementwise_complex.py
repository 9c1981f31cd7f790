"""Complex sin, cos and log1p (and exp2 with jax's accuracy param) against jax.jit, bit for
bit, on a grid of special and ordinary values: zeros of both signs, subnormals, values near
-1, huge values, infinities and NaNs in either part (NaNs compared as NaNs)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj

_PARTS = [0.0, -0.0, 1e-40, -1e-30, 1e-8, -1e-8, 0.5, -0.5, -1.0, -1.0000001, -0.9999999, 1.0,
          -2.0, 1e5, -1e20, 3e38, -3e38, np.inf, -np.inf, np.nan]
GRID = np.array([complex(a, b) for a, b in itertools.product(_PARTS, _PARTS)], np.complex64)


def _bits_equal(got, want):
    g = np.asarray(got).view(np.float32).reshape(-1, 2)
    w = np.asarray(want).view(np.float32).reshape(-1, 2)
    same = (g.view(np.uint32) == w.view(np.uint32)) | (np.isnan(g) & np.isnan(w))
    bad = np.nonzero(~same.all(axis=1))[0]
    assert not len(bad), [(GRID[i], got[i], want[i]) for i in bad[:5]]


@pytest.mark.parametrize("fn", [jnp.sin, jnp.cos, jnp.log1p], ids=["sin", "cos", "log1p"])
def test_complex_special_values_bit_for_bit(fn):
    _bits_equal(lj.jit(fn)(GRID), jax.jit(fn)(GRID))


def test_the_cases_that_were_wrong():
    sin, cos = lj.jit(jnp.sin), lj.jit(jnp.cos)
    z = np.array([complex(0, np.inf)], np.complex64)
    assert sin(z)[0].real == 0 and np.isinf(sin(z)[0].imag)
    assert np.isinf(cos(z)[0].real) and cos(z)[0].imag == 0
    assert lj.jit(jnp.log1p)(np.array([-1 + 0j], np.complex64))[0] == -np.inf


@pytest.mark.parametrize("fn", [jnp.exp2, jax.lax.exp2, lambda x: jnp.logaddexp2(x, x[::-1])],
                         ids=["jnp.exp2", "lax.exp2", "logaddexp2"])
def test_exp2_with_jaxs_accuracy_param(fn):
    x = np.array([-3.5, 0.0, 0.25, 10.0], np.float32)
    np.testing.assert_allclose(lj.jit(fn)(x), np.asarray(jax.jit(fn)(x)), rtol=1e-6)


def test_complex_max_identity_is_quiet():
    import warnings
    x = np.array([1 + 2j, 3 - 1j, 3 + 0j], np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = lj.jit(lambda v: (jnp.max(v), jnp.min(v)))(x)
    assert got == (3 + 0j, 1 + 2j)
