"""The parser's templates (``mhlo_ir.parse_templates``): a one-line op read token by token once,
then lines that differ from it only in their SSA names and location made from it, read as the
token-level parser reads them and failing with the same messages; and an op a line path read
whose location is on the next line, read again token by token.

Oracle: the parser with every fast path off (tests.mhlo_ir.parse_support.tokens_only), which
the parser tests check against MLIR.
"""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
from mhlo_ir import parse_lines
from mhlo_ir import parser as parser_module
from tests.mhlo_ir.parse_support import generated_texts, outcome, tokens_only

_F, _I = "tensor<2xf32>", "tensor<2xi32>"
_MODULE = f"""module {{
  func.func @main(%a: {_F}, %b: {_I}) -> {_F} {{
BODY
    return %a : {_F}
  }}
}}
"""
_CONST = f"mhlo.constant dense<1.000000e+00> : {_F}"

LINES = {
    "a constant again": f"    %0 = {_CONST}\n    %1 = {_CONST}",
    "zero and minus zero": (f"    %0 = mhlo.constant dense<0.0> : {_F}\n"
                            f"    %1 = mhlo.constant dense<-0.0> : {_F}\n"
                            f"    %2 = mhlo.constant dense<0.0> : {_F}"),
    "NaN payloads": (f"    %0 = mhlo.constant dense<0x7FC00001> : {_F}\n"
                     f"    %1 = mhlo.constant dense<0x7FC00002> : {_F}"),
    "other directions": (f"    %0 = mhlo.compare GT, %a, %a : ({_F}, {_F}) -> tensor<2xi1>\n"
                         f"    %1 = mhlo.compare LT, %a, %a : ({_F}, {_F}) -> tensor<2xi1>\n"
                         f"    %2 = mhlo.compare GT, %a, %0 : ({_F}, tensor<2xi1>) -> "
                         "tensor<2xi1>"),
    "a use in a string": (f'    %0 = mhlo.custom_call @foo(%a) {{backend_config = "%a"}} : '
                          f"({_F}) -> {_F}\n"
                          f'    %1 = mhlo.custom_call @foo(%0) {{backend_config = "%a"}} : '
                          f"({_F}) -> {_F}"),
    "a use in a string naming another": (
        f'    %0 = mhlo.custom_call @foo(%a) {{backend_config = "%b"}} : ({_F}) -> {_F}\n'
        f'    %1 = mhlo.custom_call @foo(%0) {{backend_config = "%b"}} : ({_F}) -> {_F}'),
    "an operand of another type": (f"    %0 = mhlo.convert %a : ({_F}) -> {_I}\n"
                                   f"    %1 = mhlo.convert %b : ({_F}) -> {_I}"),
    "an undefined operand": (f"    %0 = mhlo.convert %a : ({_F}) -> {_I}\n"
                             f"    %1 = mhlo.convert %nope : ({_F}) -> {_I}"),
    "a redefinition": f"    %0 = {_CONST}\n    %0 = {_CONST}",
    "locations": (f'    %0 = {_CONST} loc("a.py":1:2)\n    %1 = {_CONST} loc("b.py":3:4)\n'
                  f'    %2 = {_CONST}\n    %3 = {_CONST} loc(unknown)'),
    "a location that does not read": f'    %0 = {_CONST}\n    %1 = {_CONST} loc("a.py":x)',
    "a blank between loc and (, then a second location": (
        f'    %0 = {_CONST} loc (unknown)\n    %1 = {_CONST} loc (unknown) loc("x")'),
    "a tab before loc(unknown), then a second location": (
        f'    %0 = {_CONST}\tloc(unknown)\n    %1 = {_CONST}\tloc(unknown) loc("x")'),
    "a compact reduce, loc (unknown), then a second location": (
        "    %c = mhlo.constant dense<0.0> : tensor<f32>\n"
        f"    %0 = mhlo.reduce(%a init: %c) applies mhlo.add across dimensions = [0] : "
        f"({_F}, tensor<f32>) -> tensor<f32> loc (unknown)\n"
        f"    %1 = mhlo.reduce(%a init: %c) applies mhlo.add across dimensions = [0] : "
        f'({_F}, tensor<f32>) -> tensor<f32> loc (unknown) loc("x")'),
    "a location on the next line": f'    %0 = {_CONST}\n    %1 = {_CONST}\n      loc("n.py":5:6)',
    "a location after a comment": f'    %0 = {_CONST}\n    %1 = {_CONST} // c\n      loc("n")',
    "a generic line's location on the next line": (
        f'    %0 = "mhlo.add"(%a, %a) : ({_F}, {_F}) -> {_F}\n      loc("n.py":1:1)'),
    "an elementwise line's location on the next line": (
        f'    %0 = mhlo.add %a, %a : {_F}\n    %1 = mhlo.add %0, %0 : {_F}\n      loc("x")'),
    "a comment": f"    %0 = {_CONST}\n    %1 = {_CONST} // one",
    "two ops on a line": f"    %0 = {_CONST}\n    %1 = {_CONST} %2 = {_CONST}",
    "an op over two lines": (f"    %0 = mhlo.constant dense<[1.0, 2.0]> : {_F}\n"
                             f"    %1 = mhlo.constant dense<[1.0,\n      2.0]> : {_F}"),
    "a result group": f"    %0 = {_CONST}\n    %1:1 = {_CONST}",
    "a use of a group member": (f"    %t:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
                                f"    %0 = mhlo.convert %t#1 : ({_I}) -> {_F}\n"
                                f"    %1 = mhlo.convert %t#1 : ({_I}) -> {_F}"),
    "a group again": (f"    %t:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
                      f"    %u:2 = mhlo.optimization_barrier %t#0, %t#1 : {_F}, {_I}\n"
                      f"    %0 = mhlo.convert %u#1 : ({_I}) -> {_F}\n"
                      f"    %1 = mhlo.add %u, %0 : {_F}"),
    "a group of the wrong size": (f"    %t:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
                                  f"    %u:3 = mhlo.optimization_barrier %a, %b : {_F}, {_I}"),
    "a group named as one": (f"    %t:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
                             f"    %u = mhlo.optimization_barrier %a, %b : {_F}, {_I}"),
    "a group redefining a member": (
        f"    %t:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
        f"    %u#1 = mhlo.constant dense<1> : {_I}\n"
        f"    %u:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}"),
    "a group's member out of range": (f"    %t:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
                                      f"    %u:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
                                      f"    %0 = mhlo.convert %u#2 : ({_I}) -> {_F}"),
    "a group with its location on the next line": (
        f"    %t:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n"
        f"    %u:2 = mhlo.optimization_barrier %a, %b : {_F}, {_I}\n      loc(\"g\")\n"
        f"    %0 = mhlo.convert %u#1 : ({_I}) -> {_F}"),
    # what a custom form may go on with on the next line (found by a review)
    "a return's operands on the next line": f"    return\n      %a : {_F}",
    "a type list going on": f"    return %a : {_F}\n    return %a : {_F}\n      , {_F}",
    "iota's types going on": ("    %0 = stablehlo.iota dim = 0 : tensor<2xf32>\n"
                              "    %1 = stablehlo.iota dim = 0 : tensor<2xf32>\n"
                              "      , tensor<2xf32>"),
    "a dictionary on the next line": ("    %0 = mhlo.xla.rng_get_and_update_state\n"
                                      "    %1 = mhlo.xla.rng_get_and_update_state\n"
                                      "      {delta = 2 : i64}"),
    "a % in a string": (f'    %0 = mhlo.custom_call @foo(%a) {{backend_config = "%"}} : ({_F}) -> '
                        f'{_F}\n    %1 = mhlo.custom_call @foo(%) {{backend_config = "%a"}} : '
                        f"({_F}) -> {_F}"),
    "a percent in a string": (f'    %0 = mhlo.custom_call @foo(%a) {{backend_config = "5%"}} : '
                              f"({_F}) -> {_F}\n"
                              f'    %1 = mhlo.custom_call @foo(%0) {{backend_config = "5%"}} : '
                              f"({_F}) -> {_F}"),
    "several results named apart": (f"    %0 = {_CONST}\n    %x, %y = mhlo.optimization_barrier "
                                    f"%a, %b : {_F}, {_I}"),
    "a return in the middle": f"    %0 = {_CONST}\n    return %0 : {_F}\n    %1 = {_CONST}",
    "a region on one line": (
        "    %c = mhlo.constant dense<0.0> : tensor<f32>\n"
        f"    %0 = mhlo.reduce(%a init: %c) applies mhlo.add across dimensions = [0] : "
        f"({_F}, tensor<f32>) -> tensor<f32>\n"
        f"    %1 = mhlo.reduce(%a init: %c) applies mhlo.add across dimensions = [0] : "
        f"({_F}, tensor<f32>) -> tensor<f32>"),
    "stablehlo spelling": (f"    %0 = stablehlo.constant dense<1.0> : {_F}\n"
                           f"    %1 = stablehlo.constant dense<1.0> : {_F}"),
    "trailing spaces": f"    %0 = {_CONST}   \n    %1 = {_CONST}\t",
    # elementwise custom forms, which parse_lines reads (PRETTY_LINE, then known_line)
    "elementwise again": f"    %0 = mhlo.add %a, %a : {_F}\n    %1 = mhlo.add %0, %a : {_F}",
    "elementwise with locations": (f'    %0 = mhlo.add %a, %a : {_F} loc("a.py":1:2)\n'
                                   f'    %1 = mhlo.add %0, %a : {_F} loc("b loc(c)")\n'
                                   f'    %2 = mhlo.add %1, %a : {_F} loc("b loc(c) d")'),
    "elementwise of three": (f"    %0 = mhlo.add %a, %a : {_F}\n"
                             f"    %1 = mhlo.add %0, %a, %a : {_F}"),
    "elementwise of one": f"    %0 = mhlo.add %a, %a : {_F}\n    %1 = mhlo.add %0 : {_F}",
    "elementwise without a space": (f"    %0 = mhlo.add %a, %a : {_F}\n"
                                    f"    %1 = mhlo.add %0,%a : {_F}"),
    "elementwise of another type": (f"    %0 = mhlo.add %a, %a : {_F}\n"
                                    f"    %1 = mhlo.add %b, %b : {_F}"),
    "elementwise function type": (f"    %0 = mhlo.add %a, %a : {_F}\n"
                                  f"    %1 = mhlo.add %0, %a : ({_F}, {_F}) -> {_F}\n"
                                  f"    %2 = mhlo.add %1, %a : ({_F}, {_F}) -> {_F}"),
    "elementwise redefinition": (f"    %0 = mhlo.add %a, %a : {_F}\n"
                                 f"    %0 = mhlo.add %a, %a : {_F}"),
    "elementwise of an unknown op": (f"    %0 = mhlo.add %a, %a : {_F}\n"
                                     f"    %1 = foo.add %0, %a : {_F}"),
    "elementwise in both spellings": (f"    %0 = mhlo.add %a, %a : {_F}\n"
                                      f"    %1 = stablehlo.add %0, %a : {_F}\n"
                                      f"    %2 = stablehlo.add %1, %a : {_F}"),
    "a carriage return": f"    %0 = {_CONST}\r\n    %1 = {_CONST}\r",
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_line_reads_as_the_token_parser_reads_it(name):
    text = _MODULE.replace("BODY", LINES[name])
    for options in ({}, dict(verify=False, check_ops=False)):
        fast = outcome(text, **options)
        assert fast == tokens_only(text, **options), name
        assert outcome(text, **options) == fast, name  # again: its lines' templates known


def test_templates_are_made_and_taken():
    # Otherwise the tests above would compare the token parser with itself.
    taken = []
    saved = parse_lines.template_line

    def spy(*args):
        out = saved(*args)
        taken.append(out is not None)
        return out
    parse_lines.template_line = spy
    try:
        text = _MODULE.replace("BODY", LINES["a constant again"])
        hlo.parse(text)
        taken.clear()
        hlo.parse(text)
    finally:
        parse_lines.template_line = saved
    assert taken.count(True) == 3, taken  # both constants and the return


def test_generated_programs_in_custom_form_read_as_the_token_parser_reads_them():
    for seed, kw, text in generated_texts(range(40), (
            dict(locations=True, pretty=True), dict(locations=False, pretty=True),
            dict(locations=True, pretty=True, dialect=hlo.STABLEHLO))):
        want = tokens_only(text)
        assert not want.startswith(("ParseError", "Module")), (seed, kw, want)
        for _ in range(2):  # the second read from templates the first made
            assert outcome(text) == want, (seed, kw)


def test_the_first_line_of_an_op_over_two_lines_is_no_template():
    # Else a later line equal to it would be read as a whole op, where the token parser reads
    # on into the next line.
    text = _MODULE.replace("BODY", f"    %0 = mhlo.constant dense<[5.0,\n      6.0]> : {_F}")
    assert outcome(text) == tokens_only(text)
    tails = parse_lines._tables(True)[4]
    assert not [k for k in tails if k[0] == "template" and "dense<[5.0," in k[-1]]
    assert [k for k in tails if k[0] == "template" and k[-1] == f"return % : {_F}"]


def _remember(line: str, op, uses: dict) -> bool:
    """Whether ``parse_templates.remember`` makes a template of ``line`` read as ``op``, the
    names in ``uses`` in scope."""
    from mhlo_ir import parse_templates
    p = parser_module._Parser(line + "\n", None)
    p.scope.frames[-1].update(uses)
    key = ("template", p.dialect.name, int(line.startswith("%")),
           parse_templates._USE.sub("%", line.partition(" = ")[2].rpartition(" loc(")[0] or
                                    line.partition(" = ")[2]))
    p.lines.tails.pop(key, None)
    parse_templates.remember(p.lines, line + "\n", 0, op, len(line) + 1)
    return key in p.lines.tails


def test_a_template_needs_the_uses_to_be_the_operands_in_order():
    # No custom form in the table prints its operands out of order: the op is made to be one.
    m = hlo.Module("m")
    f = m.add_function("f", [hlo.tensor((2,), hlo.f32)] * 2)
    b = f.builder()
    x, y = f.arguments
    line = "%0 = mhlo.subtract %x, %y : tensor<2xf32>"
    assert _remember(line, b.subtract(x, y), {"%x": x, "%y": y})
    assert not _remember(line, b.subtract(y, x), {"%x": x, "%y": y})


def test_a_template_needs_the_line_location_to_be_the_ops():
    m = hlo.Module("m")
    f = m.add_function("f", [hlo.tensor((2,), hlo.f32)])
    b = f.builder()
    (x,) = f.arguments
    for line, loc, made in [("%0 = mhlo.negate %x : tensor<2xf32>", None, True),
                            ("%0 = mhlo.negate %x : tensor<2xf32>", "a.py", False),
                            ('%0 = mhlo.negate %x : tensor<2xf32> loc("a.py":1:0)', "a.py", True),
                            ('%0 = mhlo.negate %x : tensor<2xf32> loc("a.py":2:0)', "a.py", False)]:
        op = b.negate(x, location=hlo.loc(loc, 1, 0) if loc else None)
        assert _remember(line, op, {"%x": x}) is made, line


def test_the_oracle_reads_every_op_token_by_token(monkeypatch):
    # tokens_only is the oracle of every fast path: a path it left on would be compared with
    # itself. Under it, each op of a program goes through _Parser.operation.
    from mhlo_ir import strategies as hst
    read = []
    operation = parser_module._Parser.operation
    monkeypatch.setattr(parser_module._Parser, "operation",
                        lambda self, block: read.append(1) or operation(self, block))
    m = hst.generate_seeded(3, hst.default_options(12)).module
    n = 0
    for f in m.functions:
        stack = [f.entry_block]
        while stack:
            for op in stack.pop().operations:
                n += 1
                stack.extend(b for r in op.regions for b in r.blocks)
    for pretty in (False, True):
        text = m.to_text(pretty=pretty)
        outcome(text)
        outcome(text)  # its lines now known to every fast path
        read.clear()
        assert not tokens_only(text).startswith("ParseError")
        assert len(read) == n, pretty



def test_a_bare_return_read_before_changes_nothing():
    # A zero-operand `return` read token by token is no template: a later `return` whose
    # operands are on the next line reads as it reads alone (found by a review).
    void = "func.func @g() {\n  return\n}\n"
    text = f"func.func @f(%a: {_F}) -> {_F} {{\n  return\n    %a : {_F}\n}}\n"
    alone = tokens_only(text)
    assert not alone.startswith("ParseError"), alone
    for _ in range(2):
        outcome(void)
        assert outcome(text) == alone
