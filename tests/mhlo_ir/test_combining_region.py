"""A body named by its op is held as its recipe (``mhlo_ir.combining.CombiningRegion``) and
made into a block only when read.

Oracles: the same program built with the body written as a function (eager blocks), printed
in every form the printer has; MLIR's generic re-print (the bindings in jaxlib); jaxlib
running a program whose region was never read, against numpy.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir.combining import CombiningRegion
from mhlo_ir.ops.spec import REGISTRY
from tests import oracle

T = hlo.tensor((4, 6), hlo.f32)
IDX = hlo.tensor((3, 2), hlo.i32)
UPD = hlo.tensor((3,), hlo.f32)
_BODIES = {"add": lambda r, a, c: r.add(a, c), "maximum": lambda r, a, c: r.maximum(a, c),
           "multiply": lambda r, a, c: r.multiply(a, c)}


def _program(named: bool, located: bool = False) -> hlo.Module:
    """Every builder taking a named body, each body named (``named``) or a function."""
    def body(name):
        return name if named else _BODIES[name]
    m = hlo.Module("combining")
    f = m.add_function("main", [T, T, IDX, UPD])
    b = f.builder()
    x, y, idx, upd = f.arguments
    if located:
        b.location = hlo.NameLoc("body", hlo.FileLineColLoc("model.py", 3, 1))
    zero = b.constant(np.float32(0))
    outs = [
        b.reduce(x, zero, [1], body("add"), location=hlo.NameLoc("sum") if located else None),
        b.reduce(y, zero, [0], body("maximum")),
        b.reduce_window(x, zero, [2, 3], body("add"), window_strides=[2, 3]),
        b.all_reduce(x, body("multiply"), [[0]]),
        b.scatter(x, idx, upd, hlo.ScatterDimensionNumbers(
            update_window_dims=(), inserted_window_dims=(0, 1),
            scatter_dims_to_operand_dims=(0, 1), index_vector_dim=1), body("add")),
        b.reduce(b.add(x, y), zero, [0, 1], body("add")),
    ]
    b.return_(*outs)
    return m


def _recipes(m) -> list:
    """The regions of ``m``'s main still held as recipes."""
    return [r for op in m.functions[0].body.blocks[0].operations for r in op.regions
            if r.__class__ is CombiningRegion and not r.made]


FORMS = [dict(locations=False), dict(locations=True), dict(locations="alias"),
         dict(locations="alias", dialect=hlo.STABLEHLO), dict(locations=True, pretty=True),
         dict(locations=False, pretty=True, dialect=hlo.STABLEHLO)]


@pytest.mark.parametrize("kw", FORMS, ids=["plain", "inline", "alias", "stablehlo", "pretty",
                                           "pretty-stablehlo"])
def test_a_recipe_prints_as_the_block_it_stands_for(kw):
    want = _program(named=False, located=True).to_text(**kw)
    m = _program(named=True, located=True)
    generic = not kw.get("pretty")
    assert len(_recipes(m)) == 6
    assert m.to_text(**kw) == want
    # The generic printer writes recipes without making their blocks; the custom form
    # too where it prints a reduce's as ``applies``, and it reads the others' (3 of 6).
    assert len(_recipes(m)) == (6 if generic else 3)
    assert m.to_text(**kw) == want


def test_a_recipes_text_is_mlirs():
    m = _program(named=True)
    oracle.assert_fixed_point(m)
    assert len(_recipes(m)) == 6


def test_reading_some_recipes_leaves_the_numbering_as_it_was():
    """Regions read (blocks made, values named one by one) between regions still recipes:
    SSA names (%argN, %N) run on as if none had been read."""
    want = _program(named=False, located=True)
    for kw in (dict(locations=False), dict(locations="alias")):
        m = _program(named=True, located=True)
        recipes = _recipes(m)
        for r in recipes[1::2]:
            assert len(r.blocks[0].operations) == 2
        assert len(_recipes(m)) == 3
        assert m.to_text(**kw) == want.to_text(**kw)


