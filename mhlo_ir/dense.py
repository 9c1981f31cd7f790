"""Dense element attributes: tensors of constants, held as raw little-endian bytes.

Holding bytes (not a numpy array) makes the attribute immutable and hashable and keeps the
printer's work to one ``bytes.hex()`` for large data, which is what makes big constants cheap.
Sub-byte types (i1, i2/i4, f4) take one byte per element, the layout ``ml_dtypes`` uses and the
one jaxlib's hex parser expects.

Text follows MLIR's printer: ``dense<>`` for no elements, ``dense<v>`` when every element has
the same bits (a splat), a nested list when there are at most ``hex_threshold`` elements, and
``dense<"0x...">`` above it. We print the hex in lowercase: it is 2.3x faster to produce than
MLIR's uppercase and MLIR reads either.
"""

from __future__ import annotations

import attrs
import numpy as np

from .attributes import Attribute, DenseArrayAttr
from .exact import as_array, exact_array
from .floatfmt import format_scalar
from .index_array import IndexArrayAttr, index_array
from .types import TensorType, tensor

__all__ = ["DenseElementsAttr", "dense", "dense_i64", "i64_array", "index", "HEX_THRESHOLD"]

HEX_THRESHOLD = 100


def _le_bytes(arr: np.ndarray) -> bytes:
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and np.little_endian is False):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return np.ascontiguousarray(arr).tobytes()


def _is_splat(raw: bytes, itemsize: int, n: int) -> bool:
    if n <= 1:
        return n == 1
    first = raw[:itemsize]
    if raw[-itemsize:] != first:
        return False
    return raw == first * n


@attrs.frozen(cache_hash=True)
class DenseElementsAttr(Attribute):
    """A constant tensor: its type and its elements' raw bytes (one element if ``splat``)."""

    type: TensorType
    data: bytes = attrs.field(repr=lambda b: f"<{len(b)} bytes>")
    splat: bool = False
    # The integers of a small i64 attribute (dimension lists), kept so rules need not decode.
    ints: tuple | None = attrs.field(default=None, eq=False, hash=False, repr=False)

    @classmethod
    def from_array(cls, array, type: TensorType | None = None) -> "DenseElementsAttr":
        """From a numpy array, scalar or nested list of numbers; ``type`` fixes shape and
        element type. Values are converted exactly (``mhlo_ir.exact``): 1.5 into an integer
        type, 300 into i8 or 1e10 into f16 raise ValueError, strings and objects TypeError."""
        if type is None:
            arr = as_array(array)
            if arr.dtype.kind == "O":
                raise TypeError(f"integers beyond int64 ({array!r:.50}) need an explicit type "
                                "(e.g. ui64)")
            type = tensor(arr.shape, arr.dtype)
        else:
            arr = exact_array(array, type.element_type)
            if arr.shape != type.shape:
                if arr.size == 1:
                    arr = arr.reshape(())
                else:
                    raise ValueError(
                        f"dense: array of shape {arr.shape} does not match {type}")
        if type.num_elements == 0:
            return cls(type, b"", False)
        if arr.ndim == 0 or arr.size == 1:
            return cls(type, _le_bytes(arr.reshape(1)), True)
        raw = _le_bytes(arr)
        itemsize = arr.dtype.itemsize
        if _is_splat(raw, itemsize, arr.size):
            return cls(type, raw[:itemsize], True)
        return cls(type, raw, False)

    def to_array(self) -> np.ndarray:
        """The elements as a (new, writable) numpy array of the type's shape and dtype."""
        dt = self.type.dtype.newbyteorder("<")
        flat = np.frombuffer(self.data, dtype=dt)
        if self.splat:
            return np.full(self.type.shape, flat[0], dtype=self.type.dtype)
        return flat.astype(self.type.dtype).reshape(self.type.shape)

    def render(self, dialect=None, hex_threshold: int = HEX_THRESHOLD) -> str:
        t = self.type
        n = t.num_elements
        if n == 0:
            return f"dense<> : {t._text}"
        if self.splat:
            scalar = np.frombuffer(self.data, dtype=t.dtype.newbyteorder("<"))[0]
            return f"dense<{format_scalar(scalar, t.element_type)}> : {t._text}"
        if n > hex_threshold:
            return f'dense<"0x{self.data.hex()}"> : {t._text}'
        return f"dense<{_nested(self.to_array(), t.element_type)}> : {t._text}"


