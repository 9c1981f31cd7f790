"""The parser's fast paths for module and function heads and tails (``mhlo_ir.parse_heads``)
and for lines without results (``parse_lines.VOID_LINE``): a text reads as the token-level
parser reads it, and fails with the same message.

Oracle: the parser with every fast path off (tests.mhlo_ir.parse_support.tokens_only), which
the parser tests check against MLIR; for the texts MLIR prints, MLIR's own re-print.
"""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
from mhlo_ir import parse_heads, parse_lines
from mhlo_ir import parser as parser_module
from tests.mhlo_ir.parse_support import outcome, tokens_only
from tests.oracle import assert_fixed_point

_F = "tensor<2xf32>"
_RET = f'    "func.return"(%arg0) : ({_F}) -> ()'
_FUNC = (f'  "func.func"() <{{function_type = ({_F}) -> {_F}, sym_name = "main"}}> ({{\n'
         f"  ^bb0(%arg0: {_F}):\n{_RET}\n  }}) : () -> ()")


_S = "tensor<f32>"
_REDUCE = (f'    %c = "mhlo.constant"() <{{value = dense<0.0> : {_S}}}> : () -> {_S}\n'
           f'    %0 = "mhlo.reduce"(%arg0, %c) <{{dimensions = dense<0> : tensor<1xi64>}}> ({{\n'
           f'    ^bb0(%a: {_S}, %b: {_S}):\n'
           f'      %1 = "mhlo.add"(%a, %b) : ({_S}, {_S}) -> {_S}\n'
           f'      "mhlo.return"(%1) : ({_S}) -> ()\n'
           f'    }}) : ({_F}, {_S}) -> {_S}')


def _module(head='"builtin.module"() <{sym_name = "m"}> ({', body=_FUNC,
            tail="}) : () -> ()"):
    return f"{head}\n{body}\n{tail}\n"


def _function(props=f'function_type = ({_F}) -> {_F}, sym_name = "main"', ret=_RET,
              tail="}) : () -> ()", between=" ({"):
    return _module(body=f'  "func.func"() <{{{props}}}>{between}\n  ^bb0(%arg0: {_F}):\n'
                        f"{ret}\n  {tail}")


def _pretty(head=f"@main(%arg0: {_F}) -> {_F}", ret=f"return %arg0 : {_F}"):
    return f"module {{\n  func.func {head} {{\n    {ret}\n  }}\n}}\n"


