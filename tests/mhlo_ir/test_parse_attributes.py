"""Every attribute kind parses what it renders: ``parse(render(x)) == x`` exactly (float bits,
dense bytes), for MHLO and StableHLO spellings.

Oracle: MLIR itself (jaxlib's bindings, tests/oracle.py). It reads our rendered attributes and
prints them back byte for byte (hex case aside), and what it prints (uppercase hex, its own
ordering and elisions) parses to the very same values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mhlo_ir as hlo
from mhlo_ir import attributes as A
from mhlo_ir import strategies as hst
from mhlo_ir.attributes import parse_attribute
from mhlo_ir.dialect import MHLO, STABLEHLO
from mhlo_ir.syntax import ParseError
from tests.mhlo_ir.parse_support import assert_exact, exact, mlir_dictionary
from tests.oracle import normalize_hex


def round_trip(x, dialect=MHLO):
    got = parse_attribute(x.render(dialect), dialect)
    assert_exact(got, x)
    assert got == x and hash(got) == hash(x)
    return got


@given(hst.attributes())
def test_parse_inverts_render(x):
    round_trip(x)


@given(hst.attributes(max_leaves=4))
def test_parse_inverts_render_stablehlo(x):
    round_trip(x, STABLEHLO)


@given(st.lists(hst.attributes(max_leaves=4), min_size=1, max_size=6))
def test_mlir_reprints_ours_and_we_read_mlirs(xs):
    ours = hlo.DictionaryAttr({f"a.x{i}": x for i, x in enumerate(xs)})
    theirs = mlir_dictionary({f"a.x{i}": x.render(MHLO) for i, x in enumerate(xs)})
    assert normalize_hex(ours.render(MHLO)) == theirs
    assert_exact(parse_attribute(theirs), ours)


@given(st.lists(hst.mhlo_attributes(), min_size=1, max_size=6))
def test_stablehlo_spellings_against_mlir(xs):
    theirs = mlir_dictionary({f"a.x{i}": x.render(STABLEHLO) for i, x in enumerate(xs)})
    ours = hlo.DictionaryAttr({f"a.x{i}": x for i, x in enumerate(xs)})
    assert ours.render(STABLEHLO) == theirs
    assert_exact(parse_attribute(theirs, STABLEHLO), ours)


# -- MLIR's own spellings, which we never print but must read ---------------------------------

MLIR_TEXT = [
    ("0xFF : ui8", hlo.IntegerAttr(255, hlo.ui8)),
    ("-0x10 : i32", hlo.IntegerAttr(-16, hlo.i32)),
    ("0x8000000000000000 : i64", hlo.IntegerAttr(-2**63, hlo.i64)),
    ("255 : i8", hlo.IntegerAttr(-1, hlo.i8)),
    ("1 : i1", A.TRUE), ("-1 : i1", A.TRUE), ("0 : i1", A.FALSE),
    ("7", hlo.IntegerAttr(7, hlo.i64)), ("1.5", hlo.FloatAttr(1.5, hlo.f64)),
    ("1. : f32", hlo.FloatAttr(1.0, hlo.f32)), ("1.e5 : bf16", hlo.FloatAttr(99840.0, hlo.bf16)),
    ("0x7F800000 : f32", hlo.FloatAttr(float("inf"), hlo.f32)),
    ("0x7FC00000 : f64", hlo.FloatAttr(1.0589256339680216e-314, hlo.f64)),
    ("0.1 : f8E4M3FN", hlo.FloatAttr(0.1015625, hlo.f8E4M3FN)),
    ("0x7 : f4E2M1FN", hlo.FloatAttr(6.0, hlo.f4E2M1FN)),
    ("-0.0 : f16", hlo.FloatAttr(-0.0, hlo.f16)),
    ("[1, 2.5, -3 : i8]", hlo.ArrayAttr([1, 2.5, hlo.IntegerAttr(-3, hlo.i8)])),
    ('{"a b" = 1, a}', hlo.DictionaryAttr({"a b": 1, "a": A.UNIT})),
    ("array<i8: 255, 0x10>", hlo.DenseArrayAttr((-1, 16), hlo.i8)),
    ("array<f32: 0x7FC00000, -0.0>", hlo.DenseArrayAttr(
        (np.array([0x7FC00000], np.uint32).view(np.float32)[0], -0.0), hlo.f32)),
    ("#mhlo<rng_algorithm<PHILOX>>", hlo.rng_algorithm("PHILOX")),
    ("#mhlo<dot<lhs_batching_dimensions = [0]>>", hlo.DotDimensionNumbers([0])),
    ("#mhlo.dot<rhs_contracting_dimensions = [1], lhs_contracting_dimensions = [0]>",
     hlo.DotDimensionNumbers(lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[1])),
    ("#mhlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 1, "
     "input_spatial_dimensions = [2], kernel_input_feature_dimension = 0, "
     "kernel_output_feature_dimension = 1, kernel_spatial_dimensions = [2], "
     "output_batch_dimension = 0, output_feature_dimension = 1, output_spatial_dimensions = [2]>",
     hlo.ConvDimensionNumbers(0, 1, [2], 0, 1, [2], 0, 1, [2])),
    ('dense<"0x0000803F0000803F"> : tensor<2xf32>', hlo.dense(np.ones(2, np.float32))),
    ('dense<"0x0000803F"> : tensor<3xf32>', hlo.dense(np.ones(3, np.float32))),
    ('dense<"0xABCDEF01"> : tensor<4xui8>', hlo.dense(np.array([0xAB, 0xCD, 0xEF, 1], np.uint8))),
    ("dense<[]> : tensor<0xf32>", hlo.dense(np.zeros(0, np.float32))),
    ("dense<[[], []]> : tensor<2x0xi8>", hlo.dense(np.zeros((2, 0), np.int8))),
    ("dense<[1, 0]> : tensor<2xi1>", hlo.dense(np.array([True, False]))),
    ("dense<1> : tensor<2xi1>", hlo.dense(np.array([True, True]))),
    ("dense<[255, 0x7F]> : tensor<2xi8>", hlo.dense(np.array([-1, 127], np.int8))),
    ("dense<[(1.0, 2.0), (1.0, 2.0)]> : tensor<2xcomplex<f32>>",
     hlo.dense(np.full(2, 1 + 2j, np.complex64))),
]


@pytest.mark.parametrize("text, want", MLIR_TEXT, ids=[t for t, _ in MLIR_TEXT])
def test_reads_what_mlir_reads(text, want):
    got = parse_attribute(text)
    # MLIR's print of the same text is what we print for the value we read.
    assert normalize_hex(got.render(MHLO)) == mlir_dictionary({"a.x": text})[len("{a.x = "):-1]
    assert_exact(got, want)


def test_splat_of_no_elements_is_no_elements_but_keeps_its_value():
    # MLIR keeps (and prints) dense<1.0> : tensor<0xf32> as a splat, and so do we (the
    # printed text is MLIR's: test_parse_dense); its elements are none.
    a = parse_attribute("dense<1.0> : tensor<0xf32>")
    assert a.splat and a.to_array().shape == (0,) and a.to_array().dtype == np.float32
    assert a.render(hlo.dialect.MHLO) == "dense<1.000000e+00> : tensor<0xf32>"


def test_hex_case_is_free():
    lower = parse_attribute('dense<"0xabcdef0112345678"> : tensor<2xf32>')
    upper = parse_attribute('dense<"0xABCDEF0112345678"> : tensor<2xf32>')
    assert exact(lower) == exact(upper)
    big = hlo.dense(np.arange(200, dtype=np.int32) * 7919)
    assert_exact(parse_attribute(mlir_dictionary({"a.x": big.render()})[len("{a.x = "):-1]), big)


# -- errors: MLIR's rules, at the right place -------------------------------------------------

ERRORS = [
    ("-1 : ui8", 1, 1, "does not fit in ui8"),
    ("1 : f32", 1, 1, "unexpected decimal integer literal for a floating point value"),
    ("-0x7F800000 : f32", 1, 1, "hexadecimal float literal should not have a leading minus"),
    ("0x17 : f4E2M1FN", 1, 1, "hexadecimal float constant out of range"),
    ("1.5 : i32", 1, 1, "floating point value not valid for type i32"),
    ("2 : i1", 1, 1, "out of range for i1"),
    ("[1, 2", 1, 6, "expected ',' or ']', found end of input"),
    ("{a = 1, a = 2}", 1, 9, "duplicate key 'a'"),
    ('{"" = 1}', 1, 2, "attribute names must not be empty"),
    ('"x" : i32', 1, 5, "typed string attributes"),
    ("@a::@b", 1, 3, "nested symbol references"),
    ("array<i1: 1>", 1, 11, "expected 'true' or 'false', found '1'"),
    ("array<f32: 1>", 1, 12, "unexpected decimal integer literal"),
    ("array<i4: 1>", 1, 7, "8 bits or more"),
    ("dense<[1, 2]> : tensor<3xi32>", 1, 7, "inferred shape of elements literal ([2]) does not "
     "match type ([3])"),
    ("dense<[[1], [2, 3]]> : tensor<2x2xi32>", 1, 7, "ranks are not consistent"),
    ("dense<[1.5]> : tensor<1xi32>", 1, 8, "expected an integer element of i32"),
    ("dense<-1> : tensor<ui8>", 1, 8, "negative integer literal not valid"),
    ("dense<256> : tensor<i8>", 1, 7, "integer constant 256 out of range for i8"),
    ("dense<[1.0]> : tensor<1xcomplex<f32>>", 1, 8, "expected a complex element"),
    ('dense<"0x0000803F"> : tensor<2xcomplex<f32>>', 1, 7, "hex data size is invalid"),
    ('dense<"0x10"> : tensor<i4>', 1, 7, "hex byte 0x10 is not an element of i4"),
    ('dense<"0x02"> : tensor<i1>', 1, 7, "hex byte 0x02 is not an element of i1"),
    ('dense<"0xzz"> : tensor<i8>', 1, 7, "expected a hex string"),
    ('dense<"0x01 02"> : tensor<2xi8>', 1, 7, "expected a hex string"),   # MLIR refuses spaces
    ('dense<" 0x0102"> : tensor<2xi8>', 1, 7, "expected a hex string"),
    ('dense<"0x012"> : tensor<2xi8>', 1, 7, "expected a hex string"),     # an odd digit
    ('dense<"0x01\\02"> : tensor<2xi8>', 1, 7, "expected a hex string"),  # an escape
    ("dense<1> : f32", 1, 12, "need a ranked tensor type"),
    ("dense<1> tensor<i32>", 1, 10, "expected ':'"),
    ("#mhlo<comparison_direction XX>", 1, 28, "'XX' is not one of EQ, NE"),
    ("#mhlo.comparison_direction<GT>", 1, 1, "expected #mhlo<comparison_direction VALUE>"),
    ("#mhlo<rng_algorithm THREE_FRY>", 1, 1, "expected #mhlo.rng_algorithm<...>"),
    ("#mhlo.dot<foo = [1]>", 1, 11, "expected a dot field"),
    ("#mhlo.dot<lhs_batching_dimensions = [0], lhs_batching_dimensions = [0]>", 1, 42,
     "duplicate dot field"),
    ("#mhlo.conv<[b, 0, 0, f]x[i, o]->[b, f]>", 1, 19, "spatial dimension 0 appears twice"),
    ("#mhlo.conv<[b, 0]x[i, o]->[b, f]>", 1, 12, "must name 'b' and 'f'"),
    ("#mhlo.channel_handle<handle = 1>", 1, 32, "channel_handle: missing type"),
    ("#mhlo.nope<1>", 1, 1, "unknown mhlo attribute 'nope'"),
    ("#stablehlo.dot<>", 1, 1, "expected a #mhlo attribute"),
    ("nonsense", 1, 1, "expected an attribute, found 'nonsense'"),
]


@pytest.mark.parametrize("text, line, column, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(text, line, column, message):
    with pytest.raises(ParseError) as e:
        parse_attribute(text)
    assert message in e.value.message
    assert (e.value.line, e.value.column) == (line, column), str(e.value)


@pytest.mark.parametrize("where", [0, 1, 5000, 9999])
@pytest.mark.parametrize("bad", [" ", "\n", "\t", "g", "\\00"])
def test_a_long_hex_string_with_anything_but_digits_is_refused(bad, where):
    """Past 4096 characters a string is lexed without copying it or looking for line breaks
    (a big constant's hex): the hex reader still refuses what is not a pair of digits, at
    the string."""
    digits = "AB" * 5000
    text = f'{{a = dense<"0x{digits[:where]}{bad}{digits[where:]}"> : tensor<5000xi8>}}'
    with pytest.raises(ParseError) as e:
        parse_attribute(text)
    assert (e.value.line, e.value.column) == (1, 12), str(e.value)
    assert "hex string" in e.value.message or "line break" in e.value.message
    good = parse_attribute(f'{{a = dense<"0x{digits}"> : tensor<5000xi8>}}')
    assert bytes(good["a"].to_array().view(np.uint8)) == b"\xab" * 5000


def test_errors_point_into_multiline_text():
    with pytest.raises(ParseError) as e:
        parse_attribute("{\n  a = 1,\n  b = dense<[1, 2]> : tensor<2xf33>\n}")
    assert (e.value.line, e.value.column) == (3, 32)
    assert e.value.found == "'f33'"


# -- regressions: render bugs the round trip found ---------------------------------------------

def test_signless_integers_print_as_mlir_does():
    # 255 : i8 fits (signless), but MLIR re-prints it as -1 : i8; we held and printed 255.
    for x in (hlo.IntegerAttr(255, hlo.i8), hlo.IntegerAttr(2**64 - 1, hlo.i64),
              hlo.IntegerAttr(3, hlo.i2), hlo.DenseArrayAttr([255, 128], hlo.i8),
              hlo.ArrayAttr([hlo.IntegerAttr(2**63, hlo.i64)])):
        text = x.render(MHLO)
        assert mlir_dictionary({"a.x": text}) == "{a.x = " + text + "}"
        assert round_trip(x) == x
    assert hlo.IntegerAttr(255, hlo.i8) == hlo.IntegerAttr(-1, hlo.i8)
    assert hlo.IntegerAttr(255, hlo.ui8).value == 255


def test_dense_array_of_sub_byte_types_is_refused():
    # MLIR: "element type bitwidth must be a multiple of 8"; we printed array<i4: 1>.
    for et in (hlo.i2, hlo.i4, hlo.ui4, hlo.f4E2M1FN, hlo.complex64):
        with pytest.raises(ValueError, match="8 bits or more"):
            hlo.DenseArrayAttr([1], et)
    assert hlo.DenseArrayAttr([1, 2], hlo.f32).values == (1.0, 2.0)


def test_float_attributes_of_ml_dtypes_nans_equal_themselves():
    # ml_dtypes' scalars are no np.floating, so a bf16/f8 NaN compared by ``==`` and the
    # attribute read back from its own text was never equal to it.
    for et in (hlo.bf16, hlo.f8E4M3FN, hlo.f8E5M2, hlo.f8E8M0FNU):
        nan = np.array([0xFF], np.uint8 if et.bits == 8 else np.uint16)
        nan = (np.array([0x7FC1], np.uint16) if et is hlo.bf16 else nan).view(et.dtype)[0]
        a = hlo.FloatAttr(nan, et)
        assert round_trip(a) == a
    neg, pos = (np.array([b], np.uint16).view(hlo.bf16.dtype)[0] for b in (0x8000, 0))
    assert hlo.FloatAttr(neg, hlo.bf16) != hlo.FloatAttr(pos, hlo.bf16)


def test_parse_attribute_rejects_trailing_text():
    with pytest.raises(ParseError, match="expected end of input"):
        parse_attribute("1 2")


# -- IndexArrayAttr: one value, two spellings -------------------------------------------------

def _index_array_of(text, dialect):
    from mhlo_ir.syntax import TokenStream
    ts = TokenStream(text)
    a = hlo.IndexArrayAttr.parse(ts, dialect)
    ts.expect_end()
    return a


@given(st.one_of(st.lists(st.integers(-2**63, 2**63 - 1), max_size=8),
                 st.lists(st.integers(0, 3), min_size=99, max_size=130),
                 st.integers(0, 120).map(lambda n: [7] * n)),
       st.sampled_from([MHLO, STABLEHLO]))
def test_index_arrays_parse_in_their_dialect(ints, dialect):
    from mhlo_ir.index_array import index_array
    x = index_array(ints)
    text = x.render(dialect)
    got = _index_array_of(text, dialect)
    assert got == x and got.ints == x.ints
    theirs = mlir_dictionary({"a.x": text})[len("{a.x = "):-1]   # MLIR's (uppercase hex)
    assert _index_array_of(theirs, dialect) == x


def test_index_arrays_refuse_the_other_spelling():
    with pytest.raises(ParseError, match="expected dense<...> : tensor<Nxi64>"):
        _index_array_of("array<i64: 1>", MHLO)
    with pytest.raises(ParseError, match="expected array<i64: ...>"):
        _index_array_of("dense<[1, 2]> : tensor<2xi64>", STABLEHLO)
    with pytest.raises(ParseError, match="1-D tensor<Nxi64>"):
        _index_array_of("dense<[1, 2]> : tensor<2xi32>", MHLO)
    with pytest.raises(ParseError, match="got array<i32>"):
        _index_array_of("array<i32: 1>", STABLEHLO)


# -- every kind that renders parses ---------------------------------------------------------

# Kinds with a render but no parse (none now: the op chapters' kinds moved beside the others,
# tests/mhlo_ir/test_parse_op_kinds.py).
KNOWN_WITHOUT_PARSE: set = set()


def test_every_kind_that_renders_parses():
    import importlib
    import pkgutil

    from mhlo_ir.attributes import Attribute
    from mhlo_ir.location import Location
    from mhlo_ir.types import Type
    bases = (Attribute, Type, Location)
    missing = set()
    for info in pkgutil.walk_packages(hlo.__path__, "mhlo_ir."):
        if info.name == "mhlo_ir.strategies":
            continue
        mod = importlib.import_module(info.name)
        for cls in vars(mod).values():
            if isinstance(cls, type) and issubclass(cls, bases) and cls not in bases \
                    and cls.__module__ == mod.__name__ and "render" in vars(cls) \
                    and "parse" not in vars(cls):
                missing.add(cls.__name__)
    assert missing == KNOWN_WITHOUT_PARSE, (
        "each kind with a render needs a parse next to it (update KNOWN_WITHOUT_PARSE when "
        f"one is added): {sorted(missing ^ KNOWN_WITHOUT_PARSE)}")


@pytest.mark.parametrize("text, refused", [
    ("-0 : i32", True), ("-0 : ui32", True), ("-0 : i64", True), ("-0", True),
    ("-0x0 : i8", True), ("0 : i32", False), ("-1 : i32", False), ("-0.0 : f32", False)])
def test_a_negative_zero_integer_attribute_is_refused_as_mlir_refuses_it(text, refused):
    from tests import oracle
    module = ('func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = "mhlo.abs"(%a) '
              f'{{x.y = {text}}} : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : '
              'tensor<2xf32>\n}')
    if refused:
        with pytest.raises(ParseError, match="out of range"):
            parse_attribute(text)
        with pytest.raises(Exception):
            oracle.parse(module)
    else:
        assert str(oracle.parse(hlo.parse(module).to_text())) == str(oracle.parse(module))
