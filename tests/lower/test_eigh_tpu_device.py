"""eigh and svd above 256 columns as ``lower`` lowers them for TPU (jax's QDWH spectral
divide and conquer: lower/rules/eigh_tpu.py) run on an attached TPU, against the mathematics,
numpy and jax.jit on the same chip; whether each result is jax.jit's bit for bit is said in
the failure message only where the values differ beyond 1e-5 relative.

Skipped where no TPU is attached (CI). Each case compiles for about 20-45 s on a v5e (jax.jit
takes as long). Run on a TPU VM in one process: ``python -m pytest -q
tests/lower/test_eigh_tpu_device.py``. The complex64 case compiled for more than 450 s before
5d76559 (our rules' ops carried the user's frame: thousands of XLA stack frames that
XLA:TPU's loop passes walk); since, it passes in ~60 s, jax.jit's compile included (a v5e,
jax 0.10.2, 2026-12-06, with the other seven).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.lower.test_decompositions_tpu_device import (Fail, bound, err, herm, jl, need,
                                                        ours, run_case, svd_case, theirs,
                                                        unitary_err)

pytestmark = pytest.mark.tpu_device


def wide(dtype):
    return np.complex128 if np.dtype(dtype).kind == "c" else np.float64


def against_jax(f, args, mine, values_at):
    """The values (result ``values_at``) within 1e-5 relative of jax.jit's on the same device,
    and whether every result is jax's bit for bit."""
    t = theirs(f, *args)
    if len(t) != len(mine) or any(a.shape != b.shape for a, b in zip(mine, t)):
        raise Fail(f"result shapes {[a.shape for a in mine]} != jax.jit's "
                   f"{[b.shape for b in t]}")
    w = mine[values_at]
    out = need("|values - jax.jit|", err(w, t[values_at]),
               1e-5 * max(1.0, float(np.abs(w).max())))
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(mine, t))
    return out + (", bit for bit jax.jit's" if same else
                  ", vectors differ from jax.jit's (max "
                  f"{max(err(a, b) for a, b in zip(mine, t)):.2g})")


# -- cases: each returns a short description of what it measured -----------------------------

def eigh_case(shape, dtype=np.float32, lower=True, subset=None, sort=True, jax_off=False):
    """``jax_off``: a subset that leaves a block out, where jax 0.10.2's eigh gives wrong
    eigenvalues (stale workspace entries sort into the subset) and ours does not: jax.jit's
    error against numpy is reported rather than compared with."""
    def run():
        a = herm(shape, dtype)
        n = shape[-1]

        def f(x):
            return jl.eigh(x, lower=lower, subset_by_index=subset, sort_eigenvalues=sort)
        v, w = ours(f, a)
        want = np.linalg.eigvalsh(a.astype(wide(dtype)))
        if subset is not None:
            want = want[..., subset[0]:subset[1]]
        lim = bound(a, n)
        got = w if sort or subset is not None else np.sort(w, axis=-1)
        if (sort or subset is not None) and not np.all(np.diff(w, axis=-1) >= 0):
            raise Fail("eigenvalues not ascending")
        out = [need("|w - numpy|", err(got, want), lim),
               need("|A V - V w|", err(a @ v, v * w[..., None, :]), lim),
               need("|V^H V - I|", unitary_err(v), lim)]
        if jax_off:
            w_jax = theirs(f, a)[1]
            out.append(f"(jax.jit's |w - numpy| {err(w_jax, want):.2g})")
        else:
            out.append(against_jax(f, (a,), [v, w], 1))
        return ", ".join(out)
    return run


CASES = {
    "eigh 300x300": eigh_case((300, 300)),
    "eigh 512x512": eigh_case((512, 512)),
    "eigh 300x300 complex64": eigh_case((300, 300), np.complex64),
    "eigh 2x270x270 upper subset (100,140)": eigh_case((2, 270, 270), lower=False,
                                                        subset=(100, 140)),
    "eigh 300x300 unsorted": eigh_case((300, 300), sort=False),
    "eigh 300x300 subset (100,125), a block left out": eigh_case((300, 300), subset=(100, 125),
                                                                 jax_off=True),
    "svd 300x300": svd_case((300, 300)),
    "svd 520x300 thin": svd_case((520, 300), full_matrices=False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_divide_and_conquer_on_the_chip(name):
    run_case(CASES, name)
