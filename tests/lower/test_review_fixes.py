"""Regressions found by reviewing the rules against JAX: each was a wrong result or a crash."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from lower import tracing as tr

F8 = np.array([1, -2, 3], ml_dtypes.float8_e4m3fn)


def run(closed, *args):
    return verify.run(lower_jaxpr_to_module("f", closed).module, *args)


def test_float8_without_inf_reductions_cumulative_and_argmax():
    """-inf is NaN in f8E4M3FN: identities must be its finite extremes."""
    outs = run(tr.make_jaxpr(lambda x: (tr.reduce_max(x), tr.reduce_min(x), lax.cummax(x, 0),
                                        lax.argmax(x, 0, np.int32)))(F8), F8)
    assert float(outs[0]) == 3 and float(outs[1]) == -2
    np.testing.assert_array_equal(outs[2].astype(np.float32), [1, 1, 3])
    assert int(outs[3]) == 2


def test_unsigned_reduce_and_and_sign():
    u = np.array([7, 3, 0], np.uint32)
    outs = run(tr.make_jaxpr(lambda x: (tr.reduce_and(x), tr.sign(x)))(u), u)
    assert int(outs[0]) == 0
    np.testing.assert_array_equal(outs[1], [1, 1, 0])


def test_python_scalars_promote_like_jax():
    i = np.array([1, 2], np.int32)
    outs = run(tr.make_jaxpr(lambda x: (x < 1.5, x * 0.5, x + 1))(i), i)
    np.testing.assert_array_equal(outs[0], [True, False])
    np.testing.assert_array_equal(outs[1], np.array([0.5, 1.0], np.float32))
    assert outs[2].dtype == np.int32


def test_abs_of_complex_is_real():
    z = np.array([3 + 4j], np.complex64)
    (out,) = run(tr.make_jaxpr(lambda v: tr.abs(v))(z), z)
    assert out.dtype == np.float32 and float(out[0]) == 5.0


def test_jax_jaxprs_literals_broadcasting_mixed_types():
    """Real JAX 0.10 jaxprs: unhashable typed literals, rank-0 operands of binary ops, pow with
    an int exponent, dot_general of mixed operand types with a preferred type."""
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    x = np.array([1, 2, 3], np.int32)
    f = np.array([2.0, 3.0], np.float32)
    e = np.array([3, 2], np.int32)
    a = np.arange(6, dtype=np.int8).reshape(2, 3)
    w = np.ones((3, 2), ml_dtypes.bfloat16)
    cases = [
        (lambda v: jlax.shift_left(v, 3), (x,), [x << 3]),
        (lambda v, u: jlax.pow(v, u), (f, e), [f ** e]),
        (lambda p, q: jlax.dot_general(p, q, (((1,), (0,)), ((), ())),
                                       preferred_element_type=np.float32), (a, w),
         [a.astype(np.float32) @ w.astype(np.float32)]),
    ]
    for fn, args, want in cases:
        closed = jax.make_jaxpr(fn)(*args)
        got = run(closed, *args)
        for g, w_ in zip(got, want):
            np.testing.assert_allclose(g, w_)
