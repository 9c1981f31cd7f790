"""Cases for the elementwise chapter: every UNARY and BINARY op once per element-type family it
accepts, compare in every direction and compare type, select, clamp, the conversions and
reduce_precision.

References are numpy (float64/complex128 rounded to the result dtype, or integer arithmetic in
the dtype, which wraps as XLA does). Exact (bitwise) for integers, bools, data movement and the
float ops IEEE rounds exactly (negate, floor, ceil, rounding, min/max, fmod, division...);
transcendental ops use RTOL/ATOL below (f32: a few ulps; complex: XLA's formulas differ from
numpy's in the last bits).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

import mhlo_ir as hlo
from mhlo_ir.builder import _method_name
from mhlo_ir.ops.elementwise import BINARY, UNARY, UNARY_WITHOUT_HLO
from tests.mhlo_ir.ops.cases import RNG, case, module

T = hlo.tensor
SHAPE = (8,)
# One element type per family: the case names say which.
FAMILY = {"bool": hlo.i1, "sint": hlo.i32, "uint": hlo.ui32, "float": hlo.f32,
          "complex": hlo.complex64}
RTOL, ATOL = 2e-6, 1e-6           # f32 transcendental functions
C_RTOL, C_ATOL = 2e-5, 2e-6       # complex64 transcendental functions


# -- inputs ------------------------------------------------------------------------------------

def int_input(dt, which=0):
    """Edge values (min, max, 0, +-1) and small numbers."""
    dt = np.dtype(dt)
    info = np.iinfo(dt)
    if dt.kind == "u":
        base = [0, 1, info.max, 5, 7, 100, 200, info.max - 1]
    else:
        base = [info.min, info.max, 0, 1, -1, 5, -7, 100]
    a = np.array(base, dtype=dt)
    return np.roll(a, which)  # binary ops pair different edges


_POSITIVE = {"log", "sqrt", "rsqrt", "log_plus_one", "power", "cbrt"}
_SMALL = {"tan", "exponential", "exponential_minus_one", "cosine", "sine"}


def float_input(op, dt=np.float32):
    if op in ("round_nearest_afz", "round_nearest_even", "ceil", "floor"):
        a = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -1.7]
    elif op == "is_finite":
        a = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1.5, 3e38, -1e-40]
    elif op in _POSITIVE:
        a = RNG.uniform(0.1, 3.0, SHAPE)
    elif op in _SMALL:
        a = RNG.uniform(-1.2, 1.2, SHAPE)
    else:
        a = RNG.uniform(-3.0, 3.0, SHAPE)
    return np.asarray(a, dtype=dt)


def complex_input(op):
    re = RNG.uniform(-1.5, 1.5, SHAPE)
    im = RNG.uniform(-1.5, 1.5, SHAPE)
    return (re + 1j * im).astype(np.complex64)


def bool_input(which=0):
    return np.roll(np.array([True, False, True, True, False, False, True, False]), which)


def make_input(op, kind, which=0):
    et = FAMILY[kind]
    if kind == "bool":
        return bool_input(which)
    if kind in ("sint", "uint"):
        return int_input(et.dtype, which)
    if kind == "float":
        return float_input(op)
    return complex_input(op)


# -- references --------------------------------------------------------------------------------

def _unsigned(a):
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _signed(a):
    return a.view(np.dtype(f"i{a.dtype.itemsize}"))


def _bits(a):
    return a.dtype.itemsize * 8


def clz(a):
    n = _bits(a)
    return np.array([n - int(v).bit_length() for v in _unsigned(a).ravel()],
                    a.dtype).reshape(a.shape)


def popcnt(a):
    return np.array([bin(int(v)).count("1") for v in _unsigned(a).ravel()],
                    a.dtype).reshape(a.shape)


def in_f64(fn):
    """fn evaluated in float64 / complex128 and rounded to the input's dtype."""
    def ref(*xs):
        wide = [x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) for x in xs]
        out = fn(*wide)
        return out.astype(xs[0].dtype if out.dtype.kind == xs[0].dtype.kind else
                          np.float32 if xs[0].dtype == np.complex64 else out.dtype)
    return ref


