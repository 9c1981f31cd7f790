"""Speed of building, printing and lowering, against peers measured in the same process.

    python -m lower.bench              # full run
    python -m lower.bench --quick      # smaller sizes, fewer repeats
    python -m lower.bench --json       # machine-readable
    python -m lower.bench --builder-only   # only mhlo_ir build + print (no lowering)

Peers: the MLIR Python bindings inside jaxlib doing the same build and print, and, when jax is
installed, JAX's own lowering of the equivalent JAX function (``jax.jit(f).trace(...)``, caches
cleared, then ``.lower().as_text()`` timed).

Workloads (the same program built both ways, printed in generic form):
  chain N   -- N chained elementwise ops (add/multiply alternating) on tensor<8xf32>
  mlp L     -- an L-layer MLP: dot_general, broadcast_in_dim, add, maximum per layer
  const     -- one 16 MiB f32 dense constant (random data, so no splat), build + print
Per-op cost is reported at every size so a reader sees whether it stays flat; memory is the
Python heap our module holds (tracemalloc) per op. Ratios > 1 mean we are faster.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import tracemalloc

import numpy as np

import mhlo_ir as hlo

F32_8 = hlo.tensor((8,), hlo.f32)


# -- ours ---------------------------------------------------------------------------------------

def ours_chain(n: int) -> hlo.Module:
    m = hlo.Module("chain")
    f = m.add_function("main", [F32_8, F32_8])
    b = f.builder()
    x, y = f.arguments
    add, mul = b.add, b.multiply
    for i in range(n):
        x = add(x, y) if i % 2 == 0 else mul(x, y)
    b.return_(x)
    return m


def ours_mlp(layers: int, width: int = 64, batch: int = 8) -> hlo.Module:
    m = hlo.Module("mlp")
    t_x = hlo.tensor((batch, width), hlo.f32)
    t_w = hlo.tensor((width, width), hlo.f32)
    t_b = hlo.tensor((width,), hlo.f32)
    f = m.add_function("main", [t_x, t_w, t_b])
    b = f.builder()
    x, w, bias = f.arguments
    zero = b.constant(np.float32(0))
    for _ in range(layers):
        y = b.dot_general(x, w, ((1,), (0,)))
        y = b.add(y, b.broadcast_in_dim(bias, (batch, width), [1]))
        x = b.maximum(y, b.broadcast_in_dim(zero, (batch, width), []))
    b.return_(x)
    return m


def ours_const(arr: np.ndarray) -> hlo.Module:
    m = hlo.Module("const")
    f = m.add_function("main", [])
    b = f.builder()
    b.return_(b.constant(arr))
    return m


# -- timing -------------------------------------------------------------------------------------

def best_of(fn, repeats: int):
    """Median wall time of (build, print) over ``repeats`` runs, GC enabled as users run it."""
    builds, prints = [], []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        m = fn[0]()
        t1 = time.perf_counter()
        fn[1](m)
        t2 = time.perf_counter()
        builds.append(t1 - t0)
        prints.append(t2 - t1)
        del m
    return statistics.median(builds), statistics.median(prints)


def heap_bytes(build) -> int:
    gc.collect()
    tracemalloc.start()
    m = build()
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del m
    return size


# -- lowering workloads -------------------------------------------------------------------------

def _chain_fn(n):
    from . import tracing as tr

    def f(x, y):
        for i in range(n):
            x = tr.add(x, y) if i % 2 == 0 else tr.mul(x, y)
        return x
    return f


def _mlp_fn(layers, backward):
    """An MLP (dot, bias, relu per layer); with ``backward``, also its hand-written gradient
    with respect to the input (what autodiff would emit: the transposed chain)."""
    from . import tracing as tr

    def f(x, w, b):
        acts, masks = [], []
        for _ in range(layers):
            y = tr.dot(x, w) + b
            mask = tr.gt(y, 0.0)
            x = tr.select_n(mask, tr.mul(y, 0.0), y)
            acts.append(x)
            masks.append(mask)
        if not backward:
            return x
        g = tr.reduce_sum(x, 0)
        g = tr.broadcast_in_dim(g, x.shape, (1,))
        for mask in reversed(masks):
            g = tr.select_n(mask, tr.mul(g, 0.0), g)
            g = tr.dot_general(g, w, (((1,), (1,)), ((), ())))
        return x, g
    return f


def _jax_lowering_us(kind, n, args):
    """µs per equation of JAX's own lowering of the same program, or None without jax."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    if kind == "chain":
        def jf(x, y):
            for i in range(n):
                x = x + y if i % 2 == 0 else x * y
            return x
    else:
        layers, backward = n

        def fwd(x, w, b):
            for _ in range(layers):
                x = jnp.maximum(x @ w + b, 0.0)
            return x
        jf = (lambda x, w, b: jax.grad(lambda x: fwd(x, w, b).sum())(x)) if backward else fwd
    traced = jax.jit(jf).trace(*args)
    n_eqns = len(traced.jaxpr.eqns) or 1
    best = float("inf")
    for _ in range(3):
        jax.clear_caches()
        t0 = time.perf_counter()
        traced.lower().as_text()
        best = min(best, time.perf_counter() - t0)
    return best / n_eqns * 1e6


