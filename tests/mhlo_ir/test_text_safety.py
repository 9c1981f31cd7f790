"""User-chosen strings can never change the structure of a printed module.

Every place a user's string reaches the text (function and module names, string attributes,
attribute names and dictionary keys, custom_call targets and backend configs, location names,
file names and fused-location metadata) is fuzzed with strings full of MLIR punctuation,
escapes, newlines, NUL and astral characters. MLIR itself is the oracle: it must parse our text,
read back exactly the Python string we gave, see the same op tree we built, and (without
locations) re-print our text unchanged. Strings MLIR cannot hold must be refused in Python.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mhlo_ir as hlo
from tests.oracle import _context, assert_fixed_point, normalize_hex, parse

T = hlo.tensor((2,), hlo.f32)

# Characters that mean something to MLIR's lexer, plus escapes, controls and non-ASCII.
PUNCT = list('"\\\n\r\t\x00\x7f\x1b }{)(][><%@#^!:=,;.$-_/\'`*&|~?+ ')
# Whole fragments of MLIR syntax, so an escaping slip would splice real structure in.
FRAGMENTS = ["\\00", "\\22", '\\"', "\\\\", '" = "', '"}', "loc(", "#loc0", "%0", "%arg0",
             "@main", "^bb0", "}) : () -> ()", '\n"func.return"() : () -> ()\n', "unit", "true"]
CHARS = st.one_of(
    st.sampled_from(PUNCT),
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),                   # printable ASCII
    st.characters(codec="utf-8"),                                            # any but surrogates
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),            # astral
    st.sampled_from(["é", "ß", "中", "\u200b", "\ufeff", "\U0001F600", "\U0010FFFF"]),
)
PIECES = st.one_of(CHARS, st.sampled_from(FRAGMENTS))
FREE = st.lists(PIECES, min_size=1, max_size=16).map("".join)
# MLIR prints names that are bare identifiers without quotes: hit that boundary from both sides.
IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_$.]{0,8}", fullmatch=True)
NEAR_IDENT = st.tuples(IDENT, st.one_of(st.sampled_from(["-", "0", "é", "$", "."]), PIECES),
                       st.one_of(st.just(""), IDENT)).map("".join)
NONEMPTY = st.one_of(FREE, IDENT, NEAR_IDENT, st.sampled_from(["0", "1a", "$a", ".a", "-"]))
STRINGS = st.one_of(st.just(""), NONEMPTY)


def mlir():
    """(ir, ctx) of the test oracle."""
    return _context()


# -- structure: the op tree we built vs the op tree MLIR parsed -------------------------------

def _our_region(region):
    return [(len(b.arguments),
             [(op.spec.full_name(hlo.MHLO), [_our_region(r) for r in op.regions])
              for op in b.operations])
            for b in region.blocks]


def our_tree(m):
    return [("func.func", [_our_region(fn.body)]) for fn in m.functions]


def _their_region(region):
    return [(len(b.arguments),
             [(o.operation.name, [_their_region(r) for r in o.operation.regions])
              for o in b.operations])
            for b in region]


def their_tree(mod):
    return [(o.operation.name, [_their_region(r) for r in o.operation.regions])
            for o in mod.body.operations]


def check_structure(m, mod):
    assert their_tree(mod) == our_tree(m)
    assert len(list(mod.body.operations)) == len(m.functions)


def func_ops(mod):
    """{sym_name: func op} of a parsed module."""
    ir, _ = mlir()
    return {ir.StringAttr(f.operation.attributes["sym_name"]).value: f.operation
            for f in mod.body.operations}


def body(func_op):
    return [o.operation for o in func_op.regions[0].blocks[0].operations]


def named_attrs(op) -> dict:
    """The op's attributes (properties and discardable) as {name: Attribute}."""
    attrs = op.attributes
    return {attrs[i].name: attrs[i].attr for i in range(len(attrs))}


