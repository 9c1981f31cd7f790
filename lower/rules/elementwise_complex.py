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

import mhlo_ir as hlo

from ..semantics import compare_hlo, full_like
from ..mlir import register_lowering
# NOTE: elementwise registers the one-op rules of sin, cos, log1p, sqrt and log; this module's
# replace them, so it must register after it, whichever module imports this one first.
from .elementwise import _unary


def _or_complex(method: str, expand, expands_with):
    """``(b, z)`` -> the builder method on real ``z``, ``expand(b, z)`` on complex ``z``: what
    the rule makes (elementwise._unary gives it the direct path real values take).

    With jax's ``accuracy`` param the op itself is written with that result_accuracy, except
    on a complex operand where ``expands_with(accuracy)``: jax's sin and cos rules expand
    complex operands whatever the accuracy, and jaxlib's expander still expands log, log1p
    and sqrt written with ``AccuracyMode.DEFAULT`` (not HIGHEST or a tolerance)."""
    op = getattr(hlo.Builder, method)

    def values(b, z):
        if z.type.element_type.kind == "complex":
            return expand(b, z)
        return op(b, z)
    values.direct = op  # (what an accuracy asks for: see elementwise._unary)
    values.expands_with = expands_with
    return values


def _always(accuracy) -> bool:
    return True


def _default_mode(accuracy) -> bool:
    return getattr(accuracy, "name", None) == "DEFAULT" and not hasattr(accuracy, "atol")


def _parts(b, z):
    return b.real(z), b.imag(z)


def _sinh_cosh(b, y):
    two = full_like(b, 2, y.type)
    e1m, e2m = b.exponential_minus_one(y), b.exponential_minus_one(b.negate(y))
    return (b.divide(b.subtract(e1m, e2m), two),
            b.divide(b.add(b.add(e1m, e2m), two), two))


def _trig(cosine: bool):
    """sin or cos of a complex ``x + iy``: sin = (sin x cosh y, cos x sinh y), cos =
    (cos x cosh y, -sin x sinh y); when x is zero, the part with the ``sinh`` factor of
    sin's real / cos's imaginary side is exactly zero (not ``0 * inf``)."""
    def expand(b, z):
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
        return b.select(x_is_zero, at_zero, b.complex(re, im))
    return expand


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


def _log1p(b, z):
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
    return b.complex(re, b.atan2(y, xp1))


def _hypot_parts(b, mx, mn, one, two, sq_2, zero):
    """The expander's hypot of (mx, mn), mx >= mn >= 0: sqrt(2) * mx when equal, mx + mx r / 2
    where sqrt(1 + r) rounds to 1, else mx * sqrt(1 + r), r = (mn / mx)^2."""
    q = b.divide(mn, mx)
    r = b.multiply(q, q)
    sqa = b.sqrt(b.add(one, r))
    small = b.and_(compare_hlo(b, sqa, one, "EQ"), compare_hlo(b, r, zero, "GT"))
    return b.select(compare_hlo(b, mx, mn, "EQ"), b.multiply(sq_2, mx),
                    b.select(small, b.add(mx, b.divide(b.multiply(mx, r), two)),
                             b.multiply(mx, sqa)))


def _sqrt(b, z):
    """Complex sqrt as StableHLO's complex math expander computes it (jaxlib expands
    ``stablehlo.sqrt`` so before XLA sees it; an ``mhlo.sqrt`` reaches XLA's own, which is
    wrong on finite values: ``sqrt(-4+0j)`` gave ``-8.7e-08+2j``). With u = sqrt((hypot(x, y)
    + |x|) / 2): ``u + i y/(2u)`` for x >= 0, ``|y|/(2u) + i sgn(y) u`` otherwise, and where u
    underflows to 0 or overflows, u and |y|/u from square roots of the parts scaled apart;
    term for term as the expander writes it (its constants, its order of operations)."""
    x, y = _parts(b, z)
    t = x.type
    zero, one, two = full_like(b, 0, t), full_like(b, 1, t), full_like(b, 2, t)
    sq_2 = full_like(b, 1.4142135623730951, t)
    ax, ay = b.abs(x), b.abs(y)
    eq = compare_hlo(b, ax, ay, "EQ")
    sq_ax = b.sqrt(ax)
    u_eq = b.divide(b.multiply(sq_ax, full_like(b, 1.5537739740300374, t)), sq_2)
    mx, mn = b.maximum(ax, ay), b.minimum(ax, ay)
    hyp = _hypot_parts(b, mx, mn, one, two, sq_2, zero)
    u_general = b.sqrt(b.add(b.divide(hyp, two), b.divide(ax, two)))
    extreme = b.or_(compare_hlo(b, u_general, zero, "EQ"),
                    compare_hlo(b, u_general, full_like(b, np.inf, t), "EQ"))
    gt, lt = compare_hlo(b, ax, ay, "GT"), compare_hlo(b, ax, ay, "LT")
    r0 = b.select(eq, one, b.select(lt, b.divide(ax, ay), b.divide(ay, ax)))
    abs_r0 = b.abs(r0)
    h = _hypot_parts(b, b.maximum(one, abs_r0), b.minimum(one, abs_r0), one, two, sq_2, zero)
    sq_1h = b.sqrt(b.add(one, h))
    sq_ay = b.sqrt(ay)
    sq_rh = b.sqrt(b.add(r0, h))
    u = b.select(eq, u_eq, b.select(extreme, b.select(
        gt, b.multiply(sq_ax, b.divide(sq_1h, sq_2)),
        b.multiply(sq_ay, b.divide(sq_rh, sq_2))), u_general))
    sq_ratio = b.select(eq, one, b.select(lt, b.divide(sq_ax, sq_ay), b.divide(sq_ay, sq_ax)))
    ay_div_u = b.select(eq, b.divide(sq_ay, full_like(b, 2.19736822693562, t)), b.select(
        extreme, b.select(gt, b.divide(b.multiply(sq_ay, sq_ratio), b.multiply(sq_1h, sq_2)),
                          b.divide(sq_ay, b.multiply(sq_rh, sq_2))),
        b.divide(ay, b.multiply(u_general, two))))
    y_neg = compare_hlo(b, y, zero, "LT")
    re = b.select(compare_hlo(b, x, zero, "GE"), u, ay_div_u)
    im = b.select(compare_hlo(b, x, zero, "LT"), b.select(y_neg, b.negate(u), u),
                  b.select(y_neg, b.negate(ay_div_u), ay_div_u))
    return b.complex(re, im)


