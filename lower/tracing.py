"""A small tracing front end: write programs as Python functions over a numpy-like API and
get a jaxpr, without JAX.

    from lower import tracing as tr
    def f(x, w):
        return tr.tanh(tr.dot(x, w) + 1.0)
    closed = tr.make_jaxpr(f)(np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32))

Primitive names and params are jax 0.10's (``add``, ``dot_general(dimension_numbers,
precision, preferred_element_type, out_sharding)``, ``reduce_sum(axes, out_sharding)``...), so
rules written for these jaxprs apply to real JAX jaxprs too. Like ``jax.numpy``, the API
broadcasts operands numpy-style (by inserting ``broadcast_in_dim``) and gives Python scalars a
weak type that yields to the other operand's dtype.

The trace is explicit: each Tracer points at the ``JaxprBuilder`` recording it, and an op
finds the builder through its operands; nothing is global.
"""

from __future__ import annotations

import inspect
import threading
from contextlib import contextmanager
from typing import Callable, Sequence

import numpy as np

from .core import (ClosedJaxpr, Frame, Jaxpr, JaxprEqn, Literal, NameStack, Primitive,
                   ShapedArray, SourceInfo, Var)

__all__ = ["make_jaxpr", "Tracer", "JaxprBuilder", "PRIMITIVES", "bind", "named_scope"]

PRIMITIVES: dict = {}


def primitive(name: str, multiple_results: bool = False) -> Primitive:
    p = PRIMITIVES.get(name)
    if p is None:
        p = PRIMITIVES[name] = Primitive(name, multiple_results)
    return p


class JaxprBuilder:
    """Records equations while a Python function runs on Tracers."""

    def __init__(self, name_stack: NameStack = NameStack()):
        self.eqns: list = []
        self.constvars: list = []
        self.consts: list = []
        self.name_stack = name_stack
        self.done = False  # its function's trace has ended (tracing_into)

    def new_arg(self, aval) -> "Tracer":
        return Tracer(self, Var(aval))

    def const(self, value: np.ndarray) -> "Tracer":
        aval = ShapedArray(value.shape, value.dtype)
        if value.ndim == 0:
            return Tracer(self, Literal(value, aval))
        v = Var(aval)
        self.constvars.append(v)
        self.consts.append(value)
        return Tracer(self, v)

    def emit(self, prim: Primitive, args: Sequence["Tracer"], out_avals, params,
             effects=frozenset()) -> list:
        outvars = [Var(a) for a in out_avals]
        self.eqns.append(JaxprEqn([a.atom for a in args], outvars, prim, params, effects,
                                  source_info=SourceInfo(_user_frame(), self.name_stack)))
        return [Tracer(self, v) for v in outvars]


def _user_frame() -> Frame | None:
    """The innermost frame outside this package: the line of user code making the op (None
    inside ``without_user_frames``)."""
    if getattr(_ACTIVE, "frameless", 0):
        return None
    f = inspect.currentframe()
    here = __file__.rsplit("/", 1)[0]
    while f is not None and f.f_code.co_filename.startswith(here):
        f = f.f_back
    if f is None:
        return None
    return Frame(f.f_code.co_filename, f.f_code.co_name, f.f_lineno, 0)


