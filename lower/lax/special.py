"""Special functions for the tracing front end: the incomplete gamma functions and their
derivatives, the regularized incomplete beta function, the scaled Bessel function I0e and
gamma-distributed random numbers.

Each public function binds jax 0.10's primitive (``igamma``, ``igammac``, ``igamma_grad_a``,
``regularized_incomplete_beta``, ``bessel_i0e``, ``random_gamma[log_space]``), except
``random_gamma_grad``, which jax 0.10 traces inline, and so does this module. The ``*_impl``
functions are the decompositions lower.rules.special lowers those primitives with (through
``lower_fun``): the same series, continued fractions and Chebyshev expansions as XLA's
``math.cc`` and JAX (Cephes' coefficients), written op for op in the same order so the compiled
programs compute the same bits. Notably, the loops stop when *every* lane has converged, and
betainc's keeps all lanes iterating until then (XLA's choice): a result can depend on the other
elements of its array by an ulp or so, exactly as in JAX.

``random_gamma`` is Marsaglia and Tsang's rejection sampler on raw threefry keys (see
lower.lax.random), drawing the same numbers as ``jax.random.gamma`` on the same key data.
"""

from __future__ import annotations

import math

import ml_dtypes

import mhlo_ir as hlo
import numpy as np

from ..tracing import (Tracer, builder_of, as_tracer, abs, add, and_,
                       bind, broadcast_in_dim, broadcast_to, convert_element_type, digamma,
                       div, eq, erf_inv, exp, ge, gt, integer_pow, le, lgamma, log,
                       log1p, lt, max, mul, ne, neg, not_, or_, pow, reduce_or, rem, reshape,
                       shift_right_logical, slice, sqrt, sub, where)
from .control_flow import while_loop
from .indexing import bitcast_convert_type
from .random import random_bits, random_split

__all__ = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc",
           "regularized_incomplete_beta", "bessel_i0e", "random_gamma"]

# -- helpers ------------------------------------------------------------------------------------

def _c(like: Tracer, value) -> np.generic:
    """``value`` as a numpy scalar of ``like``'s dtype (a strongly typed literal)."""
    return np.asarray(value, like.dtype)[()]


def _lit(like: Tracer, value) -> Tracer:
    """``value`` as a traced scalar of ``like``'s dtype: ops on constants stay in the
    program, as in JAX's (XLA folds both alike)."""
    return as_tracer(like.builder, np.asarray(value, like.dtype))


def _full(like: Tracer, value) -> Tracer:
    """``value`` broadcast to ``like``'s shape and dtype (jax's ``full_like``)."""
    return broadcast_in_dim(_lit(like, value), like.shape, ())


def _isnan(x: Tracer) -> Tracer:
    return ne(x, x)


def _any(pred: Tracer) -> Tracer:
    return reduce_or(pred, tuple(range(pred.ndim))) if pred.ndim else pred


def _or(*preds) -> Tracer:
    out = preds[0]
    for p in preds[1:]:
        out = or_(out, p)
    return out


_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def _float_dtype(x: Tracer) -> np.dtype:
    # (ml_dtypes' float8 types are numpy kind 'V': asked of mhlo_ir's element types)
    if hlo.from_numpy(x.dtype).kind != "float":
        raise TypeError(f"special functions take floating-point arguments, got {x.dtype}")
    return x.dtype


def _is_low_precision(dtype) -> bool:
    """bf16 and f16, which jax's ``_up_and_broadcast`` computes in f32 (8-bit floats it
    computes in their own type)."""
    return np.dtype(dtype) in (_BFLOAT16, np.dtype(np.float16))


def up_and_broadcast(impl):
    """Run ``impl(*args, dtype=...)`` on operands broadcast to one shape, in float32 for
    16-bit floats (Cephes' constants and these loops need at least float32), converting the
    result back (JAX's ``_up_and_broadcast``)."""
    def run(*args):
        shape = tuple(np.broadcast_shapes(*(a.shape for a in args)))
        args = [broadcast_to(a, shape) for a in args]
        dtype = _float_dtype(args[0])
        if _is_low_precision(dtype):
            args = [convert_element_type(a, np.float32) for a in args]
            return convert_element_type(impl(*args, dtype=np.dtype(np.float32)), dtype)
        return impl(*args, dtype=dtype)
    run.__name__ = impl.__name__
    return run


