"""Elementwise ops run through jaxlib against independent references.

Integer ops are compared exactly against Python-integer arithmetic wrapped to the type's width
(XLA semantics: two's complement wraparound, division truncating toward zero, shifts by an
amount >= the bit width (read as unsigned) give 0, or the sign fill for arithmetic shifts).
Float ops that IEEE rounds correctly (+ - * / sqrt, rounding, min/max, fmod...) are compared
exactly against the float64 result rounded to the dtype, which is the correctly rounded result
for f16/bf16/f32 because float64 carries more than 2p+2 bits. Transcendental ops are compared
with a relative tolerance per dtype (TOL below) against float64 numpy.

Programs are compiled once and cached in ``_EXES``, keyed by (op, dtypes, shape); hypothesis
then runs many examples through each. XLA compilation dominates the cost here (~50 ms per tiny
program on this machine, against ~1 ms per run), so one program holds an op for every dtype of
its family (``run_op`` feeds ones to the dtypes not under test): that is one compile per op
rather than per (op, dtype), while each (op, dtype) is still its own test.

Arrays are drawn as raw bytes (one draw per array, every bit pattern possible, shrinking toward
zeros), plus a few edge values (min/max, zero, -1, inf, NaN...) in hypothesis-chosen order.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mhlo_ir as hlo
import verify
from mhlo_ir.builder import _method_name
from mhlo_ir.ops.elementwise import BINARY, UNARY

T = hlo.tensor
SHAPE = (16,)
N_EDGE = 4  # the last N_EDGE elements of each drawn array are edge values
_EXES: dict = {}


def program(key, arg_types, build):
    """The compiled program for ``key`` (op, dtype names, shape): built and compiled once."""
    exe = _EXES.get(key)
    if exe is None:
        m = hlo.Module("elementwise")
        f = m.add_function("main", list(arg_types), visibility="public")
        b = f.builder()
        out = build(b, *f.arguments)
        b.return_(*((out,) if isinstance(out, hlo.Value) else out))
        exe = _EXES[key] = verify.compile(m)
    return exe


def run_op(op, et, *arrays, group=None):
    """Run elementwise ``op`` on ``arrays`` (of element type ``et``); returns its result.

    The program computes ``op`` for every element type of ``group`` (by default: those of et's
    family the op accepts); the other types get arrays of ones.
    """
    meth = _method_name(op)
    shape = arrays[0].shape
    if group is None:
        family = FLOAT_TYPES if et in FLOAT_TYPES else INT_TYPES if et in INT_TYPES else [et]
        group = [e for e in family if _accepts(op, e)]
    group = tuple(group)
    n = len(arrays)

    def build(b, *xs):
        return [getattr(b, meth)(*xs[i * n:(i + 1) * n]) for i in range(len(group))]

    exe = program((op, tuple(e.name for e in group), shape),
                  [T(shape, e) for e in group for _ in range(n)], build)
    args = []
    for e in group:
        args.extend(arrays if e is et else [np.ones(shape, e.dtype)] * n)
    return exe(*args)[group.index(et)]


def _bits(dtype, n):
    """Arrays of ``n`` elements of ``dtype`` from raw bytes: any bit pattern, shrinks to 0."""
    dt = np.dtype(dtype)
    return st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize).map(
        lambda b: np.frombuffer(b, dt).copy())


def _with_edges(dtype, edges):
    """SHAPE elements: random bits, then N_EDGE of ``edges`` in a drawn order."""
    dt = np.dtype(dtype)
    return st.tuples(_bits(dt, SHAPE[0] - N_EDGE),
                     st.lists(st.sampled_from(edges), min_size=N_EDGE, max_size=N_EDGE)).map(
        lambda p: np.concatenate([p[0], np.array(p[1], dtype=dt)]))


# -- integers: exact, against Python ints ---------------------------------------------------------

INT_TYPES = [hlo.i8, hlo.i32, hlo.ui16, hlo.i64]


def _wrap(v: int, et) -> int:
    v &= (1 << et.bits) - 1
    if et.kind == "sint" and v >> (et.bits - 1):
        v -= 1 << et.bits
    return v


def _unsigned(v: int, et) -> int:
    return v & ((1 << et.bits) - 1)


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _shift(kind):
    def ref(a, s, et):
        n = _unsigned(s, et)
        if kind == "left":
            return 0 if n >= et.bits else a << n
        if kind == "logical":
            return 0 if n >= et.bits else _unsigned(a, et) >> n
        signed = _wrap(a, hlo.dtypes.element_type(f"i{et.bits}"))  # the bits read as signed
        return signed >> min(n, et.bits - 1)
    return ref


INT_BINARY = {
    "add": lambda a, b, et: a + b,
    "subtract": lambda a, b, et: a - b,
    "multiply": lambda a, b, et: a * b,
    "and": lambda a, b, et: a & b,
    "or": lambda a, b, et: a | b,
    "xor": lambda a, b, et: a ^ b,
    "maximum": lambda a, b, et: max(a, b),
    "minimum": lambda a, b, et: min(a, b),
    "divide": lambda a, b, et: _trunc_div(a, b),
    "remainder": lambda a, b, et: a - b * _trunc_div(a, b),
    "shift_left": _shift("left"),
    "shift_right_logical": _shift("logical"),
    "shift_right_arithmetic": _shift("arithmetic"),
    "power": lambda a, b, et: a ** b,
}

INT_UNARY = {
    "negate": lambda a, et: -a,
    "not": lambda a, et: ~a,
    "abs": lambda a, et: abs(a),
    "sign": lambda a, et: (a > 0) - (a < 0),
    "popcnt": lambda a, et: bin(_unsigned(a, et)).count("1"),
    "count_leading_zeros": lambda a, et: et.bits - _unsigned(a, et).bit_length(),
}


def _int_array(et):
    info = np.iinfo(et.dtype)
    # Edges, where wraparound happens: min, max, 0, 1 and all-ones (-1 or the unsigned max).
    return _with_edges(et.dtype, [int(info.min), int(info.max), 0, 1, int(info.max) if
                                  et.kind == "uint" else -1])


def _small(a, et, n):
    """``a``'s bits read as unsigned, modulo ``n``: values in [0, n)."""
    u = a.view(np.dtype(f"u{a.dtype.itemsize}"))
    return (u % n).astype(et.dtype)


