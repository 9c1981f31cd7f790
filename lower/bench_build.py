"""The builder and printer rows of ``python -m lower.bench``: the same programs built and
printed (generic form; custom form in the pretty rows) by mhlo_ir and by the MLIR Python
bindings inside jaxlib (``verify.mlir_peer``), in one process.

Workloads:
  chain N   -- N chained elementwise ops (add/multiply alternating) on tensor<128x128xf32>
  mlp L     -- L layers, each with its own weight and bias arguments and a splat zero
               constant: dot_general, broadcast_in_dim, add, maximum (5 ops a layer)
  small     -- a 20-op module of mixed ops (what a generated program looks like), context
               creation excluded on both sides
  reductions N -- N reductions of one argument (reduce_sum's and reduce_max's bodies,
               each a region of one op) summed as they come: 2N ops, N regions
  const     -- a 16 MiB f32 and a 2 MiB bf16 dense constant of random data, in MB/s
  memory    -- bytes per op a 100,000-op chain holds, each side in a fresh process
  ..., pretty -- the 10,000-op chain, the MLP, the small module and the reductions printed
               in custom form
               (``pretty=True``; the bindings' default ``get_asm()``), not generic

Timing: samples of ours and the bindings' alternate, each sample repeating a build and a
print of what was built until it covers ~20,000 ops (freeing a program is timed on neither
side), GC enabled as users run it; a row reports the median sample of each side, so the
ratio is of two medians taken under the same load. The
"in GC" column is the part of our build + print that CPython's cyclic collector took
(``gc.callbacks``): what keeps the 100,000-op chain from the 1,000-op one's cost per op.
"""

from __future__ import annotations

import gc
import itertools
import json
import statistics
import subprocess
import sys
import time
import tracemalloc

import ml_dtypes
import numpy as np

import mhlo_ir as hlo

CHAIN_SHAPE = (128, 128)


# -- our programs -------------------------------------------------------------------------------

def ours_chain(n: int, shape=CHAIN_SHAPE) -> hlo.Module:
    t = hlo.tensor(shape, hlo.f32)
    m = hlo.Module("chain")
    f = m.add_function("main", [t, t])
    b = f.builder()
    x, y = f.arguments
    add, mul = b.add, b.multiply
    for i in range(n):
        x = add(x, y) if i % 2 == 0 else mul(x, y)
    b.return_(x)
    return m


def ours_mlp(layers: int, width: int = 64, batch: int = 8) -> hlo.Module:
    t_x = hlo.tensor((batch, width), hlo.f32)
    t_w = hlo.tensor((width, width), hlo.f32)
    t_b = hlo.tensor((width,), hlo.f32)
    m = hlo.Module("mlp")
    f = m.add_function("main", [t_x] + [t_w, t_b] * layers)
    b = f.builder()
    x, *params = f.arguments
    for i in range(layers):
        w, bias = params[2 * i], params[2 * i + 1]
        zero = b.constant(0.0, shape=(batch, width))  # a splat, as the bindings' get_splat
        y = b.dot_general(x, w, ((1,), (0,)))
        y = b.add(y, b.broadcast_in_dim(bias, (batch, width), [1]))
        x = b.maximum(y, zero)
    b.return_(x)
    return m


def ours_reductions(n: int, shape=(8, 64)) -> hlo.Module:
    """``n`` reductions of one argument over its last dimension by ``add`` or ``maximum``
    (reduce_sum's and reduce_max's bodies, named), summed as they come (the bindings' twin:
    ``Mlir.reductions``)."""
    m = hlo.Module("reductions")
    f = m.add_function("main", [hlo.tensor(shape, hlo.f32)])
    b = f.builder()
    x, = f.arguments
    zero = b.constant(np.float32(0))
    dims = (len(shape) - 1,)
    acc = None
    for i in range(n):
        r = b.reduce(x, zero, dims, "add" if i % 2 == 0 else "maximum")
        acc = r if acc is None else b.add(acc, r)
    b.return_(acc)
    return m


