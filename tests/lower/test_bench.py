"""The benchmark compares like with like: each workload built by mhlo_ir prints exactly what
the MLIR bindings print for their build of it."""

from __future__ import annotations

import numpy as np

from lower import bench
from tests.oracle import normalize_hex
from verify.mlir_peer import Mlir


def test_benchmark_programs_are_the_same_program():
    mlir = Mlir()
    pairs = [(bench.ours_chain(50), mlir.chain(50)), (bench.ours_mlp(3), mlir.mlp(3)),
             (bench.ours_const(np.arange(300, dtype=np.float32)),
              mlir.const(np.arange(300, dtype=np.float32)))]
    for ours, theirs in pairs:
        text = ours.to_text(locations=False)
        # The bindings' module has no name; ours is named after the workload.
        text = text.replace(f' <{{sym_name = "{ours.name}"}}>', "", 1)
        assert normalize_hex(text) == mlir.print(theirs)


def test_lowering_rows_report_each_workload():
    rows = bench.lowering_rows(quick=True, repeats=1)
    assert [r["workload"].split()[1] for r in rows] == ["chain", "mlp", "mlp"]
    assert all(r["lower_us_per_eqn"] > 0 for r in rows)