def _reference(fn, et, *arrays):
    out = [fn(*[int(a[i]) for a in arrays], et) for i in range(arrays[0].size)]
    return np.array([_wrap(v, et) for v in out], dtype=et.dtype).reshape(arrays[0].shape)


def _int_cases(table):
    return [pytest.param(op, et, id=f"{op}-{et.name}") for op in table for et in INT_TYPES
            if _accepts(op, et)]


def _accepts(op, et):
    kinds = (UNARY.get(op) or BINARY.get(op))[0]
    return et.kind in kinds


@pytest.mark.parametrize("op,et", _int_cases(INT_BINARY))
@settings(max_examples=10)
@given(data=st.data())
def test_integer_binary_exact(op, et, data):
    x = data.draw(_int_array(et), label="lhs")
    y = data.draw(_int_array(et), label="rhs")
    if op in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        # Even positions: amounts in [0, bits + 2]; odd ones keep any bits, so mostly out of
        # range (>= bits, or negative, which XLA reads as a huge unsigned amount).
        y[::2] = _small(y[::2], et, et.bits + 3)
    elif op == "power":
        y = _small(y, et, 10)  # XLA's integer power of a negative exponent is not numpy's
    if op in ("divide", "remainder"):
        # Nonzero divisors, and no signed INT_MIN / -1 (both implementation-defined in XLA).
        y = np.where(y == 0, np.ones_like(y), y)
        if et.kind == "sint":
            bad = (x == np.iinfo(et.dtype).min) & (y == np.array(-1).astype(et.dtype))
            y = np.where(bad, np.ones_like(y), y)
    got = run_op(op, et, x, y)
    want = _reference(INT_BINARY[op], et, x, y)
    np.testing.assert_array_equal(got, want, err_msg=f"{op} {et.name}: x={x!r} y={y!r}")
    assert got.dtype == et.dtype


