"""SSA names as MLIR's generic print gives them (``mhlo_ir.ssa_names``): a one-function
module named ahead and finished at the first op of another kind, checked against MLIR's own
print of the same text. (Modules of several functions and nested regions: test_printer.)"""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
from tests.oracle import assert_fixed_point

F = hlo.tensor((2,), hlo.f32)
S = hlo.tensor((), hlo.f32)


def _flat_program(shape_kinds: str) -> hlo.Module:
    """One function, one block: single-result ops around the kinds ``shape_kinds`` names
    (r: an op with regions, m: a multi-result op, n: a result-less op mid-block)."""
    m = hlo.Module("flat")
    f = m.add_function("main", [F, S])
    b = f.builder()
    x, s = f.arguments
    y = b.add(x, x)
    for kind in shape_kinds:
        if kind == "r":
            y = b.add(b.broadcast_in_dim(b.reduce(y, s, [0], "add"), (2,), []), y)
        elif kind == "m":
            y, s = b.while_([y, s], lambda r, a, i: r.compare(i, i, "LT"),
                            lambda r, a, i: (r.multiply(a, a), i))
        else:
            b.custom_call("side_effect", [y], [], has_side_effect=True)
        y = b.negate(y)
    b.return_(b.add(y, y), s)
    return m


@pytest.mark.parametrize("kinds", ["", "r", "m", "n", "rn", "nr", "mrm", "nmn", "rmnr"])
def test_one_function_numbering_matches_mlir(kinds):
    """Named ahead, then finished at the first op that is not a region-free single-result
    op: each kind of such op, alone and after one another, against MLIR's print."""
    assert_fixed_point(_flat_program(kinds))


def _full_numbering(module) -> str:
    from mhlo_ir.dense import HEX_THRESHOLD
    from mhlo_ir.printer import _Printer
    return _Printer(hlo.MHLO, False, HEX_THRESHOLD, False, flat=False).module(module)


def test_a_use_before_its_definition_prints_as_numbered_first():
    """A hand-edited block using a value defined after a result-less op: naming ahead would
    give it a number the op shifts, so the print starts over numbered first (MLIR cannot read
    such text; the names are those of the module-wide numbering the other modules check)."""
    m = _flat_program("n")
    ops = m.functions[0].entry_block.operations
    early, late = ops[0], ops[2]  # the first add; the negate after the custom_call
    early.operands = (late, late)
    text = m.to_text(locations=False)
    assert text == _full_numbering(m)
    # The negate is %1 (named ahead it would be %2): the custom call takes no number.
    assert '%0 = "mhlo.add"(%1, %1)' in text


def _used_early(value_of) -> hlo.Module:
    """``_flat_program("m")`` or ``("r")`` with its first add using ``value_of(ops)``, a value
    named only by an op after it (a hand edit Module.verify reports; printing must not
    fail on it, as it did not before the one-pass naming)."""
    m = _flat_program("m" if value_of.__name__.startswith("multi") else "r")
    ops = m.functions[0].entry_block.operations
    v = value_of(ops)
    ops[0].operands = (v, v)
    return m


def multi_result(ops):
    return ops[1].results[0]  # the while's first result: %1#0


def region_argument(ops):
    return ops[1].regions[0].blocks[0].arguments[0]  # the reduce's %arg2


@pytest.mark.parametrize("value_of, name", [(multi_result, "%1#0"), (region_argument, "%arg2")])
def test_a_value_named_after_its_use_prints_as_numbered_first(value_of, name):
    m = _used_early(value_of)
    text = m.to_text(locations=False)
    assert text == _full_numbering(m)
    assert f'%0 = "mhlo.add"({name}, {name})' in text


def test_an_op_listed_twice_is_numbered_by_position():
    """A hand edit listing the terminator twice, [add, return, negate, return]: the
    negate is %1 (the return takes no number), whichever copy of the return is met."""
    m = hlo.Module("twice")
    f = m.add_function("main", [F])
    b = f.builder()
    (x,) = f.arguments
    b.return_(b.negate(b.add(x, x)))
    ops = f.entry_block.operations
    ops.insert(1, ops[-1])
    text = m.to_text(locations=False)
    assert text == _full_numbering(m)
    assert '"func.return"(%1)' in text and '%1 = "mhlo.negate"(%0)' in text


def _full_print(module, **options) -> str:
    from mhlo_ir.dense import HEX_THRESHOLD
    from mhlo_ir.printer import _Printer
    return _Printer(options.get("dialect", hlo.MHLO), options.get("locations", False),
                    HEX_THRESHOLD, False, flat=False).module(module)


def test_generated_programs_print_as_numbered_the_full_way():
    """Generated programs over the whole op table (regions, multi-result and result-less ops
    anywhere), as built and after a hand edit moving their last op before the rest: the
    one-pass naming prints what the full numbering prints, in each location mode and both
    dialects."""
    from mhlo_ir import strategies as hst
    options = hst.default_options(12)
    variants = [dict(locations=False), dict(locations="alias"),
                dict(locations=False, dialect=hlo.STABLEHLO)]
    for seed in range(150):
        m = hst.generate_seeded(seed, options).module
        for edit in (False, True):
            if edit:
                ops = m.functions[0].entry_block.operations
                if len(ops) < 3:
                    continue
                ops.insert(0, ops.pop(-2))  # the op before the return, now used before made
            for kw in variants:
                try:
                    ours = m.to_text(**kw)
                except hlo.OpBuildError:  # an op the dialect lacks: refused either way
                    with pytest.raises(hlo.OpBuildError):
                        _full_print(m, **kw)
                    continue
                assert ours == _full_print(m, **kw), (seed, edit, kw)
