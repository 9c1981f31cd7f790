"""The JAX differential suite: every program of ``programs`` and ``programs_models`` through
lower.jax.jit against jax.jit on the same inputs (exact for integers and data movement, the
program's stated tolerance for float math), on CPU, and on CUDA where a GPU is present."""

from __future__ import annotations

import contextlib

import jax
import numpy as np
import pytest

import lower.jax as lj

from . import programs_models  # noqa: F401  (registers its programs)
from .programs import PROGRAMS

PLATFORMS = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _compare(name, prog, got, want):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree, name
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        if jax.dtypes.issubdtype(getattr(w, "dtype", None), jax.dtypes.prng_key):
            g, w = jax.random.key_data(g), jax.random.key_data(w)
        g, w = np.asarray(g), np.asarray(w)
        where = f"{name}: output {i}"
        assert g.shape == w.shape and g.dtype == w.dtype, (where, g.shape, g.dtype, w.shape,
                                                          w.dtype)
        if prog.exact or g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=where)
        else:
            np.testing.assert_allclose(g, w, rtol=prog.rtol, atol=prog.atol, err_msg=where)


def test_the_suite_is_big_enough():
    assert len(PROGRAMS) >= 60, len(PROGRAMS)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_jax_jit(name, platform):
    prog = PROGRAMS[name]
    x64 = jax.enable_x64(True) if prog.x64 else contextlib.nullcontext()
    with x64:
        args = prog.args(np.random.default_rng(sum(map(ord, name))))
        theirs_log: list = []
        ours_log: list = []
        fn = prog.fn
        if prog.callbacks:
            def make(log):
                return lambda *a: prog.fn(*a, log)
            theirs_fn, ours_fn = make(theirs_log), make(ours_log)
        else:
            theirs_fn = ours_fn = fn
        device = jax.devices(platform)[0] if platform != "cpu" else jax.devices("cpu")[0]
        with jax.default_device(device):
            want = jax.jit(theirs_fn, **prog.jit)(*args)
            jax.effects_barrier()
        got = lj.jit(ours_fn, platform=platform, **prog.jit, **prog.ours)(*args)
        _compare(name, prog, got, want)
        assert ours_log == theirs_log
