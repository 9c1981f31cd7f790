"""Locations: every kind prints, jaxlib accepts it inline and through ``#loc`` aliases, MLIR
reads back the very location we attached (built independently with the MLIR bindings), and the
file:line of an op reaches XLA's op metadata.
"""

from __future__ import annotations

import re

import pytest

import mhlo_ir as hlo
import verify
from tests.oracle import _context, normalize_hex, parse

T = hlo.tensor((2,), hlo.f32)
F = hlo.FileLineColLoc
MODES = [pytest.param(True, id="inline"), pytest.param("alias", id="alias")]

# One op per location kind; each op has its own HLO opcode so XLA's output can be matched.
# (builder method, our location, a function (ir) -> the same location built by MLIR)
KINDS = [
    ("add", F("model.py", 17, 5), lambda ir: ir.Location.file("model.py", 17, 5)),
    ("multiply", hlo.NameLoc("just_a_name"), lambda ir: ir.Location.name("just_a_name")),
    ("subtract", hlo.NameLoc("jit(f)/sub", F("other.py", 23, 9)),
     lambda ir: ir.Location.name("jit(f)/sub", childLoc=ir.Location.file("other.py", 23, 9))),
    ("tanh", hlo.CallSiteLoc(F("callee.py", 5, 1), F("caller.py", 6, 2)),
     lambda ir: ir.Location.callsite(ir.Location.file("callee.py", 5, 1),
                                     [ir.Location.file("caller.py", 6, 2)])),
    ("negate", hlo.CallSiteLoc(hlo.NameLoc("fn"), hlo.CallSiteLoc(F("a.py", 1, 2),
                                                                   F("b.py", 3, 4))),
     lambda ir: ir.Location.callsite(ir.Location.name("fn"), [ir.Location.file("a.py", 1, 2),
                                                              ir.Location.file("b.py", 3, 4)])),
    ("abs", hlo.FusedLoc([F("fused.py", 7, 1), hlo.NameLoc("nm")]),
     lambda ir: ir.Location.fused([ir.Location.file("fused.py", 7, 1),
                                   ir.Location.name("nm")])),
    ("exponential", hlo.FusedLoc([F("meta.py", 8, 2), hlo.NameLoc("m2")], metadata="md"),
     lambda ir: ir.Location.fused([ir.Location.file("meta.py", 8, 2), ir.Location.name("m2")],
                                  metadata=ir.StringAttr.get("md"))),
    ("sine", hlo.FusedLoc([], metadata="only-meta"),
     lambda ir: ir.Location.fused([], metadata=ir.StringAttr.get("only-meta"))),
    ("cosine", hlo.NameLoc("outer", hlo.NameLoc("inner", F("deep.py", 4, 4))),
     lambda ir: ir.Location.name("outer", childLoc=ir.Location.name(
         "inner", childLoc=ir.Location.file("deep.py", 4, 4)))),
    ("sqrt", hlo.NameLoc("named", hlo.CallSiteLoc(F("c.py", 1, 1), F("d.py", 2, 2))),
     lambda ir: ir.Location.name("named", childLoc=ir.Location.callsite(
         ir.Location.file("c.py", 1, 1), [ir.Location.file("d.py", 2, 2)]))),
    ("floor", hlo.UNKNOWN, None),
    ("ceil", F("model.py", 17, 5), lambda ir: ir.Location.file("model.py", 17, 5)),  # repeat
]

MODULE_LOC = hlo.NameLoc("the_module", F("mod.py", 1, 1))
MAIN_LOC = F("main.py", 2, 3)
HELPER_LOC = hlo.FusedLoc([hlo.NameLoc("helper"), F("helper.py", 4, 5)])
ARG_LOCS = [F("args.py", 10, 1), hlo.NameLoc("y")]


def build():
    m = hlo.Module("locs", location=MODULE_LOC)
    h = m.add_function("helper", [T], visibility="private", location=HELPER_LOC,
                       arg_locations=[hlo.NameLoc("h_arg")])
    hb = h.builder()
    hb.return_(hb.negate(h.arguments[0], location=F("helper.py", 5, 1)))
    f = m.add_function("main", [T, T], visibility="public", location=MAIN_LOC,
                       arg_locations=ARG_LOCS)
    b = f.builder()
    x, y = f.arguments
    v = b.add(x, y)
    ops = []
    for method, loc, _ in KINDS:
        if method in ("add", "multiply", "subtract"):
            v = getattr(b, method)(v, y, location=loc)
        else:
            v = getattr(b, method)(v, location=loc)
        ops.append(v.owner)
    with b.at_location("ctx.py", 30, 2):                  # the builder's default location
        v = b.call(h, [v])
        s = b.reduce(v, b.constant(0.0), [0], lambda bb, a, e: bb.add(a, e))
    b.return_(v, s)
    return m, ops


def mlir():
    return _context()


