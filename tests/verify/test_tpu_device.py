"""Programs run on an attached TPU (a Cloud TPU VM with jax[tpu]): ``verify.compile(m, "tpu")``
without a topology compiles for the chip and runs, with numpy in and out.

Skipped where no TPU is attached (CI). Run on a TPU VM in one process (one process holds the
chip): ``python -m pytest -q tests/verify/test_tpu_device.py``.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.quant import quantized
from tests.mhlo_ir.ops.cases import module

pytestmark = pytest.mark.tpu_device

TPU_RESULTS = Path(__file__).resolve().parents[2] / "docs" / "tpu_results.json"
# Integer results XLA:TPU computes otherwise, by design: f64 is emulated as a pair of f32
# there, so the bits of an f64 are not IEEE's.
INTEGER_DIFFERENCES = {"bitcast_convert:f64_to_ui32_pairs"}


def test_integer_float_and_quantized_programs_run_on_the_chip():
    x = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    (got,) = verify.run(module([hlo.tensor((3, 4), hlo.i32)],
                              lambda b, v: b.multiply(b.add(v, v), v)), x, platform="tpu")
    np.testing.assert_array_equal(got, (x + x) * x)
    a = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    m = module([hlo.tensor((3, 4), hlo.f32)] * 2, lambda b, u, v: b.dot_general(
        u, v, ((1,), (1,)), precision_config=["HIGHEST", "HIGHEST"]))
    (got,) = verify.run(m, a, a, platform="tpu")
    np.testing.assert_allclose(got, a @ a.T, rtol=1e-6, atol=1e-6)
    q = quantized(hlo.i8, hlo.f32, 0.25, -3)
    (stored,) = verify.run(module([hlo.tensor((3, 4), hlo.f32)],
                                 lambda b, v: b.uniform_quantize(v, q)), a * 20, platform="tpu")
    want = np.clip(np.round(a * 20 / np.float32(0.25) - 3), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(stored, want)
    assert verify.has_platform("tpu")


def _cases():
    from tests.mhlo_ir import ops as ops_pkg
    from tests.mhlo_ir.ops.cases import CASES
    for m in pkgutil.iter_modules(ops_pkg.__path__):
        if m.name.startswith("cases_"):
            importlib.import_module(f"{ops_pkg.__name__}.{m.name}")
    return [c for cs in CASES.values() for c in cs if c.reference is not None and c.run is None]


def test_every_op_case_runs_where_it_compiles_for_a_topology():
    """Each op case with a numpy reference: what compiles ahead of time for v5e:2x2
    (docs/tpu_results.json) compiles and runs on the chip, and what does not is refused or
    fails to compile here too; results have the reference's shapes and dtypes, and integer
    results are exact (floats are XLA:TPU's own: transcendental functions to its accuracy,
    f32 products at bf16 precision by default)."""
    compile_only = json.loads(TPU_RESULTS.read_text())
    ran, mismatched = 0, []
    for case in _cases():
        m, inputs = case.build()
        try:
            exe = verify.compile(m, "tpu")
        except (verify.CompileError, verify.VerificationError) as e:
            assert compile_only.get(case.id) != "compiles", f"{case.id}: {e}"
            continue
        assert compile_only.get(case.id, "compiles") == "compiles", case.id
        got, want = exe(*inputs), case.reference(*inputs)
        ran += 1
        for g, w in zip(got, want):
            w = np.asarray(w)
            assert (g.shape, g.dtype) == (w.shape, w.dtype), case.id
            if w.dtype.kind in "iub" and not np.array_equal(g, w):
                mismatched.append(case.id)
    assert sorted(set(mismatched)) == sorted(INTEGER_DIFFERENCES)
    assert ran >= 350
