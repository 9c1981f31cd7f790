"""The generator's knobs: checked with clear errors, reachable from the hypothesis strategy,
and ``element_types`` kept to but for the rules that make values of their own types."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from mhlo_ir import strategies as hst
from mhlo_ir.ir import walk


@pytest.mark.parametrize("kw, error, why", [
    (dict(max_ops=0), ValueError, "max_ops must be an int >= 1"),
    (dict(max_args=0), ValueError, "max_args must be an int >= 1"),
    (dict(max_rank=-1), ValueError, "max_rank must be an int >= 0"),
    (dict(ops=[]), ValueError, "ops is empty"),
    (dict(ops="add"), TypeError, "ops must be a list of op names"),
    (dict(element_types=[np.float32]), TypeError, "not an mhlo_ir element type"),
    (dict(element_types="f32"), TypeError, "element_types must be a list")])
def test_bad_knobs_are_refused_saying_which(kw, error, why):
    with pytest.raises(error, match=why):
        hst.default_options(**kw)


def test_bad_kinds_are_refused_by_the_strategy():
    @settings(max_examples=1, database=None)
    @given(hst.programs(kinds=("floats",)))
    def draw(program):
        pass
    with pytest.raises(ValueError, match="kinds must be element type kinds"):
        draw()


@settings(max_examples=10, deadline=None)
@given(hst.programs(max_ops=3, ops=["divide"], element_types=["i32"], division_by_zero=True,
                    max_rank=1, max_dim=2))
def test_the_strategy_takes_the_generators_other_knobs(program):
    module, inputs = program
    for x in inputs:
        assert x.ndim <= 1 and all(d <= 2 for d in x.shape)


def test_without_the_rules_of_their_own_types_programs_keep_to_element_types():
    ops = [o for o in hst.RULE_OPS if o not in hst.OWN_TYPES]
    seen = set()
    for seed in range(150):
        p = hst.generate_seeded(seed, hst.default_options(8, ops, ["f32"]))
        for _, op in walk(p.module):
            for r in op.results:
                et = getattr(r.type, "element_type", None)
                if et is not None:
                    seen.add(et.name)
    assert seen <= {"f32", "i1", "i32", "i64"}, seen
