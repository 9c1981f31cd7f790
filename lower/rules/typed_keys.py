"""Layout primitives on jax's typed PRNG keys (``key<fry>[2]``, ``key<phx4>[]``...).

A typed key array is its uint32 key data in the IR, with the implementation's key shape
appended (``lower.rules.random.physical_aval``). jax's programs slice, squeeze, reshape,
broadcast, transpose, concatenate and select key arrays (``key, sub = jax.random.split(key)``
is a slice and a squeeze of each half), and its params speak of the key array's own
dimensions. Here each such rule is wrapped: for key operands the params gain the trailing key
dimensions, untouched (as jax's ``dtype._rules`` do in its mlir helpers), and the rule sees
physical avals; for any other operand the rule runs as registered.

Gather and scatter of key arrays take the key dimensions as trailing window dimensions
(``offset_dims`` / ``update_window_dims``), as jax's ``_gather_lower_opaque`` and
``_scatter_lower_opaque`` do.
"""

from __future__ import annotations

import numpy as np

# Imported first, so that their rules are registered before this module wraps them, whatever
# order lower.rules imports its modules in.
from . import elementwise as _elementwise  # noqa: F401
from . import indexing as _indexing  # noqa: F401
from . import shape as _shape  # noqa: F401
from ..mlir import lowering_rule, register_lowering
from ..semantics import compare_hlo
from .random import physical_aval, typed_key_impl


def _trailing(n: int, r: int) -> tuple:
    return tuple(range(n, n + r))


def _slice(ctx, k, args, start_indices, limit_indices, strides=None, **params):
    r = len(k)
    strides = None if strides is None else (*strides, *(1,) * r)
    return args, dict(params, start_indices=(*start_indices, *(0,) * r),
                      limit_indices=(*limit_indices, *k), strides=strides)


def _reshape(ctx, k, args, new_sizes, dimensions=None, **params):
    if dimensions is not None:
        dimensions = (*dimensions, *_trailing(len(dimensions), len(k)))
    return args, dict(params, new_sizes=(*new_sizes, *k), dimensions=dimensions)


def _broadcast_in_dim(ctx, k, args, shape, broadcast_dimensions, **params):
    return args, dict(params, shape=(*shape, *k),
                      broadcast_dimensions=(*broadcast_dimensions,
                                            *_trailing(len(shape), len(k))))


def _transpose(ctx, k, args, permutation):
    return args, {"permutation": (*permutation, *_trailing(len(permutation), len(k)))}


def _zero_starts(ctx, k, starts):
    """The start indices of the key dimensions: zeros of the other starts' type."""
    zero = ctx.builder.constant(np.zeros((), starts[0].type.dtype))
    return [zero] * len(k)


def _dynamic_slice(ctx, k, args, slice_sizes):
    x, *rest = args
    n = len(slice_sizes)
    starts, dyn = rest[:n], rest[n:]
    return [x, *starts, *_zero_starts(ctx, k, starts), *dyn], {"slice_sizes": (*slice_sizes, *k)}


def _dynamic_update_slice(ctx, k, args):
    x, update, *starts = args
    return [x, update, *starts, *_zero_starts(ctx, k, starts)], {}


def _select_n(ctx, k, args):
    """The predicate (one per key, or a scalar) is broadcast over the key data."""
    which, *cases = args
    rank = len(which.type.shape)
    if rank:
        shape = cases[0].type.shape
        which = ctx.builder.broadcast_in_dim(which, shape, list(range(rank)))
    return [which, *cases], {}


def _with(dn, **fields):
    """Dimension numbers with some fields replaced (jax's are NamedTuples, ours
    dataclasses)."""
    if hasattr(dn, "_replace"):
        return dn._replace(**fields)
    import dataclasses
    return dataclasses.replace(dn, **fields)


def _gather(ctx, k, args, dimension_numbers, slice_sizes, **params):
    r = len(k)
    ndim_out = len(ctx.avals_out[0].shape) - r  # the key array's own rank
    dn = _with(dimension_numbers,
               offset_dims=(*dimension_numbers.offset_dims, *_trailing(ndim_out, r)))
    return args, dict(params, dimension_numbers=dn, slice_sizes=(*slice_sizes, *k))


