"""Complex sin, cos and log1p as jax.jit computes them, where one mhlo op does not.

- ``sin``/``cos``: jax's rules expand them (``_sin_complex``/``_cos_complex``): the real and
  imaginary parts from sin, cos and expm1 of the parts, with the part that would be
  ``0 * inf`` set to zero when the real part is zero (``sin(0+inf j)`` is ``0+inf j``, not
  ``nan+inf j``).
- ``log1p``: jax emits one ``stablehlo.log_plus_one``, which jaxlib's StableHLO pipeline
  expands (StableHLO's complex math expander) before XLA sees it; an ``mhlo.log_plus_one``
  reaches XLA unexpanded, whose own expansion gives ``log1p(-1+0j) = 0`` rather than
  ``-inf``. So the expander's algorithm is written out here, term for term: ``log(max) +
  log1p((min/max)^2)/2`` for huge values, ``log(|1+z|^2)/2`` near ``z = -1``, and otherwise
  ``log1p(2x + x^2 + y^2)/2`` with the squares and sums carried exactly (Dekker products,
  two-sums); the imaginary part is ``atan2(y, 1 + x)``.

Real operands keep the one-op rules of ``elementwise``.
"""

from __future__ import annotations

import numpy as np

from ..semantics import compare_hlo, full_like
from ..mlir import register_lowering
from .elementwise import _direct

_real_sin, _real_cos, _real_log1p = _direct("sine"), _direct("cosine"), _direct("log_plus_one")


def _parts(b, z):
    return b.real(z), b.imag(z)


def _sinh_cosh(b, y):
    two = full_like(b, 2, y.type)
    e1m, e2m = b.exponential_minus_one(y), b.exponential_minus_one(b.negate(y))
    return (b.divide(b.subtract(e1m, e2m), two),
            b.divide(b.add(b.add(e1m, e2m), two), two))


def _trig(real_rule, cosine: bool):
    """sin or cos of a complex ``x + iy``: sin = (sin x cosh y, cos x sinh y), cos =
    (cos x cosh y, -sin x sinh y); when x is zero, the part with the ``sinh`` factor of
    sin's real / cos's imaginary side is exactly zero (not ``0 * inf``)."""
    def rule(ctx, z, **params):
        if z.type.element_type.kind != "complex":
            return real_rule(ctx, z, **params)
        b = ctx.builder
        x, y = _parts(b, z)
        zero = full_like(b, 0, x.type)
        snh, csh = _sinh_cosh(b, y)
        if cosine:
            re, im = b.multiply(b.cosine(x), csh), b.multiply(b.negate(b.sine(x)), snh)
            at_zero = b.complex(re, zero)
        else:
            re, im = b.multiply(b.sine(x), csh), b.multiply(b.cosine(x), snh)
            at_zero = b.complex(zero, im)
        x_is_zero = compare_hlo(b, x, zero, "EQ")
        return [b.select(x_is_zero, at_zero, b.complex(re, im))]
    rule.__name__ = "_cos_lowering" if cosine else "_sin_lowering"
    return rule


_sin, _cos = _trig(_real_sin, False), _trig(_real_cos, True)


def _square_error(b, v, vv, split):
    """``v*v - vv`` for ``vv = fl(v*v)``, exactly (Dekker's product, Veltkamp's split)."""
    vc = b.multiply(v, split)
    hi = b.add(vc, b.subtract(v, vc))
    lo = b.subtract(v, hi)
    hh_lo = b.multiply(hi, lo)
    err = b.add(b.add(b.add(b.negate(vv), b.multiply(hi, hi)), hh_lo), hh_lo)
    return b.add(err, b.multiply(lo, lo))


def _sum_error(b, total, a, c):
    """``a + c - total`` for ``total = fl(a + c)``, exactly (Knuth's two-sum)."""
    c_part = b.subtract(total, a)
    a_part = b.subtract(total, c_part)
    return b.add(b.subtract(a, a_part), b.subtract(c, c_part))


def _log1p(ctx, z, **params):
    if z.type.element_type.kind != "complex":
        return _real_log1p(ctx, z, **params)
    b = ctx.builder
    x, y = _parts(b, z)
    t = x.type
    finfo = np.finfo(t.element_type.dtype)
    half, one = full_like(b, 0.5, t), full_like(b, 1, t)
    ax, ay = b.abs(x), b.abs(y)
    mx, mn = b.maximum(ax, ay), b.minimum(ax, ay)
    # Huge |z|: log(mx) + log1p((mn/mx)^2)/2.
    ratio = b.divide(mn, mx)
    r2 = b.select(compare_hlo(b, mn, mx, "EQ"), one, b.multiply(ratio, ratio))
    huge_re = b.add(b.log(mx), b.multiply(b.log_plus_one(r2), half))
    huge = compare_hlo(b, mx, full_like(b, float(np.sqrt(finfo.max) * 0.01), t), "GT")
    # Near z = -1: log(|1 + z|^2)/2.
    xp1 = b.add(x, one)
    yy = b.multiply(y, y)
    near_re = b.multiply(b.log(b.add(b.multiply(xp1, xp1), yy)), half)
    near = compare_hlo(b, b.add(b.abs(xp1), ay), full_like(b, 0.2, t), "LT")
    # Otherwise log1p(2x + y^2 + x^2)/2, the sum carried with its rounding errors.
    split = full_like(b, float(2 ** ((finfo.nmant + 2) // 2) + 1), t)
    x2 = b.add(x, x)
    s1 = b.add(x2, yy)
    xx = b.multiply(x, x)
    s2 = b.add(s1, xx)
    y_err = _square_error(b, y, yy, split)
    s3 = b.add(s2, y_err)
    x_err = _square_error(b, x, xx, split)
    s4 = b.add(s3, x_err)
    err = b.add(b.add(b.add(_sum_error(b, s1, x2, yy), _sum_error(b, s2, s1, xx)),
                      _sum_error(b, s3, s2, y_err)), _sum_error(b, s4, s3, x_err))
    mid_re = b.multiply(b.log_plus_one(b.add(s4, err)), half)
    re = b.select(huge, huge_re, b.select(near, near_re, mid_re))
    return [b.complex(re, b.atan2(y, xp1))]


register_lowering("sin", _sin)
register_lowering("cos", _cos)
register_lowering("log1p", _log1p)
