"""The benchmark compares like with like: each workload built by mhlo_ir prints exactly what
the MLIR bindings print for their build of it, and our lowering of each lowering workload's
jaxpr computes what jax computes for it."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np

import pytest

import mhlo_ir as hlo
import verify
from lower import bench_build, bench_lowering, lower_jaxpr_to_module
from tests.oracle import normalize_hex
from verify.mlir_peer import Mlir


def test_benchmark_programs_are_the_same_program():
    mlir = Mlir()
    f32 = np.arange(300, dtype=np.float32)
    bf16 = (np.arange(300) / 7).astype(ml_dtypes.bfloat16)
    pairs = [(bench_build.ours_chain(50), mlir.chain(50, bench_build.CHAIN_SHAPE)),
             (bench_build.ours_mlp(3), mlir.mlp(3)),
             (bench_build.ours_small(), mlir.small()),
             (bench_build.ours_reductions(6), mlir.reductions(6)),
             (bench_build.ours_const(f32), mlir.const(f32)),
             (bench_build.ours_const(bf16), mlir.const(bf16))]
    for ours, theirs in pairs:
        text = ours.to_text(locations=False)
        # The bindings' module has no name; ours is named after the workload.
        text = text.replace(f' <{{sym_name = "{ours.name}"}}>', "", 1)
        assert normalize_hex(text) == mlir.print(theirs)
        # And the custom-form rows print the same text as MLIR's default print.
        pretty = bench_build._ours_pretty(ours).replace(f"module @{ours.name} ", "module ", 1)
        assert normalize_hex(pretty) == mlir.print_pretty(theirs)
    assert bench_build.n_ops(bench_build.ours_small()) == 21  # 20 ops and the return
    assert bench_build.n_ops(bench_build.ours_mlp(100)) == 501


def test_build_rows_report_ratios():
    mlir = Mlir()
    rows = bench_build.program_rows(quick=True, samples=1, mlir=mlir)
    assert [r["workload"] for r in rows] == [
        "chain 1000", "chain 10000", "mlp 20 layers", "small module",
        "small module, new shapes", "mlp 20 layers, new shapes", "reductions 200",
        "chain 10000, pretty", "mlp 20 layers, pretty", "small module, pretty",
        "reductions 200, pretty"]
    assert all(r["ours_us"] > 0 and r["mlir_us"] > 0 and r["ratio"] > 0 for r in rows)


def test_new_shape_rows_build_the_same_programs_at_shapes_not_met_before():
    """Both sides of a "new shapes" row build one program per call, the same one, each at
    shapes no earlier call of the run used (so no memo of ours has met them)."""
    mlir = Mlir()
    ours, theirs = bench_build._new_shapes(
        lambda k: bench_build.ours_small(*bench_build._small_shape(k)),
        lambda k: mlir.small(*bench_build._small_shape(k)))
    seen = set()
    for _ in range(3):
        m, t = ours(), theirs()
        text = m.to_text(locations=False).replace(' <{sym_name = "small"}>', "", 1)
        assert normalize_hex(text) == mlir.print(t)
        assert m.functions[0].arg_types not in seen
        seen.add(m.functions[0].arg_types)


def test_clearing_the_process_caches_changes_no_text():
    """What the lowering and parse rows clear before each of our samples is memos alone:
    the same module prints the same text, and reads back the same, after it."""
    m = bench_build.ours_mlp(3)
    before = m.to_text()
    bench_build.clear_process_caches()
    assert m.to_text() == before
    assert hlo.parse(before).to_text() == before


def _first_sight_work(k: int) -> None:
    """Programs at shapes met for the first time: built, printed both ways, read back."""
    for m in (bench_build.ours_small(*bench_build._small_shape(k)),
              bench_build.ours_mlp(2, width=bench_build._mlp_width(k)),
              bench_build.ours_reductions(2, shape=(3, 5 + k))):
        for pretty in (False, True):
            text = m.to_text(pretty=pretty)
            assert hlo.parse(text).to_text(pretty=pretty) == text


def _module_containers() -> dict:
    import sys
    out = {}
    for name, mod in list(sys.modules.items()):
        if name == "mhlo_ir" or name.startswith(("mhlo_ir.", "lower.")):
            for attr, v in list(vars(mod).items()):
                if v.__class__ in (dict, list, set):
                    out[(name, attr)] = v
    return out


def test_clearing_leaves_no_module_memo_warm():
    """After programs met for the first time were built, printed and read back, clearing
    the process caches leaves no module-level container of mhlo_ir or lower larger than
    it was before them: each first-sight sample of the bench misses what a new program
    misses (interned types are kept by their classes, not here)."""
    import importlib
    import pkgutil
    import mhlo_ir
    for info in pkgutil.walk_packages(mhlo_ir.__path__, "mhlo_ir."):
        importlib.import_module(info.name)  # (every table a module fills at import)
    bench_build.clear_process_caches()
    before = {k: len(v) for k, v in _module_containers().items()}
    _first_sight_work(10**6)
    _first_sight_work(10**6 + 1)
    bench_build.clear_process_caches()
    grown = {k: (before.get(k, 0), len(v)) for k, v in _module_containers().items()
             if len(v) > before.get(k, 0)}
    assert grown == {}


def test_parse_rows_report_ratios(monkeypatch):
    from lower import bench_parse
    monkeypatch.setattr(bench_parse, "_xdsl_parser", lambda: None)  # (a second an op)
    rows = bench_parse.parse_rows(quick=True, repeats=1, mlir=Mlir())
    assert [r["workload"] for r in rows] == [
        "parse chain 1000", "parse chain 10000", "parse mlp 20 layers", "parse small module",
        "parse chain 10000, custom form", "parse mlp 20 layers, custom form",
        "parse small module, custom form", "parse lowered transformer 1 v&g",
        "parse lowered transformer 1 v&g, custom form", "parse const 4 MiB"]
    assert all(r["mlir_ratio"] > 0 for r in rows)
    assert [r["ops"] for r in rows[:-3]] == [1001, 10001, 101, 21, 10001, 101, 21]
    # The lowered program's ops, those of its regions (reductions' bodies) counted too.
    import jax  # (tests/lower needs jax; without it the bench leaves these rows out)
    name, fn, args = bench_lowering.workloads(quick=True)[-1]
    m = lower_jaxpr_to_module("bench", jax.jit(fn).trace(*args).jaxpr).module
    reduces = m.to_text().count('"mhlo.reduce"(')
    assert reduces > 10
    assert rows[-3]["ops"] == rows[-2]["ops"] == bench_parse._all_ops(m) >= \
        sum(len(f.entry_block.operations) for f in m.functions) + 2 * reduces


def test_memory_child_reports_bytes_per_op(capsys):
    bench_build._memory_child("ours-heap", 2000)
    out = json.loads(capsys.readouterr().out)
    # Each op is one Python object of 8 slots (~100 bytes) plus its share of the block list.
    assert 60 < out["heap_bytes_per_op"] < 400
    bench_build._memory_child("ours", 2000)  # (resident, measured without tracemalloc)
    assert "rss_bytes_per_op" in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("index", range(5))
def test_lowering_workloads_compute_what_jax_computes(index):
    jax = pytest.importorskip("jax")
    name, fn, args = bench_lowering.workloads(quick=True)[index]
    closed = jax.jit(fn).trace(*args).jaxpr
    m = lower_jaxpr_to_module("bench", closed).module
    ours = verify.run(m, *jax.tree.leaves(args))
    theirs = jax.tree.leaves(jax.jit(fn)(*args))
    assert len(ours) == len(theirs), name
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, np.asarray(b), rtol=2e-5, atol=2e-6, err_msg=name)


def test_lowering_rows_report_each_workload():
    pytest.importorskip("jax")
    rows = bench_lowering.lowering_rows(quick=True, samples=1)
    assert [r["workload"].split()[1] for r in rows] == ["chain", "mlp", "mlp", "transformer",
                                                        "transformer"]
    assert all(r["lower_us_per_eqn"] > 0 and r["jax_ratio"] > 0 for r in rows)


def test_columnar_probe_prints_the_chain_as_the_object_ir_does():
    """benchmarks/columnar_probe.py compares like with like: its op lines are ours."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "columnar_probe.py"
    spec = importlib.util.spec_from_file_location("columnar_probe", path)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    from lower.bench_build import _ours_print, ours_chain
    ours = [line for line in _ours_print(ours_chain(40)).splitlines() if '= "mhlo.' in line]
    assert probe.columnar_print(probe.columnar_chain(40)).splitlines() == ours