def _operands(*args) -> list:
    """Trace the operands, Python scalars taking the traced operands' dtype, and broadcast
    them to one shape."""
    b = builder_of(args)
    like = next(a for a in args if isinstance(a, Tracer))
    args = [as_tracer(b, a, like.aval) if not isinstance(a, Tracer) else a for a in args]
    dtypes = {a.dtype for a in args}
    if len(dtypes) != 1:
        raise TypeError(f"operands have different dtypes {sorted(map(str, dtypes))}: convert "
                        "one explicitly")
    _float_dtype(args[0])
    shape = tuple(np.broadcast_shapes(*(a.shape for a in args)))
    return [broadcast_to(a, shape) for a in args]


def _naryop(name: str):
    def op(*args):
        args = _operands(*args)
        return bind(name, args, [args[0].aval.update(weak_type=False)])
    op.__name__ = name
    return op


igamma = _naryop("igamma")
igammac = _naryop("igammac")
igamma_grad_a = _naryop("igamma_grad_a")
regularized_incomplete_beta = _naryop("regularized_incomplete_beta")


def betainc(a, b, x) -> Tracer:
    """The regularized incomplete beta function I_x(a, b)."""
    return regularized_incomplete_beta(a, b, x)


def bessel_i0e(x: Tracer) -> Tracer:
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""
    _float_dtype(x)
    return bind("bessel_i0e", [x], [x.aval])


def random_gamma_grad(a, x) -> Tracer:
    """d(sample)/d(a) for a Gamma(a, 1) sample ``x`` (implicit reparameterization); traced
    inline, as in jax 0.10 (it is no primitive there)."""
    return up_and_broadcast(random_gamma_grad_impl)(*_operands(a, x))


# -- incomplete gamma: the series and the continued fraction --------------------------------

_VALUE, _DERIVATIVE, _SAMPLE_DERIVATIVE = "value", "derivative", "sample_derivative"


def _igamma_series(ax, x, a, enabled, dtype, mode):
    """P(a, x)'s power series sum_n x^n / (a+1)...(a+n), lanes frozen once converged; with
    its derivative in ``a`` for the two derivative modes."""
    eps = ml_dtypes.finfo(dtype).eps

    def body(vals):
        enabled, r, c, ans, x, dc_da, dans_da = vals
        r = r + _c(r, 1)
        dc_da = dc_da * (x / r) - (c * x) / (r * r)
        dans_da = dans_da + dc_da
        c = c * (x / r)
        ans = ans + c
        if mode == _VALUE:
            more = and_(enabled, gt(c / ans, _c(c, eps)))
        else:
            more = and_(enabled, gt(abs(dc_da / dans_da), _c(dc_da, eps)))
        new = (r, c, ans, x, dc_da, dans_da)
        return (more, *(where(enabled, n, o) for n, o in zip(new, vals[1:])))

    init = (enabled, a, _full(a, 1), _full(a, 1), x, _full(a, 0), _full(a, 0))
    vals = while_loop(lambda v: _any(v[0]), body, init)
    ans, dans_da = vals[3], vals[6]
    if mode == _VALUE:
        return (ans * ax) / a
    dlogax_da = log(x) - digamma(a + _c(a, 1))
    if mode == _DERIVATIVE:
        return ax * (ans * dlogax_da + dans_da) / a
    return neg(dans_da + ans * dlogax_da) * x / a


