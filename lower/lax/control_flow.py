"""Control flow for the tracing front end: ``while_loop``, ``fori_loop``, ``cond``, ``switch``,
``platform_dependent`` and ``scan``, with JAX's semantics and jax 0.10's primitives and params:

- ``while[cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts](*cond_consts, *body_consts,
  *carry)``
- ``cond[branches](index, *consts, *operands)``: ``index`` is an int32 already clamped into
  range (``switch`` clamps it; ``cond`` converts its predicate), ``branches[i]`` takes
  ``(*consts, *operands)``; ``platform_dependent``'s also carries ``branches_platforms``, and
  its index is ``platform_index[platforms]``
- ``scan[reverse, length, jaxpr, num_consts, num_carry, linear, unroll, _split_transpose](
  *consts, *init, *xs)``, ``jaxpr`` mapping ``(*consts, *carry, *x) -> (*carry, *y)``

Carries, operands and ``xs`` may be pytrees of tuples, lists and dicts. Sub-functions may close
over traced values of enclosing functions: those become constants of the primitive (its
leading operands), as in JAX (lower.lax.bodies traces them). The ordered effects of sub-jaxprs
become the equation's effects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .. import tracing as _tr
from ..core import ShapedArray
from ..tracing import JaxprBuilder, Tracer
from .bodies import (_weak_scalar_aval, aval_of, bind_with_effects, check_avals, effects_of,
                     enclosing_builder,
                     lift, trace_body, tree_flatten, tree_unflatten, with_consts)

__all__ = ["cond", "fori_loop", "platform_dependent", "scan", "switch", "while_loop"]


def _carry_avals(leaves, what: str = "a loop's carry") -> list:
    """Carry avals are strongly typed, as in JAX's loops, except Python scalars keep their
    default dtype (int32/float32)."""
    return [a.strip_weak_type() for a in _array_avals(leaves, what)]


def _array_avals(leaves, what: str) -> list:
    """The avals of ``leaves``, arrays all: a token is a TypeError saying so (jax.jit fails
    on a token carried through a loop or branch too)."""
    avals = [aval_of(x) for x in leaves]
    for i, a in enumerate(avals):
        if not isinstance(a, ShapedArray):
            raise TypeError(f"{what} holds a token (leaf {i}): tokens do not go through loops "
                            "and branches here (nor in jax.jit); order effects with after_all "
                            "outside them")
    return avals


# -- while ----------------------------------------------------------------------------------------

def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``while cond_fun(val): val = body_fun(val)``; returns ``val`` (a pytree)."""
    leaves, tree = tree_flatten(init_val)
    b = enclosing_builder(leaves)
    avals = _carry_avals(leaves)
    init = [lift(b, x, a) for x, a in zip(leaves, avals)]
    cond_j, cond_tree, cond_free = trace_body(cond_fun, avals, tree)
    if cond_tree != ("leaf",) or len(cond_j.out_avals) != 1:
        raise TypeError("while_loop: cond_fun must return a boolean scalar")
    pred = cond_j.out_avals[0]
    if pred.dtype != np.bool_ or pred.shape != ():
        raise TypeError(f"while_loop: cond_fun must return a boolean scalar, got "
                        f"{pred.str_short()}")
    body_j, body_tree, body_free = trace_body(body_fun, avals, tree, out_like=avals)
    if body_tree != tree:
        raise TypeError("while_loop: body_fun must return a value of the same structure as "
                        "init_val")
    check_avals("while_loop body_fun", body_j.out_avals, avals)
    consts = [Tracer(b, a) for a in cond_free + body_free]
    effects = effects_of(cond_j.jaxpr) | effects_of(body_j.jaxpr)
    outs = bind_with_effects(b, "while", consts + init, avals, effects, cond_jaxpr=cond_j,
                             body_jaxpr=body_j, cond_nconsts=len(cond_free),
                             body_nconsts=len(body_free))
    return tree_unflatten(tree, outs)


