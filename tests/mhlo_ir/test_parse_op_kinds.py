"""The attribute and type kinds the op chapters use parse what they render: ragged_dot's
dimension numbers, CHLO's comparison enums, fusion and domain kinds, async bundles and
custom-call layouts (``dense<..> : tensor<Nxindex>``), and the structured attributes refuse
non-integers in their integer fields, naming the field (``int()`` truncated 1.5 to 1).

Oracle: MLIR (jaxlib's bindings) parses each rendered text and prints it back; that print is
our text, and it parses to the very same value.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mhlo_ir as hlo
from mhlo_ir import mhlo_attributes as ma
from mhlo_ir.attributes import ArrayAttr, TypeAttr, parse_attribute
from mhlo_ir.dialect import MHLO
from mhlo_ir.ops.custom_call import IndexLayout
from mhlo_ir.syntax import ParseError
from mhlo_ir.types import AsyncBundleType, parse_type
from tests.mhlo_ir.parse_support import mlir_dictionary
from tests.oracle import assert_fixed_point

_ints = st.lists(st.integers(0, 7), max_size=3)
_dot = st.builds(ma.DotDimensionNumbers, _ints, _ints, _ints, _ints)
_tensors = st.builds(hlo.tensor, st.lists(st.integers(0, 4), max_size=2),
                     st.sampled_from([hlo.f32, hlo.i32, hlo.bf16, hlo.i1]))
_types = st.one_of(_tensors, st.just(hlo.token()),
                   st.lists(_tensors, max_size=2).map(hlo.TupleType))

KINDS = st.one_of(
    st.builds(ma.RaggedDotDimensionNumbers, _dot, _ints, _ints),
    st.sampled_from(["comparison_direction", "comparison_type"]).flatmap(
        lambda k: st.sampled_from(ma.ENUM_VALUES[k]).map(lambda v: ma.ChloEnumAttr(k, v))),
    st.sampled_from(sorted(ma.MISC_ENUM_VALUES)).flatmap(
        lambda k: st.sampled_from(ma.MISC_ENUM_VALUES[k]).map(lambda v: ma.MiscEnumAttr(k, v))),
    st.lists(_types, min_size=1, max_size=4).map(lambda ts: TypeAttr(AsyncBundleType(ts))),
    st.integers(0, 4).flatmap(lambda n: st.permutations(range(n))).map(IndexLayout),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(KINDS, min_size=1, max_size=6))
def test_op_kinds_parse_what_they_render_and_mlir_agrees(xs):
    for x in xs:
        got = parse_attribute(x.render(MHLO))
        assert got == x and hash(got) == hash(x) and type(got) is type(x)
    ours = hlo.DictionaryAttr({f"a.x{i}": x for i, x in enumerate(xs)})
    theirs = mlir_dictionary({f"a.x{i}": x.render(MHLO) for i, x in enumerate(xs)})
    assert ours.render(MHLO) == theirs
    assert parse_attribute(theirs) == ours


def test_async_bundle_type_parses():
    t = AsyncBundleType((hlo.TupleType([hlo.tensor((2,), hlo.f32)]), hlo.tensor((2,), hlo.f32),
                         hlo.tensor((), hlo.i32)))
    text = "!mhlo.async_bundle<tuple<tensor<2xf32>>, tensor<2xf32>, tensor<i32>>"
    assert t.render(MHLO) == text and parse_type(text) == t
    assert mlir_dictionary({"a.x": text}) == "{a.x = " + text + "}"


def test_layouts_read_by_the_dense_reader():
    """custom_call's layouts print as dense index tensors; the attribute reader gives them
    back as IndexLayout (it reported "index" as an unknown element type)."""
    text = "[dense<[1, 0]> : tensor<2xindex>, dense<> : tensor<0xindex>]"
    assert parse_attribute(text) == ArrayAttr([IndexLayout((1, 0)), IndexLayout(())])
    assert parse_attribute("dense<[2, 3]> : tensor<2xi64>").__class__ is hlo.DenseElementsAttr


def test_any_index_dense_attribute_reads_as_mlir_reads_it():
    """Outside custom_call's layouts an index tensor holds any integers (a discardable
    attribute): read, and printed as MLIR prints it (splats as one element); it was refused
    as "not a permutation". A layout that is none is refused by custom_call's check."""
    assert parse_attribute("dense<[1, 1]> : tensor<2xindex>") == IndexLayout((1, 1))
    text = ('module attributes {x.a = dense<[5, 7]> : tensor<2xindex>, x.b = dense<1> : '
            'tensor<3xindex>} {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
            '    %0 = mhlo.add %a, %a {x.c = dense<3> : tensor<1xindex>} : tensor<2xf32>\n'
            '    return %0 : tensor<2xf32>\n  }\n}')
    assert_fixed_point(hlo.parse(text))
    bad = ('func.func @main(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {\n  %0 = mhlo.custom_call '
           '@f(%a) {operand_layouts = [dense<[1, 1]> : tensor<2xindex>], result_layouts = '
           '[dense<[1, 0]> : tensor<2xindex>]} : (tensor<2x3xf32>) -> tensor<2x3xf32>\n'
           '  return %0 : tensor<2x3xf32>\n}')
    with pytest.raises(ParseError, match=r"operand_layouts\[0\]: layout \[1, 1\] is not a "
                                         "permutation"):
        hlo.parse(bad)


