"""Decompositions lowered for CUDA and ROCm (lower/rules/decompositions_gpu.py): cuSOLVER,
cuSPARSE and hipSOLVER typed-FFI custom calls.

There is no GPU here, so the oracles are:
- JAX's own CUDA/ROCm lowering, which jax 0.10.2 produces on a CPU-only machine
  (``jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",))``): both modules read by
  mhlo_ir's parser, SSA names renumbered in order of appearance, locations, result names and
  module attributes left out, then compared whole: every op, its operand and result types
  and attributes, the custom calls' targets, layouts, api_version, backend_config,
  aliases and frontend attributes included. JAX's ``sdy.sharding_rule`` on the calls is left
  out by lowering it with Shardy off (a single-device program's partitioner attribute).
- Where our module differs from JAX's only in ops that other rules (or jnp wrappers) write,
  the custom calls alone are compared, and the ops around them are run on CPU where they
  have no custom call (JAX's program and ours: the same numbers).
- jaxlib's verifier accepts our text (``verify.check``).
- ``gpu`` tests, skipped without a CUDA device, run the programs and check them with numpy.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module

jax = pytest.importorskip("jax")
jnp = jax.numpy
jl = jax.lax.linalg
lj = pytest.importorskip("lower.jax")
from jax._src import config as jax_config  # noqa: E402
from jax._src.lax import linalg as jll  # noqa: E402
from tests.lower.harness import normalized  # noqa: E402
from tests.lower.random_matrices import H, rand  # noqa: E402

f32, f64, c64, c128 = np.float32, np.float64, np.complex64, np.complex128


def _x64(args):
    wide = any(np.asarray(a).dtype in (np.dtype(f64), np.dtype(c128)) for a in args)
    return jax.enable_x64(True) if wide else contextlib.nullcontext()


def jax_text(f, *args, platform="cuda"):
    with _x64(args), jax_config.use_shardy_partitioner(False):
        return jax.jit(f).trace(*args).lower(lowering_platforms=(platform,)).as_text()


def our_module(f, *args, platform="cuda"):
    with _x64(args):
        return lj.lower(f, *args, platform=platform).module


def custom_calls(text: str) -> list:
    """Each custom call of a normalized module, its operand names left out."""
    return [re.sub(r"\(%[^)]*\)", "(...)", line.split("=", 1)[1]).strip()
            for line in normalized(text).splitlines() if '"mhlo.custom_call"' in line]


def eigh_with(algorithm, lower=True):
    return lambda a: jll.eigh_p.bind(a, lower=lower, sort_eigenvalues=True,
                                     subset_by_index=None, algorithm=algorithm)


def tridiagonal_system(batch=(2,), m=4, k=3, dtype=f32):
    dl, d, du = (rand((*batch, m), dtype, seed=s) for s in (1, 2, 3))
    return dl, d + 4, du, rand((*batch, m, k), dtype, seed=4)


# Programs whose every op is JAX's (jnp's symmetrizing wrappers, whose conj is jax's ops too:
# tests/lower/test_jax_text_parity.py).
SAME_MODULE = {
    "cholesky": (jnp.linalg.cholesky, (rand((3, 3)),)),
    "cholesky_batched_c64": (lambda a: jl.cholesky(a, symmetrize_input=False),
                             (rand((2, 3, 3), c64),)),
    "cholesky_f64": (lambda a: jl.cholesky(a, symmetrize_input=False), (rand((4, 4), f64),)),
    "qr": (jnp.linalg.qr, (rand((3, 3)),)),
    "householder_product_c64": (jl.householder_product, (rand((2, 4, 3), c64),
                                                         rand((2, 3), c64))),
    "ormqr": (lambda a, t, c: jl.ormqr(a, t, c, left=False, transpose=True),
              (rand((4, 3)), rand((3,)), rand((5, 4)))),
    "ormqr_left_c128": (lambda a, t, c: jl.ormqr(a, t, c, left=True, transpose=False),
                        (rand((4, 3), c128), rand((3,), c128), rand((4, 2), c128))),
    "eigh_c128": (lambda a: jl.eigh(a, symmetrize_input=False), (rand((2, 3, 3), c128),)),
    "eigh_upper_jacobi": (eigh_with(jll.EighImplementation.JACOBI, lower=False),
                          (rand((3, 3)),)),
    "eigh_qr_f64": (eigh_with(jll.EighImplementation.QR), (rand((3, 3), f64),)),
    "lu_batched_c64": (jl.lu, (rand((2, 3, 4), c64),)),
    "lu_tall_f64": (jl.lu, (rand((5, 3), f64),)),
    "tridiagonal_upper_c64": (lambda a: jl.tridiagonal(a, lower=False),
                              (rand((2, 4, 4), c64),)),
    "tridiagonal_f64": (jl.tridiagonal, (rand((3, 3), f64),)),
    "tridiagonal_solve": (jl.tridiagonal_solve, tridiagonal_system()),
    "tridiagonal_solve_perturbed": (
        lambda *a: jl.tridiagonal_solve(*a, perturb_singular=True),
        tridiagonal_system(batch=(), m=3, k=2)),
    "svd": (jnp.linalg.svd, (rand((2, 3, 4)),)),
    "svd_c64": (jnp.linalg.svd, (rand((4, 3), c64),)),
    "svd_thin_c128": (lambda a: jnp.linalg.svd(a, full_matrices=False), (rand((4, 3), c128),)),
    "svd_thin_econ_jacobi": (lambda a: jnp.linalg.svd(a, full_matrices=False),
                             (rand((40, 34)),)),
    "svd_values_f64": (lambda a: jnp.linalg.svd(a, compute_uv=False), (rand((3, 5), f64),)),
    "svd_qr_wide_batched": (lambda a: jl.svd(a, algorithm=jl.SvdAlgorithm.QR),
                            (rand((2, 3, 5)),)),
    "svd_qr_tall_thin_c64": (lambda a: jl.svd(a, full_matrices=False,
                                              algorithm=jl.SvdAlgorithm.QR),
                             (rand((5, 3), c64),)),
    "svd_qr_values_wide": (lambda a: jl.svd(a, compute_uv=False, algorithm=jl.SvdAlgorithm.QR),
                           (rand((3, 5)),)),
    "svd_polar_c64": (lambda a: jl.svd(a, full_matrices=False, algorithm=jl.SvdAlgorithm.POLAR),
                      (rand((5, 3), c64),)),
    "svd_over_1024_rows_gesvd": (lambda a: jl.svd(a, full_matrices=False), (rand((1030, 2)),)),
    "eig": (jl.eig, (rand((3, 3)),)),
    "eig_right_c128": (lambda a: jl.eig(a, compute_left_eigenvectors=False),
                       (rand((2, 3, 3), c128),)),
    "eig_magma_f64": (lambda a: jl.eig(a, implementation=jl.EigImplementation.MAGMA),
                      (rand((3, 3), f64),)),
    "triangular_solve_c64": (lambda a, b: jl.triangular_solve(
        a, b, left_side=True, lower=True, transpose_a=True, conjugate_a=True),
        (rand((3, 3), c64), rand((3, 2), c64))),
}
# CUDA alone has kernels for these two in jax's plugin.
CUDA_ONLY = {
    "cholesky_update": (jl.cholesky_update, (rand((3, 3)), rand((3,)))),
    "symmetric_product": (lambda a, c: jl.symmetric_product(a, c, alpha=2.0, beta=0.5),
                          (rand((3, 4)), rand((3, 3)))),
}
ROCM_SVD = {"svd_divide_and_conquer_rocm": (
    lambda a: jl.svd(a, algorithm=jl.SvdAlgorithm.DIVIDE_AND_CONQUER), (rand((2, 4, 3)),))}
MODULE_CASES = ([("cuda", k) for k in {**SAME_MODULE, **CUDA_ONLY}]
                + [("rocm", k) for k in {**SAME_MODULE, **ROCM_SVD}])
ALL = {**SAME_MODULE, **CUDA_ONLY, **ROCM_SVD}


@pytest.mark.parametrize("platform,name", MODULE_CASES)
def test_module_is_jaxs(platform, name):
    f, args = ALL[name]
    ours = our_module(f, *args, platform=platform)
    theirs = jax_text(f, *args, platform=platform)
    assert normalized(ours.to_text()) == normalized(theirs)
    assert custom_calls(theirs) or name.startswith("triangular_solve")


@pytest.mark.parametrize("platform,name", MODULE_CASES)
def test_jaxlib_verifies_our_module(platform, name):
    f, args = ALL[name]
    verify.check(our_module(f, *args, platform=platform))


# qr whose triangle mask selects a zero: where an earlier pad or pivot vector made one, jax
# writes the constant again (one per Python object) and we reuse it (one per value and block):
# the custom calls alone are compared. (The mask's int64 under x64: test_jax_text_parity.py.)
QR_CALLS = {
    "qr_complete_batched": (lambda a: jnp.linalg.qr(a, mode="complete"), (rand((2, 4, 3)),)),
    "qr_reduced_c128": (jnp.linalg.qr, (rand((4, 3), c128),)),
    "qr_wide_batched_c64": (jnp.linalg.qr, (rand((2, 3, 5), c64),)),
    "qr_pivoting": (lambda a: jl.qr(a, pivoting=True), (rand((4, 3)),)),
    "qr_pivoting_magma_f64": (lambda a: jl.qr(a, pivoting=True, use_magma=True),
                              (rand((4, 3), f64),)),
    "qr_pivoting_no_magma_c64": (lambda a: jl.qr(a, pivoting=True, use_magma=False),
                                 (rand((3, 4), c64),)),
}


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
@pytest.mark.parametrize("name", sorted(QR_CALLS))
def test_qr_custom_calls_are_jaxs(platform, name):
    f, args = QR_CALLS[name]
    ours = our_module(f, *args, platform=platform)
    want = custom_calls(jax_text(f, *args, platform=platform))
    assert len(want) == 2 and custom_calls(ours.to_text()) == want
    verify.check(ours)


def test_magma_follows_jax_use_magma():
    x = rand((4, 3))

    def f(a):
        return jl.qr(a, pivoting=True)
    with jax_config.gpu_use_magma("on"):
        calls = custom_calls(our_module(f, x).to_text())
        assert calls == custom_calls(jax_text(f, x))
    assert 'magma = "on"' in calls[0]


# -- eig with cuSOLVER's geev (jax's choice where its CUDA plugin has cuSOLVER >= 11.7.1) ------

class _CusolverVersions:
    @staticmethod
    def cusolver_get_version():
        return 11701


@pytest.fixture
def cusolver_geev(monkeypatch):
    """jax's linalg rules (and ours, which read the same attribute) see a plugin whose
    cuSOLVER has geev."""
    monkeypatch.setattr(jll, "cuda_versions", _CusolverVersions)


@pytest.mark.parametrize("dtype", [c64, c128])
def test_geev_complex_module_is_jaxs(cusolver_geev, dtype):
    def f(a):
        return jl.eig(a, compute_left_eigenvectors=False)
    x = rand((2, 3, 3), dtype)
    theirs = jax_text(f, x)
    assert "cusolver_geev_ffi" in theirs
    assert normalized(our_module(f, x).to_text()) == normalized(theirs)


def test_geev_real_calls_are_jaxs_and_rocm_keeps_hybrid(cusolver_geev):
    """Real input: geev's packed eigenvectors are unpacked by jnp code in jax (a cumsum and
    a remainder as calls), by the same ops inline here: the custom calls are compared, the
    unpacking is run below. Left vectors, and ROCm, keep the hybrid kernel."""
    x = rand((2, 3, 3))
    targets = []
    for f, platform in [(lambda a: jl.eig(a, compute_left_eigenvectors=False), "cuda"),
                        (lambda a: jl.eig(a, compute_left_eigenvectors=False,
                                          compute_right_eigenvectors=False), "cuda"),
                        (jl.eig, "cuda"),
                        (lambda a: jl.eig(a, compute_left_eigenvectors=False), "rocm")]:
        ours = our_module(f, x, platform=platform)
        want = custom_calls(jax_text(f, x, platform=platform))
        assert custom_calls(ours.to_text()) == want
        verify.check(ours)
        targets.append(re.search(r'call_target_name = "(\w+)"', want[0]).group(1))
    assert targets == ["cusolver_geev_ffi", "cusolver_geev_ffi", "cuhybrid_eig_real",
                       "hiphybrid_eig_real"]


def test_unpacking_conjugate_pairs_is_jaxs():
    """The real geev's eigenvectors: a real eigenvalue's column as is; a conjugate pair's
    columns (re, im) become re + i im and re - i im. Ours (traced with lower's front end, run
    on CPU) against jax's function run by jax on CPU."""
    from lower.rules.decompositions_gpu import _unpack_conjugate_pairs
    w = np.array([[1 + 0j, 2 + 1j, 2 - 1j, 3 + 0j],
                  [1 + 2j, 1 - 2j, 4 + 3j, 4 - 3j]], c64)
    vr = rand((2, 4, 4))
    m = lower_jaxpr_to_module("unpack", lax.make_jaxpr(_unpack_conjugate_pairs)(w, vr)).module
    (ours,) = verify.run(m, w, vr)
    want = np.asarray(jax.jit(jll._unpack_conjugate_pairs)(w, vr))
    np.testing.assert_array_equal(ours, want)
    np.testing.assert_array_equal(ours[0, :, 1], vr[0, :, 1] + 1j * vr[0, :, 2])
    np.testing.assert_array_equal(ours[0, :, 2], vr[0, :, 1] - 1j * vr[0, :, 2])


