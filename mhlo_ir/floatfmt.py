"""Scalars printed exactly as MLIR prints them, so our text is a fixed point of MLIR's printer.

MLIR prints a float by first trying six significant digits in scientific notation
(``1.000000e+00``); if that string does not parse back to the same bits it uses APFloat's
"natural precision" form (``0.333333343``, ``3.40282347E+38``); if that has no decimal point
(a large integral value) or the value is inf/NaN, it prints the bit pattern in hex
(``0x7F800000``). Both decimal forms are reproduced here digit for digit: the exact decimal
expansion of the binary value is rounded half-up on the first dropped digit, as APFloat does.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from .dtypes import ElementType

__all__ = ["format_float", "format_scalar"]

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


def format_float(value, et: ElementType) -> str:
    """``value`` (a scalar of ``et``'s dtype) as MLIR prints a float of type ``et``."""
    x = np.asarray(value, dtype=et.dtype).reshape(())
    f = float(x)
    if f != f or f in (float("inf"), float("-inf")):
        return f"0x{_bits(x, et):X}"
    if f == 0.0:
        # The sign is the top bit of the type's own width (bit 3 of a 4-bit float's byte).
        return "-0.000000e+00" if _bits(x, et) >> (et.bits - 1) & 1 else "0.000000e+00"
    want = _bits(x, et)
    s = _scientific6(*_decimal(f, 6))
    if _parses_to(s, et, want):
        return s
    # APFloat: FormatPrecision = 2 + floor(precision * 59 / 196).
    precision = 2 + et.mantissa_bits * 59 // 196
    s = _natural(*_decimal(f, precision), precision)
    if "." in s:
        return s
    return f"0x{want:X}"


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
