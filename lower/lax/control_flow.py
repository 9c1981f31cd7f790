"""Control flow for the tracing front end: ``while_loop``, ``fori_loop``, ``cond``, ``switch``
and ``scan``, with JAX's semantics and jax 0.10's primitives and params:

- ``while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts](*cond_consts, *body_consts,
  *carry)``
- ``cond[branches](index, *consts, *operands)``: ``index`` is an int32 already clamped into
  range (``switch`` clamps it; ``cond`` converts its predicate), ``branches[i]`` takes
  ``(*consts, *operands)``
- ``scan[reverse, length, jaxpr, num_consts, num_carry, linear, unroll, _split_transpose](
  *consts, *init, *xs)``, ``jaxpr`` mapping ``(*consts, *carry, *x) -> (*carry, *y)``

Carries, operands and ``xs`` may be pytrees of tuples, lists and dicts. Sub-functions may close
over traced values of enclosing functions: those become constants of the primitive (its
leading operands), as in JAX. The ordered effects of sub-jaxprs become the equation's effects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import tracing as _tr
from ..core import ClosedJaxpr, Jaxpr, Literal, ShapedArray, Var
from ..tracing import JaxprBuilder, Tracer

__all__ = ["cond", "fori_loop", "scan", "switch", "while_loop"]

# -- tiny pytrees -----------------------------------------------------------------------------


def _flatten(tree) -> tuple:
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


def _unflatten(treedef, leaves):
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
# functions being traced (make_jaxpr's and _trace's below).

def _enclosing_builders() -> list:
    """The builders of the functions being traced, outermost first."""
    return list(_tr.active_builders())


def _enclosing_builder(args) -> JaxprBuilder:
    builders = _enclosing_builders()
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


def _lift(b: JaxprBuilder, x, like: ShapedArray | None = None) -> Tracer:
    """``x`` as a Tracer of ``b``. Python scalars take JAX's default dtypes (int32, float32,
    weakly typed), or ``like``'s dtype when given."""
    if isinstance(x, Tracer):
        if x.builder is b:
            return x
        return Tracer(b, x.atom)  # from an enclosing function: lifted as a constant later
    aval = _weak_scalar_aval(x)
    if aval is not None:
        if like is not None and like.shape == ():
            aval = ShapedArray((), like.dtype, weak_type=False)
        return Tracer(b, Literal(np.asarray(x, aval.dtype), aval))
    return b.const(np.asarray(x))


def _aval_of(x) -> ShapedArray:
    if isinstance(x, Tracer):
        return x.aval
    aval = _weak_scalar_aval(x)
    if aval is not None:
        return aval
    x = np.asarray(x)
    return ShapedArray(x.shape, x.dtype)


def _effects_of(jaxpr) -> frozenset:
    effs = set(getattr(jaxpr, "effects", ()) or ())
    for e in jaxpr.eqns:
        effs.update(getattr(e, "effects", ()) or ())
    return frozenset(effs)


def _trace(fn: Callable, in_avals: Sequence[ShapedArray], in_tree, out_like=None):
    """Trace ``fn`` on arguments of ``in_avals`` (unflattened by ``in_tree``).

    Returns (ClosedJaxpr, out_tree, free): the jaxpr takes ``(*free, *args)``, where ``free``
    are the atoms of enclosing functions it uses (operations mixing them with this function's
    values are recorded here: lower.tracing sends an op to the innermost function being
    traced). ``out_like``: avals that Python-scalar outputs take the dtype of.
    """
    b = JaxprBuilder()
    args = [b.new_arg(a) for a in in_avals]
    with _tr.tracing_into(b):
        out = fn(_unflatten(in_tree, args))
    leaves, out_tree = _flatten(out)
    likes = list(out_like) if out_like is not None else [None] * len(leaves)
    if len(likes) != len(leaves):
        likes = [None] * len(leaves)
    outs = [_lift(b, o, like) for o, like in zip(leaves, likes)]

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
    jaxpr.effects = _effects_of(jaxpr)
    return ClosedJaxpr(jaxpr, b.consts), out_tree, free


def _bind(b: JaxprBuilder, name: str, args, out_avals, effects, **params) -> list:
    outs = b.emit(_tr.primitive(name, True), args, out_avals, params)
    if effects:
        b.eqns[-1].effects = frozenset(effects)
    return outs


