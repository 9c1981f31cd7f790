"""Cases for the chlo chapter: special functions, inverse trigonometric/hyperbolic functions,
constants, top_k and the numpy-broadcasting binary ops, run by jaxlib (which decomposes chlo
into mhlo) against numpy and scipy-free references.

Special-function references are written from their series (bessel_i1e), recurrences and
asymptotic expansions (digamma, Hurwitz zeta, hence polygamma), Newton's method on math.erf
(erf_inv) and Python's math module (erf, erfc, lgamma), all in float64: accurate to ~1e-12,
far below the f32 tolerances used (SF_RTOL: XLA's f32 approximations are good to a few ulps
for the elementary functions and ~1e-5 relative for the special functions).
"""

from __future__ import annotations

import math

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.ops.chlo import BINARY_BROADCAST
from mhlo_ir.ops.chlo import UNARY as CHLO_KINDS
from tests.mhlo_ir.ops.cases import RNG, case, module
from tests.mhlo_ir.ops.cases_elementwise import (BINARY_REF, C_ATOL, C_RTOL, FAMILY, RTOL, ATOL,
                                                  DIRECTIONS, _NP_CMP, _atan2, _divide, _mulhi,
                                                  _result_tolerance, binary_inputs, in_f64,
                                                  total_order_key)

T = hlo.tensor
SHAPE = (8,)
SF_RTOL, SF_ATOL = 5e-5, 1e-6


# -- scipy-free special functions (float64) ------------------------------------------------------

def _i1e(x):
    """exp(-|x|) I1(x) from the power series sum (x/2)^(2k+1) / (k! (k+1)!)."""
    term = x / 2
    total = 0.0
    k = 0
    while True:
        total += term
        k += 1
        term *= (x / 2) ** 2 / (k * (k + 1))
        if abs(term) < 1e-17 * abs(total) or k > 200:
            break
    return total * math.exp(-abs(x))


def _digamma(x):
    if x <= 0 and x == math.floor(x):
        return math.nan
    if x < 0.5:  # reflection: psi(1 - x) - psi(x) = pi cot(pi x)
        return _digamma(1 - x) - math.pi / math.tan(math.pi * x)
    acc = 0.0
    while x < 10:
        acc -= 1 / x
        x += 1
    x2 = 1 / (x * x)
    return acc + math.log(x) - 0.5 / x - x2 * (1 / 12 - x2 * (1 / 120 - x2 * (
        1 / 252 - x2 * (1 / 240 - x2 / 132))))


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _hurwitz_zeta(s, q):
    """sum_k (q + k)^-s by Euler-Maclaurin after N = 12 explicit terms."""
    if s == 1:
        return math.inf
    if s < 1 or q <= 0:
        return math.nan
    n = 12
    total = sum((q + k) ** -s for k in range(n))
    a = q + n
    total += a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    rising = s  # s (s+1) ... (s + 2j - 2)
    fact = 2.0  # (2j)!
    for j, b in enumerate(_BERNOULLI, start=1):
        total += b / fact * rising * a ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        fact *= (2 * j + 1) * (2 * j + 2)
    return total


def _polygamma(n, x):
    if n != math.floor(n) or n < 0:
        return math.nan
    if n == 0:
        return _digamma(x)
    return (-1) ** (n + 1) * math.factorial(int(n)) * _hurwitz_zeta(n + 1, x)


def _erf_inv(y):
    x = 0.0
    for _ in range(100):  # Newton from 0 converges monotonically (erf is concave on x > 0)
        step = (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) < 1e-16:
            break
    return x


def vec(fn):
    return in_f64(np.vectorize(fn, otypes=[np.float64]))


def asin_acos_kernel(z):
    """w with asin(z) = atan2(re z, re w) + i sign(im z) im w (re w >= 0)."""
    z = z.astype(np.complex128)
    a = np.arcsin(z)
    return (z.real / np.tan(a.real) + 1j * np.sign(z.imag) * a.imag).astype(np.complex64)