def test_chlo_and_misc_enums_refuse_unknown_values():
    for text, match in (("#chlo<comparison_direction XX>", "is not one of EQ"),
                        ("#chlo<direction GT>", "unknown chlo enum kind"),
                        ("#mhlo<fusion_kind kFoo>", "is not one of kLoop"),
                        ("#mhlo.ragged_dot<lhs_ragged_dimensions = [0]>",
                         "missing dot_dimension_numbers")):
        with pytest.raises(ParseError, match=match):
            parse_attribute(text)


# -- integer fields take integers -----------------------------------------------------------

_DOT = ma.DotDimensionNumbers((), (), (1,), (1,))
_CONV = dict(input_batch_dimension=0, input_feature_dimension=1, input_spatial_dimensions=(2,),
             kernel_input_feature_dimension=0, kernel_output_feature_dimension=1,
             kernel_spatial_dimensions=(2,), output_batch_dimension=0,
             output_feature_dimension=1, output_spatial_dimensions=(2,))

BAD = [
    (lambda v: ma.ChannelHandle(v, 1), "ChannelHandle handle"),
    (lambda v: ma.ChannelHandle(1, v), "ChannelHandle type"),
    (lambda v: ma.RaggedDotDimensionNumbers(_DOT, [v]),
     "RaggedDotDimensionNumbers lhs_ragged_dimensions"),
    (lambda v: ma.RaggedDotDimensionNumbers(_DOT, [0], [v]),
     "RaggedDotDimensionNumbers rhs_group_dimensions"),
    (lambda v: ma.DotDimensionNumbers([v]), "DotDimensionNumbers lhs_batching_dimensions"),
    (lambda v: ma.DotDimensionNumbers(rhs_contracting_dimensions=[0, v]),
     "DotDimensionNumbers rhs_contracting_dimensions"),
    (lambda v: ma.GatherDimensionNumbers(index_vector_dim=v),
     "GatherDimensionNumbers index_vector_dim"),
    (lambda v: ma.GatherDimensionNumbers(start_index_map=[v]),
     "GatherDimensionNumbers start_index_map"),
    (lambda v: ma.ScatterDimensionNumbers(index_vector_dim=v),
     "ScatterDimensionNumbers index_vector_dim"),
    (lambda v: ma.ScatterDimensionNumbers(input_batching_dims=[v]),
     "ScatterDimensionNumbers input_batching_dims"),
    (lambda v: ma.ConvDimensionNumbers(**{**_CONV, "input_batch_dimension": v}),
     "ConvDimensionNumbers input_batch_dimension"),
    (lambda v: ma.ConvDimensionNumbers(**{**_CONV, "kernel_spatial_dimensions": [v]}),
     "ConvDimensionNumbers kernel_spatial_dimensions"),
    (lambda v: ma.OutputOperandAlias((), v, ()), "OutputOperandAlias operand_index"),
    (lambda v: ma.OutputOperandAlias([v], 0, ()), "OutputOperandAlias output_tuple_indices"),
]