@pytest.mark.parametrize("op,et", _int_cases(INT_UNARY))
@settings(max_examples=10)
@given(data=st.data())
def test_integer_unary_exact(op, et, data):
    x = data.draw(_int_array(et), label="x")
    got = run_op(op, et, x)
    want = _reference(INT_UNARY[op], et, x)
    np.testing.assert_array_equal(got, want, err_msg=f"{op} {et.name}: x={x!r}")
    assert got.dtype == et.dtype


BOOL_OPS = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
            "maximum": np.logical_or, "minimum": np.logical_and}


@settings(max_examples=10)
@given(x=_bits(np.uint8, SHAPE[0]), y=_bits(np.uint8, SHAPE[0]))
def test_i1_logic(x, y):
    """i1 (PRED): and/or/xor/not are the logical ones; max is or, min is and."""
    p, q = (x & 1).astype(np.bool_), (y & 1).astype(np.bool_)
    exe = program(("i1_logic", "i1", SHAPE), [T(SHAPE, hlo.i1)] * 2,
                  lambda b, p, q: [getattr(b, _method_name(op))(p, q) for op in BOOL_OPS]
                  + [b.not_(p)])
    outs = exe(p, q)
    for (op, fn), got in zip(BOOL_OPS.items(), outs):
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, fn(p, q), err_msg=op)
    np.testing.assert_array_equal(outs[-1], ~p)


def test_integer_semantics_hand_derived():
    """A few values worked out by hand, so the Python reference itself is checked too."""
    i8 = hlo.i8
    a = np.array([127, -128, -7, 7, -7, 5, -1, 64], np.int8)
    b = np.array([1, -1, 2, -2, -2, 9, 1, 2], np.int8)
    np.testing.assert_array_equal(run_op("add", i8, a, b, group=[i8]),
                                  np.array([-128, 127, -5, 5, -9, 14, 0, 66], np.int8))
    d = np.array([7, -7, 7, -7, 1, 0, 100, -100], np.int8)
    e = np.array([2, 2, -2, -2, 3, 5, 7, 7], np.int8)
    np.testing.assert_array_equal(run_op("divide", i8, d, e, group=[i8]),
                                  np.array([3, -3, -3, 3, 0, 0, 14, -14], np.int8))
    np.testing.assert_array_equal(run_op("remainder", i8, d, e, group=[i8]),
                                  np.array([1, -1, 1, -1, 1, 0, 2, -2], np.int8))
    s = np.array([1, 7, 8, 9, -1, 0, 3, 100], np.int8)
    x = np.full(8, -96, np.int8)  # 0b10100000
    np.testing.assert_array_equal(run_op("shift_left", i8, x, s, group=[i8]),
                                  np.array([64, 0, 0, 0, 0, -96, 0, 0], np.int8))
    np.testing.assert_array_equal(run_op("shift_right_logical", i8, x, s, group=[i8]),
                                  np.array([80, 1, 0, 0, 0, -96, 20, 0], np.int8))
    np.testing.assert_array_equal(run_op("shift_right_arithmetic", i8, x, s, group=[i8]),
                                  np.array([-48, -1, -1, -1, -1, -96, -12, -1], np.int8))
    np.testing.assert_array_equal(run_op("count_leading_zeros", i8, s, group=[i8]),
                                  np.array([7, 5, 4, 4, 0, 8, 6, 1], np.int8))
    np.testing.assert_array_equal(run_op("popcnt", i8, s, group=[i8]),
                                  np.array([1, 3, 1, 2, 8, 0, 2, 3], np.int8))


