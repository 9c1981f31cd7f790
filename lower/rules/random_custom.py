"""Keys of PRNG implementations JAX users define (``jax.extend.random.define_prng_impl``):
their seed, split, fold_in and random_bits are JAX functions, which jax's rules trace (vmapped
over the keys' batch dimensions) and lower; so do ours, through ``lower_jax_function``, on
the keys' uint32 data. jax's six implementations keep the rules of ``random``."""

from __future__ import annotations

import importlib
import sys

from .random import KEY_IMPLS, typed_key_impl

__all__ = ["custom_impl", "dispatching"]


def custom_impl(impl):
    """``impl`` (a jax PRNGImpl) when it is none of jax's six, else None: jax's are the
    objects jax registers under their names (a user's may take one of those names)."""
    if impl is None or isinstance(impl, str) or not hasattr(impl, "random_bits"):
        return None
    registry = getattr(_prng(), "prngs", None)
    if registry is None:  # pragma: no cover - a jax without the registry: by name
        return None if str(getattr(impl, "name", "")) in KEY_IMPLS else impl
    return None if registry.get(getattr(impl, "name", None)) is impl else impl


_PRNG_MODULES = ("jax._src.random.prng", "jax._src.prng")  # (where jax versions keep it)


def _prng():
    """jax's prng module (its registry and vmapping helpers): loaded with jax, so found in
    sys.modules (asked on every key equation: a failed import searches the disk each time)."""
    for name in _PRNG_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            return module
    for name in _PRNG_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise NotImplementedError("a user-defined PRNG implementation needs jax's prng module")


def physical_aval(aval):
    """jax's uint32 aval of a key aval's data (jax's own, for jax's tracer)."""
    return importlib.import_module("jax._src.core").physical_aval(aval)


def _through_jax(ctx, fun, avals_in, args):
    from ..jax_lower_fun import lower_jax_function
    return lower_jax_function(ctx, fun, avals_in, args)


def _seed(ctx, impl, seeds):
    seed = _prng().iterated_vmap_unary(ctx.avals_in[0].ndim, impl.seed)
    return _through_jax(ctx, seed, ctx.avals_in, [seeds])


def _split(ctx, impl, keys, *, shape):
    aval = ctx.avals_in[0]
    split = _prng().iterated_vmap_unary(aval.ndim, lambda k: impl.split(k, shape))
    return _through_jax(ctx, split, [physical_aval(aval)], [keys])


def _fold_in(ctx, impl, keys, msgs):
    keys_aval, msgs_aval = ctx.avals_in
    fold_in = _prng().iterated_vmap_binary_bcast(keys_aval.shape, msgs_aval.shape,
                                                 impl.fold_in)
    return _through_jax(ctx, fold_in, [physical_aval(keys_aval), msgs_aval], [keys, msgs])


def _bits(ctx, impl, keys, *, bit_width, shape):
    aval = ctx.avals_in[0]
    bits = _prng().iterated_vmap_unary(aval.ndim,
                                       lambda k: impl.random_bits(k, bit_width, shape))
    return _through_jax(ctx, bits, [physical_aval(aval)], [keys])


_CUSTOM = {"random_seed": _seed, "random_split": _split, "random_fold_in": _fold_in,
           "random_bits": _bits}


def dispatching(name: str, rule):
    """``rule`` (for one of jax's six implementations), or, for keys of a user-defined one,
    that implementation's JAX function lowered as jax lowers it."""
    custom = _CUSTOM[name]

    def dispatch(ctx, *args, **params):
        impl = custom_impl(params["impl"] if name == "random_seed" else
                           typed_key_impl(ctx.avals_in[0]))
        if impl is None:
            return rule(ctx, *args, **params)
        return custom(ctx, impl, *args, **{k: v for k, v in params.items() if k != "impl"})
    dispatch.__name__ = rule.__name__
    return dispatch