# -- programs with no custom call on GPU: run on CPU, jax's and ours ----------------------------

NO_CALLS = {
    # (gtsv2 needs three rows: jax's generic Thomas algorithm below that)
    "tridiagonal_solve_two_rows": ("cuda", jl.tridiagonal_solve,
                                   tridiagonal_system(batch=(2,), m=2, k=3)),
    "tridiagonal_solve_one_row": ("rocm", jl.tridiagonal_solve,
                                  tridiagonal_system(batch=(), m=1, k=2)),
    "svd_of_an_empty_matrix": ("cuda", jnp.linalg.svd, (rand((0, 3)),)),
    "cholesky_update_rocm": ("rocm", jl.cholesky_update, (np.triu(rand((3, 3))) + 3 * np.eye(
        3, dtype=f32), rand((3,)))),
    "symmetric_product_rocm": ("rocm", lambda a, c: jl.symmetric_product(a, c, alpha=2.0,
                                                                          beta=0.5),
                               (rand((3, 4)), rand((3, 3)))),
}


@pytest.mark.parametrize("name", sorted(NO_CALLS))
def test_programs_without_custom_calls_compute_as_jaxs(name):
    platform, f, args = NO_CALLS[name]
    ours = our_module(f, *args, platform=platform)
    assert "custom_call" not in ours.to_text()
    theirs = jax_text(f, *args, platform=platform)
    got = verify.run(ours, *args, platform="cpu")
    want = verify.run(theirs, *args, platform="cpu")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


