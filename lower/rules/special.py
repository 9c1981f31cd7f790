"""Rules for the special functions XLA has no op for: igamma, igammac, igamma_grad_a,
regularized_incomplete_beta (betainc), bessel_i0e and random_gamma.

As in JAX, each is ``lower_fun`` of a decomposition written against the tracing front end
(lower.lax.special): series and continued fractions in ``while`` loops, Chebyshev sums,
Marsaglia-Tsang rejection sampling on threefry (other key implementations: jax's own
sampler, lowered by our rules). (chlo has bessel_i1e but no bessel_i0e.)
``random_gamma_grad`` has no rule: jax 0.10 has no such primitive and traces it inline, as
``lower.lax.random_gamma_grad`` does.
"""

from __future__ import annotations

import functools
import sys

from ..inline import lower_closed
from ..lax import special as sp
from ..mlir import lower_fun, register_lowering
from .random import key_impl, physical_aval


def _rule(impl):
    rule = lower_fun(impl, multiple_results=False)
    rule.__name__ = f"_{impl.__name__}_rule"
    return rule


for _name, _impl in (("igamma", sp.igamma_impl), ("igammac", sp.igammac_impl),
                     ("igamma_grad_a", sp.igamma_grad_a_impl),
                     ("regularized_incomplete_beta", sp.regularized_incomplete_beta_impl)):
    register_lowering(_name, _rule(sp.up_and_broadcast(_impl)))

register_lowering("bessel_i0e", _rule(sp.bessel_i0e_impl))

_random_gamma_traced = _rule(sp.random_gamma_impl)


def _random_gamma(ctx, key, a, *, log_space):
    """The decomposition draws on raw threefry2x32 key data (``uint32[..., 2]``). jax's own
    jaxprs carry typed keys (``key<fry>[...]``, whatever the user's key was): their IR value
    is that same key data, so the decomposition is traced on the key's physical aval.

    Keys of jax's other implementations (philox, rbg..., and users' own) draw with their own
    split and bits,
    one lane after another (jax maps its sampler over the lanes rather than vmapping it,
    whose batched bits differ for rbg): that decomposition is jax's own ``_gamma_impl``,
    traced by the jax that made the jaxpr (such keys exist only where jax is loaded) and
    lowered by our rules, as jax's rule lowers it (``lower_fun``)."""
    from .random_custom import custom_impl
    key_aval = ctx.avals_in[0]
    jax_impl = getattr(key_aval.dtype, "_impl", None)
    name = "user-defined" if custom_impl(jax_impl) is not None else key_impl(jax_impl).name
    if name == "threefry2x32":
        ctx = ctx.replace(avals_in=[physical_aval(key_aval), *ctx.avals_in[1:]])
        return _random_gamma_traced(ctx, key, a, log_space=log_space)
    jax, random_core = sys.modules.get("jax"), sys.modules.get("jax._src.random.core")
    sampler = getattr(random_core, "_gamma_impl", None)
    if jax is None or sampler is None:
        raise NotImplementedError(f"random_gamma: keys of the {name} implementation are "
                                  "lowered through jax's own sampler, and jax is not loaded")
    closed = jax.make_jaxpr(functools.partial(sampler, log_space=log_space, use_vmap=True))(
        *(jax.ShapeDtypeStruct(v.shape, v.dtype) for v in ctx.avals_in))
    outs, tokens = lower_closed(ctx.body_context(), ctx.builder, closed, ctx.tokens_in,
                                [key, a])
    ctx.set_tokens_out(tokens)
    return outs


register_lowering("random_gamma", _random_gamma)
