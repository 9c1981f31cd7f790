"""verify/lapack.py: jaxlib's LAPACK targets registered when a module calls one, jax or not."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verify import lapack
from tests.child_env import child_env

ROOT = Path(__file__).resolve().parents[2]


def test_needs_lapack_reads_generic_and_pretty_text():
    assert lapack.needs_lapack('"mhlo.custom_call"(%0) <{api_version = 4 : i32, '
                               'call_target_name = "lapack_sgeqrf_ffi"}>')
    assert lapack.needs_lapack("%0:2 = stablehlo.custom_call @lapack_dsyevd_ffi(%arg0)")
    assert lapack.needs_lapack('call_target_name = "tridiagonal_solve_perturbed_ffi"')
    assert not lapack.needs_lapack('call_target_name = "Sharding"')
    assert not lapack.needs_lapack('%0 = "mhlo.add"(%a, %b)  // lapack_sgeqrf_ffi')


def test_register_is_idempotent_and_names_the_targets():
    names = lapack.register()
    assert lapack.register() == names
    assert {"lapack_sgeqrf_ffi", "lapack_zgesdd_ffi", "lapack_dgetrf_ffi",
            "tridiagonal_solve_perturbed_ffi"} <= set(names)


def test_lapack_module_compiles_and_runs_without_jax():
    """In a fresh process without jax: our QR lowering compiles because verify registered the
    targets itself (jax would have done it on import otherwise)."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import verify
        from lower import lax, lower_jaxpr_to_module
        a = np.array([[4, 1, 2], [1, 3, 0], [2, 0, 5], [1, 1, 1]], np.float32)
        m = lower_jaxpr_to_module("qr", lax.make_jaxpr(lambda x: lax.qr(x))(a)).module
        exe = verify.compile(m)
        assert "jax" not in sys.modules, "compiling imported jax"
        q, r = exe(a)
        assert np.abs(q @ r - a).max() < 1e-5
        print("ok")
    """)
    env = child_env(TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize("platform", ["cuda"])
def test_only_cpu_registers(platform, monkeypatch):
    called = []
    monkeypatch.setattr(lapack, "_registered", False)
    monkeypatch.setattr(lapack, "register", lambda: called.append(1))
    lapack.register_if_needed('custom_call @lapack_sgeqrf_ffi(', platform)
    lapack.register_if_needed('call_target_name = "foo"', "cpu")
    assert not called
    lapack.register_if_needed('custom_call @lapack_sgeqrf_ffi(', "cpu")
    assert called == [1]
