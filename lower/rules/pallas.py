"""Pallas kernel calls in interpret mode (``pl.pallas_call(..., interpret=True)``): jax's rule
lowers the kernel's body itself, run over its grid in loops by jax's HLO interpreter of Pallas
(``hlo_interpreter.pallas_call_hlo_interpret``, a JAX function), which ours lowers the same way
through ``lower_jax_function``. A compiled kernel (Mosaic on TPU, Triton or Mosaic GPU) is a
custom call to a kernel compiler XLA:CPU lacks; jax's interpreters that simulate the TPU's or
GPU's memory (``InterpretParams``) run through host callbacks: neither is lowered here."""

from __future__ import annotations

import functools
import importlib

from ..mlir import register_lowering


def _pallas_call(ctx, *args, interpret=False, **params):
    if not interpret and ctx.module_context.platform == "cpu":
        raise ValueError("Only interpret mode is supported on CPU backend (jax.jit's words): "
                         "pass interpret=True to pallas_call")
    if interpret is not True:
        how = "compiled for a TPU or GPU kernel compiler" if not interpret else \
            f"interpreted with {type(interpret).__name__} (host callbacks)"
        raise NotImplementedError(
            f"pallas_call {how}: not lowered here; pass interpret=True to run the kernel as "
            "XLA ops, as jax.jit then does")
    if params["jaxpr"].constvars:
        raise ValueError("Cannot lower a pallas_call with constants.")  # (jax's refusal)
    from ..jax_lower_fun import lower_jax_function
    interpreter = importlib.import_module("jax._src.pallas.hlo_interpreter")
    impl = functools.partial(interpreter.pallas_call_hlo_interpret, **params)
    return lower_jax_function(ctx, impl, ctx.avals_in, args, multiple_results=True)


register_lowering("pallas_call", _pallas_call)


def _run_scoped(ctx, *args, jaxpr, collective_axes=(), **_):
    """``pl.run_scoped`` met outside a compiled kernel (in an interpreted one): its body, over
    scoped Refs, discharged into values, the scoped ones starting as Pallas's "uninitialized"
    fill (NaN, the lowest integer, False), as jax's rule lowers it."""
    if collective_axes:
        raise ValueError("run_scoped lowering outside of Pallas does not support "
                         "collective_axes.")  # (jax's words)
    from jax._src import core
    from jax._src.interpreters import partial_eval as pe

    from ..jax_lower_fun import lower_jax_function
    from ..jax_refs import discharge_body
    primitives = importlib.import_module("jax._src.pallas.primitives")
    body = pe.convert_constvars_jaxpr(jaxpr)
    n_out = len(body.outvars)
    discharged = discharge_body(body)
    if discharged.consts:
        raise NotImplementedError("run_scoped: its discharge made constants (as jax's rule, "
                                  "not lowered)")

    def scoped(*given):
        fills = [primitives.uninitialized_value(v.aval.shape, v.aval.dtype)
                 for v in discharged.jaxpr.invars[len(given):]]
        return core.eval_jaxpr(discharged.jaxpr, [], *given, *fills)[:n_out]
    return lower_jax_function(ctx, scoped, ctx.avals_in, args, multiple_results=True)


register_lowering("run_scoped", _run_scoped)