class Tracer:
    """A value inside a traced function; supports Python's arithmetic operators."""

    __slots__ = ("builder", "atom")
    __array_priority__ = 1000

    def __init__(self, builder: JaxprBuilder, atom):
        self.builder = builder
        self.atom = atom

    @property
    def aval(self) -> ShapedArray:
        return self.atom.aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)

    def __add__(self, o): return add(self, o)
    def __radd__(self, o): return add(o, self)
    def __sub__(self, o): return sub(self, o)
    def __rsub__(self, o): return sub(o, self)
    def __mul__(self, o): return mul(self, o)
    def __rmul__(self, o): return mul(o, self)
    def __truediv__(self, o): return true_divide(self, o)
    def __rtruediv__(self, o): return true_divide(o, self)
    def __neg__(self): return neg(self)
    def __matmul__(self, o): return matmul(self, o)
    def __rmatmul__(self, o): return matmul(o, self)
    def __lt__(self, o): return lt(self, o)
    def __le__(self, o): return le(self, o)
    def __gt__(self, o): return gt(self, o)
    def __ge__(self, o): return ge(self, o)
    def __pow__(self, o): return power(self, o)
    def __rpow__(self, o): return power(o, self)
    # == and != with what cannot be an operand (None, a string, a list) answer by identity,
    # as jax arrays do (``x == None`` is False, ``x in (None, "auto")`` works), not by failing.
    def __eq__(self, o): return eq(self, o) if _is_operand(o) else NotImplemented
    def __ne__(self, o): return ne(self, o) if _is_operand(o) else NotImplemented
    def __and__(self, o): return and_(self, o)
    def __rand__(self, o): return and_(o, self)
    def __or__(self, o): return or_(self, o)
    def __ror__(self, o): return or_(o, self)
    def __xor__(self, o): return xor(self, o)
    def __rxor__(self, o): return xor(o, self)
    def __invert__(self): return not_(self)
    def __abs__(self): return abs(self)
    # == records an equation, so a Tracer's hash is its identity (as a dict key it is the
    # traced value itself, never compared).
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("a traced value has no truth value while tracing: use lax.cond / "
                        "select_n / where instead of Python `if` on it")

    def __repr__(self):
        return f"Tracer({self.aval.str_short()})"


def _is_operand(x) -> bool:
    """Whether ``x`` can be an operand of a traced operation (jax's accepted binop types)."""
    return isinstance(x, (Tracer, int, float, complex, np.generic, np.ndarray)) or \
        hasattr(x, "__array__")


_ACTIVE = threading.local()


@contextmanager
def named_scope(name: str):
    """Equations recorded inside carry ``name`` in their name stack (``jit(f)/name/add`` in
    their locations and XLA's op metadata), as ``jax.named_scope``. It applies to the
    function being traced innermost; bodies traced inside start their own stack, the way
    JAX's sub-jaxprs do (lowering joins the stacks back together)."""
    stack = active_builders()
    if not stack:
        raise RuntimeError("named_scope is used inside a function given to make_jaxpr")
    b = stack[-1]
    saved = b.name_stack
    b.name_stack = saved.extend(name)
    try:
        yield
    finally:
        b.name_stack = saved


@contextmanager
def without_user_frames():
    """Equations recorded inside carry no user frame: for what a lowering rule traces while it
    lowers (``lower.mlir.lower_fun``), where the innermost frame outside this package is only
    the line that called the lowering, not where the user wrote the op. JAX's ``lower_fun``
    ops carry no frame either (their locations are names alone). A frame there would put the
    same file and line under every op name of a decomposition: XLA makes each such pair a
    stack frame, and XLA:TPU's while-loop passes, which re-inline call metadata per loop, took
    minutes more on thousands of them (complex eigh of 300 x 300: > 600 s against 30 s)."""
    _ACTIVE.frameless = getattr(_ACTIVE, "frameless", 0) + 1
    try:
        yield
    finally:
        _ACTIVE.frameless -= 1


def active_builders() -> list:
    """The builders of the functions being traced on this thread, outermost first."""
    stack = getattr(_ACTIVE, "stack", None)
    if stack is None:
        stack = _ACTIVE.stack = []
    return stack


@contextmanager
def tracing_into(b: JaxprBuilder):
    """Mark ``b`` as the innermost function being traced while the block runs (nested traces
    for control-flow bodies push theirs), so operations on values of enclosing functions are
    recorded in the innermost function, where they are used."""
    stack = active_builders()
    stack.append(b)
    try:
        yield b
    finally:
        stack.pop()
        b.done = True


class UnexpectedTracerError(TypeError):
    """A value traced in a function whose trace has ended (a loop body's, a branch's, an
    earlier make_jaxpr's), used after it: its function's jaxpr holds it, no other can (JAX
    raises its UnexpectedTracerError)."""