# -- refusals, as jax refuses ------------------------------------------------------------------

@pytest.mark.parametrize("platform", ["cuda", "rocm"])
def test_what_jax_refuses_on_gpu_is_refused(platform):
    x = rand((3, 3))
    cases = [(jl.schur, NotImplementedError, "'schur' on platform"),
             (jl.hessenberg, NotImplementedError, "'hessenberg' on platform"),
             (eigh_with(jll.EighImplementation.QDWH), NotImplementedError, "QDWH"),
             (lambda a: jl.eigh(a, subset_by_index=(0, 2)), NotImplementedError,
              "subset_by_index"),
             (lambda a: jl.svd(a, full_matrices=False, subset_by_index=(0, 2)), NotImplementedError,
              "subset_by_index"),
             (lambda a: jl.eig(a, implementation=jl.EigImplementation.CUSOLVER), RuntimeError,
              "cusolver 11.7.1")]
    if platform == "cuda":
        cases.append((lambda a: jl.svd(a, algorithm=jl.SvdAlgorithm.DIVIDE_AND_CONQUER),
                      NotImplementedError, "only supported on AMD"))
    for f, error, match in cases:
        with pytest.raises(error, match=match):
            our_module(f, x, platform=platform)
        if match.startswith("'"):
            continue  # (jax's own refusal of a primitive without a rule is worded otherwise)
        with pytest.raises(error):
            jax_text(f, x, platform=platform)


