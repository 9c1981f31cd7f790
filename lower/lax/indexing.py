"""Front end for indexing, sorting, shape extras, convolution and cumulative primitives.

The param classes (``GatherDimensionNumbers``, ``ScatterDimensionNumbers``,
``ConvDimensionNumbers``, ``GatherScatterMode``) have jax 0.10's names and fields, so the
jaxprs traced here carry the params a real JAX jaxpr does; the rules read them by field name
only (duck typing), so JAX's own classes are accepted too.
"""

from __future__ import annotations

import builtins
import enum
from typing import NamedTuple

import numpy as np

from .. import tracing as tr
from ..core import ShapedArray
from ..tracing import Tracer, bind

__all__ = [
    "ConvDimensionNumbers",
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "argmax",
    "argmin",
    "bitcast_convert_type",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "cumlogsumexp",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "dynamic_slice",
    "dynamic_update_slice",
    "expand_dims",
    "gather",
    "pad",
    "reduce_precision",
    "rev",
    "scatter",
    "scatter_add",
    "scatter_apply",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_sub",
    "sort",
    "sort_key_val",
    "squeeze",
    "top_k",
]


# -- param classes ----------------------------------------------------------------------------

class GatherDimensionNumbers(NamedTuple):
    """How a gather maps indices to operand slices (index_vector_dim is the last dimension
    of the indices, as in JAX)."""
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter maps indices and update windows into the operand."""
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class ConvDimensionNumbers(NamedTuple):
    """Which dimension is which: lhs (batch, feature, spatial...), rhs (out feature, in
    feature, spatial...), out (batch, feature, spatial...)."""
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


class GatherScatterMode(enum.Enum):
    """What out-of-bounds indices do: CLIP clamps them; FILL_OR_DROP fills gathered slices
    with ``fill_value`` and drops scattered updates; PROMISE_IN_BOUNDS leaves it to XLA."""
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(s) -> GatherScatterMode:
        if isinstance(s, GatherScatterMode):
            return s
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "clip":
            return GatherScatterMode.CLIP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f"unknown gather/scatter mode {s!r}")


# -- shape extras -----------------------------------------------------------------------------

def _canon(axis: int, ndim: int) -> int:
    if not -ndim <= axis < builtins.max(ndim, 1):
        raise ValueError(f"axis {axis} is out of range for rank {ndim}")
    return axis % builtins.max(ndim, 1)


def pad(x: Tracer, padding_value, padding_config) -> Tracer:
    """``padding_config``: one ``(lo, hi, interior)`` per dimension; lo/hi may be negative."""
    config = tuple((int(lo), int(hi), int(it)) for lo, hi, it in padding_config)
    if len(config) != x.ndim:
        raise ValueError(f"padding_config has {len(config)} entries for rank {x.ndim}")
    shape = [lo + hi + n + builtins.max(n - 1, 0) * it for n, (lo, hi, it) in zip(x.shape, config)]
    if any(s < 0 for s in shape):
        raise ValueError(f"padding_config {config} gives a negative size for {x.shape}")
    value = tr.as_tracer(x.builder, padding_value, x.aval)
    return bind("pad", [x, value], [x.aval.update(shape=shape)], padding_config=config)


def rev(x: Tracer, dimensions) -> Tracer:
    return bind("rev", [x], [x.aval], dimensions=tuple(_canon(d, x.ndim) for d in dimensions))


def squeeze(x: Tracer, dimensions) -> Tracer:
    dims = tuple(sorted(_canon(d, x.ndim) for d in dimensions))
    if any(x.shape[d] != 1 for d in dims):
        raise ValueError(f"cannot squeeze dimensions {dims} of shape {x.shape}")
    shape = [n for i, n in enumerate(x.shape) if i not in dims]
    return bind("squeeze", [x], [x.aval.update(shape=shape)], dimensions=dims)


def expand_dims(x: Tracer, dimensions) -> Tracer:
    """Insert size-1 dimensions. As in JAX (which has no expand_dims primitive) this is a
    ``broadcast_in_dim``."""
    ndim = x.ndim + len(dimensions)
    dims = sorted(tr.normalize_axes(dimensions, ndim, "expand_dims"))
    shape = list(x.shape)
    for d in dims:
        shape.insert(d, 1)
    kept = tuple(i for i in range(ndim) if i not in dims)
    return tr.broadcast_in_dim(x, shape, kept)


def _index_scalars(x: Tracer, indices, allow_negative: bool = True) -> list:
    """Start indices as scalar Tracers of one integer dtype; negative ones count from the end
    (as jax.lax.dynamic_slice does, with a select)."""
    if len(indices) != x.ndim:
        raise ValueError(f"need {x.ndim} start indices, got {len(indices)}")
    traced = {i.dtype for i in indices if isinstance(i, Tracer)}
    if len(traced) > 1:  # (jax.lax refuses them as its primitive's shape rule does)
        raise TypeError("index arguments to dynamic_slice must be integers of the same type, "
                        f"got {', '.join(sorted(map(str, traced)))}")
    dtype = next(iter(traced), np.dtype(np.int32))
    out = []
    for i, n in zip(indices, x.shape):
        if not isinstance(i, Tracer):
            i = int(i)
            out.append(tr.as_tracer(x.builder, np.asarray(i + n if i < 0 and allow_negative else i,
                                                      dtype)))
            continue
        if i.ndim != 0:
            raise ValueError(f"start indices must be scalars, got {i.aval.str_short()}")
        if allow_negative and tr._kind(dtype) == "i":  # (int4 and int2 too: numpy's 'V')
            # the dimension in the index's type, wrapped as jax converts it (an int8 index
            # into 300 rows adds 44 to a negative index, as jax.lax does)
            size = tr.as_tracer(x.builder, np.asarray(n).astype(dtype))
            i = tr.select_n(tr.lt(i, 0), i, tr.add(i, size))
        out.append(i)
    return out


def dynamic_slice(x: Tracer, start_indices, slice_sizes,
                  allow_negative_indices: bool = True) -> Tracer:
    sizes = tuple(int(s) for s in slice_sizes)
    idx = _index_scalars(x, start_indices, allow_negative_indices)
    return bind("dynamic_slice", [x, *idx], [x.aval.update(shape=sizes)], slice_sizes=sizes)


def dynamic_update_slice(x: Tracer, update: Tracer, start_indices,
                         allow_negative_indices: bool = True) -> Tracer:
    idx = _index_scalars(x, start_indices, allow_negative_indices)
    return bind("dynamic_update_slice", [x, update, *idx], [x.aval])


# -- gather and scatter -----------------------------------------------------------------------

def _tuple_fields(nt):
    return type(nt)(*(tuple(int(d) for d in f) for f in nt))


def gather(operand: Tracer, indices: Tracer, dimension_numbers: GatherDimensionNumbers,
           slice_sizes, *, unique_indices: bool = False, indices_are_sorted: bool = False,
           mode=None, fill_value=None) -> Tracer:
    dn = _tuple_fields(dimension_numbers)
    sizes = tuple(int(s) for s in slice_sizes)
    batch = list(indices.shape[:-1])
    skipped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offsets = iter(s for d, s in enumerate(sizes) if d not in skipped)
    bits = iter(batch)
    shape = [next(offsets) if d in dn.offset_dims else next(bits)
             for d in range(len(dn.offset_dims) + len(batch))]
    return bind("gather", [operand, indices], [operand.aval.update(shape=shape)],
                dimension_numbers=dn, slice_sizes=sizes, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices,
                # (jax.lax.gather's default: indices promised in bounds, clamped by XLA; its
                # from_any(None), which scatter's default is, would fill out-of-range rows)
                mode=GatherScatterMode.from_any(
                    GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode),
                fill_value=fill_value)


def _scatter(name, combine):
    def op(operand: Tracer, scatter_indices: Tracer, updates: Tracer,
           dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
           unique_indices: bool = False, mode=None) -> Tracer:
        if combine is None:
            jaxpr, consts = None, ()
        else:
            scalar = ShapedArray((), operand.dtype)
            closed = tr.make_jaxpr(combine)(scalar, scalar)
            jaxpr, consts = closed.jaxpr, tuple(closed.consts)
        return bind(name, [operand, scatter_indices, updates], [operand.aval],
                    dimension_numbers=_tuple_fields(dimension_numbers),
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                    mode=GatherScatterMode.from_any(mode), update_jaxpr=jaxpr,
                    update_consts=consts)
    op.__name__ = name.replace("-", "_")
    return op


# As in JAX, update_jaxpr is an open jaxpr over two scalars with its consts in update_consts;
# plain scatter carries none (the update replaces the element).
scatter = _scatter("scatter", None)
scatter_add = _scatter("scatter-add", tr.add)
scatter_sub = _scatter("scatter-sub", tr.sub)
scatter_mul = _scatter("scatter-mul", tr.mul)
scatter_min = _scatter("scatter-min", tr.min)
scatter_max = _scatter("scatter-max", tr.max)


def scatter_apply(operand: Tracer, scatter_indices: Tracer, func, dimension_numbers, *,
                  update_shape, indices_are_sorted=False, unique_indices=False,
                  mode=None) -> Tracer:
    """``func`` applied to the operand elements the indices pick (a scatter whose
    update_jaxpr ignores the update, as jax.lax.scatter_apply)."""
    scalar = ShapedArray((), operand.dtype)
    closed = tr.make_jaxpr(lambda x, _: func(x))(scalar, scalar)
    dummy = tr.broadcast_in_dim(tr.as_tracer(operand.builder, np.zeros((), operand.dtype)),
                                tuple(update_shape), ())
    return bind("scatter", [operand, scatter_indices, dummy], [operand.aval],
                dimension_numbers=_tuple_fields(dimension_numbers),
                indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                mode=GatherScatterMode.from_any(mode), update_jaxpr=closed.jaxpr,
                update_consts=tuple(closed.consts))


# -- sorting ----------------------------------------------------------------------------------

def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sort one array, or several of one shape ordered by the first ``num_keys`` of them
    (lexicographically; NaNs last, -0.0 equal to 0.0)."""
    single = isinstance(operand, Tracer)
    ops = [operand] if single else list(operand)
    if not 1 <= num_keys <= len(ops):
        raise ValueError(f"num_keys {num_keys} out of range for {len(ops)} operands")
    dim = _canon(dimension, ops[0].ndim)
    outs = bind("sort", ops, [o.aval for o in ops], multiple_results=True, dimension=dim,
                is_stable=bool(is_stable), num_keys=int(num_keys))
    return outs[0] if single else tuple(outs)


