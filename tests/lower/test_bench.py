"""The benchmark compares like with like: each workload built by mhlo_ir prints exactly what
the MLIR bindings print for their build of it, and each lowering workload has the equations
JAX records for the same program."""

from __future__ import annotations

import numpy as np

import pytest

import verify
from lower import bench, lower_jaxpr_to_module
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


def _signature(jaxpr):
    """Each equation's primitive, params, and operand kinds (literal value or variable)."""
    out = []
    for e in jaxpr.eqns:
        ins = tuple(float(v.val) if hasattr(v, "val") else "var" for v in e.invars)
        params = {k: v for k, v in e.params.items() if k != "preferred_element_type"}
        out.append((e.primitive.name, ins, repr(sorted(params.items()))))
    return out


@pytest.mark.parametrize("which", ["chain", "fwd", "grad"])
def test_lowering_workloads_have_jax_equations(which):
    jax = pytest.importorskip("jax")
    chain, fwd, grad = bench.jax_programs(3)
    x = np.zeros((8,), np.float32)
    mlp_args = (np.zeros((8, 64), np.float32), np.zeros((64, 64), np.float32),
                np.zeros((64,), np.float32))
    jf, args, ours = {"chain": (chain(7), (x, x), bench.chain_jaxpr(7)),
                      "fwd": (fwd, mlp_args, bench.mlp_jaxpr(3, False)),
                      "grad": (grad, mlp_args, bench.mlp_jaxpr(3, True))}[which]
    theirs = jax.make_jaxpr(jf)(*args).jaxpr
    assert _signature(ours) == _signature(theirs)
    # ... and computes what jax computes.
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(a.shape).astype(np.float32) for a in args]
    m = lower_jaxpr_to_module("bench", ours).module
    np.testing.assert_allclose(verify.run(m, *args)[0], np.asarray(jax.jit(jf)(*args)),
                               rtol=1e-5, atol=1e-5)
