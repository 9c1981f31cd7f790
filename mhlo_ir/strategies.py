"""Hypothesis strategies for users who test compilers with generated programs.

    from mhlo_ir import strategies as hst
    @given(hst.programs())
    def test_my_backend(program):
        module, inputs = program
        ...

Needs ``hypothesis`` (the ``test`` extra); ``import mhlo_ir`` never imports this module.
Arrays are drawn as raw bit patterns, so every value a type can hold appears: NaN payloads,
-0.0, infinities, subnormals, integer extremes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from . import dtypes
from .builder import Builder
from .ir import Module
from .ops.elementwise import BINARY, UNARY
from .types import TensorType, tensor

__all__ = ["element_types", "shapes", "tensor_types", "arrays", "programs"]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
# Ops XLA:CPU compiles alone but not fused with others (jaxlib 0.10.2: a signed mulhi fed by
# another elementwise op fails with "Unsupported elementwise operation"): generated programs,
# which chain ops freely, leave them out.
_NOT_FUSIBLE = frozenset({"mulhi"})


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


@st.composite
def arrays(draw, type: TensorType):
    """Numpy arrays of ``type``, drawn bit by bit (sub-byte types in their low bits)."""
    et = type.element_type
    n = type.num_elements
    if et.kind == "complex":
        storage, count, nbits = _UINT[et.component.dtype.itemsize], 2 * n, et.bits // 2
    else:
        storage, count = _UINT[et.dtype.itemsize], n
        nbits = 1 if et.kind == "bool" else min(et.bits, 8 * et.dtype.itemsize)
    words = draw(st.lists(st.integers(0, 2 ** nbits - 1), min_size=count, max_size=count))
    return np.array(words, dtype=storage).view(et.dtype).reshape(type.shape)


@st.composite
def programs(draw, max_ops: int = 8, kinds=("sint", "float")):
    """A well-typed elementwise program and its inputs: ``(module, [arrays])``.

    ``main`` takes 1-3 tensors of one type and applies up to ``max_ops`` unary and binary ops
    that accept that element type, each to values chosen among those already defined, then
    returns the last value and one more chosen at random.
    """
    et = draw(element_types(kinds))
    t = tensor(draw(shapes(max_rank=2, max_dim=3, min_dim=1)), et)
    n_args = draw(st.integers(1, 3))
    unary = sorted(n for n, (k, rule) in UNARY.items() if et.kind in k and rule(et) is et)
    binary = sorted(n for n, (k, rule) in BINARY.items()
                    if et.kind in k and rule(et) is et and n not in _NOT_FUSIBLE)
    m = Module("generated")
    f = m.add_function("main", [t] * n_args, visibility="public")
    b = Builder(f.entry_block, function=f)
    values = list(f.arguments)
    for _ in range(draw(st.integers(1, max_ops))):
        if binary and (not unary or draw(st.booleans())):
            name = draw(st.sampled_from(binary))
            x, y = draw(st.sampled_from(values)), draw(st.sampled_from(values))
            values.append(getattr(Builder, name + "_" if name in ("and", "or") else name)(b, x, y))
        else:
            name = draw(st.sampled_from(unary))
            x = draw(st.sampled_from(values))
            values.append(getattr(Builder, name + "_" if name == "not" else name)(b, x))
    b.return_(values[-1], draw(st.sampled_from(values)))
    inputs = [draw(arrays(t)) for _ in range(n_args)]
    return m, inputs