def _bounds_dtype(lower, upper) -> np.dtype:
    """The dtype fori_loop's bounds share, as JAX decides it: equal dtypes (a Python int is
    int32, a float float32, numpy's 64-bit types their 32-bit ones), or two signed integer
    types one of which is a Python int's (weak), which takes the other's; else TypeError."""
    def of(x):
        if isinstance(x, Tracer):
            return x.dtype, bool(getattr(x.aval, "weak_type", False))
        aval = _weak_scalar_aval(x)
        if aval is not None:
            return np.dtype(aval.dtype), True
        return _CANONICAL.get(np.dtype(np.asarray(x).dtype), np.asarray(x).dtype), False
    (lo, lo_weak), (hi, hi_weak) = of(lower), of(upper)
    if lo == hi:
        return lo
    if _tr._kind(lo) == "i" and _tr._kind(hi) == "i" and lo_weak != hi_weak:
        return hi if lo_weak else lo
    raise TypeError(f"fori_loop: lower and upper must have equal types, got {np.dtype(lo).name} "
                    f"and {np.dtype(hi).name} (as in JAX)")


# numpy's 64-bit types as JAX takes them (64-bit types off): their 32-bit twins.
_CANONICAL = {np.dtype(a): np.dtype(b) for a, b in (
    (np.int64, np.int32), (np.uint64, np.uint32), (np.float64, np.float32),
    (np.complex128, np.complex64))}


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll=None):
    """``for i in range(lower, upper): val = body_fun(i, val)``. With concrete bounds it is a
    ``scan`` (as in JAX), otherwise a ``while``."""
    dtype = _bounds_dtype(lower, upper)
    concrete = not isinstance(lower, Tracer) and not isinstance(upper, Tracer)
    if concrete:
        # As JAX: the index counts from int(lower) as a (Python) int, so int32 whatever the
        # bounds' types (which must agree, as checked above).
        lo, hi = int(lower), int(upper)

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None
        (_, out), _ = scan(step, (np.asarray(lo, np.int32), init_val), None,
                           length=max(hi - lo, 0), unroll=1 if unroll is None else unroll)
        return out
    leaves = tree_flatten(init_val)[0] + [lower, upper]
    b = enclosing_builder(leaves)
    # A bound that is no Tracer takes the other's dtype, converted as JAX converts it (a
    # Python int wraps into int8, a numpy int64 is the int32 it canonicalizes to).
    lo, hi = (lift(b, x if isinstance(x, Tracer) else np.asarray(x).astype(dtype))
              for x in (lower, upper))

    def body(c):
        i, h, val = c
        return i + 1, h, body_fun(i, val)
    return while_loop(lambda c: _tr.lt(c[0], c[1]), body, (lo, hi, init_val))[2]


# -- cond / switch --------------------------------------------------------------------------

def _cond(b: JaxprBuilder, index: Tracer, branches: Sequence[Callable], operands):
    leaves, tree = tree_flatten(tuple(operands))
    avals = _array_avals(leaves, "a branch's operands")
    ops = [lift(b, x) for x in leaves]
    traced = [trace_body(lambda ops, f=f: f(*ops), avals, tree) for f in branches]
    out_tree = traced[0][1]
    out_avals = traced[0][0].out_avals
    for i, (j, t, _) in enumerate(traced[1:], 1):
        if t != out_tree:
            raise TypeError(f"branch 0 and {i} outputs must have the same structure")
        check_avals(f"branch {i} (vs branch 0)", j.out_avals, out_avals)
    all_free, seen = [], set()
    for _, _, free in traced:
        for a in free:
            if id(a) not in seen:
                seen.add(id(a))
                all_free.append(a)
    jaxprs = tuple(with_consts(j, free, all_free) for j, _, free in traced)
    effects = frozenset().union(*(effects_of(j.jaxpr) for j in jaxprs))
    consts = [Tracer(b, a) for a in all_free]
    outs = bind_with_effects(b, "cond", [index] + consts + ops, [a for a in out_avals], effects,
                             branches=jaxprs)
    return tree_unflatten(out_tree, outs)


