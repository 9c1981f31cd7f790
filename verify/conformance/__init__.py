"""Conformance over StableHLO's own test corpus: ``python -m verify.conformance [DIR]``.

For each ``.mlir`` file (default: /work/shared/data/stablehlo_testdata, subfolders included)
and each module in it (files may be split by ``// -----``):

- **ours**: mhlo_ir's parser → our AST → the conformance transformation
  (``verify.conformance.program``: ``@inputs``' values become run-time arguments of ``@main``,
  since constant folding would otherwise evaluate everything at compile time; the ``check``
  ops are removed and ``@main`` returns each checked value and its expected value) → our
  printer (``--dialect mhlo|stablehlo``) → ``verify.compile`` and run on CPU → the checks
  judged in numpy (``verify.conformance.checks``, the semantics of the corpus' README);
- **reference**: jaxlib alone on the original text, transformed the same way with MLIR's
  bindings (``verify.conformance.reference``), judged the same way.

Statuses: pass, fail, parse_error, print_error, compile_error, exec_error, timeout, crash,
and unsupported (with the reason). Every file runs in a worker process per side
(``verify.conformance.pool``), so a crash or a hang is counted, not fatal.

``--generic-input`` is a development aid: ours reads MLIR's generic print of each module
(made with the bindings) instead of the file's text, so the rest of the pipeline can be
tried on the corpus while the parser reads few custom forms.
"""

from __future__ import annotations

import time
from pathlib import Path

from .corpus import DEFAULT_DIR, find_files, sample
from .pool import run_tasks
from .report import family, render_text, summarize

__all__ = ["run_conformance", "render_text", "family", "DEFAULT_DIR"]

SIDES = ("ours", "reference")


def run_conformance(root=DEFAULT_DIR, *, files=None, dialect: str = "mhlo",
                    generic_input: bool = False, jobs: int = 2, timeout: float = 120.0,
                    limit: int | None = None, sample_size: int | None = None, seed: int = 0,
                    progress=None, test_hooks: dict | None = None) -> dict:
    """Run the corpus under ``root`` (or just ``files``, paths under it) and return the report:
    ``{"run": {...}, "files": [per-file records], "summary": {totals, module_totals,
    families, differences}}``. ``limit`` keeps the first K files, ``sample_size`` a
    reproducible sample of N (``seed``); ``test_hooks`` (tests only) makes files whose name
    contains ``hooks["hang"]`` hang or ``hooks["crash"]`` kill their worker."""
    if dialect not in ("mhlo", "stablehlo"):
        raise ValueError(f"dialect must be 'mhlo' or 'stablehlo', not {dialect!r}")
    root = Path(root)
    paths = [Path(f) for f in files] if files is not None else find_files(root)
    if sample_size is not None:
        paths = sample(paths, sample_size, seed)
    if limit is not None:
        paths = paths[:limit]
    options = {"dialect": dialect, "generic_input": generic_input,
               "test_hooks": test_hooks or {}}
    tasks = [(str(p), side) for p in paths for side in SIDES]
    start = time.perf_counter()
    results = run_tasks(tasks, jobs, timeout, options, progress)
    seconds = time.perf_counter() - start
    records = []
    for i, p in enumerate(paths):
        try:
            name = p.relative_to(root).as_posix() if root.is_dir() else p.name
        except ValueError:
            name = str(p)
        records.append({"file": name, "family": family(p),
                        "ours": results[2 * i], "reference": results[2 * i + 1]})
    # CPU time is what a loaded machine does not inflate: the tasks' total over ``jobs`` is
    # the wall time the run would take with the CPUs to itself.
    cpu = sum(r.get("cpu_seconds") or 0.0 for r in results)
    return {"run": {"dir": str(root), "files": len(paths), "dialect": dialect,
                    "generic_input": generic_input, "jobs": jobs, "timeout": timeout,
                    "seconds": round(seconds, 2), "task_cpu_seconds": round(cpu, 2)},
            "files": records, "summary": summarize(records)}
