"""The parent side of a campaign: worker processes, crash and hang attribution, totals,
reduction of findings to small reproducers."""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

__all__ = ["Campaign", "seed_of"]

_CHILD_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}


def seed_of(campaign_seed: int, i: int) -> int:
    """The seed of the campaign's ``i``-th program (``generate_seeded`` reproduces it)."""
    return campaign_seed * 1_000_000 + i


class _Worker:
    def __init__(self, cfg, events):
        env = dict(os.environ, **_CHILD_ENV)
        if cfg.get("xla_flags"):
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + cfg["xla_flags"]).strip()
        # stderr goes to a file: when the worker dies, its last words (LLVM ERROR ...,
        # Check failed ...) say why
        self.stderr = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verify.fuzz.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1, env=env)
        self.proc.stdin.write(json.dumps(cfg) + "\n")
        self.proc.stdin.flush()
        self.job = None
        self.phase = None
        self.started = None
        self.ops = None  # the ops of the program in hand (from its phase message)
        threading.Thread(target=self._read, args=(events,), daemon=True).start()

    def _read(self, events):
        for line in self.proc.stdout:
            events.put((self, json.loads(line)))
        events.put((self, None))

    def send(self, job):
        self.job = job
        self.pending = list(job["seeds"])  # seeds without a result yet
        self.seed = self.pending[0]
        self.phase = "draw"
        self.started = time.monotonic()
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()

    def last_words(self) -> str:
        """The most telling line of what the worker wrote to stderr (the fatal one)."""
        try:
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - 20000))
            lines = self.stderr.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        for marker in ("LLVM ERROR", "Check failed", "F1", "terminate called", "what():",
                       "Fatal Python error", "Segmentation"):
            hits = [ln for ln in lines if marker in ln]
            if hits:
                return hits[-1].strip()[:500]
        return lines[-1].strip()[:500] if lines else ""

    def kill(self):
        try:
            self.proc.kill()
        except OSError:
            pass


class Campaign:
    """Runs seeds through ``jobs`` workers, ``batch`` seeds per job (their programs are
    compiled by XLA as one module; see ``worker.batched``). ``cfg``: the worker options
    (max_ops, ops, element_types, division_by_zero, interpret)."""

    def __init__(self, cfg, jobs: int = 2, timeout: float = 30.0, batch: int = 8):
        self.cfg = cfg
        self.jobs = jobs
        self.timeout = timeout
        self.batch = batch
        self.events = queue.Queue()
        self.spawned = 0
        self._idle = []  # live workers between runs, reused by the next one

    def _spawn(self):
        self.spawned += 1
        return _Worker(self.cfg, self.events)

    def close(self):
        """Stop the workers kept for the next run."""
        for w in self._idle:
            w.kill()
        self._idle = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self, seeds, deadline: float | None = None, on_result=None, n_ops=None):
        """Run the programs of ``seeds`` (an iterable of ints) until it is exhausted or
        ``deadline`` (time.monotonic()) passes; returns their records, in completion order.
        A worker that dies or hangs has its record written for the seed and phase it was
        in; the rest of its batch runs again one seed per job."""
        idle = self._idle + [self._spawn() for _ in range(self.jobs - len(self._idle))]
        self._idle = []
        busy = set()
        results = []
        seeds = iter(seeds)
        retry = []
        exhausted = False

        def next_job():
            nonlocal exhausted
            if retry:
                return {"seeds": [retry.pop(0)], "n_ops": n_ops}
            if exhausted or (deadline is not None and time.monotonic() >= deadline):
                return None
            group = []
            for seed in seeds:
                group.append(seed)
                if len(group) == self.batch:
                    break
            if len(group) < self.batch:
                exhausted = True
            return {"seeds": group, "n_ops": n_ops} if group else None

        def feed():
            while idle:
                job = next_job()
                if job is None:
                    return
                w = idle.pop()
                w.send(job)
                busy.add(w)

        def record(w, rec):
            rec.setdefault("n_ops_asked", n_ops)
            if rec["seed"] in w.pending:
                w.pending.remove(rec["seed"])
            results.append(rec)
            if on_result is not None:
                on_result(rec)

        def lost(w, kind):
            """``w`` died or hung: the seed in hand gets the record, the batch is retried."""
            code = w.proc.poll()
            why = w.last_words()
            if w.phase == "xla_batch":
                retry.extend(w.pending)
            else:
                rec = {"seed": w.seed, "xla": f"{kind}:{w.phase}", "returncode": code,
                       "xla_error": why}
                if w.phase == "interpreter":
                    rec = {"seed": w.seed, "xla": "ok", "interpreter": kind,
                           "returncode": code, "interpreter_error": why,
                           "ops": w.ops or []}
                record(w, rec)
                retry.extend(s for s in w.pending)
            busy.discard(w)

        checked = time.monotonic()

        def expire():
            """Kill and replace the workers past their time. Run every half second whatever
            the queue holds: with several jobs, a busy worker's messages keep it from ever
            being empty that long, and a hung one would wait for the rest to finish."""
            nonlocal checked
            now = time.monotonic()
            if now - checked < 0.5:
                return
            checked = now
            for w in list(busy):
                limit = self.timeout * (2 if w.phase == "xla_batch" else 1)
                if now - w.started > limit:
                    w.kill()
                    lost(w, "timeout")
                    idle.append(self._spawn())

        feed()
        while busy:
            try:
                w, msg = self.events.get(timeout=0.5)
            except queue.Empty:
                expire()
                feed()
                continue
            expire()
            if w not in busy:
                continue
            if msg is None:  # the worker died with a job in hand
                w.proc.wait()
                lost(w, "crash")
                idle.append(self._spawn())
            elif "phase" in msg:
                w.phase, w.seed, w.started = msg["phase"], msg["seed"], time.monotonic()
                w.ops = msg.get("ops")
            elif "result" in msg:
                record(w, msg["result"])
            elif msg.get("done"):
                busy.discard(w)
                idle.append(w)
            feed()
        self._idle = idle
        return results


