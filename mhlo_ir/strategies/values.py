"""Element types, shapes, tensor types and arrays: the leaves every other strategy draws from.

Arrays are drawn as raw bit patterns, so every value a type can hold appears: NaN payloads,
-0.0, infinities, subnormals, integer extremes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .. import dtypes
from ..types import TensorType, tensor

__all__ = ["element_types", "shapes", "tensor_types", "arrays", "float_values", "UINT"]

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def element_types(kinds=("bool", "sint", "uint", "float", "complex")):
    """One of the 28 element types, restricted to ``kinds``."""
    return st.sampled_from([t for t in dtypes.ALL_ELEMENT_TYPES if t.kind in kinds])


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


@st.composite
def arrays(draw, type: TensorType):
    """Numpy arrays of ``type``, drawn bit by bit (sub-byte types in their low bits)."""
    storage, per, nbits = storage_bits(type.element_type)
    count = per * type.num_elements
    words = draw(st.lists(st.integers(0, 2 ** nbits - 1), min_size=count, max_size=count))
    return array_from_words(words, type)


def float_values(et):
    """Values of float type ``et`` drawn by bit pattern, so that every value appears (-0.0,
    infinities, subnormals, each NaN payload). NaNs come as numpy scalars of the type, which
    keep their payload; every other value as the Python float equal to it."""
    storage = UINT[et.dtype.itemsize]

    def value(bits):
        x = np.array([bits], dtype=storage).view(et.dtype)[0]
        f = float(x)
        return x if f != f else f

    return st.integers(0, 2 ** et.bits - 1).map(value)
