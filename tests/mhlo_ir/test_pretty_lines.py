"""Line templates of the custom-form printer (``mhlo_ir.pretty_lines``): a template made from
one op prints every later op of its kind, types and attributes as the form itself would.

Oracles: MLIR's default print (the bindings in jaxlib) of our generic text, for ops MLIR
prints in custom form; and, for generated programs over the whole op table, the printer with
templates turned off and no kept texts (the form's own path, which test_pretty_forms checks
against MLIR op by op).
"""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir import pretty_lines, print_caches, printer
from tests import oracle

DIALECTS = [hlo.MHLO, hlo.STABLEHLO]


def _mlir_pretty(m, dialect) -> str:
    return str(oracle.parse(m.to_text(locations=False, dialect=dialect)))


def _mixed_module():
    """Ops whose templates a first op of their kind makes for later ones: operands given
    twice, in either order, other attribute values, variadic operands, constants."""
    t = hlo.tensor((2, 3), hlo.f32)
    m = hlo.Module("templates")
    f = m.add_function("main", [t, t], visibility="public")
    b = f.builder()
    x, y = f.arguments
    twice = b.add(x, x)  # the first add: one value for both operands
    s = b.add(x, y)
    r = b.add(y, twice)
    lt = b.compare(s, r, "LT")
    gt = b.compare(s, r, "GT")
    ge = b.compare(r, r, "GE", "FLOAT")
    sel = b.select(lt, s, s)
    sel2 = b.select(gt, r, s)
    sel3 = b.select(ge, s, r)
    c = b.concatenate([sel, sel, sel2], 0)
    c2 = b.concatenate([sel3, sel2, sel], 0)
    one = b.constant(1.0, shape=(2, 3))
    two = b.constant(2.0, shape=(2, 3))
    half = b.constant(np.float32(0.5))
    m2 = b.multiply(b.add(one, two), b.broadcast_in_dim(half, (2, 3), []))
    b.return_(c, c2, m2, b.negate(b.negate(m2)))
    return m


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_templates_print_as_mlir_does(dialect):
    m = _mixed_module()
    want = _mlir_pretty(m, dialect)
    for _ in range(2):  # the second print takes every line from kept templates
        assert oracle.normalize_hex(m.to_text(locations=False, dialect=dialect,
                                              pretty=True)) == want


def test_an_operand_given_twice_makes_the_template_from_a_copy(monkeypatch):
    # A template marked on subtract(%0, %0) itself could not tell which name goes where: it is
    # marked on a copy whose operands are distinct, so it serves later subtracts of two
    # values in either order, whichever comes first; and one template serves them all.
    made = []
    real = pretty_lines.template
    monkeypatch.setattr(pretty_lines, "template", lambda pr, op, *top: made.append(
        real(pr, op, *top)) or made[-1])
    monkeypatch.setattr(print_caches, "_SHARED", {})
    t = hlo.tensor((2,), hlo.i32)
    for first_twice in (True, False):
        m = hlo.Module("twice")
        f = m.add_function("main", [t, t], visibility="public")
        b = f.builder()
        x, y = f.arguments
        pairs = [(x, x), (x, y), (y, x)] if first_twice else [(y, x), (x, x), (x, y)]
        b.return_(*[b.subtract(p, q) for p, q in pairs])
        text = m.to_text(locations=False, pretty=True)
        assert text == _mlir_pretty(m, hlo.MHLO)
        for p, q in pairs:
            names = {x: "%arg0", y: "%arg1"}
            assert f"mhlo.subtract {names[p]}, {names[q]} :" in text
    made = [t for t in made if t and t[1][0].startswith("mhlo.subtract")]  # (not the return's)
    assert len(made) == 1 and made[0][2] == (0, 1), made


def test_attribute_mappings_made_and_dropped_between_prints_never_share_a_template():
    # Templates are keyed by the attribute mapping's identity and keep it alive, so a new
    # mapping cannot take the id (and the text) of one printed and dropped before. Constants
    # of more than 16 elements get a mapping of their own each; plain dicts are kept for one
    # print only.
    t = hlo.tensor((3,), hlo.f32)
    for i in range(60):
        m = hlo.Module("ids")
        f = m.add_function("main", [t, t], visibility="public")
        b = f.builder()
        x, y = f.arguments
        c = b.constant(np.arange(i, i + 20, dtype=np.int32))
        direction = ("EQ", "NE", "LT", "LE", "GT", "GE")[i % 6]
        d = b.compare(x, y, direction)
        d.attributes = dict(d.attributes)
        b.return_(c, d)
        text = m.to_text(locations=False, pretty=True)
        assert f"dense<[{i}, {i + 1}, " in text and f"mhlo.compare {direction}, " in text
        if i % 10 == 0:
            assert text == _mlir_pretty(m, hlo.MHLO)
        del m, f, b, x, y, c, d


