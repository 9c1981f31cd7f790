"""jax 0.10's primitive params that change what jax.jit computes, each once dropped by a rule
that took ``**params``: ours against jax.jit, exactly (bit for bit for complex results)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import lower.jax as lj


def _same(fn, *args):
    got, want = lj.jit(fn)(*args), jax.jit(fn)(*args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    return got


@pytest.mark.parametrize("dtypes", [(np.int8, jnp.int32), (np.float16, jnp.float32),
                                    (np.uint8, jnp.uint16)], ids=["i8-i32", "f16-f32", "u8-u16"])
def test_mul_out_dtype_converts_first(dtypes):
    # lax.mul(x, y, out_dtype=...) multiplies in the wider type (jax converts the operands
    # first): 100 * 3 is 300, not the int8 product's 44; size-1 dimensions broadcast too.
    src, out = dtypes
    x = np.array([[100, 2, 7]], src)
    y = np.array([[3], [90]], src)
    got = _same(lambda a, b: lax.mul(a, b, out_dtype=out), x, y)
    assert got.dtype == np.dtype(out) and got[0, 0] == 300


@pytest.mark.parametrize("precision", ["BF16_BF16_F32", lax.DotAlgorithmPreset.F32_F32_F32,
                                       lax.DotAlgorithm(np.float32, np.float32, np.float32)],
                         ids=["name", "preset", "algorithm"])
def test_convolution_with_a_dot_algorithm_is_default_precision(precision):
    # jax's convolution writes DEFAULT precisions for any dot algorithm (ours refused the
    # preset's name as a precision): under jax.default_matmul_precision too.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    _same(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME", precision=precision),
          x, w)
    with jax.default_matmul_precision("BF16_BF16_F32"):
        _same(lambda a, b: jnp.convolve(a, b), x.ravel()[:10], w.ravel()[:3])


Z = np.array([-1 + 0j, 1e-20 + 1e-20j, 3 + 4j, 1e-8 - 1e-8j, -0.9999 + 1e-9j, 2j, -4 + 0j],
             np.complex64)


@pytest.mark.parametrize("accuracy", [lax.AccuracyMode.HIGHEST, lax.AccuracyMode.DEFAULT,
                                      lax.Tolerance(atol=1e-3, rtol=1e-3, ulps=2)],
                         ids=["highest", "default", "tolerance"])
@pytest.mark.parametrize("name", ["sin", "cos", "log", "log1p", "sqrt"])
def test_complex_functions_with_an_accuracy(name, accuracy):
    # jax expands complex sin and cos whatever the accuracy, and jaxlib still expands log,
    # log1p and sqrt written with AccuracyMode.DEFAULT: one op lost small imaginary parts
    # (sin(1e-20+1e-20j) = 1e-20+0j) and log1p(-1) (0 for -inf).
    fn = getattr(lax, name)
    got = _same(lambda z: fn(z, accuracy=accuracy), Z)
    if name == "log1p" and accuracy is lax.AccuracyMode.DEFAULT:
        assert got[0].real == -np.inf


@pytest.mark.parametrize("name", ["scatter", "scatter_add", "scatter_max"])
def test_scatter_one_hot_mode_drops_out_of_bounds_updates(name):
    # jax's scatter singles out CLIP alone: ONE_HOT drops out-of-bounds updates as
    # FILL_OR_DROP does (ours raised NotImplementedError).
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [3], [7]], np.int32)
    got = _same(lambda a, i, u: getattr(lax, name)(a, i, u, dn, mode="one_hot"), x, idx,
                np.full((3, 5), 50, np.float32))
    np.testing.assert_array_equal(got[1:3], x[1:3])  # (row 7 is out of bounds: dropped)
