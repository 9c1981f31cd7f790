"""``python -m verify.fuzz``: run a campaign and report it (see ``verify.fuzz``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .campaign import Campaign, outcome, seed_of, totals
from .reproducers import save_inputs

_QUIET = ("agree", "interpreter_unsupported", "xla_only")


def _is_finding(rec) -> bool:
    o = outcome(rec)
    return o not in _QUIET


def _parser():
    p = argparse.ArgumentParser(prog="python -m verify.fuzz", description=__doc__)
    p.add_argument("--minutes", type=float, default=1.0, help="how long to draw programs")
    p.add_argument("--programs", type=int, default=None, help="stop after this many")
    p.add_argument("--seed", type=int, default=0, help="the campaign's seed")
    p.add_argument("--jobs", type=int, default=2, help="worker processes")
    p.add_argument("--ops", default=None, help="comma-separated op names (default: all)")
    p.add_argument("--element-types", default=None, help="comma-separated element types")
    p.add_argument("--max-ops", type=int, default=8)
    p.add_argument("--division-by-zero", action="store_true",
                   help="let integer divisors be zero (the interpreter then dies of SIGFPE)")
    p.add_argument("--xla-only", action="store_true", help="no interpreter: validity only")
    p.add_argument("--draw-only", action="store_true",
                   help="measure drawing and printing alone, in this process")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per program")
    p.add_argument("--xla-flags", default=None,
                   help="XLA_FLAGS for the workers (e.g. --xla_backend_optimization_level=0, "
                        "which compiles generated programs ~1.4x faster)")
    p.add_argument("--batch", type=int, default=8,
                   help="programs per XLA compile (a failing batch reruns one by one)")
    p.add_argument("--out", default=None, help="folder for reduced reproducers")
    p.add_argument("--reduce-seconds", type=float, default=60.0,
                   help="time for reducing findings")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    return p


def _cfg(args):
    return {"max_ops": args.max_ops,
            "ops": args.ops.split(",") if args.ops else None,
            "element_types": args.element_types.split(",") if args.element_types else None,
            "division_by_zero": args.division_by_zero, "interpret": not args.xla_only,
            "xla_flags": args.xla_flags}


def _draw_only(args):
    from mhlo_ir import strategies as hst

    from .worker import tune_gc
    tune_gc()  # as the workers do
    c = _cfg(args)
    options = hst.default_options(c["max_ops"], c["ops"], c["element_types"],
                                  division_by_zero=c["division_by_zero"])
    start = time.perf_counter()
    n = 0
    chars = 0
    while time.perf_counter() - start < args.minutes * 60 and (
            args.programs is None or n < args.programs):
        chars += len(hst.generate_seeded(seed_of(args.seed, n), options).module.to_text())
        n += 1
    dt = time.perf_counter() - start
    return {"programs": n, "seconds": round(dt, 2), "programs_per_s": round(n / dt, 1),
            "mean_chars": round(chars / max(n, 1))}


def _reduce(campaign, findings, seconds):
    """For each finding, the shortest prefix of its program with the same outcome and the
    same known finding (or none): a prefix that shows another bug of the same class is not
    this finding's reproducer."""
    deadline = time.monotonic() + seconds
    reduced = {}
    for rec in findings:
        reduced[rec["seed"]] = rec
        if time.monotonic() > deadline:
            continue
        want = outcome(rec)
        n = rec.get("n_ops") or campaign.cfg["max_ops"]
        best = None
        for k in range(1, n):
            if time.monotonic() > deadline:
                break
            r = campaign.run([rec["seed"]], n_ops=k)
            if r and outcome(r[0]) == want and r[0].get("known") == rec.get("known"):
                best = r[0]
                break
        reduced[rec["seed"]] = best or rec
    return reduced


def _save(out, rec, cfg):
    from mhlo_ir import strategies as hst
    options = hst.default_options(cfg["max_ops"], cfg["ops"], cfg["element_types"],
                                  division_by_zero=cfg["division_by_zero"])
    p = hst.generate_seeded(rec["seed"], options, rec.get("n_ops_asked"))
    slug = outcome(rec).replace(":", "_").replace("/", "_")
    base = os.path.join(out, f"{slug}_seed{rec['seed']}_ops{len(p.ops)}")
    with open(base + ".mlir", "w") as f:
        f.write(p.module.to_text(pretty=True))
    save_inputs(base + ".npz", p.inputs)
    with open(base + ".json", "w") as f:
        json.dump(dict(rec, reproduce=f"mhlo_ir.strategies.generate_seeded({rec['seed']}, "
                                      f"default_options(**{_options_kwargs(cfg)}), "
                                      f"n_ops={rec.get('n_ops_asked')})"),
                  f, indent=1, default=str)
    return base


def _options_kwargs(cfg) -> dict:
    return {"max_ops": cfg["max_ops"], "ops": cfg["ops"], "element_types": cfg["element_types"],
            "division_by_zero": cfg["division_by_zero"]}


