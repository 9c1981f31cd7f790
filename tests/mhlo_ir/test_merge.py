"""merge_modules: one module's functions moved into another, clashing names renamed and every
reference rewritten; the merged program verifies in Python, compiles, and computes what the
two pieces compute (checked against numpy), host callbacks included."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from lower.mlir import merge_mhlo_modules
from mhlo_ir.errors import IRError

T = hlo.tensor((3,), hlo.f32)


def _piece(scale: float, with_callback=False):
    """A module whose main calls a private @helper (a name the destination also uses) and
    a composite decomposing into @helper."""
    m = hlo.Module("piece")
    helper = m.add_function("helper", [T], visibility="private")
    hb = helper.builder()
    hb.return_(hb.multiply(helper.arguments[0], hb.constant(np.full(3, scale, np.float32))))
    main = m.add_function("main", [T], visibility="public")
    b = main.builder()
    (x,) = main.arguments
    y = b.call(helper, [x])
    z = b.composite("my.scale", [y], decomposition=helper, version=1)
    if with_callback:
        z = b.host_callback(lambda v: v + 100, [z], [T])
    b.return_(z)
    return m


def _destination():
    m = hlo.Module("dst")
    helper = m.add_function("helper", [T], visibility="private")
    hb = helper.builder()
    hb.return_(hb.negate(helper.arguments[0]))
    return m


def test_merged_pieces_compute_what_they_did_and_clashes_are_renamed():
    dst = _destination()
    first = merge_mhlo_modules(dst, "piece", _piece(2.0))
    second = hlo.merge_modules(dst, _piece(3.0, with_callback=True), "piece")
    assert (first, second) == ("piece", "piece_0")
    names = [f.name for f in dst.functions]
    assert names == ["helper", "helper_0", "piece", "helper_1", "piece_0"]
    assert all(dst.lookup(n).visibility == "private" for n in (first, second))
    main = dst.add_function("main", [T], visibility="public")
    b = main.builder()
    (x,) = main.arguments
    a = b.call(dst.lookup(first), [x])
    c = b.call(dst.lookup(second), [x])
    b.return_(b.add(a, c), b.call(dst.lookup("helper"), [x]))
    dst.verify()
    text = dst.to_text()
    assert "@helper_0" in text and "@helper_1" in text and text.count("decomposition") == 2
    x = np.array([1.0, -2.0, 0.5], np.float32)
    total, neg = verify.run(dst, x)
    np.testing.assert_array_equal(total, (2 * 2 * x) + (3 * 3 * x + 100))
    np.testing.assert_array_equal(neg, -x)


def test_callbacks_are_renumbered_after_the_destinations_own():
    dst = _destination()
    main = dst.add_function("main", [T], visibility="public")
    b = main.builder()
    (x,) = main.arguments
    y = b.host_callback(lambda v: v * 10, [x], [T])
    name = hlo.merge_modules(dst, _piece(1.0, with_callback=True), "inner")
    b.return_(b.call(dst.lookup(name), [y]))
    assert len(dst.host_callbacks) == 2
    assert "index = 1 : ui64" in dst.to_text()
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(verify.run(dst, x)[0], x * 10 + 100)


def test_the_source_is_emptied_and_mistakes_are_refused():
    src = _piece(1.0)
    dst = _destination()
    hlo.merge_modules(dst, src, "p")
    assert src.functions == [] and src.lookup("main") is None
    with pytest.raises(IRError, match="has no @main"):
        hlo.merge_modules(dst, src, "p")
    with pytest.raises(IRError, match="into itself"):
        hlo.merge_modules(dst, dst, "p")


def test_a_bad_name_moves_nothing():
    src, dst = _piece(1.0), _destination()
    with pytest.raises(IRError):
        hlo.merge_modules(dst, src, "")
    assert [f.name for f in src.functions] == ["helper", "main"]
    assert [f.name for f in dst.functions] == ["helper"]
