"""Calls, annotations and tokens for the tracing front end, as jax 0.10 records them:

- ``custom_jvp`` / ``custom_vjp`` (decorators with ``defjvp`` / ``defvjp``):
  ``custom_jvp_call[call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros]`` and
  ``custom_vjp_call[call_jaxpr, fwd_jaxpr_thunk, num_consts, bwd, out_trees,
  symbolic_zeros]``. There is no AD here, so the derivative rules are only kept as params.
- ``checkpoint`` (``remat``): ``remat2[jaxpr, prevent_cse, differentiated, policy]``, with an
  open ``jaxpr`` whose constants are leading operands. ``differentiated`` is what JAX's AD
  sets on the copy it recomputes; pass it to build that jaxpr.
- ``checkpoint_name``: ``name[name]``.
- ``with_sharding_constraint``: ``sharding_constraint[sharding, layout, context_mesh,
  unconstrained_dims]``; ``sharding`` is XLA's sharding text or a ``NamedSharding``.
- ``create_token``, ``after_all``; ``optimization_barrier``.
- ``platform_index[platforms]``, which ``lower.lax.platform_dependent`` (a ``cond``, in
  lower.lax.control_flow) records.
- ``eq_to``, ``le_to``, ``lt_to``: total-order comparisons.

Function arguments and results may be pytrees of tuples, lists and dicts; functions may close
over traced values of enclosing functions (they become leading operands, as in JAX).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import tracing as _tr
from ..core import Jaxpr, abstract_token
from ..tracing import Tracer
from .bodies import (aval_of, bind_with_effects, effects_of, enclosing_builder, lift, trace_body,
                     tree_flatten, tree_unflatten)

__all__ = [
    "NamedSharding",
    "after_all",
    "checkpoint",
    "checkpoint_name",
    "create_token",
    "custom_jvp",
    "custom_vjp",
    "eq_to",
    "le_to",
    "lt_to",
    "optimization_barrier",
    "remat",
    "with_sharding_constraint",
]


def _trace_call(fun: Callable, args):
    """Trace ``fun(*args)`` for a call primitive: the builder the call is recorded in, its
    operands, the ClosedJaxpr taking ``(*free, *args)``, the output tree, the free atoms of
    enclosing functions, and the argument avals and tree (to trace a companion such as a
    custom_vjp's ``fwd`` the same way)."""
    leaves, tree = tree_flatten(tuple(args))
    b = enclosing_builder(leaves)
    avals = [aval_of(x) for x in leaves]
    ops = [lift(b, x) for x in leaves]
    closed, out_tree, free = trace_body(lambda a: fun(*a), avals, tree)
    return b, ops, closed, out_tree, free, avals, tree


# -- custom derivatives ---------------------------------------------------------------------

class custom_jvp:
    """``jax.custom_jvp``: calling it records ``custom_jvp_call`` around ``fun``'s jaxpr."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self.jvp = None
        self.symbolic_zeros = False
        self.__name__ = getattr(fun, "__name__", "custom_jvp")

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        self.jvp, self.symbolic_zeros = jvp, bool(symbolic_zeros)
        return jvp

    def __call__(self, *args):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} "
                                 "using defjvp.")
        b, ops, closed, out_tree, free, _, _ = _trace_call(self.fun, args)
        outs = bind_with_effects(b, "custom_jvp_call", [Tracer(b, a) for a in free] + ops,
                                 closed.out_avals, effects_of(closed.jaxpr), call_jaxpr=closed,
                                 jvp_jaxpr_fun=self.jvp, num_consts=len(free),
                                 symbolic_zeros=self.symbolic_zeros)
        return tree_unflatten(out_tree, outs)


class custom_vjp:
    """``jax.custom_vjp``: calling it records ``custom_vjp_call`` around ``fun``'s jaxpr;
    ``fwd_jaxpr_thunk`` traces ``fwd`` when called."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self.fwd = self.bwd = None
        self.symbolic_zeros = False
        self.__name__ = getattr(fun, "__name__", "custom_vjp")

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, bool(symbolic_zeros)

    def __call__(self, *args):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} "
                                 "using defvjp.")
        b, ops, closed, out_tree, free, avals, tree = _trace_call(self.fun, args)
        fwd = self.fwd

        def fwd_jaxpr_thunk(*_zeros):
            return trace_body(lambda a: fwd(*a), avals, tree)[0]

        outs = bind_with_effects(b, "custom_vjp_call", [Tracer(b, a) for a in free] + ops,
                                 closed.out_avals, effects_of(closed.jaxpr), call_jaxpr=closed,
                                 fwd_jaxpr_thunk=fwd_jaxpr_thunk, num_consts=len(free),
                                 bwd=self.bwd, out_trees=lambda: (out_tree, None),
                                 symbolic_zeros=self.symbolic_zeros)
        return tree_unflatten(out_tree, outs)


