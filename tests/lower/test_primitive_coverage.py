"""docs/primitive_coverage.md matches JAX's registry and ours (needs the test-only jax)."""

from __future__ import annotations

import re

import pytest

jax = pytest.importorskip("jax")

from lower import coverage  # noqa: E402


def test_primitive_coverage_report_is_up_to_date():
    current = coverage.REPORT.read_text()
    made_with = re.search(r"against jax (\S+);", current)
    if made_with and made_with.group(1) != jax.__version__:
        pytest.skip(f"report made with jax {made_with.group(1)}, this is {jax.__version__}")
    expected = coverage.report()
    # Tests register extra rules at run time; compare only JAX's names, which the report lists.
    assert current == expected, "stale: run python -m lower.coverage --write"


def test_our_primitive_names_are_jaxs():
    """Every rule registered by importing lower is for a name JAX knows (or a documented
    alias), so a real JAX jaxpr needs no renaming."""
    import subprocess
    import sys
    code = ("import lower, lower.mlir as m; from lower.coverage import jax_primitives; "
            "_, n = jax_primitives(); "
            "mine = set(m._lowerings) | {k for d in m._platform_lowerings.values() for k in d}; "
            "print(sorted(mine - set(n)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    extra = eval(out)  # noqa: S307 - our own subprocess output
    # Older JAX names (pjit, core_call) and lax functions JAX 0.10 builds from other primitives;
    # call_hi_primitive is JAX's, with no lowering rule there (jax expands it before lowering).
    assert set(extra) <= {"pjit", "core_call", "expand_dims", "random_wrap", "random_unwrap",
                          "call_hi_primitive"}, extra


def test_every_primitive_without_a_rule_says_why():
    _, names = coverage.jax_primitives()
    missing = [n for n in names if not coverage.ours(n) and not coverage.WHY_NOT.get(n)]
    assert not missing, f"add a reason to lower.coverage.WHY_NOT for {missing}"
