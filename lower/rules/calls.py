"""Rules for primitives that carry a body to lower inline, or that annotate a value without
computing anything, as jax 0.10 names them:

- ``custom_jvp_call`` / ``custom_vjp_call``: the primal body (``call_jaxpr``) inline. The
  derivative rules are for JAX's transformations, which have all run by the time a jaxpr is
  lowered.
- ``remat2`` (``jax.checkpoint``) and ``remat_opt`` (a custom_vjp's forward pass with
  ``optimize_remat``): the body inline. For a ``remat2`` that AD produced (``differentiated``)
  with ``prevent_cse``, its inputs first go through an ``optimization_barrier``, so that XLA
  cannot merge the recomputation with the forward pass and keep the residuals alive, which
  would defeat the rematerialisation.
- ``name`` (``checkpoint_name``): the operand; only remat policies read the name.
- ``sharding_constraint``: a ``custom_call @Sharding`` when the sharding can be written as
  XLA's sharding text, else the operand.
- ``create_token`` / ``after_all``: tokens.
- ``platform_index``: the index of the lowering platform in ``platforms``, a constant, since
  one module is lowered for one platform.
- ``eq_to`` / ``le_to`` / ``lt_to``: comparisons in XLA's total order for floats (``-NaN <
  -inf < -0.0 < 0.0 < inf < NaN``), which JAX's sort comparators use.
- other bodies lowered inline: ``custom_vmap_call`` (``call``), ``linear_call``
  (``callee``), ``custom_partitioning`` (``call``, on one device or fully manual, as jax
  does) and ``custom_linear_solve`` (``jaxprs.solve`` on its constants and the right-hand
  side); ``call`` (the core call primitive) becomes a call of a private function;
- ``optimization_barrier``: mhlo's, over all its operands.
"""

from __future__ import annotations

import numpy as np

from mhlo_ir.builder import as_results

from ..axis_context import ShardingContext, SPMDAxisContext
from ..core import ClosedJaxpr
from ..semantics import total_order_compare
from ..inline import lower_closed
from ..mlir import as_values
from ..mlir import call_lowering, register_lowering, wrap_with_sharding_op
from .elementwise import broadcast_operands


def _inline(ctx, closed, args, scope: str | None = None) -> list:
    """Lower ``closed`` at the rule's builder, threading the rule's tokens through it (a body
    may have ordered effects); ``scope`` extends the name stack its locations carry."""
    outs, tokens = lower_closed(ctx.body_context(scope), ctx.builder, closed, ctx.tokens_in,
                                args)
    ctx.set_tokens_out(tokens)
    return outs


# -- custom derivatives ---------------------------------------------------------------------

def _custom_derivative_lowering(ctx, *args, call_jaxpr, **_):
    """custom_jvp_call / custom_vjp_call: ``call_jaxpr`` takes ``(*consts, *args)`` (the
    ``num_consts`` leading operands are the hoisted constants), which is the operand list."""
    return _inline(ctx, call_jaxpr, args)


register_lowering("custom_jvp_call", _custom_derivative_lowering)
register_lowering("custom_vjp_call", _custom_derivative_lowering)


def _remat_opt_lowering(ctx, *args, fwd_jaxpr, **_):
    """remat_opt: the forward pass, residuals first, as its outputs are."""
    return _inline(ctx, fwd_jaxpr, args)


register_lowering("remat_opt", _remat_opt_lowering)


def _call_hi_primitive(ctx, *args, _prim):
    """A jax "hijax" primitive (``VJPHiPrimitive``: Pallas TPU's einshape outside kernels,
    say), which jax's lowering first expands into ordinary JAX (``to_lojax``): that JAX
    function traced by jax and lowered inline by ours."""
    import importlib

    from ..jax_lower_fun import lower_jax_function
    hijax = importlib.import_module("jax._src.hijax")

    def expanded(*xs):
        return hijax.call_hi_primitive_p.to_lojax(*xs, _prim=_prim)
    return lower_jax_function(ctx, expanded, ctx.avals_in, args, multiple_results=True)


register_lowering("call_hi_primitive", _call_hi_primitive)


# -- checkpoint -----------------------------------------------------------------------------

