"""The parser's rows of ``python -m lower.bench``: reading the benchmark's programs back from
their generic text, beside jaxlib's C++ parser (``ir.Module.parse``, which also verifies) and,
when installed, xDSL's Python parser, measured in the same run.

Workloads: the chain at 1k, 10k and 100k ops (per-op cost should stay flat), the 100-layer MLP
module, the 20-op module (a generated program's size), each in generic form; the 10k chain, the
MLP and the 20-op module in custom form too (MLIR's default print, and StableHLO's corpus:
what most text to read is); a lowered program (the 4-block transformer's ``value_and_grad``
from ``lower.bench_lowering``, when jax is installed: reductions, nested calls and a call-site
location on every line, as the lowering prints it), in both forms, its ops counted with
those of its regions; and the 16 MiB f32 constant (hex), in MB/s. xDSL reads the
generic text with the dialects unregistered (it has no MHLO dialect), and only the smaller
workloads: it takes about a millisecond an op.
"""

from __future__ import annotations

import gc
import time

import numpy as np

import mhlo_ir as hlo


def _best(fn, repeats: int, setup=None) -> float:
    best = float("inf")
    for _ in range(repeats):
        if setup is not None:
            setup()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _xdsl_parser():
    """A function parsing text with xDSL, or None when xDSL is not installed."""
    try:
        from xdsl.context import Context
        from xdsl.dialects.builtin import Builtin
        from xdsl.dialects.func import Func
        from xdsl.parser import Parser
    except ImportError:
        return None
    ctx = Context(allow_unregistered=True)
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    return lambda text: Parser(ctx, text).parse_module()


def _all_ops(module) -> int:
    n = 0
    stack = [f.entry_block for f in module.functions]
    while stack:
        for op in stack.pop().operations:
            n += 1
            stack.extend(b for r in op.regions for b in r.blocks)
    return n


def _lowered_texts(quick: bool) -> list:
    """``(name, text, custom form?, ops)`` of the lowered transformer, in both forms with
    their locations; none without jax."""
    try:
        import jax
    except ImportError:
        return []
    from . import lower_jaxpr_to_module
    from .bench_lowering import workloads
    name, fn, args = [w for w in workloads(quick) if "transformer" in w[0]][-1]
    module = lower_jaxpr_to_module("bench", jax.jit(fn).trace(*args).jaxpr).module
    n = _all_ops(module)
    short = name.replace("lower ", "parse lowered ").replace("value_and_grad", "v&g")
    return [(short, module.to_text(), False, n),
            (f"{short}, custom form", module.to_text(pretty=True), True, n)]


def parse_rows(quick: bool, repeats: int, mlir) -> list:
    """Rows: workload, ops, ours/mlir/xdsl microseconds per op (MB/s for the constant)."""
    from .bench_build import ours_chain, ours_const, ours_mlp, ours_small
    xdsl = _xdsl_parser()
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    programs = [(f"parse chain {n}", ours_chain(n), False) for n in sizes]
    layers = 20 if quick else 100
    programs.append((f"parse mlp {layers} layers", ours_mlp(layers), False))
    programs.append(("parse small module", ours_small(), False))
    custom = {f"parse chain {sizes[1]}", f"parse mlp {layers} layers", "parse small module"}
    programs += [(f"{name}, custom form", module, True) for name, module, _ in programs
                 if name in custom]
    texts = [(name, module.to_text(locations=False, pretty=pretty), pretty,
              sum(len(f.entry_block.operations) for f in module.functions))
             for name, module, pretty in programs]
    texts += _lowered_texts(quick)
    rows = []
    from .bench_build import clear_process_caches
    for name, text, pretty, n in texts:
        r = 2 if n >= 100_000 else repeats
        inner = max(1, 2_000 // n)  # a small module's parse is repeated to be timed
        # A first read (our memos of lines read emptied before each, as for the lowering
        # rows; the same text read again hits them all): the ratio's; and read again.
        ours = _best(lambda: hlo.parse(text), r * inner, setup=clear_process_caches)
        again = _best(lambda: [hlo.parse(text) for _ in range(inner)], r) / inner
        theirs = _best(lambda: [mlir.parse(text) for _ in range(inner)], r) / inner
        row = dict(workload=name, ops=n, ours_us=ours / n * 1e6, mlir_us=theirs / n * 1e6,
                   mlir_ratio=theirs / ours, ours_again_us=again / n * 1e6,
                   mlir_ratio_again=theirs / again)
        if xdsl is not None and not pretty and (n <= 1_000 or "mlp" in name):
            try:
                t = _best(lambda: xdsl(text), 1)
            except Exception as e:  # noqa: BLE001 - xDSL's own error types
                # (xDSL 0.75 reads no location ranges, "f.py":3:7 to :21, which JAX writes)
                row.update(xdsl_error=f"{type(e).__name__}: {str(e).splitlines()[-1][:60]}")
            else:
                row.update(xdsl_us=t / n * 1e6, xdsl_ratio=t / ours)
        rows.append(row)
    mib = 4 if quick else 16
    arr = np.random.default_rng(1).standard_normal(mib * 2**20 // 4).astype(np.float32)
    text = ours_const(arr).to_text(locations=False)
    ours = _best(lambda: hlo.parse(text), repeats)
    theirs = _best(lambda: mlir.parse(text), repeats)
    # The floor of any Python reader: CPython's fastest hex decoder (binascii.unhexlify, what
    # the parser uses) on the same digits, in one call (the parser decodes in pieces, which
    # on this VM beats one call).
    import binascii
    start = text.index('"0x') + 3
    digits = text[start:text.index('"', start)]
    floor = _best(lambda: binascii.unhexlify(digits), repeats)
    rows.append(dict(workload=f"parse const {mib} MiB", ops=1, ours_MBps=arr.nbytes / ours / 1e6,
                     mlir_MBps=arr.nbytes / theirs / 1e6, mlir_ratio=theirs / ours,
                     unhexlify_MBps=arr.nbytes / floor / 1e6))
    return rows


def print_rows(rows) -> None:
    print(f"\n{'parsing (first read)':<44}{'ours us/op':>11}{'mlir C++':>10}{'ours/mlir':>10}"
          f"{'xdsl':>10}{'xdsl/ours':>10}{'again':>8}{'ours/mlir':>10}")
    for r in rows:
        if "ours_MBps" in r:
            print(f"{r['workload']:<44}{r['ours_MBps']:>7.0f}MB/s{r['mlir_MBps']:>6.0f}MB/s"
                  f"{1 / r['mlir_ratio']:>9.2f}x   (binascii.unhexlify of its digits alone: "
                  f"{r['unhexlify_MBps']:.0f} MB/s)")
            continue
        xd = (f"{r['xdsl_us']:>10.1f}{r['xdsl_ratio']:>9.1f}x" if "xdsl_us" in r else
              f"{'fails':>10}{'-':>10}" if "xdsl_error" in r else f"{'-':>10}{'-':>10}")
        print(f"{r['workload']:<44}{r['ours_us']:>11.2f}{r['mlir_us']:>10.2f}"
              f"{1 / r['mlir_ratio']:>9.2f}x{xd}{r['ours_again_us']:>8.2f}"
              f"{1 / r['mlir_ratio_again']:>9.2f}x")
