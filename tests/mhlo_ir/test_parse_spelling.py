"""Spellings where the parser read text otherwise than MLIR (a review of 2026-12-07, ninth
session): a ``//`` comment ended by a carriage return, enum keywords of custom forms in
another case, a blank between a dialect attribute's name and its ``<``, strings of bytes that
are not UTF-8. Oracle: MLIR's own parser inside jaxlib, on the same text."""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import ParseError
from tests import oracle

@pytest.mark.parametrize("newline", ["\r", "\n", "\r\n"])
def test_a_comment_ends_at_a_carriage_return_as_in_mlir(newline):
    text = newline.join(["// a comment", "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {",
                         "  %0 = mhlo.add %a, %a : tensor<2xf32> // sum",
                         "  %1 = mhlo.multiply %0, %0 : tensor<2xf32>",
                         "  return %1 : tensor<2xf32>", "}", ""])
    ours = hlo.parse(text).to_text(locations=False)
    assert "mhlo.multiply" in ours
    assert oracle.normalize_hex(ours) == oracle.mlir_generic(text)


@pytest.mark.parametrize("line", [
    "%0 = mhlo.compare  gt, %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>",
    "%0 = stablehlo.compare  Lt, %a, %a,  FLOAT : (tensor<2xf32>, tensor<2xf32>) -> "
    "tensor<2xi1>",
    "%0 = stablehlo.compare  LT, %a, %a,  float : (tensor<2xf32>, tensor<2xf32>) -> "
    "tensor<2xi1>",
    "%0 = stablehlo.fft %c, type =  fft, length = [2] : (tensor<2xcomplex<f32>>) -> "
    "tensor<2xcomplex<f32>>",
    "%0 = stablehlo.dot %a, %a, precision = [default, HIGHEST] : (tensor<2xf32>, "
    "tensor<2xf32>) -> tensor<f32>",
])
def test_custom_form_enums_are_upper_case_as_mlir_requires(line):
    text = (f"func.func @main(%a: tensor<2xf32>, %c: tensor<2xcomplex<f32>>) {{\n  {line}\n"
            "  return\n}")
    with pytest.raises(Exception, match="to be one of"):
        oracle.parse(text)
    with pytest.raises(ParseError, match="in upper case as MLIR spells it, found"):
        hlo.parse(text)
    fixed = text.replace("gt,", "GT,").replace("Lt,", "LT,").replace("float", "FLOAT") \
        .replace("=  fft", "=  FFT").replace("default", "DEFAULT")
    dialect = hlo.STABLEHLO if "stablehlo." in fixed else hlo.MHLO
    assert oracle.normalize_hex(hlo.parse(fixed).to_text(locations=False, dialect=dialect)) \
        == oracle.mlir_generic(fixed)


@pytest.mark.parametrize("attr, name", [
    ("#mhlo <comparison_direction GT>", "#mhlo"),
    ("#mhlo.dot <lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>",
     "#mhlo.dot"),
    ("#mhlo.dot\n    <lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>",
     "#mhlo.dot"),
])
def test_a_blank_before_a_dialect_attributes_angle_bracket_is_refused_as_in_mlir(attr, name):
    text = (f'func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {{\n  %0 = "mhlo.add"(%a, %a) '
            f"{{x.a = {attr}}} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
            "  return %0 : tensor<2xf32>\n}")
    with pytest.raises(Exception):
        oracle.parse(text)
    with pytest.raises(ParseError, match=f"a blank between {name} and its '<'"):
        hlo.parse(text)
    tight = text.replace(f"{name} <", f"{name}<").replace(f"{name}\n    <", f"{name}<")
    assert oracle.normalize_hex(hlo.parse(tight).to_text(locations=False)) == \
        oracle.mlir_generic(tight)


def test_strings_hold_bytes_that_are_not_utf8_as_mlir_strings_do():
    from mhlo_ir.text import string_bytes
    text = ('func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
            '  %0 = "mhlo.custom_call"(%a) {backend_config = "x\\9C\\01\\FF", call_target_name = '
            '"triton_kernel_call"} : (tensor<2xf32>) -> tensor<2xf32>\n'
            '  return %0 : tensor<2xf32>\n}')
    m = hlo.parse(text)
    assert oracle.normalize_hex(m.to_text(locations=False)) == oracle.mlir_generic(text)
    (op,) = [op for op in m.lookup("main").entry_block.operations if op.spec.name ==
             "custom_call"]
    assert string_bytes(op.attributes["backend_config"].value) == b"x\x9c\x01\xff"
    # built from bytes, the same text
    b2 = hlo.Module("m")
    f = b2.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.custom_call("triton_kernel_call", [f.arguments[0]], [hlo.tensor((2,), hlo.f32)],
                            backend_config=b"x\x9c\x01\xff"))
    assert '"x\\9C\\01\\FF"' in b2.to_text()
    verify.check(b2)  # (jaxlib reads it; a run needs the kernel)


