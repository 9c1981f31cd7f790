"""One campaign worker: draws, prints, runs and compares the programs of the seeds it is sent.

Protocol (one JSON object per line): the first line on stdin is the campaign's options; each
next line is ``{"seed": S, "n_ops": K or null}``. Before each phase the worker writes
``{"seed": S, "phase": P}`` (so that the parent knows which executor took the process down if
it dies), and at the end of a seed ``{"seed": S, "result": {...}}``.
"""

from __future__ import annotations

import json
import re
import sys
import time
import traceback


def _options(cfg):
    from mhlo_ir import strategies as hst
    return hst.default_options(cfg["max_ops"], cfg.get("ops"), cfg.get("element_types"),
                               division_by_zero=cfg.get("division_by_zero", False))


def _types_of(module) -> list:
    """The element types ``module`` computes in, a quantized type counted as
    ``quant:<storage>`` (its scales and zero points are drawn afresh every time)."""
    from mhlo_ir.ir import walk
    from mhlo_ir.types import TensorType
    names = set()

    def add(t):
        if isinstance(t, TensorType):
            et = t.element_type
            names.add(et.name if et.kind != "quant" else f"quant:{et.storage.name}")
    for fn in module.functions:
        for t in fn.arg_types:
            add(t)
    for _, op in walk(module):
        for v in op.results:
            add(v.type)
    return sorted(names)


def _ops_of(module) -> list:
    from mhlo_ir.ir import walk
    return sorted({op.spec.name for _, op in walk(module)})


def draw(seed, n_ops, options):
    """The seed's program and the start of its record."""
    from mhlo_ir import strategies as hst
    start = time.perf_counter()
    p = hst.generate_seeded(seed, options, n_ops)
    text = p.module.to_text()
    rec = {"seed": seed, "n_ops": len(p.ops), "ops": _ops_of(p.module),
           "element_types": _types_of(p.module), "traits": sorted(p.traits), "chars": len(text)}
    _spent(rec, "draw", start)
    return p, rec


def run_xla(p, rec):
    """XLA's results for one program, or None with the failure in ``rec``."""
    import numpy as np
    import verify
    start = time.perf_counter()
    try:
        out = [np.asarray(a) for a in verify.run(p.module, *p.inputs)]
        rec["xla"] = "ok"
        return out
    except Exception as e:  # noqa: BLE001 - every failure is a recorded outcome
        rec["xla"] = type(e).__name__
        rec["xla_error"] = str(e)[:2000]
        return None
    finally:
        _spent(rec, "xla", start)


_SYMBOL = re.compile(r"@(main|f\d+)\b")


def batched(programs):
    """One module running ``programs`` side by side: each program's functions renamed
    ``p<i>_...``, and a ``main`` taking every program's arguments and returning every
    program's results. XLA compiles it once: its compile costs ~55 ms whatever the size of a
    small program, so one compile for several programs is most of a campaign's speed."""
    import mhlo_ir as hlo
    m = hlo.Module("batch")
    mains, arg_types = [], []
    for i, p in enumerate(programs):
        text = _SYMBOL.sub(lambda mo, i=i: f"@p{i}_{mo.group(1)}", p.module.to_text(pretty=True))
        part = hlo.parse(text)
        for fn in list(part.functions):
            m.insert(fn, exact=True)
        inner = m.lookup(f"p{i}_main")
        inner.visibility = "private"
        mains.append(inner)
        arg_types += inner.arg_types
    main = m.add_function("main", arg_types, visibility="public")
    b = main.builder()
    outs, k = [], 0
    for inner in mains:
        n = len(inner.arg_types)
        r = b.call(inner, list(main.arguments[k:k + n]))
        k += n
        outs += list(r) if isinstance(r, tuple) else [r]
    b.return_(*outs)
    return m


def run_xla_batch(programs, recs, say):
    """XLA's results for each program, from one compile when it works, else one by one."""
    import numpy as np
    import verify
    if len(programs) > 1:
        say({"seed": recs[0]["seed"], "phase": "xla_batch"})
        start = time.perf_counter()
        try:
            m = batched(programs)
            flat = verify.run(m, *[a for p in programs for a in p.inputs])
            outs, k = [], 0
            for p, rec in zip(programs, recs):
                n = len(p.module.lookup("main").result_types)
                outs.append([np.asarray(a) for a in flat[k:k + n]])
                k += n
                rec["xla"] = "ok"
            return outs
        except Exception:  # noqa: BLE001 - which program? each alone says
            pass
        finally:
            for rec in recs:
                _spent(rec, "xla", start, len(recs))
    outs = []
    for p, rec in zip(programs, recs):
        say({"seed": rec["seed"], "phase": "xla"})
        outs.append(run_xla(p, rec))
    return outs