def simple_module(name="m"):
    m = hlo.Module(name)
    f = m.add_function("main", [T], visibility="public")
    return m, f, f.builder(), f.arguments[0]


# -- names ----------------------------------------------------------------------------------

@given(name=NONEMPTY)
def test_function_name_and_call_read_back_exactly(name):
    ir, _ = mlir()
    m = hlo.Module("m")
    g = m.add_function(name, [T], visibility="private", exact=True)
    gb = g.builder()
    gb.return_(gb.negate(g.arguments[0]))
    f = m.add_function("main", [T], visibility="public")
    b = f.builder()
    y = b.call(g, [f.arguments[0]])
    b.return_(b.add(y, f.arguments[0]))
    assert g.name == name  # added first, so a "main" helper makes main itself "main_0"
    mod = parse(m.to_text())
    check_structure(m, mod)
    funcs = func_ops(mod)
    assert set(funcs) == {g.name, f.name}
    call = body(funcs[f.name])[0]
    assert call.name == "func.call"
    assert ir.FlatSymbolRefAttr(call.attributes["callee"]).value == g.name
    assert_fixed_point(m)


@given(name=NONEMPTY)
def test_uniquified_function_names_stay_distinct(name):
    ir, _ = mlir()
    m = hlo.Module()
    fns = []
    for _ in range(3):
        fn = m.add_function(name, [T], visibility="private")
        fn.builder().return_(fn.arguments[0])
        fns.append(fn)
    main = m.add_function("main", [T], visibility="public")
    b = main.builder()
    v = main.arguments[0]
    for fn in fns:
        v = b.call(fn, [v])
    b.return_(v)
    assert len({fn.name for fn in m.functions}) == 4
    mod = parse(m.to_text())
    check_structure(m, mod)
    callees = [ir.FlatSymbolRefAttr(c.attributes["callee"]).value
               for c in body(func_ops(mod)[main.name])[:-1]]
    assert callees == [fn.name for fn in fns]
    assert_fixed_point(m)


@given(name=STRINGS)
def test_module_name_reads_back_exactly(name):
    ir, _ = mlir()
    m, f, b, x = simple_module(name)
    b.return_(b.add(x, x))
    mod = parse(m.to_text())
    check_structure(m, mod)
    assert ir.StringAttr(mod.operation.attributes["sym_name"]).value == name
    assert_fixed_point(m)


# -- string attributes and attribute names --------------------------------------------------

@given(s=STRINGS, t=STRINGS)
def test_string_attributes_read_back_exactly(s, t):
    ir, _ = mlir()
    m, f, b, x = simple_module()
    y = b.add(x, x)
    op = y.owner
    op.set_attr("my.attr", s)
    op.set_attr("my.list", [s, t, s])
    op.set_attr("my.dict", {"k": s, "l": [t]})
    m.set_attr("my.module_attr", t)
    f.attributes["my.func_attr"] = hlo.StringAttr(s)
    b.return_(y)
    mod = parse(m.to_text())
    check_structure(m, mod)
    add = body(func_ops(mod)["main"])[0]
    got = named_attrs(add)
    assert set(got) == {"my.attr", "my.list", "my.dict"}
    assert ir.StringAttr(got["my.attr"]).value == s
    assert [ir.StringAttr(a).value for a in ir.ArrayAttr(got["my.list"])] == [s, t, s]
    d = ir.DictAttr(got["my.dict"])
    assert len(d) == 2
    assert ir.StringAttr(d["k"]).value == s
    assert [ir.StringAttr(a).value for a in ir.ArrayAttr(d["l"])] == [t]
    assert ir.StringAttr(mod.operation.attributes["my.module_attr"]).value == t
    assert ir.StringAttr(func_ops(mod)["main"].attributes["my.func_attr"]).value == s
    assert_fixed_point(m)


