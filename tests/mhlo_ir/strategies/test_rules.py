"""The generator's rule table covers the op table: every op has a rule or a stated reason to be
left out, and every rule, drawn alone, builds ops that the IR's own checks accept."""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
from mhlo_ir import strategies as hst
from mhlo_ir.ir import walk
from mhlo_ir.ops import spec


def test_every_op_has_a_rule_or_a_reason():
    table = set(spec.REGISTRY)
    assert set(hst.RULES) | set(hst.EXCLUDED) == table
    assert not set(hst.RULES) & set(hst.EXCLUDED)
    assert all(len(why) > 20 for why in hst.EXCLUDED.values())


def test_excluded_ops_are_the_ones_that_do_not_run_on_cpu():
    # besides terminators and the async pair, an op is left out only when the op table
    # itself says it does not run on XLA:CPU
    for name, why in hst.EXCLUDED.items():
        if name in ("func.return", "return", "async_start", "async_done"):
            continue
        assert spec.REGISTRY[name].not_run, name
        assert why.startswith("does not run on XLA:CPU") or "HLO instruction" in why, name


def test_refused_element_types_name_ops_with_rules():
    from mhlo_ir.strategies.table import REFUSED
    assert set(REFUSED) <= set(hst.RULES)
    assert all(len(why) > 20 for why, _ in REFUSED.values())


@pytest.mark.parametrize("name", hst.RULE_OPS)
def test_each_rule_alone_builds_its_op(name):
    """Seeded draws of one rule: the op appears, and the module verifies in Python."""
    options = hst.default_options(1, (name,))
    built = 0
    for seed in range(25):
        p = hst.generate_seeded(seed, options, n_ops=1)
        p.module.verify()
        if name in p.ops:
            built += 1
            assert name in {op.spec.name for _, op in walk(p.module)} or name in (
                "create_token", "after_all")  # drawn as add_dependency's token
    assert built, f"no seed of 25 could draw {name} alone"


def test_unknown_or_excluded_ops_are_refused_by_name():
    with pytest.raises(ValueError, match="ragged_dot: does not run on XLA:CPU"):
        hst.default_options(4, ["ragged_dot"])
    with pytest.raises(ValueError, match="no_such_op: not an op of the table"):
        hst.default_options(4, ["no_such_op"])
    with pytest.raises(ValueError, match="element_types is empty"):
        hst.default_options(4, None, [])
    assert hst.default_options(4, None, ["i8", hlo.f32]).element_types == (hlo.i8, hlo.f32)
