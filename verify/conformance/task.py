"""One task in a worker: one file, one side (ours or the reference), every module judged."""

from __future__ import annotations

import os
import time

from .corpus import split_modules
from .outcome import ModuleOutcome, worst

__all__ = ["run_task", "warm_up", "ExecutableCache"]


def warm_up(options: dict) -> None:
    """What every task needs, made once per worker: jaxlib's CPU client, the bindings'
    context, mhlo_ir's op table."""
    from .. import _jaxlib
    from . import mlir
    _jaxlib.client("cpu")
    mlir.context()
    import mhlo_ir.ops  # noqa: F401 - the op table, loaded on first use otherwise


def _test_hooks(path: str, side: str, options: dict) -> None:
    # For the tests of the pool itself: a file that hangs or kills its worker, on either side
    # (a name) or on one side only ((name, side)).
    hooks = options.get("test_hooks") or {}
    name = os.path.basename(path)
    for what, act in (("hang", lambda: time.sleep(3600)), ("crash", os.abort)):
        hook = hooks.get(what)
        if isinstance(hook, str):
            hook = (hook, side)
        if hook and hook[0] in name and hook[1] == side:
            act()


def run_task(task: tuple, options: dict) -> dict:
    """``task`` is ``(path, sides)``, ``sides`` a tuple of "ours" and/or "reference", run in
    that order. Returns ``{side: record}``, each record ``{"status", "reason", "modules",
    "seconds", "cpu_seconds"}`` (the reference's also ``"shared_compiles"``): the file's
    status the worst of its modules' (the reason: the first module with that status, named
    by its index when the file has several). An exception on the way (a bug, not a status)
    makes its module a ``crash`` naming it, as a dead worker makes its file one.

    The sides of one task share the executables they compile, keyed by the canonical text
    of the HLO XLA is given (``ExecutableCache``): where the reference's program is the very
    HLO ours compiled, compiling it again could only make the same executable, so it runs
    that one (``options["share_executables"]`` False compiles each side on its own)."""
    path, sides = task
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pieces = split_modules(text)
    share = len(sides) > 1 and options.get("share_executables", True)
    cache = ExecutableCache() if share else None
    return {side: _run_side(side, pieces, path, options, cache) for side in sides}


class ExecutableCache:
    """Executables of one task by the canonical text of the HLO XLA compiled them from
    (``Executable.input_hlo(canonical=True)``: names and metadata left out, every constant in
    full), and how many times the reference ran one instead of compiling."""

    def __init__(self) -> None:
        self.by_hlo: dict = {}
        self.hits = 0


def _run_side(side: str, pieces: list, path: str, options: dict, cache) -> dict:
    start = time.perf_counter()
    cpu = time.process_time()  # all of the worker's threads: XLA compiles on its own
    hits = cache.hits if cache is not None else 0
    _test_hooks(path, side, options)
    outcomes = []
    for piece in pieces:
        try:
            if side == "ours":
                from . import ours
                outcome = ours.run_module(piece, path, options.get("dialect", "mhlo"),
                                          options.get("generic_input", False), cache)
            else:
                from . import reference
                outcome = reference.run_module(piece, cache)
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
    record = {"status": status, "reason": reason,
              "modules": [o.as_dict() for o in outcomes] if len(outcomes) > 1 else None,
              "seconds": round(time.perf_counter() - start, 3),
              "cpu_seconds": round(time.process_time() - cpu, 3)}
    if side == "reference":
        record["shared_compiles"] = (cache.hits - hits) if cache is not None else 0
    return record