# -- unary ---------------------------------------------------------------------------------------

_UNIT = lambda: RNG.uniform(-0.95, 0.95, SHAPE)  # noqa: E731
_WIDE = lambda: RNG.uniform(-3, 3, SHAPE)  # noqa: E731

# name: (reference on float64/complex128 arrays, float input maker, tolerance for f32)
CHLO_UNARY = {
    "acos": (np.arccos, _UNIT, (RTOL, ATOL)),
    "acosh": (np.arccosh, lambda: RNG.uniform(1.05, 4, SHAPE), (RTOL, ATOL)),
    "asin": (np.arcsin, _UNIT, (RTOL, ATOL)),
    "asinh": (np.arcsinh, _WIDE, (RTOL, ATOL)),
    "atan": (np.arctan, _WIDE, (RTOL, ATOL)),
    "atanh": (np.arctanh, _UNIT, (RTOL, ATOL)),
    "bessel_i1e": (np.vectorize(_i1e, otypes=[np.float64]),
                   lambda: RNG.uniform(-6, 6, SHAPE), (SF_RTOL, SF_ATOL)),
    "conj": (np.conj, _WIDE, (0, 0)),
    "cosh": (np.cosh, _WIDE, (RTOL, ATOL)),
    "digamma": (np.vectorize(_digamma, otypes=[np.float64]),
                lambda: np.array([0.1, 0.5, 1.0, 2.5, 7.3, -0.5, -1.3, -2.7]),
                (SF_RTOL, SF_ATOL)),
    "erf": (np.vectorize(math.erf, otypes=[np.float64]), _WIDE, (RTOL, ATOL)),
    "erf_inv": (np.vectorize(_erf_inv, otypes=[np.float64]), _UNIT, (SF_RTOL, SF_ATOL)),
    "erfc": (np.vectorize(math.erfc, otypes=[np.float64]), _WIDE, (SF_RTOL, SF_ATOL)),
    "lgamma": (np.vectorize(math.lgamma, otypes=[np.float64]),
               lambda: np.array([0.1, 0.5, 1.5, 3.0, 7.3, 30.0, -0.5, -2.7]),
               (SF_RTOL, SF_ATOL)),
    "sinh": (np.sinh, _WIDE, (RTOL, ATOL)),
    "square": (np.square, _WIDE, (0, 0)),
    "tan": (np.tan, lambda: RNG.uniform(-1.2, 1.2, SHAPE), (RTOL, ATOL)),
}


def _complex_z():
    return (RNG.uniform(-1.5, 1.5, SHAPE) + 1j * RNG.uniform(-1.5, 1.5, SHAPE)).astype(
        np.complex64)


def _chlo_unary_case(op, kind):
    ref, make, (rtol, atol) = CHLO_UNARY[op]
    et = FAMILY[kind]
    if kind == "complex" and op != "conj":
        rtol, atol = C_RTOL, C_ATOL
    if kind == "complex" and op == "square":
        rtol, atol = C_RTOL, C_ATOL  # (x - y)(x + y) + 2ixy rounds differently from numpy

    @case(f"chlo.{op}", kind, reference=lambda x: [in_f64(ref)(x)], rtol=rtol, atol=atol)
    def build():
        x = _complex_z() if kind == "complex" else make().astype(np.float32)
        return module([T(SHAPE, et)], lambda b, a: getattr(b, f"chlo_{op}")(a)), [x]


for _op in CHLO_UNARY:
    for _k in ("float", "complex"):
        if _k in CHLO_KINDS[_op][0]:
            _chlo_unary_case(_op, _k)


@case("chlo.erf", "f64_and_bf16",
      reference=lambda x, y: [CHLO_UNARY["erf"][0](x),
                              CHLO_UNARY["erf"][0](y.astype(np.float64)).astype(y.dtype)],
      rtol=1e-2, atol=1e-3)  # bf16 keeps 8 bits: its result is within 2^-8 relative