def _igammac_continued_fraction(ax, x, a, enabled, dtype, mode):
    """Q(a, x)'s continued fraction (Cephes' igamc), at most 2000 steps, with its derivative
    in ``a`` carried alongside; numerators and denominators are rescaled by eps when they
    grow past 1/eps."""
    eps = ml_dtypes.finfo(dtype).eps

    def cond(vals):
        return and_(lt(vals[5], _c(vals[5], 2000)), _any(vals[0]))

    def body(vals):
        (enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2,
         dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = vals
        c = c + _c(c, 1)
        y = y + _c(y, 1)
        z = z + _c(z, 2)
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        nonzero = ne(qk, _c(qk, 0))
        r = pk / qk
        t = where(nonzero, abs(div(sub(ans, r), r)), _full(r, 1))
        ans = where(nonzero, r, ans)
        dpk_da = dpkm1_da * z - pkm1 - dpkm2_da * yc + pkm2 * c
        dqk_da = dqkm1_da * z - qkm1 - dqkm2_da * yc + qkm2 * c
        dans_da_new = where(nonzero, div(dpk_da - ans * dqk_da, qk), dans_da)
        grad_step = where(nonzero, abs(dans_da_new - dans_da), _full(dans_da, 1))
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = dpkm1_da, dqkm1_da, dpk_da, dqk_da
        rescale = gt(abs(pk), integer_pow(_lit(pk, eps), -1))

        def scaled(v):
            return where(rescale, mul(v, _c(v, eps)), v)
        pkm2, pkm1, qkm2, qkm1 = map(scaled, (pkm2, pkm1, qkm2, qkm1))
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = map(
            scaled, (dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da))
        if mode == _VALUE:
            more = and_(enabled, gt(t, _c(t, eps)))
        else:
            more = and_(enabled, gt(grad_step, _c(grad_step, eps)))
        new = (ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2,
               dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da_new)
        # The step count c is shared by every lane, never frozen.
        return (more, *(n if i == 4 else where(enabled, n, o)
                        for i, (n, o) in enumerate(zip(new, vals[1:]))))

    y = _c(a, 1) - a
    z = x + y + _c(x, 1)
    c = _lit(x, 0)
    pkm2 = _full(x, 1)
    qkm2 = x
    pkm1 = x + _c(x, 1)
    qkm1 = z * x
    ans = pkm1 / qkm1
    t = _full(x, 1)
    dpkm2_da = _full(x, 0)
    dqkm2_da = _full(x, 0)
    dpkm1_da = _full(x, 0)
    dqkm1_da = neg(x)
    dans_da = (dpkm1_da - ans * dqkm1_da) / qkm1
    init = (enabled, ans, t, y, z, c, pkm1, qkm1, pkm2, qkm2,
            dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da)
    vals = while_loop(cond, body, init)
    ans = vals[1]
    if mode == _VALUE:
        return ans * ax
    dans_da = vals[14]
    dlogax_da = log(x) - digamma(a)
    if mode == _DERIVATIVE:
        return mul(ax, add(mul(ans, dlogax_da), dans_da))
    return neg(add(dans_da, mul(ans, dlogax_da)) * x)


def _log_ax(a, x):
    """log(x^a e^-x / Gamma(a)), and whether it underflows exp."""
    ax = a * log(x) - x - lgamma(a)
    underflow = lt(ax, neg(log(_lit(ax, ml_dtypes.finfo(ax.dtype).max))))
    return ax, underflow


def igamma_impl(a, x, *, dtype):
    """P(a, x): the series below max(1, a), one minus the continued fraction above."""
    is_nan = or_(_isnan(a), _isnan(x))
    x_is_inf = eq(x, _c(x, np.inf))
    a_is_zero = eq(a, _c(a, 0))
    x_is_zero = eq(x, _c(x, 0))
    domain_error = _or(lt(x, _c(x, 0)), lt(a, _c(a, 0)), and_(a_is_zero, x_is_zero), is_nan)
    use_igammac = and_(ge(x, _c(x, 1)), gt(x, a))
    ax, underflow = _log_ax(a, x)
    ax = exp(ax)
    enabled = not_(_or(x_is_zero, domain_error, underflow, x_is_inf))
    out = where(use_igammac,
                _c(a, 1) - _igammac_continued_fraction(
                    ax, x, a, and_(enabled, use_igammac), dtype, _VALUE),
                _igamma_series(ax, x, a, and_(enabled, not_(use_igammac)), dtype, _VALUE))
    out = where(x_is_zero, _full(a, 0), out)
    out = where(x_is_inf, _full(a, 1), out)
    return where(domain_error, _full(a, np.nan), out)


def igammac_impl(a, x, *, dtype):
    """Q(a, x) = 1 - P(a, x): one minus the series below max(1, a), else the continued
    fraction."""
    is_nan = or_(_isnan(a), _isnan(x))
    a_is_zero = eq(a, _c(a, 0))
    x_is_zero = eq(x, _c(x, 0))
    x_is_inf = eq(x, _c(x, np.inf))
    domain_error = _or(lt(x, _c(x, 0)), lt(a, _c(a, 0)), and_(a_is_zero, x_is_zero), is_nan)
    use_igamma = or_(lt(x, _c(x, 1)), lt(x, a))
    ax, underflow = _log_ax(a, x)
    enabled = not_(_or(domain_error, underflow, x_is_inf, a_is_zero))
    ax = exp(ax)
    series = _igamma_series(ax, x, a, and_(enabled, use_igamma), dtype, _VALUE)
    fraction = _igammac_continued_fraction(ax, x, a, and_(enabled, not_(use_igamma)), dtype,
                                           _VALUE)
    out = where(use_igamma, _c(a, 1) - series, fraction)
    out = where(or_(x_is_inf, a_is_zero), _full(out, 0), out)
    return where(domain_error, _full(a, np.nan), out)


def _igamma_derivative(a, x, dtype, mode):
    is_nan = or_(_isnan(a), _isnan(x))
    x_is_zero = eq(x, _full(x, 0))
    domain_error = or_(lt(x, _full(x, 0)), le(a, _full(a, 0)))
    use_igammac = and_(gt(x, _full(x, 1)), gt(x, a))
    ax, underflow = _log_ax(a, x)
    ax = exp(ax)
    enabled = not_(_or(x_is_zero, domain_error, underflow, is_nan))
    out = where(use_igammac,
                neg(_igammac_continued_fraction(ax, x, a, and_(enabled, use_igammac), dtype,
                                                mode)),
                _igamma_series(ax, x, a, and_(enabled, not_(use_igammac)), dtype, mode))
    out = where(x_is_zero, _full(out, 0), out)
    return where(or_(domain_error, is_nan), _full(a, np.nan), out)


def igamma_grad_a_impl(a, x, *, dtype):
    """dP(a, x)/da."""
    return _igamma_derivative(a, x, dtype, _DERIVATIVE)


def random_gamma_grad_impl(a, x, *, dtype):
    """-(dP/da) / (dP/dx) at a Gamma(a, 1) sample x: how the sample moves with a."""
    return _igamma_derivative(a, x, dtype, _SAMPLE_DERIVATIVE)


# -- regularized incomplete beta ------------------------------------------------------------

def _lentz(num_iterations, small, threshold, partial_numerator, partial_denominator, inputs):
    """A continued fraction b0 + a1/(b1 + a2/(b2 + ...)) by the modified Lentz method; it
    stops when every lane's last factor is within ``threshold`` of 1 (no lane is frozen)."""
    def cond(vals):
        return and_(lt(vals[0], num_iterations), vals[1])

    def body(vals):
        it, _, c_prev, d_prev, h = vals
        num = partial_numerator(it, *inputs)
        den = partial_denominator(it, *inputs)
        c = add(den, div(num, c_prev))
        tiny = _full(c, small)
        c = where(lt(abs(c), tiny), tiny, c)
        d = add(den, mul(num, d_prev))
        d = where(lt(abs(d), tiny), tiny, d)
        d = integer_pow(d, -1)
        delta = mul(c, d)
        h = mul(h, delta)
        unconverged = _any(ge(abs(sub(delta, _c(delta, 1.0))), _c(delta, threshold)))
        return [it + 1, unconverged, c, d, h]

    den = partial_denominator(0, *inputs)
    h = where(lt(abs(den), _c(den, small)), broadcast_in_dim(_lit(den, small), den.shape, ()),
              den)
    vals = while_loop(cond, body, [np.int32(1), np.bool_(True), h, _full(h, 0), h])
    return vals[4]


def regularized_incomplete_beta_impl(a, b, x, *, dtype):
    """I_x(a, b) by the continued fraction of DLMF 8.17.22, on the side of the symmetry
    I_x(a, b) = 1 - I_{1-x}(b, a) where it converges fast (x < (a+1)/(a+b+2))."""
    shape = a.shape

    def counter(it, like):
        if isinstance(it, Tracer):
            return broadcast_in_dim(it, shape, ())
        return broadcast_in_dim(as_tracer(like.builder, np.int32(it)), shape, ())

    def numerator(it, a, b, x):
        n = counter(it, a)
        even = eq(rem(n, _full(n, 2)), _full(n, 0))
        first = eq(n, _full(n, 1))
        m = div(n - _full(n, 1), _full(n, 2))
        m_is_zero = eq(m, _full(m, 0))
        m = convert_element_type(m, dtype)
        one, two = _full(a, 1), _full(a, 2.0)
        # m == 0: a form without a + 2m that stays accurate for tiny a under FTZ/DAZ.
        zero_num = neg(a + b) * x / (a + one)
        even_num = where(m_is_zero, zero_num,
                         neg(a + m) * (a + b + m) * x / ((a + two * m) * (a + two * m + one)))
        odd_num = m * (b - m) * x / ((a + two * m - one) * (a + two * m))
        return where(first, _full(x, 1.0), where(even, even_num, odd_num))

    def denominator(it, a, b, x):
        n = counter(it, a)
        return where(eq(n, _full(n, 0)), _full(x, 0), _full(x, 1))

    a_is_zero = or_(eq(a, _full(a, 0)), eq(b, _full(b, np.inf)))
    b_is_zero = or_(eq(b, _full(b, 0)), eq(a, _full(a, np.inf)))
    x_is_zero = eq(x, _full(x, 0))
    x_is_one = eq(x, _full(x, 1))
    is_nan = _or(_isnan(a), _isnan(b), _isnan(x))
    result_is_zero = or_(and_(b_is_zero, not_(x_is_one)), and_(a_is_zero, x_is_zero))
    result_is_one = or_(and_(a_is_zero, not_(x_is_zero)), and_(b_is_zero, x_is_one))
    result_is_nan = _or(lt(a, _full(a, 0)), lt(b, _full(b, 0)), lt(x, _full(x, 0)),
                        gt(x, _full(x, 1)))
    result_is_nan = or_(result_is_nan, or_(and_(a_is_zero, b_is_zero), is_nan))

    fast = lt(x, (a + _full(a, 1)) / (a + b + _full(b, 2.0)))
    a, b = where(fast, a, b), where(fast, b, a)
    x = where(fast, x, sub(_full(x, 1), x))

    finfo = ml_dtypes.finfo(dtype)
    small = (finfo.eps / 2).astype(dtype)
    fraction = _lentz(200 if np.dtype(dtype) == np.float32 else 600, small, small,
                      numerator, denominator, [a, b, x])

    # As a -> 0+, a * Gamma(a) = Gamma(a + 1) -> 1: drop the 1/a and lgamma(a) together.
    very_small = (finfo.tiny * 2).astype(dtype)
    lbeta_small_a = lgamma(b) - lgamma(a + b)
    lbeta = lgamma(a) + lbeta_small_a
    factor = where(lt(a, _full(a, very_small)),
                   exp(log1p(neg(x)) * b - lbeta_small_a),
                   exp(log(x) * a + log1p(neg(x)) * b - lbeta) / a)
    out = fraction * factor
    out = where(fast, out, sub(_full(out, 1), out))
    out = where(result_is_zero, _full(a, 0), out)
    out = where(result_is_one, _full(a, 1), out)
    return where(result_is_nan, _full(a, np.nan), out)


# -- Bessel I0e -------------------------------------------------------------------------------

# Cephes' Chebyshev coefficients for exp(-x) I0(x) on [0, 8] (A) and exp(-x) sqrt(x) I0(x)
# on (8, inf) in 32/x (B); float32 uses the trailing, larger terms only.
_I0E_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)
_I0E_TERMS = {np.dtype(np.float32): (18, 7), np.dtype(np.float64): (30, 25)}


