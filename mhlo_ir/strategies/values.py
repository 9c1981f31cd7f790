"""Element types, shapes, tensor types and arrays: the leaves every other strategy draws from.

Arrays are drawn as raw bit patterns, so every value a type can hold appears: NaN payloads,
-0.0, infinities, subnormals, integer extremes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .. import dtypes
from ..types import TensorType, tensor

__all__ = ["element_types", "shapes", "tensor_types", "arrays", "words", "float_values",
           "quantized_types", "UINT"]

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


KINDS = ("bool", "sint", "uint", "float", "complex")


def element_types(kinds=KINDS):
    """One of the 28 element types, restricted to ``kinds`` (some of ``KINDS``)."""
    if isinstance(kinds, str) or not kinds or not set(kinds) <= set(KINDS):
        raise ValueError(f"kinds must be a non-empty list of element type kinds among "
                         f"{list(KINDS)}, got {kinds!r:.60}")
    return st.sampled_from([t for t in dtypes.ALL_ELEMENT_TYPES if t.kind in kinds])


def _element_type(et, what: str, kinds=None):
    """``et`` (an ElementType or its name) as an ElementType of one of ``kinds``."""
    if isinstance(et, str):
        et = dtypes.element_type(et)
    if not isinstance(et, dtypes.ElementType):
        raise TypeError(f"{what} must be an element type (hlo.f32, or its name 'f32'), got "
                        f"{type(et).__name__} {et!r:.60}")
    if kinds is not None and et.kind not in kinds:
        raise ValueError(f"{what} must be a {' or '.join(kinds)} type, got {et.name}")
    return et


@st.composite
def quantized_types(draw, shape=None, storage=None, expressed=None):
    """Uniformly quantized element types (``mhlo_ir.quant``): storage of 2 to 32 bits, signed
    or unsigned (or ``storage``), expressed bf16/f16/f32/f64 (or ``expressed``), scales from
    the expressed type's smallest subnormal to its largest value, zero points and narrowed
    storage ranges anywhere in the storage type's; per axis too when ``shape`` is given, with
    one scale and zero point per index of a drawn dimension of 1 to 8 elements."""
    import ml_dtypes

    from ..quant import quantized, storage_range
    st_types = [t for t in dtypes.ALL_ELEMENT_TYPES
                if t.kind in ("sint", "uint") and 2 <= t.bits <= 32]
    ex_types = [dtypes.bf16, dtypes.f16, dtypes.f32, dtypes.f64]
    if storage is not None:
        storage = _element_type(storage, "quantized_types' storage")
        if storage not in st_types:
            raise ValueError(f"quantized_types' storage must be an integer type of 2 to 32 "
                             f"bits, got {storage.name}")
    if expressed is not None:
        expressed = _element_type(expressed, "quantized_types' expressed")
        if expressed not in ex_types:
            raise ValueError(f"quantized_types' expressed type must be bf16, f16, f32 or f64, "
                             f"got {expressed.name}")
    et = storage if storage is not None else draw(st.sampled_from(st_types))
    ex = expressed if expressed is not None else draw(st.sampled_from(ex_types))
    info = ml_dtypes.finfo(ex.dtype)
    scale = st.floats(float(info.smallest_subnormal), float(info.max), allow_nan=False,
                      allow_infinity=False)
    lo, hi = storage_range(et)
    smin, smax = lo, hi
    if draw(st.booleans()):
        smin = draw(st.integers(lo, hi - 1))
        smax = draw(st.integers(smin + 1, hi))
    axes = [d for d, n in enumerate(shape or ()) if 1 <= n <= 8]
    if axes and draw(st.booleans()):
        axis = draw(st.sampled_from(axes))
        n = shape[axis]
        return quantized(et, ex, draw(st.lists(scale, min_size=n, max_size=n)),
                         draw(st.lists(st.integers(smin, smax), min_size=n, max_size=n)),
                         axis=axis, storage_min=smin, storage_max=smax)
    return quantized(et, ex, draw(scale), draw(st.integers(smin, smax)), storage_min=smin,
                     storage_max=smax)


def shapes(max_rank: int = 3, max_dim: int = 4, min_dim: int = 0):
    """Shapes up to ``max_rank`` (rank 0 and zero-size dimensions included by default)."""
    return st.lists(st.integers(min_dim, max_dim), max_size=max_rank).map(tuple)


def tensor_types(element_type=None, shape=None):
    """Tensor types over the given strategies (defaults: any element type, small shapes)."""
    return st.builds(tensor, shape if shape is not None else shapes(),
                     element_type if element_type is not None else element_types())


def storage_bits(et) -> tuple:
    """``(numpy storage dtype, words per element, meaningful bits per word)`` of ``et``: how an
    array of it is made from drawn unsigned words (sub-byte types in their low bits, complex
    numbers as two words)."""
    if et.kind == "complex":
        return UINT[et.component.dtype.itemsize], 2, et.bits // 2
    nbits = 1 if et.kind == "bool" else min(et.bits, 8 * et.dtype.itemsize)
    return UINT[et.dtype.itemsize], 1, nbits


def array_from_words(words, type: TensorType) -> np.ndarray:
    """The array of ``type`` whose elements have the bit patterns ``words``."""
    storage, _, _ = storage_bits(type.element_type)
    return np.array(words, dtype=storage).view(type.element_type.dtype).reshape(type.shape)


# Up to this many words, each is drawn on its own (as ever); beyond it, sparsely.
DENSE_WORDS = 256


def words(count: int, nbits: int):
    """Arrays of ``count`` unsigned integers of ``nbits`` bits (any bit pattern), in the
    smallest numpy unsigned type that holds them.

    NOTE: beyond ``DENSE_WORDS``, drawn as hypothesis' numpy arrays do, sparsely: one drawn
    fill value, then some positions drawn on their own. A list of ``count`` independent
    draws has a smallest example of ``count`` choices, which hypothesis'
    ``large_base_example`` health check refuses from a few thousand (a 64x64 f32 array)
    and its buffer cannot hold from 16,384; the sparse one's is a few choices whatever the
    size, and every position can still take every bit pattern."""
    dtype = np.dtype(UINT[max(1, (nbits + 7) // 8)])
    element = st.integers(0, 2 ** nbits - 1)
    if count <= DENSE_WORDS:
        return st.lists(element, min_size=count, max_size=count).map(
            lambda ws: np.array(ws, dtype))
    from hypothesis.extra import numpy as hnp
    return hnp.arrays(dtype, (count,), elements=element, fill=element)


@st.composite
def arrays(draw, type: TensorType):
    """Numpy arrays of ``type``, drawn bit by bit (sub-byte types in their low bits): each
    element any bit pattern, large arrays too (``words``)."""
    if not isinstance(type, TensorType):
        raise TypeError(f"arrays takes a tensor type (hlo.tensor(shape, dtype)), got "
                        f"{type.__class__.__name__} {type!r:.60}")
    storage, per, nbits = storage_bits(type.element_type)
    return array_from_words(draw(words(per * type.num_elements, nbits)), type)


def float_values(et):
    """Values of float type ``et`` drawn by bit pattern, so that every value appears (-0.0,
    infinities, subnormals, each NaN payload). NaNs come as numpy scalars of the type, which
    keep their payload; every other value as the Python float equal to it."""
    et = _element_type(et, "float_values' type", ("float",))
    storage = UINT[et.dtype.itemsize]

    def value(bits):
        x = np.array([bits], dtype=storage).view(et.dtype)[0]
        f = float(x)
        return x if f != f else f

    return st.integers(0, 2 ** et.bits - 1).map(value)