def _():
    import ml_dtypes
    x = RNG.uniform(-3, 3, SHAPE)
    y = RNG.uniform(-3, 3, SHAPE).astype(ml_dtypes.bfloat16)
    return module([T(SHAPE, hlo.f64), T(SHAPE, hlo.bf16)],
                  lambda b, p, q: [b.chlo_erf(p), b.chlo_erf(q)]), [x, y]


_INF_INPUT = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38, -1.0, np.inf], np.float32)
for _op, _fn in (("is_inf", np.isinf), ("is_neg_inf", np.isneginf),
                 ("is_pos_inf", np.isposinf)):
    case(f"chlo.{_op}", "float", reference=(lambda fn: lambda x: [fn(x)])(_fn))(
        (lambda op: lambda: (module([T(SHAPE, hlo.f32)],
                                    lambda b, a: getattr(b, f"chlo_{op}")(a)),
                             [_INF_INPUT]))(_op))


@case("chlo._asin_acos_kernel", "complex", reference=lambda z: [asin_acos_kernel(z)],
      rtol=1e-5, atol=1e-6)
def _():
    z = (RNG.uniform(0.2, 2, SHAPE) + 1j * RNG.uniform(0.1, 2, SHAPE)).astype(np.complex64)
    return module([T(SHAPE, hlo.complex64)], lambda b, a: b.chlo__asin_acos_kernel(a)), [z]


# -- binary, same shapes -------------------------------------------------------------------------

@case("chlo.next_after", "float", reference=lambda x, y: [np.nextafter(x, y)])
def _():
    x = np.array([1.0, 1.0, 0.0, -0.0, 3.5, -2.0, np.inf, 1e-45], np.float32)
    y = np.array([2.0, 0.0, 1.0, -1.0, 3.5, np.inf, 0.0, 0.0], np.float32)
    return module([T(SHAPE, hlo.f32)] * 2, lambda b, p, q: b.chlo_next_after(p, q)), [x, y]


_polygamma_ref = np.vectorize(_polygamma, otypes=[np.float64])
_zeta_ref = np.vectorize(_hurwitz_zeta, otypes=[np.float64])


@case("chlo.polygamma", "float", reference=lambda n, x: [in_f64(_polygamma_ref)(n, x)],
      rtol=SF_RTOL, atol=SF_ATOL)
def _():
    n = np.array([0, 1, 2, 3, 1, 2, 0, 4], np.float32)
    x = RNG.uniform(0.5, 5, SHAPE).astype(np.float32)
    return module([T(SHAPE, hlo.f32)] * 2, lambda b, p, q: b.chlo_polygamma(p, q)), [n, x]


@case("chlo.zeta", "float", reference=lambda x, q: [in_f64(_zeta_ref)(x, q)],
      rtol=SF_RTOL, atol=SF_ATOL)
def _():
    x = RNG.uniform(1.5, 5, SHAPE).astype(np.float32)
    q = RNG.uniform(0.5, 3, SHAPE).astype(np.float32)
    return module([T(SHAPE, hlo.f32)] * 2, lambda b, p, r: b.chlo_zeta(p, r)), [x, q]


for _k in ("sint", "uint"):
    case("chlo.mulhi", _k, reference=lambda x, y: [_mulhi(x, y)])(
        (lambda k: lambda: (module([T(SHAPE, FAMILY[k])] * 2,
                                   lambda b, p, q: b.chlo_mulhi(p, q)),
                            list(binary_inputs("mulhi", k))))(_k))


# -- constants and top_k -------------------------------------------------------------------------

@case("chlo.constant", "f32_and_i8", reference=lambda: [np.arange(6, dtype=np.float32)
                                                        .reshape(2, 3) / 4,
                                                        np.array([-128, 5, 127], np.int8)])