def main_body(mod):
    """{sym_name: func op} of a parsed module."""
    ir, _ = mlir()
    return {ir.StringAttr(o.operation.attributes["sym_name"]).value: o.operation
            for o in mod.body.operations}


@pytest.mark.parametrize("mode", MODES)
def test_every_location_kind_is_accepted_by_jaxlib(mode):
    m, _ = build()
    text = m.to_text(locations=mode)
    assert verify.check(text) == text


@pytest.mark.parametrize("mode", MODES)
def test_mlir_reads_back_the_locations_we_attached(mode):
    ir, ctx = mlir()
    m, _ = build()
    text = m.to_text(locations=mode)
    mod = parse(text)
    funcs = main_body(mod)
    main, helper = funcs["main"], funcs["helper"]
    ops = [o.operation for o in main.regions[0].blocks[0].operations]
    with ctx:
        # ops[0] is the plain add at unknown location
        for op, (method, _, want) in zip(ops[1:], KINDS):
            assert op.name == f"mhlo.{method}"
            if want is None:
                continue
            assert op.location == want(ir), (method, str(op.location))
        ctx_loc = ir.Location.file("ctx.py", 30, 2)
        call, const, reduce_ = ops[1 + len(KINDS):1 + len(KINDS) + 3]
        assert (call.name, const.name, reduce_.name) == ("func.call", "mhlo.constant",
                                                         "mhlo.reduce")
        assert call.location == const.location == reduce_.location == ctx_loc
        # ops built inside the region inherit the builder's location
        inner = [o.operation for o in reduce_.regions[0].blocks[0].operations]
        assert [o.location for o in inner] == [ctx_loc, ctx_loc]
        assert main.location == ir.Location.file("main.py", 2, 3)
        assert [a.location for a in main.regions[0].blocks[0].arguments] == [
            ir.Location.file("args.py", 10, 1), ir.Location.name("y")]
        assert helper.location == ir.Location.fused([ir.Location.name("helper"),
                                                     ir.Location.file("helper.py", 4, 5)])
        assert [a.location for a in helper.regions[0].blocks[0].arguments] == [
            ir.Location.name("h_arg")]
        assert mod.operation.location == ir.Location.name(
            "the_module", childLoc=ir.Location.file("mod.py", 1, 1))


@pytest.mark.parametrize("mode", MODES)
def test_unknown_locations_are_not_printed(mode):
    # MLIR gives an op without a location the position of its text ("-":line:col).
    m, _ = build()
    text = m.to_text(locations=mode)
    assert "unknown" not in text
    mod = parse(text)
    ops = [o.operation for o in main_body(mod)["main"].regions[0].blocks[0].operations]
    floor = ops[1 + [k[0] for k in KINDS].index("floor")]
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if '"mhlo.floor"' in ln)
    assert floor.location.filename == "-"
    assert floor.location.start_line == line
    first = ops[0]
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if '"mhlo.add"' in ln)
    assert (first.location.filename, first.location.start_line) == ("-", line)


def test_inline_and_alias_forms_mean_the_same_module():
    m, _ = build()
    inline, alias = parse(m.to_text()), parse(m.to_text(locations="alias"))
    asm = [x.operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
           for x in (inline, alias)]
    assert asm[0] == asm[1]
    assert "model.py" in asm[0] and "only-meta" in asm[0]


def test_alias_form_defines_each_location_once_and_uses_only_defined_aliases():
    m, _ = build()
    text = m.to_text(locations="alias")
    body, _, trailer = text.partition("\n#loc")
    trailer = "#loc" + trailer
    defs = re.findall(r"^(#loc\d*) = loc\((.*)\)$", trailer, re.M)
    assert len(defs) == len(trailer.strip().splitlines())
    names = [n for n, _ in defs]
    assert len(set(names)) == len(names)
    assert len({t for _, t in defs}) == len(defs)              # each location once
    used = set(re.findall(r"loc\((#loc\d*)\)", body))
    assert used == set(names)
    assert "loc(\"" not in body                                # nothing inline in the body
    # Known, distinct locations: the KINDS (one repeats, one unknown), module, 2 functions,
    # 3 block arguments, helper.py:5:1 and ctx.py:30:2.
    assert len(defs) == (len(KINDS) - 2) + 1 + 2 + 3 + 2


def test_no_locations_at_all_when_disabled():
    m, _ = build()
    text = m.to_text(locations=False)
    assert "loc(" not in text and "#loc" not in text
    mod = parse(m.to_text())
    assert mod.operation.get_asm(print_generic_op_form=True) == normalize_hex(text)


# -- XLA -------------------------------------------------------------------------------------

def _hlo_text(text) -> tuple:
    from jaxlib import _hlo
    from jaxlib import xla_client as xc
    comp = xc._xla.mlir.mlir_module_to_xla_computation(text)
    options = _hlo.HloPrintOptions.short_parsable()
    options.print_metadata = True
    return comp.get_hlo_module().to_string(options), comp.as_serialized_hlo_module_proto()


