"""Mutable arrays in the JAX front door: ``jax.new_ref`` inside a function, ``run_state``,
and ``jax.Ref`` arguments, which ``jax.jit`` takes and updates in place.

As jax.jit's lowering does (``pxla._discharge_refs``), the traced jaxpr is discharged
first (jax's ``discharge_state``: reads, writes and allocations of Refs become values
threaded through the equations), so the rules never meet a Ref. A Ref argument becomes its
current value in, and its final value out, after the function's results: ``ref_inputs``
says which arguments, and the caller writes those results back into the Refs. A Ref the
function closes over is an argument of the same kind, after the function's own.
"""

from __future__ import annotations

import importlib

__all__ = ["discharge", "discharge_body", "read_ref", "is_ref"]


def _jax_internals():
    """jax's core and state modules (their names move between versions: None when absent)."""
    try:
        core = importlib.import_module("jax._src.core")
        discharge_mod = importlib.import_module("jax._src.state.discharge")
        types = importlib.import_module("jax._src.state.types")
    except ImportError:  # pragma: no cover - a jax without mutable arrays has no Refs
        return None
    return core, discharge_mod, types


def discharge(closed):
    """``(closed jaxpr with no Refs left, ref_inputs, closed_refs)``: ``closed`` itself,
    ``()`` and ``()`` when it holds no Ref. ``ref_inputs``: the flat argument indices that
    were Refs; the discharged program returns each one's final value after ``closed``'s
    outputs, in that order. ``closed_refs``: the Refs the function closes over (made by
    ``jax.new_ref`` outside it; jax's own error checking keeps its state in such Refs), which
    become arguments after ``closed``'s, as jax.jit's lowering moves them: the caller passes
    their current values there and writes their final values back (they are among
    ``ref_inputs``)."""
    found = _jax_internals()
    if found is None:  # pragma: no cover
        return closed, (), ()
    core, discharge_mod, types = found
    internal = getattr(core, "InternalMutableArrayEffect", None)
    closed_refs = tuple(c for c in closed.consts if isinstance(c, core.Ref))
    if closed_refs:
        jaxpr = closed.jaxpr
        held = [isinstance(c, core.Ref) for c in closed.consts]
        closed = core.ClosedJaxpr(jaxpr.replace(
            constvars=[v for v, r in zip(jaxpr.constvars, held) if not r],
            invars=[*jaxpr.invars, *(v for v, r in zip(jaxpr.constvars, held) if r)]),
            [c for c, r in zip(closed.consts, held) if not r])
    ref_inputs = tuple(i for i, a in enumerate(closed.in_avals)
                       if isinstance(a, types.AbstractRef))
    effects = closed.effects
    if not ref_inputs and not any(
            isinstance(e, types.RefEffect) or internal is not None and isinstance(e, internal)
            for e in effects):
        return closed, (), ()
    return discharge_mod.discharge_state(closed), ref_inputs, closed_refs


def discharge_body(jaxpr):
    """A ``run_state`` body (a Jaxpr over Refs, no constants) discharged: a ClosedJaxpr
    taking and returning each Ref's value."""
    core, discharge_mod, _ = _jax_internals()
    return discharge_mod.discharge_state(core.ClosedJaxpr(jaxpr, ()))


def is_ref(x) -> bool:
    found = _jax_internals()
    return found is not None and isinstance(x, found[0].Ref)


def read_ref(x):
    """A Ref argument's current value (anything else as it is)."""
    return x[...] if is_ref(x) else x
