"""A program holds no reference cycles: pointers up the tree are weak, so a dropped module
is freed by reference counting at once (not left as cyclic garbage for Python's collector),
while everything navigates as before as long as the module (or a builder of it) lives."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir import strategies as hst
from mhlo_ir.ir import walk


def _with_regions() -> hlo.Module:
    m = hlo.Module("m")
    t = hlo.tensor((4,), hlo.f32)
    f = m.add_function("main", [t, hlo.tensor((), hlo.f32)], visibility="public")
    b = f.builder()
    x, s = f.arguments
    r = b.reduce(x, s, [0], lambda rb, acc, v: rb.add(acc, v))
    keys, vals = b.sort([x, x], lambda cb, a, c, d, e: cb.compare(a, c, "LT"))  # 2 results
    loop = b.while_([s], lambda cb, i: cb.compare(i, cb.constant(np.float32(3)), "LT"),
                    lambda lb, i: [lb.add(i, lb.constant(np.float32(1)))])
    b.return_(r, keys, vals, loop[0] if isinstance(loop, tuple) else loop)
    return m


MAKERS = {
    "regions and multi-result ops": _with_regions,
    "generated program": lambda: hst.generate_seeded(5, hst.default_options(8)).module,
    "parsed text": lambda: hlo.parse(_with_regions().to_text()),
    "parsed generated program": lambda: hlo.parse(
        hst.generate_seeded(7, hst.default_options(8)).module.to_text()),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_dropped_module_leaves_no_cyclic_garbage(name):
    MAKERS[name]().to_text()  # warm whatever caches the first use fills
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        m = MAKERS[name]()
        m.to_text(pretty=True)
        m.verify()
        del m
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_the_tree_navigates_up_while_the_module_lives():
    m = _with_regions()
    f = m.lookup("main")
    assert f.module is m
    entry = f.entry_block
    assert entry.parent is f.body and f.body.parent is None
    assert all(a.owner is entry for a in f.arguments)
    seen_nested = seen_multi = False
    for fn, op in walk(m):
        assert op.parent is not None and op in op.parent.operations
        for region in op.regions:
            seen_nested = True
            assert region.parent is op
            for block in region.blocks:
                assert block.parent is region
                assert all(a.owner is block for a in block.arguments)
        if len(op.results) > 1:
            seen_multi = True
            assert all(r.owner is op for r in op.results)
    assert seen_nested and seen_multi


def _builder_only():
    m = hlo.Module("kept")
    return m.add_function("main", [hlo.tensor((2,), hlo.i32)]).builder()


def test_a_builder_keeps_its_module_alive():
    b = _builder_only()   # (as a test fixture hands out a builder, the module out of reach)
    gc.collect()
    b.return_(b.add(*b.function.arguments * 2))
    assert "mhlo.add" in b.function.module.to_text()


def test_contained_objects_do_not_keep_their_module_alive():
    m = _with_regions()
    f = m.lookup("main")
    op = f.entry_block.operations[0]
    del m
    gc.collect()
    assert f.module is None  # the function itself lives on (it is held here)
    assert op.parent is f.entry_block  # its block too: the function holds it


def test_a_long_chain_is_freed_without_deep_recursion():
    m = hlo.Module("chain")
    t = hlo.tensor((2,), hlo.f32)
    f = m.add_function("main", [t])
    b = f.builder()
    x = f.arguments[0]
    for _ in range(200_000):   # each op holds the one before it: freed one by one, iteratively
        x = b.negate(x)
    b.return_(x)
    del m, f, b, x   # (CPython's trashcan bounds the depth of nested deallocation)


def test_a_single_result_op_carries_no_tuple_slots_and_operation_makes_the_general_layout():
    # The two layouts share Operation's slots; only the general one has operand and result
    # tuples (a SingleResultOp keeps up to two operands in slots of its own and is its
    # result), so that a 100,000-op chain does not carry 16 empty bytes an op.
    import sys
    from mhlo_ir.ir import GeneralOperation, Operation, SingleResultOp
    assert not hasattr(SingleResultOp, "_results")
    assert isinstance(vars(SingleResultOp)["operands"], property)
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)] * 2)
    b = f.builder()
    x, y = f.arguments
    op = b.add(x, y)
    assert sys.getsizeof(op) <= sys.getsizeof(object.__new__(GeneralOperation)) + 8
    general = Operation(op.spec, (x, y), [op.type])
    assert type(general) is GeneralOperation and isinstance(general, Operation)
    assert general.operands == (x, y) and general.results[0].type is op.type


def test_a_single_result_op_with_regions_is_its_own_class_and_one_without_has_no_regions_slot():
    # A regions slot would make every region-free op 112 bytes instead of 96 (objects are
    # allocated in 16-byte steps): an op made with regions is a SingleResultRegionOp; one
    # made without keeps the class's empty tuple, which cannot be assigned.
    import sys
    from mhlo_ir.ir import SingleResultOp, SingleResultRegionOp
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)])
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    r = b.reduce(x, zero, (1,), "add")
    y = b.add(r, r)
    b.return_(y)
    assert type(y) is SingleResultOp and y.regions == ()
    assert "regions" not in vars(SingleResultOp)["__slots__"]
    assert type(r) is SingleResultRegionOp and isinstance(r, SingleResultOp)
    assert len(r.regions) == 1 and r.regions[0].parent is r and r.owner is r
    if sys.maxsize > 2**32:
        assert sys.getsizeof(y) <= 96 < sys.getsizeof(r)
    with pytest.raises(AttributeError, match="read-only"):
        y.regions = r.regions
    assert y.regions == ()
    # Ops made through make_operation (the parser's, rewrite's) take the same classes.
    text = m.to_text(locations=False)
    back = hlo.parse(text)
    ops = back.functions[0].body.blocks[0].operations
    assert [type(o).__name__ for o in ops] == ["SingleResultOp", "SingleResultRegionOp",
                                               "SingleResultOp", "GeneralOperation"]
    assert back.to_text(locations=False) == text
    # A region op's regions may be replaced by hand; the verifier judges what was given.
    r.regions = None
    with pytest.raises(hlo.ModuleVerificationError, match="regions"):
        m.verify()