@given(keys=st.lists(NONEMPTY, min_size=1, max_size=8, unique=True))
def test_attribute_names_and_dictionary_keys_read_back_exactly(keys):
    ir, _ = mlir()
    m, f, b, x = simple_module()
    y = b.add(x, x)
    op = y.owner
    for i, k in enumerate(keys):
        op.set_attr(k, i)                       # discardable attribute names
    op.set_attr("~dict", {k: f"v{i}" for i, k in enumerate(keys)})
    op.set_attr("~nested", {k: {k: k} for k in keys})
    b.return_(y)
    mod = parse(m.to_text())
    check_structure(m, mod)
    got = named_attrs(body(func_ops(mod)["main"])[0])
    assert set(got) == set(keys) | {"~dict", "~nested"}
    for i, k in enumerate(keys):
        assert ir.IntegerAttr(got[k]).value == i
    d = ir.DictAttr(got["~dict"])
    assert len(d) == len(keys)
    nested = ir.DictAttr(got["~nested"])
    for i, k in enumerate(keys):
        assert ir.StringAttr(d[k]).value == f"v{i}"
        assert ir.StringAttr(ir.DictAttr(nested[k])[k]).value == k
    assert_fixed_point(m)


@given(s=STRINGS, key=NONEMPTY)
def test_function_argument_and_result_attributes_read_back_exactly(s, key):
    ir, _ = mlir()
    m = hlo.Module("m")
    f = m.add_function("main", [T, T], visibility="public")
    b = f.builder()
    x0, x1 = f.arguments
    b.return_(b.add(x0, x1))
    # MLIR only allows dialect attributes ("dialect.name") on arguments and results.
    f.set_arg_attr(1, "my.arg", s)
    f.set_arg_attr(1, "my." + key, key)
    f.set_result_attr(0, "my.res", s)
    mod = parse(m.to_text())
    check_structure(m, mod)
    fn = func_ops(mod)["main"]
    arg_attrs = ir.ArrayAttr(fn.attributes["arg_attrs"])
    assert len(arg_attrs) == 2 and len(ir.DictAttr(arg_attrs[0])) == 0
    a1 = ir.DictAttr(arg_attrs[1])
    assert ir.StringAttr(a1["my.arg"]).value == s
    assert ir.StringAttr(a1["my." + key]).value == key
    assert len(a1) == (1 if key == "arg" else 2)
    res = ir.DictAttr(ir.ArrayAttr(fn.attributes["res_attrs"])[0])
    assert ir.StringAttr(res["my.res"]).value == s
    assert_fixed_point(m)


# -- custom_call -----------------------------------------------------------------------------

TARGETS = STRINGS.filter(lambda t: not t.startswith("$"))  # '$' targets are XLA's own


@given(target=TARGETS, config=TARGETS, api=st.sampled_from([None, 1, 2, 3]))
def test_custom_call_string_config_reads_back_exactly(target, config, api):
    ir, _ = mlir()
    m, f, b, x = simple_module()
    y = b.custom_call(target, [x], T, backend_config=config, api_version=api)
    z = b.custom_call(config, [y], T, has_side_effect=True)
    b.return_(z)
    mod = parse(m.to_text())
    check_structure(m, mod)
    c1, c2, _ = body(func_ops(mod)["main"])
    assert ir.StringAttr(c1.attributes["call_target_name"]).value == target
    assert ir.StringAttr(c1.attributes["backend_config"]).value == config
    assert ir.StringAttr(c2.attributes["call_target_name"]).value == config
    assert_fixed_point(m)


@given(config=st.dictionaries(NONEMPTY, STRINGS, max_size=6), target=TARGETS)
def test_custom_call_dict_config_reads_back_exactly(config, target):
    ir, _ = mlir()
    m, f, b, x = simple_module()
    y = b.custom_call(target, [x], T, backend_config=config, api_version=4)
    b.return_(y)
    mod = parse(m.to_text())
    check_structure(m, mod)
    c = body(func_ops(mod)["main"])[0]
    assert ir.StringAttr(c.attributes["call_target_name"]).value == target
    assert ir.IntegerAttr(c.attributes["api_version"]).value == 4
    d = ir.DictAttr(c.attributes["backend_config"])
    assert len(d) == len(config)
    for k, v in config.items():
        assert ir.StringAttr(d[k]).value == v
    assert_fixed_point(m)