TEXTS = {
    # module heads and tails
    "module": _module(),
    "module without a name": _module(head='"builtin.module"() ({'),
    "module name with an escape": _module(head='"builtin.module"() <{sym_name = "a\\"b"}> ({'),
    "module name with odd characters": _module(
        head='"builtin.module"() <{sym_name = "a.b-c$"}> ({'),
    "module empty name": _module(head='"builtin.module"() <{sym_name = ""}> ({'),
    "module with another property": _module(
        head='"builtin.module"() <{sym_name = "m", x = 1}> ({'),
    "module name not a string": _module(head='"builtin.module"() <{sym_name = 3}> ({'),
    "module two spaces": _module(head='"builtin.module"()  <{sym_name = "m"}> ({'),
    "module no space before (": _module(head='"builtin.module"() <{sym_name = "m"}>({'),
    "module attributes": _module(tail="}) {mhlo.num_partitions = 2 : i32} : () -> ()"),
    "module bad attribute": _module(tail="}) {x = 2 : i32} : () -> ()"),
    "module location": _module(tail='}) : () -> () loc("m.py":1:2)'),
    "module bad signature": _module(tail=f"}}) : ({_F}) -> ()"),
    "module signature with results": _module(tail=f"}}) : () -> {_F}"),
    "module tail then text": _module(tail="}) : () -> () x"),
    "module tail without signature": _module(tail="})"),
    "module tail spaced": _module(tail="})  : () -> ()"),
    "module pretty": f"module @m {{\n{_FUNC}\n}}\n",
    # function heads and tails
    "function": _function(),
    "private": _function(props=f'function_type = ({_F}) -> {_F}, sym_name = "f", '
                               'sym_visibility = "private"'),
    "nested": _function(props=f'function_type = ({_F}) -> {_F}, sym_name = "f", '
                              'sym_visibility = "nested"'),
    "unknown visibility": _function(props=f'function_type = ({_F}) -> {_F}, sym_name = "f", '
                                          'sym_visibility = "secret"'),
    "visibility not a string": _function(props=f'function_type = ({_F}) -> {_F}, '
                                               'sym_name = "f", sym_visibility = 1'),
    "properties out of order": _function(props=f'sym_name = "main", function_type = ({_F}) '
                                               f'-> {_F}'),
    "argument attributes": _function(props=f'arg_attrs = [{{mhlo.sharding = "{{replicated}}"}}],'
                                           f' function_type = ({_F}) -> {_F}, sym_name = "main"'),
    "result attributes": _function(props=f'function_type = ({_F}) -> {_F}, res_attrs = [{{}}], '
                                         'sym_name = "main"'),
    "an unknown property": _function(props=f'function_type = ({_F}) -> {_F}, sym_name = "main",'
                                           ' zzz = 1'),
    "not a function type": _function(props=f'function_type = {_F}, sym_name = "main"'),
    "function type that does not parse": _function(
        props=f'function_type = ({_F}) -> tensor<2xq9>, sym_name = "main"'),
    "function type in parentheses": _function(
        props=f'function_type = ({_F}) -> ({_F}), sym_name = "main"'),
    "two results": _function(props=f'function_type = ({_F}) -> ({_F}, {_F}), sym_name = "main"',
                             ret=f'    "func.return"(%arg0, %arg0) : ({_F}, {_F}) -> ()'),
    "label disagrees with the type": _function(
        props='function_type = (tensor<3xf32>) -> tensor<3xf32>, sym_name = "main"'),
    "name with an escape": _function(props=f'function_type = ({_F}) -> {_F}, sym_name = "a\\nb"'),
    "name with a space": _function(props=f'function_type = ({_F}) -> {_F}, sym_name = "a b"'),
    "empty name": _function(props=f'function_type = ({_F}) -> {_F}, sym_name = ""'),
    "missing name": _function(props=f'function_type = ({_F}) -> {_F}'),
    "type holding sym_name": _function(
        props=f'function_type = ({_F}) -> {_F}, sym_name = "x", sym_name = "main"'),
    "no region": _function(between=" (\n"),
    "function attributes": _function(tail='}) {llvm.emit_c_interface} : () -> ()'),
    "function location": _function(tail='}) : () -> () loc("f.py":2:3)'),
    "function bad signature": _function(tail=f"}}) : ({_F}) -> ()"),
    "function tail then an op": _function(tail="}) : () -> () %0"),
    "function tail missing": _function(tail="})"),
    # functions in custom form
    "pretty function": _pretty(),
    "pretty private": _pretty(head=f"private @f(%arg0: {_F}) -> {_F}"),
    "pretty nested": _pretty(head=f"nested @f(%arg0: {_F}) -> {_F}"),
    "pretty public": _pretty(head=f"public @f(%arg0: {_F}) -> {_F}"),
    "pretty unknown visibility": _pretty(head=f"secret @f(%arg0: {_F}) -> {_F}"),
    "pretty no results": _pretty(head=f"@f(%arg0: {_F})", ret="return"),
    "pretty empty results": _pretty(head=f"@f(%arg0: {_F}) -> ()", ret="return"),
    "pretty no arguments": _pretty(head=f"@f() -> {_F}", ret=(
        f"%0 = mhlo.constant dense<1.0> : {_F}\n    return %0 : {_F}")),
    "pretty results in parentheses": _pretty(head=f"@f(%arg0: {_F}) -> ({_F}, {_F})",
                                             ret=f"return %arg0, %arg0 : {_F}, {_F}"),
    "pretty one result in parentheses": _pretty(head=f"@f(%arg0: {_F}) -> ({_F})"),
    "pretty wrong result count": _pretty(head=f"@f(%arg0: {_F}) -> ({_F}, {_F})"),
    "pretty argument attributes": _pretty(
        head=f"@f(%arg0: {_F} {{mhlo.sharding = \"x\"}}) -> {_F}"),
    "pretty argument location": _pretty(head=f'@f(%arg0: {_F} loc("a.py":1:2)) -> {_F}'),
    "pretty result attributes": _pretty(head=f"@f(%arg0: {_F}) -> ({_F} {{mhlo.x = 1}})"),
    "pretty function attributes": _pretty(head=f"@f(%arg0: {_F}) -> {_F} attributes {{x.y}}"),
    "pretty quoted name": _pretty(head=f'@"a b"(%arg0: {_F}) -> {_F}'),
    "pretty odd name": _pretty(head=f"@a.b$_c(%arg0: {_F}) -> {_F}"),
    "pretty name with a dash": _pretty(head=f"@a-b(%arg0: {_F}) -> {_F}"),
    "pretty argument named twice": _pretty(head=f"@f(%a: {_F}, %a: {_F}) -> {_F}",
                                           ret=f"return %a : {_F}"),
    "pretty odd argument names": _pretty(head=f"@f(%a.b-c$: {_F}, %0: {_F}) -> {_F}",
                                         ret=f"return %0 : {_F}"),
    "pretty argument name the lexer splits": _pretty(head=f"@f(%1a: {_F}) -> {_F}",
                                                     ret=f"return %1a : {_F}"),
    "pretty tuple argument": _pretty(head=f"@f(%t: tuple<{_F}>, %arg0: {_F}) -> {_F}"),
    "pretty unknown element type": _pretty(head="@f(%arg0: tensor<2xq9>) -> tensor<2xq9>",
                                           ret="return %arg0 : tensor<2xq9>"),
    "pretty result type that does not parse": _pretty(head=f"@f(%arg0: {_F}) -> tensor<2xq9>"),
    "pretty two spaces": _pretty(head=f" @f(%arg0: {_F}) -> {_F}"),
    "pretty space before (": _pretty(head=f"@f (%arg0: {_F}) -> {_F}"),
    "pretty no comma space": _pretty(head=f"@f(%a: {_F},%arg0: {_F}) -> {_F}"),
    "pretty body on the same line": (f"module {{\n  func.func @f(%arg0: {_F}) -> {_F} {{ return "
                                     f"%arg0 : {_F}\n  }}\n}}\n"),
    "pretty type mismatch in the return": _pretty(ret="return %arg0 : tensor<3xf32>"),
    "pretty attributes with strings": _pretty(
        head=f'@f(%arg0: {_F} {{a.b = "{{x}}", c.d = "\\"}}"}}) -> '
             f'({_F} {{jax.result_info = ""}})'),
    "pretty nested dictionary": _pretty(head=f"@f(%arg0: {_F} {{a.b = {{c = 1}}}}) -> {_F}"),
    "pretty dictionary that does not parse": _pretty(head=f"@f(%arg0: {_F} {{a.b = }}) -> {_F}"),
    "pretty empty dictionary": _pretty(head=f"@f(%arg0: {_F} {{}}) -> ({_F} {{}})"),
    "pretty reserved argument attribute": _pretty(head=f"@f(%arg0: {_F} {{sym_name = 1}}) -> {_F}"),
    "pretty some results with attributes": _pretty(
        head=f"@f(%arg0: {_F}) -> ({_F}, {_F} {{x.y = 1}})",
        ret=f"return %arg0, %arg0 : {_F}, {_F}"),
    "pretty module attributes": "module @m attributes {mhlo.num_partitions = 1 : i32} {\n" +
                                _pretty()[len("module {\n"):],
    "pretty module attributes, no name": "module attributes {mhlo.x = 1 : i32} {\n" +
                                         _pretty()[len("module {\n"):],
    "pretty module bad attribute": "module @m attributes {x = 1 : i32} {\n" +
                                   _pretty()[len("module {\n"):],
    "pretty module attributes on two lines": "module @m attributes {mhlo.x = 1 : i32}\n{\n" +
                                             _pretty()[len("module {\n"):],
    # lines without results
    "return with a location": _function(ret=f'    "func.return"(%arg0) : ({_F}) -> () '
                                            'loc("r.py":4:5)'),
    "return of the wrong type": _function(ret='    "func.return"(%arg0) : (tensor<3xf32>) -> ()'),
    "return of too many": _function(ret=f'    "func.return"(%arg0, %arg0) : ({_F}, {_F}) -> ()'),
    "return of an undefined value": _function(ret=f'    "func.return"(%nope) : ({_F}) -> ()'),
    "return with results": _function(ret=f'    "func.return"(%arg0) : ({_F}) -> ({_F})'),
    "return with properties": _function(ret=f'    "func.return"(%arg0) <{{x = 1}}> : ({_F}) -> ()'),
    "return with attributes": _function(ret=f'    "func.return"(%arg0) {{x = 1}} : ({_F}) -> ()'),
    "return with a comment": _function(ret=f'    "func.return"(%arg0) : ({_F}) -> () // done'),
    "return that is mhlo's": _function(ret=f'    "mhlo.return"(%arg0) : ({_F}) -> ()'),
    "return the lexer splits": _function(ret=f'    "func.return"(%0a) : ({_F}) -> ()'),
    "void op before the return": _function(
        ret=f'    "mhlo.trace"(%arg0) : ({_F}) -> ()\n{_RET}'),
    "unknown void op": _function(ret=f'    "foo.bar"(%arg0) : ({_F}) -> ()\n{_RET}'),
    "void op of no operands": _function(ret=f'    "foo.bar"() : () -> ()\n{_RET}'),
    "return in a region": _function(ret=_REDUCE + "\n" + _RET),
}


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_text_reads_as_the_token_parser_reads_it(name):
    text = TEXTS[name]
    fast = outcome(text)
    assert fast == tokens_only(text), name
    assert outcome(text) == fast, name  # again, its pieces now in the shared tables


