"""How two executors' results are compared, and how a difference is classified.

The policy, per result array (``compare``):

- integers and i1: exactly;
- floats: equal bits, or both NaN, or at most ``ULP_LIMIT`` units in the last place apart,
  counted in the result's own type (complex numbers: per component, except that elements of
  the same non-finite class — C99's complex infinities and NaNs — agree);
- a shape or dtype difference is always a disagreement.

What is left is a ``Difference``. A ``Rule`` explains a difference when it is a known
semantic difference between the executors rather than a bug in either; each rule says why.
Programs carry traits from their generator (``mhlo_ir.strategies``): "random" results are not
compared at all (their bits are implementation-defined), and "reassociates"/"approximates"
float results are held to a relative tolerance instead of ``ULP_LIMIT``, and then counted as
agreeing within tolerance, not as disagreeing.
"""

from __future__ import annotations

import attrs
import ml_dtypes
import numpy as np

from .conformance.checks import _is_float, ulp_distance

__all__ = ["ULP_LIMIT", "Difference", "Rule", "RULES", "compare", "classify", "ulp_distance"]

ULP_LIMIT = 4


@attrs.frozen
class Difference:
    """Where two results differ: result index, the class of the difference, a short
    description with one example element, and the rule that explains it (None: unexplained,
    a disagreement)."""

    index: int
    kind: str          # "type", "integer", "float", "nan"
    detail: str
    explained_by: str | None = None


@attrs.frozen
class Rule:
    name: str
    reason: str


RULES = {
    "subnormal_flush": Rule(
        "subnormal_flush",
        "XLA:CPU computes with denormals flushed to zero (its CPU runtime sets FTZ/DAZ); the "
        "StableHLO interpreter keeps them, as the spec says. A float that is zero on one side "
        "and subnormal on the other, or a program that agrees once its subnormal inputs are "
        "zeroed, differs for this reason."),
    "tolerance": Rule(
        "tolerance",
        "The program sums floats in an order each executor picks (reductions, dots, "
        "convolutions, FFTs) or computes functions XLA approximates (exp, log, tanh, "
        "erf...): its float results are held to a relative tolerance of 2**-(mantissa bits "
        "- 6) instead of 4 ULP, relative to the larger of the element and the result's own "
        "magnitude (the smaller of the two executors' largest finite magnitudes, and at "
        "least 1): a sum whose terms cancel is only exact to about the terms' size."),
    "inexact_upstream": Rule(
        "inexact_upstream",
        "An integer or boolean result computed from floats whose last bits the spec leaves "
        "to the executor (sums in an order it picks, approximated functions: the program's "
        "\"reassociates\" and \"approximates\" ops, traced value by value by the "
        "generator): a conversion to an integer, a comparison or an is_finite of such a "
        "float may come out either way."),
    "complex_non_finite": Rule(
        "complex_non_finite",
        "C99 Annex G: a complex value with an infinite part is an infinity (whatever its other "
        "part), else one with a NaN part is a NaN. What the other part holds depends on the "
        "arithmetic an executor chose: XLA's FFT skips the multiplications by 1+0j that a "
        "direct DFT makes, and (nan+0j)*(1+0j) is nan+nanj, (inf+0j)*(1+0j) inf+nanj; "
        "XLA's complex power gives inf+nanj where the interpreter's gives inf+0j. StableHLO "
        "does not specify complex special values: NaNs agree, and infinities whose "
        "infinite part is the same (+inf real part, say) on both sides."),
    "e8m0_no_zero": Rule(
        "e8m0_no_zero",
        "f8E8M0FNU has no zero and no sign: XLA rounds values below its range to the "
        "smallest value or gives NaN where the interpreter picks the other. A program that "
        "converts values into it (trait \"e8m0_lossy\") carries that choice into whatever "
        "it computes from them, so its differences downstream are this one too."),
}


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _isnan(a):
    return np.isnan(a.astype(np.float64))


# The traits under which float results are held to a tolerance instead of ULP_LIMIT.
_LOOSE = frozenset({"reassociates", "approximates"})


def _tolerance(dtype) -> float:
    mant = int(ml_dtypes.finfo(dtype).nmant)
    return 2.0 ** -(mant - 6) if mant > 6 else 1.0


def _tiny(dtype) -> float:
    """The smallest normal value of ``dtype`` (0 for a type without subnormals' notion)."""
    try:
        return float(ml_dtypes.finfo(dtype).smallest_normal)
    except (ValueError, TypeError):
        return 0.0