def _square_low(b, v, vv, splitter):
    """The expander's ``square_dekker`` low part of ``vv = fl(v*v)``, in its order of
    operations (Veltkamp's split by ``splitter``)."""
    sv = b.multiply(splitter, v)
    hi = b.add(sv, b.subtract(v, sv))
    lo = b.subtract(v, hi)
    hl = b.multiply(hi, lo)
    return b.add(b.add(b.add(b.add(b.negate(vv), b.multiply(hi, hi)), hl), hl),
                 b.multiply(lo, lo))


def _log(b, z):
    """Complex log as StableHLO's complex math expander computes it (an ``mhlo.log`` reaches
    XLA's own: ``log(3e38+3e38j)`` overflowed to ``inf``, and near |z| = 1 it lost the log1p
    accuracy): the real part ``log1p(x^2 + y^2 - 1)/2``, the sum carried with its rounding
    errors (Dekker squares, fast two-sums), where that is below 1/2 in size, else
    ``log(mx) + log1p((mn/mx)^2)/2``; the imaginary part ``atan2(y, x)``."""
    x, y = _parts(b, z)
    t = x.type
    largest = float(np.finfo(t.element_type.dtype).max)
    splitter = full_like(b, 134217729 if largest > 1e308 else 4097 if largest > 1e38 else 65,
                         t)
    neg1, half, one = full_like(b, -1.0, t), full_like(b, 0.5, t), full_like(b, 1.0, t)
    yy, xx = b.multiply(y, y), b.multiply(x, x)
    gt = compare_hlo(b, yy, xx, "GT")
    mxh, mnh = b.select(gt, yy, xx), b.select(gt, xx, yy)
    y_low, x_low = _square_low(b, y, yy, splitter), _square_low(b, x, xx, splitter)
    h2 = b.add(neg1, mxh)
    h1 = b.add(h2, mnh)
    h0 = b.add(h1, y_low)
    h = b.add(h0, x_low)
    low = b.add(b.add(b.add(b.subtract(mxh, b.subtract(h2, neg1)),
                            b.subtract(mnh, b.subtract(h1, h2))),
                      b.subtract(y_low, b.subtract(h0, h1))),
                b.subtract(x_low, b.subtract(h, h0)))
    s_sum = b.add(h, low)
    ax, ay = b.abs(x), b.abs(y)
    mx, mn = b.maximum(ax, ay), b.minimum(ax, ay)
    q = b.select(compare_hlo(b, mn, mx, "EQ"), one, b.divide(mn, mx))
    re = b.select(compare_hlo(b, b.abs(s_sum), half, "LT"),
                  b.multiply(half, b.log_plus_one(s_sum)),
                  b.add(b.log(mx), b.multiply(half, b.log_plus_one(b.multiply(q, q)))))
    return b.complex(re, b.atan2(y, x))


register_lowering("sin", _unary("sin", _or_complex("sine", _trig(cosine=False), _always)))
register_lowering("cos", _unary("cos", _or_complex("cosine", _trig(cosine=True), _always)))
register_lowering("log1p", _unary("log1p", _or_complex("log_plus_one", _log1p, _default_mode)))
register_lowering("sqrt", _unary("sqrt", _or_complex("sqrt", _sqrt, _default_mode)))
register_lowering("log", _unary("log", _or_complex("log", _log, _default_mode)))
