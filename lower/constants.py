"""Constants and types for lowering: the IR types of abstract values, and Python/numpy
values as IR constants through a handler registry per type (as JAX's ``ir_constants``)."""

from __future__ import annotations

import struct
import sys
from typing import Callable

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import Builder

from . import core

__all__ = ["aval_to_ir_types", "aval_to_ir_type", "register_constant_handler", "ir_constants",
           "ir_constant"]


def is_token(aval) -> bool:
    """Whether ``aval`` is an effect token's (ours or JAX's)."""
    return aval is core.abstract_token or type(aval).__name__ == "AbstractToken"


# jax's float0, the dtype of integer inputs' tangents (it has no bits): lowered as i1, as jax
# lowers it, and its values as false.
FLOAT0 = np.dtype([("float0", np.void, 0)])


def aval_to_ir_types(aval) -> tuple:
    """The IR types of an abstract value (one tensor type; a token for a token)."""
    if is_token(aval):
        return (hlo.token(),)
    if aval.dtype == FLOAT0:
        return (hlo.tensor(aval.shape, hlo.i1),)
    inner = getattr(aval, "inner_aval", None)
    if inner is not None:  # jax's AbstractFuture of an async collective: its value's types
        return aval_to_ir_types(inner)
    if not isinstance(aval.dtype, np.dtype):
        # jax's extended dtypes (PRNG keys, key<fry>): their physical uint32 array.
        from .rules.random import physical_aval  # lazy: lower.rules imports this module
        aval = physical_aval(aval)
    return (hlo.tensor(aval.shape, aval.dtype),)


def aval_to_ir_type(aval):
    (t,) = aval_to_ir_types(aval)
    return t


_constant_handlers: dict = {}


def register_constant_handler(type_: type, handler: Callable) -> None:
    """``handler(builder, value) -> tuple of Values`` for constants of ``type_``."""
    _constant_handlers[type_] = handler


def ir_constants(b: Builder, val) -> tuple:
    """The IR values of a Python or numpy constant, through the handler for its type.

    Objects without a handler that convert to numpy (``__array__``: jax arrays captured as
    constants) go through the ndarray handler."""
    for t in type(val).__mro__:
        handler = _constant_handlers.get(t)
        if handler is not None:
            return handler(b, val)
    dtype = getattr(val, "dtype", None)
    if dtype is not None and not isinstance(dtype, np.dtype):
        jax = sys.modules.get("jax")
        if jax is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            # A typed PRNG key captured as a constant: its key words, the array the program
            # holds for a key aval (see aval_to_ir_types).
            return _ndarray_constant(b, np.asarray(jax.random.key_data(val)))
    if hasattr(val, "__array__"):
        return _constant_handlers[np.ndarray](b, np.asarray(val))
    raise TypeError(f"no constant handler for type {type(val).__name__}")


def ir_constant(b: Builder, val):
    (v,) = ir_constants(b, val)
    return v


def _ndarray_constant(b: Builder, val: np.ndarray) -> tuple:
    """Arrays with zero strides (``np.broadcast_to`` results) become a broadcast of the small
    base constant, not a huge literal."""
    if val.dtype == FLOAT0:
        val = np.zeros(val.shape, np.bool_)
    if val.ndim == 0:
        return (b.constant(_scalar_attr(val)),)
    if val.ndim and 0 in val.strides and val.size:
        zero = tuple(i for i, s in enumerate(val.strides) if s == 0 and val.shape[i] > 1)
        if zero:
            index = tuple(0 if i in zero else slice(None) for i in range(val.ndim))
            base = np.ascontiguousarray(val[index])
            dims = [i for i in range(val.ndim) if i not in zero]
            c = b.constant(base)
            return (b.broadcast_in_dim(c, val.shape, dims),)
    return (b.constant(val if val.flags.c_contiguous else np.array(val, order="C")),)


_SCALARS: dict = {}


def _scalar_attr(arr: np.ndarray):
    """One interned DenseElementsAttr per scalar value and dtype: literals repeat.

    NOTE: keyed by the dtype object and the raw bytes: ``dtype.str`` is ``'<V1'`` for int4,
    uint4, int2, uint2 and most float8 types (a ui4 literal came back as an i4 constant), and
    bytes keep -0.0 apart from 0.0 and every NaN payload apart."""
    key = (arr.dtype, arr.tobytes())
    attr = _SCALARS.get(key)
    if attr is None:
        if len(_SCALARS) > 4096:
            _SCALARS.clear()
        attr = _SCALARS[key] = hlo.dense(arr)
    return attr


def _scalar_constant(b: Builder, val) -> tuple:
    # Python scalars take JAX's default (x64 off) dtypes; numpy scalars, and JAX's typed
    # literals (int/float subclasses with a dtype), keep theirs.
    dtype = getattr(val, "dtype", None)
    if dtype is not None and not isinstance(val, np.generic):
        return (b.constant(_scalar_attr(np.asarray(val, dtype))),)
    if isinstance(val, (bool, np.bool_)):
        arr = np.asarray(val, np.bool_)
    elif isinstance(val, np.generic):
        arr = np.asarray(val)
    else:
        dtype = next(d for t, d in ((int, np.int32), (float, np.float32),
                                    (complex, np.complex64)) if isinstance(val, t))
        arr = np.asarray(val, dtype)
    return (b.constant(_scalar_attr(arr)),)


register_constant_handler(np.ndarray, _ndarray_constant)
for _t in (bool, int, float, complex, np.generic):
    register_constant_handler(_t, _scalar_constant)


# -- literals ---------------------------------------------------------------------------------

_pack_f64 = struct.Struct("<d").pack


def literal_key(val):
    """A key telling literal values apart exactly (-0.0 from 0.0, each NaN payload, the
    dtype), or None for values not worth keying: ``jaxpr_subcomp`` makes one constant per
    key and block."""
    cls = val.__class__
    if cls is np.ndarray:
        # The dtype itself: its .str is '<V1' for several of ml_dtypes' 1-byte types.
        return (val.dtype, val.shape, val.tobytes()) if val.size <= 16 else None
    if cls is int or cls is bool:
        return (cls, val)
    if cls is float:
        return (cls, _pack_f64(val))
    if cls is complex:
        return (cls, _pack_f64(val.real), _pack_f64(val.imag))
    if isinstance(val, np.ndarray):  # a subclass: jax 0.10's literals are TypedNdArrays
        return (cls, val.dtype, val.shape, val.tobytes()) if val.size <= 16 else None
    dtype = getattr(val, "dtype", None)
    if dtype is not None and isinstance(val, (np.generic, int, float, complex)):
        return (cls, dtype, np.asarray(val).tobytes())
    return None