def leaked(t: "Tracer"):
    """The error for Tracer ``t``, whose function's trace has ended."""
    return UnexpectedTracerError(
        f"a value traced inside a function whose trace has ended ({t.aval.str_short()}: "
        "made in a loop body, a branch or an earlier make_jaxpr, and kept past it) is used "
        "outside it: return it from that function instead (JAX raises "
        "UnexpectedTracerError here)")


def innermost(b: JaxprBuilder) -> JaxprBuilder:
    """Where an operation on values of ``b`` is recorded: the innermost function being traced
    when ``b`` is one of the functions being traced (a body traced inside ``b`` uses them),
    else ``b``. As in JAX, an operation in a loop body or branch on a value of an enclosing
    function (a broadcast of a loop-invariant scalar, an iota, a constant) is recorded in the
    body, not hoisted out of it: a hoisted one becomes an operand of the loop, which XLA
    carries through every iteration (QDWH's masks had four N x N int32 broadcasts in each of
    its loops' state, jax's none)."""
    stack = active_builders()
    if stack and stack[-1] is not b and any(s is b for s in stack):
        return stack[-1]
    return b


def builder_of(args) -> JaxprBuilder:
    """The builder an operation on ``args`` is recorded in: the innermost function being
    traced where a builder of its traced operands is being traced (``innermost``), else the
    first operand's. (Public for the lax family modules, with ``as_tracer`` and
    ``binary_primitive``.)"""
    found = [a.builder for a in args if isinstance(a, Tracer)]
    if not found:
        raise TypeError("no traced operand: call this inside a function given to make_jaxpr")
    for f in found:
        if f.done:
            raise leaked(next(a for a in args if isinstance(a, Tracer) and a.builder is f))
    stack = active_builders()
    if stack and any(s is f for s in stack for f in found):
        return stack[-1]
    return found[0]


def as_tracer(b: JaxprBuilder, x, like: ShapedArray | None = None) -> Tracer:
    """``x`` as a value of the function ``b`` traces: Tracers as they are, Python scalars as
    weakly typed literals (of ``like``'s dtype when given), arrays as constants."""
    if isinstance(x, Tracer):
        return x
    b = innermost(b)
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        # Python scalars are weakly typed with JAX's x64-off dtypes unless ``like`` decides.
        default = {bool: np.bool_, int: np.int32, float: np.float32, complex: np.complex64}
        dtype = like.dtype if like is not None else np.dtype(default[type(x)])
        if like is not None and _KIND_ORDER.index(_scalar_kind(x)) > \
                _KIND_ORDER.index(_kind(dtype)) and not (isinstance(x, int) and (
                    _kind(dtype) in "iu" or x in (0, 1))):
            # (2.5 next to an int array would be 2, 1j next to a float one 0: jax refuses)
            raise TypeError(f"the Python {type(x).__name__} {x!r} cannot be a {dtype} "
                            "operand without losing its value: convert the array first")
        value = np.asarray(x, dtype=dtype)
        return Tracer(b, Literal(value, ShapedArray((), dtype, weak_type=like is None)))
    return b.const(np.asarray(x))


def bind(name: str, args: Sequence[Tracer], out_avals, multiple_results=False,
         effects=frozenset(), **params):
    """Record ``name[params](args)``; returns one Tracer (or a list if multiple_results)."""
    b = builder_of(args)
    outs = b.emit(primitive(name, multiple_results), args, out_avals, params, effects)
    return outs if multiple_results else outs[0]


# -- shapes and broadcasting ----------------------------------------------------------------

def broadcast_in_dim(x, shape, broadcast_dimensions) -> Tracer:
    shape = tuple(shape)
    return bind("broadcast_in_dim", [x], [x.aval.update(shape=shape)], shape=shape,
                broadcast_dimensions=tuple(broadcast_dimensions), sharding=None)