def sort_key_val(keys: Tracer, values: Tracer, dimension: int = -1, is_stable: bool = True):
    return sort([keys, values], dimension, is_stable, num_keys=1)


def top_k(operand: Tracer, k: int, axis: int = -1):
    """``(values, indices)`` of the ``k`` largest entries along ``axis``."""
    k = int(k)
    axis = _canon(axis, operand.ndim)
    if not 0 <= k <= operand.shape[axis]:
        raise ValueError(f"k {k} out of range for axis of size {operand.shape[axis]}")
    shape = list(operand.shape)
    shape[axis] = k
    return tuple(bind("top_k", [operand], [operand.aval.update(shape=shape),
                                           ShapedArray(shape, np.int32)],
                      multiple_results=True, k=k, axis=axis))


def _arg(name):
    def op(operand: Tracer, axis: int, index_dtype=np.int32) -> Tracer:
        axis = _canon(axis, operand.ndim)
        shape = [n for i, n in enumerate(operand.shape) if i != axis]
        dt = np.dtype(index_dtype)
        return bind(name, [operand], [ShapedArray(shape, dt)], axes=(axis,), index_dtype=dt)
    op.__name__ = name
    return op


argmax, argmin = _arg("argmax"), _arg("argmin")


def _cumulative(name):
    def op(operand: Tracer, axis: int = 0, reverse: bool = False) -> Tracer:
        return bind(name, [operand], [operand.aval], axis=_canon(axis, operand.ndim),
                    reverse=bool(reverse))
    op.__name__ = name
    return op