def lowering_rows(quick: bool, repeats: int) -> list:
    from . import lower_jaxpr_to_module
    from . import tracing as tr
    rows = []
    n = 1000 if quick else 5000
    x = np.zeros((8,), np.float32)
    layers = 20 if quick else 100
    xm, wm, bm = (np.zeros((8, 64), np.float32), np.zeros((64, 64), np.float32),
                  np.zeros((64,), np.float32))
    for name, fn, args, jax_key in (
            (f"lower chain {n}", _chain_fn(n), (x, x), ("chain", n)),
            (f"lower mlp {layers} fwd", _mlp_fn(layers, False), (xm, wm, bm),
             ("mlp", (layers, False))),
            (f"lower mlp {layers} fwd+bwd", _mlp_fn(layers, True), (xm, wm, bm),
             ("mlp", (layers, True)))):
        closed = tr.make_jaxpr(fn)(*args)
        n_eqns = len(closed.eqns)
        best = float("inf")
        for _ in range(repeats):
            gc.collect()
            t0 = time.perf_counter()
            lower_jaxpr_to_module("bench", closed).module.to_text()
            best = min(best, time.perf_counter() - t0)
        ours = best / n_eqns * 1e6
        theirs = _jax_lowering_us(*jax_key, args)
        rows.append(dict(workload=name, eqns=n_eqns, lower_us_per_eqn=ours,
                         jax_us_per_eqn=theirs,
                         jax_ratio=None if theirs is None else theirs / ours))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--builder-only", action="store_true", help="skip the lowering workloads")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 5
    chain_sizes = [100, 1_000, 10_000] if args.quick else [100, 1_000, 10_000, 100_000]
    from verify.mlir_peer import Mlir  # the peer; lower/ itself never imports MLIR bindings
    mlir = Mlir()
    ours_print = lambda m: m.to_text(locations=False)  # noqa: E731
    rows = []

    def program_row(name, n_ops, ours, theirs, r):
        ob, op = best_of((ours, ours_print), r)
        mb, mp = best_of((theirs, mlir.print), r)
        rows.append(dict(workload=name, ops=n_ops, ours_us=(ob + op) / n_ops * 1e6,
                         ours_build_us=ob / n_ops * 1e6, ours_print_us=op / n_ops * 1e6,
                         mlir_us=(mb + mp) / n_ops * 1e6, ratio=(mb + mp) / (ob + op),
                         ours_bytes_per_op=heap_bytes(ours) / n_ops))

    for n in chain_sizes:
        program_row(f"chain {n}", n, lambda: ours_chain(n), lambda: mlir.chain(n),
                    max(1, repeats if n <= 10_000 else 2))
    layers = 20 if args.quick else 100
    n_ops = len(ours_mlp(layers).functions[0].entry_block.operations)
    program_row(f"mlp {layers} layers", n_ops, lambda: ours_mlp(layers),
                lambda: mlir.mlp(layers), repeats)

    mib = 4 if args.quick else 16
    arr = np.random.default_rng(0).standard_normal(mib * 2**20 // 4).astype(np.float32)
    counter = iter(range(10**9))

    def fresh():
        # A new value each build: MLIR uniques attributes, so rebuilding identical data would
        # only hash it; a program does not build the same 16 MiB constant twice.
        arr[0] = next(counter)
        return arr
    ob, op = best_of((lambda: ours_const(fresh()), lambda m: m.to_text(locations=False)), repeats)
    mb, mp = best_of((lambda: mlir.const(fresh()), mlir.print), repeats)
    nbytes = arr.nbytes
    rows.append(dict(workload=f"const {mib} MiB f32", ops=1, ours_MBps=nbytes / (ob + op) / 1e6,
                     mlir_MBps=nbytes / (mb + mp) / 1e6, ratio=(mb + mp) / (ob + op)))

    if not args.builder_only:
        rows.extend(lowering_rows(args.quick, repeats))

    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'workload':<22}{'ours us/op':>11}{'(build':>8}{'print)':>8}{'mlir us/op':>12}"
          f"{'ratio':>8}{'B/op':>8}")
    for r in rows:
        if "lower_us_per_eqn" in r:
            jax_part = (f"  jax {r['jax_us_per_eqn']:.1f} us/eqn ({r['jax_ratio']:.1f}x)"
                        if r.get("jax_us_per_eqn") else "  jax: not installed")
            print(f"{r['workload']:<22}{r['lower_us_per_eqn']:>11.2f} us/eqn (lower+print)"
                  f"{jax_part}")
            continue
        if "ours_MBps" in r:
            print(f"{r['workload']:<22}{r['ours_MBps']:>9.0f}MB/s{'':>16}{r['mlir_MBps']:>8.0f}"
                  f"MB/s{r['ratio']:>8.2f}x")
        else:
            print(f"{r['workload']:<22}{r['ours_us']:>11.2f}{r['ours_build_us']:>8.2f}"
                  f"{r['ours_print_us']:>8.2f}{r['mlir_us']:>12.2f}{r['ratio']:>7.2f}x"
                  f"{r['ours_bytes_per_op']:>8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
