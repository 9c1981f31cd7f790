"""The programs of tests/verify/test_distributed.py, and the script each process of the group
runs: ``python distributed_program.py NAME OUT.npz`` under ``verify.distributed.launch``.

Every program runs on 8 devices, given as ``(module, per-device inputs, compile keywords)``;
the test runs the same in one process on 8 CPU devices and compares. ``die`` is a process 1
that exits at once after joining, ``killed_in_psum`` one killed while process 0 waits in a
psum for it: the others must end on their own. ``mismatched`` has the two processes compile
different programs.
"""

from __future__ import annotations

import os
import sys

import numpy as np

N = 8
F32 = np.float32


def _inputs(shape, seed):
    rng = np.random.default_rng(seed)
    return [[rng.uniform(-4, 4, shape).astype(F32)] for _ in range(N)]


def psum():
    import mhlo_ir as hlo
    m = hlo.Module("psum")
    f = m.add_function("main", [hlo.tensor((3,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.all_reduce(f.arguments[0], lambda r, a, c: r.add(a, c),
                           replica_groups=[list(range(N))]))
    return m, _inputs((3,), 1), {"num_replicas": N}


def all_gather():
    import mhlo_ir as hlo
    m = hlo.Module("gather")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.i32)], visibility="public")
    b = f.builder()
    b.return_(b.all_gather(f.arguments[0], 0, replica_groups=[list(range(N))]))
    ins = [[np.arange(6, dtype=np.int32).reshape(2, 3) + 10 * d] for d in range(N)]
    return m, ins, {"num_replicas": N}


def matmul():
    """The contraction split over 8 partitions: XLA's partitioner inserts the all-reduce."""
    from lower import lax, lower_jaxpr_to_module
    a = np.random.default_rng(2).uniform(-1, 1, (4, 16)).astype(F32)
    w = np.random.default_rng(3).uniform(-1, 1, (16, 8)).astype(F32)
    closed = lax.make_jaxpr(lambda a, w: lax.dot(a, w))(a, w)
    m = lower_jaxpr_to_module("matmul", closed,
                              arg_shardings=["{devices=[1,8]0,1,2,3,4,5,6,7}",
                                             "{devices=[8,1]0,1,2,3,4,5,6,7}"],
                              result_shardings=["{replicated}"], num_partitions=N).module
    ins = [[a[:, 2 * d:2 * d + 2], w[2 * d:2 * d + 2]] for d in range(N)]
    return m, ins, {"num_partitions": N}


def shard_map():
    """Per-device code with explicit collectives (psum over y, pmax over both axes)."""
    from lower import lax, lower_jaxpr_to_module
    from lower import tracing as tr
    from lower.axis_context import Mesh, P, spec_to_hlo_sharding
    mesh = Mesh.create({"x": 2, "y": 4})
    full = np.arange(N * 3, dtype=F32).reshape(N, 3) * 1.5 - 7
    rows = spec_to_hlo_sharding(mesh, P(("x", "y")), 2)

    def f(v):
        return lax.shard_map(lambda u: (lax.psum(tr.tanh(u), "y"), lax.pmax(u, ("x", "y"))),
                             mesh, in_specs=(P(("x", "y")),), out_specs=(P(("x", "y")),) * 2)(v)
    closed = tr.make_jaxpr(f)(full)
    m = lower_jaxpr_to_module("shmap", closed, arg_shardings=[rows],
                              result_shardings=[rows] * 2, num_partitions=N).module
    return m, [[full[d:d + 1]] for d in range(N)], {"num_partitions": N}


PROGRAMS = {"psum": psum, "all_gather": all_gather, "matmul": matmul, "shard_map": shard_map}


def main(name: str, out: str) -> int:
    import verify
    from verify import distributed
    if name == "disagree":   # process 1 counts 3 processes, process 0 (the service) 2
        mine = int(os.environ[distributed.ENV["process_id"]])
        try:
            distributed.initialize(num_processes=3 if mine == 1 else None)
        except distributed.DistributedError as e:
            print("ERR", e)
            sys.stdout.flush()
            os._exit(5)   # (a group left half-joined: jaxlib's exit handlers would wait)
        return 0
    ctx = distributed.initialize()
    if name == "die":
        if ctx.process_id == 1:
            os._exit(3)   # gone, without leaving the group
        ctx.barrier("never reached by process 1")
        return 0
    if name == "fewer":   # a program on process 0's devices only
        return _fewer(ctx)
    killed = name == "killed_in_psum"
    if name == "mismatched":   # process 1 compiles all_gather where process 0 has psum
        name = "psum" if ctx.process_id == 0 else "all_gather"
    m, inputs, kw = PROGRAMS["psum" if killed else name]()
    exe = verify.compile(m, distributed=ctx, **kw)
    if killed and ctx.process_id == 1:
        import signal
        os.kill(os.getpid(), signal.SIGKILL)   # process 0 is already waiting in the psum
    # the whole group's runs are refused here, saying to use run_local
    from verify.errors import ArgumentError
    for whole in (lambda: exe.run_sharded(inputs), lambda: exe.run_global(*inputs[0])):
        try:
            whole()
        except ArgumentError as e:
            assert "run_local" in str(e), e
        else:
            raise AssertionError("a run over every process's devices was not refused")
    first = ctx.process_id * len(ctx.local_devices)
    mine = inputs[first:first + len(exe.local_devices())]
    outs = exe.run_local(mine)
    flat = [a for result in outs for a in result]
    gathered = ctx.gather(name, flat)
    if gathered is not None:
        n_results = len(outs)
        # Back to per result, per global device: process p holds devices p*k .. p*k+k-1.
        per_result = [[] for _ in range(n_results)]
        for arrays in gathered:
            k = len(arrays) // n_results
            for r in range(n_results):
                per_result[r].extend(arrays[r * k:(r + 1) * k])
        np.savez(out, **{f"r{r}_d{d}": a for r, arrs in enumerate(per_result)
                         for d, a in enumerate(arrs)})
        print(f"process 0 gathered {n_results} results from {len(gathered)} processes")
    again = ctx.gather(name, flat[:1])   # (a name may be gathered again)
    if again is not None:
        assert [len(a) for a in again] == [1] * ctx.num_processes, again
    ctx.shutdown()
    return 0


def _fewer(ctx) -> int:
    """A psum over process 0's devices: process 1 holds none of them, and is told so."""
    import mhlo_ir as hlo
    import verify
    from verify.errors import ArgumentError
    k = len(ctx.local_devices)
    m = hlo.Module("fewer")
    f = m.add_function("main", [hlo.tensor((3,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.all_reduce(f.arguments[0], lambda r, a, c: r.add(a, c),
                           replica_groups=[list(range(k))]))
    exe = verify.compile(m, num_replicas=k, distributed=ctx)
    if ctx.process_id == 0:
        outs = exe.run_local([[np.full(3, i, F32)] for i in range(k)])
        assert all((o == sum(range(k))).all() for o in outs[0]), outs
        print("process 0 ran the psum")
    else:
        try:
            exe.run_local([])
        except ArgumentError as e:
            assert "holds none of the program's" in str(e), e
            print("process 1 was told it holds none of the devices")
        else:
            raise AssertionError("run_local on a process without devices was not refused")
    ctx.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.devnull))
