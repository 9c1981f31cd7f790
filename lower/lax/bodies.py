"""Tracing the bodies of higher-order primitives (control flow, calls, custom derivatives,
checkpoint): tiny pytrees, the function an operation is recorded in, lifting Python values,
and tracing a sub-function with the values it closes over.

Shared by the families of this package that take functions (lower.lax.control_flow,
lower.lax.calls); nothing here is exported to ``lower.lax`` (no ``__all__`` entries).

A sub-function may close over traced values of enclosing functions: ``trace_body`` finds
them and makes them the body's leading inputs, which the primitive then takes as its leading
operands (its "constants"), as in JAX.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import tracing as _tr
from ..core import ClosedJaxpr, Jaxpr, Literal, ShapedArray, Var
from ..tracing import JaxprBuilder, Tracer

__all__: list = []

# -- tiny pytrees -----------------------------------------------------------------------------


def tree_flatten(tree) -> tuple:
    """Leaves and a treedef (nested tuples, lists, dicts; None is an empty node)."""
    leaves: list = []

    def go(t):
        if t is None:
            return ("none",)
        if isinstance(t, (tuple, list)):
            return (type(t), tuple(go(c) for c in t))
        if isinstance(t, dict):
            keys = sorted(t)
            return ("dict", tuple(keys), tuple(go(t[k]) for k in keys))
        leaves.append(t)
        return ("leaf",)
    return leaves, go(tree)


def tree_unflatten(treedef, leaves):
    """The tree ``treedef`` with ``leaves`` in the places of the flattened ones."""
    it = iter(leaves)

    def go(d):
        if d[0] == "none":
            return None
        if d[0] == "leaf":
            return next(it)
        if d[0] == "dict":
            return {k: go(c) for k, c in zip(d[1], d[2])}
        return d[0](go(c) for c in d[1])
    return go(treedef)


# -- scopes: which builder an operation belongs to ------------------------------------------

# An operation belongs to the innermost function being traced, whatever its operands (they
# may all be constants, or values of enclosing functions): lower.tracing keeps the stack of
# functions being traced (make_jaxpr's and trace_body's).

def enclosing_builder(args) -> JaxprBuilder:
    """The builder of the innermost function being traced (else of a traced operand)."""
    builders = _tr.active_builders()
    if builders:
        return builders[-1]
    for a in args:
        if isinstance(a, Tracer):
            return a.builder
    raise TypeError("control flow needs a traced operand: call it inside a function given to "
                    "make_jaxpr")


def _weak_scalar_aval(x) -> ShapedArray | None:
    if isinstance(x, (bool, np.bool_)) and not isinstance(x, np.generic):
        return ShapedArray((), np.bool_)
    if isinstance(x, (int, float, complex)) and not isinstance(x, np.generic):
        dtype = {int: np.int32, float: np.float32, complex: np.complex64}[type(x)]
        return ShapedArray((), dtype, weak_type=True)
    return None


def lift(b: JaxprBuilder, x, like: ShapedArray | None = None) -> Tracer:
    """``x`` as a Tracer of ``b``. Python scalars take JAX's default dtypes (int32, float32,
    weakly typed), or ``like``'s dtype when given (a scalar ``like``, strongly typed) where
    that dtype holds the scalar's kind (see ``_fits``; else the default dtype stays, for the
    caller's type check to refuse); a Tracer of an enclosing function is referenced as it
    is, and ``trace_body`` makes it an input of the body."""
    if isinstance(x, Tracer):
        if x.builder is b:
            return x
        if x.builder.done:
            raise _tr.leaked(x)
        return Tracer(b, x.atom)
    aval = _weak_scalar_aval(x)
    if aval is not None:
        if like is not None and like.shape == () and _fits(x, like.dtype):
            aval = ShapedArray((), like.dtype, weak_type=False)
        return Tracer(b, Literal(np.asarray(x, aval.dtype), aval))
    return b.const(np.asarray(x))


def _fits(x, dtype) -> bool:
    """Whether Python scalar ``x`` may take ``dtype`` with no change of kind: a bool a bool
    type; an int an integer type holding it, or a float or complex type; a float a float or
    complex type; a complex a complex type (a loop body returning 2.7 for an int32 carry is
    refused, as JAX refuses it, rather than carried on as 2). An int out of the integer
    type's range is a TypeError naming both."""
    kind, own = _tr._kind(dtype), _tr._scalar_kind(x)
    if own == "i" and kind in "iu":
        import ml_dtypes
        info = ml_dtypes.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise TypeError(f"the Python int {x} does not fit {np.dtype(dtype).name} "
                            f"({info.min} to {info.max})")
    return kind in _TAKES[own]