def sign(x):
    if x.dtype.kind == "c":
        mag = np.abs(x)
        return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)
    return np.sign(x)


def round_afz(x):
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype)


_erf = np.vectorize(math.erf, otypes=[np.float64])

# name: (reference, kinds compared exactly)
UNARY_REF = {
    "abs": (np.abs, {"sint", "float"}),
    "cbrt": (in_f64(np.cbrt), set()),
    "ceil": (np.ceil, {"float"}),
    "cosine": (in_f64(np.cos), set()),
    "count_leading_zeros": (clz, {"sint", "uint"}),
    "erf": (in_f64(_erf), set()),
    "exponential": (in_f64(np.exp), set()),
    "exponential_minus_one": (in_f64(np.expm1), set()),
    "floor": (np.floor, {"float"}),
    "imag": (np.imag, {"float", "complex"}),
    "is_finite": (np.isfinite, {"float"}),
    "log": (in_f64(np.log), set()),
    "log_plus_one": (in_f64(np.log1p), set()),
    "logistic": (in_f64(lambda x: 1 / (1 + np.exp(-x))), set()),
    "negate": (np.negative, {"sint", "uint", "float", "complex"}),
    "not": (np.invert, {"bool", "sint", "uint"}),
    "popcnt": (popcnt, {"sint", "uint"}),
    "real": (np.real, {"float", "complex"}),
    "round_nearest_afz": (round_afz, {"float"}),
    "round_nearest_even": (np.rint, {"float"}),
    "rsqrt": (in_f64(lambda x: 1 / np.sqrt(x)), set()),
    "sign": (sign, {"sint", "float"}),
    "sine": (in_f64(np.sin), set()),
    "sqrt": (in_f64(np.sqrt), {"float"}),
    "tan": (in_f64(np.tan), set()),
    "tanh": (in_f64(np.tanh), set()),
}


def _trunc_div(a, b):
    if a.dtype.kind == "u":
        return a // b
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64)) * q).astype(a.dtype)


def _shift_left(a, s):
    n = _bits(a)
    s_u = _unsigned(s)
    return np.where(s_u >= n, 0, _unsigned(a) << (s_u % n)).astype(_unsigned(a).dtype).view(
        a.dtype)


def _shift_right_logical(a, s):
    n = _bits(a)
    s_u = _unsigned(s)
    return np.where(s_u >= n, 0, _unsigned(a) >> (s_u % n)).astype(_unsigned(a).dtype).view(
        a.dtype)


def _shift_right_arithmetic(a, s):
    n = _bits(a)
    s_u = _unsigned(s).astype(np.uint64)
    amount = np.minimum(s_u, n - 1).astype(_signed(a).dtype)
    return (_signed(a) >> amount).view(a.dtype)


def _complex_atan2(y, x):
    # atan2(y, x) = -i log((x + i y) / sqrt(x^2 + y^2)), as XLA defines it for complex.
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def _power(a, b):
    if a.dtype.kind in "iu":
        return np.array([pow(int(x), int(y), 1 << _bits(a)) for x, y in zip(a, b)],
                        np.uint64).astype(_unsigned(a).dtype).view(a.dtype)
    return in_f64(np.power)(a, b)