def test_left_eigenvectors_from_cusolver_are_refused(cusolver_geev):
    f = lambda a: jl.eig(a, implementation=jl.EigImplementation.CUSOLVER)  # noqa: E731
    with pytest.raises(NotImplementedError, match="Left eigenvectors"):
        our_module(f, rand((3, 3)))
    with pytest.raises(NotImplementedError, match="Left eigenvectors"):
        jax_text(f, rand((3, 3)))


# -- on a GPU: the decompositions' mathematics ------------------------------------------------

TOL = {np.dtype(f32): 2e-4, np.dtype(c64): 2e-4, np.dtype(f64): 1e-10, np.dtype(c128): 1e-10}


def run_on_gpu(f, *args):
    return verify.run(our_module(f, *args), *args, platform="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [f32, c64, f64])
def test_gpu_cholesky_qr_lu_reconstruct(dtype):
    tol = TOL[np.dtype(dtype)] * 10
    a = rand((2, 4, 4), dtype)
    spd = a @ H(a) + 4 * np.eye(4, dtype=dtype)
    (low,) = run_on_gpu(jnp.linalg.cholesky, spd)
    np.testing.assert_allclose(low @ H(low), spd, atol=tol)
    x = rand((2, 5, 3), dtype)
    q, r = run_on_gpu(jnp.linalg.qr, x)
    np.testing.assert_allclose(q @ r, x, atol=tol)
    np.testing.assert_allclose(H(q) @ q, np.broadcast_to(np.eye(3), (2, 3, 3)), atol=tol)
    lu, piv, perm = run_on_gpu(jl.lu, x)
    lower_ = np.tril(lu[..., :, :3], -1) + np.eye(5, 3)
    upper = np.triu(lu[..., :3, :])
    np.testing.assert_allclose(lower_ @ upper, np.take_along_axis(x, perm[..., None], -2),
                               atol=tol)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [f32, c64])