def _chebyshev(x, coefficients):
    """Clenshaw's recurrence for sum' c_k T_k(x/2) (Cephes' chbevl)."""
    b0, b1, b2 = _full(x, 0), _full(x, 0), _full(x, 0)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + _full(x, c)
    return _c(x, 0.5) * (b0 - b2)


def bessel_i0e_impl(x):
    """exp(-|x|) I0(x) from Cephes' two Chebyshev expansions (16-bit floats in float32)."""
    dtype = _float_dtype(x)
    if np.dtype(dtype) not in _I0E_TERMS:  # (any other float in f32, as jax's)
        return convert_element_type(bessel_i0e_impl(convert_element_type(x, np.float32)),
                                    dtype)
    na, nb = _I0E_TERMS[np.dtype(dtype)]
    x = abs(x)
    small = _chebyshev(_full(x, 0.5) * x - _full(x, 2.0), _I0E_A[-na:])
    large = div(_chebyshev(_full(x, 32.0) / x - _full(x, 2.0), _I0E_B[-nb:]), sqrt(x))
    return where(le(x, _c(x, 8.0)), small, large)


# -- gamma random numbers ---------------------------------------------------------------------

def random_gamma(key, a, log_space: bool = False) -> Tracer:
    """Gamma(a, 1) samples (their logs if ``log_space``), one per element of ``a``, from raw
    threefry key data ``key`` (uint32[*k, 2], ``a``'s shape starting with ``k``)."""
    kshape = tuple(key.shape[:-1])
    if key.dtype != np.uint32 or not key.shape or key.shape[-1] != 2:
        raise TypeError(f"random_gamma takes raw threefry key data (uint32[..., 2]), got "
                        f"{key.aval.str_short()}")
    if tuple(a.shape[:len(kshape)]) != kshape:
        raise TypeError(f"random_gamma: a's shape {a.shape} must start with the keys' shape "
                        f"{kshape}")
    _float_dtype(a)
    return bind("random_gamma", [key, a], [a.aval.update(weak_type=False)],
                log_space=bool(log_space))


