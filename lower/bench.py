"""Speed of building, printing, lowering and parsing, against peers measured in the same run.

    python -m lower.bench              # full run
    python -m lower.bench --quick      # smaller sizes, fewer samples
    python -m lower.bench --json       # one JSON object: {"rows": [...]}
    python -m lower.bench --builder-only   # only mhlo_ir build + print (no lowering)

Peers: the MLIR Python bindings inside jaxlib building and printing the same programs
(``lower/bench_build.py``), JAX's own lowering of the same ClosedJaxpr objects
(``lower/bench_lowering.py``, when jax is installed), and MLIR's C++ parser and xDSL's
reading the programs' text back (``lower/bench_parse.py``). Ratios > 1 mean we are faster;
every ratio is of two measurements taken in this run, never of a stored figure.
"""

from __future__ import annotations

import argparse
import json

from . import bench_build, bench_lowering
from .bench_parse import parse_rows, print_rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer samples")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    ap.add_argument("--builder-only", action="store_true", help="skip the lowering workloads")
    ap.add_argument("--no-parse", action="store_true", help="skip the parser workloads")
    ap.add_argument("--no-memory", action="store_true",
                    help="skip the memory row (two fresh processes)")
    args = ap.parse_args(argv)
    samples = 3 if args.quick else 7
    from verify.mlir_peer import Mlir  # the peer; lower/ itself never imports MLIR bindings
    mlir = Mlir()
    build = bench_build.program_rows(args.quick, samples, mlir)
    build += bench_build.constant_rows(args.quick, samples, mlir)
    if not args.no_memory:
        build.append(bench_build.memory_row(args.quick))
    lowering = [] if args.builder_only else bench_lowering.lowering_rows(args.quick, samples)
    parsing = [] if args.no_parse else parse_rows(args.quick, samples, mlir)
    if args.json:
        print(json.dumps({"rows": build + lowering + parsing}, indent=2))
        return 0
    bench_build.print_table(build)
    if not args.builder_only:
        bench_lowering.print_table(lowering)
    if parsing:
        print_rows(parsing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
