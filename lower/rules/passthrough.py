"""Rules for primitives that compute nothing at run time, as jax 0.10 lowers them on CPU:

- value identities: ``device_put`` (each operand; one module runs on one set of devices, and
  a copy is XLA's business), ``tie`` (its second operand), ``reshard`` and
  ``layout_constraint`` (shardings live in types and layouts do not change values),
  ``stop_gradient`` and ``copy``, ``stage``, the multihost views of an array, and
  ``to_edtype`` / ``from_edtype`` (an extended dtype's value is its physical representation);
  ``inspect_sharding`` and ``dce_sink`` (unless ``prevent_mlir_dce``) emit nothing (the
  inspection callback, which jax has XLA's partitioner call with the chosen sharding, is
  not called);
- values known when lowering: ``empty`` / ``empty2`` (zeros of the result aval, jax's CPU
  rule; ``AllocateBuffer`` is for TPU and GPU), ``dimension_size`` and ``dim_as_value`` (every
  shape is static here);
- refusals at lowering, as jax's rules refuse: ``unreachable``, ``custom_lin``.
"""

from __future__ import annotations

from mhlo_ir import DictionaryAttr

from ..semantics import full_like
from ..mlir import aval_to_ir_type, register_lowering


register_lowering("device_put", lambda ctx, *xs, **_: list(xs))
register_lowering("tie", lambda ctx, x, y: [y])
register_lowering("reshard", lambda ctx, x, **_: [x])
register_lowering("layout_constraint", lambda ctx, x, **_: [x])
register_lowering("inspect_sharding", lambda ctx, x, **_: [])
# jax.experimental.multihost_utils: a process's local array viewed as (part of) the global
# one and back; one program's values do not change.
register_lowering("host_local_array_to_global_array", lambda ctx, x, **_: [x])
register_lowering("global_array_to_host_local_array", lambda ctx, x, **_: [x])


def _dce_sink(ctx, x, *, prevent_mlir_dce=False):
    """Nothing, unless MLIR's dead-code elimination must keep ``x``: then jax's
    side-effecting FFI call that uses it."""
    if prevent_mlir_dce:
        ctx.builder.custom_call("dce_sink", [x], [], api_version=4, has_side_effect=True,
                                backend_config=DictionaryAttr({}))
    return []


register_lowering("dce_sink", _dce_sink)


def _zeros(ctx, **_):
    return [full_like(ctx.builder, 0, aval_to_ir_type(ctx.avals_out[0]))]


register_lowering("empty", _zeros)
register_lowering("empty2", _zeros)


def _identity(ctx, x, **_):
    return [x]


for _prim in ("stop_gradient", "copy"):
    register_lowering(_prim, _identity)


# An extended dtype's value is its physical representation already: converting to or from
# it changes the type JAX sees, not the value.
register_lowering("to_edtype", lambda ctx, x, **_: [x])
register_lowering("from_edtype", lambda ctx, x, **_: [x])


register_lowering("stage", lambda ctx, x: [x])


def _static_dim(ctx, value, what: str) -> list:
    try:
        n = int(value)
    except TypeError:
        raise NotImplementedError(f"'{ctx.primitive.name}': {what} {value!r} is symbolic; "
                                  "this lowering takes static shapes only") from None
    return [full_like(ctx.builder, n, aval_to_ir_type(ctx.avals_out[0]))]


register_lowering("dimension_size", lambda ctx, x, *, dimension: _static_dim(
    ctx, x.type.shape[dimension], f"dimension {dimension}"))
register_lowering("dim_as_value", lambda ctx, *, dim: _static_dim(ctx, dim, "the dimension"))


def _custom_lin(ctx, *args, **params):
    """jax's rule for ``custom_lin``: a custom_vjp function under forward-mode autodiff
    reaches lowering only through jvp, which custom_vjp does not support."""
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


register_lowering("custom_lin", _custom_lin)


def _unreachable(ctx, *_args, out_avals, exc_type, message):
    raise exc_type(message)


register_lowering("unreachable", _unreachable)
