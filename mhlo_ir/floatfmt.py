"""Scalars printed exactly as MLIR prints them, so our text is a fixed point of MLIR's printer.

MLIR prints a float by first trying six significant digits in scientific notation
(``1.000000e+00``); if that string does not parse back to the same bits it uses APFloat's
"natural precision" form (``0.333333343``, ``3.40282347E+38``); if that has no decimal point
(a large integral value) or the value is inf/NaN, it prints the bit pattern in hex
(``0x7F800000``). Both decimal forms are reproduced here digit for digit: the exact decimal
expansion of the binary value is rounded half-up on the first dropped digit, as APFloat does.
"""

from __future__ import annotations

from fractions import Fraction

from decimal import Decimal

import numpy as np

from .dtypes import ElementType

__all__ = ["format_float", "format_scalar", "parse_float_bits", "float_from_bits",
           "round_f64_bits"]

_UINT_FOR_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(value, et: ElementType) -> int:
    arr = np.asarray(value, dtype=et.dtype).reshape(1)
    return int(arr.view(_UINT_FOR_SIZE[et.dtype.itemsize])[0])


def _round_digits(digits: tuple, exp: int, precision: int):
    """APFloat's rounding: keep ``precision`` digits, round half-up on the first dropped one."""
    n = len(digits)
    if n <= precision:
        return digits, exp
    drop = n - precision
    kept = list(digits[:precision])
    exp += drop
    if digits[precision] >= 5:
        i = precision - 1
        while i >= 0 and kept[i] == 9:
            kept.pop()
            exp += 1
            i -= 1
        if i < 0:
            return (1,), exp
        kept[i] += 1
    while len(kept) > 1 and kept[-1] == 0:
        kept.pop()
        exp += 1
    return tuple(kept), exp


def _decimal(value: float, precision: int):
    """Sign, digits (no trailing zeros) and exponent as APFloat computes them for printing.

    APFloat first divides away the decimal digits it can prove unneeded (integer division, so
    it truncates) and only then rounds half-up on the first dropped digit; doing the same keeps
    our last digit equal to MLIR's (f16 0.1 prints ``9.997550e-02``, not ``...560e-02``).
    """
    sign = value < 0 or (value == 0 and str(value)[0] == "-")
    n, d = abs(value).as_integer_ratio()
    exp = 0
    if d != 1:
        texp = d.bit_length() - 1
        n *= 5 ** texp
        exp = -texp
    bits_required = (precision * 196 + 58) // 59
    bits = n.bit_length()
    if bits > bits_required:
        tens = (bits - bits_required) * 59 // 196
        if tens:
            n //= 10 ** tens
            exp += tens
    digits = [int(c) for c in str(n)]
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exp += 1
    return sign, tuple(digits), exp


def _scientific6(sign, digits, exp) -> str:
    digits, exp = _round_digits(digits, exp, 6)
    e = exp + len(digits) - 1
    frac = "".join(map(str, digits[1:])).ljust(6, "0")
    return f"{'-' if sign else ''}{digits[0]}.{frac}e{'-' if e < 0 else '+'}{abs(e):02d}"


def _natural(sign, digits, exp, precision: int) -> str:
    digits, exp = _round_digits(digits, exp, precision)
    n = len(digits)
    s = "".join(map(str, digits))
    if exp >= 0:
        scientific = exp > 3 or n + exp > precision
    else:
        msd = exp + n - 1
        scientific = msd < 0 and -msd > 3
    out = "-" if sign else ""
    if scientific:
        e = exp + n - 1
        return f"{out}{s[0]}.{s[1:] or '0'}E{'-' if e < 0 else '+'}{abs(e)}"
    if exp >= 0:
        return out + s + "0" * exp
    whole = exp + n
    if whole > 0:
        return f"{out}{s[:whole]}.{s[whole:]}"
    return f"{out}0.{'0' * -whole}{s}"