def _with_consts(closed: ClosedJaxpr, free, all_free) -> ClosedJaxpr:
    """``closed`` (taking ``(*free, *args)``) made to take ``(*all_free, *args)``."""
    if [id(a) for a in free] == [id(a) for a in all_free]:
        return closed
    jaxpr = closed.jaxpr
    by_id = {id(a): v for a, v in zip(free, jaxpr.invars[:len(free)])}
    new = [by_id.get(id(a)) or Var(a.aval) for a in all_free]
    out = Jaxpr(jaxpr.constvars, new + jaxpr.invars[len(free):], jaxpr.outvars, jaxpr.eqns)
    out.effects = jaxpr.effects
    return ClosedJaxpr(out, closed.consts)


def _check_avals(what, got, want) -> None:
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            raise TypeError(f"{what}: output {i} is {g.str_short()}, expected {w.str_short()}")
    if len(got) != len(want):
        raise TypeError(f"{what}: {len(got)} outputs, expected {len(want)}")


def _carry_avals(leaves) -> list:
    """Carry avals are strongly typed, as in JAX's loops, except Python scalars keep their
    default dtype (int32/float32)."""
    return [_aval_of(x).strip_weak_type() for x in leaves]


# -- while ----------------------------------------------------------------------------------------

def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``while cond_fun(val): val = body_fun(val)``; returns ``val`` (a pytree)."""
    leaves, tree = _flatten(init_val)
    b = _enclosing_builder(leaves)
    avals = _carry_avals(leaves)
    init = [_lift(b, x, a) for x, a in zip(leaves, avals)]
    cond_j, cond_tree, cond_free = _trace(cond_fun, avals, tree)
    if cond_tree != ("leaf",) or len(cond_j.out_avals) != 1:
        raise TypeError("while_loop: cond_fun must return a boolean scalar")
    pred = cond_j.out_avals[0]
    if pred.dtype != np.bool_ or pred.shape != ():
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got "
                        f"{pred.str_short()}")
    body_j, body_tree, body_free = _trace(body_fun, avals, tree, out_like=avals)
    if body_tree != tree:
        raise TypeError("while_loop: body_fun must return a value of the same structure as "
                        "init_val")
    _check_avals("while_loop body_fun", body_j.out_avals, avals)
    consts = [Tracer(b, a) for a in cond_free + body_free]
    effects = _effects_of(cond_j.jaxpr) | _effects_of(body_j.jaxpr)
    outs = _bind(b, "while", consts + init, avals, effects, cond_jaxpr=cond_j,
                 body_jaxpr=body_j, cond_nconsts=len(cond_free), body_nconsts=len(body_free))
    return _unflatten(tree, outs)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``. With concrete bounds it is a
    ``scan`` (as in JAX), otherwise a ``while``."""
    concrete = not isinstance(lower, Tracer) and not isinstance(upper, Tracer)
    if concrete:
        lo, hi = int(lower), int(upper)
        dtype = np.result_type(np.asarray(lower).dtype, np.asarray(upper).dtype)
        dtype = np.int32 if isinstance(lower, int) and isinstance(upper, int) else dtype

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None
        (_, out), _ = scan(step, (np.asarray(lo, dtype), init_val), None,
                           length=max(hi - lo, 0), unroll=1 if unroll is None else unroll)
        return out
    leaves = _flatten(init_val)[0] + [lower, upper]
    b = _enclosing_builder(leaves)
    dtypes = [x.dtype for x in (lower, upper) if isinstance(x, Tracer)]
    lo = _lift(b, lower, ShapedArray((), dtypes[0]))
    hi = _lift(b, upper, ShapedArray((), dtypes[0]))

    def body(c):
        i, h, val = c
        return i + 1, h, body_fun(i, val)
    return while_loop(lambda c: _tr.lt(c[0], c[1]), body, (lo, hi, init_val))[2]


# -- cond / switch --------------------------------------------------------------------------

def _cond(b: JaxprBuilder, index: Tracer, branches: Sequence[Callable], operands):
    leaves, tree = _flatten(tuple(operands))
    avals = [_aval_of(x) for x in leaves]
    ops = [_lift(b, x) for x in leaves]
    traced = [_trace(lambda ops, f=f: f(*ops), avals, tree) for f in branches]
    out_tree = traced[0][1]
    out_avals = traced[0][0].out_avals
    for i, (j, t, _) in enumerate(traced[1:], 1):
        if t != out_tree:
            raise TypeError(f"branch 0 and {i} outputs must have the same structure")
        _check_avals(f"branch {i} (vs branch 0)", j.out_avals, out_avals)
    all_free, seen = [], set()
    for _, _, free in traced:
        for a in free:
            if id(a) not in seen:
                seen.add(id(a))
                all_free.append(a)
    jaxprs = tuple(_with_consts(j, free, all_free) for j, _, free in traced)
    effects = frozenset().union(*(_effects_of(j.jaxpr) for j in jaxprs))
    consts = [Tracer(b, a) for a in all_free]
    outs = _bind(b, "cond", [index] + consts + ops, [a for a in out_avals], effects,
                 branches=jaxprs)
    return _unflatten(out_tree, outs)