# The kinds of dtype a Python scalar of each kind takes for a carry (see _fits).
_TAKES = {"b": "b", "i": "iufc", "f": "fc", "c": "c"}


def aval_of(x) -> ShapedArray:
    """The aval ``x`` will have once lifted."""
    if isinstance(x, Tracer):
        return x.aval
    aval = _weak_scalar_aval(x)
    if aval is not None:
        return aval
    x = np.asarray(x)
    return ShapedArray(x.shape, x.dtype)


def effects_of(jaxpr) -> frozenset:
    """A jaxpr's effects with its equations' (jaxprs built here record them on equations)."""
    effs = set(getattr(jaxpr, "effects", ()) or ())
    for e in jaxpr.eqns:
        effs.update(getattr(e, "effects", ()) or ())
    return frozenset(effs)


def trace_body(fn: Callable, in_avals: Sequence[ShapedArray], in_tree, out_like=None):
    """Trace ``fn`` on arguments of ``in_avals`` (unflattened by ``in_tree``).

    Returns (ClosedJaxpr, out_tree, free): the jaxpr takes ``(*free, *args)``, where ``free``
    are the atoms of enclosing functions it uses (operations mixing them with this function's
    values are recorded here: lower.tracing sends an op to the innermost function being
    traced). ``out_like``: avals that Python-scalar outputs take the dtype of.
    """
    b = JaxprBuilder()
    args = [b.new_arg(a) for a in in_avals]
    with _tr.tracing_into(b):
        out = fn(tree_unflatten(in_tree, args))
    leaves, out_tree = tree_flatten(out)
    likes = list(out_like) if out_like is not None else [None] * len(leaves)
    if len(likes) != len(leaves):
        likes = [None] * len(leaves)
    outs = [lift(b, o, like) for o, like in zip(leaves, likes)]

    eqns = list(b.eqns)

    defined = {id(t.atom) for t in args} | {id(v) for v in b.constvars}
    defined.update(id(v) for e in eqns for v in e.outvars)
    free, seen = [], set()
    for atom in [v for e in eqns for v in e.invars] + [o.atom for o in outs]:
        if isinstance(atom, Literal) or hasattr(atom, "val"):
            continue
        if id(atom) not in defined and id(atom) not in seen:
            seen.add(id(atom))
            free.append(atom)
    free_vars = [Var(a.aval) for a in free]
    rename = {id(a): v for a, v in zip(free, free_vars)}
    for e in eqns:
        e.invars = [rename.get(id(v), v) for v in e.invars]
    outvars = [rename.get(id(o.atom), o.atom) for o in outs]
    jaxpr = Jaxpr(b.constvars, free_vars + [t.atom for t in args], outvars, eqns)
    jaxpr.effects = effects_of(jaxpr)
    return ClosedJaxpr(jaxpr, b.consts), out_tree, free


def bind_with_effects(b: JaxprBuilder, name: str, args, out_avals, effects, **params) -> list:
    """Record a multiple-result primitive in ``b``, with its body's ``effects`` on the
    equation (lowering threads tokens to the equations that declare ordered effects)."""
    outs = b.emit(_tr.primitive(name, True), args, out_avals, params)
    if effects:
        b.eqns[-1].effects = frozenset(effects)
    return outs


def with_consts(closed: ClosedJaxpr, free, all_free) -> ClosedJaxpr:
    """``closed`` (taking ``(*free, *args)``) made to take ``(*all_free, *args)``: branches
    of one primitive share one list of constants."""
    if [id(a) for a in free] == [id(a) for a in all_free]:
        return closed
    jaxpr = closed.jaxpr
    by_id = {id(a): v for a, v in zip(free, jaxpr.invars[:len(free)])}
    new = [by_id.get(id(a)) or Var(a.aval) for a in all_free]
    out = Jaxpr(jaxpr.constvars, new + jaxpr.invars[len(free):], jaxpr.outvars, jaxpr.eqns)
    out.effects = jaxpr.effects
    return ClosedJaxpr(out, closed.consts)


def check_avals(what, got, want) -> None:
    """A TypeError naming the first of ``got`` that differs from ``want`` in shape or dtype."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            raise TypeError(f"{what}: output {i} is {g.str_short()}, expected {w.str_short()}")
    if len(got) != len(want):
        raise TypeError(f"{what}: {len(got)} outputs, expected {len(want)}")