def compare_with_interpreter(p, rec, xla, say):
    import numpy as np
    import verify
    from verify import differential
    from verify.interpreter import InterpreterUnsupported, interpret
    say({"seed": rec["seed"], "phase": "interpreter", "ops": list(rec.get("ops") or ())})
    start = time.perf_counter()
    try:
        ref = interpret(p.module, *p.inputs)
        rec["interpreter"] = "ok"
    except InterpreterUnsupported as e:
        rec["interpreter"] = "unsupported"
        rec["interpreter_error"] = str(e)
        return rec
    except Exception as e:  # noqa: BLE001
        rec["interpreter"] = type(e).__name__
        rec["interpreter_error"] = str(e)[:2000]
        return rec
    finally:
        _spent(rec, "interpreter", start)
    diffs = differential.compare(xla, ref, p.traits, p.inexact, p.computed_in)
    if differential.classify(diffs) is not None and any(
            d.explained_by is None for d in diffs if d.kind in ("float", "nan")):
        # subnormal inputs: XLA flushes them; agreeing once they are zero explains it
        flushed = [_flush(a) for a in p.inputs]
        if any(not np.array_equal(_bits(a), _bits(b)) for a, b in zip(flushed, p.inputs)):
            try:
                x2 = verify.run(p.module, *flushed)
                r2 = interpret(p.module, *flushed)
                again = differential.compare(x2, r2, p.traits, p.inexact, p.computed_in)
                if differential.classify(again) is None:
                    import attrs
                    diffs = [attrs.evolve(d, explained_by=d.explained_by or "subnormal_flush")
                             for d in diffs]
            except Exception:  # noqa: BLE001 - the first verdict stands
                pass
    rec["differences"] = [{"index": d.index, "kind": d.kind, "detail": d.detail,
                           "explained_by": d.explained_by} for d in diffs]
    rec["class"] = differential.classify(diffs)
    if rec["class"] is not None:
        from .known import known_finding
        rec["known"] = known_finding(p.module, diffs)
    return rec


def _spent(rec, phase, start, share=1):
    """Adds the seconds since ``start`` (divided among ``share`` programs) to ``rec``'s
    ``seconds[phase]``: the campaign's report sums them, to say where its time goes."""
    t = rec.setdefault("seconds", {})
    t[phase] = t.get(phase, 0.0) + (time.perf_counter() - start) / share


def _bits(a):
    import numpy as np
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _flush(a):
    """``a`` with its subnormal floats (and complex parts) replaced by zeros of their sign."""
    import numpy as np
    a = np.asarray(a)
    if a.dtype.kind == "c":
        out = a.copy()
        out.real, out.imag = _flush(np.ascontiguousarray(a.real)), _flush(
            np.ascontiguousarray(a.imag))
        return out
    from verify.differential import _is_float, _is_subnormal
    if not _is_float(a.dtype):
        return a
    v = a.astype(np.float64)
    sub = _is_subnormal(a, a.dtype)
    if not sub.any():
        return a
    out = a.copy()
    out[sub] = (np.copysign(0.0, v[sub])).astype(a.dtype)
    return out


# A campaign process makes and drops thousands of small programs a second, each a graph of
# GC-tracked objects with back pointers (ops to blocks, results to ops): cyclic garbage
# that only the collector frees. CPython's default young-generation threshold (700
# allocations) runs a collection every few ops, and survivors pile into full collections
# that walk the whole heap (jax, numpy, hypothesis included). A larger young generation
# lets most of a dropped program die in one young collection: the collector's share of
# drawing and printing falls from ~11% to ~5.5% (gc.callbacks, 6,000 programs). Set only
# in the campaign's own processes (their main functions), never by the library.
CAMPAIGN_GC_THRESHOLD = (50_000, 20, 20)


def tune_gc() -> None:
    import gc
    gc.set_threshold(*CAMPAIGN_GC_THRESHOLD)


def main() -> None:
    tune_gc()
    cfg = json.loads(sys.stdin.readline())
    options = _options(cfg)
    out = sys.stdout

    def say(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    for line in sys.stdin:
        job = json.loads(line)
        run_job(job, options, say, cfg.get("interpret", True))
        say({"done": True})


def run_job(job, options, say, interpret_too):
    """A job is one seed, or a batch of seeds whose programs XLA compiles as one module."""
    programs, recs = [], []
    for seed in job["seeds"]:
        say({"seed": seed, "phase": "draw"})
        try:
            p, rec = draw(seed, job.get("n_ops"), options)
        except Exception as e:  # noqa: BLE001 - a generator bug is a finding too
            say({"seed": seed, "result": {
                "seed": seed, "xla": "generator_error",
                "xla_error": "".join(traceback.format_exception_only(type(e), e))[:2000]}})
            continue
        programs.append(p)
        recs.append(rec)
    outs = run_xla_batch(programs, recs, say) if programs else []
    for p, rec, xla in zip(programs, recs, outs):
        if xla is not None and interpret_too:
            rec = compare_with_interpreter(p, rec, xla, say)
        say({"seed": rec["seed"], "result": rec})


if __name__ == "__main__":
    main()