# -- floats -------------------------------------------------------------------------------------

FLOAT_TYPES = [hlo.f16, hlo.bf16, hlo.f32, hlo.f64]

# Relative tolerance per dtype for transcendental ops: a few units in the last place of the
# type (f16 eps ~ 9.8e-4, bf16 eps ~ 7.8e-3, f32 eps ~ 1.2e-7, f64 eps ~ 2.2e-16).
TOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 1e-5, "f64": 1e-12, "complex<f32>": 1e-5}


def _as_f64(a):
    return a.astype(np.float64)


def _round_afz(x):
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0)


# op: (reference on float64, input range). Correctly rounded ops, compared exactly.
FLOAT_EXACT_UNARY = {
    "negate": np.negative, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
    "round_nearest_even": np.rint, "round_nearest_afz": _round_afz, "sqrt": np.sqrt,
    "sign": np.sign, "is_finite": np.isfinite, "real": lambda x: x,
    "imag": np.zeros_like,
}
FLOAT_EXACT_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "remainder": np.fmod,
}
# op: (reference, low, high, absolute-tolerance scale): atol = TOL * scale, for outputs that
# cross zero, where a relative tolerance means nothing.
FLOAT_APPROX_UNARY = {
    "exponential": (np.exp, -10, 10, 0),
    "exponential_minus_one": (np.expm1, -10, 10, 0),
    "log": (np.log, 1e-3, 1e3, 1),
    "log_plus_one": (np.log1p, -0.9, 100, 0),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), -20, 20, 0.01),
    "tanh": (np.tanh, -10, 10, 0),
    "sine": (np.sin, -10, 10, 1),
    "cosine": (np.cos, -10, 10, 1),
    "tan": (np.tan, -1.4, 1.4, 1),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 1e-3, 1e3, 0),
    "cbrt": (np.cbrt, -100, 100, 0),
}
FLOAT_APPROX_BINARY = {
    "atan2": (np.arctan2, -10, 10, 1),
    "power": (np.power, 0.1, 10, 0),
}


def _float_array(et, lo=None, hi=None, special=True, subnormal=True):
    """Arrays of ``et``: any bits plus edge values, or uniform in [lo, hi] when bounded.

    ``special=False`` replaces NaN and infinities by 0. Subnormal inputs are flushed to zero
    except for f16 when ``subnormal`` (f16 subnormals are normal in the f32 that XLA's CPU
    backend computes f16 in): XLA's CPU backend flushes denormals to zero.
    """
    dt = et.dtype
    if lo is None:
        edges = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, float(ml_dtypes.finfo(dt).max)]
        strat = _with_edges(dt, edges)
    else:
        ubits = 64 if et is hlo.f64 else 32
        strat = _bits(np.dtype(f"u{ubits // 8}"), SHAPE[0]).map(
            lambda u: _cast((lo + (u / 2.0 ** ubits) * (hi - lo)).astype(
                np.float64 if ubits == 64 else np.float32), et))

    def fix(a):
        with np.errstate(all="ignore"):
            return _fix(a)

    def _fix(a):
        if not special:
            a = np.where(np.isfinite(a.astype(np.float64)), a, np.zeros_like(a))
        if not (subnormal and et is hlo.f16):
            a64 = a.astype(np.float64)
            a = _cast(_flush_denormals(a64, et), et)
        return a
    return strat.map(fix)


def _cast(a, et):
    with np.errstate(all="ignore"):
        return a.astype(et.dtype)


def _float_cases(table):
    return [pytest.param(op, et, id=f"{op}-{et.name}") for op in table for et in FLOAT_TYPES
            if _accepts(op, et)]


def _flush_denormals(want64, et):
    """XLA's CPU backend computes with denormals flushed to zero (f16 and bf16 in f32): a
    result below the computation type's smallest normal comes back as a zero of its sign."""
    tiny = np.finfo(np.float64 if et is hlo.f64 else np.float32).tiny
    return np.where(np.abs(want64) < tiny, np.copysign(0.0, want64), want64)


