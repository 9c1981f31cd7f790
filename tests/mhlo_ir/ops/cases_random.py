"""Cases for random ops. Their values cannot be predicted from numpy, so each case has a custom
``run``: shapes, dtypes, ranges and simple statistics for rng; determinism for
rng_bit_generator (same key, same bits; other key, other bits); the state arithmetic of
xla.rng_get_and_update_state."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
import verify
from tests.mhlo_ir.ops.cases import case, module

T = hlo.tensor


def _scalar(dtype):
    return T((), hlo.from_numpy(np.dtype(dtype)))


# -- rng -------------------------------------------------------------------------------------

def _rng_module(dtype, shape, distribution):
    return module([_scalar(dtype), _scalar(dtype)],
                  lambda b, lo, hi: b.rng(lo, hi, shape, distribution))


def _build_uniform_f32():
    return _rng_module(np.float32, (64, 32), "UNIFORM"), [np.float32(-2), np.float32(3)]


def _run_uniform_f32():
    m, args = _build_uniform_f32()
    (out,) = verify.run(m, *args)
    assert out.shape == (64, 32) and out.dtype == np.float32
    assert (out >= -2).all() and (out < 3).all(), (out.min(), out.max())
    assert abs(out.mean() - 0.5) < 0.2, out.mean()     # 2048 samples of U[-2, 3): sd ~0.03
    assert len(np.unique(out)) > 2000                   # not constant


case("rng", "f32_uniform", run=_run_uniform_f32)(_build_uniform_f32)


def _build_uniform_i32():
    return _rng_module(np.int32, (1000,), "UNIFORM"), [np.int32(5), np.int32(9)]


def _run_uniform_i32():
    m, args = _build_uniform_i32()
    (out,) = verify.run(m, *args)
    assert out.shape == (1000,) and out.dtype == np.int32
    assert set(np.unique(out)) == {5, 6, 7, 8}, np.unique(out)   # [a, b): 9 never appears


case("rng", "i32_uniform", run=_run_uniform_i32)(_build_uniform_i32)


def _build_normal_f64():
    return _rng_module(np.float64, (50, 40), "NORMAL"), [np.float64(10), np.float64(2)]


def _run_normal_f64():
    m, args = _build_normal_f64()
    (out,) = verify.run(m, *args)
    assert out.shape == (50, 40) and out.dtype == np.float64
    assert np.isfinite(out).all()
    assert abs(out.mean() - 10) < 0.3, out.mean()       # 2000 samples: sd of the mean ~0.045
    assert abs(out.std() - 2) < 0.3, out.std()


case("rng", "f64_normal", run=_run_normal_f64)(_build_normal_f64)


# -- rng_bit_generator ---------------------------------------------------------------------

def _rbg_builder(algorithm, state_shape, shape, et):
    def build():
        m = module([T(state_shape, hlo.ui64)],
                   lambda b, s: list(b.rng_bit_generator(s, shape, et, algorithm)))
        return m, [np.arange(1, state_shape[0] + 1, dtype=np.uint64)]

    def run():
        m, (key,) = build()
        exe = verify.compile(m)
        s1, bits1 = exe(key)
        s2, bits2 = exe(key)
        other_state, other = exe(key + np.uint64(1000))
        assert bits1.shape == tuple(shape) and bits1.dtype == et.dtype
        assert s1.shape == key.shape and s1.dtype == np.uint64
        np.testing.assert_array_equal(bits1, bits2)          # deterministic in the key
        np.testing.assert_array_equal(s1, s2)
        assert not np.array_equal(bits1, other)               # and depends on it
        assert not np.array_equal(s1, key)                    # the state advances
        assert len(np.unique(bits1)) > bits1.size // 2        # looks random
    return build, run


for _alg, _state, _shape, _et in (("THREE_FRY", (2,), (4, 8), hlo.ui32),
                                  ("PHILOX", (3,), (16,), hlo.ui64),
                                  ("DEFAULT", (2,), (3, 5), hlo.ui32)):
    _b, _r = _rbg_builder(_alg, _state, _shape, _et)
    case("rng_bit_generator", f"{_alg.lower()}_{_et.name}", run=_r)(_b)


# -- xla.rng_get_and_update_state --------------------------------------------------------------

def _build_state():
    return module([], lambda b: b.rng_get_and_update_state(7)), []


def _run_state():
    # XLA keeps one global state per process; each execution returns it and adds delta to it.
    m, _ = _build_state()
    exe = verify.compile(m)
    (a,) = exe()
    (c,) = exe()
    assert a.shape == (2,) and a.dtype == np.uint64
    assert int(c[0]) - int(a[0]) == 7 and c[1] == a[1], (a, c)


case("xla.rng_get_and_update_state", "delta_7", run=_run_state)(_build_state)