def _scatter(ctx, k, args, dimension_numbers, **params):
    r = len(k)
    ndim_updates = len(ctx.avals_in[2].shape) - r
    dn = _with(dimension_numbers,
               update_window_dims=(*dimension_numbers.update_window_dims,
                                   *_trailing(ndim_updates, r)))
    return args, dict(params, dimension_numbers=dn)


def _unchanged(ctx, k, args, **params):
    return args, params


def _tile(ctx, k, args, reps):
    """Each of the key array's own dimensions as asked, the key words once."""
    rank = len(ctx.avals_out[0].shape) - len(k)
    reps = tuple(reps)
    return args, {"reps": (1,) * (rank - len(reps)) + reps + (1,) * len(k)}


_TRANSFORMS = {
    "slice": _slice, "reshape": _reshape, "broadcast_in_dim": _broadcast_in_dim,
    "transpose": _transpose, "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice, "select_n": _select_n,
    # these index only the key array's own (leading) dimensions, or read the output aval
    "squeeze": _unchanged, "expand_dims": _unchanged, "concatenate": _unchanged,
    "rev": _unchanged, "gather": _gather, "scatter": _scatter,
    "stack": _unchanged, "unstack": _unchanged, "tile": _tile,
}


def _key_shape(avals):
    for a in avals:
        impl = typed_key_impl(a)
        if impl is not None:
            return tuple(impl.key_shape)
    return None


def _key_aware(name: str, transform):
    base = lowering_rule(name, "cpu")   # none of them has a platform's own rule
    np_dtype = np.dtype

    def rule(ctx, *args, **params):
        # Each of these primitives gives a key array exactly when it takes one, so the first
        # output's dtype decides; a numpy dtype (every ordinary program) is the fast way out.
        # NOTE: this wraps frequent rules (broadcast_in_dim, select_n, reshape...).
        if isinstance(ctx.avals_out[0].dtype, np_dtype):
            return base(ctx, *args, **params)
        k = _key_shape(ctx.avals_out) or _key_shape(ctx.avals_in)
        if k is None:
            return base(ctx, *args, **params)
        ctx = ctx.replace(avals_in=[physical_aval(a) for a in ctx.avals_in],
                          avals_out=[physical_aval(a) for a in ctx.avals_out])
        args, params = transform(ctx, k, list(args), **params)
        return base(ctx, *args, **params)
    rule.__name__ = f"_{name}_key_aware_lowering"
    return rule


for _name, _transform in _TRANSFORMS.items():
    register_lowering(_name, _key_aware(_name, _transform))


def _key_comparison(name: str):
    """eq/ne of key arrays: their words compared, then all equal (eq) or any differing (ne)
    over the key dimensions, as jax lowers them; a key array of lower rank (a scalar key
    against an array of them) broadcast first."""
    base = lowering_rule(name, "cpu")

    def rule(ctx, x, y, **params):
        k = _key_shape(ctx.avals_in)
        if k is None:
            return base(ctx, x, y, **params)
        b = ctx.builder
        out = tuple(ctx.avals_out[0].shape)
        shape = out + tuple(k)

        def widen(v):
            s = tuple(v.type.shape)
            if s == shape:
                return v
            own = len(s) - len(k)  # the key array's own rank
            dims = [*range(len(out) - own, len(out)), *_trailing(len(out), len(k))]
            return b.broadcast_in_dim(v, shape, dims)
        same = compare_hlo(b, widen(x), widen(y), "EQ" if name == "eq" else "NE")
        init = b.constant(np.bool_(name == "eq"))
        return [b.reduce(same, init, _trailing(len(out), len(k)),
                         "and" if name == "eq" else "or")]
    rule.__name__ = f"_{name}_key_aware_lowering"
    return rule


for _name in ("eq", "ne"):
    register_lowering(_name, _key_comparison(_name))