BINARY_REF = {
    "add": (np.add, {"bool", "sint", "uint", "float", "complex"}),
    "subtract": (np.subtract, {"sint", "uint", "float", "complex"}),
    "multiply": (np.multiply, {"bool", "sint", "uint", "float"}),
    "mulhi": (None, {"sint", "uint"}),
    "divide": (None, {"sint", "uint", "float"}),
    "remainder": (np.fmod, {"sint", "uint", "float"}),
    "maximum": (np.maximum, {"bool", "sint", "uint", "float", "complex"}),
    "minimum": (np.minimum, {"bool", "sint", "uint", "float", "complex"}),
    "power": (_power, {"sint", "uint"}),
    "atan2": (None, set()),
    "and": (np.bitwise_and, {"bool", "sint", "uint"}),
    "or": (np.bitwise_or, {"bool", "sint", "uint"}),
    "xor": (np.bitwise_xor, {"bool", "sint", "uint"}),
    "shift_left": (_shift_left, {"sint", "uint"}),
    "shift_right_arithmetic": (_shift_right_arithmetic, {"sint", "uint"}),
    "shift_right_logical": (_shift_right_logical, {"sint", "uint"}),
    "complex": (lambda a, b: (a + 1j * b.astype(np.complex64)).astype(np.complex64), {"float"}),
}


def _mulhi(a, b):
    n = _bits(a)
    wide = (a.astype(np.int64) * b.astype(np.int64)) if a.dtype.kind == "i" else (
        a.astype(np.uint64) * b.astype(np.uint64))
    return (wide >> n).astype(a.dtype)


def _divide(a, b):
    if a.dtype.kind in "iu":
        return _trunc_div(a, b)
    return np.divide(a, b) if a.dtype.kind == "f" else in_f64(np.divide)(a, b)


def _atan2(a, b):
    return in_f64(_complex_atan2 if a.dtype.kind == "c" else np.arctan2)(a, b)


def binary_inputs(op, kind):
    x = make_input(op, kind, 0)
    y = make_input(op, kind, 3)
    et = FAMILY[kind]
    if kind in ("sint", "uint"):
        if op.startswith("shift"):
            # Amounts across the width, and past it (XLA: 0 or the sign fill).
            y = np.array([0, 1, 5, 31, 32, 33, 200, 7], et.dtype)
            if kind == "sint":
                y[6] = -3  # read as unsigned: a huge shift
        elif op in ("divide", "remainder"):
            x = np.array([7, -7, 100, 0, 9, -9, 5, 1] if kind == "sint" else
                         [7, 8, 100, 0, 9, 250, 5, 1], et.dtype)
            y = np.array([2, 2, -3, 5, -4, -4, 7, 1] if kind == "sint" else
                         [2, 3, 7, 5, 4, 9, 7, 1], et.dtype)
        elif op == "power":
            y = np.array([0, 1, 2, 3, 5, 31, 2, 7], et.dtype)
    elif kind == "float" and op in ("divide", "remainder"):
        y = np.where(np.abs(y) < 0.25, 0.5, y).astype(y.dtype)
    elif kind == "float" and op == "power":
        y = RNG.uniform(-2, 2, SHAPE).astype(np.float32)
    elif kind == "complex" and op == "divide":
        y = np.where(np.abs(y) < 0.25, 0.5 + 0.5j, y).astype(y.dtype)
    elif kind == "complex" and op == "power":
        y = (RNG.uniform(-1, 1, SHAPE) + 1j * RNG.uniform(-1, 1, SHAPE)).astype(np.complex64)
    return x, y


def _result_tolerance(exact_kinds, kind):
    if kind in exact_kinds or kind in ("bool", "sint", "uint"):
        return 0.0, 0.0
    return (C_RTOL, C_ATOL) if kind == "complex" else (RTOL, ATOL)


def _unary_case(op, kind):
    fn, exact = UNARY_REF[op]
    rtol, atol = _result_tolerance(exact, kind)
    et = FAMILY[kind]

    @case(op, kind, reference=lambda x: [fn(x)], rtol=rtol, atol=atol)
    def build():
        x = make_input(op, kind)
        meth = _method_name(op)
        return module([T(SHAPE, et)], lambda b, a: getattr(b, meth)(a)), [x]