def test_read_blocks_are_an_ordinary_regions():
    m = hlo.Module("read")
    f = m.add_function("main", [T])
    b = f.builder()
    x, = f.arguments
    b.location = hlo.NameLoc("inner")
    r = b.reduce(x, b.constant(np.float32(0)), [1], "add", location=hlo.NameLoc("op"))
    b.return_(r)
    region = r.owner.regions[0]
    assert isinstance(region, hlo.Region) and region.parent is r.owner
    blocks = region.blocks
    assert region.blocks is blocks and region.block is blocks[0]  # made once
    block = blocks[0]
    assert block.parent is region
    scalar = hlo.tensor((), hlo.f32)
    assert block.arg_types == (scalar, scalar)
    inner, ret = block.operations
    assert inner.spec.name == "add" and inner.operands == block.arguments
    assert inner.type == scalar and inner.parent is block
    assert ret.spec.name == "return" and ret.operands == (inner,) and ret.parent is block
    assert inner.location == ret.location == hlo.NameLoc("inner")
    with pytest.raises(hlo.OpBuildError, match="already ends with 'return'"):
        hlo.Builder(block).add(*block.arguments)
    # An edit of the block read is what prints.
    inner.location = hlo.NameLoc("edited")
    assert 'loc("edited")' in m.to_text()
    assert 'loc("inner")' in m.to_text()  # (the return's)


def test_threads_making_blocks_while_another_prints_or_verifies_change_nothing():
    """The printer and the verifier decide once whether a region is a recipe: another
    thread making its block meanwhile (reading ``blocks``) changes neither text nor
    verdict (a KeyError out of to_text, or a refusal of a valid module, before)."""
    import sys
    want = _program(named=True).to_text()
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(30):
            m = _program(named=True)
            recipes = _recipes(m)
            reader = threading.Thread(target=lambda: [r.blocks for r in recipes])
            reader.start()
            text = m.to_text()
            m.verify()
            reader.join()
            assert text == want
    finally:
        sys.setswitchinterval(saved)