def test_the_fast_paths_are_taken(monkeypatch):
    # What the paths exist for must go through them (else the tests above compare the token
    # parser with itself): a module and function head, their tails and a return, the return
    # by VOID_LINE and then, its tail known, by known_line's split.
    taken = []

    def spy(name, fn):
        def wrapped(*args):
            out = fn(*args)
            taken.append((name, out is not None and out is not False))
            return out
        return wrapped
    monkeypatch.setattr(parser_module, "module_head", spy("module", parse_heads.module_head))
    monkeypatch.setattr(parser_module, "function_head",
                        spy("function", parse_heads.function_head))
    monkeypatch.setattr(parser_module, "empty_tail", spy("tail", parse_heads.empty_tail))
    monkeypatch.setattr(parse_lines, "void_op", spy("void", parse_lines.void_op))
    monkeypatch.setattr(parse_lines, "known_line", spy("known", parse_lines.known_line))
    # (a type no other test reads: the return's tail is not known yet)
    text = TEXTS["private"].replace(_F, "tensor<7x5x3xf32>")
    hlo.parse(text)
    assert sorted(set(taken)) == [("function", True), ("known", False), ("module", True),
                                  ("tail", True), ("void", True)], taken
    taken.clear()
    hlo.parse(text)
    assert ("known", True) in taken and ("void", True) not in taken, taken