def _flush_tiny(dtype) -> float:
    """The smallest normal value of the type XLA:CPU computes ``dtype`` in, where it flushes
    subnormals: f32 for types narrower than it in exponent (f16, the 8- and 4-bit floats are
    computed in f32, whose flush cannot reach their own subnormals), the type itself for
    bf16, f32 and f64."""
    if ml_dtypes.finfo(dtype).maxexp < ml_dtypes.finfo(np.float32).maxexp:
        return _tiny(np.float32)
    return _tiny(dtype)


def _is_subnormal(a: np.ndarray, dtype) -> np.ndarray:
    v = np.abs(a.astype(np.float64))
    return (v > 0) & (v < _flush_tiny(dtype))


def _compare_floats(i, x, y, traits, name, scale=None, computed_in=None):
    """Differences between float arrays ``x`` (XLA) and ``y`` (interpreter). ``scale``: a
    function giving the magnitude of the whole result (``_array_scale``), passed down to the
    parts of a complex one; ``computed_in``: the float type the result's inexact values were
    computed in, where narrower than its own (its tolerance is that type's)."""
    if x.dtype.kind == "c":
        memo = []

        def scale():  # the complex magnitude, computed only where parts differ
            if not memo:
                memo.append(_array_scale(x, y))
            return memo[0]
        out = _complex_parts(i, x, y, traits, name, scale, computed_in)
        if any(d.explained_by is None for d in out):
            cx, cy = _complex_class(x), _complex_class(y)
            # Two infinities agree where one infinite part is the same on both sides (the
            # other part is the arithmetic's); +inf against -inf, or a real infinity
            # against an imaginary one, is a difference. NaNs have no parts to agree on.
            with np.errstate(invalid="ignore"):
                same_inf = (np.isinf(x.real) & (x.real == y.real)) | \
                    (np.isinf(x.imag) & (x.imag == y.imag))
            same = (cx == cy) & ((cx == 1) | ((cx == 2) & same_inf))
            if same.any():
                y2 = y.copy()
                y2[same] = x[same]
                if all(d.explained_by for d in _complex_parts(i, x, y2, traits, name, scale,
                                                              computed_in)):
                    out = [attrs.evolve(d, explained_by=d.explained_by or "complex_non_finite")
                           for d in out]
        return out
    bad = np.asarray(ulp_distance(x, y) > ULP_LIMIT)
    if not bad.any():
        return []
    with np.errstate(all="ignore"):
        return _explain(i, x, y, bad, traits, name,
                        _array_scale(x, y) if scale is None else scale(), computed_in)


def _complex_parts(i, x, y, traits, name, scale, computed_in=None):
    out = []
    for part, px, py in (("real", x.real, y.real), ("imag", x.imag, y.imag)):
        out += _compare_floats(i, np.ascontiguousarray(px), np.ascontiguousarray(py),
                               traits, f"{name} ({part})", scale, computed_in)
    return out


def _complex_class(z):
    """C99 Annex G's classes of complex values, per element: 2 an infinity (either part
    infinite, even beside a NaN), 1 a NaN (a NaN part and no infinite one), 0 finite."""
    inf = np.isinf(z.real) | np.isinf(z.imag)
    nan = np.isnan(z.real) | np.isnan(z.imag)
    return np.where(inf, 2, np.where(nan, 1, 0))


def _array_scale(x, y) -> float:
    """The magnitude of a result as a whole: the smaller of the two executors' largest finite
    magnitudes (the smaller, so that a wrong huge value on one side does not widen its own
    tolerance). Sums of terms that cancel (an FFT's bins, a dot of mixed signs) are exact to
    about the terms' size, not their own."""
    with np.errstate(all="ignore"):
        mx = [np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
              for a in (x, y)]
    tops = [float(m[np.isfinite(m)].max()) if np.isfinite(m).any() else 0.0 for m in mx]
    return min(tops)