def _binary_case(op, kind):
    fn, exact = BINARY_REF[op]
    fn = {"mulhi": _mulhi, "divide": _divide, "atan2": _atan2}.get(op, fn)
    rtol, atol = _result_tolerance(exact, kind)
    et = FAMILY[kind]

    @case(op, kind, reference=lambda x, y: [fn(x, y)], rtol=rtol, atol=atol)
    def build():
        x, y = binary_inputs(op, kind)
        meth = _method_name(op)
        return module([T(SHAPE, et)] * 2, lambda b, p, q: getattr(b, meth)(p, q)), [x, y]


_KIND_ORDER = ("bool", "sint", "uint", "float", "complex")
for _op, (_kinds, _) in UNARY.items():
    for _k in _KIND_ORDER:
        if _k in _kinds:
            _unary_case(_op, _k)
for _op, (_kinds, _) in BINARY.items():
    for _k in _KIND_ORDER:
        if _k in _kinds:
            _binary_case(_op, _k)


@case("complex", "f64", reference=lambda a, b: [a + 1j * b])
def _():
    a, b = RNG.uniform(-3, 3, (2, 3)), RNG.uniform(-3, 3, (2, 3))
    return module([T((2, 3), hlo.f64)] * 2, lambda bb, x, y: bb.complex(x, y)), [a, b]


@case("add", "bf16_f16_f64", reference=lambda a, b, c: [a + a, b + b, c + c])
def _():
    a = RNG.uniform(-3, 3, SHAPE).astype(ml_dtypes.bfloat16)
    b = RNG.uniform(-3, 3, SHAPE).astype(np.float16)
    c = RNG.uniform(-3, 3, SHAPE)
    return module([T(SHAPE, hlo.bf16), T(SHAPE, hlo.f16), T(SHAPE, hlo.f64)],
                  lambda bb, x, y, z: [bb.add(x, x), bb.add(y, y), bb.add(z, z)]), [a, b, c]


# -- ops XLA cannot compile: verified only -------------------------------------------------------

for _op in UNARY_WITHOUT_HLO:
    for _k, _et in (("float", hlo.f32), ("complex", hlo.complex64)):
        case(_op, _k)((lambda op, et: lambda: (
            module([T(SHAPE, et)], lambda b, a: getattr(b, op)(a)), []))(_op, _et))


# -- compare -------------------------------------------------------------------------------------

DIRECTIONS = ("EQ", "NE", "GE", "GT", "LE", "LT")
_NP_CMP = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
           "LE": np.less_equal, "LT": np.less}


def total_order_key(x):
    """Floats mapped to integers ordered like IEEE totalOrder (-NaN < -inf < ... < -0 < +0 <
    ... < inf < +NaN)."""
    i = _signed(x).astype(np.int64)
    mask = (1 << (_bits(x) - 1)) - 1
    return np.where(i < 0, i ^ mask, i)


def _compare_case(name, et, compare_type, x, y, directions=DIRECTIONS):
    def reference(a, b):
        if compare_type == "TOTALORDER":
            a, b = total_order_key(a), total_order_key(b)
        return [_NP_CMP[d](a, b) for d in directions]

    @case("compare", name, reference=reference)
    def build():
        return module([T(x.shape, et)] * 2, lambda b, p, q: [
            b.compare(p, q, d, compare_type) for d in directions]), [x, y]


_compare_case("sint_SIGNED", hlo.i32, "SIGNED", int_input(np.int32),
              np.array([np.iinfo(np.int32).min, 0, 0, 1, 1, 5, -7, -100], np.int32))
_compare_case("uint_UNSIGNED", hlo.ui32, "UNSIGNED", int_input(np.uint32),
              np.array([0, 5, 0, 5, 7, 100, 3, 2**31], np.uint32))
_compare_case("bool_UNSIGNED", hlo.i1, "UNSIGNED", bool_input(0), bool_input(1))
_F = np.array([1.0, -0.0, np.nan, 2.0, -np.inf, 3.0, -1.0, np.nan], np.float32)
_G = np.array([1.0, 0.0, 1.0, np.nan, -np.inf, -3.0, 2.0, -np.nan], np.float32)
_compare_case("float_FLOAT", hlo.f32, "FLOAT", _F, _G)
_compare_case("float_TOTALORDER", hlo.f32, "TOTALORDER", _F, _G)
_compare_case("float_unset", hlo.f32, None, _F, _G)
_compare_case("f64_TOTALORDER", hlo.f64, "TOTALORDER", _F.astype(np.float64),
              _G.astype(np.float64))