def _remat_lowering(ctx, *args, jaxpr, prevent_cse, differentiated, policy=None):
    """remat2: ``jaxpr`` is open (constants are operands). ``prevent_cse`` is one bool or
    one per operand; only the flagged operands go through the barrier."""
    if isinstance(prevent_cse, bool):
        prevent_cse = (prevent_cse,) * len(args)
    args = list(args)
    if differentiated and any(prevent_cse):
        picked = [i for i, p in enumerate(prevent_cse) if p]
        flat = [v for i in picked for v in as_values(args[i])]
        barred = iter(as_results(ctx.builder.optimization_barrier(*flat)))
        for i in picked:
            parts = [next(barred) for _ in as_values(args[i])]
            args[i] = parts[0] if len(parts) == 1 else tuple(parts)
    closed = jaxpr if hasattr(jaxpr, "consts") else ClosedJaxpr(jaxpr, [])  # closed: tolerated
    return _inline(ctx, closed, args, scope="checkpoint")


register_lowering("remat2", _remat_lowering)


def _name_lowering(ctx, x, *, name):
    return [x]


register_lowering("name", _name_lowering)


# -- sharding constraints -------------------------------------------------------------------

def sharding_text(sharding, ndim: int) -> str | None:
    """XLA's sharding text for ``sharding``, or None when it cannot be written:

    - a string is taken to be the text already (``"{devices=[2,1]0,1}"``);
    - JAX's shardings render themselves (``_to_xla_hlo_sharding``);
    - anything with a ``mesh`` and a ``spec`` (``lower.lax.NamedSharding``) goes through
      ``lower.axis_context.spec_to_hlo_sharding``.
    """
    if sharding is None:
        return None
    if isinstance(sharding, str):
        return sharding
    render = getattr(sharding, "_to_xla_hlo_sharding", None)
    if render is not None:
        return str(render(ndim))
    mesh, spec = getattr(sharding, "mesh", None), getattr(sharding, "spec", None)
    if mesh is not None and spec is not None and hasattr(mesh, "devices"):
        from ..axis_context import spec_to_hlo_sharding
        return spec_to_hlo_sharding(mesh, spec, ndim)
    return None


def _sharding_constraint_lowering(ctx, x, *, sharding, layout=None, context_mesh=None,
                                  unconstrained_dims=frozenset(), **_):
    """``custom_call @Sharding`` with ``mhlo.sharding`` (and ``unspecified_dims=[...]`` in
    its backend_config, which lets XLA's propagation choose those dimensions).

    Inside a manual (shard_map) region the sharding gains the region's manual axes as a
    manual subgroup (``{manual}`` when every mesh axis is manual), as jax's
    ``add_manual_axes`` does; its spec names the other axes. The operand is returned
    unchanged when the sharding cannot be written. A layout, if given, is not expressed:
    layouts do not change values.
    """
    mctx = ctx.module_context
    manual = getattr(mctx.axis_context, "manual_axes", None)
    ndim = len(x.type.shape)
    if manual:
        spec = getattr(sharding, "spec", None)
        if spec is None:
            return [x]
        from ..axis_context import spec_to_hlo_sharding
        text = spec_to_hlo_sharding(mctx.axis_context.mesh, spec, ndim, manual)
    else:
        text = sharding_text(sharding, ndim)
    if text is None:
        return [x]
    y = wrap_with_sharding_op(ctx.builder, x, text)
    if unconstrained_dims:
        dims = ",".join(str(int(d)) for d in sorted(unconstrained_dims))
        y.owner.set_attr("backend_config", f"unspecified_dims=[{dims}]")
    return [y]


register_lowering("sharding_constraint", _sharding_constraint_lowering)


# -- tokens and platforms ---------------------------------------------------------------------

def _create_token_lowering(ctx, *_operands, **_):
    # Old jaxprs passed operands to create_token; they never mattered.
    return [ctx.builder.create_token()]


register_lowering("create_token", _create_token_lowering)
register_lowering("after_all", lambda ctx, *tokens: [ctx.builder.after_all(*tokens)])


def platform_choice(platforms, platform: str) -> int:
    """The index of the entry of ``platforms`` (tuples of platform names, or None for the
    default) that names ``platform``; the default's when none does."""
    default = None
    for i, ps in enumerate(platforms):
        if ps is None:
            default = i if default is None else default
        elif platform in ps or ("gpu" in ps and platform in ("cuda", "rocm")):
            return i
    if default is None:
        raise NotImplementedError(f"platform_index: no entry for platform '{platform}' and "
                                  f"no default among {platforms}")
    return default


