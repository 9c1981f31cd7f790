"""XLA's element semantics as the rule families share them: comparisons typed by element
type, complex-aware min/max, conversions, full-like broadcasts, each dtype's extremes, and
the monoid reductions' identities and combiners.

They live here, not in one rule family, so that families share them without importing each
other's private names (a reduction, a window reduction and an all-reduce combine alike)."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import dtypes


def compare_type(element_type) -> str:
    """The comparison type XLA expects for an element type."""
    kind = element_type.kind
    if kind in ("float", "complex"):
        return "FLOAT"
    if kind == "sint":
        return "SIGNED"
    return "UNSIGNED"


def compare_hlo(b, x, y, direction: str, comparison_type: str | None = None):
    et = x.type.element_type
    return b.compare(x, y, direction, comparison_type or compare_type(et))


def total_order_compare(b, x, y, direction: str):
    """jax's ``eq_to``/``le_to``/``lt_to`` on real values: floats in XLA's total order
    (-NaN < -inf < ... < -0.0 < 0.0 < ... < inf < NaN), others as ``compare_hlo``."""
    et = x.type.element_type
    return b.compare(x, y, direction, "TOTALORDER" if et.kind == "float" else compare_type(et))


def minmax_hlo(b, x, y, op: str):
    """min/max; complex numbers are ordered lexicographically (real part, then imaginary)."""
    et = x.type.element_type
    if et.kind != "complex":
        return b.minimum(x, y) if op == "min" else b.maximum(x, y)
    direction = "LT" if op == "min" else "GT"
    rx, ry, ix, iy = b.real(x), b.real(y), b.imag(x), b.imag(y)
    real_first = compare_hlo(b, rx, ry, direction)
    real_eq = compare_hlo(b, rx, ry, "EQ")
    imag_first = compare_hlo(b, ix, iy, direction)
    pick_x = b.or_(real_first, b.and_(real_eq, imag_first))
    return b.select(pick_x, x, y)


def convert_hlo(b, x, dtype):
    """Convert with XLA's meaning as jax's rules want it: complex to anything not complex
    takes the real part first (to bool too: ``0+1j`` is False, as jax.jit makes it); to bool
    means ``!= 0``. Unlike ``jax_convert_hlo`` (jax's ``mlir.convert_hlo`` op for op, where
    a rule must print as jax's), no op where the type is already ``dtype``, and no convert
    after the comparison."""
    et = hlo.from_numpy(dtype)
    src = x.type.element_type
    if src is et:
        return x
    if src.kind == "complex" and et.kind != "complex":
        x = b.real(x)
        src = x.type.element_type
        if src is et:
            return x
    if et.kind == "bool" and src.kind != "bool":
        zero = full_like(b, 0, x.type)
        return compare_hlo(b, x, zero, "NE")
    return b.convert(x, et)


def jax_convert_hlo(b, x, dtype):
    """jax's ``mlir.convert_hlo`` op for op: to bool, ``x != 0`` first; then a convert, even
    to the type the value has (jax writes that one too, and so jax.jit's text has it)."""
    et = hlo.from_numpy(dtype)
    if et.kind == "bool":
        x = compare_hlo(b, x, full_like(b, 0, x.type), "NE")
    return b.convert(x, et)


def full_like(b, value, type_):
    """A constant of ``type_`` filled with ``value`` (a broadcast of a scalar)."""
    scalar = b.constant(np.asarray(value, dtype=type_.dtype))
    if not type_.shape:
        return scalar
    return b.broadcast_in_dim(scalar, type_.shape, [])


def lowest(dtype) -> np.ndarray:
    """The least value of ``dtype``: -inf where the type has infinities, else its most
    negative finite value (float8 types such as f8E4M3FN have no inf: -inf would be NaN)."""
    return dtypes.extreme(dtype, low=True)


def highest(dtype) -> np.ndarray:
    """The greatest value of ``dtype`` (see ``lowest``)."""
    return dtypes.extreme(dtype, low=False)


def all_ones(dtype) -> np.ndarray:
    """The identity of bitwise and: True, or every bit set (signed and unsigned)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array(True)
    return ~np.zeros((), dtype)


# -- monoids ------------------------------------------------------------------------------------

#: ``kind -> the region body that combines two of the kind reduction's scalars``: the name
#: of the one op that does (``Builder.region`` builds ``op(acc, x)`` from it without a body
#: call), or for max and min a function (complex numbers take several ops; see ``monoid``).
#: What reduce, reduce_window, all_reduce, reduce_scatter and scatter regions hold.
MONOIDS: dict = {
    "sum": "add",
    "prod": "multiply",
    "max": lambda r, a, e: minmax_hlo(r, a, e, "max"),
    "min": lambda r, a, e: minmax_hlo(r, a, e, "min"),
    "and": "and",
    "or": "or",
    "xor": "xor",
}


def monoid(kind: str, element_type):
    """``MONOIDS[kind]`` for values of ``element_type``: max and min of real numbers are one
    op (``maximum``, ``minimum``), named as the others are."""
    if kind in ("max", "min") and element_type.kind != "complex":
        return "maximum" if kind == "max" else "minimum"
    return MONOIDS[kind]


def monoid_identity(kind: str, dtype) -> np.ndarray:
    """The identity of the ``kind`` reduction in ``dtype``: the init of a reduction, and what
    window padding holds, so that neither changes a result."""
    dtype = np.dtype(dtype)
    if kind in ("sum", "or", "xor"):
        return np.zeros((), dtype)
    if kind == "prod":
        return np.ones((), dtype)
    if kind == "and":
        return all_ones(dtype)
    if kind == "max":
        return lowest(dtype)
    if kind == "min":
        return highest(dtype)
    raise KeyError(f"no monoid {kind!r}; known: {', '.join(MONOIDS)}")
