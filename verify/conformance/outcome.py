"""What a run says about one module, and judging a program's outputs against its checks."""

from __future__ import annotations

from typing import NamedTuple

from .checks import judge

__all__ = ["STATUSES", "ModuleOutcome", "Unsupported", "judge_outputs", "worst"]

# Every status, worst first: a file's status is the worst of its modules'.
STATUSES = ("crash", "timeout", "parse_error", "print_error", "compile_error", "exec_error",
            "fail", "unsupported", "pass")


class Unsupported(Exception):
    """A module the conformance run cannot judge (the message says why)."""


class ModuleOutcome(NamedTuple):
    status: str
    reason: str = ""
    checks: int = 0

    def as_dict(self) -> dict:
        return {"status": self.status, "reason": self.reason, "checks": self.checks}


def judge_outputs(outs: list, checks: list) -> ModuleOutcome:
    """Judge ``outs`` (actual, expected, actual, expected...) by ``checks`` (``Check``s, one
    per pair): pass, or fail naming the first failing check."""
    if len(outs) != 2 * len(checks):
        return ModuleOutcome("exec_error", f"the program returned {len(outs)} values for "
                                           f"{len(checks)} checks")
    failed = []
    for i, check in enumerate(checks):
        kind, tolerance, max_ulp, min_ulp = check
        verdict = judge(kind, outs[2 * i], outs[2 * i + 1], tolerance, max_ulp=max_ulp,
                        min_ulp=min_ulp)
        if not verdict.ok:
            failed.append(f"check {i} ({kind}): {verdict.detail}")
    if failed:
        more = f" (and {len(failed) - 1} more checks)" if len(failed) > 1 else ""
        return ModuleOutcome("fail", failed[0] + more, len(checks))
    return ModuleOutcome("pass", "", len(checks))


def worst(statuses) -> str:
    """The worst of ``statuses`` by ``STATUSES``' order."""
    return min(statuses, key=STATUSES.index)
