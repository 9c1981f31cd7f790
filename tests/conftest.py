"""Shared fixtures: one jaxlib CPU client per session, hypothesis profiles, the GPU and TPU
markers."""

from __future__ import annotations

import os

# libtpu takes a machine-wide lock (/tmp/libtpu_lockfile) in the first process that loads it,
# jax's backend start-up included. The suite runs in several worker processes (pytest -n 2)
# that each compile for TPU topologies without chips, so let them all load it (verify.tpu
# sets the same, but only when it is imported before jax starts).
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# Compiling takes tens of milliseconds: no deadlines; CI runs fewer examples than "thorough".
# CI is derandomized (the same examples every run, so a landing never fails on a new random
# draw); "thorough" explores with fresh randomness: run it locally to look for new bugs.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def cpu_client():
    from verify import _jaxlib
    return _jaxlib.client("cpu")


def pytest_collection_modifyitems(config, items):
    import importlib.util
    if any(item.get_closest_marker("tpu") for item in items) and \
            importlib.util.find_spec("libtpu") is None:
        skip_tpu = pytest.mark.skip(reason="libtpu is not installed (pip install "
                                           "'mhlo-ir[tpu]')")
        for item in items:
            if item.get_closest_marker("tpu"):
                item.add_marker(skip_tpu)
    if any(item.get_closest_marker("tpu_device") for item in items):
        from verify._jaxlib import tpu_attached
        if not tpu_attached():  # looked up in /dev: libtpu is not started for the answer
            skip_device = pytest.mark.skip(reason="no TPU is attached to this machine")
            for item in items:
                if item.get_closest_marker("tpu_device"):
                    item.add_marker(skip_device)
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    from verify import has_platform
    if has_platform("cuda"):
        return
    skip = pytest.mark.skip(reason="no CUDA device visible to jaxlib")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


def pytest_addoption(parser):
    parser.addoption("--op-platform", default="cpu",
                     help="platform the per-op cases in tests/mhlo_ir/ops run on (cpu, cuda)")
    parser.addoption("--record-op-results", default=None, metavar="PATH",
                     help="write {op: pass|fail} of the per-op cases to PATH (JSON), e.g. "
                          "docs/gpu_results.json after a run with --op-platform=cuda")
    parser.addoption("--record-tpu-results", default=None, metavar="PATH",
                     help="write {case: compiles|reason} of compiling every op case for TPU "
                          "to PATH (docs/tpu_results.json) instead of comparing with it")


OP_RESULTS: dict = {}


@pytest.fixture(scope="session")
def op_platform(request):
    return request.config.getoption("--op-platform")


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--record-op-results")
    if path and OP_RESULTS:
        import json
        with open(path, "w") as f:
            json.dump(dict(sorted(OP_RESULTS.items())), f, indent=1)
            f.write("\n")
