"""The ``constant`` op and its front door: numpy arrays and scalars, Python numbers and
nested lists, and DenseElementsAttrs as constant ops, with the memoised paths that make
repeated constants (every layer's zeros, every literal) cost a dictionary lookup.

NOTE: every memo key holds what the constant's value depends on exactly (its type and bits,
or the attribute itself), never a value compared by equality: 0.0 == -0.0, and NaNs equal
nothing.
"""

from __future__ import annotations

import numpy as np

from .. import op_forms as pf
from ..dense import DenseElementsAttr, is_splat
from ..dtypes import ALL_ELEMENT_TYPES
from ..ir import _MANY, Value, _new_single_result_op
from ..location import checked_location
from ..op_attributes import OpAttributes
from ..types import TensorType, tensor
from .args import constant_attr
from .args import shape as shape_arg
from .construct import memo, memo_get, memo_put
from .spec import AttrSpec, OpSpec, builder_method, fail, register


def _constant(op, types, attributes):
    value = attributes["value"]
    if not isinstance(value, DenseElementsAttr):
        fail(op, f"attribute value must be a dense elements attribute, got {value!r}")
    return (value.type,)


def _dense_value(v):
    if isinstance(v, DenseElementsAttr):
        return v
    try:
        return DenseElementsAttr.from_array(v)
    except TypeError:
        raise TypeError(f"expected a dense elements attribute or a numeric array, got "
                        f"{type(v).__name__} {v!r:.60}") from None


register(OpSpec("constant", (), {"value": AttrSpec(_dense_value, True)},
                infer=_constant, pretty=pf.CONSTANT, quantized="not_yet"))


#
# NOTE: memoised (``construct.memo``): the shape and dimension arguments are checked to be
# ints before they become part of a memo key, where 1.0 and True would pass for 1.

@builder_method
def constant(b, value, dtype=None, *, shape=None, location=None) -> Value:
    """A constant tensor from a numpy array, a numpy or Python scalar, a nested list of
    numbers, or a DenseElementsAttr. Without ``dtype``, numpy values keep their dtype and
    Python numbers, alone or in lists, take 32-bit types as in JAX without x64: ints become
    i32, floats f32 and complex numbers complex64 (``constant([1, 2])`` is a
    ``tensor<2xi32>``; numpy would make it i64). Pass ``dtype`` or a numpy array for others.

    ``shape``: the constant is ``value`` (then a scalar) in every element of a tensor of
    that shape, a splat: ``constant(0.0, shape=(8, 64))`` is ``dense<0.000000e+00> :
    tensor<8x64xf32>``, made without an array of that size (``np.zeros`` would be copied and
    scanned for being a splat on every call).

    Values are converted exactly (see ``mhlo_ir.exact``): ``constant(1.5, dtype=i32)``,
    ``constant(300, dtype=i8)``, ``constant(-1, dtype=ui8)`` and ``constant(1e10,
    dtype=f16)`` (which numpy would make inf) raise OpBuildError, as do strings and object
    arrays; bools become 0 and 1 in integer types."""
    if shape is not None:
        return _splat_constant(b, value, dtype, shape, location)
    cls = value.__class__
    if cls is np.ndarray and dtype is None:
        op = _array_constant(b, value, location)
        if op is not None:
            return op
    if cls is not DenseElementsAttr:
        # Scalars (literals: 0, 1.0, np.float32(0)...) repeat in every program: keyed by
        # their exact bits and class (never by equality: -0.0 == 0.0), the second one
        # reuses the first's attribute, validation and printed text.
        key = _scalar_key(value, cls) if dtype is None else None
        if key is not None:
            hit = memo_get(key)
            if hit is not None:
                return _reuse(b, hit, hit[1], location)
            value = constant_attr("constant", value, None)
            return memo(b, key, "constant", (), location, _constant_make, value)
        value = constant_attr("constant", value, dtype)
    elif dtype is not None:
        value = constant_attr("constant", value, dtype)
    if value.type.num_elements <= 16:
        # Small constants (literals, dimension values) repeat: validate them once. The
        # memo keeps the attribute alive, so its id cannot be reused while cached.
        return memo(b, ("constant", id(value)), "constant", (), location, _constant_make,
                    value)
    return _large_constant(b, value, location)


