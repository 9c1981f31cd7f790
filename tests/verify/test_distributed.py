"""Several processes, one program, through XLA's distributed runtime: 2 processes x 4 CPU
devices on loopback, started by ``python -m verify.distributed.launch``.

Oracle: the same program in one process on 8 CPU devices (``run_sharded``), itself checked
against numpy elsewhere (tests/lower/test_parallel.py, the collective op cases). Failures:
a process that dies or is killed, and a coordinator nobody listens on, end the run with a
clear error within the stated timeout.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import verify
from tests.verify import distributed_program as progs
from verify.distributed.launch import free_port
from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(progs.__file__)


def launch(*args, timeout=60):
    env = child_env()
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "verify.distributed.launch", "-n", "2",
                        "--local-devices", "4", "--timeout", str(timeout), str(SCRIPT),
                        *map(str, args)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    return r, time.monotonic() - start


@pytest.mark.parametrize("name", sorted(progs.PROGRAMS))
def test_two_processes_equal_one(name, tmp_path):
    out = tmp_path / f"{name}.npz"
    r, _ = launch(name, out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[0] process 0 gathered" in r.stdout
    m, inputs, kw = progs.PROGRAMS[name]()
    single = verify.compile(m, **kw).run_sharded(inputs)
    with np.load(out) as z:
        for k, per_device in enumerate(single):
            for d, want in enumerate(per_device):
                got = z[f"r{k}_d{d}"]
                if want.dtype.kind == "f":
                    # Sums across processes may add in another order than within one.
                    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6,
                                               err_msg=f"result {k} on device {d}")
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"result {k}, dev {d}")


@pytest.mark.parametrize("scenario, said", [
    # a killed process ends the others within the timeout
    ("killed_in_psum", ["[launch] process 1 was killed by SIGKILL",
                        "stopped sending heartbeats"]),       # what process 0 is told
    # a process that exits makes the others fail clearly: the barrier's DistributedError, or
    # jaxlib's own abort when its error-polling thread wins the race (the same instant; no
    # Python callback can stop it: jaxlib 0.10.2's missed_heartbeat_callback cannot pass its
    # absl::Status to Python and terminates with std::bad_cast)
    ("die", ["[launch] process 1 exited with status 3",
             ("DistributedError: process 0: barrier 'never reached by process 1' was not "
              "reached by every process within 8 s",
              "Terminating process because the JAX distributed service detected fatal errors"),
             ("Task 1 heartbeat timeout", "stopped sending heartbeats")]),
    # mismatched programs are an error, not a hang
    ("mismatched", ["DistributedError: process 0: processes 1 compiled a different program",
                    "DistributedError: process 1: processes 0 compiled a different program"]),
])
def test_a_failing_process_ends_the_run_clearly_within_the_timeout(scenario, said):
    r, seconds = launch(scenario, timeout=8)
    assert r.returncode != 0
    for line in said:   # a tuple: one of these
        assert any(one in r.stdout for one in ((line,) if isinstance(line, str) else line)), \
            (line, r.stdout[-3000:])
    assert seconds < 8 + 20, seconds


def test_a_program_on_one_process_s_devices_tells_the_other_so():
    r, _ = launch("fewer")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "process 0 ran the psum" in r.stdout
    assert "process 1 was told it holds none of the devices" in r.stdout


def test_processes_that_count_the_group_apart_are_told_so():
    # (they joined, and jaxlib aborted both in their first collective, process 1 told that
    # a process 2 had not compiled its program)
    r, seconds = launch("disagree", timeout=30)  # (a slow start is not what is tested)
    assert r.returncode != 0
    assert "ERR process 1 joined a group of 3 processes, process 0 one of 2" in r.stdout, \
        r.stdout[-2000:]
    assert "ERR process 0 joined a group of 2 processes, process 1 one of 3" in r.stdout
    assert seconds < 30 + 20, seconds


def test_an_unreachable_coordinator_is_an_error_within_the_timeout():
    port = free_port()   # nothing listens there
    code = ("from verify import distributed\n"
            "try:\n"
            f"    distributed.initialize('127.0.0.1:{port}', num_processes=2, process_id=1, "
            "timeout=3)\n"
            "except distributed.DistributedError as e:\n"
            "    print('ERR', e)\n")
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=child_env(), cwd=ROOT, timeout=120)
    seconds = time.monotonic() - start
    assert f"ERR process 1 could not join the group at 127.0.0.1:{port} within 3 s" \
        in r.stdout, r.stdout + r.stderr
    assert seconds < 3 + 20, seconds


def test_initialize_needs_the_group_or_the_launchers_environment(monkeypatch):
    from verify import distributed
    for var in distributed.ENV.values():
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(distributed.DistributedError, match="needs coordinator, num_processes "
                                                           "and process_id"):
        distributed.initialize()
    with pytest.raises(distributed.DistributedError, match="process_id 2 is not in range"):
        distributed.initialize("127.0.0.1:1", num_processes=2, process_id=2)


def test_launcher_prefixes_output_and_returns_the_worst_status(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import os, sys\n"
                      "i = int(os.environ['MHLO_IR_PROCESS_ID'])\n"
                      "print('hello from', i, os.environ['MHLO_IR_NUM_PROCESSES'],\n"
                      "      os.environ['MHLO_IR_LOCAL_DEVICES'])\n"
                      "sys.exit(5 if i == 1 else 0)\n")
    r = subprocess.run([sys.executable, "-m", "verify.distributed.launch", "-n", "3",
                        "--local-devices", "2", "--timeout", "5", str(script)],
                       capture_output=True, text=True, cwd=ROOT,
                       env=child_env(), timeout=120)
    assert r.returncode == 5
    for i in range(3):
        assert f"[{i}] hello from {i} 3 2" in r.stdout
    assert "[launch] process 1 exited with status 5" in r.stdout


def test_run_sharded_refuses_a_multi_process_executable():
    """In one process, every device is local: run_local is run_sharded."""
    m, inputs, kw = progs.psum()
    exe = verify.compile(m, **kw)
    assert exe.local_devices() == exe.devices
    np.testing.assert_array_equal(np.stack([o for o in exe.run_local(inputs)[0]]),
                                  np.stack([o for o in exe.run_sharded(inputs)[0]]))


def test_the_readme_script_runs_under_the_launcher(tmp_path):
    """README's "Several processes" script, as written, under the launcher command it shows."""
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Several processes"):]
    block = section[section.index("A script (`psum.py`):"):section.index("On one machine")]
    code = "\n".join(ln[4:] for ln in block.splitlines()[1:] if ln.startswith("    ") or not
                     ln.strip())
    assert "distributed.initialize()" in code and "run_local" in code
    script = tmp_path / "psum.py"
    script.write_text(code)
    r = subprocess.run([sys.executable, "-m", "verify.distributed.launch", "-n", "2",
                        "--local-devices", "4", str(script)], capture_output=True, text=True,
                       cwd=ROOT, env=child_env(), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for i in (0, 1):
        assert f"[{i}] {i} [28. 28. 28.]" in r.stdout, r.stdout