# (type name, exact bits) -> spelling: format_float is a pure function of the two, and the
# values of 8- and 16-bit types (and generated programs' small numbers) recur. Keyed by
# bits, never by value (0.0 == -0.0, and NaNs differ in payload); cleared when full.
_SPELLED: dict = {}
_SPELLED_MAX = 65536


def format_float(value, et: ElementType) -> str:
    """``value`` (a scalar of ``et``'s dtype) as MLIR prints a float of type ``et``."""
    x = np.asarray(value, dtype=et.dtype).reshape(1)
    want = int(x.view(_UINT_FOR_SIZE[et.dtype.itemsize])[0])
    key = (et.name, want)
    s = _SPELLED.get(key)
    if s is None:
        s = _format_float(x.reshape(()), et, want)
        if len(_SPELLED) >= _SPELLED_MAX:
            _SPELLED.clear()
        _SPELLED[key] = s
    return s


def _format_float(x, et: ElementType, want: int) -> str:
    f = float(x)
    if f != f or f in (float("inf"), float("-inf")):
        return f"0x{want:X}"
    if f == 0.0:
        # The sign is the top bit of the type's own width (bit 3 of a 4-bit float's byte).
        return "-0.000000e+00" if want >> (et.bits - 1) & 1 else "0.000000e+00"
    s = _scientific6(*_decimal(f, 6))
    if _parses_to(s, et, want):
        return s
    # APFloat: FormatPrecision = 2 + floor(precision * 59 / 196).
    precision = 2 + et.mantissa_bits * 59 // 196
    s = _natural(*_decimal(f, precision), precision)
    if "." in s:
        return s
    return f"0x{want:X}"


def parse_float_bits(spelling: str, et: ElementType) -> int:
    """The bits of float type ``et`` that MLIR's parser gives the literal ``spelling`` (a
    leading ``-`` included): the inverse of ``format_float``.

    Hex (``0x7FC00000``) is the bit pattern itself, as wide as the type at most and unsigned
    (``-0x...`` is an error, as in MLIR). A decimal is read as MLIR reads it: first as the
    nearest f64 (``Token::getFloatingPointValue``), which is then rounded to ``et``, to nearest,
    ties to even (``APFloat::convert``). That rounds twice, so a decimal a hair off the
    midpoint of two values of ``et`` can land on the "wrong" one; it is MLIR's answer, and the
    one this gives (tests/mhlo_ir/test_parse_dense.py checks it against MLIR).
    Raises ValueError.
    """
    body = spelling[1:] if spelling.startswith("-") else spelling
    if body.startswith(("0x", "0X")):
        if body is not spelling:
            raise ValueError("hexadecimal float literal should not have a leading minus")
        bits = int(body, 16)
        if bits >> et.bits:
            raise ValueError(f"hexadecimal float constant out of range for type {et.name}")
        return bits
    if "." not in body:
        raise ValueError("unexpected decimal integer literal for a floating point value "
                         "(add a trailing dot to make the literal a float)")
    return round_f64_bits(float(spelling), et)


def round_f64_bits(m: float, et: ElementType) -> int:
    """The bits of float type ``et`` nearest the f64 ``m``, rounded once as MLIR rounds
    (``APFloat::convert``: to nearest, ties to even; f8E8M0FNU as ``_e8m0_bits``)."""
    if et.dtype == np.float64:
        return _bits(m, et)
    if et.name == "f8E8M0FNU":
        return _e8m0_bits(m)
    return _round_f64(m, et)


