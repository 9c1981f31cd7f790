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
"""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo

from ..helpers import compare_type
from ..mlir import ir_constants, jaxpr_subcomp, register_lowering, wrap_with_sharding_op
from .elementwise import broadcast_operands


def _wrap(x) -> tuple:
    return (x,) if isinstance(x, hlo.Value) else tuple(x)


def _const_values(b, consts) -> list:
    """IR values of a closed jaxpr's constants. JAX's own jaxprs may hold device arrays,
    which no constant handler knows: they are read back as numpy arrays."""
    known = (np.ndarray, np.generic, bool, int, float, complex)
    return [ir_constants(b, c if isinstance(c, known) else np.asarray(c)) for c in consts]


def _inline(ctx, jaxpr, consts, args, scope: str | None = None) -> list:
    """Lower ``jaxpr`` (open) at the rule's builder, threading the rule's tokens through it;
    ``scope`` extends the name stack the body's locations carry."""
    mctx = ctx.body_context(scope)
    outs, tokens = jaxpr_subcomp(mctx, ctx.builder, jaxpr, ctx.tokens_in, consts,
                                 *[_wrap(a) for a in args])
    ctx.set_tokens_out(tokens)
    return outs


def _inline_closed(ctx, closed, args, scope: str | None = None) -> list:
    return _inline(ctx, closed.jaxpr, _const_values(ctx.builder, closed.consts), args, scope)


# -- custom derivatives ---------------------------------------------------------------------

def _custom_derivative_lowering(ctx, *args, call_jaxpr, **_):
    """custom_jvp_call / custom_vjp_call: ``call_jaxpr`` takes ``(*consts, *args)`` (the
    ``num_consts`` leading operands are the hoisted constants), which is the operand list."""
    return _inline_closed(ctx, call_jaxpr, args)


register_lowering("custom_jvp_call", _custom_derivative_lowering)
register_lowering("custom_vjp_call", _custom_derivative_lowering)


def _remat_opt_lowering(ctx, *args, fwd_jaxpr, **_):
    """remat_opt: the forward pass, residuals first, as its outputs are."""
    return _inline_closed(ctx, fwd_jaxpr, args)


register_lowering("remat_opt", _remat_opt_lowering)


# -- checkpoint -----------------------------------------------------------------------------

def _remat_lowering(ctx, *args, jaxpr, prevent_cse, differentiated, policy=None):
    """remat2: ``jaxpr`` is open (constants are operands). ``prevent_cse`` is one bool or
    one per operand; only the flagged operands go through the barrier."""
    if isinstance(prevent_cse, bool):
        prevent_cse = (prevent_cse,) * len(args)
    args = list(args)
    if differentiated and any(prevent_cse):
        picked = [i for i, p in enumerate(prevent_cse) if p]
        flat = [v for i in picked for v in _wrap(args[i])]
        barred = iter(ctx.builder.optimization_barrier(*flat))
        for i in picked:
            parts = [next(barred) for _ in _wrap(args[i])]
            args[i] = parts[0] if len(parts) == 1 else tuple(parts)
    consts = ()
    if hasattr(jaxpr, "consts"):  # tolerate a closed jaxpr
        consts = _const_values(ctx.builder, jaxpr.consts)
        jaxpr = jaxpr.jaxpr
    return _inline(ctx, jaxpr, consts, args, scope="checkpoint")


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

    The operand is returned unchanged when the sharding cannot be written, and inside a
    manual (shard_map) region, where the value is one device's shard and a sharding over
    the whole mesh would not describe it. A layout, if given, is not expressed: layouts do
    not change values.
    """
    mctx = ctx.module_context
    if getattr(mctx.axis_context, "manual_axes", None):
        return [x]
    text = sharding_text(sharding, len(x.type.shape))
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
    def rule(ctx, x, y, **_):
        if x.type.shape != y.type.shape:
            x, y = broadcast_operands(ctx, (x, y))
        et = x.type.element_type
        kind = "TOTALORDER" if et.kind in ("float", "complex") else compare_type(et)
        return [ctx.builder.compare(x, y, direction, kind)]
    return rule


for _prim, _dir in (("eq_to", "EQ"), ("le_to", "LE"), ("lt_to", "LT")):
    register_lowering(_prim, _total_order_compare(_dir))
