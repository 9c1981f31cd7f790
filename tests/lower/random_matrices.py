"""Random test matrices for the decomposition tests (CPU, TPU, GPU, on-chip), seeded."""

from __future__ import annotations

import numpy as np


def rand(shape, dtype=np.float32, seed=0):
    """Entries ~N(0, 1) of ``dtype``; complex types get an independent imaginary part."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def H(x):
    """The conjugate transpose of (a batch of) matrices."""
    return np.conj(np.swapaxes(x, -1, -2))