def broadcast_to(x: Tracer, shape) -> Tracer:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = len(shape) - x.ndim
    dims = tuple(range(lead, len(shape)))
    squeeze = [i for i, (d, s) in enumerate(zip(x.shape, shape[lead:])) if d == 1 and s != 1]
    if squeeze:
        keep = [i for i in range(x.ndim) if i not in squeeze]
        x = reshape(x, [x.shape[i] for i in keep])
        dims = tuple(dims[i] for i in keep)
    return broadcast_in_dim(x, shape, dims)


_KIND_ORDER = "biufc"  # bool < int < uint (same rank here) < float < complex
_DEFAULT = {"b": np.bool_, "i": np.int32, "u": np.int32, "f": np.float32, "c": np.complex64}


def _kind(dtype) -> str:
    """numpy's kind letter of ``dtype``, ml_dtypes' types included (their kind is 'V'):
    int4/int2 'i', uint4/uint2 'u', bfloat16 and the float8/float4 types 'f'."""
    dtype = np.dtype(dtype)
    if dtype.kind != "V":
        return dtype.kind
    import ml_dtypes
    try:
        return "i" if ml_dtypes.iinfo(dtype).min < 0 else "u"
    except ValueError:
        ml_dtypes.finfo(dtype)  # (a ValueError for anything else)
        return "f"


def _scalar_kind(x) -> str:
    return "b" if isinstance(x, bool) else "i" if isinstance(x, int) else \
        "f" if isinstance(x, float) else "c"


def _binary_operands(x, y):
    """Lift Python scalars with JAX's weak-type promotion: a scalar takes the traced operand's
    dtype unless it is of a higher kind (a float next to an int), in which case both go to
    that kind's default dtype (float32, complex64)."""
    b = builder_of((x, y))
    tx, ty = isinstance(x, Tracer), isinstance(y, Tracer)
    for scalar, other in ((x, y), (y, x)):
        if not isinstance(scalar, Tracer) and isinstance(scalar, (bool, int, float, complex)) \
                and not isinstance(scalar, np.generic) and isinstance(other, Tracer):
            k, ok = _scalar_kind(scalar), _kind(other.dtype)
            if ok in _KIND_ORDER and _KIND_ORDER.index(k) > _KIND_ORDER.index(ok) and \
                    not (k in "iu" and ok in "iu"):
                promoted = convert_element_type(other, _DEFAULT[k])
                x, y = (promoted, y) if other is x else (x, promoted)
                tx, ty = isinstance(x, Tracer), isinstance(y, Tracer)
    x = as_tracer(b, x, y.aval if ty and not tx else None)
    y = as_tracer(b, y, x.aval if not ty else None)
    if x.dtype != y.dtype:
        if x.aval.weak_type and not y.aval.weak_type:
            x, y = _weak_with_strong(x, y)
        elif y.aval.weak_type and not x.aval.weak_type:
            y, x = _weak_with_strong(y, x)
        else:
            raise TypeError(f"operands have different dtypes {x.dtype} and {y.dtype}: "
                            "convert one explicitly")
    shape = np.broadcast_shapes(x.shape, y.shape)
    return broadcast_to(x, shape), broadcast_to(y, shape)


def _weak_with_strong(weak, strong) -> tuple:
    """A weakly typed traced value (a Python scalar a branch or loop returned) beside a
    strongly typed one, as jax promotes them: the strong one's dtype, unless the weak one is
    of a higher kind (a float beside integers or booleans, a complex beside floats), when
    both take the weak one's dtype (its kind's default)."""
    kw, ks = _kind(weak.dtype), _kind(strong.dtype)
    if kw in _KIND_ORDER and ks in _KIND_ORDER and \
            _KIND_ORDER.index(kw) > _KIND_ORDER.index(ks) and not (kw in "iu" and ks in "iu"):
        return convert_element_type(weak, weak.dtype), convert_element_type(strong, weak.dtype)
    return convert_element_type(weak, strong.dtype), strong


def reshape(x: Tracer, new_sizes) -> Tracer:
    new_sizes = tuple(int(d) for d in new_sizes)
    return bind("reshape", [x], [x.aval.update(shape=new_sizes)], new_sizes=new_sizes,
                dimensions=None, sharding=None)