_compare_case("complex_FLOAT_eq_ne", hlo.complex64, "FLOAT",
              np.array([1 + 1j, 2, 3j, 0, np.nan, 1, 2, 3], np.complex64),
              np.array([1 + 1j, 2j, 3j, -0.0, 1, 1, 5, 3], np.complex64), ("EQ", "NE"))


# -- select, clamp -------------------------------------------------------------------------------

def _select_case(kind, scalar_pred=False):
    et = FAMILY[kind]
    pshape = () if scalar_pred else SHAPE

    @case("select", kind + ("_scalar_pred" if scalar_pred else ""),
          reference=lambda p, x, y: [np.where(p, x, y)])
    def build():
        p = np.asarray(RNG.random(pshape) < 0.5)
        x, y = make_input("select", kind, 0), make_input("select", kind, 2)
        return module([T(pshape, hlo.i1), T(SHAPE, et), T(SHAPE, et)],
                      lambda b, c, a, d: b.select(c, a, d)), [p, x, y]


for _k in _KIND_ORDER:
    _select_case(_k)
_select_case("float", scalar_pred=True)


def _clamp_reference(lo, x, hi):
    return [np.minimum(np.maximum(x, lo), hi)]


@case("clamp", "sint_scalar_bounds", reference=_clamp_reference)
def _():
    lo, hi = np.int32(-5), np.int32(50)
    x = int_input(np.int32)
    return module([T((), hlo.i32), T(SHAPE, hlo.i32), T((), hlo.i32)],
                  lambda b, a, c, d: b.clamp(a, c, d)), [lo, x, hi]


@case("clamp", "uint_scalar_bounds", reference=_clamp_reference)
def _():
    lo, hi = np.uint32(3), np.uint32(150)
    x = int_input(np.uint32)
    return module([T((), hlo.ui32), T(SHAPE, hlo.ui32), T((), hlo.ui32)],
                  lambda b, a, c, d: b.clamp(a, c, d)), [lo, x, hi]


@case("clamp", "float_tensor_bounds", reference=_clamp_reference)
def _():
    lo = RNG.uniform(-2, 0, SHAPE).astype(np.float32)
    hi = RNG.uniform(0, 2, SHAPE).astype(np.float32)
    x = float_input("clamp")
    return module([T(SHAPE, hlo.f32)] * 3, lambda b, a, c, d: b.clamp(a, c, d)), [lo, x, hi]


# -- convert -------------------------------------------------------------------------------------

_CONVERT_INPUTS = {
    "f32": lambda: np.array([1.7, -1.7, 0.0, -0.0, 2.5, -2.5, 100.25, 3e-3], np.float32),
    "f64": lambda: np.array([1.0 / 3, -2e-30, 1e30, 0.1, -0.5, 7.0, 65504.0, 1e-8]),
    "i32": lambda: int_input(np.int32),
    "i8": lambda: int_input(np.int8),
    "ui8": lambda: int_input(np.uint8),
    "i1": lambda: bool_input(),
    "complex<f32>": lambda: complex_input("convert"),
}

# (source, destination): XLA semantics that match numpy's astype on these inputs (floats to
# integers truncate toward zero in range; integers wrap; to i1 means != 0; floats round to
# nearest even, ml_dtypes likewise).
_CONVERSIONS = [("f32", "i32"), ("i32", "f32"), ("f32", "bf16"), ("f32", "f16"),
                ("f64", "f32"), ("i32", "i8"), ("i8", "ui32"), ("ui8", "i16"), ("f32", "i1"),
                ("i32", "i1"), ("i1", "f32"), ("i1", "i32"), ("f32", "complex<f32>"),
                ("complex<f32>", "complex<f64>"), ("f32", "f8E4M3FN"), ("f8E4M3FN", "f32")]


