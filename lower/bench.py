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
  parse     -- the same programs read back from their text (lower/bench_parse.py), beside
               MLIR's C++ parser and, when installed, xDSL's
Per-op cost is reported at every size so a reader sees whether it stays flat; memory is the
Python heap our module holds (tracemalloc) per op. Ratios > 1 mean we are faster.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
import tracemalloc

import numpy as np

import mhlo_ir as hlo

from .bench_parse import parse_rows, print_rows

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

def best_of(fn, repeats: int, n_ops: int | None = None):
    """Fastest wall time of (build, print) over ``repeats`` samples, GC enabled as users run
    it. Given ``n_ops``, a sample repeats the build (and the print) until it covers ~20,000
    ops, so small programs are not timed at the resolution of a scheduler tick; the fastest
    sample is the one least disturbed by the rest of the machine (as ``timeit`` reports)."""
    inner = 1 if n_ops is None else max(1, 20_000 // n_ops)
    builds, prints = [], []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(inner):
            m = fn[0]()
        t1 = time.perf_counter()
        for _ in range(inner):
            fn[1](m)
        t2 = time.perf_counter()
        builds.append((t1 - t0) / inner)
        prints.append((t2 - t1) / inner)
        del m
    return min(builds), min(prints)


def heap_bytes(build) -> int:
    gc.collect()
    tracemalloc.start()
    m = build()
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del m
    return size


# -- lowering workloads -------------------------------------------------------------------------

class _Jaxpr:
    """Builds a jaxpr equation by equation, the way JAX's tracer records the benchmark's
    programs (same primitives, params, literals, and a few source lines shared by many
    equations), so our lowering and JAX's lower the same equations."""

    def __init__(self, *in_avals):
        from . import core
        self.core = core
        self.invars = [core.Var(a) for a in in_avals]
        self.eqns = []
        self.prims: dict = {}
        self.frames: dict = {}

    def __call__(self, prim, ins, aval, line, **params):
        core = self.core
        p = self.prims.get(prim) or self.prims.setdefault(prim, core.Primitive(prim))
        si = core.SourceInfo(core.Frame("bench.py", "f", line, 8))
        out = core.Var(aval)
        self.eqns.append(core.JaxprEqn(ins, [out], p, params, source_info=si))
        return out

    def lit(self, value):
        core = self.core
        return core.Literal(np.asarray(value, np.float32),
                            core.ShapedArray((), np.dtype(np.float32)))

    def closed(self, *outs):
        core = self.core
        return core.ClosedJaxpr(core.Jaxpr([], self.invars, list(outs), self.eqns), [])


def chain_jaxpr(n: int):
    """``x = x + y`` / ``x = x * y`` alternating, as ``jax.make_jaxpr`` records it."""
    from . import core
    t = core.ShapedArray((8,), np.dtype(np.float32))
    j = _Jaxpr(t, t)
    x, y = j.invars
    for i in range(n):
        x = j("add", [x, y], t, 10) if i % 2 == 0 else j("mul", [x, y], t, 11, out_dtype=None)
    return j.closed(x)


def mlp_jaxpr(layers: int, backward: bool, batch: int = 8, width: int = 64):
    """``x = max(x @ w + b, 0)`` per layer; with ``backward``, the gradient of ``sum(x)``
    with respect to the input as ``jax.grad`` records it (max's jvp masks, the transposed
    chain). ``tests/lower/test_bench.py`` checks the equations against jax's own."""
    from . import core
    f32 = np.dtype(np.float32)
    act = core.ShapedArray((batch, width), f32)
    row = core.ShapedArray((1, width), f32)
    mask_t = core.ShapedArray((batch, width), np.dtype(np.bool_))
    j = _Jaxpr(act, core.ShapedArray((width, width), f32), core.ShapedArray((width,), f32))
    x, w, b = j.invars
    dn_fwd = (((1,), (0,)), ((), ()))
    dot = dict(precision=None, preferred_element_type=f32, out_sharding=None)
    full = dict(shape=(batch, width), broadcast_dimensions=(), sharding=None)
    masks = []
    for _ in range(layers):
        d = j("dot_general", [x, w], act, 20, dimension_numbers=dn_fwd, **dot)
        e = j("broadcast_in_dim", [b], row, 20, shape=(1, width), broadcast_dimensions=(1,),
              sharding=None)
        f = j("add", [d, e], act, 20)
        x = j("max", [f, j.lit(0.0)], act, 20)
        if backward:  # max's jvp: 1 where f won, halved where it tied with 0
            won = j("eq", [f, x], mask_t, 20)
            one = j("broadcast_in_dim", [j.lit(1.0)], act, 20, **full)
            zero = j("broadcast_in_dim", [j.lit(0.0)], act, 20, **full)
            won = j("select_n", [won, zero, one], act, 20)
            tie = j("eq", [j.lit(0.0), x], mask_t, 20)
            two = j("broadcast_in_dim", [j.lit(2.0)], act, 20, **full)
            one = j("broadcast_in_dim", [j.lit(1.0)], act, 20, **full)
            tie = j("select_n", [tie, one, two], act, 20)
            masks.append(j("div", [won, tie], act, 20))
    if not backward:
        return j.closed(x)
    j("reduce_sum", [x], core.ShapedArray((), f32), 21, axes=(0, 1), out_sharding=None)
    g = j("mul", [j("broadcast_in_dim", [j.lit(1.0)], act, 21, **full), masks[-1]], act, 21,
          out_dtype=None)
    for i in reversed(range(layers)):
        g = j("dot_general", [g, w], act, 20, dimension_numbers=(((1,), (1,)), ((), ())),
              **dot)
        if i:
            g = j("mul", [g, masks[i - 1]], act, 20, out_dtype=None)
    return j.closed(g)


def jax_programs(layers: int):
    """The JAX functions of the lowering workloads (``chain``, ``mlp``, ``mlp_grad``)."""
    import jax
    import jax.numpy as jnp

    def chain(n):
        def f(x, y):
            for i in range(n):
                x = x + y if i % 2 == 0 else x * y
            return x
        return f

    def fwd(x, w, b):
        for _ in range(layers):
            x = jnp.maximum(x @ w + b, 0.0)
        return x

    return chain, fwd, lambda x, w, b: jax.grad(lambda x: fwd(x, w, b).sum())(x)


def _jax_lowering_s(jf, args, samples: int):
    """Seconds for JAX's own lowering of ``jf`` (traced once, caches cleared before each
    ``.lower().as_text()``; the fastest of ``samples``), and its equation count."""
    import jax
    traced = jax.jit(jf).trace(*args)
    best = float("inf")
    for _ in range(samples):
        jax.clear_caches()
        gc.collect()
        t0 = time.perf_counter()
        traced.lower().as_text()
        best = min(best, time.perf_counter() - t0)
    return best, len(traced.jaxpr.eqns)


def lowering_rows(quick: bool, repeats: int) -> list:
    """Our lowering (+ print) of each workload's jaxpr against JAX's lowering of the same
    program. Both lower the same equations, so the ratio is of whole-program times; each
    side's time is the fastest of the same number of samples."""
    from . import lower_jaxpr_to_module
    samples = max(repeats, 3 if quick else 7)
    n = 1000 if quick else 5000
    layers = 20 if quick else 100
    x = np.zeros((8,), np.float32)
    mlp_args = (np.zeros((8, 64), np.float32), np.zeros((64, 64), np.float32),
                np.zeros((64,), np.float32))
    try:
        chain_f, fwd_f, grad_f = jax_programs(layers)
        chain_f = chain_f(n)
    except ImportError:
        chain_f = fwd_f = grad_f = None
    rows = []
    for name, closed, jf, args in (
            (f"lower chain {n}", chain_jaxpr(n), chain_f, (x, x)),
            (f"lower mlp {layers} fwd", mlp_jaxpr(layers, False), fwd_f, mlp_args),
            (f"lower mlp {layers} fwd+bwd", mlp_jaxpr(layers, True), grad_f, mlp_args)):
        n_eqns = len(closed.eqns)
        best = float("inf")
        for _ in range(samples):
            gc.collect()
            t0 = time.perf_counter()
            lower_jaxpr_to_module("bench", closed).module.to_text()
            best = min(best, time.perf_counter() - t0)
        row = dict(workload=name, eqns=n_eqns, lower_us_per_eqn=best / n_eqns * 1e6,
                   jax_us_per_eqn=None, jax_ratio=None)
        if jf is not None:
            theirs, jax_eqns = _jax_lowering_s(jf, args, samples)
            row.update(jax_eqns=jax_eqns, jax_us_per_eqn=theirs / jax_eqns * 1e6,
                       jax_ratio=theirs / best)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--builder-only", action="store_true", help="skip the lowering workloads")
    ap.add_argument("--no-parse", action="store_true", help="skip the parser workloads")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 5
    chain_sizes = [100, 1_000, 10_000] if args.quick else [100, 1_000, 10_000, 100_000]
    from verify.mlir_peer import Mlir  # the peer; lower/ itself never imports MLIR bindings
    mlir = Mlir()
    ours_print = lambda m: m.to_text(locations=False)  # noqa: E731
    rows = []

    def program_row(name, n_ops, ours, theirs, r):
        ob, op = best_of((ours, ours_print), r, n_ops)
        mb, mp = best_of((theirs, mlir.print), r, n_ops)
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
    parsing = [] if args.no_parse else parse_rows(args.quick, repeats, mlir)

    if args.json:
        print(json.dumps(rows + parsing, indent=2))
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
    if parsing:
        print_rows(parsing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