def _exact_compare(got, want64, et, msg):
    if want64.dtype == np.bool_:
        assert got.dtype == np.bool_, msg
        np.testing.assert_array_equal(got, want64, err_msg=msg)
        return
    assert got.dtype == et.dtype, msg
    # f16/bf16 compared in f32 (exactly: widening is exact). Where the exact result is a
    # denormal of the computation type, XLA gives it or (flushing, as its CPU arithmetic does)
    # a zero of its sign; library calls such as fmod do not flush.
    got = got.astype(np.float64)
    raw = _cast(want64, et).astype(np.float64)
    flushed = _cast(_flush_denormals(want64, et), et).astype(np.float64)
    want = np.where(got == flushed, flushed, raw)
    np.testing.assert_array_equal(got, want, err_msg=msg)


@pytest.mark.parametrize("op,et", _float_cases(FLOAT_EXACT_BINARY))
@settings(max_examples=10)
@given(data=st.data())
def test_float_binary_correctly_rounded(op, et, data):
    x = data.draw(_float_array(et, special=True), label="lhs")
    y = data.draw(_float_array(et, special=True), label="rhs")
    with np.errstate(all="ignore"):
        want = FLOAT_EXACT_BINARY[op](_as_f64(x), _as_f64(y))
    _exact_compare(run_op(op, et, x, y), want, et, f"{op} {et.name}: x={x!r} y={y!r}")


@pytest.mark.parametrize("op,et", _float_cases(FLOAT_EXACT_UNARY))
@settings(max_examples=10)
@given(data=st.data())
def test_float_unary_correctly_rounded(op, et, data):
    x = data.draw(_float_array(et), label="x")
    if op == "sqrt":
        x = np.abs(x)
    with np.errstate(all="ignore"):
        want = FLOAT_EXACT_UNARY[op](_as_f64(x))
    _exact_compare(run_op(op, et, x), want, et, f"{op} {et.name}: x={x!r}")


@pytest.mark.parametrize("op,et", _float_cases(FLOAT_APPROX_UNARY))
@settings(max_examples=10)
@given(data=st.data())
def test_float_unary_within_tolerance(op, et, data):
    fn, lo, hi, ascale = FLOAT_APPROX_UNARY[op]
    x = data.draw(_float_array(et, lo, hi, subnormal=False), label="x")
    got = run_op(op, et, x)
    assert got.dtype == et.dtype
    tol = TOL[et.name]
    np.testing.assert_allclose(got.astype(np.float64), fn(_as_f64(x)), rtol=tol,
                               atol=tol * ascale, err_msg=f"{op} {et.name}: x={x!r}")


@pytest.mark.parametrize("op,et", _float_cases(FLOAT_APPROX_BINARY))
@settings(max_examples=10)
@given(data=st.data())
def test_float_binary_within_tolerance(op, et, data):
    fn, lo, hi, ascale = FLOAT_APPROX_BINARY[op]
    x = data.draw(_float_array(et, lo, hi, subnormal=False), label="lhs")
    y = data.draw(_float_array(et, -3 if op == "power" else lo, 3 if op == "power" else hi,
                               subnormal=False), label="rhs")
    got = run_op(op, et, x, y)
    tol = TOL[et.name]
    # power amplifies the input's rounding error; compare against the exact inputs anyway.
    np.testing.assert_allclose(got.astype(np.float64), fn(_as_f64(x), _as_f64(y)), rtol=tol,
                               atol=tol * ascale, err_msg=f"{op} {et.name}: x={x!r} y={y!r}")