def _convert_case(src, dst):
    s, d = hlo.dtypes.element_type(src), hlo.dtypes.element_type(dst)

    def make_x():
        if src == "f8E4M3FN":
            return _CONVERT_INPUTS["f32"]().astype(ml_dtypes.float8_e4m3fn)
        return _CONVERT_INPUTS[src]()

    @case("convert", f"{src}_to_{dst}", reference=lambda x: [x.astype(d.dtype)])
    def build():
        return module([T(SHAPE, s)], lambda b, a: b.convert(a, d)), [make_x()]


for _s, _d in _CONVERSIONS:
    _convert_case(_s, _d)


# -- reduce_precision ----------------------------------------------------------------------------

def reduce_precision_reference(x, exponent_bits, mantissa_bits):
    """XLA's ReducePrecision, written out on the bit pattern: round the mantissa to nearest
    even, then overflow to signed inf and flush what is below the reduced format's smallest
    normal to signed zero; NaN stays NaN (even with no mantissa bits left, which the bit
    arithmetic alone would turn into inf or zero)."""
    fi = ml_dtypes.finfo(x.dtype)
    nbits, src_mant = _bits(x), fi.nmant
    src_exp = nbits - 1 - src_mant
    u = _unsigned(x).astype(np.uint64)
    if mantissa_bits < src_mant:
        shift = src_mant - mantissa_bits
        last = np.uint64(1 << shift)
        bias = (last >> np.uint64(1)) - np.uint64(1)
        lsb = (u & last) >> np.uint64(shift)
        u = (u + lsb + bias) & ~np.uint64((1 << shift) - 1)
        u &= np.uint64((1 << nbits) - 1)
    if exponent_bits < src_exp:
        sign = u & np.uint64(1 << (nbits - 1))
        exp_mask = np.uint64(((1 << src_exp) - 1) << src_mant)
        bias = (1 << (src_exp - 1)) - 1
        rbias = (1 << (exponent_bits - 1)) - 1
        e = u & exp_mask
        over = e > np.uint64((bias + rbias) << src_mant)
        under = e <= np.uint64((bias - rbias) << src_mant)
        u = np.where(over, sign | exp_mask, np.where(under, sign, u))
    out = u.astype(_unsigned(x).dtype).view(x.dtype)
    return np.where(np.isnan(x), x, out)


_RP_F32 = np.array([1.0, 1.0 + 2**-10, 1.0 + 3 * 2**-11, 70000.0, 1e-6, -3e-5, np.inf, np.nan,
                    -0.1, 0.333, 65504.0, 65520.0, -2.0**-14, 6e-8, 1e-45, -1e38], np.float32)


def _rp_case(name, et, x, e, m):
    @case("reduce_precision", name, reference=lambda a: [reduce_precision_reference(a, e, m)])
    def build():
        return module([T(x.shape, et)], lambda b, a: b.reduce_precision(a, e, m)), [x]


_rp_case("f32_to_f16_format", hlo.f32, _RP_F32, 5, 10)
_rp_case("f32_to_bf16_format", hlo.f32, _RP_F32, 8, 7)
_rp_case("f32_e4m3", hlo.f32, _RP_F32, 4, 3)
_rp_case("f32_mantissa_0", hlo.f32, _RP_F32, 3, 0)
_rp_case("f64_e11m20", hlo.f64, RNG.uniform(-3, 3, (8,)) * 10.0 ** RNG.integers(-300, 300, 8),
         11, 20)
_rp_case("bf16_e5m3", hlo.bf16, _RP_F32.astype(ml_dtypes.bfloat16), 5, 3)


@case("reduce_precision", "bf16_format_matches_ml_dtypes",
      reference=lambda a: [a.astype(ml_dtypes.bfloat16).astype(np.float32)])
