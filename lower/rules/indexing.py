"""Rules for indexing primitives (gather, scatter and its combining variants), the shape
extras with operands (pad, dynamic_slice, dynamic_update_slice) and the bit-level conversions
(reduce_precision, bitcast_convert_type).

Params are read by field name, so JAX's GatherDimensionNumbers / ScatterDimensionNumbers /
GatherScatterMode and lower.lax.indexing's are both accepted. As in JAX the index vector is
the last dimension of the indices.
"""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo

from ..semantics import compare_hlo, full_like, minmax_hlo
from ..mlir import TokenSet, ir_constants, jaxpr_subcomp, register_lowering


def _mode_name(mode) -> str:
    """A GatherScatterMode (JAX's or ours), its name, jnp's spelling or None -> its name."""
    if mode is None:
        return "FILL_OR_DROP"
    name = getattr(mode, "name", mode)
    if isinstance(name, str):
        name = {"clip": "CLIP", "fill": "FILL_OR_DROP", "drop": "FILL_OR_DROP",
                "promise_in_bounds": "PROMISE_IN_BOUNDS", "one_hot": "ONE_HOT"}.get(name, name)
    if name not in ("CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS", "ONE_HOT"):
        raise ValueError(f"unknown gather/scatter mode {mode!r}")
    return name


def _dims(dn, name) -> tuple:
    return tuple(int(d) for d in getattr(dn, name, ()) or ())


def _index_bounds(b, indices, upper: np.ndarray):
    """``upper`` (one bound per entry of the index vector, the last dimension of
    ``indices``) broadcast to the indices' type, each bound no more than that type's largest
    value (as jax's _clamp_scatter_indices: a bound of 299 cast to uint8 wrapped to 43)."""
    t = indices.type
    top = int(np.iinfo(t.dtype).max)
    c = b.constant(np.array([min(int(u), top) for u in upper], t.dtype))
    return b.broadcast_in_dim(c, t.shape, [t.rank - 1])


# -- shape extras ---------------------------------------------------------------------------

def _pad(ctx, x, padding_value, *, padding_config):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    return [ctx.builder.pad(x, padding_value, lo, hi, interior)]


def _dynamic_slice(ctx, x, *starts_and_sizes, slice_sizes):
    starts = starts_and_sizes[:len(ctx.avals_in[0].shape)]
    return [ctx.builder.dynamic_slice(x, starts, slice_sizes)]


def _dynamic_update_slice(ctx, x, update, *starts):
    return [ctx.builder.dynamic_update_slice(x, update, starts)]


register_lowering("pad", _pad)
register_lowering("dynamic_slice", _dynamic_slice)
register_lowering("dynamic_update_slice", _dynamic_update_slice)


# -- gather -----------------------------------------------------------------------------------

def _default_fill(dtype):
    """jax.lax.gather's fill for out-of-bounds slices when fill_value is None."""
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return np.array(np.iinfo(dtype).min, dtype)
    if dtype.kind == "u":
        return np.array(np.iinfo(dtype).max, dtype)
    if dtype.kind == "b":
        return np.array(True)
    return np.array(np.nan, dtype)  # floats, complex and ml_dtypes floats


def _gather(ctx, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted=False,
            unique_indices=False, mode=None, fill_value=None):
    b = ctx.builder
    mode = _mode_name(mode)
    if mode == "ONE_HOT":
        raise NotImplementedError("gather mode ONE_HOT has no lowering here")
    x_aval, idx_aval = ctx.avals_in
    dn = dimension_numbers
    start_index_map = _dims(dn, "start_index_map")
    hdn = hlo.GatherDimensionNumbers(
        offset_dims=_dims(dn, "offset_dims"),
        collapsed_slice_dims=_dims(dn, "collapsed_slice_dims"),
        start_index_map=start_index_map,
        index_vector_dim=len(idx_aval.shape) - 1,
        operand_batching_dims=_dims(dn, "operand_batching_dims"),
        start_indices_batching_dims=_dims(dn, "start_indices_batching_dims"))
    # XLA's gather clamps start indices into bounds: that is CLIP, and fine for
    # PROMISE_IN_BOUNDS. FILL_OR_DROP masks the slices whose start is out of bounds, its
    # indices first converted to the signed type that holds the operand's dimensions, as
    # jax's _gather_fill does (uint8 indices into 300 elements: the bound fits; int64 ones
    # wrap into int32 as jax's do).
    if mode == "FILL_OR_DROP":
        wide = any(d > np.iinfo(np.int32).max for d in x_aval.shape)
        et = hlo.i64 if wide else hlo.i32
        if indices.type.element_type is not et:
            indices = b.convert(indices, et)
    out = b.gather(operand, indices, hdn, slice_sizes,
                   indices_are_sorted=bool(indices_are_sorted))
    if mode != "FILL_OR_DROP":
        return [out]
    upper = np.array([x_aval.shape[d] - slice_sizes[d] for d in start_index_map], np.int64)
    zero = full_like(b, 0, indices.type)
    ok = b.and_(compare_hlo(b, indices, zero, "GE"),
                compare_hlo(b, indices, _index_bounds(b, indices, upper), "LE"))
    true = b.constant(np.array(True))
    ok = b.reduce(ok, true, [len(idx_aval.shape) - 1], lambda r, a, e: r.and_(a, e))
    out_aval = ctx.avals_out[0]
    offset = set(hdn.offset_dims)
    batch_dims = [d for d in range(len(out_aval.shape)) if d not in offset]
    mask = b.broadcast_in_dim(ok, out_aval.shape, batch_dims)
    # (a fill the dtype cannot hold is cast, as jax's lax.full_like casts it: -1 as uint32
    # is 4294967295, NaN as int32 the type's minimum)
    fill = _default_fill(out_aval.dtype) if fill_value is None else \
        _cast_fill(fill_value, np.dtype(out_aval.dtype))
    return [b.select(mask, out, full_like(b, fill, out.type))]