@pytest.mark.parametrize("shape,full", [((5, 3), True), ((3, 5), False), ((40, 34), False)])
def test_gpu_svd_and_eigh_reconstruct(dtype, shape, full):
    tol = TOL[np.dtype(dtype)] * max(shape)
    x = rand(shape, dtype)
    u, s, vh = run_on_gpu(lambda a: jnp.linalg.svd(a, full_matrices=full), x)
    k = min(shape)
    np.testing.assert_allclose((u[:, :k] * s) @ vh[:k], x, atol=tol)
    np.testing.assert_allclose(s, np.linalg.svd(x, compute_uv=False), atol=tol)
    herm = x @ H(x)
    w, v = run_on_gpu(jnp.linalg.eigh, herm)
    np.testing.assert_allclose(herm @ v, v * w, atol=tol * 10)


@pytest.mark.gpu
def test_gpu_tridiagonal_solve_and_eig():
    dl, d, du, b = tridiagonal_system(batch=(2,), m=5, k=2)
    (x,) = run_on_gpu(jl.tridiagonal_solve, dl, d, du, b)
    a = np.zeros((2, 5, 5), f32)
    for i in range(5):
        a[:, i, i] = d[:, i]
        if i:
            a[:, i, i - 1] = dl[:, i]
        if i < 4:
            a[:, i, i + 1] = du[:, i]
    np.testing.assert_allclose(a @ x, b, atol=1e-4)
    m = rand((4, 4))
    w, vl, vr = run_on_gpu(jl.eig, m)
    np.testing.assert_allclose(m @ vr, vr * w, atol=1e-4)