def _():
    # (8, 7) is bfloat16: rounding an f32 there equals converting to bfloat16 and back.
    x = (RNG.standard_normal(16) * 10.0 ** RNG.integers(-30, 30, 16)).astype(np.float32)
    return module([T((16,), hlo.f32)], lambda b, a: b.reduce_precision(a, 8, 7)), [x]


# -- bitcast_convert -----------------------------------------------------------------------------

def _bitcast_case(name, src_et, x, dst_et):
    def reference(a):
        out = a.view(dst_et.dtype)
        if src_et.dtype.itemsize > dst_et.dtype.itemsize:
            return [out.reshape(*a.shape, -1)]
        if src_et.dtype.itemsize < dst_et.dtype.itemsize:
            return [out.reshape(a.shape[:-1])]
        return [out]

    @case("bitcast_convert", name, reference=reference)
    def build():
        return module([T(x.shape, src_et)], lambda b, a: b.bitcast_convert(a, dst_et)), [x]


_bitcast_case("f32_to_i32", hlo.f32, float_input("bitcast"), hlo.i32)
_bitcast_case("ui32_to_f32", hlo.ui32, np.array([0, 0x3F800000, 0x7F800000, 0xFFC00000,
                                                  1, 0x80000000, 0x40490FDB, 5], np.uint32),
              hlo.f32)
_bitcast_case("f32_to_i16_pairs", hlo.f32, float_input("bitcast"), hlo.i16)
_bitcast_case("ui8_quads_to_f32", hlo.ui8,
              RNG.integers(0, 256, (3, 4)).astype(np.uint8), hlo.f32)
_bitcast_case("f64_to_ui32_pairs", hlo.f64, RNG.uniform(-3, 3, (2, 3)), hlo.ui32)
_bitcast_case("bf16_to_i16", hlo.bf16, float_input("bitcast").astype(ml_dtypes.bfloat16),
              hlo.i16)


# -- stochastic_convert --------------------------------------------------------------------------

def stochastic_reference(x, random, dtype):
    """Round |x| down, and up when ``random`` < fraction * 2^bits (XLA's rule), then restore
    the sign. Inputs are chosen with fractions of a few exact binary digits and random values
    far from the threshold, so rounding inside the comparison cannot matter."""
    bits = random.dtype.itemsize * 8
    mag = np.abs(x.astype(np.float64))
    whole = np.floor(mag)
    threshold = (mag - whole) * 2.0 ** bits
    up = random.astype(np.float64) < threshold
    return (np.sign(x.astype(np.float64)) * (whole + up)).astype(dtype)


def _stochastic_case(name, src_et, rnd_dtype, dst_et):
    bits = np.dtype(rnd_dtype).itemsize * 8
    x = np.array([2.25, 2.25, -3.5, -3.5, 0.75, 0.75, 10.0, -0.125], src_et.dtype)
    frac = np.array([0.25, 0.25, 0.5, 0.5, 0.75, 0.75, 0.0, 0.125])
    below = np.array([True, False, True, False, True, False, True, True])
    # random = threshold -+ 1/16 of the range: clearly below or above.
    r = np.clip(frac * 2.0 ** bits + np.where(below, -1, 1) * 2.0 ** (bits - 4), 0,
                2.0 ** bits - 1)
    random = r.astype(np.uint64).astype(rnd_dtype)

    @case("stochastic_convert", name,
          reference=lambda a, rr: [stochastic_reference(a, rr, dst_et.dtype)])
    def build():
        return module([T(SHAPE, src_et), T(SHAPE, hlo.dtypes.from_numpy(rnd_dtype))],
                      lambda b, a, rr: b.stochastic_convert(a, rr, dst_et)), [x, random]


_stochastic_case("f32_to_i32", hlo.f32, np.uint32, hlo.i32)
_stochastic_case("f32_to_i8", hlo.f32, np.uint32, hlo.i8)
_stochastic_case("f16_to_i16", hlo.f16, np.uint16, hlo.i16)
