"""Deep nests of regions reach jaxlib without killing the process.

jaxlib's MLIR passes recurse once per level of nesting on the calling thread: on the main
thread's stack a 1,000-deep nest of ifs crashed ``verify.check`` (SIGSEGV). verify runs
jaxlib on a thread with a large stack; XLA's compiler, which crashes on a thread of its own a
little past 200 levels, gets a clear CompileError instead. Each case runs in a subprocess, so
a regression shows as a failed test, not a dead test run.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.child_env import child_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SCRIPT = r"""
import sys
import numpy as np
import verify
from tests.mhlo_ir.test_print_state import _nested_ifs
depth, what = int(sys.argv[1]), sys.argv[2]
m = _nested_ifs(depth)
if what.endswith("text"):  # (text: our parser reads no nest this deep; its lines are counted)
    m, what = m.to_text(pretty=what.startswith("pretty")), "run"
if what == "check":
    verify.check(m)
    print("ok")
else:
    try:
        out = verify.run(m, np.bool_(True))
        print("ran", out[0])
    except verify.CompileError as e:
        print("refused", "nested" in str(e))
"""


def _run(depth, what):
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(depth), what], cwd=ROOT,
                         capture_output=True, text=True, timeout=600,
                         env=child_env())
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    return out.stdout.split()


def test_check_takes_a_nest_deeper_than_the_main_threads_stack():
    assert _run(3000, "check") == ["ok"]


def test_compile_refuses_what_xla_cannot_survive_and_runs_the_rest():
    assert _run(300, "run") == ["refused", "True"]
    assert _run(50, "run") == ["ran", "1.0"]


def test_compile_refuses_a_text_too_deep_for_xla_in_either_form():
    assert _run(300, "text") == ["refused", "True"]
    assert _run(300, "pretty text") == ["refused", "True"]