def test_template_refuses_what_it_cannot_reproduce():
    t = hlo.tensor((4,), hlo.f32)
    m = hlo.Module("refused")
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    big = b.constant(np.arange(4096, dtype=np.float32))  # its text is not kept
    # A form with a region it prints (a reduce's body other than one op MLIR names)
    red = b.reduce(x, b.constant(np.float32(0)), [0], lambda r, a, c: r.subtract(a, c))
    b.return_(b.add(big, big), red)
    p = printer._Printer(hlo.MHLO, False, 16, pretty=True)
    from mhlo_ir import ssa_names
    ssa_names.number_pretty(p, m)
    ops = f.entry_block.operations
    assert pretty_lines.template(p, ops[0]) is False  # 4096 elements of hex
    assert pretty_lines.template(p, ops[2]) is False  # reduce, its region spelled out
    twice = pretty_lines.template(p, ops[3])  # add %0, %0: marked on a copy
    assert twice[:3] == (pretty_lines.PAIR, ("mhlo.add ", ", ", " : tensor<4096xf32>"), (0, 1))
    shape, lits, idx, _ = pretty_lines.template(p, ops[1])  # constant 0.0
    assert (shape, idx) == (pretty_lines.NONE, ()) and lits[0].startswith("mhlo.constant ")


def _form_path(m, **kw) -> str:
    """``m`` printed with templates off and nothing kept from earlier prints."""
    saved_template, saved_shared = pretty_lines.template, print_caches._SHARED
    pretty_lines.template = lambda pr, op, top=False: None
    print_caches._SHARED = {}
    try:
        return m.to_text(pretty=True, **kw)
    finally:
        pretty_lines.template, print_caches._SHARED = saved_template, saved_shared


def test_generated_programs_print_as_the_forms_themselves_print_them():
    """Programs over the whole op table, printed twice each in this order and then again in
    reverse (templates made by one program serve the next), with and without locations and in
    both dialects: each text is the one the form path gives."""
    from mhlo_ir import strategies as hst
    options = hst.default_options(12)
    variants = [dict(locations=False), dict(locations="alias"), dict(locations=True),
                dict(locations=False, dialect=hlo.STABLEHLO)]
    modules = [hst.generate_seeded(seed, options).module for seed in range(120)]
    want = {}
    for order in (modules, modules[::-1]):
        for i, m in enumerate(order):
            for j, kw in enumerate(variants):
                try:
                    ours = m.to_text(pretty=True, **kw)
                except hlo.OpBuildError:  # an op the dialect lacks: refused either way
                    with pytest.raises(hlo.OpBuildError):
                        _form_path(m, **kw)
                    continue
                key = (id(m), j)
                if key not in want:
                    want[key] = _form_path(m, **kw)
                assert ours == want[key], (i, kw)


def test_equal_types_that_are_different_objects_print_alike():
    # Tuple and token types are not interned: a parsed copy's result is a new TupleType equal
    # to its operand's. The form spells a copy's type once when they are equal (as MLIR,
    # whose types are uniqued), so a template made by either op serves the other.
    s = hlo.tensor((), hlo.f32)
    parsed_text = """module {
  func.func public @main(%arg0: tuple<tensor<f32>>) -> tuple<tensor<f32>> {
    %0 = "mhlo.copy"(%arg0) : (tuple<tensor<f32>>) -> tuple<tensor<f32>>
    "func.return"(%0) : (tuple<tensor<f32>>) -> ()
  }
}"""
    for parsed_first in (True, False):
        print_caches._SHARED.clear()  # no template from an earlier test: this order decides
        parsed = hlo.parse(parsed_text)
        built = hlo.Module("built")
        f = built.add_function("main", [hlo.tuple_type([s])], visibility="public")
        b = f.builder()
        b.return_(b.copy(f.arguments[0]))
        copy = parsed.functions[0].entry_block.operations[0]
        assert copy.type == copy.operands[0].type and copy.type is not copy.operands[0].type
        for m in ((parsed, built) if parsed_first else (built, parsed)):
            text = m.to_text(locations=False, pretty=True)
            assert "mhlo.copy %arg0 : tuple<tensor<f32>>\n" in text
            assert text == _mlir_pretty(m, hlo.MHLO)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_a_big_constant_prints_its_hex_as_mlir_does(dialect):
    # Past the hex threshold a constant's data prints as one hex piece, in the custom form
    # as in the generic one (MLIR prints large data in hex too, upper case).
    m = hlo.Module("big")
    f = m.add_function("main", [], visibility="public")
    b = f.builder()
    data = np.arange(5000, dtype=np.float32) * np.float32(0.25) - 7
    b.return_(b.constant(data), b.constant(data.astype(np.int8)))
    text = m.to_text(locations=False, dialect=dialect, pretty=True)
    assert f'dense<"0x{data.tobytes().hex()}"> : tensor<5000xf32>' in text
    assert oracle.normalize_hex(text) == _mlir_pretty(m, dialect)
    back = hlo.parse(text)
    assert back.to_text(locations=False, dialect=dialect, pretty=True) == text


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_reductions_that_apply_their_body_print_from_templates(dialect, monkeypatch):
    """A reduce whose body its line names (``applies mhlo.add``) prints from a template keyed
    by its body's recipe too: a body of another op, or one spelled out (not commutative, its
    arguments swapped), prints as the form prints it, as MLIR does."""
    made = []
    real = pretty_lines.template
    monkeypatch.setattr(pretty_lines, "template", lambda pr, op, *top: made.append(
        op.spec.name) or real(pr, op, *top))
    monkeypatch.setattr(print_caches, "_SHARED", {})  # (templates outlive a print: start from none)
    m = hlo.Module("reductions")
    f = m.add_function("main", [hlo.tensor((4, 6), hlo.f32)])
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    outs = [b.reduce(x, zero, [1], "add"), b.reduce(x, zero, [1], "add"),
            b.reduce(x, zero, [1], "maximum"), b.reduce(x, zero, [1], "add"),
            b.reduce(x, zero, [1], lambda r, a, c: r.subtract(a, c)),
            b.reduce(x, zero, [1], lambda r, a, c: r.add(c, a)),
            b.reduce(x, zero, [0], "add"), b.reduce(x, zero, [1], "maximum")]
    b.return_(*outs)
    want = _mlir_pretty(m, dialect)
    assert want.count("applies") == 6
    for _ in range(2):
        assert oracle.normalize_hex(m.to_text(locations=False, dialect=dialect,
                                              pretty=True)) == want
        for kw in (dict(locations=True), dict(locations="alias")):
            assert m.to_text(pretty=True, dialect=dialect, **kw) == _form_path(
                m, dialect=dialect, **kw)
    # One template asked for a kind, body and dimensions (add, maximum, add over [0], and the
    # subtracting body, which makes none; the swapped body is no combining block), none asked
    # again in later prints.
    assert made.count("reduce") == 4, made


