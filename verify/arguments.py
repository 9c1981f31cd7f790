"""Arguments for a compiled program: numpy arrays and Python scalars, checked against @main.

jaxlib checks only byte sizes when it runs a program (an int32[2] passed for an f32[2] parameter
is silently reinterpreted), so every argument is checked here, and the message names the
argument. Two conveniences make the check less fussy without making it less safe: a Python
scalar (``2.0``, ``3``, ``True``) is accepted for a rank-0 parameter of any numeric type and
converted to it, unless the value does not fit (300 for i8, 1.5 for i32, 1e6 for f8E4M3FN);
and arrays in non-native byte order (``np.arange(3, dtype='>f4')``) are converted, since the
device reads native bytes.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .errors import ArgumentError

__all__ = ["convert", "PYTHON_SCALARS"]

PYTHON_SCALARS = (bool, int, float, complex)


def convert(x, shape: tuple, dtype: np.dtype, where: str) -> np.ndarray:
    """``x`` as an array of ``shape`` and ``dtype``, or ArgumentError saying why not, about
    ``where`` ("argument 1", "device 0, argument 1")."""
    dtype = np.dtype(dtype)
    if isinstance(x, PYTHON_SCALARS) and not isinstance(x, np.generic):
        if shape != ():
            raise ArgumentError(f"{where}: got the Python scalar {x!r}, but the parameter is "
                                f"an array of shape {shape} and dtype {dtype}: pass an array")
        return np.asarray(_scalar(x, dtype, where), dtype)
    if isinstance(x, np.ma.MaskedArray):  # (np.asarray would drop the mask silently)
        raise ArgumentError(f"{where}: a numpy masked array, whose mask the program cannot "
                            "see (its masked values would be used): pass x.filled(value), "
                            "as jax asks too")
    a = np.asarray(x)
    if a.dtype != dtype and not a.dtype.isnative and a.dtype.newbyteorder("=") == dtype:
        a = a.astype(dtype)
    if a.dtype != dtype:
        raise ArgumentError(f"{where}: expected dtype {dtype}, got {a.dtype} (shape {a.shape})")
    if a.shape != shape:
        raise ArgumentError(f"{where}: expected shape {shape}, got {a.shape}")
    return a


def _scalar(x, dtype: np.dtype, where: str):
    """The value ``x`` converted for ``dtype`` (a value numpy casts exactly as XLA would see
    it), refusing what the type cannot hold."""
    kind = _kind(dtype)
    shown = repr(x) if len(repr(x)) <= 40 else f"{repr(x)[:20]}... ({len(repr(x))} characters)"
    what = f"{where}: the Python {type(x).__name__} {shown}"
    if kind == "bool":
        if isinstance(x, bool) or (isinstance(x, int) and x in (0, 1)):
            return bool(x)
        raise ArgumentError(f"{what} is not a bool, which the parameter ({dtype}) is")
    if isinstance(x, complex) and kind != "complex":
        raise ArgumentError(f"{what} is complex, but the parameter is {dtype}")
    if kind == "int":
        if isinstance(x, float):
            if not (math.isfinite(x) and x.is_integer()):
                raise ArgumentError(f"{what} is not an integer, but the parameter is {dtype}")
            x = int(x)
        info = ml_dtypes.iinfo(dtype)
        if not int(info.min) <= x <= int(info.max):
            raise ArgumentError(f"{what} does not fit in {dtype} (range {int(info.min)} to "
                                f"{int(info.max)})")
        return int(x)
    if kind == "complex":
        part = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
        z = complex(x)
        for v in (z.real, z.imag):
            _check_float(v, part, what, dtype)
        return z
    try:
        v = float(x)
    except OverflowError:
        raise ArgumentError(f"{what} is too large for {dtype}") from None
    _check_float(v, dtype, what, dtype)
    return v


def _kind(dtype: np.dtype) -> str:
    if dtype == np.bool_:
        return "bool"
    if dtype.kind == "c":
        return "complex"
    try:
        ml_dtypes.iinfo(dtype)  # numpy's and ml_dtypes' (int2, int4...) integers
        return "int"
    except ValueError:
        pass
    try:
        ml_dtypes.finfo(dtype)
        return "float"
    except ValueError:
        raise ArgumentError(f"a Python scalar cannot be passed for a {dtype} parameter: pass "
                            "a numpy array of that dtype") from None


def _check_float(v: float, dtype: np.dtype, what: str, shown) -> None:
    """Refuse what ``dtype`` cannot hold: values beyond its largest finite value (which
    saturating types would silently clamp, and others turn into inf or nan), and inf, nan or
    signs it has no encoding for. Rounding to the nearest value it has is fine."""
    with np.errstate(all="ignore"):
        r = float(np.array(v, np.float64).astype(dtype))
    if math.isnan(v):
        ok, why = math.isnan(r), f"{dtype} has no NaN"
    elif math.isinf(v):
        ok, why = r == v, f"{dtype} has no infinity"
    else:
        info = ml_dtypes.finfo(dtype)
        top = float(info.max)
        ulp = 2.0 ** (math.floor(math.log2(top)) - info.nmant)
        if abs(v) >= top + ulp / 2:  # beyond what rounds to the largest finite value
            ok, why = False, f"the largest finite {dtype} is {top:g}"
        else:
            ok, why = math.isfinite(r), f"{dtype} cannot represent it"
    if not ok:
        raise ArgumentError(f"{what} does not fit in {shown}: {why}")
