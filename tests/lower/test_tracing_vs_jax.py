"""lower.lax's operators and functions against jax's, where an adversarial comparison found
them apart (silently wrong numbers before): ``**`` with a float exponent, ``/`` of integers,
``@`` above rank 2, ``where`` with a non-bool predicate, axes past the rank, float scalars
into integer operands, dots of two dtypes. Each program runs through our tracer, lowering
and verify, and through jax.jit: results bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module

jax = pytest.importorskip("jax")
jnp = jax.numpy

X = np.array([4.0, 9.0, -0.0], np.float32)
INTS = np.array([-7, 7, 0], np.int32)


def ours(f, *args):
    closed = lax.make_jaxpr(f)(*args)
    return verify.run(lower_jaxpr_to_module("f", closed).module, *args)


def assert_as_jax(f, *args, jax_f=None):
    (got,) = ours(f, *args)
    want = np.asarray(jax.jit(jax_f or f)(*args))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), (got, want)


@pytest.mark.parametrize("f", [lambda x: x ** 0.5, lambda x: x ** 2, lambda x: x ** -1,
                               lambda x: 2.0 ** x, lambda x: x ** x],
                         ids=["sqrt", "square", "inverse", "rpow", "pow"])
def test_power_is_jaxs(f):
    """``x ** 0.5`` was integer_pow(x, 0) (all ones), ``2.0 ** x`` a TypeError."""
    assert_as_jax(f, X)


def test_integer_powers_refused_as_jax_refuses_them():
    with pytest.raises(TypeError, match="Integers cannot be raised to negative powers"):
        ours(lambda i: i ** -1, INTS)
    with pytest.raises(TypeError, match="integer_pow takes an integer exponent, got 2.5"):
        ours(lambda x: lax.integer_pow(x, 2.5), X)


def test_true_division_of_integers_is_float_as_jaxs():
    """``i / 2`` was lax.div: truncated, in int32."""
    assert_as_jax(lambda i: i / 2, INTS)
    assert_as_jax(lambda i: 7 / (i + 8), INTS)
    (got,) = ours(lambda i: lax.div(i, 2), INTS)  # lax.div itself still rounds toward zero
    np.testing.assert_array_equal(got, [-3, 3, 0])


def test_matmul_above_rank_two_is_batched_as_jaxs():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(40, dtype=np.float32).reshape(2, 4, 5)
    assert_as_jax(lambda a, b: a @ b, a, b)
    v = np.arange(4, dtype=np.float32)
    assert_as_jax(lambda m, v: m @ v, a[0], v)
    assert_as_jax(lambda v, b: v @ b, v, b)       # a vector times a stack of matrices
    assert_as_jax(lambda a, w: a @ w, a, v)       # a stack of matrices times a vector
    with pytest.raises(TypeError, match=r"batch\) dimensions must be equal"):
        ours(lambda a, b: a @ b, a, b[:1])


def test_where_is_jnp_where():
    """A non-bool predicate is ``!= 0`` (select_n took it as an index: -1 picked the other
    case), and the three operands broadcast together."""
    p = np.array([1, -1, 0], np.int32)
    assert_as_jax(lambda p, x: lax.where(p, x, 2.0), p, X,
                  jax_f=lambda p, x: jnp.where(p, x, 2.0))
    col = np.array([[True], [False]])
    assert_as_jax(lambda c, x: lax.where(c, x, -x), col, X,
                  jax_f=lambda c, x: jnp.where(c, x, -x))
    assert_as_jax(lambda x: lax.where(x > 5, 1.0, 0.0), X,
                  jax_f=lambda x: jnp.where(x > 5, 1.0, 0.0))


def test_mistakes_jax_refuses_are_refused_not_wrapped_or_truncated():
    with pytest.raises(ValueError, match="axis 1 is out of bounds for an array of rank 1"):
        ours(lambda x: lax.reduce_sum(x, 1), X)
    with pytest.raises(ValueError, match="expand_dims: axis 5 is out of bounds"):
        ours(lambda x: lax.expand_dims(x, (5,)), X)
    with pytest.raises(TypeError, match="the Python float -3.5 cannot be a int32 operand"):
        ours(lambda i: lax.clamp(-3.5, i, 5.5), INTS)
    with pytest.raises(TypeError, match="the Python float 0.5 cannot be a int32 operand"):
        ours(lambda i: lax.pad(i, 0.5, [(1, 1, 0)]), INTS)


def test_departures_from_jax_refuse_or_promote_rather_than_lose_values():
    """Where jax promotes or refuses otherwise, lower.lax says so rather than computing in
    the left operand's type: a dot of two dtypes is refused (jax promotes it: convert one,
    or give preferred_element_type; it took the left dtype, bf16 from f32 x bf16), as its
    binary ops refuse two dtypes."""
    with pytest.raises(TypeError, match="dot_general of float32 and bfloat16: convert one"):
        ours(lambda a, b: lax.dot(a, b), np.ones((2, 2), np.float32),
             np.ones((2, 2), ml_dtypes.bfloat16))
    (got,) = ours(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())),
                                               preferred_element_type=np.float32),
                  np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(got, np.full((2, 2), 2, np.float32))


def test_a_float_scalar_beside_an_ml_dtypes_integer_promotes_not_truncates():
    """int4 + 2.5 took 2.5 as an int4 2 (ml_dtypes' kind letter is 'V'): it is a float32
    sum now, as for any integer array (a departure: jax refuses int4 + 2.5)."""
    q = np.array([1, -2], ml_dtypes.int4)
    (got,) = ours(lambda q: q + 2.5, q)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [3.5, 0.5])