def _splat_constant(b, value, dtype, shape, location):
    """``constant(value, dtype, shape=shape)``. Without ``dtype``, a scalar's memo key is its
    exact bits and class (``_scalar_key``) with the shape, so a splat built again (every
    layer's zeros) costs a lookup; otherwise the value is converted first and the key is the
    attribute's type and bits, as an array splat's is."""
    dims = shape
    if dims.__class__ is tuple:
        for d in dims:  # ints (1.0 and True equal 1) before keying
            if d.__class__ is not int or d < 0:
                dims = shape_arg("constant", "shape", shape)
                break
    else:
        dims = shape_arg("constant", "shape", shape)
    cls = value.__class__
    if dtype is not None:
        key = None
    elif cls is float and value == value:  # the common case, _scalar_key's first
        key = ("constant splat", dims, float, value.hex())
    else:
        key = _scalar_key(value, cls)
        if key is not None:
            key = ("constant splat", dims, *key[1:])
    scalar = None
    if key is not None:
        hit = memo_get(key)
        if hit is not None:
            return _reuse(b, hit, hit[1], location)
        scalar = _SPLAT_SCALARS.get(key[2:])  # (the value at another shape)
    if scalar is None:
        scalar = constant_attr("constant", value, dtype)
        if scalar.type.shape != ():
            fail("constant", f"shape={list(dims)} spreads one scalar value over the tensor; "
                             f"got a value of type {scalar.type} (leave shape out to make the "
                             "constant of an array)")
        if key is not None:
            if len(_SPLAT_SCALARS) > 4096:
                _SPLAT_SCALARS.clear()
            _SPLAT_SCALARS[key[2:]] = scalar
    t = tensor(dims, scalar.type.element_type)
    if t.num_elements == 0:
        attr = DenseElementsAttr(t, b"", False)
    else:
        attr = DenseElementsAttr(t, scalar.data, True)
    if key is None:  # (dtype given: keyed by the converted value's type and bits)
        key = ("constant splat", t, attr.data)
    return memo(b, key, "constant", (), location, _constant_make, attr)


# The scalar part of a splat's memo key (its class and exact bits) -> the scalar's
# attribute, which a splat of that value at a new shape is made from. Bounded.
_SPLAT_SCALARS: dict = {}


def _reuse(b, hit, attributes, location):
    """A constant op from a memo ``hit`` (spec, attributes, result type) with
    ``attributes``: memo's hit path, inlined (13% fewer instructions than calling memo)."""
    block = b.block
    op = _new_single_result_op(hit[0], (), _MANY, attributes, hit[2],
                               b.location if location is None else checked_location(location),
                               block)
    block.operations.append(op)
    return op


def _large_constant(b, value, location):
    """A constant of more than 16 elements: its check depends only on its type, so it is
    made once per type, while each op gets its own attribute mapping (its value is its
    own)."""
    t = value.type
    hit = memo_get(("constant", t))
    if hit is None:
        op = b._one("constant", (), {"value": value}, location=location)
        memo_put(("constant", t), (op.spec, None, t))
        return op
    return _reuse(b, hit, OpAttributes({"value": value}), location)


def _array_constant(b, arr, location):
    """``constant`` of a numpy array of a dtype the table takes as it is, or None where the
    general path must answer (byte-swapped, object and string arrays, dtypes no type has:
    its messages).

    Splats (a ReLU's zeros, a mask of ones) and arrays of at most 16 elements are keyed by
    their type and exact bits (never by value: -0.0 and 0.0 differ), so every layer's
    constant after the first reuses the first's attribute, check and printed text. Larger
    arrays get their own attribute made from one copy of their bytes, and the check made
    once per type."""
    dt = arr.dtype
    if dt.byteorder == _SWAPPED:
        return None
    # numpy's shapes are tuples of ints: the interned type is looked up without the checks
    # TensorType makes of other shapes (where True would pass for 1).
    t = _interned_get((arr.shape, dt))
    if t is None:
        if dt.kind not in _ARRAY_KINDS:
            return None
        try:
            t = TensorType(arr.shape, dt)
        except (TypeError, ValueError):
            return None
    raw = arr.tobytes()
    n = arr.size
    size = dt.itemsize
    splat = is_splat(raw, size, n)
    if splat or n <= 16:
        key = ("constant", t, raw[:size] if splat else raw)
        hit = memo_get(key)
        if hit is None:
            value = DenseElementsAttr(t, raw[:size] if splat else raw, splat)
            return memo(b, key, "constant", (), location, _constant_make, value)
        return _reuse(b, hit, hit[1], location)
    return _large_constant(b, DenseElementsAttr(t, raw, False), location)


# Array kinds the fast path takes (ml_dtypes' types are "V"; a structured dtype is refused
# by TensorType and goes the general way), and the byte order it leaves to it.
_ARRAY_KINDS = frozenset("biufcV")
_SWAPPED = "<" if not np.little_endian else ">"
_interned_get = TensorType._interned.get


def _scalar_key(value, cls):
    """A memo key holding everything a scalar constant's value depends on, or None."""
    if cls is float:
        return None if value != value else ("constant", float, value.hex())  # NaN payloads
    if cls is int or cls is bool:
        return ("constant", cls, value)
    how = _SCALAR_CLASSES.get(cls)
    if how is int:
        return ("constant", cls, int(value))
    if how is float:
        f = float(value)  # exact: every float type here is a subset of f64
        if f == f:
            return ("constant", cls, f.hex())
    if isinstance(value, np.generic) and value.dtype.kind in "biufcV":
        return ("constant", cls, value.dtype, value.tobytes())  # NaNs, complex numbers
    return None


# How a numpy (or ml_dtypes) scalar of each element type's class is keyed: integers and
# bools by their int, real floats by the hex of their exact f64 value (its sign included;
# NaNs, whose payloads it would lose, by their bytes). A numpy scalar's tobytes costs 0.7 us.
_SCALAR_CLASSES = {et.dtype.type: (float if et.is_float else int)
                   for et in ALL_ELEMENT_TYPES if et.is_float or et.is_integer or et.is_bool}


def _constant_make(value):
    return {"value": value}, None