def test_float_hand_derived_values():
    f32 = hlo.f32
    x = np.array([2.5, -2.5, 0.5, -0.5, 1.5, 3.7, -0.0, np.inf], np.float32)
    np.testing.assert_array_equal(run_op("round_nearest_even", f32, x, group=[f32]),
                                  [2, -2, 0, -0.0, 2, 4, -0.0, np.inf])
    np.testing.assert_array_equal(run_op("round_nearest_afz", f32, x, group=[f32]),
                                  [3, -3, 1, -1, 2, 4, -0.0, np.inf])
    y = np.array([np.nan, 1, -np.inf, 0, -0.0, 5, np.inf, 2], np.float32)
    np.testing.assert_array_equal(run_op("is_finite", f32, y, group=[f32]),
                                  [False, True, False, True, True, True, False, True])
    np.testing.assert_array_equal(run_op("maximum", f32, x, y, group=[f32]),
                                  [np.nan, 1, 0.5, 0, 1.5, 5, np.inf, np.inf])


# -- complex64 ----------------------------------------------------------------------------------

C64 = hlo.complex64
COMPLEX_UNARY = {
    "negate": np.negative, "exponential": np.exp, "log": np.log, "sqrt": np.sqrt,
    "abs": np.abs, "real": np.real, "imag": np.imag, "sine": np.sin, "cosine": np.cos,
    "tanh": np.tanh,
}
COMPLEX_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                  "divide": np.divide}


def _complex_array():
    part = _float_array(hlo.f32, -3, 3)
    return st.tuples(part, part).map(lambda p: (p[0] + 1j * p[1]).astype(np.complex64))


@pytest.mark.parametrize("op", sorted(COMPLEX_UNARY))
@settings(max_examples=10)
@given(x=_complex_array())
def test_complex_unary(op, x):
    if op == "log":
        x = np.where(x == 0, np.complex64(1), x)
    got = run_op(op, C64, x)
    want = COMPLEX_UNARY[op](x.astype(np.complex128))
    assert got.dtype == (np.float32 if op in ("abs", "real", "imag") else np.complex64)
    np.testing.assert_allclose(got, want, rtol=TOL["complex<f32>"], atol=1e-5,
                               err_msg=f"{op}: x={x!r}")


@pytest.mark.parametrize("op", sorted(COMPLEX_BINARY))
@settings(max_examples=10)
@given(x=_complex_array(), y=_complex_array())
def test_complex_binary(op, x, y):
    if op == "divide":
        y = np.where(np.abs(y) < 1e-2, np.complex64(1), y)
    got = run_op(op, C64, x, y)
    want = COMPLEX_BINARY[op](x.astype(np.complex128), y.astype(np.complex128))
    np.testing.assert_allclose(got, want, rtol=TOL["complex<f32>"], atol=1e-5,
                               err_msg=f"{op}: x={x!r} y={y!r}")


@settings(max_examples=10)
@given(re=_float_array(hlo.f32), im=_float_array(hlo.f32))
def test_complex_from_parts_is_exact(re, im):
    got = run_op("complex", hlo.f32, re, im, group=[hlo.f32])
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got.real, re)
    np.testing.assert_array_equal(got.imag, im)


# -- compare, select, clamp, convert ------------------------------------------------------------

DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")
NP_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
              "GT": np.greater, "LE": np.less_equal, "LT": np.less}


def _compare_all(et, compare_type=None):
    return program(("compare", et.name, SHAPE, compare_type), [T(SHAPE, et)] * 2,
                   lambda b, x, y: [b.compare(x, y, d, compare_type) for d in DIRECTIONS])


@pytest.mark.parametrize("et", [hlo.i8, hlo.ui16, hlo.i64, hlo.f32, hlo.bf16],
                         ids=lambda e: e.name)
