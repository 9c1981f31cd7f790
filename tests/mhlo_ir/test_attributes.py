"""Attributes render as MLIR prints them: checked by attaching each to an op and asking MLIR
to re-print the module (tests/oracle.py), and by jaxlib accepting the text."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir.mhlo_attributes import ENUM_VALUES
from tests.oracle import assert_fixed_point, parse

T = hlo.tensor((2,), hlo.f32)


def module_with_attrs(attrs: dict) -> hlo.Module:
    m = hlo.Module("attrs")
    f = m.add_function("main", [T])
    b = f.builder()
    y = b.custom_call("target", [f.arguments[0]], [T])
    for k, v in attrs.items():
        y.owner.set_attr(k, v)
    b.return_(y)
    return m


STRUCTURED = [
    hlo.DotDimensionNumbers(),
    hlo.DotDimensionNumbers([0], [0], [2], [1]),
    hlo.DotDimensionNumbers(lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]),
    hlo.GatherDimensionNumbers([1], [0], [0], 1),
    hlo.GatherDimensionNumbers(offset_dims=[], collapsed_slice_dims=[], start_index_map=[0],
                               index_vector_dim=1),
    hlo.GatherDimensionNumbers([2], [1], [1], 2, operand_batching_dims=[0],
                               start_indices_batching_dims=[0]),
    hlo.GatherDimensionNumbers(index_vector_dim=0),
    hlo.ScatterDimensionNumbers([1], [0], [0], 1),
    hlo.ScatterDimensionNumbers([], [0], [0], 1, input_batching_dims=[1],
                                scatter_indices_batching_dims=[0]),
    hlo.ConvDimensionNumbers(0, 3, [1, 2], 2, 3, [0, 1], 0, 3, [1, 2]),
    hlo.ConvDimensionNumbers(1, 0, [2], 0, 1, [2], 1, 0, [2]),
    hlo.ChannelHandle(1, 1),
    hlo.ChannelHandle(7),
    hlo.OutputOperandAlias([], 0, []),
    hlo.OutputOperandAlias([1, 2], 3, [0]),
]


@pytest.mark.parametrize("attr", STRUCTURED, ids=lambda a: type(a).__name__)
def test_structured_attributes_are_a_fixed_point_of_mlir(attr):
    assert_fixed_point(module_with_attrs({"x": attr}))


def test_every_enum_value_round_trips():
    attrs = {f"e{i}_{j}": hlo.EnumAttr(kind, v)
             for i, (kind, values) in enumerate(sorted(ENUM_VALUES.items()))
             for j, v in enumerate(values)}
    assert_fixed_point(module_with_attrs(attrs))


def test_builtin_attributes_fixed_point():
    attrs = {
        "i": hlo.IntegerAttr(-5, hlo.i32), "u": hlo.IntegerAttr(255, hlo.ui8),
        "i64max": hlo.i64_attr(2**63 - 1), "b": True, "f": hlo.FloatAttr(0.1, hlo.f32),
        "fd": hlo.FloatAttr(float("inf"), hlo.f64), "fh": hlo.FloatAttr(-0.0, hlo.f16),
        "s": "text with \"quotes\"\n", "unit": hlo.UnitAttr(),
        "arr": [1, "a", [True], 2.5, hlo.FloatAttr(1.0, hlo.f32), hlo.i32_attr(3)],
        "dict": {"z": 1, "a": "x", "weird key": hlo.UnitAttr()},
        "sym": hlo.SymbolRefAttr("main"), "qsym": hlo.SymbolRefAttr("has space"),
        "type": hlo.TypeAttr(hlo.tensor((3, 0), hlo.bf16)),
        "tok": hlo.TypeAttr(hlo.token()),
        "tup": hlo.TypeAttr(hlo.tuple_type([T, hlo.token()])),
        "fn": hlo.TypeAttr(hlo.function_type([T], [T, T])),
        "fn1": hlo.TypeAttr(hlo.function_type([], [T])),
        "darr": hlo.DenseArrayAttr([1, 2, 3]), "darr0": hlo.DenseArrayAttr([]),
        "darrb": hlo.DenseArrayAttr([True, False], hlo.i1),
        "darrf": hlo.DenseArrayAttr([1.5, -2.0], hlo.f32),
        "dense": hlo.dense(np.arange(6, dtype=np.int32).reshape(2, 3)),
        "e": hlo.dense(np.zeros((0,), np.float32)),
    }
    assert_fixed_point(module_with_attrs(attrs))


def test_dictionary_attr_is_sorted_and_indexable():
    d = hlo.DictionaryAttr({"b": 1, "a": 2})
    assert [k for k, _ in d.items] == ["a", "b"]
    assert d["b"] == hlo.IntegerAttr(1, hlo.i64)
    with pytest.raises(KeyError):
        d["c"]


def test_integer_attr_range_is_checked():
    with pytest.raises(ValueError, match="does not fit in ui8"):
        hlo.IntegerAttr(256, hlo.ui8)
    with pytest.raises(ValueError, match="does not fit in i8"):
        hlo.IntegerAttr(-129, hlo.i8)
    with pytest.raises(TypeError, match="expected an integer"):
        hlo.IntegerAttr(1.5, hlo.i32)


def test_bad_enum_and_conv_dims():
    with pytest.raises(ValueError, match="comparison_direction: 'BAD' is not one of EQ"):
        hlo.comparison_direction("bad")
    with pytest.raises(ValueError, match="input dimensions .* are not a permutation"):
        hlo.ConvDimensionNumbers(0, 0, [1], 0, 1, [2], 0, 1, [2])


def test_attributes_are_values():
    assert (hlo.DotDimensionNumbers([0], [0], [1], [1])
            == hlo.DotDimensionNumbers([0], [0], [1], [1]))
    assert hash(hlo.ChannelHandle(1, 1)) == hash(hlo.ChannelHandle(1, 1))
    assert hlo.comparison_direction("gt") is hlo.comparison_direction("GT")


def test_mlir_reads_back_the_same_values():
    m = module_with_attrs({"x": hlo.IntegerAttr(-7, hlo.i16), "y": "a\\b\"c"})
    mod = parse(m.to_text())
    op = mod.body.operations[0].regions[0].blocks[0].operations[0]
    from jaxlib.mlir import ir
    assert ir.IntegerAttr(op.attributes["x"]).value == -7
    assert ir.StringAttr(op.attributes["y"]).value == "a\\b\"c"
