"""Locations parse what they render, inline and through ``#loc`` aliases; MLIR's own print of
a location (always through aliases, nested ones included) reads back as the same location."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mhlo_ir as hlo
from mhlo_ir import strategies as hst
from mhlo_ir.location import parse_location, parse_location_aliases, read_location_text
from mhlo_ir.syntax import ParseError
from tests.mhlo_ir.parse_support import mlir_locations

F = hlo.FileLineColLoc


@given(hst.locations())
def test_parse_inverts_render(x):
    text = x.render()
    assert parse_location(text) == x
    assert parse_location(f"loc({text})") == x


@given(st.lists(hst.locations(mlir_canonical=True), min_size=1, max_size=5))
def test_mlir_reads_ours_and_we_read_mlirs(xs):
    assert mlir_locations([x.render() for x in xs]) == xs


def test_empty_file_names_read_as_mlir_reads_them():
    # MLIR reads an empty file name in a point as "-" (the name of the text read) and keeps
    # it in a range; we read both as it does (FileLineColLoc refuses to build the first).
    texts = ['"":2:11', '"":2:11 to :21', '"":2:11 to 3:4', '"n"("":1:2 to :3)']
    want = [F("-", 2, 11), F("", 2, 11, None, 21), F("", 2, 11, 3, 4),
            hlo.NameLoc("n", F("", 1, 2, None, 3))]
    assert [parse_location(t) for t in texts] == want
    assert mlir_locations(texts) == want


@given(st.lists(hst.locations(), min_size=1, max_size=4))
def test_our_alias_trailer_reads_back(xs):
    m = hlo.Module("m")
    t = hlo.tensor((), hlo.f32)
    f = m.add_function("main", [t])
    b = f.builder()
    v = f.arguments[0]
    for x in xs:
        v = b.negate(v, location=x)
    b.return_(v)
    text = m.to_text(locations="alias")
    aliases = parse_location_aliases(text)
    lines = [line for line in text.splitlines() if "mhlo.negate" in line]
    # The printer leaves unknown locations out; everything else comes back as attached.
    got = [parse_location("loc(" + line.rsplit(" loc(", 1)[1], aliases) if " loc(" in line
           else hlo.UNKNOWN for line in lines]
    assert got == xs


def test_ranges_as_jax_writes_them():
    assert parse_location('"m.py":3:11 to :21') == F("m.py", 3, 11, None, 21)
    assert parse_location('"m.py":3:11 to 4:2').render() == '"m.py":3:11 to 4:2'
    assert F("m.py", 3, 11, 3, 21).render() == '"m.py":3:11 to :21'
    assert mlir_locations(['"m.py":3:11 to :21', '"m.py":3:11 to 4:2', '"m.py":3:7 to :7']) \
        == [F("m.py", 3, 11, None, 21), F("m.py", 3, 11, 4, 2), F("m.py", 3, 7, 3, 7)]
    assert F("m.py", 3, 7, None, 7).render() == '"m.py":3:7'  # an empty range, as MLIR


def test_mlir_spellings():
    assert parse_location('"a.py":7') == F("a.py", 7, 0)           # MLIR reads line alone
    assert parse_location('"n"(unknown)') == hlo.NameLoc("n")      # and prints it as "n"
    assert parse_location('loc(  fused < "m" > [ "a" , unknown ] )') == hlo.FusedLoc(
        [hlo.NameLoc("a"), hlo.UNKNOWN], metadata="m")
    got = mlir_locations(['fused["a", unknown, "a"]', 'fused<"m">[]', '"a.py":7'])
    assert got == [hlo.NameLoc("a"), hlo.FusedLoc([hlo.UNKNOWN], "m"), F("a.py", 7, 0)]


def test_aliases_resolve_in_order_and_nest():
    text = ('#loc = loc("a")\n#loc1 = loc("b.py":1:2)\n#loc2 = loc(callsite(#loc at #loc1))\n'
            '#loc3 = loc(fused<"m">[#loc2, #loc])\n')
    aliases = parse_location_aliases(text)
    assert aliases["#loc3"] == hlo.FusedLoc(
        [hlo.CallSiteLoc(hlo.NameLoc("a"), F("b.py", 1, 2)), hlo.NameLoc("a")], "m")
    assert parse_location("loc(#loc2)", aliases) is aliases["#loc2"]


@pytest.mark.parametrize("text, column, message", [
    ('"a.py":1:2 to', 14, "expected an end line"),
    ('"a.py":1:2 to 3', 16, "expected ':'"),
    ('"a.py":1 to :3', 10, "found 'to'"),  # (MLIR reads no range without a start column)
    ('"a.py":-1:2', 1, "line must be an integer in [0, 2**32)"),
    ('"a.py":1:4294967296', 1, "column must be an integer"),
    ("fused<1 : i32>[]", 7, "only string metadata"),
    ("callsite(unknown)", 17, "expected 'at'"),
    ("loc(#loc9)", 5, "undefined location alias #loc9"),
    ("loc(unknown", 12, "expected ')'"),
    ("elsewhere", 1, "expected a location"),
])
def test_errors(text, column, message):
    with pytest.raises(ParseError) as e:
        parse_location(text)
    assert message in e.value.message and e.value.column == column, str(e.value)


# -- locations read in one pass (location.read_location_text) ------------------------------------

@given(hst.locations())
def test_a_printed_location_reads_in_one_pass_as_by_tokens(x):
    text = x.render()
    fast = read_location_text(text)
    if "\\" not in text and "fused" not in text:  # (escapes and fused ones: by tokens)
        assert fast == x == parse_location(text), text
    else:
        assert fast is None or fast == x


_EDITS = [" ", ":", "(", ")", '"', "0", "9", "-", "at", " to ", "x", "callsite(", "unknown",
          "\\", "#loc1", ","]


@given(hst.locations(), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 3),
                                          st.sampled_from(_EDITS)), max_size=3))
def test_an_edited_location_reads_in_one_pass_as_by_tokens_or_goes_their_way(x, edits):
    # Near misses of printed locations (a character dropped or put in): the one-pass reader
    # reads what the token reader reads, or leaves the text to it (None), never another
    # location or an error of its own.
    text = x.render()
    for at, cut, put in edits:
        at %= len(text) + 1
        text = text[:at] + put + text[at + cut:]
    fast = read_location_text(text)
    try:
        slow = parse_location(text)
    except (ParseError, ValueError, TypeError):
        assert fast is None, text
    else:
        assert fast is None or fast == slow, text


def test_jax_callsite_chains_read_in_one_pass():
    text = ('"jit(f)/jvp(g)/dot_general"(callsite("_block"("/w/bench_lowering.py":55:12 to '
            ':40) at callsite("_transformer"("/w/bench_lowering.py":64:12 to 66:3) at '
            '"<lambda>"("":87:33 to :48))))')
    x = read_location_text(text)
    assert x is not None and x == parse_location(text) and x.render() == text
    assert read_location_text(text + " ") is None
    for text in ['"n"(unknown)', '"":3:7', '"":3:7 to :7', '"":3:7 to :9', 'callsite("a" at '
                 'unknown)', '"a"("b"("c":1:2))', '"f":1:2 to 1:2', '"f":1:2 to 4:0']:
        x = read_location_text(text)
        assert x is not None and x == parse_location(text), text
        assert x.render() == parse_location(text).render()
    assert read_location_text('"a"  ("b":1:2)') is None  # (other spacing: by tokens)


def test_callers_that_differ_only_at_their_end_are_told_apart():
    callers: dict = {}
    for end in ("2", "3", "2 to :9", "2 to 11:1", "2"):
        text = (f'"op"(callsite("a"("long_file_name.py":4:5) at callsite("b"('
                f'"long_file_name.py":7:1) at "c"("long_file_name.py":10:{end}))))')
        assert read_location_text(text, callers) == parse_location(text), text


@given(st.lists(hst.locations(), min_size=1, max_size=4), hst.locations(),
       st.lists(st.integers(0, 3), min_size=1, max_size=8))
def test_callers_remembered_across_texts_read_as_by_tokens(callees, caller, picks):
    # Texts sharing their outer frames (one caller chain under several callees, nested
    # again), read with one table of callers: each location as the token reader reads it.
    callers: dict = {}
    outer = hlo.CallSiteLoc(hlo.NameLoc("outer"), caller)
    for k in picks:
        callee = callees[k % len(callees)]
        for x in (hlo.CallSiteLoc(callee, caller), hlo.NameLoc("n", hlo.CallSiteLoc(callee,
                                                                                   outer))):
            text = x.render()
            fast = read_location_text(text, callers)
            assert fast is None or fast == parse_location(text) == x, text
