"""``python -m verify.conformance [DIR] [--dialect mhlo|stablehlo] [--jobs N] [--json]
[--limit K] [--sample N] [--generic-input] [--no-shared-compiles]``: see ``verify.conformance``."""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import DEFAULT_DIR, render_text, run_conformance


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m verify.conformance",
        description="Run StableHLO's test corpus through mhlo_ir's parser and printer and "
                    "jaxlib, beside jaxlib alone on the original text.")
    p.add_argument("dir", nargs="?", default=str(DEFAULT_DIR),
                   help=f"a folder of .mlir files (subfolders included) or one file; "
                        f"default {DEFAULT_DIR}")
    p.add_argument("--dialect", choices=("mhlo", "stablehlo"), default="mhlo",
                   help="the dialect our printer writes (default mhlo)")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="worker processes (default 2)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds per file and side before its worker is killed (default 120; "
                        "a file's two sides first run in one task of twice that, a file that "
                        "overruns it then side by side)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: per-file statuses and the totals")
    p.add_argument("--limit", type=int, metavar="K", help="only the first K files")
    p.add_argument("--sample", type=int, metavar="N",
                   help="a reproducible sample of N files (see --seed)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--generic-input", action="store_true",
                   help="development aid: our parser reads MLIR's generic print of each "
                        "module (made with jaxlib's bindings) instead of the file's text")
    p.add_argument("--no-shared-compiles", action="store_true",
                   help="compile the reference's program even where its HLO is the very HLO "
                        "ours compiled (by default it runs ours' executable then)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if not args.timeout > 0:  # (NaN too)
        p.error(f"--timeout must be more than 0 seconds, got {args.timeout:g}")
    for name in ("limit", "sample"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            p.error(f"--{name} must be 0 or more")
    if not os.path.exists(args.dir):
        p.error(f"no such file or directory: {args.dir}")

    def progress(done, total):
        if not args.quiet and sys.stderr.isatty() or (done == total and not args.quiet):
            print(f"\r{done}/{total} tasks", end="\n" if done == total else "",
                  file=sys.stderr, flush=True)

    report = run_conformance(args.dir, dialect=args.dialect, generic_input=args.generic_input,
                             jobs=args.jobs, timeout=args.timeout, limit=args.limit,
                             sample_size=args.sample, seed=args.seed, progress=progress,
                             share_executables=not args.no_shared_compiles)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        print(render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
