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


# -- types, attributes and locations: what render writes and parse reads back -----------------

def float_values(et):
    """Values of float type ``et`` drawn by bit pattern, so that every value appears (-0.0,
    infinities, subnormals, each NaN payload). NaNs come as numpy scalars of the type, which
    keep their payload; every other value as the Python float equal to it."""
    storage = _UINT[et.dtype.itemsize]

    def value(bits):
        x = np.array([bits], dtype=storage).view(et.dtype)[0]
        f = float(x)
        return x if f != f else f

    return st.integers(0, 2 ** et.bits - 1).map(value)


def types(max_leaves: int = 6):
    """Types of every kind: element types, tensor types (with large dimensions too), the
    token type, and tuple and function types nesting them."""
    from .types import TOKEN, FunctionType, TupleType
    dims = st.one_of(st.integers(0, 4), st.integers(0, 2 ** 16))
    leaves = st.one_of(tensor_types(shape=st.lists(dims, max_size=3).map(tuple)),
                       element_types(), st.just(TOKEN))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(TupleType),
        st.builds(FunctionType, st.lists(inner, max_size=3), st.lists(inner, max_size=3))),
        max_leaves=max_leaves)


def _int_range(et):
    if et.kind == "uint":
        return 0, 2 ** et.bits - 1
    return -(2 ** (et.bits - 1)), 2 ** (et.bits - 1) - 1


def integer_attrs():
    """IntegerAttr of every integer type over its whole range (signless types as signed)."""
    from .attributes import IntegerAttr
    return element_types(("sint", "uint")).flatmap(
        lambda et: st.integers(*_int_range(et)).map(lambda v: IntegerAttr(v, et)))


def float_attrs():
    """FloatAttr of every float type, with any bit pattern of that type."""
    from .attributes import FloatAttr
    return element_types(("float",)).flatmap(
        lambda et: float_values(et).map(lambda v: FloatAttr(v, et)))


def dense_array_attrs():
    """DenseArrayAttr (``array<T: ...>``) of each element type MLIR allows: i1 and integers
    and floats of 8 bits or more."""
    from .attributes import DenseArrayAttr

    def of(et):
        if et.is_bool:
            values = st.booleans()
        elif et.is_float:
            values = float_values(et)
        else:
            values = st.integers(*_int_range(et))
        return st.lists(values, max_size=5).map(lambda vs: DenseArrayAttr(tuple(vs), et))

    allowed = [t for t in dtypes.ALL_ELEMENT_TYPES
               if not t.is_complex and (t.is_bool or t.bits >= 8)]
    return st.sampled_from(allowed).flatmap(of)


def dense_elements_attrs(max_rank: int = 3, max_dim: int = 4):
    """DenseElementsAttr of any element type and small shape, elements drawn by bit pattern,
    splats (repeated draws of one element) included."""
    from .dense import DenseElementsAttr

    def of(t):
        splat = arrays(tensor((1,) * t.rank, t.element_type)).map(
            lambda a: np.broadcast_to(a, t.shape).copy())
        return st.one_of(arrays(t), splat).map(lambda a: DenseElementsAttr.from_array(a, t))

    return tensor_types(shape=shapes(max_rank, max_dim)).flatmap(of)


def _text(min_size=0):
    return st.text(st.characters(codec="utf-8"), min_size=min_size, max_size=12)


def mhlo_attributes():
    """The MHLO enum and structured attributes (dimension numbers, channel handles...), with
    any field values their constructors accept."""
    from . import mhlo_attributes as ma
    enums = st.sampled_from(sorted(ma.ENUM_VALUES)).flatmap(
        lambda k: st.sampled_from(ma.ENUM_VALUES[k]).map(lambda v: ma.EnumAttr(k, v)))
    ints = st.lists(st.integers(0, 7), max_size=3)
    dim = st.integers(0, 7)
    i64 = st.integers(-(2 ** 63), 2 ** 63 - 1)

    @st.composite
    def conv(draw):
        n = draw(st.integers(0, 3))
        sides = [draw(st.permutations(range(n + 2))) for _ in range(3)]
        return ma.ConvDimensionNumbers(
            sides[0][0], sides[0][1], sides[0][2:], sides[1][0], sides[1][1], sides[1][2:],
            sides[2][0], sides[2][1], sides[2][2:])

    return st.one_of(
        enums,
        st.builds(ma.DotDimensionNumbers, ints, ints, ints, ints),
        st.builds(ma.GatherDimensionNumbers, ints, ints, ints, dim, ints, ints),
        st.builds(ma.ScatterDimensionNumbers, ints, ints, ints, dim, ints, ints),
        conv(),
        st.builds(ma.ChannelHandle, i64, i64),
        st.builds(ma.OutputOperandAlias, ints, st.integers(0, 7), ints))


def attributes(max_leaves: int = 8):
    """Attributes of every kind: builtin scalars, strings, symbols, types, dense arrays and
    elements, MHLO's own attributes, and arrays and dictionaries nesting them."""
    from . import attributes as a
    leaves = st.one_of(
        integer_attrs(), float_attrs(), st.booleans().map(a.BoolAttr),
        _text().map(a.StringAttr), st.just(a.UNIT), _text(1).map(a.SymbolRefAttr),
        types(max_leaves=3).map(a.TypeAttr), dense_array_attrs(),
        dense_elements_attrs(max_rank=2, max_dim=3), mhlo_attributes())
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(a.ArrayAttr),
        st.dictionaries(_text(1), inner, max_size=4).map(a.DictionaryAttr)),
        max_leaves=max_leaves)


def locations(mlir_canonical: bool = False, max_leaves: int = 6):
    """Locations of every kind. With ``mlir_canonical``, only those MLIR keeps as they are
    (its FusedLoc drops unknown and repeated parts, merges nested fused locations and turns
    fewer than two parts without metadata into the part itself), so that MLIR prints back
    the very same location. NameLoc children are never UnknownLoc: ``"n"(unknown)`` and
    ``"n"`` are one location, which reads back as the second."""
    from . import location as L
    u32 = st.integers(0, 2 ** 32 - 1)
    leaves = st.one_of(st.just(L.UNKNOWN), st.builds(L.FileLineColLoc, _text(1), u32, u32),
                       _text().map(L.NameLoc))
    if not mlir_canonical:
        return st.recursive(leaves, lambda inner: st.one_of(
            st.builds(L.NameLoc, _text(), inner.filter(lambda x: x is not L.UNKNOWN)),
            st.builds(L.CallSiteLoc, inner, inner),
            st.builds(L.FusedLoc, st.lists(inner, max_size=3), st.none() | _text())),
            max_leaves=max_leaves)

    def fused(inner):
        part = inner.filter(lambda x: not isinstance(x, (L.UnknownLoc, L.FusedLoc)))
        plain = st.lists(part, min_size=2, max_size=3, unique=True).map(L.FusedLoc)
        meta = st.builds(L.FusedLoc, st.lists(part, min_size=1, max_size=3, unique=True),
                         _text())
        return plain | meta

    return st.recursive(leaves, lambda inner: st.one_of(
        st.builds(L.NameLoc, _text(), inner.filter(lambda x: x is not L.UNKNOWN)),
        st.builds(L.CallSiteLoc, inner, inner), fused(inner)), max_leaves=max_leaves)