def _check(p, args) -> None:
    """Options the workers would fail on with every program (a misspelt op, a zero count):
    refused here, before a campaign records those failures as XLA crashes."""
    from mhlo_ir import strategies as hst
    for name in ("jobs", "batch", "max_ops"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.programs is not None and args.programs < 0:
        p.error(f"--programs must not be negative, got {args.programs}")
    for name in ("minutes", "timeout", "reduce_seconds"):
        if not getattr(args, name) >= 0:  # (NaN too)
            p.error(f"--{name.replace('_', '-')} must not be negative, got "
                    f"{getattr(args, name)}")
    if not args.timeout > 0:
        p.error("--timeout must be more than 0 seconds (every program would time out)")
    if args.seed < 0:  # (random.Random seeds with its absolute value: another seed's programs)
        p.error(f"--seed must not be negative, got {args.seed}")
    for name in ("ops", "element_types"):
        if getattr(args, name) is not None and not getattr(args, name).strip():
            p.error(f"--{name.replace('_', '-')} is empty: name at least one (leave the "
                    "option out for all)")
    if args.draw_only:
        ignored = [flag for flag, on in (
            ("--out", args.out is not None), ("--jobs", args.jobs != 2),
            ("--xla-only", args.xla_only), ("--timeout", args.timeout != 30.0),
            ("--xla-flags", args.xla_flags is not None), ("--batch", args.batch != 8))
            if on]
        if ignored:
            p.error(f"--draw-only draws and prints in this process alone: {', '.join(ignored)} "
                    "would be ignored")
    if args.xla_flags is not None and (why := _xla_flags_problem(args.xla_flags)):
        p.error(f"--xla-flags {args.xla_flags!r}: XLA refuses them ({why}); every program "
                "would be recorded as an XLA crash")
    c = _cfg(args)
    try:
        hst.default_options(c["max_ops"], c["ops"], c["element_types"],
                            division_by_zero=c["division_by_zero"])
    except (ValueError, TypeError) as e:
        p.error(str(e))


def _xla_flags_problem(flags: str) -> str | None:
    """What XLA says of ``flags`` compiling a one-op program in a child process (it aborts
    on an unknown flag), or None when it compiles."""
    import subprocess
    child = ("import numpy as np, mhlo_ir as hlo, verify\n"
             "m = hlo.Module('m')\n"
             "f = m.add_function('main', [hlo.tensor((2,), hlo.f32)], visibility='public')\n"
             "b = f.builder(); b.return_(b.negate(f.arguments[0]))\n"
             "verify.run(m, np.zeros(2, np.float32))\n")
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flags).strip()
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                       env=env, timeout=300)
    if r.returncode == 0:
        return None
    lines = [line for line in r.stderr.splitlines() if "flag" in line.lower()] or \
        r.stderr.strip().splitlines()[-1:] or [f"exit status {r.returncode}"]
    return lines[0].split("] ", 1)[-1].strip()[:200]  # (less glog's prefix)


def main(argv=None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    _check(p, args)
    if args.draw_only:
        report = _draw_only(args)
        print(json.dumps(report) if args.json else
              f"drew and printed {report['programs']} programs in {report['seconds']} s: "
              f"{report['programs_per_s']}/s")
        return 0
    cfg = _cfg(args)
    campaign = Campaign(cfg, jobs=args.jobs, timeout=args.timeout, batch=args.batch)
    start = time.monotonic()
    deadline = start + args.minutes * 60
    limit = args.programs

    def seeds():
        i = 0
        while limit is None or i < limit:
            yield seed_of(args.seed, i)
            i += 1

    results = campaign.run(seeds(), deadline)
    campaign.batch = 1
    seconds = time.monotonic() - start
    report = totals(results, seconds, args.jobs)
    findings = [r for r in results if _is_finding(r)]
    report["findings"] = [{"seed": r["seed"], "outcome": outcome(r), "known": r.get("known"),
                           "detail": (r.get("xla_error") or r.get("interpreter_error")
                                      or "; ".join(d["detail"] for d in r.get("differences", ())
                                                   if not d.get("explained_by")))[:300]}
                          for r in findings]
    if args.out and findings:
        os.makedirs(args.out, exist_ok=True)
        reduced = _reduce(campaign, findings, args.reduce_seconds)
        report["reproducers"] = [_save(args.out, rec, cfg) for rec in reduced.values()]
    campaign.close()
    if args.json:
        print(json.dumps(report))
    else:
        _print(report)
    return 0


def _print(r):
    print(f"{r['programs']} programs in {r['seconds']} s ({r['programs_per_s']}/s, "
          f"{r['jobs']} jobs); valid {100 * (r['valid_fraction'] or 0):.2f}%; compared "
          f"{r['compared']}")
    print(f"ops covered: {len(r['ops_covered'])}; element types covered: "
          f"{len(r['element_types_covered'])}")
    for k, v in sorted(r["outcomes"].items(), key=lambda kv: -kv[1]):
        print(f"  {v:7d}  {k}")
    if r["explained"]:
        print("explained differences: " + ", ".join(f"{k} {v}" for k, v in
                                                     r["explained"].items()))
    if r.get("known"):
        print("known findings (docs/findings.md): " + ", ".join(
            f"{k} {v}" for k, v in r["known"].items()))
    new = [f for f in r["findings"] if not f.get("known")]
    print(f"new findings: {len(new)}")
    for f in new[:20]:
        print(f"  seed {f['seed']}: {f['outcome']}: {f['detail'][:160]}")
    for path in r.get("reproducers", ()):
        print(f"  reproducer: {path}.mlir")


if __name__ == "__main__":
    sys.exit(main())