def _round_f64(m: float, et: ElementType) -> int:
    """The bits of f64 ``m`` rounded to ``et`` as APFloat::convert rounds (nearest, ties to
    even). ml_dtypes' cast is right but for two things: it goes through f32 for some types,
    rounding twice (bf16 of 4.5917757262545217e-41, a hair above half the smallest
    subnormal, became 0), which the exact check of its neighbours below undoes; and it
    saturates infinities into f4E2M1FN, where APFloat gives zero."""
    with np.errstate(all="ignore"):
        t = np.asarray(m, dtype=np.float64).astype(et.dtype)
    tf = float(t)
    # numpy's own f32 and f16 casts round once; exact values and inf/NaN need no check.
    if tf == m or tf - tf != 0 or m - m != 0 or et.name in ("f32", "f16"):
        if m - m != 0 and et.name == "f4E2M1FN":
            return (m < 0) << 3
        return _bits(t, et)
    sign = 1 << (et.bits - 1)
    a = abs(m)
    storage = _UINT_FOR_SIZE[et.dtype.itemsize]
    k = _bits(t, et) & (sign - 1)
    best = None
    for c in (k - 1, k, k + 1):
        if 0 <= c < sign:
            v = float(np.array([c], dtype=storage).view(et.dtype)[0])
            if v - v == 0:
                # f64 differences of neighbours near ``a`` are exact (Sterbenz), but not of
                # a value far past the type's largest (1e20 as f4E2M1FN: 4.0 and 6.0 both
                # lose to the rounding of 1e20 - v): equal ones are compared exactly.
                d = abs(v - a)
                if best is not None and d == best[0][0]:
                    d2, b2 = abs(Fraction(v) - Fraction(a)), abs(Fraction(best[2]) - Fraction(a))
                    if d2 < b2 or (d2 == b2 and (c & 1) < (best[1] & 1)):
                        best = ((d, c & 1), c, v)
                elif best is None or d < best[0][0]:
                    best = ((d, c & 1), c, v)
    c = best[1]
    if m < 0 and (c or not et.name.endswith("FNUZ")):   # FNUZ types have no -0 (0x80 is NaN)
        c |= sign
    return c


def _e8m0_bits(m: float) -> int:
    """f64 to f8E8M0FNU (2**(bits - 127), 0xFF is NaN) as APFloat rounds: to the nearest power
    of two, halfway (1.5 * 2**e) up; below 2**-127, zero included, the smallest value; from
    1.5 * 2**127 up, NaN. ml_dtypes differs below 2**-126 (it gives NaN for 0.0 and 2**-126
    for 6e-39). Negative values, which MLIR turns into NaN or drops the sign of, are refused."""
    import math
    if m != m or m == math.inf:
        return 0xFF
    if m < 0 or (m == 0 and math.copysign(1.0, m) < 0):
        raise ValueError("f8E8M0FNU has no negative values")
    if m < 2.0 ** -127:
        return 0
    frac, e = math.frexp(m)            # m = frac * 2**e, 0.5 <= frac < 1
    e = e - 1 + (frac >= 0.75)
    return min(e + 127, 0xFF)


def float_from_bits(bits: int, et: ElementType):
    """The value of float type ``et`` with ``bits``: a Python float, except NaNs, which come
    as a numpy scalar of the type so that their payload and sign survive."""
    x = np.asarray(bits, dtype=_UINT_FOR_SIZE[et.dtype.itemsize]).reshape(1).view(et.dtype)[0]
    f = float(x)
    return x if f != f else f


def _parses_to(s: str, et: ElementType, bits: int) -> bool:
    with np.errstate(all="ignore"):
        if et.dtype == np.float64:
            y = np.float64(Decimal(s))
        else:
            y = np.asarray(float(Decimal(s)), dtype=np.float64).astype(et.dtype)
    return _bits(y, et) == bits


def format_scalar(value, et: ElementType) -> str:
    """One element of ``et`` as it appears inside ``dense<...>`` or a typed attribute."""
    kind = et.kind
    if kind == "bool":
        return "true" if value else "false"
    if kind == "sint" or kind == "uint":
        return str(int(value))
    if kind == "complex":
        # Take the parts at the component width: a round trip through Python's complex
        # (float64) would quiet a signalling NaN in a complex64.
        c = np.asarray(value, dtype=et.dtype)
        comp = et.component
        return f"({format_float(c.real, comp)},{format_float(c.imag, comp)})"
    return format_float(value, et)