def _nested(arr: np.ndarray, et) -> str:
    if arr.ndim == 0:
        return format_scalar(arr[()], et)
    if arr.ndim == 1:
        return "[" + ", ".join(format_scalar(x, et) for x in arr) + "]"
    return "[" + ", ".join(_nested(sub, et) for sub in arr) + "]"


def dense(array, type: TensorType | None = None) -> DenseElementsAttr:
    """A dense elements attribute from a numpy array (or anything ``numpy.asarray`` takes)."""
    return DenseElementsAttr.from_array(array, type)


_I64_CACHE: dict = {}


def index(v) -> int:
    """``v`` as a Python int if it is an integer (numpy ints too); bools and floats, which
    ``int()`` would silently turn into dimension numbers, are errors."""
    if v.__class__ is int:
        return v
    if isinstance(v, (bool, np.bool_)) or not hasattr(v, "__index__"):
        raise TypeError(f"expected an integer, got {type(v).__name__} {v!r}")
    return v.__index__()


def dense_i64(values) -> DenseElementsAttr:
    """``dense<[...]> : tensor<Nxi64>``: a genuine 1-D i64 tensor attribute, interned.

    Op attributes that hold integer lists (dimensions, permutation, slice bounds...) are
    IndexArrayAttr, which each output dialect spells its own way (``index_array``); the op
    table's converter ``i64_array`` turns a DenseElementsAttr given to such a slot into one.
    """
    if isinstance(values, DenseElementsAttr):
        return values
    # Validated before the cache is consulted: 1.0 and True hash and compare equal to 1, so
    # a lookup first would accept them once [1] had been cached.
    key = tuple(values)
    for v in key:
        if v.__class__ is not int:
            key = tuple(map(index, key))
            break
    hit = _I64_CACHE.get(key)
    if hit is not None:
        return hit
    ints = key
    for v in ints:
        if not -2**63 <= v < 2**63:
            raise ValueError(f"{v} does not fit in i64")
    arr = np.asarray(ints, dtype=np.int64).reshape(-1)
    attr = DenseElementsAttr.from_array(arr)
    object.__setattr__(attr, "ints", ints)
    if len(_I64_CACHE) > 65536:
        _I64_CACHE.clear()
    _I64_CACHE[key] = attr
    return attr


def i64_array(v) -> IndexArrayAttr:
    """The converter of the op table's integer-array attributes (dimensions, permutation,
    slice bounds, window sizes...): integers become an interned IndexArrayAttr. A 1-D i64
    DenseElementsAttr (MHLO's spelling, e.g. parsed text) or an i64 DenseArrayAttr
    (StableHLO's) converts to the same value; other tensors are refused."""
    cls = v.__class__
    if cls is IndexArrayAttr:
        return v
    if cls is tuple or cls is list:
        return index_array(v)
    if isinstance(v, DenseElementsAttr):
        t = v.type
        if t.element_type.name != "i64" or t.rank != 1:
            raise TypeError(f"expected a 1-D tensor<Nxi64> attribute, got {t}")
        return index_array(v.ints if v.ints is not None else v.to_array().tolist())
    if isinstance(v, DenseArrayAttr):
        if v.type.name != "i64":
            raise TypeError(f"expected an array<i64> attribute, got array<{v.type.name}>")
        return index_array(v.values)
    if isinstance(v, Attribute):
        raise TypeError(f"expected a list of integers, got {type(v).__name__} {v!r:.60}")
    return index_array(v)
