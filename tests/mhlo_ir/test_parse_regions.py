"""Generic ops with regions read by lines (``mhlo_ir.parse_regions``): the head and tail lines
of any such op read whole, an op whose one region is a combining block (a reduction) made
whole from the pieces of one read before, and trailing locations read whole
(``parse_lines.location_line``); each reads as the token reader reads, and fails with its
messages.

Oracle: the parser with every fast path off (tests.mhlo_ir.parse_support.tokens_only), which
the parser tests check against MLIR; and MLIR itself re-printing what we read. Each test
also counts the ops the paths took, so that one that stopped taking them fails here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir import parse_lines
from mhlo_ir import parser as parser_module
from tests import oracle
from tests.mhlo_ir.parse_support import generated_texts, outcome, tokens_only
from verify.api import _jaxlib_parse_and_verify

_T, _S = "tensor<4x6xf32>", "tensor<f32>"

_PATHS = ("combining_op", "region_head", "region_tail", "location_line")


@pytest.fixture
def taken(monkeypatch):
    """name -> how many times that path gave an answer (not None)."""
    counts = dict.fromkeys(_PATHS, 0)
    for name in _PATHS:
        real = getattr(parser_module, name)

        def spy(*args, _real=real, _name=name):
            got = _real(*args)
            if got is not None:
                counts[_name] += 1
            return got
        monkeypatch.setattr(parser_module, name, spy)
    return counts


def _reduce(names=("%1", "%a", "%b", "%c"), body=None, ret=None, head_extra="",
            tail_extra="", label=None, loc=""):
    """A reduce named ``names`` (its result, the body's arguments and result); ``body``,
    ``ret`` and ``label`` replace its lines, ``{a}``, ``{b}`` and ``{c}`` standing for those
    names."""
    r, a, b, c = names
    body = (body or '{c} = "mhlo.add"({a}, {b}) : ({s}, {s}) -> {s}')
    ret = (ret or '"mhlo.return"({c}) : ({s}) -> ()')
    label = (label or "^bb0({a}: {s}, {b}: {s}):")
    body, ret, label = (x.format(a=a, b=b, c=c, s=_S) for x in (body, ret, label))
    return (f'    {r} = "mhlo.reduce"(%x, %0){head_extra} <{{dimensions = dense<1> : '
            f"tensor<1xi64>}}> ({{\n    {label}\n      {body}\n      {ret}\n"
            f"    }}){tail_extra} : ({_T}, {_S}) -> tensor<4xf32>{loc}\n")


def _module(*ops, result="%1") -> str:
    return (f'"builtin.module"() <{{sym_name = "m"}}> ({{\n'
            f'  "func.func"() <{{function_type = ({_T}) -> tensor<4xf32>, sym_name = "main"}}> '
            f"({{\n  ^bb0(%x: {_T}):\n"
            f'    %0 = "mhlo.constant"() <{{value = dense<0.0> : {_S}}}> : () -> {_S}\n'
            + "".join(ops) +
            f'    "func.return"({result}) : (tensor<4xf32>) -> ()\n'
            "  }) : () -> ()\n}) : () -> ()\n")


def _again(n: int, **kw) -> list:
    """``n`` reduces alike but for their names (the first read by tokens, the rest whole)."""
    return [_reduce((f"%{i}", f"%a{i}", f"%b{i}", f"%c{i}"), **kw) for i in range(1, n + 1)]


CASES = {
    "alike": _module(*_again(3)),
    "with locations": _module(*_again(3, loc=' loc("f.py":3:4)')),
    "a location alias": _module(*_again(2, loc=" loc(#loc1)")) + '#loc1 = loc("a.py":1:2)\n',
    "the body swaps its arguments": _module(*_again(2, body=(
        '{c} = "mhlo.add"({b}, {a}) : ({s}, {s}) -> {s}'))),
    "the body reads one argument twice": _module(*_again(2, body=(
        '{c} = "mhlo.add"({a}, {a}) : ({s}, {s}) -> {s}'))),
    "the return gives an argument": _module(*_again(2, ret='"mhlo.return"({a}) : ({s}) -> ()')),
    "a swap after one alike": _module(_reduce(), _reduce(("%2", "%a", "%b", "%c"), body=(
        '{c} = "mhlo.add"({b}, {a}) : ({s}, {s}) -> {s}')), result="%2"),
    "one argument twice after one alike": _module(_reduce(), _reduce(
        ("%2", "%a", "%b", "%c"), body='{c} = "mhlo.add"({a}, {a}) : ({s}, {s}) -> {s}'),
        result="%2"),
    "the second argument twice after one alike": _module(_reduce(), _reduce(
        ("%2", "%a", "%b", "%c"), body='{c} = "mhlo.add"({b}, {b}) : ({s}, {s}) -> {s}'),
        result="%2"),
    "an argument returned after one alike": _module(_reduce(), _reduce(
        ("%2", "%a", "%b", "%c"), ret='"mhlo.return"({b}) : ({s}) -> ()'), result="%2"),
    "the body's result named as an argument": _module(_reduce(), _reduce(
        ("%2", "%a", "%b", "%a"))),
    "an argument with a location": _module(*_again(2, label=(
        '^bb0({a}: {s} loc("x"), {b}: {s}):'))),
    "an argument named twice": _module(_reduce(), _reduce(("%2", "%a", "%a", "%c"))),
    "a result named twice": _module(_reduce(), _reduce()),
    "an undefined operand": _module(_reduce(), _reduce(("%2", "%a", "%b", "%c")).replace(
        "(%x, %0)", "(%x, %nope)")),
    "an operand too many": _module(_reduce(), _reduce(("%2", "%a", "%b", "%c")).replace(
        "(%x, %0)", "(%x, %0, %0)")),
    "an operand too few": _module(_reduce(), _reduce(("%2", "%a", "%b", "%c")).replace(
        "(%x, %0)", "(%x)")),
    "an operand of another type": _module(_reduce(), _reduce(("%2", "%a", "%b", "%c")).replace(
        "(%x, %0)", "(%0, %0)")),
    "an attribute dictionary after the region": _module(*_again(
        2, tail_extra=' {mhlo.frontend_attributes = {a = "b"}}')),
    "a comment in the head": _module(_reduce(), _reduce(("%2", "%a", "%b", "%c")).replace(
        "({\n", "({ // c\n", 1)),
    "a location on the next line": _module(*_again(2)).replace(
        "-> tensor<4xf32>\n    %2", '-> tensor<4xf32>\n      loc("n")\n    %2'),
    "CRLF line ends": _module(*_again(3, loc=' loc("f.py":3:4)')).replace(
        "tensor<f32>\n", "tensor<f32> loc(\"in\")\r\n").replace("()\n", "() loc(\"r\")\r\n"),
    "a space after the locations": _module(*_again(3, loc=' loc("f.py":3:4) ')).replace(
        "tensor<f32>\n", "tensor<f32> loc(\"in\") \n"),
    "a tab before the location": _module(*_again(3)).replace(
        "tensor<f32>\n", "tensor<f32>\tloc(\"in\")\n"),
    "a type too many after the signature": _module(_reduce(), _reduce(
        ("%2", "%a", "%b", "%c"), tail_extra="").replace("-> tensor<4xf32>\n",
                                                          "-> tensor<4xf32>, tensor<f32>\n")),
    "words after the signature": _module(*_again(2)).replace("-> tensor<4xf32>\n",
                                                             "-> tensor<4xf32> junk\n", 1),
    "a dictionary after the signature": _module(*_again(2)).replace(
        "-> tensor<4xf32>\n", "-> tensor<4xf32> {foo}\n", 1),
    "the next op on the line": _module(_reduce()).replace(
        "-> tensor<4xf32>\n    \"func.return\"", "-> tensor<4xf32> \"func.return\""),
    "a blank between loc and (": _module(*_again(3, loc=' loc ("o")')),
    "a tab between loc and ( inside": _module(*_again(3)).replace(
        "tensor<f32>\n", "tensor<f32> loc\t(\"in\")\n"),
    "a vertical tab before the next line's location": _module(*_again(2)).replace(
        "-> tensor<4xf32>\n    %2", "-> tensor<4xf32>\n\vloc(\"o\")\n    %2"),
    "a form feed before the next line's location": _module(*_again(2)).replace(
        "-> tensor<4xf32>\n    %2", "-> tensor<4xf32>\n\floc(\"o\")\n    %2"),
    "an op refused, an undefined alias on the next line": _module(_reduce()).replace(
        '    "func.return"', '    %9 = "mhlo.reduce_window"(%0) : (tensor<f32>) -> tensor<f32>\n'
        '      loc(#undefined)\n    "func.return"'),
    "a location that does not read": _module(*_again(2, loc=' loc("f.py":x)')),
    "a location and more": _module(*_again(2, loc=' loc("f.py":1:2) loc("g")')),
    "a wrong dimension": _module(*_again(2)).replace("dense<1> : tensor<1xi64>",
                                                     "dense<2> : tensor<1xi64>"),
    "a body of two ops": _module(*_again(2, body=(
        '{c} = "mhlo.add"({a}, {b}) : ({s}, {s}) -> {s}\n'
        '      {c}n = "mhlo.negate"({c}) : ({s}) -> {s}'), ret=(
        '"mhlo.return"({c}n) : ({s}) -> ()'))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_region_op_reads_as_the_token_reader_reads_it(name):
    text = CASES[name]
    for options in (dict(), dict(check_ops=False), dict(verify=False)):
        fast = outcome(text, **options)
        assert fast == tokens_only(text, **options), name
        assert outcome(text, **options) == fast, name  # again: its pieces now known


def test_reductions_alike_are_made_whole(taken, monkeypatch):
    monkeypatch.setattr(parse_lines, "_TABLES", {})  # (nothing kept from other tests)
    n = 6
    text = _module(*_again(n, loc=' loc("f.py":3:4)'), result=f"%{n}")
    for _ in range(2):
        m = hlo.parse(text)
    assert oracle.mlir_generic(text) == oracle.mlir_generic(m.to_text(locations=False))
    # The first reduce of the first parse by tokens (its head, tail and location whole), the
    # others whole; every reduce of the second parse whole.
    assert taken["combining_op"] == 2 * n - 1, taken
    assert taken["region_head"] == taken["region_tail"] == 1, taken
    arr = np.arange(24, dtype=np.float32).reshape(4, 6)
    import verify
    got, = verify.run(m, arr)
    np.testing.assert_array_equal(got, arr.sum(1))


def test_a_near_miss_goes_the_token_readers_way(taken, monkeypatch):
    monkeypatch.setattr(parse_lines, "_TABLES", {})
    hlo.parse(CASES["the body swaps its arguments"])
    hlo.parse(CASES["the body swaps its arguments"])
    assert taken["combining_op"] == 0 and taken["region_head"] == 4, taken


def test_programs_over_the_whole_table_read_as_the_token_reader_reads_them(taken):
    """Generated programs in generic form, with and without (aliased) locations, twice each
    (the second read from the pieces the first kept)."""
    for seed, kw, text in generated_texts(range(60), (
            dict(locations=True), dict(locations="alias"), dict(locations=False),
            dict(locations=True, dialect=hlo.STABLEHLO))):
        want = tokens_only(text)
        assert not want.startswith(("ParseError", "Module")), (seed, kw, want)
        for _ in range(2):
            assert outcome(text) == want, (seed, kw)
    assert min(taken["combining_op"], taken["region_head"], taken["region_tail"]) > 20, taken


def test_lowered_programs_read_back_as_printed(taken):
    """What the lowering prints (reductions everywhere, call-site locations on every line)
    reads back to the same text, as the token reader reads it."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from lower import lower_jaxpr_to_module

    def f(x, w):
        h = jnp.tanh(x @ w)
        h = (h - h.mean(-1, keepdims=True)) / (h.std(-1, keepdims=True) + 1e-5)
        return jax.nn.softmax(h, axis=-1).sum() + h.max()
    x = np.ones((4, 8), np.float32)
    closed = jax.make_jaxpr(jax.value_and_grad(f, argnums=1))(x, np.ones((8, 8), np.float32))
    m = lower_jaxpr_to_module("lowered", closed).module
    for kw in (dict(), dict(locations="alias")):
        text = m.to_text(**kw)
        assert outcome(text) == tokens_only(text)
        for _ in range(2):
            assert hlo.parse(text).to_text(**kw) == text
    assert taken["combining_op"] > 0 and taken["location_line"] > 0, taken


def test_the_oracle_switches_these_paths_off(taken):
    text = CASES["with locations"]
    hlo.parse(text)
    before = dict(taken)
    tokens_only(text)
    assert taken == before


def _pretty_reductions():
    """Custom-form text of reductions, compact (``applies``) and not, over one input."""
    m = hlo.Module("m")
    t = hlo.tensor((4, 6), hlo.f32)
    f = m.add_function("main", [t])
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    outs = [b.reduce(x, zero, [1], "add"), b.reduce(x, zero, [1], "add"),
            b.reduce(x, zero, [1], lambda r, a, c: r.subtract(c, a)),  # spelled out
            b.reduce(x, zero, [0], "maximum"), b.reduce(x, zero, [1], "add"),
            b.reduce(x, zero, [1], lambda r, a, c: r.subtract(c, a))]
    b.return_(*outs)
    return m


def test_compact_reductions_are_made_from_templates(monkeypatch):
    from mhlo_ir import parse_templates
    monkeypatch.setattr(parse_lines, "_TABLES", {})
    made = []
    real = parse_lines.template_line

    def spy(cache, line, end, block):
        got = real(cache, line, end, block)
        if got is not None:
            made.append(got[0].spec.name)
        return got
    monkeypatch.setattr(parse_lines, "template_line", spy)
    m = _pretty_reductions()
    for kw in (dict(pretty=True), dict(pretty=True, locations=False),
               dict(pretty=True, dialect=hlo.STABLEHLO)):
        text = m.to_text(**kw)
        assert "applies" in text and "reducer" in text
        want = tokens_only(text)
        for _ in range(2):
            assert outcome(text) == want, kw
            assert hlo.parse(text).to_text(**kw) == text
    # The compact ones after the first of their kind: 2 of the 3 "add"s (the first parse)
    # then all 4 compact ones in each later parse of that dialect.
    assert made.count("reduce") >= 2 + 4, made
    assert oracle.mlir_generic(m.to_text(locations=False)) == oracle.mlir_generic(
        hlo.parse(m.to_text(pretty=True)).to_text(locations=False))
    assert parse_templates.combining_recipe(hlo.parse(text).functions[0].entry_block
                                            .operations[1]) is not None


def _body_locations(op):
    block = op.regions[0].blocks[0]
    return [a.location for a in block.arguments] + [o.location for o in block.operations]


def test_a_compact_reductions_body_is_at_its_location_as_mlir_reads_it(monkeypatch):
    # ``applies mhlo.add`` implies the body; MLIR gives its arguments and ops the reduce's
    # location, and so do we, on the token path and from templates alike.
    monkeypatch.setattr(parse_lines, "_TABLES", {})
    m = _pretty_reductions()
    ops = m.functions[0].entry_block.operations
    for i, op in enumerate(ops[1:-1]):
        if i % 3 != 2:
            op.location = hlo.NameLoc(f"r{i % 2}", hlo.FileLineColLoc("f.py", i + 1, 2))
    text = m.to_text(pretty=True)
    ir, ctx = oracle._context()
    with ctx, ir.Location.unknown():
        theirs_text = ir.Module.parse(text).operation.get_asm(
            enable_debug_info=True, print_generic_op_form=True)
    theirs = [o for o in hlo.parse(theirs_text).functions[0].entry_block.operations
              if o.spec.name == "reduce"]
    for _ in range(2):  # (the second parse makes the compact ones from templates)
        ours = [o for o in hlo.parse(text).functions[0].entry_block.operations
                if o.spec.name == "reduce"]
        assert len(ours) == len(theirs) == 6
        for mine, mlirs, built in zip(ours, theirs, ops[1:-1]):
            assert mine.location == built.location
            compact = "subtract" not in [o.spec.name for o in built.regions[0].blocks[0]
                                         .operations]
            if compact and built.location is not hlo.UNKNOWN:
                assert _body_locations(mine) == [built.location] * 4
                assert _body_locations(mlirs) == [built.location] * 4
            elif compact:  # (MLIR: the text's own position; we read no location as unknown)
                assert _body_locations(mine) == [hlo.UNKNOWN] * 4
                assert len(set(_body_locations(mlirs))) == 1
        assert outcome(text) == tokens_only(text)


def test_a_compact_reduce_template_made_without_a_location_keeps_later_ones_located(
        monkeypatch):
    # An unlocated line makes the template; a later located line's body is at its location
    # (the template once remembered "no location" for the body and lost it).
    monkeypatch.setattr(parse_lines, "_TABLES", {})

    def text(*locs):
        lines = "".join(
            f"    %{i} = mhlo.reduce(%arg0 init: %arg1) applies mhlo.add across dimensions = "
            f"[0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>{loc}\n"
            for i, loc in enumerate(locs))
        return ("module {\n  func.func @main(%arg0: tensor<2xf32>, %arg1: tensor<f32>) -> "
                f"tensor<f32> {{\n{lines}    return %0 : tensor<f32>\n  }}\n}}\n")
    hlo.parse(text(""))
    for t in (text(' loc("n")'), text("", ' loc("n")', "", ' loc("m")')):
        assert outcome(t) == tokens_only(t)
    m = hlo.parse(text("", ' loc("n")'))
    second = m.functions[0].entry_block.operations[1]
    assert _body_locations(second) == [hlo.NameLoc("n")] * 4



_REDEFINED = {
    "the first body's argument is the function's": _module(_reduce(("%1", "%x", "%b", "%c"))),
    "a later body's argument is the function's": _module(
        _reduce(("%1", "%a1", "%b1", "%c1")), _reduce(("%2", "%x", "%b2", "%c2")), result="%2"),
    "a later body's result is an outer value": _module(
        _reduce(("%1", "%a1", "%b1", "%c1")), _reduce(("%2", "%a2", "%b2", "%0")), result="%2"),
    "a later body's argument is an earlier result": _module(
        _reduce(("%1", "%a1", "%b1", "%c1")), _reduce(("%2", "%1", "%b2", "%c2")), result="%2"),
    "sibling bodies reuse names (allowed)": _module(
        _reduce(("%1", "%a", "%b", "%c")), _reduce(("%2", "%a", "%b", "%c")), result="%2"),
    "a body names a value as its own op's result (allowed: defined after the op)": _module(
        _reduce(("%1", "%a", "%b", "%1"))),
}


def _custom_form(a: str, c: str) -> str:
    """Two reduces in MLIR's custom form with a named body (two ops: no compact form), the
    second's block argument named ``a`` and its first result ``c``."""
    def reduce(r, a, b, c, d):
        return (f"  {r} = mhlo.reduce(%x init: %0) across dimensions = [1] : ({_T}, {_S}) -> "
                f"tensor<4xf32>\n   reducer({a}: {_S}, {b}: {_S})  {{\n"
                f"    {c} = mhlo.add {a}, {b} : {_S}\n    {d} = mhlo.multiply {c}, {c} : {_S}\n"
                f"    mhlo.return {d} : {_S}\n  }}\n")
    return (f"func.func @main(%x: {_T}) -> tensor<4xf32> {{\n"
            f"  %0 = mhlo.constant dense<0.0> : {_S}\n"
            + reduce("%1", "%a", "%b", "%c", "%d") + reduce("%2", a, "%b", c, "%d") +
            "  return %2 : tensor<4xf32>\n}\n")


for _a, _c, _what in [("%x", "%c", "the function's argument"), ("%a", "%0", "an outer value"),
                      ("%1", "%c", "an earlier result"), ("%a", "%c", "(allowed)")]:
    _REDEFINED[f"custom form: a body names {_what}"] = _custom_form(_a, _c)


def _verdict(parse) -> str:
    """'accepted', or where the refusal is and the name it redefines (MLIR words it as a
    redefinition of an SSA value, or, for a custom form's block argument, as a "region entry
    argument ... already in use")."""
    try:
        parse()
    except Exception as e:  # noqa: BLE001 - jaxlib's errors and ours, compared by their text
        m = re.search(r"(\d+:\d+):? (?:error: )?(?:redefinition of SSA value '?(%\w+)|"
                      r"region entry argument '(%\w+)' is already in use)", str(e))
        return f"{m.group(1)} refused {m.group(2) or m.group(3)}" if m else f"other: {e}"
    return "accepted"


@pytest.mark.parametrize("name", sorted(_REDEFINED))
def test_a_body_redefining_a_visible_name_is_refused_where_mlir_refuses_it(name):
    """MLIR scopes a region's names inside the regions around it: a body may not redefine a
    value visible there (sibling bodies may reuse names). Every path: the token reader, the
    combining ops made whole from an earlier one, the custom form's bodies."""
    text = _REDEFINED[name]
    theirs = _verdict(lambda: _jaxlib_parse_and_verify(text))
    assert (theirs == "accepted") == ("allowed" in name) and not theirs.startswith("other")
    assert _verdict(lambda: hlo.parse(text)) == theirs
