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
