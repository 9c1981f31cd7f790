"""The ``check`` dialect's assertions, judged in numpy as StableHLO's interpreter judges them.

StableHLO's JAX-exported tests assert with ops of a ``check`` dialect (``CheckOps.cpp`` in
stablehlo/reference); /work/shared/data/README.md states the semantics this module follows:

- ``expect_close``: per element ULP distance at most 3 (complex: the larger of the distances
  of the real and imaginary parts);
- ``expect_almost_eq``: absolute tolerance 1e-3, +0 equals -0, NaN matches only NaN, an
  infinity only the same infinity (complex: both parts);
- ``expect_eq``: IEEE ``==`` per element (NaN != NaN, +0 == -0);
- ``eq``: ``expect_eq`` for integer and i1 elements, else ``expect_almost_eq`` at 1e-4;
- ``expect_eq_const`` / ``expect_almost_eq_const`` (tolerance 1e-4 unless the op says): the
  same against a constant.

Those are the custom calls' (``stablehlo.custom_call @check.expect_close``, what the corpus
writes), whose tolerances are fixed: StableHLO's interpreter reads no attribute of them. The
``check`` dialect's own ops (``check.expect_close %a, %b, max_ulp_difference = 10,
min_ulp_difference = 0``) carry theirs, with the defaults of ``CheckOps.td``:
``max_ulp_difference`` 1 and ``min_ulp_difference`` 0 (the distance must be at least that:
a check that two values differ), ``tolerance`` 1e-4 for ``expect_almost_eq`` and
``expect_almost_eq_const``. ``check_of`` makes the ``Check`` of either form.

Every judgement returns a ``Verdict``: whether it holds and, if not, a one-line account of the
worst element (its index, both values, the distance), so a failure can be read off a report.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import ml_dtypes
import numpy as np

__all__ = ["Verdict", "Check", "check_of", "judge", "ulp_distance", "almost_equal",
           "exactly_equal", "KINDS", "OP_KINDS", "CALL_KINDS", "MAX_ULP",
           "ALMOST_EQ_TOLERANCE", "EQ_TOLERANCE"]

MAX_ULP = 3
ALMOST_EQ_TOLERANCE = 1e-3   # custom_call @check.expect_almost_eq
EQ_TOLERANCE = 1e-4          # custom_call @check.eq on floats, and the *_const ops' default

CALL_KINDS = ("expect_close", "expect_almost_eq", "expect_eq", "eq")  # custom_call @check.*
OP_KINDS = ("expect_close", "expect_almost_eq", "expect_eq", "expect_eq_const",
            "expect_almost_eq_const")  # the check dialect's ops
# Every check kind, by the name the corpus spells them with (custom_call target or op name).
KINDS = tuple(dict.fromkeys(CALL_KINDS + OP_KINDS))
OP_MAX_ULP, OP_TOLERANCE = 1, 1e-4  # CheckOps.td's defaults


class Check(NamedTuple):
    """One assertion: its kind and the bounds it is judged by (``tolerance`` None: the
    kind's own)."""
    kind: str
    tolerance: float | None = None
    max_ulp: int = MAX_ULP
    min_ulp: int = 0


def check_of(kind: str, op_form: bool, attribute=lambda name: None) -> Check:
    """The Check a ``check`` op (``op_form``) or ``custom_call @check.<kind>`` asserts;
    ``attribute(name)`` reads the op's attribute as a Python value (None when absent).
    ValueError for a kind this module does not judge (``expect_serialized_eq``...), and for
    a bound that is not a number of 0 or more."""
    known = OP_KINDS if op_form else CALL_KINDS
    if kind not in known:
        form = "check op" if op_form else "check custom call"
        raise ValueError(f"{form} 'check.{kind}' is not judged here (known: "
                         f"{', '.join(known)})")
    if not op_form:  # (fixed tolerances: the interpreter reads no attribute of a call)
        return Check(kind)

    def number(name, whole: bool):
        v = attribute(name)
        ok = v is None or (not isinstance(v, bool) and isinstance(v, (int, float)) and v >= 0
                           and (not whole or v == int(v)) and math.isfinite(v))
        if not ok:
            raise ValueError(f"check op 'check.{kind}': its {name} is {v!r}, not a "
                             f"{'whole ' if whole else ''}number of 0 or more")
        return v
    if kind == "expect_close":
        top, bottom = number("max_ulp_difference", True), number("min_ulp_difference", True)
        return Check(kind, None, OP_MAX_ULP if top is None else int(top),
                     0 if bottom is None else int(bottom))
    if kind in ("expect_almost_eq", "expect_almost_eq_const"):
        tol = number("tolerance", False)
        return Check(kind, OP_TOLERANCE if tol is None else float(tol))
    return Check(kind)


class Verdict(NamedTuple):
    ok: bool
    detail: str = ""


def _is_float(dtype: np.dtype) -> bool:
    if dtype.kind == "f":
        return True
    try:
        ml_dtypes.finfo(dtype)  # bf16, float8 and float4 types
    except ValueError:
        return False
    return True


def _is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def _parts(x: np.ndarray) -> list:
    """The real arrays a value is judged by: itself, or its real and imaginary parts."""
    return [np.real(x), np.imag(x)] if _is_complex(x.dtype) else [x]


def _bits(x: np.ndarray) -> tuple:
    """(the bits of each element's magnitude as uint64, whether its sign bit is set)."""
    u = x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])
    u = u.astype(np.uint64)
    if not _signed(x.dtype):  # (f8E8M0FNU: exponent bits alone, no sign)
        return u, np.zeros(u.shape, bool)
    # Narrow float types (float8, float4 in a byte) keep their sign in their own top bit.
    sign_bit = np.uint64(1) << np.uint64(_storage_bits(x.dtype) - 1)
    negative = (u & sign_bit) != 0
    magnitude = u & ~sign_bit
    return magnitude, negative


