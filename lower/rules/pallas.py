"""Pallas kernel calls in interpret mode (``pl.pallas_call(..., interpret=True)``): jax's rule
lowers the kernel's body itself, run over its grid in loops by jax's HLO interpreter of Pallas
(``hlo_interpreter.pallas_call_hlo_interpret``, a JAX function), which ours lowers the same way
through ``lower_jax_function``. A compiled kernel (Mosaic on TPU, Triton or Mosaic GPU) is a
custom call to a kernel compiler XLA:CPU lacks; jax's interpreters that simulate the TPU's or
GPU's memory (``InterpretParams``) run through host callbacks: neither is lowered here."""

from __future__ import annotations

import functools
import importlib

import mhlo_ir as hlo

from ..mlir import aval_to_ir_type, register_lowering
from ..semantics import full_like


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


# -- Pallas kernel-language primitives met in interpreted kernels, as jax's rules lower them
# on CPU (each a jnp function there: the same ops, written here with the builder).

def _reciprocal(ctx, x, *, approx=False, full_range=True):
    """``1 / x``; ``approx``: computed in bf16 and converted back to f32 (jax's CPU rule's
    stand-in for the TPU's approximate reciprocal)."""
    b = ctx.builder
    if approx:
        y = b.convert(x, hlo.bf16)
        return [b.convert(b.divide(full_like(b, 1, y.type), y), hlo.f32)]
    return [b.divide(full_like(b, 1, x.type), x)]


register_lowering("reciprocal", _reciprocal)


def _rolled(b, x, shift, axis: int):
    """``jnp.roll(x, shift, axis)`` for a scalar integer Value ``shift``: the slice of ``x``
    twice over that starts ``shift mod n`` (the non-negative remainder) before its end."""
    n = x.type.shape[axis]
    if n == 0:
        return x
    if shift.type.element_type is not hlo.i32:  # (jnp.roll's conversion: ui32 2**32-1 is -1)
        shift = b.convert(shift, hlo.i32)
    size, zero = full_like(b, n, shift.type), full_like(b, 0, shift.type)
    r = b.remainder(shift, size)
    r = b.select(b.compare(r, zero, "LT"), b.add(r, size), r)
    start = b.subtract(size, r)
    starts = [start if d == axis else zero for d in range(x.type.rank)]
    return b.dynamic_slice(b.concatenate([x, x], axis), starts, list(x.type.shape))


def _roll(ctx, x, shift, *, axis, stride=None, stride_axis=None):
    """Pallas TPU's ``roll``: ``jnp.roll`` along ``axis``; with ``stride``, each slice ``i``
    along ``stride_axis`` rolled by ``shift + i * stride``."""
    b = ctx.builder
    if stride is None:
        return [_rolled(b, x, shift, axis)]
    shape = list(x.type.shape)
    parts = []
    for i in range(shape[stride_axis]):
        start = [0] * len(shape)
        start[stride_axis] = i
        limit = list(shape)
        limit[stride_axis] = i + 1
        piece = b.slice(x, start, limit, [1] * len(shape))
        parts.append(_rolled(b, piece, b.add(shift, full_like(b, i * stride, shift.type)), axis))
    return [parts[0] if len(parts) == 1 else b.concatenate(parts, stride_axis)]


register_lowering("roll", _roll)


def _bitcast(ctx, x, *, ty):
    """Pallas TPU's ``bitcast``: the bits of ``x`` as ``ty``, the second-minor dimension
    packing (or unpacking) the width ratio, as jax's CPU rule does it (a reshape and a swap
    of the two minor dimensions around ``bitcast_convert``)."""
    b = ctx.builder
    et = aval_to_ir_type(ctx.avals_out[0]).element_type
    src, dst = x.type.element_type.bits, et.bits
    *lead, m, n = x.type.shape
    r = len(lead)
    if src < dst:
        k = dst // src
        y = b.reshape(x, (*lead, m // k, k, n))
        y = b.transpose(y, [*range(r), r, r + 2, r + 1])
        return [b.bitcast_convert(y, et)]
    if src > dst:
        y = b.bitcast_convert(x, et)  # (*lead, m, n, k)
        k = src // dst
        y = b.transpose(y, [*range(r), r, r + 2, r + 1])
        return [b.reshape(y, (*lead, m * k, n))]
    return [b.bitcast_convert(x, et)]


register_lowering("bitcast", _bitcast)


def _einshape_lo(ctx, x, *, equation, sizes, assert_is_tile_preserving=False):
    """Pallas TPU's ``einshape`` (its reshapes and transposes) as jax's rule lowers it: jax's
    own ``_einshape`` helper traced by jax, its jaxpr lowered by ours."""
    from ..jax_lower_fun import lower_jax_function
    einshape = importlib.import_module("jax._src.pallas.einshape")
    fn = functools.partial(einshape._einshape, equation, **dict(sizes))
    return lower_jax_function(ctx, fn, ctx.avals_in, (x,))


register_lowering("einshape_lo", _einshape_lo)