@pytest.mark.parametrize("body, line, ours", [
    ("  %0 = mhlo.abs %a : tensor<2xf32>\n  return %0 : tensor<2xf32>", 2,
     "returns \\(tensor<2xf32>\\) but @main is declared to return \\(tensor<3xf32>\\)"),
    ("  %0 = func.call @nope(%a) : (tensor<2xf32>) -> tensor<3xf32>\n"
     "  return %0 : tensor<3xf32>", 1, "calls @nope, which is not defined"),
])
def test_whole_module_errors_of_text_without_locations_name_the_line(body, line, ours):
    text = (f"func.func @main(%a: tensor<2xf32>) -> tensor<3xf32> {{\n{body}\n}}")
    with pytest.raises(Exception):
        oracle.parse(text)
    with pytest.raises(hlo.ModuleVerificationError, match=f"^{line + 1}:3: in @main, .*{ours}") \
            as e:
        hlo.parse(text)
    assert (e.value.line, e.value.column) == (line + 1, 3)
    assert text.splitlines()[line].strip() in str(e.value)  # (the line, shown under it)


def test_a_deep_chain_of_names_reads_whatever_was_read_before():
    # (a review: a location chain 450 names deep inside 40 regions was too deep to read
    # alone, and read after the same location had been read at top level, whose text the
    # parser's tables then held; name chains are read in a loop now)
    loc = 'loc(' + '"n"(' * 450 + '"f.py":1:2' + ')' * 450 + ')'
    t = "tensor<2xf32>"
    op = f'%r = mhlo.abs %a : {t} {loc}'
    body = op
    for _ in range(40):
        body = (f'%r = "mhlo.case"(%i) ({{\n{body}\n"mhlo.return"(%r) : ({t}) -> ()\n}}) : '
                f'(tensor<i32>) -> {t}')
    text = f"func.func @main(%a: {t}, %i: tensor<i32>) -> {t} {{\n{body}\nreturn %r : {t}\n}}"
    first = hlo.parse(text).to_text()
    hlo.parse(f"func.func @main(%a: {t}) -> {t} {{\n{op}\n return %r : {t}\n}}")
    assert hlo.parse(text).to_text() == first


@pytest.mark.parametrize("dialect", ["mhlo", "stablehlo"])
@pytest.mark.parametrize("spelling", ["() <{{value = {v}}}> : () -> {t}",
                                      "() {{value = {v}}} : () -> {t}",
                                      "() <{{value = {v}}}> {{tag.k = 1 : i64}} : () -> {t}"])
def test_a_constant_spelled_with_parentheses_reads_as_mlir_reads_it(dialect, spelling):
    """MHLO's and StableHLO's constants read ``() <{value = ...}> : () -> T`` (the value
    among the properties or the attributes) beside ``dense<...> : T``; StableHLO prints a
    quantized constant so."""
    v, t = "dense<[1.5, -2.0, 4.0]> : tensor<3xf32>", "tensor<3xf32>"
    text = (f"func.func @main() -> {t} {{\n  %0 = {dialect}.constant "
            f"{spelling.format(v=v, t=t)}\n  return %0 : {t}\n}}\n")
    m = hlo.parse(text)
    assert oracle.normalize_hex(m.to_text(locations=False, dialect=dialect)) == \
        oracle.mlir_generic(text)


@pytest.mark.parametrize("spelling, message, mlir_reads", [
    ("() <{{}}> : () -> {t}", "needs its value", False),
    ("() <{{value = {v}}}> : (tensor<f32>) -> {t}", "takes the type \\(\\) -> tensor", False),
    ("() <{{value = {v}}}> : () -> tensor<4xf32>", "differ from the inferred", False),
    # MLIR keeps the properties' value and drops the other; mhlo_ir refuses the pair, as
    # its generic reader does ("given twice"), rather than guess which was meant.
    ("() <{{value = {v}}}> {{value = {v}}} : () -> {t}", "'value' is given twice", True),
])
def test_a_constant_spelled_with_parentheses_is_refused_saying_why(spelling, message,
                                                                   mlir_reads):
    v, t = "dense<[1.5, -2.0, 4.0]> : tensor<3xf32>", "tensor<3xf32>"
    text = (f"func.func @main() -> {t} {{\n  %0 = stablehlo.constant "
            f"{spelling.format(v=v, t=t)}\n  return %0 : {t}\n}}\n")
    if mlir_reads:
        oracle.parse(text)
    else:
        with pytest.raises(Exception):  # noqa: B017 - MLIR's own error, whatever its class
            oracle.parse(text)
    with pytest.raises(ParseError, match=message):
        hlo.parse(text)