# -- checkpoint -----------------------------------------------------------------------------

def checkpoint(fun: Callable, *, prevent_cse=True, policy=None,
               differentiated: bool = False) -> Callable:
    """``jax.checkpoint``: ``fun`` recorded as ``remat2``. ``prevent_cse`` is a bool or one
    per operand of the equation (constants, closed-over values, then arguments)."""
    def wrapped(*args):
        b, ops, closed, out_tree, free, _, _ = _trace_call(fun, args)
        jaxpr = closed.jaxpr
        # remat2's jaxpr is open: its constants become operands, after the closed-over values.
        consts = [b.const(np.asarray(c)) for c in closed.consts]
        body = Jaxpr([], jaxpr.invars[:len(free)] + jaxpr.constvars + jaxpr.invars[len(free):],
                     jaxpr.outvars, jaxpr.eqns, jaxpr.effects)
        operands = [Tracer(b, a) for a in free] + consts + ops
        if not isinstance(prevent_cse, bool) and len(prevent_cse) != len(operands):
            raise ValueError(f"checkpoint: prevent_cse has {len(prevent_cse)} entries for "
                             f"{len(operands)} operands")
        outs = bind_with_effects(b, "remat2", operands, closed.out_avals, effects_of(jaxpr),
                                 jaxpr=body,
                                 prevent_cse=prevent_cse if isinstance(prevent_cse, bool)
                                 else tuple(bool(p) for p in prevent_cse),
                                 differentiated=bool(differentiated), policy=policy)
        return tree_unflatten(out_tree, outs)
    wrapped.__name__ = getattr(fun, "__name__", "checkpoint")
    return wrapped


remat = checkpoint


def checkpoint_name(x, name: str):
    """``jax.ad_checkpoint.checkpoint_name``: each leaf of ``x`` named ``name``."""
    leaves, tree = tree_flatten(x)
    b = enclosing_builder(leaves)
    # not tracing.bind: its own first parameter is called ``name``
    outs = [b.emit(_tr.primitive("name"), [t], [t.aval], {"name": name})[0]
            for t in (lift(b, v) for v in leaves)]
    return tree_unflatten(tree, outs)


# -- sharding ---------------------------------------------------------------------------------

class NamedSharding:
    """``jax.sharding.NamedSharding``'s shape: a mesh (``lower.axis_context.Mesh``) and a
    ``PartitionSpec`` over its axes; the lowering writes it as XLA's sharding text."""

    __slots__ = ("mesh", "spec")

    def __init__(self, mesh, spec):
        self.mesh = mesh
        self.spec = spec

    def __repr__(self):
        return f"NamedSharding({self.mesh!r}, {self.spec!r})"


def with_sharding_constraint(x, sharding, *, unconstrained_dims=()):
    """``jax.lax.with_sharding_constraint`` for one array; ``unconstrained_dims`` are the
    dimensions XLA may shard as it likes (JAX's ``PartitionSpec.UNCONSTRAINED`` entries)."""
    b = enclosing_builder([x])
    x = lift(b, x)
    return _tr.bind("sharding_constraint", [x], [x.aval], sharding=sharding, layout=None,
                    context_mesh=None,
                    unconstrained_dims=frozenset(int(d) for d in unconstrained_dims))


# -- tokens and barriers ----------------------------------------------------------------------

def create_token():
    """A fresh token (``jax.lax.create_token``); call it inside a traced function."""
    b = enclosing_builder([])
    return b.emit(_tr.primitive("create_token"), [], [abstract_token], {})[0]


def after_all(*tokens):
    """A token that comes after all of ``tokens``."""
    b = enclosing_builder(list(tokens))
    for t in tokens:
        if not isinstance(t, Tracer) or t.aval is not abstract_token:
            raise TypeError("Arguments to after_all must be tokens")
    return b.emit(_tr.primitive("after_all"), [lift(b, t) for t in tokens],
                  [abstract_token], {})[0]


def optimization_barrier(x):
    """``jax.lax.optimization_barrier``: the leaves of ``x``, unchanged, behind one barrier."""
    leaves, tree = tree_flatten(x)
    b = enclosing_builder(leaves)
    ops = [lift(b, v) for v in leaves]
    outs = b.emit(_tr.primitive("optimization_barrier", True), ops, [o.aval for o in ops], {})
    return tree_unflatten(tree, outs)


# -- total-order comparisons ----------------------------------------------------------------

eq_to, le_to, lt_to = (_tr.binary_primitive(n, np.dtype(bool)) for n in ("eq_to", "le_to", "lt_to"))
