"""Ops whose one region is a combining block print in one piece (``mhlo_ir.print_combining``).

Oracles: MLIR's generic re-print of our text (the bindings in jaxlib), and the printer's
general path (the one-piece path turned off, nothing kept from earlier prints) for the texts
MLIR does not print alike (locations, ``#locN`` aliases) and for generated programs over the
whole op table. Each test also counts the ops the one-piece path printed, so that a change
that stopped taking it fails here rather than passing on the general path.
"""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir import print_caches, print_combining
from tests import oracle

T = hlo.tensor((4, 6), hlo.f32)
IDX = hlo.tensor((3, 2), hlo.i32)


@pytest.fixture
def taken(monkeypatch):
    """The ops the one-piece path printed (by name), filled as texts are printed."""
    seen = []
    real = print_combining.line

    def counting(pr, op, indent):
        text = real(pr, op, indent)
        if text is not None:
            seen.append(op.spec.name)
        return text
    monkeypatch.setattr(print_combining, "line", counting)
    return seen


def general_path(m, **kw) -> str:
    """``m`` printed with the one-piece path off and nothing kept from earlier prints."""
    saved_line, saved_shared = print_combining.line, print_caches._SHARED
    print_combining.line = lambda pr, op, indent: None
    print_caches._SHARED = {}
    try:
        return m.to_text(**kw)
    finally:
        print_combining.line, print_caches._SHARED = saved_line, saved_shared


def _module(locations: bool = False):
    """Combining ops of every kind, and near misses the general path must print: a body that
    swaps its arguments or reads one twice, a body of two ops, arguments with locations, an
    inner op whose attributes are a plain dict."""
    m = hlo.Module("combining")
    f = m.add_function("main", [T, T, IDX, hlo.tensor((3,), hlo.f32)])
    b = f.builder()
    x, y, idx, upd = f.arguments
    zero = b.constant(np.float32(0))

    def at(name):
        return hlo.NameLoc(name) if locations else None
    if locations:
        b.location = hlo.NameLoc("inner")
    outs = [
        b.reduce(x, zero, [1], "add", location=at("sum")),
        b.reduce(y, zero, [0], "maximum", location=at("max")),
        b.reduce(x, zero, [1], "add", location=at("sum2")),
        b.reduce(x, zero, [0, 1], lambda r, acc, v: r.subtract(v, acc)),  # swapped: general
        b.reduce(x, zero, [1], lambda r, acc, v: r.add(acc, acc)),  # one argument twice
        b.reduce(x, zero, [1], lambda r, acc, v: r.add(r.multiply(acc, v), v)),  # two ops
        b.reduce_window(x, zero, [2, 3], "add", window_strides=[2, 3], location=at("win")),
        b.all_reduce(x, "add", [[0]], location=at("ar")),
        b.scatter(x, idx, upd, hlo.ScatterDimensionNumbers(
            update_window_dims=(), inserted_window_dims=(0, 1),
            scatter_dims_to_operand_dims=(0, 1), index_vector_dim=1), "add"),
        b.sort(x, lambda r, p, q: r.compare(p, q, "LT"), dimension=1, location=at("sort")),
    ]
    sort = outs[-1].owner
    cmp = sort.regions[0].blocks[0].operations[0]
    cmp.attributes = dict(cmp.attributes)  # not an OpAttributes: kept for one print only
    if locations:
        args = outs[1].owner.regions[0].blocks[0].arguments
        args[0].location = hlo.NameLoc("acc")  # printed in the label: general path
    b.return_(*outs)
    return m


ONE_PIECE = ["reduce", "reduce", "reduce", "reduce_window", "all_reduce", "scatter", "sort"]


def test_combining_ops_print_as_mlir_reprints_them(taken):
    m = _module()
    for _ in range(2):  # the second print from kept parts
        oracle.assert_fixed_point(m)
    assert taken == ONE_PIECE * 2


@pytest.mark.parametrize("kw", [dict(locations=False), dict(locations=True),
                                dict(locations="alias"),
                                dict(locations="alias", dialect=hlo.STABLEHLO)],
                         ids=["plain", "inline", "alias", "stablehlo"])
def test_the_one_piece_text_is_the_general_paths(taken, kw):
    m = _module(locations=True)
    want = general_path(m, **kw)
    assert ("#loc" in want) == (kw["locations"] == "alias")
    for _ in range(2):
        assert m.to_text(**kw) == want
    # The reduce whose argument has a location takes the general path where it is printed.
    expected = ONE_PIECE if not kw["locations"] else ONE_PIECE[:1] + ONE_PIECE[2:]
    assert taken == expected * 2


def test_alias_numbers_follow_the_general_paths_order(taken):
    """Each op's own location, then its inner op's, then its return's: the order in which
    the general path meets them, which numbers the #locN aliases."""
    m = hlo.Module("order")
    f = m.add_function("main", [T])
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    outs = []
    for i in range(3):
        b.location = hlo.NameLoc(f"body{i}")
        outs.append(b.reduce(x, zero, [1], "add", location=hlo.NameLoc(f"op{i}")))
    b.return_(*outs)
    text = m.to_text(locations="alias")
    assert text == general_path(m, locations="alias")
    assert taken == ["reduce"] * 3
    aliases = [line.split(" = ")[1] for line in text.splitlines() if line.startswith("#loc")]
    assert aliases[:2] == ['loc("op0")', 'loc("body0")']


def test_generated_programs_print_as_the_general_path_prints_them(taken):
    """Programs over the whole op table, in both dialects, with and without locations: the
    same text with the one-piece path as without it."""
    from mhlo_ir import strategies as hst
    options = hst.default_options(12)
    variants = [dict(locations=False), dict(locations="alias"), dict(locations=True),
                dict(locations=False, dialect=hlo.STABLEHLO)]
    for seed in range(150):
        m = hst.generate_seeded(seed, options).module
        for kw in variants:
            try:
                want = general_path(m, **kw)
            except hlo.OpBuildError:  # an op the dialect lacks: refused either way
                with pytest.raises(hlo.OpBuildError):
                    m.to_text(**kw)
                continue
            assert m.to_text(**kw) == want, (seed, kw)
    assert len(taken) > 50, taken  # the generated programs do reach the path


@pytest.mark.parametrize("fault", ["attribute", "location"])
def test_a_module_with_two_faults_names_the_general_paths_first(fault):
    """The one-piece path asks for the op's location and attributes before its inner op's,
    as the general path does: an op and its body both wrong give the general path's error."""
    m = hlo.Module("faults")
    f = m.add_function("main", [T])
    b = f.builder()
    x, = f.arguments
    r = b.reduce(x, b.constant(np.float32(0)), [1], "add")
    b.return_(r)
    if fault == "attribute":
        r.attributes = {**r.attributes, "zz": 1}
    else:
        r.location = "here"
    r.regions[0].blocks[0].operations[0].attributes = {"yy": 2}
    messages = []
    for printing in (general_path, lambda m, **kw: m.to_text(**kw)):
        with pytest.raises(hlo.IRError) as e:
            printing(m, locations=True)
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    assert ("zz" if fault == "attribute" else "here") in messages[0]