def _signed(dtype: np.dtype) -> bool:
    """Whether a float type has a sign bit (f8E8M0FNU, all exponent, has none)."""
    return np.dtype(dtype).name != "float8_e8m0fnu"


def _storage_bits(dtype: np.dtype) -> int:
    try:
        return ml_dtypes.finfo(dtype).bits
    except ValueError:
        return np.finfo(dtype).bits


def ulp_distance(actual, expected) -> np.ndarray:
    """Per element ULP distance (uint64; complex: the larger of the two parts'), as the
    README states it: 0 when bitwise equal or both NaN; for two finite values the difference
    of their magnitudes' bits with the same sign, their sum with opposite signs (so +0 and -0
    are 0 apart); otherwise (one NaN, or an infinity against anything but itself) the largest
    uint64, which no tolerance admits."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape or a.dtype != e.dtype:
        raise ValueError(f"ulp_distance: {a.dtype}{list(a.shape)} against "
                         f"{e.dtype}{list(e.shape)}")
    if _is_complex(a.dtype):
        return np.maximum(*(ulp_distance(pa, pe) for pa, pe in zip(_parts(a), _parts(e))))
    if not _is_float(a.dtype):
        raise ValueError(f"ulp_distance: {a.dtype} is not a floating-point type")
    a = np.ascontiguousarray(a)
    e = np.ascontiguousarray(e)
    ma, na = _bits(a)
    me, ne = _bits(e)
    with np.errstate(invalid="ignore"):
        fa = a.astype(np.float64)
        fe = e.astype(np.float64)
    nan_a, nan_e = np.isnan(fa), np.isnan(fe)
    finite = np.isfinite(fa) & np.isfinite(fe)
    same_sign = na == ne
    dist = np.where(same_sign, np.where(ma >= me, ma - me, me - ma), ma + me)
    top = np.uint64(np.iinfo(np.uint64).max)
    bitwise = (ma == me) & same_sign
    out = np.where(finite, dist, top)
    out = np.where(bitwise | (nan_a & nan_e), np.uint64(0), out)
    return out.astype(np.uint64)


def almost_equal(actual, expected, tolerance: float) -> np.ndarray:
    """Per element: |a - e| <= tolerance for finite values (so +0 == -0), NaN only against
    NaN, an infinity only against the same infinity; complex: both parts."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    ok = np.ones(a.shape, bool)
    for pa, pe in zip(_parts(a), _parts(e)):
        with np.errstate(invalid="ignore", over="ignore"):
            fa = pa.astype(np.float64)
            fe = pe.astype(np.float64)
            nan_a, nan_e = np.isnan(fa), np.isnan(fe)
            finite = np.isfinite(fa) & np.isfinite(fe)
            close = np.abs(fa - fe) <= tolerance
            ok &= np.where(nan_a | nan_e, nan_a & nan_e,
                           np.where(finite, close, fa == fe))
    return ok