def _split_lanes(keys, num: int) -> list:
    """jax.random.split(key, num) of every lane's key (``keys``: uint32[n, 2]): ``num`` arrays
    of keys [n, 2]. The random_split primitive on the batch is jax's vmap of it, so the keys
    follow ``jax_threefry_partitionable`` as jax's do."""
    n = keys.shape[0]
    split = random_split(keys, (num,))
    return [reshape(slice(split, (0, i, 0), (n, i + 1, 2)), (n, 2)) for i in range(num)]


def _uniform_lanes(keys, dtype, lo=0.0, hi=1.0):
    """jax.random.uniform(key, (), dtype, lo, hi) for every lane's key: the mantissa bits of
    the key's random bits under an exponent of 1, less 1, scaled."""
    finfo = ml_dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = nbits if nmant >= 8 else 8
    uint = np.dtype(f"uint{nbits}")
    bits = random_bits(keys, rng_bits, ())
    if rng_bits != nbits:
        bits = convert_element_type(bits, uint)
    bits = or_(shift_right_logical(bits, np.asarray(rng_bits - nmant, uint)[()]),
               np.asarray(1.0, dtype).view(uint)[()])
    floats = bitcast_convert_type(bits, dtype) - np.asarray(1.0, dtype)[()]
    lo, hi = np.asarray(lo, dtype)[()], np.asarray(hi, dtype)[()]
    return max(lo, floats * (hi - lo) + lo)