@settings(max_examples=15)
@given(data=st.data())
def test_compare_every_direction(et, data):
    if et.kind == "float":
        x = data.draw(_float_array(et, special=True))
        # Equal pairs happen rarely by chance: copy some lhs values into rhs.
        y = data.draw(_float_array(et, special=True))
        y[::3] = x[::3]
    else:
        x, y = data.draw(_int_array(et)), data.draw(_int_array(et))
        y[::3] = x[::3]
    outs = _compare_all(et)(x, y)
    for d, got in zip(DIRECTIONS, outs):
        assert got.dtype == np.bool_
        with np.errstate(invalid="ignore"):
            want = NP_COMPARE[d](x.astype(np.float64) if et.kind == "float" else x,
                                 y.astype(np.float64) if et.kind == "float" else y)
        np.testing.assert_array_equal(got, want, err_msg=f"{d} {et.name}: x={x!r} y={y!r}")


def _total_order_key(a):
    i = a.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF) - 1, i)


@settings(max_examples=15)
@given(x=_bits(np.float32, SHAPE[0]), y=_bits(np.float32, SHAPE[0]))
def test_compare_totalorder_f32(x, y):
    """TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN, by the bits."""
    y[::3] = -x[::3]
    outs = _compare_all(hlo.f32, "TOTALORDER")(x, y)
    kx, ky = _total_order_key(x), _total_order_key(y)
    for d, got in zip(DIRECTIONS, outs):
        np.testing.assert_array_equal(got, NP_COMPARE[d](kx, ky), err_msg=f"{d} x={x!r} y={y!r}")


def test_compare_totalorder_hand_derived():
    x = np.tile(np.array([-0.0, np.nan, -np.nan, 1, np.inf, 0.0, 1, 2], np.float32), 2)
    y = np.tile(np.array([0.0, np.inf, -np.inf, np.nan, np.nan, -0.0, 1, 1], np.float32), 2)
    lt = _compare_all(hlo.f32, "TOTALORDER")(x, y)[DIRECTIONS.index("LT")]
    np.testing.assert_array_equal(lt, np.tile([True, False, True, True, True, False, False,
                                               False], 2))
    lt_float = _compare_all(hlo.f32, "FLOAT")(x, y)[DIRECTIONS.index("LT")]
    np.testing.assert_array_equal(lt_float, np.zeros(16, np.bool_))


@pytest.mark.parametrize("et", [hlo.i32, hlo.f32, hlo.bf16], ids=lambda e: e.name)
@settings(max_examples=15)
@given(data=st.data())
def test_select_and_clamp(et, data):
    draw = (lambda: data.draw(_float_array(et, -100, 100))) if et.kind == "float" else \
        (lambda: data.draw(_int_array(et)))
    p = data.draw(_bits(np.uint8, SHAPE[0]).map(lambda a: (a & 1).astype(np.bool_)))
    x, y, lo, hi = draw(), draw(), draw(), draw()
    exe = program(("select_clamp", et.name, SHAPE), [T(SHAPE, hlo.i1), T((), hlo.i1)]
                  + [T(SHAPE, et)] * 4 + [T((), et)] * 2,
                  lambda b, p, s, x, y, lo, hi, slo, shi: [
                      b.select(p, x, y), b.select(s, x, y), b.clamp(lo, x, hi),
                      b.clamp(slo, x, shi)])
    s = np.bool_(data.draw(st.booleans()))
    slo, shi = lo[:1].reshape(()), hi[:1].reshape(())
    sel, ssel, clamp, sclamp = exe(p, s, x, y, lo, hi, slo, shi)
    np.testing.assert_array_equal(sel, np.where(p, x, y))
    np.testing.assert_array_equal(ssel, x if s else y)
    # XLA: clamp(min, x, max) = min(max(x, min), max), also when min > max.
    np.testing.assert_array_equal(clamp, np.minimum(np.maximum(x, lo), hi))
    np.testing.assert_array_equal(sclamp, np.minimum(np.maximum(x, slo), shi))