def _scalar_operand(b, x, what) -> Tracer:
    t = lift(b, x)
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
    b = enclosing_builder([index, *tree_flatten(tuple(operands))[0]])
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
    b = enclosing_builder([pred, *tree_flatten(tuple(operands))[0]])
    pred = _scalar_operand(b, pred, "cond predicate")
    if pred.dtype != np.bool_:
        if pred.dtype.kind not in "iuf":
            raise TypeError(f"cond predicate must be boolean or a number, got {pred.dtype}")
        pred = _tr.ne(pred, 0)
    index = _tr.convert_element_type(pred, np.int32)
    return _cond(b, index, (false_fun, true_fun), operands)


# -- platforms --------------------------------------------------------------------------------

def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
    """``jax.lax.platform_dependent``: ``per_platform[platform](*args)`` for the platform the
    module is lowered for (``default`` for the others). Platforms sharing one function share
    a branch.

    As in JAX, a ``cond`` on ``platform_index``: the choice is made when the module is
    lowered (one module, one platform), so every branch is traced and the jaxpr stays
    portable."""
    groups: list = []
    for name, fn in per_platform.items():
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        for names, g in groups:
            if g is fn:
                names.append(name)
                break
        else:
            groups.append(([name], fn))
    platforms = tuple(tuple(names) for names, _ in groups)
    branches = tuple(fn for _, fn in groups)
    if default is not None:
        platforms, branches = platforms + (None,), branches + (default,)
    if not branches:
        raise ValueError("platform_dependent: no branches")
    b = enclosing_builder(tree_flatten(args)[0])
    index = b.emit(_tr.primitive("platform_index"), [], [ShapedArray((), np.int32)],
                   {"platforms": platforms})[0]
    out = _cond(b, index, branches, args)
    b.eqns[-1].params["branches_platforms"] = platforms  # jax 0.10's cond param
    return out


# -- scan -------------------------------------------------------------------------------------

def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1):
    """``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``; returns
    ``(carry, stacked ys)``, as ``jax.lax.scan``."""
    c_leaves, c_tree = tree_flatten(init)
    x_leaves, x_tree = tree_flatten(xs)
    b = enclosing_builder(c_leaves + x_leaves)
    lengths = {int(aval_of(x).shape[0]) for x in x_leaves if aval_of(x).shape}
    if any(not aval_of(x).shape for x in x_leaves):
        raise ValueError("scan: xs leaves must have a leading axis")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ValueError(f"scan: inconsistent or unknown length: {sorted(lengths)}")
    (n,) = lengths
    c_avals = _carry_avals(c_leaves)
    carry = [lift(b, x, a) for x, a in zip(c_leaves, c_avals)]
    x_ins = [lift(b, x) for x in x_leaves]
    x_avals = [a.aval.update(shape=a.shape[1:], weak_type=False) for a in x_ins]

    def step(args):
        c = tree_unflatten(c_tree, args[:len(c_leaves)])
        x = tree_unflatten(x_tree, args[len(c_leaves):])
        out = f(c, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError("scan: f must return a pair (carry, y)")
        return out
    in_tree = (tuple, tuple([("leaf",)] * (len(c_leaves) + len(x_leaves))))
    closed, out_tree, free = trace_body(step, c_avals + x_avals, in_tree,
                                        out_like=c_avals)
    # out_tree is (tuple-or-list, (carry tree, y tree))
    carry_tree, y_tree = out_tree[1]
    if carry_tree != c_tree:
        raise TypeError("scan: f must return a carry of the same structure as init")
    n_carry = len(c_leaves)
    check_avals("scan carry", closed.out_avals[:n_carry], c_avals)
    y_avals = closed.out_avals[n_carry:]
    consts = [Tracer(b, a) for a in free]
    unroll = int(unroll) if not isinstance(unroll, bool) else (max(n, 1) if unroll else 1)
    out_avals = c_avals + [a.update(shape=(n, *a.shape), weak_type=False) for a in y_avals]
    outs = bind_with_effects(b, "scan", consts + carry + x_ins, out_avals,
                             effects_of(closed.jaxpr), reverse=bool(reverse), length=n,
                             jaxpr=closed, num_consts=len(free), num_carry=n_carry,
                             linear=(False,) * (len(free) + n_carry + len(x_ins)),
                             unroll=unroll, _split_transpose=False)
    return tree_unflatten(c_tree, outs[:n_carry]), tree_unflatten(y_tree, outs[n_carry:])