def transpose(x: Tracer, permutation) -> Tracer:
    perm = tuple(permutation)
    return bind("transpose", [x], [x.aval.update(shape=[x.shape[p] for p in perm])],
                permutation=perm)


def convert_element_type(x, new_dtype) -> Tracer:
    new_dtype = np.dtype(new_dtype)
    x = as_tracer(builder_of((x,)), x)
    return bind("convert_element_type", [x], [x.aval.update(dtype=new_dtype, weak_type=False)],
                new_dtype=new_dtype, weak_type=False, sharding=None)


def iota(like: Tracer, dtype, shape, dimension: int = 0) -> Tracer:
    """An iota, traced in the function of ``like`` (it has no operand to find it by), or in
    the body being traced inside that function (``innermost``)."""
    shape = tuple(shape)
    return innermost(like.builder).emit(primitive("iota"), [], [ShapedArray(shape, dtype)],
                                        dict(dtype=np.dtype(dtype), shape=shape,
                                             dimension=dimension, sharding=None))[0]


# -- elementwise ------------------------------------------------------------------------------

def binary_primitive(name: str, result_dtype=None) -> Callable:
    """The front-end function of a binary elementwise primitive: Python scalars promoted as
    JAX does, operands broadcast numpy-style; the result has ``result_dtype`` (bool for
    comparisons) or the operands' dtype."""
    def op(x, y):
        x, y = _binary_operands(x, y)
        aval = x.aval.update(weak_type=x.aval.weak_type and y.aval.weak_type)
        if result_dtype is not None:
            aval = aval.update(dtype=result_dtype, weak_type=False)
        return bind(name, [x, y], [aval])
    op.__name__ = name
    return op


def _unary(name: str) -> Callable:
    def op(x):
        x = as_tracer(builder_of((x,)), x)
        return bind(name, [x], [x.aval])
    op.__name__ = name
    return op


add, sub, mul, div, rem = (binary_primitive(n) for n in ("add", "sub", "mul", "div", "rem"))
max, min, pow, atan2 = (binary_primitive(n) for n in ("max", "min", "pow", "atan2"))
and_, or_, xor = (binary_primitive(n) for n in ("and", "or", "xor"))
shift_left, shift_right_arithmetic, shift_right_logical = (
    binary_primitive(n) for n in ("shift_left", "shift_right_arithmetic", "shift_right_logical"))
nextafter = binary_primitive("nextafter")
eq, ne, lt, le, gt, ge = (binary_primitive(n, np.dtype(bool))
                          for n in ("eq", "ne", "lt", "le", "gt", "ge"))
(neg, exp, log, tanh, sin, cos, tan, sqrt, rsqrt, sign, floor, ceil, logistic, exp2,
 log1p, expm1, not_, erf, erf_inv, lgamma, digamma, cbrt, population_count, clz) = (
    _unary(n) for n in (
        "neg", "exp", "log", "tanh", "sin", "cos", "tan", "sqrt", "rsqrt", "sign", "floor",
        "ceil", "logistic", "exp2", "log1p", "expm1", "not", "erf", "erf_inv", "lgamma",
        "digamma", "cbrt", "population_count", "clz"))


def _to_real(name: str) -> Callable:
    """abs, real, imag: a complex operand gives its component's (real) dtype."""
    def op(x):
        x = as_tracer(builder_of((x,)), x)
        dtype = {np.dtype(np.complex64): np.float32,
                 np.dtype(np.complex128): np.float64}.get(x.dtype, x.dtype)
        return bind(name, [x], [x.aval.update(dtype=dtype)])
    op.__name__ = name
    return op


abs, real, imag = (_to_real(n) for n in ("abs", "real", "imag"))


def is_finite(x) -> Tracer:
    return bind("is_finite", [x], [x.aval.update(dtype=bool, weak_type=False)])