def test_printed_modules_read_back_through_the_fast_paths():
    # Our generic print of a module with a private function and a call: parsed and printed
    # again, identically (with and without locations); MLIR re-prints the text identically.
    m = hlo.Module("m")
    g = m.add_function("g", [hlo.tensor((2,), hlo.f32)], visibility="private")
    gb = g.builder()
    gb.return_(gb.negate(g.arguments[0]))
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    with b.at_location("f.py", 3, 4):
        y = b.call(g, [f.arguments[0]])
    b.return_(y)
    for locations in (True, False):
        text = m.to_text(locations=locations)
        assert hlo.parse(text).to_text(locations=locations) == text
        assert outcome(text) == tokens_only(text)
    assert_fixed_point(m.to_text(locations=False))


def test_the_custom_form_head_is_taken(monkeypatch):
    taken = []

    def spy(*args):
        out = parse_heads.pretty_function_head(*args)
        taken.append(out is not None)
        return out
    monkeypatch.setattr(parser_module, "pretty_function_head", spy)
    hlo.parse(TEXTS["pretty private"])
    assert taken == [True]


def test_argument_attributes_read_whole_belong_to_their_function():
    # Two functions with the same dictionary text: an edit of one leaves the other as read.
    text = _pretty(head=f"@f(%arg0: {_F} {{mhlo.x = 1 : i32}}) -> {_F}")
    text = text[:-2] + text[len("module {\n"):-2].replace("@f", "@g") + "}\n"
    m = hlo.parse(text)
    f, g = m.functions
    f.set_arg_attr(0, "mhlo.y", hlo.UnitAttr())
    assert "mhlo.y" not in g.arg_attrs[0]
    assert hlo.parse(text).functions[1].arg_attrs[0].keys() == {"mhlo.x"}
