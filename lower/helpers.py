"""Helpers every rule uses: comparisons typed by element type, complex-aware min/max, XLA's
conversion semantics, full-like broadcasts."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo


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
    """Convert with XLA's semantics: to bool means ``!= 0``; complex to real takes the real
    part."""
    et = hlo.from_numpy(dtype)
    src = x.type.element_type
    if src is et:
        return x
    if et.kind == "bool" and src.kind != "bool":
        zero = full_like(b, 0, x.type)
        return compare_hlo(b, x, zero, "NE")
    if src.kind == "complex" and et.kind != "complex":
        x = b.real(x)
        if x.type.element_type is et:
            return x
    return b.convert(x, et)


def full_like(b, value, type_):
    """A constant of ``type_`` filled with ``value`` (a broadcast of a scalar)."""
    scalar = b.constant(np.asarray(value, dtype=type_.dtype))
    if not type_.shape:
        return scalar
    return b.broadcast_in_dim(scalar, type_.shape, [])