def _normal_lanes(key, dtype):
    """jax.random.normal(key, (), dtype) for every lane: sqrt(2) erfinv(u), u uniform in
    (-1, 1)."""
    lo = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype), dtype=dtype)
    u = _uniform_lanes(key, dtype, lo, 1.0)
    return mul(np.asarray(np.sqrt(2), dtype)[()], erf_inv(u))


def _where_lanes(pred, new, old):
    """``where`` with one predicate per lane (``pred``: [n]) over lanes of any shape."""
    if new.ndim > pred.ndim:
        pred = broadcast_in_dim(pred, new.shape, tuple(range(pred.ndim)))
    return where(pred, new, old)


def _gamma_lanes(keys, alpha, log_space):
    """One Gamma(alpha) draw per lane with the lane's key (Marsaglia & Tsang, ACM TOMS 2000);
    the rejection loops run until every lane has accepted, each lane's state frozen from its
    own acceptance on, so every lane draws what jax draws for it alone."""
    dtype = alpha.dtype
    zero, one = _c(alpha, 0), _c(alpha, 1)
    third, squeeze = _c(alpha, 1.0 / 3.0), _c(alpha, 0.0331)
    # alpha < 1: draw from Gamma(alpha + 1) and scale by U^(1/alpha).
    boost_mask = ge(alpha, one)
    alpha_orig = alpha
    alpha = where(boost_mask, alpha, add(alpha, one))
    d = sub(alpha, third)
    c = div(third, sqrt(d))

    def rejected(X, V, U):
        return and_(ge(U, sub(one, mul(squeeze, mul(X, X)))),
                    ge(log(U), add(mul(X, _c(X, 0.5)), mul(d, add(sub(one, V), log(V))))))

    def draw_v(key):
        def body(s):
            k, _, v = s
            new_key, sub_key = _split_lanes(k, 2)
            x_new = _normal_lanes(sub_key, dtype)
            v_new = add(one, mul(x_new, c))
            again = le(v, zero)
            return tuple(_where_lanes(again, n, o) for n, o in zip((new_key, x_new, v_new), s))
        init = (key, _full(alpha, 0), _full(alpha, -1))
        return while_loop(lambda s: _any(le(s[2], zero)), body, init)[1:]

    def body(s):
        k, X, V, U = s
        new_key, x_key, u_key = _split_lanes(k, 3)
        x, v = draw_v(x_key)
        new = (new_key, mul(x, x), mul(mul(v, v), v), _uniform_lanes(u_key, dtype))
        again = rejected(X, V, U)
        return tuple(_where_lanes(again, n, o) for n, o in zip(new, s))

    key, sub_key = _split_lanes(keys, 2)
    init = (key, _full(alpha, 0), _full(alpha, 1), _full(alpha, 2))
    V = while_loop(lambda s: _any(rejected(*s[1:])), body, init)[2]
    if log_space:
        u = _uniform_lanes(sub_key, dtype)
        log_samples = neg(neg(log1p(neg(u))))
        log_boost = where(or_(boost_mask, eq(log_samples, zero)), _full(alpha, 0),
                          mul(log_samples, div(one, alpha_orig)))
        return add(add(log(d), log(V)), log_boost)
    samples = sub(one, _uniform_lanes(sub_key, dtype))
    boost = where(boost_mask, _full(alpha, 1), pow(samples, div(one, alpha_orig)))
    return mul(mul(d, V), boost)


def random_gamma_impl(key, a, *, log_space=False):
    """``a``'s elements each get a key: every key (of shape ``key.shape[:-1]``) is split into
    as many keys as it has elements of ``a``, in row-major order, as jax does."""
    kshape = tuple(key.shape[:-1])
    n = math.prod(a.shape)
    if n == 0:
        return a
    _float_dtype(a)
    nk = math.prod(kshape)
    keys = reshape(random_split(reshape(key, (nk, 2)), (n // nk,)), (n, 2))
    return reshape(_gamma_lanes(keys, reshape(a, (n,)), log_space), a.shape)
