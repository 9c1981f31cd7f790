"""Types, attributes and locations of every kind: what the printer writes and the parser
reads back (the round-trip tests draw from these)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from .. import dtypes
from ..types import tensor
from .values import arrays, element_types, float_values, shapes, tensor_types

__all__ = ["types", "integer_attrs", "float_attrs", "dense_array_attrs", "dense_elements_attrs",
           "mhlo_attributes", "attributes", "locations"]


def types(max_leaves: int = 6):
    """Types of every kind: element types, tensor types (with large dimensions too), the
    token type, and tuple and function types nesting them."""
    from ..types import TOKEN, FunctionType, TupleType
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
    from ..attributes import IntegerAttr
    return element_types(("sint", "uint")).flatmap(
        lambda et: st.integers(*_int_range(et)).map(lambda v: IntegerAttr(v, et)))


def float_attrs():
    """FloatAttr of every float type, with any bit pattern of that type."""
    from ..attributes import FloatAttr
    return element_types(("float",)).flatmap(
        lambda et: float_values(et).map(lambda v: FloatAttr(v, et)))


def dense_array_attrs():
    """DenseArrayAttr (``array<T: ...>``) of each element type MLIR allows: i1 and integers
    and floats of 8 bits or more."""
    from ..attributes import DenseArrayAttr

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
    from ..dense import DenseElementsAttr

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
    from .. import mhlo_attributes as ma
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
    from .. import attributes as a
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
    from .. import location as L
    u32 = st.integers(0, 2 ** 32 - 1)
    small = st.integers(0, 2 ** 31)
    def a_range(f, line, col, more, end):
        end_line = None if more is None else line + more
        if not f and end == col and end_line in (None, line):
            f = "-"  # a point: MLIR reads an empty file name there as "-" (a range keeps it)
        return L.FileLineColLoc(f, line, col, end_line, end)

    ranges = st.builds(a_range, _text(1) | st.just(""), small, small,
                       st.none() | st.integers(0, 3), small)
    leaves = st.one_of(st.just(L.UNKNOWN), st.builds(L.FileLineColLoc, _text(1), u32, u32),
                       ranges, _text().map(L.NameLoc))
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
