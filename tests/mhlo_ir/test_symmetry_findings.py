"""What an adversarial comparison of our printer and parser with jaxlib's MLIR found (generated
programs in every form and dialect, hand-made edge cases): each test holds our text to what
jaxlib's bindings print and read (tests/oracle.py)."""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
from tests.oracle import mlir_generic, parse as mlir_parse

NO_INLINE = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> attributes {no_inline} {\n"
             "  return %a : tensor<2xf32>\n}\n")


def test_no_inline_is_a_property_of_func_in_generic_form_and_reads_back_from_mlir():
    """func.func's ``no_inline`` is one of its properties: MLIR's generic print writes it
    among them (ours wrote it after the body), and our parser reads MLIR's print (it refused
    the property)."""
    m = hlo.parse(NO_INLINE)
    assert "no_inline" in m.lookup("main").attributes
    ours = m.to_text(locations=False)
    theirs = mlir_generic(NO_INLINE)
    assert ours == theirs
    assert '<{function_type = (tensor<2xf32>) -> tensor<2xf32>, no_inline, sym_name = "main"}>' \
        in ours
    back = hlo.parse(theirs)
    assert back.to_text(locations=False) == theirs
    assert back.to_text(pretty=True, locations=False) == m.to_text(pretty=True, locations=False)
    assert "attributes {no_inline}" in back.to_text(pretty=True, locations=False)
    mlir_parse(m.to_text())  # with its locations too


def test_a_function_with_other_attributes_keeps_them_after_the_body():
    text = NO_INLINE.replace("{no_inline}", '{no_inline, "my.tag" = 3 : i32}')
    ours = hlo.parse(text).to_text(locations=False)
    assert ours == mlir_generic(text)
    assert '}) {my.tag = 3 : i32} : () -> ()' in ours


@pytest.mark.parametrize("op, attribute, spelled", [
    ("mhlo.broadcast_in_dim", "broadcast_dimensions", "array<i64: 0>"),
    ("stablehlo.broadcast_in_dim", "broadcast_dimensions", "dense<0> : tensor<1xi64>"),
    ("mhlo.transpose", "permutation", "array<i64: 0>"),
    ("stablehlo.transpose", "permutation", "dense<0> : tensor<1xi64>"),
])
def test_an_index_array_in_the_other_dialects_spelling_is_refused_in_generic_form(
        op, attribute, spelled):
    """mhlo ops take ``dense<...> : tensor<Nxi64>`` index arrays, stablehlo ops
    ``array<i64: ...>``; jaxlib refuses the other spelling, and so does our parser now (its
    converter took both)."""
    text = (f'func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {{\n'
            f'  %0 = "{op}"(%a) {{{attribute} = {spelled}}} : (tensor<2xf32>) -> tensor<2xf32>\n'
            f'  return %0 : tensor<2xf32>\n}}\n')
    with pytest.raises(Exception) as jaxlib:
        mlir_parse(text)
    assert "attribute" in str(jaxlib.value)
    with pytest.raises(hlo.ParseError, match=rf"{attribute}.*{op.split('.')[0]}"):
        hlo.parse(text)


def test_result_zero_of_a_one_result_value_reads_as_the_value():
    """``%0#0`` of a one-result op is ``%0`` to MLIR, and to our parser now; ``%0#1`` is no
    value."""
    text = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            '  %0 = "mhlo.negate"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n'
            '  %1 = "mhlo.add"(%0#0, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n'
            "  return %1#0 : tensor<2xf32>\n}\n")
    assert hlo.parse(text).to_text(locations=False) == mlir_generic(text)
    with pytest.raises(hlo.ParseError, match=r"3:19: use of undefined value %0#1"):
        hlo.parse(text.replace("%0#0", "%0#1"))


@pytest.mark.parametrize("signature, which", [("(%a: f32) -> tensor<f32>", "argument 0"),
                                              ("(%a: tensor<f32>) -> f32", "result 0")])
def test_an_element_type_for_a_functions_value_says_what_to_write(signature, which):
    text = f"func.func @main{signature} {{\n  return %a : tensor<f32>\n}}\n"
    with pytest.raises(hlo.ParseError, match=rf"{which} type f32 is not a Type \(f32 is an "
                                             r"element type: a scalar is the rank-0 "
                                             r"tensor<f32>"):
        hlo.parse(text)


def test_a_modules_visibility_is_refused_saying_it_is_not_kept():
    with pytest.raises(hlo.ParseError, match=r"'sym_visibility' is reserved.*a Module keeps "
                                             r"none.*leave it out"):
        hlo.parse('module attributes {sym_visibility = "private"} {\n}\n')


def test_a_call_chain_as_deep_as_a_recursion_prints_and_reads_back():
    """A callsite chain of 3,000 links (a deep recursion's traceback) renders and parses in
    loops (it overflowed Python's stack both ways), and MLIR reads our text."""
    loc = hlo.NameLoc("f", hlo.FileLineColLoc("a.py", 1, 0))
    for i in range(3000):
        loc = hlo.CallSiteLoc(hlo.NameLoc(f"g{i}", hlo.FileLineColLoc("a.py", i + 2, 0)), loc)
    m = hlo.Module("deep")
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    with b.at_location(loc):
        y = b.negate(f.arguments[0])
    b.return_(y)
    text = m.to_text()
    assert text.count("callsite(") == 3000
    assert hlo.parse(text).to_text() == text
    aliased = m.to_text(locations="alias")
    assert hlo.parse(aliased).to_text(locations="alias") == aliased
    mlir_parse(text)


def test_chlo_ops_take_array_spelled_dimensions_only():
    """chlo's broadcast_dimensions is an ``array<i64: ...>`` to jaxlib in either text's
    dialect; ``dense<...>`` is refused there, and by our parser."""
    text = ('func.func @main(%a: tensor<2xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {\n'
            '  %0 = "chlo.broadcast_add"(%a, %b) {broadcast_dimensions = DIMS} : '
            '(tensor<2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>\n'
            '  return %0 : tensor<3x2xf32>\n}\n')
    good = text.replace("DIMS", "array<i64: 1>")
    assert hlo.parse(good).to_text(locations=False) == mlir_generic(good)
    bad = text.replace("DIMS", "dense<1> : tensor<1xi64>")
    with pytest.raises(Exception):
        mlir_parse(bad)
    with pytest.raises(hlo.ParseError, match=r"broadcast_dimensions: it is an array<\.\.\.> "
                                             r"attribute \(jaxlib refuses dense"):
        hlo.parse(bad)