# -- locations -------------------------------------------------------------------------------

# MLIR stores unsigned 32-bit lines and columns; its Python bindings only take signed ones.
LINES = st.integers(0, 2**31 - 1)


@settings(max_examples=30)
@given(name=STRINGS, filename=NONEMPTY, meta=STRINGS, line=LINES, col=LINES)
def test_location_strings_read_back_exactly(name, filename, meta, line, col):
    ir, ctx = mlir()
    m, f, b, x = simple_module()
    file_loc = hlo.FileLineColLoc(filename, line, col)
    with b.at_location(filename, line, col):
        y0 = b.add(x, x)                                             # FileLineColLoc
    with b.at_location(name):
        y1 = b.multiply(y0, x)                                       # NameLoc
    y2 = b.subtract(y1, x, location=hlo.NameLoc(name, file_loc))    # NameLoc with child
    y3 = b.negate(y2, location=hlo.CallSiteLoc(hlo.NameLoc(name), file_loc))
    y4 = b.abs(y3, location=hlo.FusedLoc([file_loc, hlo.NameLoc(meta)], metadata=meta))
    y5 = b.tanh(y4, location=hlo.FusedLoc([hlo.NameLoc(name), hlo.NameLoc(filename)]))
    b.return_(y5)
    with ctx:
        mfile = ir.Location.file(filename, line, col)
        expected = [
            mfile,
            ir.Location.name(name),
            ir.Location.name(name, childLoc=mfile),
            ir.Location.callsite(ir.Location.name(name), [mfile]),
            ir.Location.fused([mfile, ir.Location.name(meta)], metadata=ir.StringAttr.get(meta)),
            ir.Location.fused([ir.Location.name(name), ir.Location.name(filename)]),
        ]
    plain = normalize_hex(m.to_text(locations=False))
    for mode in (True, "alias"):
        mod = parse(m.to_text(locations=mode))
        check_structure(m, mod)
        ops = body(func_ops(mod)["main"])
        for op, want in zip(ops, expected):
            assert op.location == want, (mode, str(op.location), str(want))
        # Stripped of debug info, MLIR's view of the module is our location-free text.
        assert mod.operation.get_asm(print_generic_op_form=True) == plain
    with ctx:
        got = ops[0].location
        assert got.filename == filename and got.start_line == line and got.start_col == col
        assert ops[1].location.name_str == name
        assert ir.StringAttr(ops[4].location.metadata).value == meta
    assert_fixed_point(m)


@settings(max_examples=20)
@given(modname=STRINGS, fname=NONEMPTY, argname=STRINGS)
def test_function_module_and_argument_location_strings_read_back(modname, fname, argname):
    ir, ctx = mlir()
    m = hlo.Module(modname, location=hlo.NameLoc(modname))
    f = m.add_function("main", [T, T], visibility="public",
                       location=hlo.FileLineColLoc(fname, 1, 2),
                       arg_locations=[hlo.NameLoc(argname), hlo.FileLineColLoc(fname, 3, 4)])
    b = f.builder()
    b.return_(b.add(*f.arguments))
    with ctx:
        want_mod = ir.Location.name(modname)
        want_fn = ir.Location.file(fname, 1, 2)
        want_args = [ir.Location.name(argname), ir.Location.file(fname, 3, 4)]
    for mode in (True, "alias"):
        mod = parse(m.to_text(locations=mode))
        check_structure(m, mod)
        fn = func_ops(mod)["main"]
        assert mod.operation.location == want_mod
        assert fn.location == want_fn
        assert [a.location for a in fn.regions[0].blocks[0].arguments] == want_args
    assert_fixed_point(m)