@pytest.mark.parametrize("make, field", BAD, ids=[f for _, f in BAD])
@pytest.mark.parametrize("value", [1.5, 1.0, True, np.float32(0.0), np.bool_(False), "1", None],
                         ids=repr)
def test_integer_fields_refuse_non_integers(make, field, value):
    with pytest.raises(TypeError, match=f"^{field}: .*(integer|integers), got"):
        make(value)


def test_integer_fields_take_numpy_integers_and_lists():
    assert ma.ChannelHandle(np.int64(3), np.int32(1)) == ma.ChannelHandle(3, 1)
    r = ma.RaggedDotDimensionNumbers(_DOT, np.array([0]), range(0, 1))
    assert r.lhs_ragged_dimensions == (0,) and type(r.lhs_ragged_dimensions[0]) is int
    assert r == parse_attribute(r.render(MHLO))
    with pytest.raises(TypeError, match="lhs_batching_dimensions: expected a list of integers"):
        ma.DotDimensionNumbers(3)
    with pytest.raises(TypeError, match="dot_dimension_numbers: expected DotDimensionNumbers"):
        ma.RaggedDotDimensionNumbers({"lhs_contracting_dimensions": [1]}, [0])


# Unknown ops' names as the text spells them (escapes, quotes, control and non-ASCII
# characters): MLIR keeps each as written, so a print must escape it again.
_ODD_OP_NAMES = [r'"x\\n.y"', r'"a\22b.y"', r'"\0A.x"', r'"\\.x"', r'"\09tab.x"', '"é.x"',
                 r'"\7F.x"']


@pytest.mark.parametrize("spelled", _ODD_OP_NAMES)
def test_unknown_op_names_print_escaped_as_mlir_reads_them(spelled):
    from verify.bindings import context
    src = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
           f"  %0 = {spelled}(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
           f"  {spelled}(%0) : (tensor<2xf32>) -> ()\n"
           "  return %0 : tensor<2xf32>\n}\n")
    ir, ctx = context(unregistered=True)
    with ctx, ir.Location.unknown():
        want = ir.Module.parse(src).operation.get_asm(print_generic_op_form=True)
        m = hlo.parse(src)
        for pretty in (False, True):
            ours = m.to_text(locations=False, pretty=pretty)
            assert ir.Module.parse(ours).operation.get_asm(print_generic_op_form=True) == want
        assert m.to_text(locations=False) == want


@pytest.mark.parametrize("spelled, message", [('""', "empty operation name"),
                                              (r'"\00.x"', "null character")])
def test_op_names_mlir_refuses_are_refused(spelled, message):
    src = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
           f"  %0 = {spelled}(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
           "  return %0 : tensor<2xf32>\n}\n")
    with pytest.raises(ParseError, match=message):
        hlo.parse(src)


def test_func_call_properties_read_and_print_as_mlir_does():
    """func.call's no_inline, arg_attrs and res_attrs are properties (``<{callee = @f,
    no_inline}>``): MLIR's generic print of ``call @f(%a) {no_inline}`` was refused ("has no
    property"), and our print put the flag among the discardable attributes."""
    from tests import oracle
    f = ('func.func private @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : '
         'tensor<2xf32>\n}\n')
    for call in ('call @f(%a) {no_inline} : (tensor<2xf32>) -> tensor<2xf32>',
                 '"func.call"(%a) <{arg_attrs = [{x.y}], callee = @f, res_attrs = [{}]}> : '
                 '(tensor<2xf32>) -> tensor<2xf32>'):
        text = (f + 'func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = ' + call +
                '\n  return %0 : tensor<2xf32>\n}\n')
        generic = oracle.mlir_generic(text)
        m = hlo.parse(generic)
        assert m.to_text(locations=False) == generic
        assert hlo.parse(text).to_text(locations=False) == generic
        ir, ctx = oracle._context()
        with ctx, ir.Location.unknown():
            assert m.to_text(locations=False, pretty=True) == \
                ir.Module.parse(generic).operation.get_asm()
