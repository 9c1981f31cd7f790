"""``python -m verify.distributed.launch -n 2 --local-devices 4 script.py [args]``: a group of
processes on this machine, as a cluster scheduler would start them on several.

It picks a free loopback port for the coordinator, starts ``script.py`` ``-n`` times with the
environment ``verify.distributed.initialize()`` reads (``verify.distributed.ENV``), prefixes
every line a child prints with ``[i]``, and exits with the worst child's status (a child
killed by a signal counts as 128 + the signal). When one child fails, the others get
``--timeout`` seconds to end on their own (the coordination service stops them once their
heartbeats go unanswered) and are then killed: the launcher never waits forever.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from . import ENV

__all__ = ["main", "launch", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the OS's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _pump(stream, prefix: str, out) -> None:
    for line in iter(stream.readline, ""):
        out.write(f"{prefix}{line}" if line.endswith("\n") else f"{prefix}{line}\n")
        out.flush()
    stream.close()


def launch(command: list, num_processes: int, local_devices: int = 1,
           timeout: float = 60.0, coordinator: str | None = None, out=None) -> int:
    """Run ``command`` (argv) as ``num_processes`` processes of one group; the worst exit
    status. ``timeout`` is both the group's (``initialize``'s) and how long the others may
    take to end once one has failed."""
    out = out or sys.stdout
    coordinator = coordinator or f"127.0.0.1:{free_port()}"
    procs, pumps = [], []
    for i in range(num_processes):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.update({ENV["coordinator"]: coordinator, ENV["num_processes"]: str(num_processes),
                    ENV["process_id"]: str(i), ENV["local_devices"]: str(local_devices),
                    ENV["timeout"]: str(timeout)})
        p = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace")
        t = threading.Thread(target=_pump, args=(p.stdout, f"[{i}] ", out), daemon=True)
        t.start()
        procs.append(p)
        pumps.append(t)
    deadline = None
    while any(p.poll() is None for p in procs):
        failed = any(p.returncode not in (None, 0) for p in procs)
        if failed and deadline is None:
            deadline = time.monotonic() + timeout
        if deadline is not None and time.monotonic() > deadline:
            for i, p in enumerate(procs):
                if p.poll() is None:
                    out.write(f"[launch] process {i} did not end within {timeout:g} s of a "
                              "failure: killed\n")
                    p.kill()
            break
        time.sleep(0.05)
    codes = [p.wait() for p in procs]
    for t in pumps:
        t.join(5)
    statuses = [128 - c if c < 0 else c for c in codes]  # -SIG -> 128 + SIG
    for i, (c, st) in enumerate(zip(codes, statuses)):
        if c < 0:
            try:
                name = signal.Signals(-c).name
            except ValueError:
                name = f"signal {-c}"
            out.write(f"[launch] process {i} was killed by {name}\n")
        elif c:
            out.write(f"[launch] process {i} exited with status {c}\n")
    out.flush()
    return max(statuses, default=0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m verify.distributed.launch",
        description="Start a group of processes on this machine that run one program over "
                    "XLA's distributed runtime (see verify.distributed).")
    p.add_argument("-n", "--num-processes", type=int, required=True)
    p.add_argument("--local-devices", type=int, default=1, help="CPU devices per process")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds for joining, heartbeats, and for the others to end after a "
                        "failure (default 60)")
    p.add_argument("script", help="the Python script each process runs")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    args = p.parse_args(argv)
    if args.num_processes < 1 or args.local_devices < 1:
        p.error("-n and --local-devices must be at least 1")
    return launch([sys.executable, args.script, *args.args], args.num_processes,
                  args.local_devices, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