def _scalar_operand(b, x, what) -> Tracer:
    t = _lift(b, x)
    if t.shape != ():
        raise TypeError(f"{what} must be a scalar, got shape {t.shape}")
    return t


def switch(index, branches: Sequence[Callable], *operands):
    """``branches[clamp(0, index, len(branches) - 1)](*operands)``."""
    branches = tuple(branches)
    if not branches:
        raise ValueError("switch: empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    b = _enclosing_builder([index, *_flatten(tuple(operands))[0]])
    index = _scalar_operand(b, index, "switch index")
    if index.dtype.kind not in "iu":
        raise TypeError(f"switch index must be an integer, got {index.dtype}")
    if index.dtype != np.int32:
        index = _tr.convert_element_type(index, np.int32)
    hi = np.asarray(len(branches) - 1, np.int32)
    index = _tr.clamp(np.asarray(0, np.int32), index, hi)
    return _cond(b, index, branches, operands)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands):
    """``true_fun(*operands) if pred else false_fun(*operands)``; a numeric ``pred`` means
    ``pred != 0``."""
    b = _enclosing_builder([pred, *_flatten(tuple(operands))[0]])
    pred = _scalar_operand(b, pred, "cond predicate")
    if pred.dtype != np.bool_:
        if pred.dtype.kind not in "iuf":
            raise TypeError(f"cond predicate must be boolean or a number, got {pred.dtype}")
        pred = _tr.ne(pred, 0)
    index = _tr.convert_element_type(pred, np.int32)
    return _cond(b, index, (false_fun, true_fun), operands)


# -- scan -------------------------------------------------------------------------------------

def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1):
    """``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``; returns
    ``(carry, stacked ys)``, as ``jax.lax.scan``."""
    c_leaves, c_tree = _flatten(init)
    x_leaves, x_tree = _flatten(xs)
    b = _enclosing_builder(c_leaves + x_leaves)
    lengths = {int(_aval_of(x).shape[0]) for x in x_leaves if _aval_of(x).shape}
    if any(not _aval_of(x).shape for x in x_leaves):
        raise ValueError("scan: xs leaves must have a leading axis")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan: inconsistent or unknown length: {sorted(lengths)}")
    (n,) = lengths
    c_avals = _carry_avals(c_leaves)
    carry = [_lift(b, x, a) for x, a in zip(c_leaves, c_avals)]
    x_ins = [_lift(b, x) for x in x_leaves]
    x_avals = [a.aval.update(shape=a.shape[1:], weak_type=False) for a in x_ins]

    def step(args):
        c, x = _unflatten(c_tree, args[:len(c_leaves)]), _unflatten(x_tree, args[len(c_leaves):])
        out = f(c, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("scan: f must return a pair (carry, y)")
        return out
    in_tree = (tuple, tuple([("leaf",)] * (len(c_leaves) + len(x_leaves))))
    closed, out_tree, free = _trace(step, c_avals + x_avals, in_tree,
                                    out_like=c_avals)
    # out_tree is (tuple-or-list, (carry tree, y tree))
    carry_tree, y_tree = out_tree[1]
    if carry_tree != c_tree:
        raise TypeError("scan: f must return a carry of the same structure as init")
    n_carry = len(c_leaves)
    _check_avals("scan carry", closed.out_avals[:n_carry], c_avals)
    y_avals = closed.out_avals[n_carry:]
    consts = [Tracer(b, a) for a in free]
    unroll = int(unroll) if not isinstance(unroll, bool) else (max(n, 1) if unroll else 1)
    out_avals = c_avals + [a.update(shape=(n, *a.shape), weak_type=False) for a in y_avals]
    outs = _bind(b, "scan", consts + carry + x_ins, out_avals, _effects_of(closed.jaxpr),
                 reverse=bool(reverse), length=n, jaxpr=closed, num_consts=len(free),
                 num_carry=n_carry, linear=(False,) * (len(free) + n_carry + len(x_ins)),
                 unroll=unroll, _split_transpose=False)
    return _unflatten(c_tree, outs[:n_carry]), _unflatten(y_tree, outs[n_carry:])
