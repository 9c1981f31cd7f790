"""One SPMD program over several processes, through XLA's own distributed runtime (the one
``jax.distributed`` uses), with jaxlib alone.

Each process calls ``initialize`` (process 0 also starts the coordination service), compiles
the same program for the global devices (``verify.compile(m, num_replicas=8,
distributed=ctx)``) and runs it with ``exe.run_local(...)``, feeding only its own devices'
shards; collectives between processes go over TCP (gloo). ``python -m
verify.distributed.launch -n 2 --local-devices 4 script.py`` starts such a group on one
machine, which is how tests and users try it without a cluster; on several hosts, run the
same script on each with ``initialize(coordinator="HOST0:PORT", num_processes=N,
process_id=i)``.

Failures are bounded by ``timeout`` seconds: a coordinator that cannot be reached makes
``initialize`` raise ``DistributedError``; processes that compiled different programs get a
``DistributedError`` from ``verify.compile`` (the processes agree on each program's
fingerprint, since mismatched collectives could wait forever); a process that dies makes the
coordination service stop every other one after its heartbeat timeout (XLA ends them with
"Terminating process because the JAX distributed service detected fatal errors").
"""

from __future__ import annotations

import io
import os
import time

import numpy as np

from .. import _jaxlib

__all__ = ["initialize", "shutdown", "Context", "DistributedError", "ENV"]

# What the launcher sets in each child, and what ``initialize()`` reads without arguments.
ENV = {"coordinator": "MHLO_IR_COORDINATOR", "num_processes": "MHLO_IR_NUM_PROCESSES",
       "process_id": "MHLO_IR_PROCESS_ID", "local_devices": "MHLO_IR_LOCAL_DEVICES",
       "timeout": "MHLO_IR_DISTRIBUTED_TIMEOUT"}


class DistributedError(RuntimeError):
    """The group of processes could not be formed or used (unreachable coordinator, bad
    arguments, a peer that did not answer in time)."""


class Context:
    """This process's place in the group: ``process_id``, ``num_processes``, its
    ``local_devices`` and the ``global_devices`` of every process (device ids differ between
    processes), and the CPU ``client`` that compiles for them."""

    def __init__(self, process_id, num_processes, client, dist_client, service, timeout):
        self.process_id = process_id
        self.num_processes = num_processes
        self.client = client
        self.local_devices = list(client.local_devices())
        self.global_devices = list(client.devices())
        self.timeout = timeout
        self._dist = dist_client
        self._service = service
        self._closed = False
        self._agreements = 0
        self._gathers: dict = {}  # name -> its gathers so far (each gets keys of its own)

    def barrier(self, name: str) -> None:
        """Wait until every process reaches the barrier ``name`` (DistributedError after
        ``timeout`` seconds)."""
        try:
            self._dist.wait_at_barrier(name, int(self.timeout * 1000))
        except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
            raise DistributedError(f"process {self.process_id}: barrier {name!r} was not "
                                   f"reached by every process within {self.timeout:g} s "
                                   f"({_one_line(e)})") from None

    def agree(self, what: str, value: str) -> None:
        """Check that every process gives the same ``value`` for the ``what``-th agreement
        (in order of calls); DistributedError naming the processes that differ, or those that
        did not answer within ``timeout``. ``verify.compile`` agrees on each program's
        fingerprint, so a mismatched program fails here rather than in a collective that
        waits forever."""
        self._agreements += 1
        key = f"mhlo_ir/agree/{self._agreements}"
        self._dist.key_value_set(f"{key}/{self.process_id}", value)
        theirs = {}
        for p in range(self.num_processes):
            try:
                theirs[p] = self._dist.blocking_key_value_get(f"{key}/{p}",
                                                              int(self.timeout * 1000))
            except Exception as e:  # noqa: BLE001
                raise DistributedError(f"process {self.process_id}: process {p} did not "
                                       f"compile its program ({what}) within "
                                       f"{self.timeout:g} s ({_one_line(e)})") from None
        differ = sorted(p for p, v in theirs.items() if v != value)
        if differ:
            raise DistributedError(f"process {self.process_id}: processes "
                                   f"{', '.join(map(str, differ))} compiled a different "
                                   f"{what} (every process must run the same program)")

    def gather(self, name: str, arrays) -> list | None:
        """On process 0, every process's ``arrays`` (a list of numpy arrays), by process
        (a list of lists); None on the others. For tests and small results: the arrays go
        through the coordinator's key-value store. A name may be used again (every process
        gathers in the same order, as with ``agree``): each use has keys of its own."""
        buf = io.BytesIO()
        np.savez(buf, *[np.asarray(a) for a in arrays])
        uses = self._gathers[name] = self._gathers.get(name, 0) + 1
        key = f"mhlo_ir/gather/{name}/{uses}"
        self._dist.key_value_set_bytes(f"{key}/{self.process_id}", buf.getvalue())
        if self.process_id != 0:
            self.barrier(key)
            return None
        out = []
        for p in range(self.num_processes):
            try:
                raw = self._dist.blocking_key_value_get_bytes(
                    f"{key}/{p}", int(self.timeout * 1000))
            except Exception as e:  # noqa: BLE001
                raise DistributedError(f"process {p} did not send {name!r} within "
                                       f"{self.timeout:g} s ({_one_line(e)})") from None
            with np.load(io.BytesIO(raw)) as z:
                out.append([z[f"arr_{i}"] for i in range(len(z.files))])
        self.barrier(key)
        return out

    def shutdown(self) -> None:
        """Leave the group (every process waits for the others here), then stop the
        coordination service on process 0."""
        if self._closed:
            return
        self._closed = True
        try:
            self._dist.shutdown()
        finally:
            if self._service is not None:
                self._service.shutdown()
        global _current
        if _current is self:
            _current = None


