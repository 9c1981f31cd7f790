"""Types parse what they render, in both dialects; MLIR reads our type text and prints it back
unchanged, and its own spellings (spaces in shapes, ``0x`` dimensions) read as the same type."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mhlo_ir as hlo
from mhlo_ir import strategies as hst
from mhlo_ir.attributes import parse_attribute
from mhlo_ir.dialect import MHLO, STABLEHLO
from mhlo_ir.syntax import ParseError
from mhlo_ir.types import parse_type
from tests.mhlo_ir.parse_support import mlir_dictionary


@given(hst.types(), st.sampled_from([MHLO, STABLEHLO]))
def test_parse_inverts_render(t, dialect):
    got = parse_type(t.render(dialect), dialect)
    assert got == t and hash(got) == hash(t)
    if isinstance(t, hlo.TensorType):
        assert got is t          # tensor types are interned


@given(st.lists(hst.types(max_leaves=4), min_size=1, max_size=6))
def test_mlir_reprints_our_types(ts):
    texts = {f"a.x{i}": t.render(MHLO) for i, t in enumerate(ts)}
    theirs = mlir_dictionary(texts)
    assert theirs == "{" + ", ".join(f"{k} = {v}" for k, v in sorted(texts.items())) + "}"
    got = parse_attribute(theirs)
    assert [got[f"a.x{i}"].type for i in range(len(ts))] == ts


@pytest.mark.parametrize("text, want", [
    ("tensor< 2 x 3 x f32 >", hlo.tensor((2, 3), hlo.f32)),
    ("tensor<0x3xf32>", hlo.tensor((0, 3), hlo.f32)),
    ("tensor<0xf32>", hlo.tensor((0,), hlo.f32)),
    ("tensor<0x0xi1>", hlo.tensor((0, 0), hlo.i1)),
    ("tensor<4xcomplex<f64>>", hlo.tensor((4,), hlo.complex128)),
    ("tensor<9223372036854775807xi1>", hlo.tensor((2**63 - 1,), hlo.i1)),
    ("() -> ()", hlo.function_type([], [])),
    ("(i32) -> (i32)", hlo.function_type([hlo.i32], [hlo.i32])),
    ("() -> ((i32) -> i32)", hlo.function_type([], [hlo.function_type([hlo.i32],
                                                                     [hlo.i32])])),
    ("tuple<>", hlo.tuple_type([])),
    ("tuple<tuple<!mhlo.token>, f8E4M3FN>", hlo.tuple_type([hlo.tuple_type([hlo.token()]),
                                                            hlo.f8E4M3FN])),
    ("// a comment\n  ui4  ", hlo.ui4),
])
def test_spellings(text, want):
    assert parse_type(text) == want
    assert mlir_dictionary({"a.x": text}) == "{a.x = " + want.render(MHLO) + "}"


@pytest.mark.parametrize("text, column, message", [
    ("tensor<?xf32>", 8, "dynamic dimensions"),
    ("tensor<*xf32>", 8, "unranked tensor types are not supported"),
    ("tensor<2x3>", 10, "expected 'x' in dimension list, found '3'"),
    ("tensor<2xf32, #enc>", 13, "tensor encodings are not supported"),
    ("tensor<2xf32", 13, "expected '>', found end of input"),
    ("tensor<2xcomplex<i32>>", 18, "expected f32 or f64"),
    ("tensor<9223372036854775808xf32>", 1, "too large"),
    ("complex64", 1, "expected an element type"),
    ("!chlo.token", 1, "expected !mhlo.token"),
    ("(i32) -> (i32) -> i32", 16, "expected end of input, found '->'"),
    ("(i32 -> i32", 6, "expected ',' or ')', found '->'"),
    ("tuple<i32", 10, "expected ',' or '>'"),
    ("", 1, "expected a type, found end of input"),
])
def test_errors(text, column, message):
    with pytest.raises(ParseError) as e:
        parse_type(text)
    assert message in e.value.message and e.value.column == column, str(e.value)


def test_token_is_spelled_by_the_dialect_and_read_in_either_spelling():
    # One token type, printed in the output dialect's spelling; both spellings read, since
    # jaxlib's conversion from HLO writes mhlo ops of !stablehlo.token values (which MLIR's
    # verifier, the oracle here, accepts).
    for text in ("!stablehlo.token", "!mhlo.token"):
        for dialect in (STABLEHLO, hlo.MHLO):
            assert parse_type(text, dialect) is hlo.token()
    assert hlo.token().render(STABLEHLO) == "!stablehlo.token"
    assert hlo.token().render(hlo.MHLO) == "!mhlo.token"
    with pytest.raises(ParseError, match="expected !stablehlo.token"):
        parse_type("!chlo.token", STABLEHLO)
    import verify
    text = """module {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.create_token : !stablehlo.token
    %1 = mhlo.add_dependency %arg0, %0 : (tensor<2xf32>, !stablehlo.token) -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
}"""
    verify.check(text)  # jaxlib reads the mixed text
    m = hlo.parse(text)
    assert "!stablehlo.token" not in m.to_text() and "!mhlo.token" in m.to_text()
    verify.check(m)


def test_types_read_before_are_reused_and_errors_still_point_at_their_column():
    # The second spelling of a type is looked up whole (mhlo_ir.types._READ); what follows
    # it is read token by token as before, so an error there names its own column.
    t = hlo.tensor((2, 3), hlo.f32)
    assert parse_type("tensor<2x3xf32>") is t
    ft = parse_type("(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>")
    assert ft == hlo.function_type([t, t], [t])
    for text, column, message in [
            ("(tensor<2x3xf32>, tensor<2x3xf32> -> i1", 35, "expected ',' or ')'"),
            ("(tensor<2x3xf32>) -> tensor<2x3xf32> tensor", 38, "expected end of input"),
            ("tensor<2x3xf32, #enc>", 15, "tensor encodings are not supported")]:
        with pytest.raises(ParseError) as e:
            parse_type(text)
        assert message in e.value.message and e.value.column == column, str(e.value)