def test_threads_reading_one_recipe_get_one_block():
    for _ in range(20):
        m = _program(named=True)
        region = _recipes(m)[0]
        barrier = threading.Barrier(8)
        seen = []

        def read():
            barrier.wait()
            seen.append(region.blocks)
        threads = [threading.Thread(target=read) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(seen) == 8 and all(s is seen[0] for s in seen)


def test_a_recipe_under_an_op_of_two_results_runs():
    """A named region held by an op the one-piece printer does not take (a while of two
    results: its condition ``and``s the state) prints as its block would, and runs."""
    def build(cond):
        m = hlo.Module("loop")
        p = hlo.tensor((), hlo.i1)
        f = m.add_function("main", [p, p], visibility="public")
        b = f.builder()
        a, c = f.arguments
        out = b.create("while", [a, c], regions=[
            b.region([p, p], cond),
            b.region([p, p], lambda r, u, v: [v, r.constant(np.bool_(False))])]).results
        b.return_(*out)
        return m
    m = build("and")
    assert len([r for r in m.functions[0].body.blocks[0].operations[0].regions
                if r.__class__ is CombiningRegion]) == 1
    assert m.to_text() == build(lambda r, u, v: r.and_(u, v)).to_text()
    import verify
    outs = verify.run(build("and"), np.bool_(True), np.bool_(True))
    assert [bool(o) for o in outs] == [True, False]


def test_a_never_read_recipe_runs_on_jaxlib():
    verify = pytest.importorskip("verify")
    m = hlo.Module("sums")
    f = m.add_function("main", [T], visibility="public")
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    b.return_(b.reduce(x, zero, [1], "add"), b.reduce(x, zero, [0], "maximum"))
    text = m.to_text()
    assert len(_recipes(m)) == 2
    arr = np.arange(24, dtype=np.float32).reshape(4, 6) - 7
    s, mx = verify.run(text, arr)
    np.testing.assert_array_equal(s, arr.sum(1))
    np.testing.assert_array_equal(mx, np.maximum(arr.max(0), 0))


def test_the_parser_reads_repeated_named_bodies_back_as_recipes():
    """The parser reads a line like one read before from what it kept of that one
    (mhlo_ir.parse_regions): a repeated reduction's body is then a recipe."""
    m = hlo.Module("sums")
    f = m.add_function("main", [T])
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    b.return_(*[b.reduce(b.add(x, x), zero, [1], "add") for _ in range(4)])
    for kw in (dict(locations=False), dict(locations=True)):
        text = m.to_text(**kw)
        parsed = hlo.parse(text)
        assert len(_recipes(parsed)) >= 3  # (the first may be read token by token)
        assert parsed.to_text(**kw) == text
        assert parsed.verify().to_text(**kw) == text
        assert len(_recipes(parsed)) >= 3  # (the verifier judges recipes unread)


def _one_reduce():
    m = hlo.Module("one")
    f = m.add_function("main", [T])
    b = f.builder()
    x, = f.arguments
    r = b.reduce(x, b.constant(np.float32(0)), [1], "add")
    b.return_(r)
    return m, b, r


def test_the_verifier_refuses_a_recipe_two_ops_hold():
    m = hlo.Module("two")
    f = m.add_function("main", [T])
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    r, r2 = b.reduce(x, zero, [1], "add"), b.reduce(x, zero, [1], "add")
    b.return_(r, r2)
    r2.owner.regions = r.owner.regions  # one recipe, two holders
    with pytest.raises(hlo.ModuleVerificationError, match="already appears elsewhere"):
        m.verify()


@pytest.mark.parametrize("field, value, message", [
    ("scalar", T, "the scalar type is .* not a rank-0 tensor type"),
    ("result_type", hlo.tensor((), hlo.i32), "its inner op: 'add'"),
    ("location", "here", "the location is 'here', not a Location"),
    ("spec", None, "the inner op is None, not a binary elementwise op"),
    ("spec", REGISTRY["return"], "the inner op is .* not a binary elementwise op"),
])
def test_the_verifier_refuses_a_recipe_edited_wrong(field, value, message):
    m, b, r = _one_reduce()
    region = r.owner.regions[0]
    setattr(region, field, value)
    with pytest.raises(hlo.ModuleVerificationError, match="combining recipe: " + message):
        m.verify()
    with pytest.raises(hlo.IRError, match="combining region's recipe: " + message):
        region.blocks  # noqa: B018 - made when read


@pytest.mark.parametrize("kw", FORMS[:4], ids=["plain", "inline", "alias", "stablehlo"])
def test_recipes_at_two_depths_print_from_their_templates_as_blocks(kw):
    """A recipe's line is kept as a template by everything but its names and locations
    (indent included): reductions in a loop body and beside it, printed twice (the second
    time from the templates), as their eager twins print."""
    def build(named):
        body = "add" if named else _BODIES["add"]
        m = hlo.Module("nested")
        f = m.add_function("main", [T, hlo.tensor((), hlo.i32)])
        b = f.builder()
        x, n = f.arguments
        zero = b.constant(np.float32(0))
        b.location = hlo.NameLoc("outer")
        s = b.reduce(x, zero, [1], body, location=hlo.NameLoc("s"))

        def loop(r, i, acc):
            r.location = hlo.NameLoc("inner")
            return [r.add(i, r.constant(np.int32(1))),
                    r.add(acc, r.reduce(x, zero, [1], body, location=hlo.NameLoc("t")))]
        out = b.while_([n, s], lambda r, i, acc: r.compare(i, r.constant(np.int32(3)), "LT"),
                       loop)
        b.return_(*out, b.reduce(x, zero, [0], body))
        return m
    want = build(named=False).to_text(**kw)
    m = build(named=True)
    assert m.to_text(**kw) == want
    assert m.to_text(**kw) == want
    assert build(named=True).to_text(**kw) == want


def test_a_location_that_is_no_location_is_refused_from_the_template_too():
    """The second print of a recipe's line comes from its template: an op whose location
    was edited into a string is still an IRError there (it printed the string raw)."""
    m, b, r = _one_reduce()
    m.to_text()  # (the template kept)
    r.owner.location = "here"
    with pytest.raises(hlo.IRError, match="here"):
        m.to_text()
