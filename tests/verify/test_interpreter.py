"""StableHLO's reference interpreter as a second executor: it agrees with numpy on programs of
every element type (inputs and results cross the bindings as printed dense attributes), takes
complex numbers through its real/imaginary wrapper, runs chlo programs through XLA's HLO, and
refuses up front the ops it would abort the process on."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from verify.interpreter import InterpreterUnsupported, interpret, route_of

T = hlo.tensor


def _module(arg_types, body):
    m = hlo.Module()
    f = m.add_function("main", list(arg_types), visibility="public")
    b = f.builder()
    out = body(b, *f.arguments)
    b.return_(*(out if isinstance(out, (list, tuple)) else [out]))
    return m


def _bits(a):
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


@pytest.mark.parametrize("et", hlo.ALL_ELEMENT_TYPES, ids=lambda t: t.name)
def test_every_element_type_crosses_both_ways_bit_for_bit(et):
    rng = np.random.default_rng(0)
    t = T((2, 3), et)
    x = rng.integers(0, 256, size=t.num_elements * et.dtype.itemsize, dtype=np.uint8)
    x = x.view(et.dtype).reshape(t.shape)
    if et.bits < 8 or et.kind == "bool":  # sub-byte and i1: only the meaningful bits
        x = np.zeros(t.shape, et.dtype)
        x.reshape(-1)[:] = np.arange(t.num_elements) % 2
    m = _module([t], lambda b, a: [b.reverse(a, [1]), a])
    rev, same = interpret(m, x)
    assert same.dtype == x.dtype and _bits(same).tolist() == _bits(x).tolist()
    assert _bits(rev).tolist() == _bits(x[:, ::-1]).tolist()


def test_integer_arithmetic_wraps_as_numpy_does():
    t = T((4,), hlo.i8)
    m = _module([t], lambda b, x: b.abs(b.multiply(x, x)))
    x = np.array([-101, 3, -128, 127], np.int8)
    (got,) = interpret(m, x)
    want = np.abs((x.astype(np.int64) ** 2).astype(np.int8))  # wraps, then abs of -39 is 39
    np.testing.assert_array_equal(got, want)
    assert got[0] == 39


def test_integer_power_wraps():
    t = T((3,), hlo.i32)
    m = _module([t, t], lambda b, x, y: b.power(x, y))
    x, y = np.array([3, 2, -1], np.int32), np.array([64, 31, 7], np.int32)
    (got,) = interpret(m, x, y)
    want = [np.int32(np.uint32(pow(int(a), int(e), 2 ** 32)).view(np.int32)) if a >= 0 else
            np.int32(-1) for a, e in zip(x, y)]
    np.testing.assert_array_equal(got, np.array(want, np.int32))


def test_sub_byte_popcount_counts_the_type_bits():
    t = T((4,), hlo.i4)
    m = _module([t], lambda b, x: b.popcnt(x))
    x = np.array([-8, -2, 7, 1], ml_dtypes.int4)
    (got,) = interpret(m, x)
    assert got.astype(int).tolist() == [1, 3, 3, 1]  # 0b1000, 0b1110, 0b0111, 0b0001


def test_complex_arguments_and_results():
    t = T((3,), hlo.complex64)
    m = _module([t, T((), hlo.complex64)], lambda b, x, s: [
        b.multiply(x, b.broadcast_in_dim(s, (3,), ())), b.real(x)])
    x = np.array([1 + 2j, -3j, np.inf + 0j], np.complex64)
    s = np.complex64(0.5 - 1j)
    prod, re = interpret(m, x, s)
    np.testing.assert_allclose(prod[:2], x[:2] * s, rtol=1e-6)
    assert prod.dtype == np.complex64 and re.dtype == np.float32
    np.testing.assert_array_equal(re, x.real)


def test_chlo_programs_go_through_xla_and_agree_with_it():
    t = T((5,), hlo.f32)
    m = _module([t], lambda b, x: b.chlo_lgamma(x))
    assert route_of(m) == "hlo"
    x = np.array([0.5, 1.0, 2.5, 7.0, 30.0], np.float32)
    (got,) = interpret(m, x)
    (xla,) = verify.run(m, x)
    np.testing.assert_allclose(got, xla, rtol=1e-5)
    from math import lgamma
    np.testing.assert_allclose(got, [lgamma(v) for v in x], rtol=1e-5, atol=1e-6)


def test_ops_it_would_abort_on_are_refused_up_front():
    t = T((2,), hlo.f32)
    with pytest.raises(InterpreterUnsupported, match="mhlo.erf"):
        interpret(_module([t], lambda b, x: b.erf(x)), np.zeros(2, np.float32))
    v = T((2, 3), hlo.f32)
    with pytest.raises(InterpreterUnsupported, match="batch_norm_inference"):
        interpret(_module([v], lambda b, x: b.batch_norm_inference(
            x, *[b.constant(np.ones(3, np.float32))] * 4, epsilon=0.1, feature_index=1)),
            np.zeros((2, 3), np.float32))
    # (create_token, add_dependency and topk, once refused here, are written out first now:
    # tests/mhlo_ir/test_decompose.py)


def test_loops_and_calls():
    t = T((), hlo.i32)

    def body(b, x):
        out = b.while_([x, x], lambda r, i, a: r.compare(i, r.constant(np.int32(5)), "LT"),
                       lambda r, i, a: [r.add(i, r.constant(np.int32(1))), r.multiply(a, i)])
        return out[1]
    m = _module([t], body)
    (got,) = interpret(m, np.int32(1))
    assert int(got) == 24  # 1*1*2*3*4


def test_arguments_are_checked_as_run_checks_them():
    """The interpreter only fails ("interpreter failed", the reason on stderr) on arguments
    that do not fit, and a complex program dropped extra ones: both say why, as run does."""
    for et, value in ((hlo.f32, np.float32(1.5)), (hlo.complex64, np.complex64(1 + 2j))):
        m = hlo.Module("a")
        f = m.add_function("main", [hlo.tensor((2,), et)], visibility="public")
        f.builder().return_(f.arguments[0])
        x = np.full(2, value)
        for bad, why in [((), "takes 1 arguments, got 0"), ((x, x), "takes 1 arguments, got 2"),
                         ((x[:1],), r"argument 0: expected shape \(2,\)"),
                         ((x.astype(np.complex128 if et is hlo.complex64 else np.float64),),
                          "argument 0: expected dtype")]:
            for source in (m, m.to_text()):
                with pytest.raises(verify.ArgumentError, match=why):
                    verify.interpret(source, *bad)
        np.testing.assert_array_equal(verify.interpret(m, x)[0], x)
    m = hlo.Module("s")
    f = m.add_function("main", [hlo.tensor((), hlo.f32)], visibility="public")
    f.builder().return_(f.arguments[0])
    assert verify.interpret(m, 2.5)[0] == np.float32(2.5)  # (a Python scalar, as run takes)