cumsum, cumprod, cummax, cummin, cumlogsumexp = (
    _cumulative(n) for n in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"))


# -- convolution ------------------------------------------------------------------------------

def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """None (NCHW, OIHW, NCHW), a ConvDimensionNumbers, or three layout strings such as
    ``("NHWC", "HWIO", "NHWC")``."""
    n = len(lhs_shape)
    if dimension_numbers is None:
        iota = tuple(range(n))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    lhs, rhs, out = dimension_numbers
    if not all(isinstance(s, str) for s in dimension_numbers):
        return ConvDimensionNumbers(tuple(lhs), tuple(rhs), tuple(out))
    spatial = [c for c in rhs if c not in "OI"]
    return ConvDimensionNumbers(
        (lhs.index("N"), lhs.index("C"), *(lhs.index(c) for c in spatial)),
        (rhs.index("O"), rhs.index("I"), *(rhs.index(c) for c in spatial)),
        (out.index("N"), out.index("C"), *(out.index(c) for c in spatial)))


def _dilated(n, d):
    return 0 if n == 0 else (n - 1) * d + 1


def conv_general_dilated(lhs: Tracer, rhs: Tracer, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None,
                         preferred_element_type=None) -> Tracer:
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    nsp = lhs.ndim - 2
    strides = tuple(int(s) for s in window_strides)
    lhs_dil = (1,) * nsp if lhs_dilation is None else tuple(int(d) for d in lhs_dilation)
    rhs_dil = (1,) * nsp if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    in_sizes = [_dilated(lhs.shape[d], k) for d, k in zip(dn.lhs_spec[2:], lhs_dil)]
    win_sizes = [_dilated(rhs.shape[d], k) for d, k in zip(dn.rhs_spec[2:], rhs_dil)]
    if isinstance(padding, str):
        pads = []
        for n, w, s in zip(in_sizes, win_sizes, strides):
            if padding == "VALID":
                pads.append((0, 0))
                continue
            total = builtins.max((-(-n // s) - 1) * s + w - n, 0)
            lo = total // 2 if padding == "SAME" else total - total // 2
            pads.append((lo, total - lo))
        padding = pads
    padding = tuple((int(lo), int(hi)) for lo, hi in padding)
    logical = [lhs.shape[dn.lhs_spec[0]] // batch_group_count, rhs.shape[dn.rhs_spec[0]]]
    for n, w, s, (lo, hi) in zip(in_sizes, win_sizes, strides, padding):
        padded = n + lo + hi
        logical.append(0 if padded < w or w == 0 else (padded - w) // s + 1)
    shape = [0] * lhs.ndim
    for d, size in zip(dn.out_spec, logical):
        shape[d] = size
    dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    return bind("conv_general_dilated", [lhs, rhs], [ShapedArray(shape, dtype)],
                window_strides=strides, padding=padding, lhs_dilation=lhs_dil,
                rhs_dilation=rhs_dil, dimension_numbers=dn,
                feature_group_count=int(feature_group_count),
                batch_group_count=int(batch_group_count), precision=precision,
                preferred_element_type=None if preferred_element_type is None
                else np.dtype(preferred_element_type))


# -- representation changes -------------------------------------------------------------------

def reduce_precision(x: Tracer, exponent_bits: int, mantissa_bits: int) -> Tracer:
    return bind("reduce_precision", [x], [x.aval], exponent_bits=int(exponent_bits),
                mantissa_bits=int(mantissa_bits))


def bitcast_convert_type(x: Tracer, new_dtype) -> Tracer:
    """Reinterpret bits; a narrower type adds a trailing dimension, a wider one consumes it."""
    new = np.dtype(new_dtype)
    a, b = x.dtype.itemsize, new.itemsize
    if a == b:
        shape = x.shape
    elif a > b:
        shape = (*x.shape, a // b)
    else:
        if not x.shape or x.shape[-1] != b // a:
            raise ValueError(f"bitcasting {x.aval.str_short()} to {new} needs a last "
                             f"dimension of {b // a}")
        shape = x.shape[:-1]
    return bind("bitcast_convert_type", [x], [ShapedArray(shape, new)], new_dtype=new)
