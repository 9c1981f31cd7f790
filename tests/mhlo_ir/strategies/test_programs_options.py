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
    (dict(max_dim=0), ValueError, "max_dim must be an int >= 1"),
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


def test_hypothesis_draws_ops_near_uniformly():
    # hypothesis extends many early prefixes with the simplest choices; unsalted, every op
    # of those programs was RULE_OPS[0] (abs: in 24% of programs, 169 ops to choose from)
    from collections import Counter

    from hypothesis import HealthCheck
    from hypothesis import strategies as st

    from mhlo_ir.strategies.choices import HypothesisChoices
    programs, counts = [0], Counter()

    @settings(max_examples=300, derandomize=True, database=None, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def draw(data):
        p = hst.generate(HypothesisChoices(data.draw), hst.default_options(8))
        programs[0] += 1
        counts.update(set(p.ops))
    draw()
    (top, n), = counts.most_common(1)
    assert n <= 0.12 * programs[0], (top, n, programs[0])
    assert len(counts) >= 0.8 * len(hst.RULE_OPS)


def test_four_bit_integer_dots_are_drawn_and_both_executors_agree():
    """dot_general and dot draw i4/ui4 operands of one type (XLA:CPU runs them, wrapping)
    and never 2-bit ones (table.REFUSED); XLA and the reference interpreter agree."""
    import verify
    from verify import differential
    seen, ran = set(), 0
    for seed in range(40):
        p = hst.generate_seeded(seed, hst.default_options(
            max_ops=3, ops=["dot_general", "dot"], element_types=["i4", "ui4", "i2"]))
        dots = [op for _, op in walk(p.module) if op.spec.name in ("dot_general", "dot")]
        types = {v.type.element_type.name for op in dots for v in op.operands}
        assert "i2" not in types
        seen |= types
        if dots and ran < 4 and all(v.type.num_elements for op in dots for v in op.operands):
            ran += 1
            assert not differential.compare(verify.run(p.module, *p.inputs),
                                            verify.interpret(p.module, *p.inputs))
    assert {"i4", "ui4"} <= seen and ran == 4


def test_collectives_of_a_program_never_share_a_channel_id():
    """XLA takes collectives of one channel id for one collective, with one layout: two
    all_reduces of ranks 1 and 2 on channel 1 failed to compile (seed 41592 of a sweep).
    Each channel handle of a program is its own."""
    seen = 0
    for seed in range(300):
        p = hst.generate_seeded(seed, hst.default_options(
            max_ops=6, ops=["all_reduce", "all_gather", "all_to_all", "reduce_scatter",
                            "collective_permute", "add"]))
        ids = [op.attributes["channel_handle"].handle for _, op in walk(p.module)
               if op.attributes and "channel_handle" in op.attributes]
        assert len(ids) == len(set(ids)), (seed, ids)
        seen += len(ids) > 1
    assert seen >= 5


def test_bodies_draw_no_scalar_op_the_options_leave_out():
    """With no elementwise op in ``ops``, map and scan bodies draw none of their own (they
    drew negate): only the pool's conversions."""
    drawn = set()
    for seed in range(120):
        p = hst.generate_seeded(seed, hst.default_options(
            max_ops=5, ops=["scan", "map", "dot_general"]))
        drawn |= {op.spec.name for _, op in walk(p.module)}
    assert {"map", "scan"} <= drawn
    assert not drawn & {"negate", "add", "multiply", "abs", "not", "exponential"}


def test_inexact_results_say_the_narrowest_float_type_they_were_computed_in():
    """``Program.computed_in``: per inexact result, a float dtype no wider than the result's
    own (its part type for complex), from an inexact value upstream; None for the others."""
    import ml_dtypes
    seen = 0
    for seed in range(200):
        p = hst.generate_seeded(seed, hst.default_options(max_ops=6))
        main = p.module.lookup("main")
        ret = main.body.blocks[-1].operations[-1]
        assert len(p.computed_in) == len(p.inexact) == len(ret.operands)
        for v, inexact, dtype in zip(ret.operands, p.inexact, p.computed_in):
            if not inexact:
                assert dtype is None
                continue
            if dtype is None:
                continue  # (an inexact integer or boolean result: no float upstream kept)
            seen += 1
            own = v.type.element_type
            if own.kind in ("float", "complex"):
                own = (own.component or own).dtype
                assert ml_dtypes.finfo(dtype).nmant <= ml_dtypes.finfo(own).nmant
    assert seen >= 10