def _():
    return module([], lambda b: [
        b.chlo_constant(np.arange(6, dtype=np.float32).reshape(2, 3) / 4),
        b.chlo_constant([-128, 5, 127], hlo.i8)]), []


@case("chlo.constant_like", "float_and_int",
      reference=lambda x, y: [np.full(x.shape, 2.5, np.float32), np.full(y.shape, -3, np.int32)])
def _():
    return module([T((2, 3), hlo.f32), T((4,), hlo.i32)], lambda b, p, q: [
        b.chlo_constant_like(2.5, p), b.chlo_constant_like(-3, q)]), [
        np.zeros((2, 3), np.float32), np.zeros(4, np.int32)]


def top_k_reference(x, k):
    idx = np.argsort(-x.astype(np.float64), axis=-1, kind="stable")[..., :k]
    return [np.take_along_axis(x, idx, -1), idx.astype(np.int32)]


@case("chlo.top_k", "float", reference=lambda x: top_k_reference(x, 3))
def _():
    x = RNG.permutation(24).reshape(4, 6).astype(np.float32) - 10.5
    return module([T((4, 6), hlo.f32)], lambda b, a: list(b.chlo_top_k(a, 3))), [x]


@case("chlo.top_k", "sint", reference=lambda x: top_k_reference(x, 2))
def _():
    x = (RNG.permutation(10) - 5).astype(np.int32)
    return module([T((10,), hlo.i32)], lambda b, a: list(b.chlo_top_k(a, 2))), [x]


# -- broadcasting binary ops ---------------------------------------------------------------------

def _broadcasting(fn):
    """fn (written for equal 1-D shapes) applied after numpy broadcasting."""
    def ref(x, y):
        a, b = np.broadcast_arrays(x, y)
        return fn(a.ravel(), b.ravel()).reshape(a.shape)
    return ref


_SPECIAL_REF = {"mulhi": _mulhi, "divide": _divide, "atan2": _atan2}
_KIND_ORDER = ("bool", "sint", "uint", "float", "complex")


def _broadcast_case(op, kind, variant="trailing"):
    fn, exact = BINARY_REF[op]
    fn = _SPECIAL_REF.get(op, fn)
    rtol, atol = _result_tolerance(exact, kind)
    if op == "divide" and kind == "float":
        # XLA's CPU pipeline turns a division by a broadcast operand into a multiplication by
        # its reciprocal: off by an ulp from the correctly rounded quotient (seen: 0.608421 vs
        # 0.60842097), where mhlo.divide on equal shapes is exact.
        rtol = RTOL
    et = FAMILY[kind]

    def inputs():
        x, y = binary_inputs(op, kind)
        if variant == "trailing":       # (2, 4) with (4,)
            return x.reshape(2, 4), y[:4]
        return x[:2].reshape(2, 1), y[4:]  # (2, 1) with (4,): both operands broadcast

    @case(f"chlo.broadcast_{op}", kind if variant == "trailing" else f"{kind}_{variant}",
          reference=lambda x, y: [_broadcasting(fn)(x, y)], rtol=rtol, atol=atol)
    def build():
        x, y = inputs()
        dims = [1] if variant == "trailing" and kind == "float" else None
        return module([T(x.shape, et), T(y.shape, et)], lambda b, p, q: getattr(
            b, f"chlo_broadcast_{op}")(p, q, broadcast_dimensions=dims)), [x, y]


def _register_broadcast_cases():
    for op, (kinds, _) in BINARY_BROADCAST.items():
        if op in BINARY_REF:
            for k in _KIND_ORDER:
                if k in kinds:
                    _broadcast_case(op, k)
    _broadcast_case("add", "float", "both")
    _broadcast_case("complex", "float", "both")


_register_broadcast_cases()


