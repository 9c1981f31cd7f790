"""Our tracer against jax.jit on what a review of 2026-12-07 found it got wrong: a weak Python
scalar from a branch promoted down, gather's default mode, dynamic indices of mixed or narrow
integer types, reduce dimensions out of range. Each against the same function under jax.jit
on the same inputs: values, dtypes, and the error where jax refuses."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module


def ours(f, *args):
    return verify.run(lower_jaxpr_to_module("f", lax.make_jaxpr(f)(*args)).module, *args)


def _same(f_of, *args):
    got = ours(f_of(lax), *args)
    want = jax.jit(f_of(jax.lax))(*args)
    want = [np.asarray(w) for w in (want if isinstance(want, (list, tuple)) else [want])]
    assert [g.dtype for g in got] == [w.dtype for w in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("arr, branch", [
    (np.array([-7, 7], np.int32), (0.5, 1.5)),        # int32 + weak float: float32
    (np.array([1.0, 2.0], np.float32), (1j, 2j)),     # f32 * weak complex: complex64
    (np.array([True, False]), (0.5, 1.5)),            # bool + weak float: float32
    (np.array([1.5, 2.5], np.float16), (2.0, 3.0)),   # f16 + weak float: f16 (same kind)
])
def test_a_weak_scalar_from_a_branch_promotes_as_in_jax(arr, branch):
    a, b = branch
    _same(lambda L: lambda p, x: x * L.cond(p, lambda: a, lambda: b), np.bool_(True), arr)


def test_gather_s_default_mode_is_jax_s():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[0], [5], [-1]], np.int32)   # out of range: clamped, not filled

    def f_of(L):
        dn = L.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                      start_index_map=(0,))
        return lambda x, i: L.gather(x, i, dn, (1, 4))
    _same(f_of, x, idx)


def test_dynamic_indices_of_two_types_are_refused_as_jax_refuses_them():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    args = (x, np.int8(1), np.int32(2))
    for L in (jax.lax, lax):
        with pytest.raises(TypeError, match="must be integers of the same type"):
            f = (lambda L: lambda x, i, j: L.dynamic_slice(x, (i, j), (2, 2)))(L)
            if L is lax:
                lax.make_jaxpr(f)(*args)
            else:
                jax.jit(f)(*args)


def test_narrow_integer_indices_count_from_the_end_and_fit_long_dimensions():
    x = np.arange(6, dtype=np.float32)
    _same(lambda L: lambda x, i: L.dynamic_slice(x, (i,), (1,)), x,
          np.array(-2, ml_dtypes.int4))
    _same(lambda L: lambda x, i: L.dynamic_update_slice(x, x[:1] - 9 if L is jax.lax else
                                                        lax.sub(lax.slice(x, (0,), (1,)), 9.0),
                                                        (i,)),
          x, np.array(-2, ml_dtypes.int4))
    y = np.arange(300, dtype=np.float32)
    for i in (5, -3):   # (an int8 index into 300 rows: jax adds 300 wrapped to int8, 44)
        _same(lambda L: lambda y, i: L.dynamic_slice(y, (i,), (2,)), y, np.int8(i))


def test_reduce_dimensions_out_of_range_are_refused():
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    with pytest.raises(ValueError, match=r"reduce dimensions \(2,\)"):
        lax.make_jaxpr(lambda x: lax.reduce(x, np.int32(0), lax.add, (2,)))(x)
    with pytest.raises(Exception):  # (jax refuses it too)
        jax.jit(lambda x: jax.lax.reduce(x, np.int32(0), jax.lax.add, (2,)))(x)