@settings(max_examples=15)
@given(name=NONEMPTY, s=STRINGS, key=NONEMPTY, cfg=st.dictionaries(NONEMPTY, STRINGS, max_size=3))
def test_jaxlib_accepts_modules_full_of_odd_strings(name, s, key, cfg):
    import verify
    m = hlo.Module(s, location=hlo.NameLoc(s))
    g = m.add_function(name, [T], visibility="private", exact=True,
                       location=hlo.FileLineColLoc(name, 1, 2))
    gb = g.builder()
    gb.return_(gb.negate(g.arguments[0]))
    f = m.add_function("main" if name != "main" else "main_", [T], visibility="public",
                       arg_locations=[hlo.FusedLoc([hlo.NameLoc(key)], metadata=s)])
    b = f.builder()
    y = b.call(g, [f.arguments[0]], location=hlo.NameLoc(s, hlo.FileLineColLoc(key, 3, 4)))
    y.owner.set_attr(key, s)
    # Targets starting with '$' are XLA's own; the builder refuses them (test_errors.py).
    c = b.custom_call("_" + name, [y], T, backend_config=s, api_version=2)
    d = b.custom_call("_" + s, [c], T, backend_config=cfg, api_version=4)
    b.return_(d)
    for mode in (True, "alias", False):
        text = m.to_text(locations=mode)
        assert verify.check(text) == text


# -- strings MLIR cannot represent are refused in Python ------------------------------------

def test_empty_function_name_is_rejected():
    m = hlo.Module()
    with pytest.raises(hlo.IRError, match="must not be empty"):
        m.add_function("", [T])


def test_empty_dictionary_key_is_rejected():
    with pytest.raises(TypeError, match="non-empty"):
        hlo.DictionaryAttr({"": 1})
    m, f, b, x = simple_module()
    with pytest.raises(TypeError, match="non-empty"):
        b.custom_call("t", [x], T, backend_config={"": "x"}, api_version=4)


def _set_empty_name(where):
    m, f, b, x = simple_module()
    y = b.add(x, x)
    b.return_(y)
    if where == "op":
        y.owner.set_attr("", "v")
    elif where == "module":
        m.set_attr("", "v")
    elif where == "argument":
        f.set_arg_attr(0, "", "v")
    elif where == "result":
        f.set_result_attr(0, "", "v")
    return m


def test_mlir_rejects_empty_attribute_names():
    # The hand-checked fact the test below relies on: MLIR has no empty attribute name.
    from jaxlib.mlir import ir
    m, f, b, x = simple_module()
    b.return_(x)
    good = m.to_text()
    text = good.replace('"func.return"(%arg0) :', '"func.return"(%arg0) {"" = "v"} :')
    assert text != good
    parse(good)
    with pytest.raises(ir.MLIRError, match="expected valid attribute name"):
        parse(text)


@pytest.mark.parametrize("where", ["op", "module", "argument", "result"])
def test_empty_attribute_name_is_rejected_when_set(where):
    with pytest.raises((hlo.IRError, TypeError, ValueError)):
        _set_empty_name(where)


SURROGATE = "a\ud800b"


def _build_with(where, s):
    m, f, b, x = simple_module()
    if where == "module name":
        m = hlo.Module(s)
        f = m.add_function("main", [T], visibility="public")
        b, x = f.builder(), f.arguments[0]
    elif where == "function name":
        m.add_function(s, [T])
    elif where == "string attribute":
        x = b.add(x, x)
        x.owner.set_attr("my.attr", s)
    elif where == "attribute name":
        x = b.add(x, x)
        x.owner.set_attr(s, 1)
    elif where == "custom_call target":
        x = b.custom_call("_" + s, [x], T)
    elif where == "backend_config":
        x = b.custom_call("t", [x], T, backend_config=s)
    elif where == "name location":
        x = b.add(x, x, location=hlo.NameLoc(s))
    elif where == "file location":
        with b.at_location(s, 1, 2):
            x = b.add(x, x)
    elif where == "fused metadata":
        x = b.add(x, x, location=hlo.FusedLoc([hlo.NameLoc("a")], metadata=s))
    return m


