"""Worker processes: each task (a file, one side) runs in a process of its own, so a crash
or a hang is counted, not fatal. (Any module with ``run_task(task, options)`` and
``warm_up(options)`` can be the tasks' module: see ``run_tasks``.)

Each worker imports jaxlib and makes its one CPU client (and the bindings' context) once,
says it is ready, then takes tasks one at a time. The parent gives each task ``timeout``
seconds; a worker that overruns is killed and replaced (``timeout``), one that dies is
replaced (``crash``, with its exit status). Workers are started with ``spawn``: the parent
may hold jaxlib's threads (a test process does), which ``fork`` would copy half-alive.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import deque
from multiprocessing.connection import wait

__all__ = ["run_tasks"]

_STARTUP_TIMEOUT = 300.0


def _worker(conn, options: dict) -> None:
    # The tasks' module: the conformance run's by default; ``options["worker_module"]`` names
    # another with the same two functions (the TPU op coverage compiles cases this way).
    import importlib
    module = importlib.import_module(options.get("worker_module", "verify.conformance.task"))
    run_task, warm_up = module.run_task, module.warm_up
    warm_up(options)
    conn.send("ready")
    while True:
        task = conn.recv()
        if task is None:
            return
        conn.send(run_task(task, options))


class _Worker:
    def __init__(self, ctx, options):
        parent, child = ctx.Pipe()
        self.conn = parent
        self.proc = ctx.Process(target=_worker, args=(child, options), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.task = None
        self.deadline = time.monotonic() + _STARTUP_TIMEOUT

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _why_dead(proc) -> str:
    proc.join(5)
    code = proc.exitcode
    if code is None:
        return "the worker stopped answering"
    if code < 0:
        import signal
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with status {code}"


def run_tasks(tasks: list, jobs: int, timeout: float, options: dict,
              progress=None) -> list:
    """Run ``tasks`` (see ``task.run_task``, or the module ``options["worker_module"]``
    names) on ``jobs`` workers; their results in order. ``progress(done, total)`` is called
    after each."""
    ctx = mp.get_context("spawn")
    results: list = [None] * len(tasks)
    pending = deque(range(len(tasks)))
    workers: list = []
    done = 0
    # XLA's INFO lines on client creation, once per worker, are not errors: the workers
    # inherit a quieter level (the caller's own setting wins, and is left as it was).
    saved = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        while pending or any(w.task is not None for w in workers):
            while len(workers) < min(jobs, len(pending) + sum(w.task is not None
                                                              for w in workers)):
                workers.append(_Worker(ctx, options))
            for w in workers:
                if w.ready and w.task is None and pending:
                    w.task = pending.popleft()
                    w.deadline = time.monotonic() + timeout
                    w.conn.send(tasks[w.task])
            now = time.monotonic()
            waiting = [w for w in workers if w.task is not None or not w.ready]
            if not waiting:
                continue
            left = max(0.0, min(w.deadline for w in waiting) - now)
            ready = wait([w.conn for w in waiting], timeout=left)
            now = time.monotonic()
            for w in list(waiting):
                finished = None
                if w.conn in ready:
                    try:
                        message = w.conn.recv()
                    except (EOFError, OSError):
                        finished = {"status": "crash", "reason": _why_dead(w.proc)}
                    else:
                        if message == "ready":
                            w.ready = True
                            continue
                        finished = message
                elif now >= w.deadline:
                    if not w.ready:
                        raise RuntimeError("a conformance worker did not start within "
                                           f"{_STARTUP_TIMEOUT:.0f} s")
                    finished = {"status": "timeout",
                                "reason": f"no result within {timeout:g} s"}
                if finished is None:
                    continue
                if w.task is None:  # died while starting
                    raise RuntimeError(f"a conformance worker failed to start: "
                                       f"{finished['reason']}")
                results[w.task] = finished
                done += 1
                if progress is not None:
                    progress(done, len(tasks))
                if finished.get("status") in ("crash", "timeout"):  # the pool's own records
                    w.stop(kill=True)
                    workers.remove(w)
                else:
                    w.task = None
    finally:
        for w in workers:
            w.stop(kill=w.task is not None)
        if saved is None:
            os.environ.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return results
