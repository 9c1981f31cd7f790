"""call_exported: jax.export artifacts read by our parser, merged into the lowered module and
called, against jax.jit of the same caller: once per artifact however often it is called,
multi-platform artifacts (the platform index argument), and refusals that say why."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import lower.jax as lj

RNG = np.random.default_rng(5)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((4, 2)).astype(np.float32)


def _g(x, y):
    return jnp.sin(x) @ y + 1, jnp.argmax(x, 0)


def _check(exported):
    def h(x, y):
        a, i = exported.call(x, y)
        b, _ = exported.call(x * 2, y)
        return a * 2 + b, i
    got, want = lj.jit(h)(X, Y), jax.jit(h)(X, Y)
    np.testing.assert_allclose(got[0], np.asarray(want[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], np.asarray(want[1]))
    text = lj.lower(h, X, Y).text
    assert text.count('sym_name = "call_exported__g"') == 1  # merged once, called twice
    assert text.count('callee = @call_exported__g') == 2
    return text


def test_an_exported_function_runs_inside_our_program():
    _check(export.export(jax.jit(_g))(X, Y))


def test_a_multi_platform_artifact_gets_the_platform_index():
    text = _check(export.export(jax.jit(_g), platforms=("tpu", "cpu"))(X, Y))
    assert "dense<1> : tensor<i32>" in text  # cpu is the second platform


def test_refusals_say_why():
    tpu_only = export.export(jax.jit(_g), platforms=("tpu",))(X, Y)
    with pytest.raises(ValueError, match=r"exported for \['tpu'\], not for 'cpu'"):
        lj.lower(lambda x, y: tpu_only.call(x, y), X, Y)
    (n,) = export.symbolic_shape("n")
    poly = export.export(jax.jit(lambda v: v * 2))(jax.ShapeDtypeStruct((n, 4), np.float32))
    with pytest.raises(NotImplementedError, match="symbolic shapes"):
        lj.lower(lambda x: poly.call(x), X)