def _explain(i, x, y, bad, traits, name, array_scale=0.0, computed_in=None):
    # 0-d results as 1-element arrays: numpy's scalars take neither masks nor indices
    x, y, bad = np.atleast_1d(x), np.atleast_1d(y), np.atleast_1d(bad)
    nx, ny = _isnan(x), _isnan(y)
    loose = traits & _LOOSE
    explained = None
    fx, fy = x.astype(np.float64), y.astype(np.float64)
    if np.dtype(x.dtype).name == "float8_e8m0fnu":
        # Its premise only: a value below its range became its smallest value on one side,
        # NaN on the other (bits 0x00 against 0xFF).
        ends = (x.view(np.uint8) | y.view(np.uint8)) == 0xFF
        ends &= (x.view(np.uint8) & y.view(np.uint8)) == 0
        if (ends | ~bad).all():
            explained = "e8m0_no_zero"
    else:
        sub = (_is_subnormal(x, x.dtype) | _is_subnormal(y, y.dtype) | (fx == 0) | (fy == 0))
        flush = bad & sub & ~nx & ~ny & (np.abs(fx - fy) <= 2 * _flush_tiny(x.dtype))
        if (flush == bad).all():
            explained = "subnormal_flush"
        elif loose:
            tol = _tolerance(x.dtype)
            if computed_in is not None:
                tol = max(tol, _tolerance(computed_in))
            scale = np.maximum(np.maximum(np.abs(fx), np.abs(fy)), max(array_scale, 1.0))
            # (an infinity is within no tolerance of a number: inf - 1 <= tol * inf holds)
            close = ((np.abs(fx - fy) <= tol * scale) & np.isfinite(fx) & np.isfinite(fy)) \
                | (nx & ny) | ((fx == fy) & ~nx)
            if (close | ~bad).all():
                explained = "tolerance"
    where = tuple(int(v) for v in np.argwhere(bad)[0]) if bad.ndim else ()
    kind = "nan" if (nx != ny)[bad].any() else "float"
    detail = (f"{name}: {int(bad.sum())} of {bad.size} elements differ, e.g. at {list(where)}: "
              f"XLA {x[where]!r}, interpreter {y[where]!r}")
    return [Difference(i, kind, detail, explained)]


def compare(xla: list, interpreter: list, traits=frozenset(), inexact=(),
            computed_in=()) -> list:
    """The differences between two executors' results (empty: they agree). ``inexact``: per
    result, whether it is computed from inexact floats (``Program.inexact``); an integer or
    boolean difference in such a result is explained (``inexact_upstream``), and only such a
    float result is held to the tolerance of the program's loose traits: of its own type, or
    of ``computed_in[i]`` where given (``Program.computed_in``: the narrower float type its
    inexact values were computed in)."""
    if len(xla) != len(interpreter):
        return [Difference(-1, "type", f"{len(xla)} results from XLA, {len(interpreter)} from "
                                       "the interpreter")]
    out = []
    for i, (x, y) in enumerate(zip(xla, interpreter)):
        x, y = np.asarray(x), np.asarray(y)
        name = f"result {i} {x.dtype}{list(x.shape)}"
        if x.shape != y.shape or x.dtype != y.dtype:
            out.append(Difference(i, "type", f"result {i}: XLA {x.dtype}{list(x.shape)}, "
                                             f"interpreter {y.dtype}{list(y.shape)}"))
            continue
        if x.size == 0 or "random" in traits:  # (random values: their types alone agree)
            continue
        if x.dtype.kind == "c" or _is_float(x.dtype):
            # A result computed from no inexact float is held to ULP_LIMIT even in a
            # program that has approximated ops elsewhere (the tolerance is per result).
            loose = frozenset(traits)
            if inexact and i < len(inexact) and not inexact[i]:
                loose -= _LOOSE
            out += _compare_floats(i, x, y, loose, name, None,
                                   computed_in[i] if i < len(computed_in) else None)
            continue
        view = _UINT.get(x.dtype.itemsize)
        xb = x.view(view) if view is not None and x.dtype != bool else x
        yb = y.view(view) if view is not None and y.dtype != bool else y
        bad = xb != yb
        if bad.any():
            where = tuple(int(v) for v in np.argwhere(bad)[0]) if bad.ndim else ()
            out.append(Difference(i, "integer", f"{name}: {int(bad.sum())} of {bad.size} "
                                                f"elements differ, e.g. at {list(where)}: XLA "
                                                f"{x[where]!r}, interpreter {y[where]!r}",
                                  "inexact_upstream" if i < len(inexact) and inexact[i]
                                  else None))
    if "e8m0_lossy" in traits:
        out = [d if d.explained_by or d.kind == "type" else
               attrs.evolve(d, explained_by="e8m0_no_zero") for d in out]
    return out


def classify(differences) -> str | None:
    """The class a program's differences put it in: None when there are none or every one is
    explained, else ``disagreement:<kind>`` of the first unexplained one."""
    for d in differences:
        if d.explained_by is None:
            return f"disagreement:{d.kind}"
    return None
