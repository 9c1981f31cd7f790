"""Mutable arrays in the JAX front door: ``jax.new_ref`` inside a function, ``run_state``,
and ``jax.Ref`` arguments, which ``jax.jit`` takes and updates in place.

As jax.jit's lowering does (``pxla._discharge_refs``), the traced jaxpr is discharged
first (jax's ``discharge_state``: reads, writes and allocations of Refs become values
threaded through the equations), so the rules never meet a Ref. A Ref argument becomes its
current value in, and its final value out, after the function's results: ``ref_inputs``
says which arguments, and the caller writes those results back into the Refs.
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
    """``(closed jaxpr with no Refs left, ref_inputs)``: ``closed`` itself and ``()`` when
    it holds no Ref. ``ref_inputs``: the flat argument indices that were Refs; the
    discharged program returns each one's final value after ``closed``'s outputs, in that
    order. A Ref the function closes over (not an argument) is refused: jax.jit moves it to
    an argument, which this front door does not do yet."""
    found = _jax_internals()
    if found is None:  # pragma: no cover
        return closed, ()
    core, discharge_mod, types = found
    ref_inputs = tuple(i for i, a in enumerate(closed.in_avals)
                       if isinstance(a, types.AbstractRef))
    internal = getattr(core, "InternalMutableArrayEffect", None)
    effects = closed.effects
    if not ref_inputs and not any(
            isinstance(e, types.RefEffect) or internal is not None and isinstance(e, internal)
            for e in effects):
        return closed, ()
    if any(isinstance(c, core.Ref) for c in closed.consts):
        raise NotImplementedError(
            "the function closes over a jax Ref (jax.new_ref made outside it): pass the Ref "
            "as an argument (jax.jit's lowering moves it to one; ours does not yet)")
    return discharge_mod.discharge_state(closed), ref_inputs


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