def integer_pow(x, y: int) -> Tracer:
    if not isinstance(y, (int, np.integer)) or isinstance(y, (bool, np.bool_)):
        raise TypeError(f"integer_pow takes an integer exponent, got {y!r} (lax.pow takes "
                        "others)")
    if y < 0 and _kind(x.dtype) in "iu":
        raise TypeError(f"Integers cannot be raised to negative powers, got "
                        f"integer_pow({x.aval.str_short()}, {y})")
    return bind("integer_pow", [x], [x.aval], y=int(y))


def power(x, y) -> Tracer:
    """``x ** y`` as jax arrays compute it: an integer exponent (a Python or numpy int) is
    ``integer_pow``, anything else ``pow`` with the operands promoted."""
    if isinstance(x, Tracer) and isinstance(y, (int, np.integer)) and \
            not isinstance(y, (bool, np.bool_)):
        return integer_pow(x, y)
    return pow(x, y)


def true_divide(x, y) -> Tracer:
    """``x / y`` as jax arrays divide: integer and bool operands are made float32 first
    (``lax.div`` of integers rounds toward zero; ``/`` never does)."""
    x, y = _binary_operands(x, y)
    if _kind(x.dtype) in "biu":
        x, y = convert_element_type(x, np.float32), convert_element_type(y, np.float32)
    return div(x, y)


def round(x, rounding_method: int = 0) -> Tracer:  # noqa: A001 - jax's name
    return bind("round", [x], [x.aval], rounding_method=rounding_method)


def clamp(lo, x, hi) -> Tracer:
    b = builder_of((lo, x, hi))
    lo, hi = as_tracer(b, lo, x.aval), as_tracer(b, hi, x.aval)
    return bind("clamp", [lo, x, hi], [x.aval])


def select_n(which, *cases) -> Tracer:
    return bind("select_n", [which, *cases], [cases[0].aval])


def where(pred, x, y) -> Tracer:
    """``x`` where ``pred`` holds, else ``y``, as ``jnp.where``: a non-bool ``pred`` is
    ``pred != 0``, and the three are broadcast together (``select_n`` takes its first
    operand as an index: a negative one picked the wrong case)."""
    if not isinstance(x, Tracer) and not isinstance(y, Tracer):
        if not isinstance(pred, Tracer):
            raise TypeError("where: no traced operand (call it inside a function given to "
                            "make_jaxpr)")
        x = as_tracer(builder_of((pred,)), x)
    x, y = _binary_operands(x, y)
    if not isinstance(pred, Tracer):
        pred = as_tracer(builder_of((x, y)), np.asarray(pred, bool))
    if pred.dtype != np.bool_:
        pred = ne(pred, 0)
    shape = np.broadcast_shapes(pred.shape, x.shape)
    return select_n(broadcast_to(pred, shape), broadcast_to(y, shape), broadcast_to(x, shape))


# -- reductions and linear algebra ---------------------------------------------------------

def normalize_axes(axes, ndim: int, what: str) -> tuple:
    """``axes`` (an int or a sequence) non-negative, each in ``[-ndim, ndim)``: an axis past
    the rank is a ValueError, as in jax (it wrapped around)."""
    out = []
    for a in ((axes,) if isinstance(axes, (int, np.integer)) else axes):
        if not -ndim <= a < ndim:
            raise ValueError(f"{what}: axis {a} is out of bounds for an array of rank {ndim}")
        out.append(int(a) % ndim)
    return tuple(out)


def _reduce(name: str) -> Callable:
    def op(x, axes=None):
        axes = tuple(range(x.ndim)) if axes is None else normalize_axes(axes, x.ndim, name)
        shape = [d for i, d in enumerate(x.shape) if i not in axes]
        return bind(name, [x], [x.aval.update(shape=shape)], axes=axes, out_sharding=None)
    op.__name__ = name
    return op


