"""Every op in the table, proven three ways: its text is a fixed point of MLIR's printer,
jaxlib's verifier accepts it, and (unless its spec says why not) jaxlib executes it on CPU and
the results match a numpy reference."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import mhlo_ir as hlo
import verify
from tests.mhlo_ir import ops as ops_pkg
from tests.mhlo_ir.ops.cases import CASES, assert_close
from tests.conftest import OP_RESULTS
from tests.oracle import assert_fixed_point

for _m in pkgutil.iter_modules(ops_pkg.__path__):
    if _m.name.startswith("cases_"):
        importlib.import_module(f"{ops_pkg.__name__}.{_m.name}")

ALL_CASES = [c for cs in CASES.values() for c in cs]


def test_every_op_in_the_table_has_a_case():
    missing = sorted(set(hlo.OP_TABLE) - set(CASES))
    assert not missing, f"ops without a case in tests/mhlo_ir/ops/cases_*.py: {missing}"
    unknown = sorted(set(CASES) - set(hlo.OP_TABLE))
    assert not unknown, f"cases for ops not in the table: {unknown}"


def test_every_runnable_op_is_executed():
    silent = sorted(op for op, spec in hlo.OP_TABLE.items()
                    if not spec.not_run and not any(c.executes for c in CASES.get(op, ())))
    assert not silent, (f"ops whose spec has no not_run reason but no case executes them: "
                        f"{silent}")


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_case(case, op_platform):
    m, inputs = case.build()
    assert_fixed_point(m)
    verify.check(m)
    if case.run is not None:
        if op_platform != "cpu":
            pytest.skip("custom (multi-device) runs are written for CPU devices")
        case.run()
    elif case.reference is not None:
        name = hlo.OP_TABLE[case.op].full_name(hlo.MHLO)
        try:
            outs = verify.run(m, *inputs, platform=op_platform)
            want = case.reference(*inputs)
            assert len(outs) == len(want), f"{len(outs)} results, expected {len(want)}"
            for i, (g, w) in enumerate(zip(outs, want)):
                assert_close(g, w, case.rtol, case.atol, f"{case.id} result {i}")
        except BaseException:
            OP_RESULTS[name] = "fail"
            raise
        OP_RESULTS.setdefault(name, "pass")