_current: Context | None = None


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_devices: int | None = None,
               timeout: float | None = None) -> Context:
    """Join (process 0: start) the group: ``coordinator`` is ``host:port`` of process 0's
    coordination service, ``local_devices`` this process's CPU devices (default 1),
    ``timeout`` seconds for connecting, heartbeats and shutdown (default 60). Arguments
    left out are read from the launcher's environment (``ENV``)."""
    global _current
    if _current is not None:
        raise DistributedError("this process has joined a group already: shutdown() first")
    coordinator = coordinator or os.environ.get(ENV["coordinator"])
    num_processes = _int(num_processes, "num_processes")
    process_id = _int(process_id, "process_id")
    local_devices = _int(local_devices, "local_devices", 1)
    if timeout is None:
        timeout = float(os.environ.get(ENV["timeout"], 60))
    if not coordinator or num_processes is None or process_id is None:
        raise DistributedError("initialize() needs coordinator, num_processes and "
                               "process_id (or the environment python -m "
                               "verify.distributed.launch sets)")
    if not 0 <= process_id < num_processes:
        raise DistributedError(f"process_id {process_id} is not in range for "
                               f"{num_processes} processes")
    _, X = _jaxlib.xla()
    seconds = max(1, int(round(timeout)))
    service = None
    if process_id == 0:
        try:
            service = X.get_distributed_runtime_service(
                coordinator, num_processes, heartbeat_timeout=seconds,
                cluster_register_timeout=seconds, shutdown_timeout=seconds)
        except Exception as e:  # noqa: BLE001
            raise DistributedError(f"process 0 could not start the coordination service at "
                                   f"{coordinator} ({_one_line(e)})") from None
    if service is None:
        # jaxlib ends the whole process (a fatal log) when connecting fails: make sure the
        # coordinator answers first, and say plainly when it does not.
        _wait_for(coordinator, timeout, process_id)
    dist = X.get_distributed_runtime_client(coordinator, process_id, init_timeout=seconds,
                                            heartbeat_timeout=seconds,
                                            shutdown_timeout=seconds)
    try:
        dist.connect()
    except Exception as e:  # noqa: BLE001
        if service is not None:
            service.shutdown()
        raise DistributedError(f"process {process_id} could not join the group at "
                               f"{coordinator} within {timeout:g} s: the coordinator is "
                               "unreachable or not every process started "
                               f"({_one_line(e)})") from None
    _agree_on_size(dist, process_id, num_processes, timeout)
    host = coordinator.rsplit(":", 1)[0]
    collectives = X.make_gloo_tcp_collectives(dist, hostname=_local_hostname(host))
    client = X.get_tfrt_cpu_client(asynchronous=True, distributed_client=dist,
                                   node_id=process_id, num_nodes=num_processes,
                                   collectives=collectives, num_devices=local_devices)
    _current = Context(process_id, num_processes, client, dist, service, timeout)
    return _current


