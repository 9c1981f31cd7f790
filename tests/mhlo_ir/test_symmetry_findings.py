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