def _metadata(hlo_text) -> dict:
    """{opcode: metadata text} of the entry computation's instructions."""
    out = {}
    for line in hlo_text.splitlines():
        mt = re.search(r"= \S+ ([a-z-]+)\(.*?(?:metadata=\{(.*)\})?$", line)
        if mt:
            out.setdefault(mt.group(1), []).append(mt.group(2) or "")
    return out


@pytest.mark.parametrize("mode", MODES)
def test_file_and_line_reach_xla_op_metadata(mode):
    m, _ = build()
    text = m.to_text(locations=mode)
    hlo_text, proto = _hlo_text(text)
    md = _metadata(hlo_text)
    (add,) = [x for x in md["add"] if "model.py" in x]
    assert 'source_file="model.py" source_line=17' in add and "source_column=5" in add
    assert md["ceil"] == [add]
    assert md["multiply"] == ['op_name="just_a_name"']
    assert 'op_name="jit(f)/sub"' in md["subtract"][0]
    # A name with a file child travels as a stack frame: the file and line are in its tables.
    assert "stack_frame_id=" in md["subtract"][0]
    assert re.search(r'^\d+ "other.py"$', hlo_text, re.M)
    assert re.search(r"line=23 .*column=9", hlo_text)
    assert 'op_name="nm" source_file="fused.py" source_line=7' in md["abs"][0]
    assert 'op_name="m2" source_file="meta.py" source_line=8' in md["exponential"][0]
    assert 'op_name="outer"' in md["cosine"][0]
    assert re.search(r'^\d+ "deep.py"$', hlo_text, re.M)
    # An op without a location is known to XLA by its place in our text ("-" is MLIR's name
    # for the parsed buffer), since unknown locations are not printed.
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if '"mhlo.floor"' in ln)
    assert md["floor"][0].startswith(f'source_file="-" source_line={line} ')
    assert b"model.py" in proto and b"fused.py" in proto


def test_unusual_file_names_reach_xla_unchanged():
    name = 'dir/m\u00f3del "q" \\ \U0001F600.py'
    m = hlo.Module("m")
    f = m.add_function("main", [T], visibility="public")
    b = f.builder()
    with b.at_location(name, 12, 3):
        y = b.add(f.arguments[0], f.arguments[0])
    b.return_(y)
    for mode in (True, "alias"):
        hlo_text, proto = _hlo_text(m.to_text(locations=mode))
        assert name.encode("utf-8") in proto
        assert "source_line=12" in _metadata(hlo_text)["add"][0]


# -- block argument locations ----------------------------------------------------------------

def test_block_argument_locations_on_a_function():
    ir, ctx = mlir()
    m = hlo.Module()
    f = hlo.Function("f", [T, T, T], arg_locations=[
        hlo.UNKNOWN, F("a.py", 1, 2), hlo.CallSiteLoc(hlo.NameLoc("c"), F("b.py", 3, 4))])
    m.insert(f)
    b = f.builder()
    b.return_(b.add(f.arguments[1], f.arguments[2]))
    assert [a.location for a in f.arguments][1] == F("a.py", 1, 2)
    for mode in (True, "alias"):
        text = m.to_text(locations=mode)
        verify.check(text)
        mod = parse(text)
        args = list(main_body(mod)["f"].regions[0].blocks[0].arguments)
        with ctx:
            assert args[1].location == ir.Location.file("a.py", 1, 2)
            assert args[2].location == ir.Location.callsite(ir.Location.name("c"),
                                                            [ir.Location.file("b.py", 3, 4)])
        assert args[0].location.filename == "-"   # unknown: MLIR uses the text position


def test_mismatched_argument_locations_are_rejected():
    with pytest.raises((hlo.IRError, ValueError, TypeError)):
        hlo.Function("f", [T, T], arg_locations=[F("a.py", 1, 2)])




def test_a_rendered_location_keeps_its_text_without_changing_equality():
    """Locations keep their rendered text (chains are shared by many ops): that cache is not
    part of equality, hashing, repr or what a copy prints."""
    import pickle
    mk = lambda: hlo.NameLoc("jit(f)/add", hlo.CallSiteLoc(  # noqa: E731
        hlo.NameLoc("g", F("a.py", 3, 4, end_column=9)), F("b.py", 5, 6)))
    a, b = mk(), mk()
    text = a.render()
    assert text == ('"jit(f)/add"(callsite("g"("a.py":3:4 to :9) at "b.py":5:6))')
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
    assert a.render() is text and b.render() == text
    c = pickle.loads(pickle.dumps(a))
    assert c == a and c.render() == text
    assert hlo.NameLoc("x\n\"y").render() == r'"x\0A\22y"'