SURROGATE_PLACES = ["module name", "function name", "string attribute", "attribute name",
                    "custom_call target", "backend_config", "name location", "file location",
                    "fused metadata"]


@pytest.mark.parametrize("where", SURROGATE_PLACES)
def test_lone_surrogates_never_reach_the_text(where):
    # Whatever happens, no text with a broken string may come out.
    try:
        m = _build_with(where, SURROGATE)
        m.to_text()
    except (hlo.IRError, TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return
    pytest.fail("a string with a lone surrogate was printed")


@pytest.mark.parametrize("where", SURROGATE_PLACES)
def test_lone_surrogates_are_rejected_when_building(where):
    with pytest.raises((hlo.IRError, TypeError, ValueError)):
        _build_with(where, SURROGATE)


@pytest.mark.parametrize("line,col", [(0, 0), (2**32 - 1, 2**32 - 1)])
def test_file_location_line_and_column_range_limits_accepted(line, col):
    ir, ctx = mlir()
    m, f, b, x = simple_module()
    b.return_(b.add(x, x, location=hlo.FileLineColLoc("f.py", line, col)))
    mod = parse(m.to_text())
    loc = body(func_ops(mod)["main"])[0].location
    assert loc.filename == "f.py"
    assert str(loc) == f'loc("f.py":{line}:{col})'


@pytest.mark.parametrize("line,col", [(-1, 0), (0, -1), (2**32, 0), (0, 2**32)])
def test_file_location_out_of_range_numbers_are_rejected(line, col):
    with pytest.raises((hlo.IRError, TypeError, ValueError)):
        hlo.FileLineColLoc("f.py", line, col)


def test_mlir_stores_an_empty_file_name_as_a_dash():
    # So an empty file name cannot be represented: it reads back as "-", the name MLIR also
    # gives the text buffer it parses (the test below wants it refused).
    ir, ctx = mlir()
    m, f, b, x = simple_module()
    b.return_(b.add(x, x, location=hlo.FileLineColLoc("x.py", 3, 4)))
    text = m.to_text().replace('loc("x.py":3:4)', 'loc("":3:4)')
    assert 'loc("":3:4)' in text
    mod = parse(text)
    loc = body(func_ops(mod)["main"])[0].location
    assert loc.filename == "-"
    with ctx:
        assert loc == ir.Location.file("-", 3, 4)


def test_empty_file_name_is_rejected_only_outside_a_range():
    # MLIR reads "":3:4 as "-":3:4 but keeps "" in a range (test_parse_locations checks
    # both against MLIR): a point with an empty name is refused, a range is kept.
    import verify
    for point in [("", 3, 4), ("", 3, 4, None, 4), ("", 3, 4, 3, 4)]:
        with pytest.raises(ValueError, match="outside a range"):
            hlo.FileLineColLoc(*point)
    m, f, b, x = simple_module()
    y = b.negate(x, location=hlo.NameLoc("f", hlo.FileLineColLoc("", 3, 4, None, 9)))
    z = b.abs(y, location=hlo.FileLineColLoc("", 3, 4, 5, 1))
    b.return_(z)
    for mode in (True, "alias"):
        text = m.to_text(locations=mode)
        assert '"":3:4 to :9' in text and '"":3:4 to 5:1' in text
        assert verify.check(text) == text  # jaxlib re-prints it as it is


@pytest.mark.parametrize("line,col", [(-1, 0), (2**32, 0)])
def test_mlir_rejects_out_of_range_line_numbers(line, col):
    from jaxlib.mlir import ir
    m, f, b, x = simple_module()
    b.return_(b.add(x, x))
    good = m.to_text()
    text = good.replace("  }) : () -> ()\n", f'  }}) : () -> () loc("f.py":{line}:{col})\n', 1)
    assert "f.py" in text
    parse(good)
    with pytest.raises(ir.MLIRError, match="line number"):
        parse(text)
