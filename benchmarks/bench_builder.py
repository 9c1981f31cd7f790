"""Build + print benchmark only: ``python benchmarks/bench_builder.py [--quick] [--json]``.

The benchmark lives in ``lower/bench.py`` (``python -m lower.bench`` also times lowering).
"""

import sys

from lower.bench import main

if __name__ == "__main__":
    raise SystemExit(main(["--builder-only", *sys.argv[1:]]))
