"""Shared by the lowering tests: trace, lower, check the text against MLIR, run, compare."""

from __future__ import annotations

import numpy as np

import verify
from lower import lax, lower_jaxpr_to_module
from tests.oracle import assert_fixed_point


def run(f, *args, platform="cpu"):
    """Trace ``f`` on ``args``, lower for ``platform``, check the text, run it on CPU."""
    closed = lax.make_jaxpr(f)(*args)
    m = lower_jaxpr_to_module("jit_f", closed, platform=platform).module
    assert_fixed_point(m)
    return verify.run(m, *args)


def check(outs, refs):
    """Exact comparison, shapes and dtypes included."""
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        r = np.asarray(r)
        assert o.shape == r.shape and o.dtype == r.dtype, (i, o.shape, o.dtype, r.shape, r.dtype)
        np.testing.assert_array_equal(o, r, err_msg=f"output {i}")
