"""Python and numpy values as numpy arrays of an element type, refusing conversions that lose
the value.

``numpy.asarray(value, dtype)`` truncates 1.5 to 1, wraps 20 into int4 as 4, parses "3" as 3,
saturates 100.0 into float4 as 6 and turns 0.0 into NaN in float8_e8m0fnu. A constant built
that way is a silent wrong answer, so the builder converts through ``exact_array`` instead:

- integers (and bools) into integer types must be in range; floats into integer types must be
  finite whole numbers in range (``1.5 -> i32`` is refused, ``2.0 -> i32`` is 2);
- bools go into integer types as 0 and 1, as in numpy and JAX; into i1 only bools and the
  numbers 0 and 1 go;
- into float types, values round as numpy rounds them (``0.1`` into bf16 is the nearest bf16,
  tiny values may become 0), but a finite value beyond the type's largest finite value (IEEE
  overflow: past max + ulp(max)/2, or at it where the tie rounds away from max) is refused
  rather than turned into inf, NaN or the largest value; so is a value the type cannot hold
  at all (negative or zero numbers in f8E8M0FNU, inf in a type without infinities, NaN in
  f4E2M1FN). ``inf`` and ``nan`` given as such go into types that have them;
- complex values go into complex types only (pass ``.real`` for the real part);
- strings, None and other objects are refused (numpy would parse "3" or make an object array).

Arrays that already have the target dtype are returned as they are: the check costs nothing
for numpy data of the right type, which is what the lowering passes.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .dtypes import ElementType, from_numpy

__all__ = ["exact_array", "as_array"]


def as_array(value) -> np.ndarray:
    """``numpy.asarray(value)`` for a constant: numeric arrays only, with a message that says
    what was wrong otherwise. Python ints beyond int64 come back as an object array (and are
    checked by ``exact_array`` against the target type)."""
    if value.__class__ is np.ndarray:
        arr = value
    else:
        if value is None:
            raise TypeError("value None is not a number")
        try:
            arr = np.asarray(value)
        except ValueError as e:  # ragged nested lists
            raise ValueError(f"value {_show(value)} is not a rectangular array: {e}") from None
        except OverflowError:
            arr = np.array(value, dtype=object)
    kind = arr.dtype.kind
    if kind in "US":
        raise TypeError(f"value {_show(value)} holds strings, not numbers")
    if kind == "O":
        flat = arr.reshape(-1).tolist()
        for i, x in enumerate(flat):
            if x.__class__ is not int and not isinstance(x, np.integer):
                raise TypeError(_object_message(value, arr, i, x))
    elif kind in "mM":
        raise TypeError(f"value {_show(value)} holds {arr.dtype} values, not numbers")
    return arr


ACCEPTED_DTYPES = ("bool, int8-int64, uint8-uint64, float16/32/64, complex64/128 or an "
                   "ml_dtypes type (bfloat16, float8_*, float4_e2m1fn, int4, ...)")


def _object_message(value, arr, i, x) -> str:
    """Why an object array (``x`` at flat index ``i``) is no constant: an array the caller
    made with dtype object, or numbers numpy could only keep as objects."""
    where = "its element" if arr.ndim == 0 else f"element {_index(arr.shape, i)}"
    if isinstance(value, np.ndarray):
        return (f"value {_show(value)} has dtype object ({where} is {type(x).__name__} "
                f"{x!r:.40}); constants take arrays of dtype {ACCEPTED_DTYPES}: convert it "
                f"first, e.g. np.asarray(value, dtype=np.float32)")
    if isinstance(x, (float, complex, np.number, np.bool_)):
        return (f"value {_show(value)} mixes integers beyond int64 with {type(x).__name__} "
                f"{x!r:.40} ({where}), which numpy keeps only as dtype object: give the "
                f"integers as floats, or a numpy array of the dtype wanted")
    return (f"value {_show(value)}: {where} is {type(x).__name__} {x!r:.40}, not a number "
            f"(constants hold numbers of dtype {ACCEPTED_DTYPES})")


def exact_array(value, element_type) -> np.ndarray:
    """``value`` as a numpy array of ``element_type`` (an ElementType or numpy dtype), with
    the same value in every element; TypeError or ValueError (saying which element and why)
    when the type cannot hold it. See the module docstring for the rules."""
    et = element_type if element_type.__class__ is ElementType else from_numpy(element_type)
    dtype = et.dtype
    if et.kind in ("sint", "uint") and value.__class__ in (list, tuple):
        # numpy makes [2**64 - 1, 0] a float64 array, losing the integer: keep Python ints.
        src = _int_list(value)
        if src is None:
            src = as_array(value)
    else:
        src = as_array(value)
    sdt = src.dtype
    # ml_dtypes' kinds compare equal, hence the names (a Python property: the identity,
    # numpy's dtypes being singletons, answers first).
    if sdt is dtype or (sdt == dtype and sdt.name == dtype.name):
        return src
    skind = _kind(src)
    kind = et.kind
    if skind == "complex" and kind != "complex":
        raise TypeError(f"value {_show(value)} is complex, and {et.name} is not (pass the real "
                        f"part, e.g. value.real)")
    if kind == "bool":
        if skind != "bool":
            _check_each(src, lambda a: (a == 0) | (a == 1), value,
                        "is not a boolean: i1 holds True and False (or 0 and 1)")
        return _cast(src, dtype)
    if kind in ("sint", "uint"):
        if skind == "bool":
            return _cast(src, dtype)
        info = ml_dtypes.iinfo(dtype)
        if skind == "float":
            f = src.astype(np.float64)
            _check_each(f, np.isfinite, value,
                        f"is not a finite number, so it has no {et.name} value")
            _check_each(f, lambda a: a == np.floor(a), value,
                        f"is not an integer, and {et.name} holds integers (round it first, "
                        f"e.g. np.round(x))")
            # float(max) + 1 is exact for every integer type here (a power of two).
            _check_each(f, lambda a: (a >= float(info.min)) & (a < float(info.max) + 1), value,
                        f"is out of range for {et.name}, which holds {info.min}..{info.max}")
            return _cast(f, dtype)
        if src.size:
            lo, hi = _int_bounds(src)
            if lo < info.min or hi > info.max:
                bad = lo if lo < info.min else hi
                where = _where_int(src, bad)
                raise ValueError(f"{where}{bad} is out of range for {et.name}, which holds "
                                 f"{info.min}..{info.max}")
        return _cast(src, dtype)
    # float and complex targets
    if src.dtype.kind == "O":  # Python ints beyond int64
        try:
            src = np.array(src.tolist(), dtype=np.float64)
        except OverflowError:
            raise ValueError(f"value {_show(value)} is too large for {et.name}") from None
    out = _cast(src, dtype)
    if kind == "complex":
        comp = et.component
        _check_float(src.real.astype(np.float64), out.real, comp, value, "real part ")
        _check_float(src.imag.astype(np.float64) if skind == "complex" else None,
                     out.imag, comp, value, "imaginary part ")
        return out
    _check_float(src.astype(np.float64), out, et, value, "")
    return out


def _int_list(value):
    """A nested list of Python ints as an object array (None if it holds anything else)."""
    try:
        obj = np.array(value, dtype=object)
    except ValueError:
        return None
    for x in obj.reshape(-1).tolist():
        if x.__class__ is not int and not isinstance(x, np.integer):
            return None
    return obj


def _kind(arr) -> str:
    k = arr.dtype.kind
    if k == "b":
        return "bool"
    if k in "iuO":
        return "int"
    if k == "f":
        return "float"
    if k == "c":
        return "complex"
    return from_numpy(arr.dtype).kind.replace("sint", "int").replace("uint", "int")


def _cast(arr, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(arr.tolist() if arr.dtype.kind == "O" else arr, dtype=dtype)


def _check_float(src, out, et, value, part) -> None:
    """Refuse a float conversion that overflowed or changed the kind of value (finite, inf,
    nan). ``src`` is the source as float64 (None: all zero, as the imaginary part of a real
    value)."""
    if src is None:
        src = np.zeros(np.shape(out))
    got = np.asarray(out).astype(np.float64)
    fi = ml_dtypes.finfo(et.dtype)
    big = float(fi.max)
    # Round-to-nearest overflows beyond max + ulp/2, ulp the spacing in max's binade (in
    # f8E8M0FNU, all powers of two, that is max itself: 1.5 * 2**127 is the midpoint).
    limit = big + math.ldexp(1.0, math.frexp(big)[1] - et.mantissa_bits) / 2
    # At the midpoint ties go to the even neighbour: past max (f32, f8E4M3FNUZ, f4E2M1FN:
    # max's last bit is 1), or down to max (f8E4M3FN's 448 = 0x7E takes 464, as MLIR does);
    # f8E8M0FNU rounds its midpoints up.
    tie_up = et.name == "f8E8M0FNU" or int(np.asarray(fi.max, dtype=et.dtype).reshape(1).view(
        np.dtype(f"u{et.dtype.itemsize}"))[0]) & 1
    with np.errstate(all="ignore"):
        fin = np.isfinite(src)
        mag = np.abs(src)
        over = fin & ((mag > limit) | (mag == limit) if tie_up else mag > limit)
        if over.any():
            i = _first(over)
            raise ValueError(f"{_elem(value, src, i, part)} overflows {et.name}, whose largest "
                             f"finite value is {big:g}")
        lost = (fin & ~np.isfinite(got)) | (np.isinf(src) & (got != src)) | \
               (np.isnan(src) & ~np.isnan(got))
    if lost.any():
        i = _first(lost)
        res = got.reshape(-1)[i] if got.ndim else got[()]
        raise ValueError(f"{_elem(value, src, i, part)} is not representable in {et.name} "
                         f"(it would become {res:g})")


def _int_bounds(src) -> tuple:
    if src.dtype.kind == "O":
        flat = [int(x) for x in src.reshape(-1).tolist()]
        return min(flat), max(flat)
    return int(src.min()), int(src.max())


def _where_int(src, bad) -> str:
    if src.ndim == 0:
        return "value "
    flat = src.reshape(-1).tolist()
    return f"element {_index(src.shape, [int(x) for x in flat].index(bad))} = "


def _check_each(arr, ok, value, why) -> None:
    with np.errstate(all="ignore"):
        good = np.asarray(ok(arr))
    if not good.all():
        i = _first(~good)
        raise ValueError(f"{_elem(value, arr, i, '')} {why}")


def _first(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask).reshape(-1))[0])


def _elem(value, arr, i, part) -> str:
    arr = np.asarray(arr)
    x = arr.reshape(-1)[i] if arr.ndim else arr[()]
    x = x.item() if hasattr(x, "item") else x
    what = f"value {x!r}" if arr.ndim == 0 else f"element {_index(arr.shape, i)} = {x!r}"
    return f"the {part}of {what}" if part else what


def _index(shape, i) -> str:
    return "[" + ", ".join(map(str, np.unravel_index(i, shape))) + "]"


def _show(value) -> str:
    return f"{type(value).__name__} {value!r:.50}"