CONVERSIONS = [
    (hlo.f32, hlo.i1), (hlo.i32, hlo.i1), (hlo.f64, hlo.i1), (hlo.i1, hlo.f32),
    (hlo.i1, hlo.i32), (hlo.f32, hlo.i32), (hlo.f64, hlo.i8), (hlo.f32, hlo.ui8),
    (hlo.i32, hlo.i8), (hlo.i8, hlo.ui16), (hlo.ui16, hlo.i64), (hlo.i64, hlo.i32),
    (hlo.i32, hlo.f32), (hlo.i64, hlo.f64), (hlo.f32, hlo.bf16), (hlo.f32, hlo.f16),
    (hlo.f64, hlo.f32), (hlo.bf16, hlo.f32), (hlo.f16, hlo.f64), (hlo.f32, hlo.complex64),
    (hlo.i32, hlo.complex64),
]


def _convert_input(src, dst, data):
    if src is hlo.i1:
        return data.draw(_bits(np.uint8, SHAPE[0]).map(lambda a: (a & 1).astype(np.bool_)))
    if src.kind == "float":
        if dst.is_integer:
            info = np.iinfo(dst.dtype)
            # In range only: out-of-range float->int conversion is implementation-defined.
            lo, hi = max(float(info.min), -1e6), min(float(info.max), 1e6)
            return data.draw(_float_array(src, lo, hi))
        if dst is hlo.i1:
            return data.draw(_float_array(src, special=True))
        return data.draw(_float_array(src, special=True))
    return data.draw(_int_array(src))


@pytest.mark.parametrize("src,dst", [pytest.param(s, d, id=f"{s.name}-{d.name}")
                                     for s, d in CONVERSIONS])
@settings(max_examples=15)
@given(data=st.data())
def test_convert(src, dst, data):
    x = _convert_input(src, dst, data)
    exe = program(("convert", f"{src.name}->{dst.name}", SHAPE), [T(SHAPE, src)],
                  lambda b, x: b.convert(x, dst))
    (got,) = exe(x)
    assert got.dtype == dst.dtype
    if dst is hlo.i1:
        want = x != 0  # NaN != 0 too
    elif dst.is_integer and src.kind == "float":
        want = np.trunc(x.astype(np.float64)).astype(dst.dtype)  # toward zero
    elif dst.is_integer:
        # Integer to integer: sign- or zero-extend by the source, keep the low bits.
        want = np.array([_wrap(int(v), dst) for v in x], dst.dtype)
    else:
        # To floats: round to nearest even, which is what numpy/ml_dtypes' astype does; f32
        # and bf16 results below f32's smallest normal are flushed to zero on XLA's CPU.
        if dst in (hlo.f32, hlo.bf16) and src.kind == "float":
            x = _flush_denormals(x.astype(np.float64), hlo.f32)
        with np.errstate(over="ignore", invalid="ignore"):
            want = x.astype(dst.dtype)
    if want.dtype == np.bool_ or dst.is_integer:
        np.testing.assert_array_equal(got, want, err_msg=f"x={x!r}")
    else:
        np.testing.assert_array_equal(got.astype(np.complex128), want.astype(np.complex128),
                                      err_msg=f"x={x!r}")


def test_convert_hand_derived():
    x = np.tile(np.array([-1.9, -0.5, 0.0, 0.5, 1.9, -0.0, 127.9, np.nan], np.float32), 2)
    exe = program(("convert_hd", "f32", SHAPE), [T(SHAPE, hlo.f32)],
                  lambda b, x: b.convert(x, hlo.i1))
    (p,) = exe(x)
    np.testing.assert_array_equal(p, np.tile([True, True, False, True, True, False, True, True],
                                             2))
    i = np.tile(np.array([1, 0, 0, 1, 1, 0, 1, 1], np.bool_), 2)
    exe2 = program(("convert_hd2", "i1", SHAPE), [T(SHAPE, hlo.i1)],
                   lambda b, x: [b.convert(x, hlo.f32), b.convert(x, hlo.i32)])
    f, n = exe2(i)
    np.testing.assert_array_equal(f, i.astype(np.float32))
    np.testing.assert_array_equal(n, i.astype(np.int32))
