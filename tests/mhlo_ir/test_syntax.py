"""The lexer: MLIR's token rules, string escapes, dimension lists and error positions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mhlo_ir.syntax import ParseError, TokenStream, decode_string
from mhlo_ir.text import quote


def kinds(text):
    ts = TokenStream(text)
    out = []
    while ts.peek().kind != "eof":
        tok = ts.next()
        out.append((tok.kind, tok.text))
    return out


def test_token_kinds():
    assert kinds('%0 %arg1 %x#1 @main @"a b" #mhlo.dot #loc3 !mhlo.token ^bb0 tensor') == [
        ("%", "%0"), ("%", "%arg1"), ("%", "%x"), ("#", "#1"), ("@", "@main"),
        ("@", '@"a b"'), ("#", "#mhlo.dot"), ("#", "#loc3"), ("!", "!mhlo.token"),
        ("^", "^bb0"), ("bare", "tensor")]


def test_numbers_follow_mlir():
    # A float needs a '.': 1e5 is 1 and e5. 0x needs a hex digit: 0xi32 is 0 and xi32.
    assert kinds("1 1.5 1. 2.5e-3 1.0E+38 1e5 0x7FC00000 0xi32 -3") == [
        ("int", "1"), ("float", "1.5"), ("float", "1."), ("float", "2.5e-3"),
        ("float", "1.0E+38"), ("int", "1"), ("bare", "e5"), ("int", "0x7FC00000"),
        ("int", "0"), ("bare", "xi32"), ("punct", "-"), ("int", "3")]


def test_punctuation_and_comments():
    assert kinds("(a, b) -> [c]{d}<e> = : ... // comment\n?*") == [
        ("punct", "("), ("bare", "a"), ("punct", ","), ("bare", "b"), ("punct", ")"),
        ("punct", "->"), ("punct", "["), ("bare", "c"), ("punct", "]"), ("punct", "{"),
        ("bare", "d"), ("punct", "}"), ("punct", "<"), ("bare", "e"), ("punct", ">"),
        ("punct", "="), ("punct", ":"), ("punct", "..."), ("punct", "?"), ("punct", "*")]


def test_string_escapes():
    ts = TokenStream(r'"a\"b\\c\n\t\41\c3\A9" "é"')
    assert ts.string() == 'a"b\\c\n\tA\u00e9'
    assert ts.string() == "é"  # raw UTF-8 in the text is taken as is


@given(st.text(st.characters(codec="utf-8")))
def test_quote_then_lex_is_identity(s):
    ts = TokenStream(quote(s) + " " + quote(s))
    assert ts.string() == s and ts.string() == s
    ts.expect_end()
    assert decode_string(quote(s)) == s


def test_dimension_lists():
    for text, dims, rest in [("2x3xf32>", (2, 3), "f32"), ("f32>", (), "f32"),
                             ("0x3xf32>", (0, 3), "f32"), ("0xf32>", (0,), "f32"),
                             ("2 x 3 x i1>", (2, 3), "i1"),
                             ("1x0xcomplex<f32>>", (1, 0), "complex")]:
        ts = TokenStream(text)
        assert ts.dimension_list() == dims
        assert ts.next().text == rest


@pytest.mark.parametrize("text, line, column, message", [
    ('"abc', 1, 1, "expected '\"' in string literal"),
    ('"a\nb"', 1, 3, "expected '\"' in string literal"),
    (r'"a\qb"', 1, 3, "unknown escape in string literal"),
    ("ok\n  $", 2, 3, "unexpected character '$'"),
    ("x @ y", 1, 3, "expected a name after '@'"),
])
def test_lex_errors_have_positions(text, line, column, message):
    ts = TokenStream(text)
    with pytest.raises(ParseError) as e:
        while ts.next().kind != "eof":
            pass
    assert (e.value.line, e.value.column, e.value.message) == (line, column, message)
    assert str(e.value).splitlines()[0] == f"{line}:{column}: {message}"


def test_expected_vs_found():
    ts = TokenStream("foo\n  [1, 2 3]")
    ts.expect("foo")
    with pytest.raises(ParseError) as e:
        ts.comma_list(ts.integer, "]", open="[")
    err = e.value
    assert (err.line, err.column, err.expected, err.found) == (2, 9, "',' or ']'", "'3'")
    assert str(err).splitlines()[0] == "2:9: expected ',' or ']', found '3'"
    with pytest.raises(ParseError, match="expected end of input, found 'x'"):
        TokenStream("x").expect_end()
    ts = TokenStream("f(a ")
    for text in ("f", "(", "a"):
        ts.expect(text)
    with pytest.raises(ParseError, match="1:5: expected '[)]', found end of input"):
        ts.expect(")")


def test_bytes_that_are_not_utf8_are_kept_in_a_string():
    from mhlo_ir.text import string_bytes
    value = TokenStream(r'"a\FF\C3\A9"').string()
    assert value == "a\udcffé" and string_bytes(value) == b"a\xff\xc3\xa9"
