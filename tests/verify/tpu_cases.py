"""Every op case of tests/mhlo_ir/ops compiled for a TPU topology, one per task of a worker
process (``verify.conformance.pool``): XLA:TPU aborts the process on some programs (a
complex64 to complex128 convert: "Unsupported CVT X{64|128} expansion"), and that is to be
recorded, not to end the run.

``python -m tests.verify.tpu_cases CASE_ID [TOPOLOGY]`` compiles one case in this process:
how a crash's message is read (XLA writes it to stderr as it aborts).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

DEFAULT_TOPOLOGY = "v5e:2x2"


def cases() -> dict:
    """Every op case, by id."""
    from tests.mhlo_ir import ops as ops_pkg
    from tests.mhlo_ir.ops.cases import CASES
    for m in pkgutil.iter_modules(ops_pkg.__path__):
        if m.name.startswith("cases_"):
            importlib.import_module(f"{ops_pkg.__name__}.{m.name}")
    return {c.id: c for cs in CASES.values() for c in cs}


def warm_up(options: dict) -> None:
    from verify import tpu
    tpu.devices(options.get("topology", DEFAULT_TOPOLOGY))
    cases()


def devices_of(case, built) -> tuple:
    """``(replicas, partitions)`` a case's program is compiled for: its multi-device run's
    device count (the per-device inputs it builds), else one device."""
    _, inputs = built
    if case.run is not None and inputs and all(isinstance(x, list) for x in inputs):
        n = len(inputs)
        return (1, n) if case.partitions else (n, 1)
    return 1, 1


def run_task(case_id: str, options: dict) -> dict:
    """``{"status": "compiles" | "refused", "reason": XLA's first line}`` for one case."""
    import verify
    case = cases()[case_id]
    built = case.build()
    replicas, partitions = devices_of(case, built)
    try:
        verify.compile(built[0], "tpu", topology=options.get("topology", DEFAULT_TOPOLOGY),
                       num_replicas=replicas, num_partitions=partitions)
    except verify.CompileError as e:
        return {"status": "refused", "reason": first_line(str(e))}
    return {"status": "compiles", "reason": ""}


def first_line(message: str) -> str:
    """XLA's message as one line: its first line that says something, without the status
    prefix, shortened."""
    for line in message.splitlines():
        line = line.strip()
        if line and not line.startswith(("Failed to parse using StableHLO", "in ")):
            line = line.split(": ", 1)[1] if line.startswith(("INTERNAL:", "UNIMPLEMENTED:",
                                                              "INVALID_ARGUMENT:")) else line
            return line if len(line) <= 240 else line[:237] + "..."
    return message[:240]


def crash_reason(case_id: str, topology: str = DEFAULT_TOPOLOGY) -> str:
    """Why compiling a case killed its worker: XLA's fatal message (``F... file.cc:N] what``),
    read from a fresh process that compiles it alone."""
    import os
    import re
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "tests.verify.tpu_cases", case_id, topology],
                       capture_output=True, text=True, env=env, timeout=300, cwd=root)
    fatal = re.search(r"^F\d{4} [^\]]*\] (.*)$", r.stderr, re.M)
    what = fatal.group(1).strip() if fatal else f"exit status {r.returncode}"
    return f"XLA:TPU aborts the process: {what}"[:240]


if __name__ == "__main__":
    result = run_task(sys.argv[1], {"topology": sys.argv[2] if len(sys.argv) > 2
                                    else DEFAULT_TOPOLOGY})
    print(result)
