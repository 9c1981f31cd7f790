"""``python -m verify.fuzz``: a bounded, seeded campaign reports what it promises, attributes a
crash to the executor that had it without stopping, and saves reproducers that load and run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

import verify
from verify.fuzz import reproducers

KEYS = {"programs", "programs_per_s", "valid_fraction", "ops_covered",
        "element_types_covered", "disagreements", "outcomes", "findings"}


def _fuzz(*args):
    out = subprocess.run([sys.executable, "-m", "verify.fuzz", "--json", *args],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_a_seeded_campaign_compares_both_executors(tmp_path):
    r = _fuzz("--programs", "40", "--seed", "5", "--jobs", "2", "--minutes", "5", "--out",
              str(tmp_path), "--reduce-seconds", "30")
    assert KEYS <= set(r)
    assert r["programs"] == 40 and r["valid_fraction"] == 1.0
    assert sum(r["outcomes"].values()) == 40
    assert r["compared"] > 0 and len(r["ops_covered"]) > 30
    assert all(f["outcome"] in r["outcomes"] for f in r["findings"])
    # where the workers' time went, by phase; their sum cannot exceed the jobs' wall time
    phases = r["phase_seconds"]
    assert set(phases) == {"draw", "xla", "interpreter"}
    assert all(v > 0 for v in phases.values())
    assert sum(phases.values()) <= r["seconds"] * r["jobs"] * 1.05


def test_an_interpreter_crash_is_recorded_and_the_campaign_goes_on(tmp_path):
    # integer division by zero: XLA defines it, the interpreter dies of SIGFPE
    r = _fuzz("--programs", "6", "--seed", "1", "--jobs", "1", "--ops", "divide",
              "--element-types", "i32", "--division-by-zero", "--max-ops", "1",
              "--out", str(tmp_path), "--reduce-seconds", "0")
    assert r["programs"] == 6
    assert r["outcomes"].get("interpreter:crash", 0) >= 1
    crashed = [f for f in r["findings"] if f["outcome"] == "interpreter:crash"]
    assert crashed
    # the saved reproducer reads back and XLA runs it
    paths = r["reproducers"]
    assert paths
    base = paths[0]
    assert os.path.exists(base + ".mlir") and os.path.exists(base + ".json")
    module, inputs = reproducers.load(base)
    outs = verify.run(module, *inputs)
    assert outs and all(isinstance(o, np.ndarray) for o in outs)
    record = json.load(open(base + ".json"))
    assert "generate_seeded" in record["reproduce"]


def test_draw_only_measures_generation():
    r = _fuzz("--draw-only", "--programs", "200", "--seed", "3")
    assert r["programs"] == 200 and r["programs_per_s"] > 0


def test_a_hung_worker_is_replaced_while_another_is_busy():
    """With two jobs the other worker's messages kept the queue from ever being empty for
    half a second, and a hung worker (stopped here, as a compile that never returns) was
    only timed out when the other ran out of work: now within about its timeout."""
    import signal
    import threading
    import time

    from verify.fuzz.campaign import Campaign, outcome, seed_of
    cfg = {"max_ops": 3, "ops": None, "element_types": None, "division_by_zero": False,
           "interpret": False, "xla_flags": None}
    log = []
    t0 = time.monotonic()
    with Campaign(cfg, jobs=2, timeout=3.0, batch=1) as c:
        c._idle = [c._spawn() for _ in range(2)]  # (the run's workers, to stop one of them)
        victim = c._idle[0].proc

        def stop():
            time.sleep(4)
            os.kill(victim.pid, signal.SIGSTOP)
            log.append(("stopped", time.monotonic() - t0))
        threading.Thread(target=stop, daemon=True).start()
        c.run((seed_of(31, i) for i in range(100000)), deadline=t0 + 14,
              on_result=lambda r: log.append((outcome(r), time.monotonic() - t0)))
    stopped = next(t for what, t in log if what == "stopped")
    timeouts = [t for what, t in log if "timeout" in what]
    assert timeouts, log[-5:]
    assert timeouts[0] - stopped < 10, (stopped, timeouts)


def test_options_every_program_would_fail_on_are_usage_errors():
    for bad, said in ((["--timeout", "0"], "--timeout must be more than 0"),
                      (["--seed", "-1"], "--seed must not be negative"),
                      (["--ops", ""], "--ops is empty"),
                      (["--element-types", " "], "--element-types is empty"),
                      (["--draw-only", "--out", "x", "--xla-only"],
                       "--out, --xla-only would be ignored"),
                      (["--xla-flags=--no_such_flag"], "Unknown flag in XLA_FLAGS")):
        r = subprocess.run([sys.executable, "-m", "verify.fuzz", "--programs", "2", *bad],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and said in r.stderr, (bad, r.returncode, r.stderr[-300:])


def test_a_reduced_reproducer_shows_the_same_finding():
    """A shorter prefix of the same outcome class that shows another known finding is not
    the finding's reproducer (a prefix showing xla_mulhi_4_bit once stood for a new
    disagreement); the campaign here is a stand-in giving such prefixes."""
    from verify.fuzz.__main__ import _reduce

    class Prefixes:
        cfg = {"max_ops": 8}

        def run(self, seeds, n_ops=None):
            known = "xla_mulhi_4_bit" if n_ops < 3 else None
            return [{"seed": seeds[0], "xla": "ok", "interpreter": "ok", "n_ops": n_ops,
                     "class": "disagreement:float", "known": known}]
    finding = {"seed": 7, "xla": "ok", "interpreter": "ok", "n_ops": 6,
               "class": "disagreement:float", "known": None}
    assert _reduce(Prefixes(), [finding], 60)[7]["n_ops"] == 3