@pytest.mark.parametrize("dialect", [hlo.MHLO, hlo.STABLEHLO])
def test_returns_print_from_templates_in_bodies_and_regions_as_mlir_prints_them(dialect):
    """A function's ``return`` and a region's ``mhlo.return`` (one template each, the
    function's spelled without ``func.``), of no, one, several and repeated operands: as
    MLIR prints them, and as the forms print them with locations too, printed twice."""
    t = hlo.tensor((3,), hlo.i32)
    m = hlo.Module("returns")
    f = m.add_function("main", [t, t], visibility="public")
    b = f.builder()
    x, y = f.arguments
    w = b.while_([x, y], lambda r, a, c: r.compare(r.reduce(a, r.constant(np.int32(0)), [0],
                                                             "add"),
                                                    r.constant(np.int32(9)), "LT"),
                 lambda r, a, c: [r.add(a, c), c])
    b.return_(w[0], w[0], y)
    g = m.add_function("two", [t], visibility="private")
    g.builder().return_(g.arguments[0])
    h = m.add_function("none", [], visibility="private")
    h.builder().return_()
    want = _mlir_pretty(m, dialect)
    assert "return %0#0, %0#0, %arg1 :" in want
    for _ in range(2):
        assert m.to_text(locations=False, dialect=dialect, pretty=True) == want
        for kw in (dict(locations=True), dict(locations="alias")):
            assert m.to_text(pretty=True, dialect=dialect, **kw) == _form_path(
                m, dialect=dialect, **kw)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_function_heads_print_from_kept_heads_as_mlir_prints_them(dialect, monkeypatch):
    """A function's head without attribute dictionaries or argument locations is kept by
    its name, visibility and types; functions of the same name and types with attributes,
    argument locations or another visibility print their own heads, in either order."""
    monkeypatch.setattr(print_caches, "_SHARED", {})
    t, u = hlo.tensor((2,), hlo.f32), hlo.tensor((3,), hlo.i32)

    def module(variant):
        kw = dict(visibility="public") if variant == "public" else {}
        if variant == "arg_attrs":
            kw["arg_attrs"] = [{"mhlo.sharding": "{replicated}"}, {}]
        elif variant == "res_attrs":
            kw["res_attrs"] = [{"jax.result_info": "out"}]
        elif variant == "attributes":
            kw["attributes"] = {"tag.k": 1}
        elif variant == "arg_location":
            kw["arg_locations"] = [hlo.loc("a.py", 3, 4), hlo.UNKNOWN]
        m = hlo.Module("heads")
        f = m.add_function("main" if variant != "renamed" else "other", [t, u], **kw)
        b = f.builder()
        x, y = f.arguments
        b.return_(b.negate(x))
        return m
    variants = ["plain", "public", "arg_attrs", "res_attrs", "attributes", "arg_location",
                "renamed"]
    for order in (variants, variants[::-1]):
        for variant in order:
            m = module(variant)
            text = m.to_text(locations=False, dialect=dialect, pretty=True)
            assert text == _mlir_pretty(m, dialect), variant
            located = m.to_text(dialect=dialect, pretty=True)
            assert located == _form_path(m, dialect=dialect), variant
            assert ('"a.py":3:4' in located) == (variant == "arg_location")
