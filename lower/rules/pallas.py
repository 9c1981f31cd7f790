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