def _float_broadcast(op, ref, make_x, make_y):
    @case(f"chlo.broadcast_{op}", "float", reference=lambda x, y: [in_f64(ref)(x, y)],
          rtol=SF_RTOL, atol=SF_ATOL)
    def build():
        x, y = make_x(), make_y()
        return module([T(x.shape, hlo.f32), T(y.shape, hlo.f32)], lambda b, p, q: getattr(
            b, f"chlo_broadcast_{op}")(p, q)), [x, y]


_float_broadcast("next_after", np.nextafter,
                 lambda: RNG.uniform(-2, 2, (2, 4)).astype(np.float32),
                 lambda: np.array([-np.inf, 0.0, np.inf, 1.0], np.float32))
_float_broadcast("polygamma", _polygamma_ref,
                 lambda: np.array([[0], [2]], np.float32),
                 lambda: RNG.uniform(0.5, 4, (4,)).astype(np.float32))
_float_broadcast("zeta", _zeta_ref,
                 lambda: RNG.uniform(1.5, 4, (2, 4)).astype(np.float32),
                 lambda: np.array([0.5, 1.0, 2.0, 3.0], np.float32))


def _broadcast_compare_case(name, et, compare_type, x, y, directions=DIRECTIONS):
    def reference(a, b):
        if compare_type == "TOTALORDER":
            a, b = total_order_key(a), total_order_key(b)
        return [_NP_CMP[d](a, b) for d in directions]

    @case("chlo.broadcast_compare", name, reference=reference)
    def build():
        return module([T(x.shape, et), T(y.shape, et)], lambda b, p, q: [
            b.chlo_broadcast_compare(p, q, d, compare_type) for d in directions]), [x, y]


_broadcast_compare_case("sint_SIGNED", hlo.i32, "SIGNED",
                        np.array([[-5, 0, 7], [3, 3, -1]], np.int32), np.array([0, 0, 3], np.int32))
_broadcast_compare_case("uint_UNSIGNED", hlo.ui8, "UNSIGNED",
                        np.array([[0, 200, 7], [3, 255, 1]], np.uint8),
                        np.array([0, 201, 3], np.uint8))
_broadcast_compare_case("bool", hlo.i1, None, np.array([[True, False], [False, True]]),
                        np.array([True, False]))
_broadcast_compare_case("float_TOTALORDER", hlo.f32, "TOTALORDER",
                        np.array([[-0.0, np.nan, 1.0], [0.0, -np.inf, 2.0]], np.float32),
                        np.array([0.0, 1.0, np.nan], np.float32))
_broadcast_compare_case("float_FLOAT", hlo.f32, "FLOAT",
                        np.array([[-0.0, np.nan, 1.0], [0.0, -np.inf, 2.0]], np.float32),
                        np.array([0.0, 1.0, np.nan], np.float32))
_broadcast_compare_case("complex_eq_ne", hlo.complex64, "FLOAT",
                        np.array([[1j, 2, 3], [1, 2j, 0]], np.complex64),
                        np.array([1j, 2j, 3], np.complex64), ("EQ", "NE"))


@case("chlo.broadcast_select", "float",
      reference=lambda p, x, y: [np.where(p, x, y)])
def _():
    p = np.array([True, False, True, False])
    x = RNG.uniform(-3, 3, (2, 4)).astype(np.float32)
    y = np.float32(7.5)
    return module([T((4,), hlo.i1), T((2, 4), hlo.f32), T((), hlo.f32)],
                  lambda b, c, a, d: b.chlo_broadcast_select(c, a, d)), [p, x, y]


@case("chlo.broadcast_select", "sint_pred_broadcast",
      reference=lambda p, x, y: [np.where(p, x, y)])
def _():
    p = np.array([[True], [False], [True]])
    x = np.arange(4, dtype=np.int32)
    y = -np.arange(12, dtype=np.int32).reshape(3, 4)
    return module([T((3, 1), hlo.i1), T((4,), hlo.i32), T((3, 4), hlo.i32)],
                  lambda b, c, a, d: b.chlo_broadcast_select(c, a, d)), [p, x, y]
