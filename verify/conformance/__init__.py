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
and unsupported (with the reason). Every file runs in a worker process
(``verify.conformance.pool``), so a crash or a hang is counted, not fatal: the two sides of a
file run in one worker, and a file whose worker dies or hangs runs again with each side in a
worker of its own, so that the side at fault is the one counted.

The sides of a file share compiled executables by the canonical text of the HLO that XLA is
given (``task.ExecutableCache``; constants in full, names and metadata left out): when the
reference's program converts to the very HLO ours compiled, it runs ours' executable with its
own inputs rather than compiling the same HLO again (XLA's compile is a function of the HLO
and the options, and dominates the run's time).
``share_executables=False`` (``--no-shared-compiles``) compiles each side on its own.

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
                    progress=None, test_hooks: dict | None = None,
                    share_executables: bool = True) -> dict:
    """Run the corpus under ``root`` (or just ``files``, paths under it) and return the report:
    ``{"run": {...}, "files": [per-file records], "summary": {totals, module_totals,
    families, differences}}``. ``limit`` keeps the first K files, ``sample_size`` a
    reproducible sample of N (``seed``); ``test_hooks`` (tests only) makes files whose name
    contains ``hooks["hang"]`` hang or ``hooks["crash"]`` kill their worker (a
    ``(name, side)`` pair: on that side only). ``share_executables``: see the module
    docstring."""
    if dialect not in ("mhlo", "stablehlo"):
        raise ValueError(f"dialect must be 'mhlo' or 'stablehlo', not {dialect!r}")
    if not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a number of seconds above 0, got {timeout!r} (at "
                         "0 or below every file would time out)")
    root = Path(root)
    paths = [Path(f) for f in files] if files is not None else find_files(root)
    if sample_size is not None:
        paths = sample(paths, sample_size, seed)
    if limit is not None:
        paths = paths[:limit]
    options = {"dialect": dialect, "generic_input": generic_input,
               "test_hooks": test_hooks or {}, "share_executables": share_executables}
    start = time.perf_counter()
    results = _run_files(paths, jobs, timeout, options, progress)
    seconds = time.perf_counter() - start
    records = []
    for i, p in enumerate(paths):
        try:
            name = p.relative_to(root).as_posix() if root.is_dir() else p.name
        except ValueError:
            name = str(p)
        records.append({"file": name, "family": family(p),
                        "ours": results[i]["ours"], "reference": results[i]["reference"]})
    # CPU time is what a loaded machine does not inflate: the tasks' total over ``jobs`` is
    # the wall time the run would take with the CPUs to itself.
    sides = [r[side] for r in results for side in SIDES]
    cpu = sum(r.get("cpu_seconds") or 0.0 for r in sides)
    shared = sum(r.get("shared_compiles") or 0 for r in sides)
    return {"run": {"dir": str(root), "files": len(paths), "dialect": dialect,
                    "generic_input": generic_input, "jobs": jobs, "timeout": timeout,
                    "share_executables": share_executables, "shared_compiles": shared,
                    "seconds": round(seconds, 2), "task_cpu_seconds": round(cpu, 2)},
            "files": records, "summary": summarize(records)}


def _run_files(paths: list, jobs: int, timeout: float, options: dict, progress) -> list:
    """``[{"ours": record, "reference": record}]`` per path: both sides in one task (given
    ``timeout`` per side), then, for a file whose worker died or overran, each side in a task
    of its own, so that a crash or a hang is counted against the side that has it."""
    total = len(paths)
    done = [0]

    def counted(_done, _total):
        done[0] += 1
        if progress is not None:
            progress(min(done[0], total), total)

    first = run_tasks([(str(p), SIDES) for p in paths], jobs, timeout * len(SIDES), options,
                      counted)
    again = [i for i, r in enumerate(first) if "status" in r]  # the pool's crash or timeout
    if again:
        split = [(str(paths[i]), (side,)) for i in again for side in SIDES]
        total += len(split)
        alone = run_tasks(split, jobs, timeout, options, counted)
        for k, i in enumerate(again):
            first[i] = {side: _pool_record(alone[len(SIDES) * k + j], side)
                        for j, side in enumerate(SIDES)}
    return first


def _pool_record(result: dict, side: str) -> dict:
    """A side's record from a single-side task's result (the worker's, or the pool's own
    crash or timeout record)."""
    return result if "status" in result else result[side]