def ours_small(a: int = 4, w: int = 8) -> hlo.Module:
    """20 ops of 15 kinds over small tensors, [a, w] and [w, a] arguments (``a`` even; the
    bindings' twin: ``Mlir.small``)."""
    m = hlo.Module("small")
    n = a * a
    t, u = hlo.tensor((a, w), hlo.f32), hlo.tensor((w, a), hlo.f32)
    f = m.add_function("main", [t, u])
    b = f.builder()
    x, y = f.arguments
    e = b.exponential(b.add(x, b.constant(1.0, shape=(a, w))))
    d = b.dot_general(e, y, ((1,), (0,)))
    mm = b.multiply(d, b.transpose(d, [1, 0]))
    zb = b.broadcast_in_dim(b.constant(np.float32(0)), (a, a), [])
    s = b.select(b.compare(mm, zb, "GT"), mm, zb)
    r = b.reshape(s, (n,))
    cc = b.concatenate([b.slice(r, [0], [n // 2], [1]), b.slice(r, [n // 2], [n], [1])], 0)
    ab = b.abs(cc)
    cv = b.convert(b.convert(cc, hlo.i32), hlo.f32)
    b.return_(b.maximum(b.negate(b.tanh(cv)), ab))
    return m


def ours_const(arr: np.ndarray) -> hlo.Module:
    m = hlo.Module("const")
    f = m.add_function("main", [])
    b = f.builder()
    b.return_(b.constant(arr))
    return m


def n_ops(module: hlo.Module) -> int:
    return len(module.functions[0].entry_block.operations)


# -- timing -------------------------------------------------------------------------------------

class _CollectorClock:
    """Seconds CPython's cyclic collector ran while installed (``gc.callbacks``): what part
    of a sample the GC took. Its own cost is two calls per collection."""

    def __init__(self):
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start

    def __enter__(self):
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self)


def _sample(build, print_, inner):
    """(build, print, in the collector) seconds per repetition: each repetition builds a
    program and prints it once, as a user does (printing one program ``inner`` times would
    time a program met again, whose lines our printer keeps, even in the rows whose every
    build is a new program)."""
    gc.collect()
    clock_ = time.perf_counter
    built = printed = 0.0
    with _CollectorClock() as clock:
        for _ in range(inner):
            t0 = clock_()
            m = build()
            t1 = clock_()
            print_(m)
            t2 = clock_()
            built += t1 - t0
            printed += t2 - t1
            del m  # (freed before the next build, as the old loop freed it)
    return built / inner, printed / inner, clock.total / inner


def interleaved(ours, theirs, samples: int, ops: int | None = None, collector: bool = False):
    """Median (build, print) seconds of each side, ``(build, print)`` pairs given, sampled
    alternately; with ``collector``, each side's median seconds in the GC too."""
    inner = 1 if ops is None else max(1, 20_000 // ops)
    mine, peer = [], []
    for _ in range(samples):
        mine.append(_sample(*ours, inner))
        peer.append(_sample(*theirs, inner))
    med = statistics.median
    out = ((med(s[0] for s in mine), med(s[1] for s in mine)),
           (med(s[0] for s in peer), med(s[1] for s in peer)))
    if collector:
        out += ((med(s[2] for s in mine), med(s[2] for s in peer)),)
    return out


def _ours_print(m):
    return m.to_text(locations=False)


def _ours_pretty(m):
    return m.to_text(locations=False, pretty=True)


def program_rows(quick: bool, samples: int, mlir) -> list:
    """Chains at each size, the MLP, the 20-op module: per-op microseconds and ratios."""
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    layers = 20 if quick else 100
    programs = [(f"chain {n}", n, (lambda n=n: ours_chain(n)),
                 (lambda n=n: mlir.chain(n, CHAIN_SHAPE))) for n in sizes]
    programs.append((f"mlp {layers} layers", n_ops(ours_mlp(layers)),
                     lambda: ours_mlp(layers), lambda: mlir.mlp(layers)))
    programs.append(("small module", n_ops(ours_small()), ours_small, mlir.small))
    # The same programs at shapes the process has not met before, each build its own (a
    # generated program's first sight): the repeated rows above let every op hit the
    # caches of validated ops and printed lines that a program met once fills.
    programs.append(("small module, new shapes", n_ops(ours_small()),
                     *_new_shapes(lambda k: ours_small(*_small_shape(k)),
                                  lambda k: mlir.small(*_small_shape(k)))))
    programs.append((f"mlp {layers} layers, new shapes", n_ops(ours_mlp(layers)),
                     *_new_shapes(lambda k: ours_mlp(layers, width=_mlp_width(k)),
                                  lambda k: mlir.mlp(layers, width=_mlp_width(k)))))
    reductions = 200 if quick else 1000
    programs.append((f"reductions {reductions}", n_ops(ours_reductions(reductions)),
                     lambda: ours_reductions(reductions), lambda: mlir.reductions(reductions)))
    # The custom form too (pretty=True; MLIR's default print, what people read), for the
    # 10,000-op chain, the MLP and the small module.
    programs += [(f"{name}, pretty", ops, ours, theirs) for name, ops, ours, theirs in programs
                 if name != "chain 1000" and ops <= 10_000 and "new shapes" not in name]
    rows = []
    for name, ops, ours, theirs in programs:
        s = samples if ops <= 10_000 else max(3, samples // 2)
        printers = ((_ours_pretty, mlir.print_pretty) if name.endswith("pretty")
                    else (_ours_print, mlir.print))
        (ob, op), (mb, mp), (ogc, _) = interleaved((ours, printers[0]), (theirs, printers[1]),
                                                   s, ops, collector=True)
        rows.append(dict(workload=name, ops=ops, ours_us=(ob + op) / ops * 1e6,
                         ours_build_us=ob / ops * 1e6, ours_print_us=op / ops * 1e6,
                         ours_gc_us=ogc / ops * 1e6,
                         mlir_us=(mb + mp) / ops * 1e6, ratio=(mb + mp) / (ob + op)))
    return rows


# Shapes no earlier build of a run used: every pair (a, w) once (a even, as ours_small
# needs), every MLP width once; each side counts its builds from 0, so both build the same.
_SMALL_SHAPES = 97


def _small_shape(k: int) -> tuple:
    return 2 + 2 * (k % _SMALL_SHAPES), 1000 + k // _SMALL_SHAPES


def _mlp_width(k: int) -> int:
    return 100 + k


def _new_shapes(ours, theirs) -> tuple:
    """Two builders calling ``ours(k)`` and ``theirs(k)`` for k = 0, 1, 2... (each side its
    own count, so the two build the same programs), from a number no earlier row of this
    process started at."""
    start = next(_RUNS) * 100_000
    mine, peer = itertools.count(start), itertools.count(start)
    return (lambda: ours(next(mine))), (lambda: theirs(next(peer)))


_RUNS = itertools.count()


def constant_rows(quick: bool, samples: int, mlir) -> list:
    """Dense constants of random data (no splat), build + print, in MB/s."""
    rng = np.random.default_rng(0)
    rows = []
    for mib, dtype in ((4 if quick else 16, np.float32), (2, ml_dtypes.bfloat16)):
        arr = rng.standard_normal(mib * 2**20 // np.dtype(dtype).itemsize).astype(dtype)
        counter = iter(range(1, 10**9))

        def fresh(arr=arr):
            # A new value each build: MLIR uniques attributes, so rebuilding identical data
            # would only hash it; a program does not build the same constant twice.
            arr[0] = next(counter) % 1000
            return arr
        (ob, op), (mb, mp) = interleaved((lambda: ours_const(fresh()), _ours_print),
                                         (lambda: mlir.const(fresh()), mlir.print), samples)
        name = np.dtype(dtype).name.replace("bfloat16", "bf16").replace("float32", "f32")
        rows.append(dict(workload=f"const {mib} MiB {name}", ops=1,
                         ours_MBps=arr.nbytes / (ob + op) / 1e6,
                         mlir_MBps=arr.nbytes / (mb + mp) / 1e6, ratio=(mb + mp) / (ob + op)))
    return rows


def clear_process_caches() -> None:
    """Empty mhlo_ir's and lower's process-wide memos (validated ops, printed and parsed
    lines, type texts, float spellings, shardings' verdicts, scalar attributes...): each is a
    pure function of its key, cleared when full in any case, so emptying one changes no
    result, only how much work the next build, print, parse or lowering repeats. The rows
    that time a program met again (a lowering of the same jaxpr, a parse of the same text)
    clear them before each of our samples, as ``jax.clear_caches()`` clears JAX's: each
    sample is then a first sight. Interned types stay (their identity is their equality), and
    the printer's numbered label heads (64 made at import, grown to the longest label
    printed, at most 1,024: a few microseconds once)."""
    from mhlo_ir import builder, floatfmt, index_array, op_attributes, parse_lines, \
        print_caches, region_bodies, sharding_text, types, weak_scalars
    from mhlo_ir.dense import _I64_CACHE, _ONE_ELEMENT, _SPLAT_TEXTS
    from mhlo_ir.ops import constants as op_constants, construct, linalg

    from . import constants, locations
    from .rules import reductions
    for table in (construct.MEMO, locations._KEPT, print_caches._SHARED, print_caches._BARE,
                  parse_lines._TABLES, index_array._CACHE, sharding_text._VERDICTS,
                  types._READ, floatfmt._SPELLED, weak_scalars._WEAK_CACHE,
                  constants._SCALARS, _I64_CACHE, _SPLAT_TEXTS, _ONE_ELEMENT,
                  op_attributes._MADE,
                  op_constants._SPLAT_SCALARS, linalg._DNUMS, region_bodies._ARITY,
                  *builder.ELEMENTWISE_MEMOS):
        table.clear()
    reductions._init_attr.cache_clear()


# -- memory, in fresh processes -------------------------------------------------------------------

def _resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _memory_child(side: str, n: int) -> None:
    """Run in a fresh process: bytes per op that a built ``n``-op chain holds."""
    out = {}
    if side == "ours-heap":  # (tracemalloc's own bookkeeping is resident: not here)
        ours_chain(100)  # warm the caches a first build fills
        gc.collect()
        tracemalloc.start()
        m = ours_chain(n)
        heap, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.update(heap_bytes_per_op=heap / n)
    elif side == "ours":
        ours_chain(100)
        gc.collect()
        rss0 = _resident()
        m = ours_chain(n)
        gc.collect()
        out.update(rss_bytes_per_op=(_resident() - rss0) / n)
    else:
        from verify.mlir_peer import Mlir
        mlir = Mlir()
        mlir.chain(100, CHAIN_SHAPE)
        gc.collect()
        rss0 = _resident()
        m = mlir.chain(n, CHAIN_SHAPE)
        gc.collect()
        out.update(rss_bytes_per_op=(_resident() - rss0) / n)
    del m
    print(json.dumps(out))


def memory_row(quick: bool) -> dict:
    n = 10_000 if quick else 100_000
    row = dict(workload=f"memory chain {n}", ops=n)
    for side in ("ours-heap", "ours", "mlir"):
        code = f"from lower.bench_build import _memory_child; _memory_child({side!r}, {n})"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        for k, v in json.loads(out.strip().splitlines()[-1]).items():
            row[f"{side.split('-')[0]}_{k}"] = v
    return row


def print_table(rows) -> None:
    print(f"{'build + print':<22}{'ours us/op':>11}{'(build':>8}{'print':>8}{'in GC)':>8}"
          f"{'mlir us/op':>12}{'ratio':>8}")
    for r in rows:
        if "ours_MBps" in r:
            print(f"{r['workload']:<22}{r['ours_MBps']:>9.0f}MB/s{'':>16}{r['mlir_MBps']:>8.0f}"
                  f"MB/s{r['ratio']:>7.2f}x")
        elif "ours_rss_bytes_per_op" in r:
            print(f"{r['workload']:<22}ours {r['ours_heap_bytes_per_op']:.0f} B/op Python heap, "
                  f"{r['ours_rss_bytes_per_op']:.0f} B/op resident; MLIR bindings "
                  f"{r['mlir_rss_bytes_per_op']:.0f} B/op resident")
        else:
            print(f"{r['workload']:<22}{r['ours_us']:>11.2f}{r['ours_build_us']:>8.2f}"
                  f"{r['ours_print_us']:>8.2f}{r['ours_gc_us']:>8.2f}{r['mlir_us']:>12.2f}"
                  f"{r['ratio']:>7.2f}x")
