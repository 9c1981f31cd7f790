"""docs/op_coverage.md is what the op table says today."""

from __future__ import annotations

import re

import pytest

from verify import coverage


def test_coverage_report_is_up_to_date():
    if not coverage.REPORT.exists():
        pytest.fail("docs/op_coverage.md is missing: run python -m verify.coverage --write")
    current = coverage.REPORT.read_text()
    made_with = re.search(r"against\njaxlib (\S+);", current)
    if made_with and made_with.group(1) != coverage.jaxlib_version():
        pytest.skip(f"report made with jaxlib {made_with.group(1)}, this is "
                    f"{coverage.jaxlib_version()}")
    assert current == coverage.report(), \
        "docs/op_coverage.md is stale: run python -m verify.coverage --write"


def test_jaxlib_op_list_is_read_from_jaxlib():
    ops = coverage.jaxlib_ops("mhlo")
    assert "mhlo.add" in ops and "mhlo.dot_general" in ops and len(ops) > 100


def test_every_jaxlib_op_is_declared_or_has_a_reason():
    """No silent gaps: each op of jaxlib's mhlo and chlo dialects is in the table or in
    UNDECLARED with the reason it is not."""
    import mhlo_ir as hlo
    from mhlo_ir.ops.spec import UNDECLARED
    declared = {spec.full_name(hlo.MHLO) for spec in hlo.OP_TABLE.values()}
    for dialect in ("mhlo", "chlo"):
        silent = sorted(set(coverage.jaxlib_ops(dialect)) - declared - set(UNDECLARED))
        assert not silent, f"{dialect} ops neither declared nor explained: {silent}"
    assert not set(UNDECLARED) & declared, "UNDECLARED lists declared ops"
