"""Rules for elementwise primitives: one table line per primitive that maps to one op, the
chlo functions XLA compiles (acos... zeta, mulhi, complex), ``conj``, ``square`` and
``add_any``."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.result_accuracy import OPS as ACCURACY_OPS

from .. import core
from .. import lax as L
from ..lax.bodies import lift
from ..lax.linalg import _complex
from ..semantics import compare_hlo, convert_hlo, full_like, jax_convert_hlo, minmax_hlo
from ..mlir import lower_fun, register_lowering

# jax primitive -> Builder method (same operands, same result type)
_DIRECT = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder",
    "atan2": "atan2", "and": "and_", "or": "or_", "xor": "xor",
    "shift_left": "shift_left", "shift_right_arithmetic": "shift_right_arithmetic",
    "shift_right_logical": "shift_right_logical", "neg": "negate", "exp": "exponential",
    "log": "log", "tanh": "tanh", "sin": "sine", "cos": "cosine", "tan": "tan",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "abs": "abs",
    "floor": "floor", "ceil": "ceil", "log1p": "log_plus_one",
    "expm1": "exponential_minus_one", "not": "not_", "population_count": "popcnt",
    "clz": "count_leading_zeros", "imag": "imag", "real": "real", "is_finite": "is_finite",
    "erf": "chlo_erf", "erf_inv": "chlo_erf_inv", "lgamma": "chlo_lgamma",
    "digamma": "chlo_digamma", "nextafter": "chlo_next_after",
}


def broadcast_operands(ctx, args):
    """Operands broadcast to the output shape, as JAX's rules do: jax 0.10 jaxprs may pass
    rank-0 literals and size-1 dimensions to binary elementwise primitives."""
    shape = ctx.avals_out[0].shape
    b = ctx.builder
    out = []
    for x in args:
        s = x.type.shape
        if s != shape:
            x = b.broadcast_in_dim(x, shape, tuple(range(len(s))))
        out.append(x)
    return out



def _direct(method: str):
    """The rule of a primitive that is one Builder method (the unbound method is looked up
    once: this is the hot path of most programs)."""
    fn = getattr(hlo.Builder, method)

    def rule(ctx, *args, accuracy=None, out_dtype=None, **params):
        # An accuracy (jax's lax.Tolerance or AccuracyMode) becomes the op's
        # result_accuracy, as jax writes it; mul's out_dtype (lax.mul(x, y, out_dtype=...))
        # converts the operands to the result's type first, as jax's lowering does.
        if len(args) == 2:
            x, y = args
            if x.type is not y.type and x.type.shape != y.type.shape:
                x, y = broadcast_operands(ctx, args)
            if out_dtype is not None:
                out = ctx.avals_out[0].dtype
                x, y = (convert_hlo(ctx.builder, v, out) for v in (x, y))
            return [fn(ctx.builder, x, y)]
        return [_with_accuracy(fn(ctx.builder, *args), accuracy)]
    rule.__name__ = f"_{method}_lowering"
    rule.same_typed = fn  # what it makes of operands of one type: see jaxpr_subcomp
    return rule


for _prim, _method in _DIRECT.items():
    register_lowering(_prim, _direct(_method))


def _with_accuracy(y, accuracy):
    """``y`` with jax's ``accuracy`` (a ``lax.Tolerance``: atol, rtol, ulps; or an
    ``AccuracyMode``: DEFAULT, HIGHEST) as its op's ``result_accuracy``, as jax writes it,
    where its op takes one (not the last op of an expansion)."""
    if accuracy is not None and y.owner.spec.name in ACCURACY_OPS:
        fields = {"mode": "TOLERANCE", "atol": float(accuracy.atol),
                  "rtol": float(accuracy.rtol), "ulps": int(accuracy.ulps)} \
            if hasattr(accuracy, "atol") else {"mode": getattr(accuracy, "name", str(accuracy))}
        y.owner.set_attr("result_accuracy", fields)
    return y


def _sign(ctx, x, **_):
    """sign; unsigned integers have no mhlo.sign: x != 0 converted back."""
    b = ctx.builder
    if x.type.element_type.kind == "uint":
        return [b.convert(compare_hlo(b, x, full_like(b, 0, x.type), "NE"),
                          x.type.element_type)]
    return [b.sign(x)]


register_lowering("sign", _sign)


def _pow(ctx, x, y, **_):
    """pow; jax 0.10 allows an integer exponent with a float base (converted first)."""
    b = ctx.builder
    if y.type.element_type is not x.type.element_type:
        y = convert_hlo(b, y, x.type.dtype)
    if x.type.shape != y.type.shape:
        x, y = broadcast_operands(ctx, (x, y))
    return [b.power(x, y)]


register_lowering("pow", _pow)

_COMPARISONS = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _comparison(direction: str):
    def rule(ctx, x, y, **_):
        if x.type is not y.type and x.type.shape != y.type.shape:
            x, y = broadcast_operands(ctx, (x, y))
        return [compare_hlo(ctx.builder, x, y, direction)]
    rule.__name__ = f"_compare_{direction.lower()}_lowering"
    return rule


for _prim, _dir in _COMPARISONS.items():
    register_lowering(_prim, _comparison(_dir))


def _minmax(op: str):
    """max/min: one mhlo op, except that complex numbers are ordered lexicographically."""
    method = getattr(hlo.Builder, "maximum" if op == "max" else "minimum")

    def rule(ctx, x, y, **_):
        if x.type is not y.type and x.type.shape != y.type.shape:
            x, y = broadcast_operands(ctx, (x, y))
        if x.type.element_type.kind == "complex":
            return [minmax_hlo(ctx.builder, x, y, op)]
        return [method(ctx.builder, x, y)]
    rule.__name__ = f"_{op}_lowering"
    return rule


register_lowering("max", _minmax("max"))
register_lowering("min", _minmax("min"))


def _exp2(ctx, x, accuracy=None, **_):
    """exp(x * ln 2), as jax's rule (its ``accuracy`` the exponential's result_accuracy)."""
    b = ctx.builder
    ln2 = full_like(b, np.log(2), x.type)
    return [_with_accuracy(b.exponential(b.multiply(x, ln2)), accuracy)]


register_lowering("exp2", _exp2)


def _integer_pow(ctx, x, *, y):
    """x**y by repeated squaring (1/x**-y for negative y), as XLA has no integer power;
    x**3 as (x*x)*x, as jax writes it (a complex product's bits depend on the order)."""
    b = ctx.builder
    if y == 3:
        return [b.multiply(b.multiply(x, x), x)]
    n, acc, base = abs(y), None, x
    while n:
        if n & 1:
            acc = base if acc is None else b.multiply(acc, base)
        n >>= 1
        if n:
            base = b.multiply(base, base)
    if acc is None:
        acc = full_like(b, 1, x.type)
    if y < 0:
        acc = b.divide(full_like(b, 1, x.type), acc)
    return [acc]


register_lowering("integer_pow", _integer_pow)


def _round(ctx, x, *, rounding_method=0):
    method = int(getattr(rounding_method, "value", rounding_method))
    b = ctx.builder
    return [b.round_nearest_even(x) if method == 1 else b.round_nearest_afz(x)]


register_lowering("round", _round)


def _convert_element_type(ctx, x, *, new_dtype, weak_type=False, sharding=None):
    """jax's rule: complex to not complex takes the real part, then jax's convert (a
    convert op even where only the weak type changes, as jax.jit writes it)."""
    b = ctx.builder
    if x.type.element_type.kind == "complex" and hlo.from_numpy(new_dtype).kind != "complex":
        x = b.real(x)
    return [jax_convert_hlo(b, x, new_dtype)]


register_lowering("convert_element_type", _convert_element_type)


def _select_n(ctx, which, *cases):
    """select_n(which, *cases): cases[which]; a bool ``which`` picks between two."""
    b = ctx.builder
    if len(cases) == 1:
        return [cases[0]]
    if which.type.element_type is hlo.i1:
        return [b.select(which, cases[1], cases[0])]
    # Integer selector: a binary search tree of selects on which < mid.
    def pick(lo, hi):
        if hi - lo == 1:
            return cases[lo]
        mid = (lo + hi) // 2
        bound = full_like(b, mid, which.type)
        return b.select(compare_hlo(b, which, bound, "LT"), pick(lo, mid), pick(mid, hi))
    return [pick(0, len(cases))]


register_lowering("select_n", _select_n)


def _clamp(ctx, lo, x, hi):
    return [ctx.builder.clamp(lo, x, hi)]


register_lowering("clamp", _clamp)


# -- chlo functions and complex helpers -----------------------------------------------------------

# jax primitive -> Builder method, same operands (chlo functions XLA can compile)
_DIRECT = {
    "acos": "chlo_acos", "acosh": "chlo_acosh", "asin": "chlo_asin", "asinh": "chlo_asinh",
    "atan": "chlo_atan", "atanh": "chlo_atanh", "cosh": "chlo_cosh", "sinh": "chlo_sinh",
    "bessel_i1e": "chlo_bessel_i1e", "erfc": "chlo_erfc", "polygamma": "chlo_polygamma",
    "zeta": "chlo_zeta", "mulhi": "mulhi", "complex": "complex",
}


def _direct(method):
    def rule(ctx, *args, **_):
        if len(args) > 1 and any(a.type.shape != args[0].type.shape for a in args):
            args = broadcast_operands(ctx, args)
        return [getattr(ctx.builder, method)(*args)]
    return rule


for _prim, _method in _DIRECT.items():
    register_lowering(_prim, _direct(_method))


def _conj_impl(x, *, input_dtype=None):
    """jax's conj (lax._conj_impl, lowered through ``lower_fun``): ``complex(real(x),
    -imag(x))``, and a real ``x`` becomes ``complex(x, 0)``, a +0 imaginary part (negating
    a converted value's would make it -0). The same ops as jax's text, named as its are;
    chlo.conj would be one op XLA expands alike, but not jax's program."""
    if x.dtype.kind == "c":
        re, im = L.real(x), L.neg(L.imag(x))
    else:
        # (jax takes float32 and float64 only; anything else is made the component type of
        # the complex result our tracer gives it)
        part = np.float64 if x.dtype == np.float64 else np.float32
        re = x if x.dtype == part else L.convert_element_type(x, part)
        im = L.broadcast_to(lift(x.builder, 0, core.ShapedArray((), part)), x.shape)
    return _complex(re, im)


register_lowering("conj", lower_fun(_conj_impl))
def _square(b, x):
    """x * x for integers; chlo.square for floats and complex numbers, as jax (for complex
    values it avoids the overflow of re*re - im*im: (3e38+3e38j)**2 is 0+inf*j, not -inf+inf*j)."""
    if x.type.element_type.kind in ("float", "complex"):
        return b.chlo_square(x)
    return b.multiply(x, x)


def _logistic(b, x):
    """1 / (1 + exp(-x)), as jax lowers it (not mhlo.logistic, which XLA computes otherwise:
    1 ulp apart in bf16, and 0 where jax's gives NaN in float8 types without infinity)."""
    one = full_like(b, 1, x.type)
    return b.divide(one, b.add(one, b.exponential(b.negate(x))))


def _unary(name, values):
    """The rule of a unary primitive made by ``values(b, x)``; its ``same_typed`` lets
    jaxpr_subcomp call that without a rule context (as _direct's)."""
    direct = getattr(values, "direct", None)
    expands_with = getattr(values, "expands_with", None)

    def rule(ctx, x, accuracy=None, **_):
        if accuracy is None or expands_with is not None and \
                x.type.element_type.kind == "complex" and expands_with(accuracy):
            return [values(ctx.builder, x)]
        # With an accuracy, jax writes the op itself (a complex one too, not its expansion,
        # except where ``values.expands_with`` says so) and gives it the accuracy as
        # result_accuracy.
        return [_with_accuracy((direct or values)(ctx.builder, x), accuracy)]
    rule.__name__ = f"_{name}_lowering"
    rule.same_typed = values
    return rule


register_lowering("square", _unary("square", _square))
register_lowering("logistic", _unary("logistic", _logistic))
register_lowering("add_any", lambda ctx, x, y, **_: [ctx.builder.add(x, y)])
