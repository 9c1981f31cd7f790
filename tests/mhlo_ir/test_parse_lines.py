"""The parser's line fast paths (``mhlo_ir.parse_lines``): a line read whole, by a regular
expression or by ``known_line``'s split and an earlier line's tail, means what the
token-level parser reads it as, and fails with the same message.

Oracle: the parser with its line paths turned off (every line read token by token), which the
parser tests check against MLIR; and, for the generated programs, the text they were printed
from.
"""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
from mhlo_ir import parse_lines
from tests.mhlo_ir.parse_support import outcome as _outcome
from tests.mhlo_ir.parse_support import generated_texts
from tests.mhlo_ir.parse_support import tokens_only as _tokens_only

_MODULE = """module {
  func.func @main(%arg0: tensor<2xf32>, %arg1: tensor<2xi32>) -> tensor<2xf32> {
    %0 = "mhlo.add"(%arg0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
BODY
    "func.return"(%1) : (tensor<2xf32>) -> ()
  }
}
"""
_ADD = '"mhlo.add"({}) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>'

# Lines after one whose tail (the text after its operands) they share, or nearly: each must
# read as the token-level parser reads it.
LINES = {
    "same tail": f"    %1 = {_ADD.format('%0, %0')}",
    "operand of another type": f"    %1 = {_ADD.format('%0, %arg1')}",
    "undefined operand": f"    %1 = {_ADD.format('%0, %nope')}",
    "three operands": f"    %1 = {_ADD.format('%0, %0, %0')}",
    "redefinition": f"    %1 = {_ADD.format('%0, %0')}\n    %1 = {_ADD.format('%0, %0')}",
    "location": f'    %1 = {_ADD.format("%0, %0")} loc("f.py":3:7)',
    "location holding loc(": f'    %1 = {_ADD.format("%0, %0")} loc("a loc(b) = \\"c\\"(d)")',
    "unclosed location": f"    %1 = {_ADD.format('%0, %0')} loc(",
    "two locations": f'    %1 = {_ADD.format("%0, %0")} loc("x") loc("y")',
    "attribute dict after": f"    %1 = {_ADD.format('%0, %0')} {{x = 1}}",
    "space before (": '    %1 = "mhlo.add" (%0, %0) : (tensor<2xf32>, tensor<2xf32>) -> '
                      'tensor<2xf32>',
    "no space after comma": f"    %1 = {_ADD.format('%0,%0')}",
    "trailing spaces": f"    %1 = {_ADD.format('%0, %0')}   ",
    "comment": f"    %1 = {_ADD.format('%0, %0')} // a comment",
    "carriage return": f"    %1 = {_ADD.format('%0, %0')}\r",
    "stablehlo name": f"    %1 = {_ADD.format('%0, %0').replace('mhlo.', 'stablehlo.')}",
    "odd result name": (f"    %a-b.c$ = {_ADD.format('%0, %0')}\n"
                        f"    %1 = {_ADD.format('%a-b.c$, %0')}"),
    "bad result name": f"    %1 x = {_ADD.format('%0, %0')}",
    "result group": f"    %1:1 = {_ADD.format('%0, %0')}",
    "string attribute holding ) and loc(": (
        '    %1 = "mhlo.add"(%0, %0) {note = ") loc(x) : (y"} : (tensor<2xf32>, '
        'tensor<2xf32>) -> tensor<2xf32>'),
    "comment holding loc(": (f"    %2 = {_ADD.format('%0, %0')} // loc(z\n"
                             f'    %1 = {_ADD.format("%0, %0")} // loc(z loc("b")'),
    "comment then a location": f'    %1 = {_ADD.format("%0, %0")} // note loc("b")',
    "comment holding a location": (f'    %2 = {_ADD.format("%0, %0")} // loc("a")x\n'
                                   f'    %1 = {_ADD.format("%0, %0")} // loc("a")x loc("b")'),
    "result name the lexer splits": f"    %1a = {_ADD.format('%0, %0')}",
    "an op the rules refuse, a bad location on the next line": (
        '    %1 = "mhlo.add"(%0, %0) <{foo = 1 : i64}> : (tensor<2xf32>, tensor<2xf32>) -> '
        'tensor<2xf32>\n      loc("a":1:x)'),
    "properties": '    %c = "mhlo.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> '
                  'tensor<2xf32>\n    %1 = "mhlo.add"(%0, %c) : (tensor<2xf32>, tensor<2xf32>) '
                  '-> tensor<2xf32>',
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_line_reads_as_the_token_parser_reads_it(name):
    # Twice in one text as well: the second copy finds the first's tail already known.
    for body in (LINES[name], LINES[name] + "\n" + LINES[name].replace("%1 ", "%2 ", 1)
                 .replace("%1:1 ", "%2:1 ", 1)):
        text = _MODULE.replace("BODY", body)
        assert _outcome(text) == _tokens_only(text), name


# Function headers: the entry block's label and the function type, read whole when they are
# tensors only (``parse_lines.label_line``, ``FunctionType.parse``).
_HEADER = """module {
  "func.func"() <{function_type = FTYPE, sym_name = "main"}> ({
  LABEL
    "func.return"(RET) : (RTYPES) -> ()
  }) : () -> ()
}
"""
HEADERS = {
    "two tensors": ("(tensor<2xf32>, tensor<3xi32>) -> tensor<2xf32>",
                    "^bb0(%arg0: tensor<2xf32>, %arg1: tensor<3xi32>):", "%arg0",
                    "tensor<2xf32>"),
    "no arguments": ("() -> ()", "^bb0():", "", ""),
    "results in parentheses": ("(tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)",
                               "^bb0(%x: tensor<2xf32>):", "%x, %x",
                               "tensor<2xf32>, tensor<2xf32>"),
    "argument with a location": ("(tensor<2xf32>) -> tensor<2xf32>",
                                 '^bb0(%arg0: tensor<2xf32> loc("a.py":1:2)):', "%arg0",
                                 "tensor<2xf32>"),
    "a tuple argument": ("(tuple<tensor<2xf32>>, tensor<2xf32>) -> tensor<2xf32>",
                         "^bb0(%t: tuple<tensor<2xf32>>, %arg1: tensor<2xf32>):", "%arg1",
                         "tensor<2xf32>"),
    "label type differs": ("(tensor<2xf32>) -> tensor<2xf32>", "^bb0(%arg0: tensor<3xf32>):",
                           "%arg0", "tensor<2xf32>"),
    "odd argument names": ("(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
                           "^bb0(%a.b-c$: tensor<2xf32>, %0: tensor<2xf32>):", "%0",
                           "tensor<2xf32>"),
    "argument named twice": ("(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
                             "^bb0(%a: tensor<2xf32>, %a: tensor<2xf32>):", "%a",
                             "tensor<2xf32>"),
    "non-canonical spelling": ("(tensor<02xf32>) -> tensor<2xf32>",
                               "^bb0(%arg0: tensor<002xf32>):", "%arg0", "tensor<2xf32>"),
    "function-typed result": ("(tensor<2xf32>) -> ((i32) -> i32)", "^bb0(%arg0: tensor<2xf32>):",
                              "%arg0", "tensor<2xf32>"),
    "no space after comma": ("(tensor<2xf32>,tensor<2xf32>) -> tensor<2xf32>",
                             "^bb0(%arg0: tensor<2xf32>,%arg1: tensor<2xf32>):", "%arg0",
                             "tensor<2xf32>"),
    "no comma between arguments": ("(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
                                   "^bb0(%arg0: tensor<2xf32>%arg1: tensor<2xf32>):", "%arg0",
                                   "tensor<2xf32>"),
    "argument name the lexer splits": ("(tensor<2xf32>) -> tensor<2xf32>",
                                       "^bb0(%1a: tensor<2xf32>):", "%1a", "tensor<2xf32>"),
    "label name the lexer splits": ("(tensor<2xf32>) -> tensor<2xf32>",
                                    "^0a(%x: tensor<2xf32>):", "%x", "tensor<2xf32>"),
    "unknown element type": ("(tensor<2xq32>) -> tensor<2xq32>", "^bb0(%arg0: tensor<2xq32>):",
                             "%arg0", "tensor<2xq32>"),
}


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_a_function_header_reads_as_the_token_parser_reads_it(name):
    ftype, label, ret, rtypes = HEADERS[name]
    text = (_HEADER.replace("FTYPE", ftype).replace("LABEL", label).replace("RET", ret)
            .replace("RTYPES", rtypes))
    assert _outcome(text) == _tokens_only(text), name
    assert _outcome(text) == _tokens_only(text), name  # the types now read before


@pytest.mark.parametrize("length", range(4092, 4100))
def test_a_long_line_reads_as_the_token_parser_reads_it(length):
    # Around the 4096 characters the line readers look ahead, an earlier line's tail known.
    head = f"    %1 = {_ADD.format('%0, %0')} loc(\""
    line = head + "y" * (length - len(head) - 2) + '")'
    assert len(line) == length
    for body in (line, f"    %2 = {_ADD.format('%0, %0')}\n" + line,
                 f"    %2 = {_ADD.format('%0, %0')}\n" + line.replace("%1 ", "%1a ", 1)):
        text = _MODULE.replace("BODY", body)
        assert _outcome(text) == _tokens_only(text), length


def test_generated_programs_read_as_the_token_parser_reads_them():
    variants = [dict(locations=False), dict(locations=True), dict(locations="alias"),
                dict(locations=True, dialect=hlo.STABLEHLO), dict(locations=True, pretty=True)]
    for seed, kw, text in generated_texts(range(60), variants):
        fast = _outcome(text)
        assert fast == _tokens_only(text), (seed, kw)
        assert not fast.startswith("ParseError"), (seed, kw, fast)


# -- a parsed module's verification ---------------------------------------------------------
# ``parse`` verifies with ``parsed=True``: region-free ops outside closed regions are checked
# only for their place and the functions they name (the parser resolved their uses in scope
# and made them as their specs make them). Whatever else is wrong must still be found, with
# the message the full verification gives.

_F = "tensor<2xf32>"
_BROKEN = {
    "a reduce body using an outer value": f"""module {{
  func.func @main(%arg0: {_F}, %arg1: tensor<f32>) -> tensor<f32> {{
    %0 = "mhlo.constant"() <{{value = dense<0.0> : tensor<f32>}}> : () -> tensor<f32>
    %1 = "mhlo.reduce"(%arg0, %0) <{{dimensions = array<i64: 0>}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %2 = "mhlo.add"(%a, %arg1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "mhlo.return"(%2) : (tensor<f32>) -> ()
    }}) : ({_F}, tensor<f32>) -> tensor<f32>
    "func.return"(%1) : (tensor<f32>) -> ()
  }}
}}
""",
    "no terminator": f"""module {{
  func.func @main(%arg0: {_F}) -> {_F} {{
    %0 = "mhlo.negate"(%arg0) : ({_F}) -> {_F}
  }}
}}
""",
    "an op after the return": f"""module {{
  func.func @main(%arg0: {_F}) -> {_F} {{
    "func.return"(%arg0) : ({_F}) -> ()
    %0 = "mhlo.negate"(%arg0) : ({_F}) -> {_F}
  }}
}}
""",
    "a return of the wrong type": f"""module {{
  func.func @main(%arg0: {_F}) -> tensor<3xf32> {{
    %0 = "mhlo.negate"(%arg0) : ({_F}) -> {_F}
    "func.return"(%0) : ({_F}) -> ()
  }}
}}
""",
    "mhlo.return ending a function with other types": f"""module {{
  func.func @main(%arg0: {_F}) -> tensor<3xf32> {{
    "mhlo.return"(%arg0) : ({_F}) -> ()
  }}
}}
""",
    "a custom_call naming a missing function": f"""module {{
  func.func @main(%arg0: {_F}) -> {_F} {{
    %0 = "mhlo.custom_call"(%arg0) <{{call_target_name = "foo",
        called_computations = [@nope]}}> : ({_F}) -> {_F}
    "func.return"(%0) : ({_F}) -> ()
  }}
}}
""",
    "recursive calls": f"""module {{
  func.func @main(%arg0: {_F}) -> {_F} {{
    %0 = "func.call"(%arg0) <{{callee = @main}}> : ({_F}) -> {_F}
    "func.return"(%0) : ({_F}) -> ()
  }}
}}
""",
    "an op with an operand too many": f"""module {{
  func.func @main(%arg0: {_F}) -> {_F} {{
    %0 = "mhlo.convert"(%arg0, %arg0) : ({_F}, {_F}) -> {_F}
    "func.return"(%0) : ({_F}) -> ()
  }}
}}
""",
    "a binary op with one operand": f"""module {{
  func.func @main(%arg0: {_F}) -> {_F} {{
    %0 = "mhlo.add"(%arg0) : ({_F}) -> {_F}
    "func.return"(%0) : ({_F}) -> ()
  }}
}}
""",
    "an operand too few in an if branch": f"""module {{
  func.func @main(%p: tensor<i1>, %arg0: {_F}) -> {_F} {{
    %0 = "mhlo.if"(%p) ({{
      %1 = "mhlo.multiply"(%arg0) : ({_F}) -> {_F}
      "mhlo.return"(%1) : ({_F}) -> ()
    }}, {{
      "mhlo.return"(%arg0) : ({_F}) -> ()
    }}) : (tensor<i1>) -> {_F}
    "func.return"(%0) : ({_F}) -> ()
  }}
}}
""",
    "valid": f"""module {{
  func.func @main(%arg0: {_F}) -> {_F} {{
    %0 = "mhlo.negate"(%arg0) : ({_F}) -> {_F}
    %1 = "mhlo.add"(%0, %arg0) : ({_F}, {_F}) -> {_F}
    "func.return"(%1) : ({_F}) -> ()
  }}
}}
""",
}


def _verdict(run) -> str:
    try:
        return run().to_text()
    except (hlo.ParseError, hlo.ModuleVerificationError) as e:
        message = str(e)
        if isinstance(e, hlo.ModuleVerificationError) and hasattr(e, "line"):
            # (parse names the op's line:column and shows the line: mhlo_ir.parse_places)
            head = f"{e.line}:{e.column}: "
            assert message.startswith(head), message
            message = message[len(head):].split("\n")[0]
        return f"{type(e).__name__} {message}"


@pytest.mark.parametrize("name", sorted(_BROKEN))
def test_a_parsed_module_is_judged_as_the_full_verification_judges_it(name):
    text = _BROKEN[name]

    def fully():
        m = hlo.parse(text, verify=False)
        m.verify()
        return m
    want = _verdict(fully)
    assert _verdict(lambda: hlo.parse(text)) == want
    assert want.startswith(("ModuleVerificationError", "IllFormedOpError")) == \
        (name != "valid"), want


# -- tables shared by the parses of a process -----------------------------------------------

def _fresh(text: str) -> str:
    """``_outcome(text)`` with no table left by earlier parses."""
    saved = dict(parse_lines._TABLES)
    parse_lines._TABLES.clear()
    try:
        return _outcome(text)
    finally:
        parse_lines._TABLES.clear()
        parse_lines._TABLES.update(saved)


_ALIASED = """module {
  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "mhlo.negate"(%arg0) : (tensor<2xf32>) -> tensor<2xf32> loc(#loc0)
    %1 = "mhlo.negate"(%0) : (tensor<2xf32>) -> tensor<2xf32> loc(#loc0)
    "func.return"(%1) : (tensor<2xf32>) -> ()
  }
}
#loc0 = loc(WHERE)
"""
_TOKENS = """module {
  func.func @main(%arg0: !mhlo.token) -> !mhlo.token {
    %0 = "PREFIX.after_all"(%arg0) : (!mhlo.token) -> !mhlo.token
    %1 = "PREFIX.after_all"(%0) : (!mhlo.token) -> !mhlo.token
    "func.return"(%1) : (!mhlo.token) -> ()
  }
}
"""


@pytest.mark.parametrize("first, then", [
    # An alias means what its own module says: the text naming it is not shared.
    (_ALIASED.replace("WHERE", '"a.py":1:2'), _ALIASED.replace("WHERE", '"b.py":3:4')),
    # A type's text is read in the dialect its op names (!mhlo.token is not StableHLO's).
    (_TOKENS.replace("PREFIX", "mhlo"), _TOKENS.replace("PREFIX", "stablehlo")),
])
def test_a_text_reads_as_it_reads_alone_after_another(first, then):
    alone = _fresh(then)
    _outcome(first)
    assert _outcome(then) == alone


def test_generated_programs_read_as_they_read_alone():
    from mhlo_ir import strategies as hst
    options = hst.default_options(12)
    texts = []
    for seed in range(40):
        m = hst.generate_seeded(seed, options).module
        for kw in (dict(locations=True), dict(locations="alias"),
                   dict(locations=True, dialect=hlo.STABLEHLO),
                   dict(locations=False, pretty=True)):
            try:
                texts.append(m.to_text(**kw))
            except hlo.OpBuildError:
                continue
    alone = [_fresh(t) for t in texts]
    for order in (range(len(texts)), range(len(texts) - 1, -1, -1)):
        for i in order:
            assert _outcome(texts[i]) == alone[i], i