def _agree_on_size(dist, process_id: int, num_processes: int, timeout: float) -> None:
    """DistributedError unless every process joined with process 0's ``num_processes``:
    one that counts otherwise joins the service all the same, and the group then waits in
    its first collective until jaxlib aborts every process. Every process says its count,
    all read (process 0 every count, the others process 0's), and only then does any leave:
    process 0 holds the service, and leaving early would abort those still reading."""
    ms = int(timeout * 1000)
    dist.key_value_set(f"mhlo_ir/group/{process_id}", str(num_processes))
    try:
        dist.wait_at_barrier("mhlo_ir/group/said", ms)
        counts = {p: dist.blocking_key_value_get(f"mhlo_ir/group/{p}", ms)
                  for p in ((0,) if process_id else range(num_processes))}
        dist.wait_at_barrier("mhlo_ir/group/read", ms)
    except Exception as e:  # noqa: BLE001
        raise DistributedError(f"process {process_id}: not every process of the group said "
                               f"how many processes it has within {timeout:g} s "
                               f"({_one_line(e)})") from None
    for p, theirs in counts.items():
        if theirs != str(num_processes):
            # Every process that finds a disagreement meets the others that do once more
            # before leaving, and process 0, which holds the service, leaves a moment after
            # them: leaving as soon as it knew lost the reply to another's last call, or let
            # jaxlib's error polling end another process before it said what was wrong (a
            # process that agrees with process 0 does not come: the wait is short, and its
            # failure is nothing to report).
            try:
                dist.wait_at_barrier("mhlo_ir/group/judged", min(ms, 5000))
            except Exception:  # noqa: BLE001
                pass
            if process_id == 0:
                time.sleep(1.0)
            raise DistributedError(f"process {process_id} joined a group of {num_processes} "
                                   f"processes, process {p} one of {theirs}: every process "
                                   "must give the same num_processes")


def shutdown() -> None:
    """Leave the group this process joined with ``initialize`` (nothing if none)."""
    if _current is not None:
        _current.shutdown()


def _wait_for(coordinator: str, timeout: float, process_id: int) -> None:
    """Return once something accepts TCP connections at ``coordinator``; DistributedError
    after ``timeout`` seconds of trying."""
    import socket
    host, _, port = coordinator.rpartition(":")
    try:
        port_number = int(port)
    except ValueError:
        raise DistributedError(f"coordinator {coordinator!r} is not host:port") from None
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host.strip("[]"), port_number),
                                          timeout=max(0.1, min(1.0, timeout))):
                return
        except OSError as e:
            last = e
            time.sleep(0.1)
    raise DistributedError(f"process {process_id} could not join the group at {coordinator} "
                           f"within {timeout:g} s: nothing answers there (is process 0 "
                           f"running, and is this its address?) ({last})")


def _int(value, name: str, default=None):
    if value is not None:
        return int(value)
    raw = os.environ.get(ENV[name])
    return int(raw) if raw not in (None, "") else default


def _local_hostname(coordinator_host: str) -> str:
    # On one machine (loopback), gloo must listen on loopback too.
    if coordinator_host in ("127.0.0.1", "localhost", "[::1]", "::1"):
        return coordinator_host.strip("[]")
    import socket
    return socket.gethostname()


def _one_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = lines[0] if lines else type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."