def exactly_equal(actual, expected) -> np.ndarray:
    """Per element IEEE ``==`` (NaN != NaN, +0 == -0); integers and bools compared as
    integers (ml_dtypes' int2/int4 too)."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if _is_complex(a.dtype):
        return (np.real(a).astype(np.float64) == np.real(e).astype(np.float64)) & \
            (np.imag(a).astype(np.float64) == np.imag(e).astype(np.float64))
    if _is_float(a.dtype):
        with np.errstate(invalid="ignore"):
            return a.astype(np.float64) == e.astype(np.float64)
    if a.dtype == np.bool_:
        return a == e
    # ml_dtypes' narrow integers compare through Python ints; uint64 would not fit int64.
    big = np.uint64 if a.dtype.kind == "u" or str(a.dtype).startswith("uint") else np.int64
    return a.astype(big) == e.astype(big)


def _is_integer_like(dtype: np.dtype) -> bool:
    return not (_is_float(dtype) or _is_complex(dtype))


def _show(x) -> str:
    if isinstance(x, np.generic) and _is_float(x.dtype) and x.dtype.itemsize <= 8:
        v = float(x)
        return repr(v) if math.isfinite(v) else str(v)
    return repr(x.item()) if hasattr(x, "item") else repr(x)


def _first_bad(ok: np.ndarray, a: np.ndarray, e: np.ndarray, what: str, worst=None) -> str:
    bad = np.flatnonzero(~ok.reshape(-1))
    if worst is not None:
        i = int(np.argmax(worst.reshape(-1)))
    else:
        i = int(bad[0])
    idx = [int(j) for j in np.unravel_index(i, a.shape)] if a.ndim else []
    ax, ex = a.reshape(-1)[i], e.reshape(-1)[i]
    return (f"{len(bad)} of {ok.size} elements differ ({what}); e.g. at {idx}: got "
            f"{_show(ax)}, expected {_show(ex)}")


def judge(kind: str, actual, expected, tolerance: float | None = None, *,
          max_ulp: int = MAX_ULP, min_ulp: int = 0) -> Verdict:
    """Whether check ``kind`` (one of ``KINDS``) holds for ``actual`` against ``expected``
    (same shape and dtype, else a failed Verdict saying so); ``tolerance`` overrides the
    kind's own, ``max_ulp``/``min_ulp`` bound ``expect_close``'s distances (``check_of``
    reads them off an op)."""
    if kind not in KINDS:
        raise ValueError(f"unknown check kind {kind!r}; expected one of {', '.join(KINDS)}")
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape or a.dtype != e.dtype:
        return Verdict(False, f"got {a.dtype}{list(a.shape)}, expected "
                              f"{e.dtype}{list(e.shape)}")
    if a.size == 0:
        return Verdict(True)
    if kind == "eq":
        kind = "expect_eq" if _is_integer_like(a.dtype) else "expect_almost_eq"
        tolerance = EQ_TOLERANCE if tolerance is None else tolerance
    elif kind == "expect_eq_const":
        kind = "expect_eq"
    elif kind == "expect_almost_eq_const":
        kind = "expect_almost_eq"
        tolerance = EQ_TOLERANCE if tolerance is None else tolerance
    if kind == "expect_close" and _is_integer_like(a.dtype):
        kind = "expect_eq"  # no ULPs between integers: only equality is close
    if kind == "expect_almost_eq" and _is_integer_like(a.dtype):
        kind = "expect_eq"
    if kind == "expect_close":
        d = ulp_distance(a, e)
        ok = (d <= np.uint64(max_ulp)) & (d >= np.uint64(min_ulp))
        if ok.all():
            return Verdict(True)
        if min_ulp and not (d >= np.uint64(min_ulp)).all():
            return Verdict(False, _first_bad(ok, a, e, f"min ULP distance {min_ulp}, nearest "
                                                       f"{int(d.min())} ULP", -d.astype(
                                                           np.float64)))
        worst = int(d.max())
        shown = "not comparable" if worst == np.iinfo(np.uint64).max else f"{worst} ULP"
        return Verdict(False, _first_bad(ok, a, e, f"max ULP distance {max_ulp}, worst "
                                                   f"{shown}", d))
    if kind == "expect_almost_eq":
        tol = ALMOST_EQ_TOLERANCE if tolerance is None else float(tolerance)
        ok = almost_equal(a, e, tol)
        if ok.all():
            return Verdict(True)
        return Verdict(False, _first_bad(ok, a, e, f"tolerance {tol:g}"))
    ok = exactly_equal(a, e)
    if ok.all():
        return Verdict(True)
    return Verdict(False, _first_bad(ok, a, e, "exact"))