def _platform_index_lowering(ctx, *, platforms, **_):
    i = platform_choice(platforms, ctx.module_context.platform)
    return [ctx.builder.constant(np.asarray(i, np.int32))]


register_lowering("platform_index", _platform_index_lowering)


# -- total-order comparisons ----------------------------------------------------------------

def _total_order_compare(direction: str):
    """eq_to / le_to / lt_to. XLA's TOTALORDER comparison takes no complex operands (its
    verifier rejects the module, jax's own lowering included): complex numbers compare their
    real parts, then their imaginary parts, each in the total order."""
    def rule(ctx, x, y, **_):
        b = ctx.builder
        if x.type.shape != y.type.shape:
            x, y = broadcast_operands(ctx, (x, y))
        if x.type.element_type.kind != "complex":
            return [total_order_compare(b, x, y, direction)]
        rx, ry, ix, iy = b.real(x), b.real(y), b.imag(x), b.imag(y)
        real_eq = b.compare(rx, ry, "EQ", "TOTALORDER")
        imag = b.compare(ix, iy, direction, "TOTALORDER")
        if direction == "EQ":
            return [b.and_(real_eq, imag)]
        real_lt = b.compare(rx, ry, "LT", "TOTALORDER")
        return [b.or_(real_lt, b.and_(real_eq, imag))]
    return rule


for _prim, _dir in (("eq_to", "EQ"), ("le_to", "LE"), ("lt_to", "LT")):
    register_lowering(_prim, _total_order_compare(_dir))


# -- other bodies: calls, linear calls, custom partitioning and linear solves ----------------

def _closed(jaxpr):
    return jaxpr if hasattr(jaxpr, "consts") else ClosedJaxpr(jaxpr, [])


def _call(ctx, *args, call_jaxpr, **_):
    return call_lowering(ctx, "core_call", _closed(call_jaxpr), *args)


register_lowering("call", _call)
register_lowering("custom_vmap_call", lambda ctx, *args, call, **_: _inline(ctx, call, args))
register_lowering("linear_call", lambda ctx, *args, callee, **_: _inline(ctx, callee, args))


def _custom_partitioning(ctx, *args, call, **_):
    """The body inline where nothing is left to partition: one device, or inside a region
    manual over every mesh axis (jax's rule does the same). Across several devices XLA's
    partitioner would call back into the Python ``partition`` rule, which a serialized
    module cannot."""
    ac = ctx.module_context.axis_context
    devices = 1
    if isinstance(ac, SPMDAxisContext):
        if set(ac.manual_axes) != set(ac.mesh.axis_names):
            devices = int(np.size(ac.mesh.devices))
    elif isinstance(ac, ShardingContext):
        devices = ac.num_devices
    if devices > 1:
        raise NotImplementedError(
            f"custom_partitioning over {devices} devices needs XLA to call the Python "
            "partition rule back; lower it on one device or inside a fully manual shard_map")
    return _inline(ctx, call, args)


register_lowering("custom_partitioning", _custom_partitioning)


def _custom_linear_solve(ctx, *args, const_lengths, jaxprs):
    """Operands are the matvec, vecmat, solve and transpose_solve constants, then b."""
    start = const_lengths.matvec + const_lengths.vecmat
    consts = args[start:start + const_lengths.solve]
    b = args[sum(const_lengths):]
    return _inline(ctx, jaxprs.solve, [*consts, *b])


register_lowering("custom_linear_solve", _custom_linear_solve)


def _run_state_lowering(ctx, *args, jaxpr, is_initialized, **_):
    """jax's ``run_state`` (a body over Refs, pure from outside): its Refs discharged by
    jax's ``discharge_state`` and the body lowered inline, as jax's rule does."""
    from ..jax_refs import discharge_body
    if not all(is_initialized):
        # (jax.jit refuses the public route to one: an Uninitialized argument is no JAX type)
        raise NotImplementedError(
            "run_state with Refs given no initial value (jax's rule fills them with NaN or "
            "the lowest integer): not lowered here")
    return _inline(ctx, discharge_body(jaxpr), list(args))


register_lowering("run_state", _run_state_lowering)
register_lowering("optimization_barrier",
                  lambda ctx, *xs, **_: list(as_results(ctx.builder.optimization_barrier(*xs))))