reduce_sum, reduce_max, reduce_min, reduce_prod = (
    _reduce(n) for n in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"))
reduce_and, reduce_or, reduce_xor = (_reduce(n) for n in ("reduce_and", "reduce_or",
                                                           "reduce_xor"))


def dot_general(x, y, dimension_numbers, precision=None, preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    shape = [x.shape[d] for d in lb]
    shape += [n for d, n in enumerate(x.shape) if d not in lc and d not in lb]
    shape += [n for d, n in enumerate(y.shape) if d not in rc and d not in rb]
    if preferred_element_type is None and x.dtype != y.dtype:
        raise TypeError(f"dot_general of {x.dtype} and {y.dtype}: convert one, or give "
                        "preferred_element_type (the result's dtype)")
    dtype = x.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    return bind("dot_general", [x, y], [ShapedArray(shape, dtype)], dimension_numbers=dn,
                precision=precision, preferred_element_type=preferred_element_type,
                out_sharding=None)


def dot(x, y) -> Tracer:
    """Matrix product of the last axis of ``x`` with the first of ``y``."""
    return dot_general(x, y, (((x.ndim - 1,), (0,)), ((), ())))


def matmul(x, y) -> Tracer:
    """``x @ y``: ``dot`` up to rank 2, and for higher ranks a product batched over the
    leading dimensions, as numpy's matmul (those must be equal here: broadcast first)."""
    if not isinstance(x, Tracer) or not isinstance(y, Tracer):
        b = builder_of((x, y))
        x, y = as_tracer(b, x), as_tracer(b, y)
    if (x.ndim <= 2 and y.ndim <= 2) or y.ndim == 1:
        return dot(x, y)
    if x.ndim == 1:  # (a vector times a stack of matrices: each matrix's rows combined)
        return dot_general(x, y, (((0,), (y.ndim - 2,)), ((), ())))
    if x.ndim == y.ndim and x.shape[:-2] == y.shape[:-2]:
        batch = tuple(range(x.ndim - 2))
        return dot_general(x, y, (((x.ndim - 1,), (y.ndim - 2,)), (batch, batch)))
    raise TypeError(f"x @ y of shapes {x.shape} and {y.shape}: above rank 2 the leading "
                    "(batch) dimensions must be equal here; broadcast them, or use "
                    "dot_general")


def concatenate(xs, dimension: int) -> Tracer:
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return bind("concatenate", list(xs), [xs[0].aval.update(shape=shape)], dimension=dimension)


def slice(x, start_indices, limit_indices, strides=None) -> Tracer:  # noqa: A001
    strides = (1,) * x.ndim if strides is None else tuple(strides)
    shape = [-(-(hi - lo) // st) for lo, hi, st in zip(start_indices, limit_indices, strides)]
    return bind("slice", [x], [x.aval.update(shape=shape)], start_indices=tuple(start_indices),
                limit_indices=tuple(limit_indices),
                strides=None if all(s == 1 for s in strides) else strides)


# -- tracing -----------------------------------------------------------------------------------

def make_jaxpr(fn: Callable) -> Callable:
    """``make_jaxpr(f)(*example_args)`` → the ClosedJaxpr of ``f`` on arguments shaped like
    the examples (numpy arrays or ShapedArrays)."""
    def trace(*args) -> ClosedJaxpr:
        b = JaxprBuilder()
        avals = [a if isinstance(a, ShapedArray) else ShapedArray(np.shape(a),
                                                                   np.asarray(a).dtype)
                 for a in args]
        tracers = [b.new_arg(a) for a in avals]
        with tracing_into(b):
            out = fn(*tracers)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        for i, o in enumerate(outs):
            if isinstance(o, (list, tuple, dict)):
                raise TypeError(f"output {i} is a {type(o).__name__}: make_jaxpr returns a "
                                "flat list of arrays; flatten nested outputs first")
        for o in outs:
            if isinstance(o, Tracer) and o.builder is not b:
                raise leaked(o)
        outs = [as_tracer(b, o) for o in outs]
        effects = frozenset().union(*(e.effects for e in b.eqns)) if b.eqns else frozenset()
        jaxpr = Jaxpr(b.constvars, [t.atom for t in tracers], [o.atom for o in outs], b.eqns,
                      effects)
        return ClosedJaxpr(jaxpr, b.consts)
    return trace
