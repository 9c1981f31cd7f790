"""One task in a worker: one file, one side (ours or the reference), every module judged."""

from __future__ import annotations

import os
import time

from .corpus import split_modules
from .outcome import ModuleOutcome, worst

__all__ = ["run_task", "warm_up"]


def warm_up(options: dict) -> None:
    """What every task needs, made once per worker: jaxlib's CPU client, the bindings'
    context, mhlo_ir's op table."""
    from .. import _jaxlib
    from . import mlir
    _jaxlib.client("cpu")
    mlir.context()
    import mhlo_ir.ops  # noqa: F401 - the op table, loaded on first use otherwise


def _test_hooks(path: str, options: dict) -> None:
    # For the tests of the pool itself: a file that hangs or kills its worker.
    hooks = options.get("test_hooks") or {}
    name = os.path.basename(path)
    if hooks.get("hang") and hooks["hang"] in name:
        time.sleep(3600)
    if hooks.get("crash") and hooks["crash"] in name:
        os.abort()


def run_task(task: tuple, options: dict) -> dict:
    """``task`` is ``(path, side)``. Returns ``{"status", "reason", "modules", "seconds",
    "cpu_seconds"}``, the file's status the worst of its modules' (the reason: the first
    module with that status, named by its index when the file has several). An exception on
    the way (a bug, not a status) makes its module a ``crash`` naming it, as a dead worker
    makes its file one."""
    path, side = task
    start = time.perf_counter()
    cpu = time.process_time()  # all of the worker's threads: XLA compiles on its own
    _test_hooks(path, options)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pieces = split_modules(text)
    outcomes = []
    for piece in pieces:
        try:
            if side == "ours":
                from . import ours
                outcome = ours.run_module(piece, path, options.get("dialect", "mhlo"),
                                          options.get("generic_input", False))
            else:
                from . import reference
                outcome = reference.run_module(piece)
        except Exception as e:  # noqa: BLE001 - a bug on the way is a crash, with its message
            import traceback
            where = traceback.extract_tb(e.__traceback__)[-1]
            outcome = ModuleOutcome("crash", f"{type(e).__name__} raised at "
                                             f"{os.path.basename(where.filename)}:"
                                             f"{where.lineno}: {str(e)[:300]}")
        outcomes.append(outcome)
    if not outcomes:
        outcomes = [ModuleOutcome("unsupported", "the file holds no module")]
    status = worst(o.status for o in outcomes)
    i, first = next((i, o) for i, o in enumerate(outcomes) if o.status == status)
    reason = first.reason
    if len(outcomes) > 1 and reason:
        reason = f"module {i + 1} of {len(outcomes)}: {reason}"
    return {"status": status, "reason": reason,
            "modules": [o.as_dict() for o in outcomes] if len(outcomes) > 1 else None,
            "seconds": round(time.perf_counter() - start, 3),
            "cpu_seconds": round(time.process_time() - cpu, 3)}