def _cast_fill(value, dtype):
    """``value`` in ``dtype`` as jax's ``lax.full_like`` makes it: an integer the type cannot
    hold wraps (through a 64-bit integer), a float converts as numpy's cast does."""
    if dtype.kind in "iu" and isinstance(value, (int, np.integer)) and not isinstance(
            value, bool):
        return np.array(int(value) & ((1 << 64) - 1), np.uint64).astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(value).astype(dtype)


register_lowering("gather", _gather)


# -- scatter ----------------------------------------------------------------------------------

_COMBINE = {
    "scatter": lambda r, old, new: new,
    "scatter-add": lambda r, old, new: r.add(old, new),
    "scatter-sub": lambda r, old, new: r.subtract(old, new),
    "scatter-mul": lambda r, old, new: r.multiply(old, new),
    "scatter-min": lambda r, old, new: minmax_hlo(r, old, new, "min"),
    "scatter-max": lambda r, old, new: minmax_hlo(r, old, new, "max"),
}


def _clamp_scatter_indices(b, indices, x_aval, u_aval, dn):
    """CLIP mode: clamp each start so the whole update window lands in bounds."""
    window = _dims(dn, "update_window_dims")
    unit = set(_dims(dn, "inserted_window_dims")) | set(_dims(dn, "operand_batching_dims"))
    sizes, pos = [], 0
    for d in range(len(x_aval.shape)):
        if d in unit:
            sizes.append(1)
        else:
            sizes.append(u_aval.shape[window[pos]])
            pos += 1
    starts = _dims(dn, "scatter_dims_to_operand_dims")
    upper = np.array([x_aval.shape[d] - sizes[d] for d in starts], np.int64)
    return b.clamp(full_like(b, 0, indices.type), indices, _index_bounds(b, indices, upper))


def _update_body(ctx, kind, update_jaxpr, update_consts):
    """The scatter region: the update_jaxpr lowered inline (JAX's), else the combine the
    primitive names."""
    if update_jaxpr is None:
        return _COMBINE[kind]
    if hasattr(update_jaxpr, "jaxpr"):  # a ClosedJaxpr
        jaxpr, consts = update_jaxpr.jaxpr, [*update_jaxpr.consts, *update_consts]
    else:
        jaxpr, consts = update_jaxpr, list(update_consts)

    def body(r, old, new):
        cvals = [ir_constants(r, c) for c in consts]
        outs, _ = jaxpr_subcomp(ctx.module_context, r, jaxpr, TokenSet(), cvals, (old,), (new,))
        return [v for o in outs for v in o]
    return body


def _scatter_rule(kind):
    def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted=False,
             unique_indices=False, mode=None, update_jaxpr=None, update_consts=()):
        b = ctx.builder
        mode = _mode_name(mode)
        x_aval, idx_aval, u_aval = ctx.avals_in
        dn = dimension_numbers
        if mode == "CLIP":
            indices = _clamp_scatter_indices(b, indices, x_aval, u_aval, dn)
        # FILL_OR_DROP, PROMISE_IN_BOUNDS and ONE_HOT (jax's rule singles out CLIP alone):
        # XLA's scatter skips out-of-bounds updates.
        hdn = hlo.ScatterDimensionNumbers(
            update_window_dims=_dims(dn, "update_window_dims"),
            inserted_window_dims=_dims(dn, "inserted_window_dims"),
            scatter_dims_to_operand_dims=_dims(dn, "scatter_dims_to_operand_dims"),
            index_vector_dim=len(idx_aval.shape) - 1,
            input_batching_dims=_dims(dn, "operand_batching_dims"),
            scatter_indices_batching_dims=_dims(dn, "scatter_indices_batching_dims"))
        body = _update_body(ctx, kind, update_jaxpr, update_consts)
        return [b.scatter(operand, indices, updates, hdn, body,
                          indices_are_sorted=bool(indices_are_sorted),
                          unique_indices=bool(unique_indices))]
    rule.__name__ = f"_{kind.replace('-', '_')}_lowering"
    return rule


for _kind in _COMBINE:
    register_lowering(_kind, _scatter_rule(_kind))


# -- bit-level conversions --------------------------------------------------------------------

def _reduce_precision(ctx, x, *, exponent_bits, mantissa_bits):
    return [ctx.builder.reduce_precision(x, int(exponent_bits), int(mantissa_bits))]


def _bitcast_convert_type(ctx, x, *, new_dtype):
    return [ctx.builder.bitcast_convert(x, ctx.avals_out[0].dtype)]


register_lowering("reduce_precision", _reduce_precision)
register_lowering("bitcast_convert_type", _bitcast_convert_type)