def outcome(rec) -> str:
    """One word for what happened to a program: its finding class, or ok / explained."""
    x = rec.get("xla")
    if x != "ok":
        return f"xla:{x}"
    i = rec.get("interpreter")
    if i is None:
        return "xla_only"
    if i == "unsupported":
        return "interpreter_unsupported"
    if i != "ok":
        return f"interpreter:{i}"
    return rec.get("class") or "agree"


def totals(results, seconds, jobs) -> dict:
    """The campaign's JSON report."""
    n = len(results)
    outcomes = collections.Counter(outcome(r) for r in results)
    valid = [r for r in results if r.get("xla") == "ok"]
    ops = sorted({o for r in valid for o in r.get("ops", ())})
    ets = sorted({e for r in valid for e in r.get("element_types", ())})
    disagreements = {k: v for k, v in outcomes.items()
                     if k.startswith(("disagreement", "interpreter:", "xla:"))}
    explained = collections.Counter(
        d["explained_by"] for r in results for d in r.get("differences", ())
        if d.get("explained_by"))
    known = collections.Counter(r["known"] for r in results if r.get("known"))
    spent = collections.Counter()
    for r in results:
        spent.update(r.get("seconds") or {})
    new = collections.Counter(outcome(r) for r in results if not r.get("known")
                              and outcome(r).startswith(("disagreement", "interpreter:",
                                                         "xla:")))
    return {"programs": n, "seconds": round(seconds, 2),
            "programs_per_s": round(n / seconds, 2) if seconds else None, "jobs": jobs,
            "valid_fraction": round(len(valid) / n, 4) if n else None,
            "compared": sum(1 for r in results if r.get("interpreter") == "ok"),
            "outcomes": dict(outcomes), "disagreements": disagreements,
            "known": dict(known), "new_disagreements": dict(new),
            "explained": dict(explained),
            # worker seconds by phase (summed over jobs: compare with seconds * jobs)
            "phase_seconds": {k: round(v, 2) for k, v in sorted(spent.items())},
            "ops_covered": ops,
            "element_types_covered": ets}
