"""The environment for a test's child Python: this checkout first on PYTHONPATH, then what
the environment already had there (where a machine may keep jax, numpy and ml_dtypes: a
Cloud TPU VM's system-wide install), so the child imports this checkout and finds its
dependencies as the test process does."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_env(*first: str, **extra: str) -> dict:
    """``os.environ`` with ``first`` paths and ROOT in front of PYTHONPATH, plus ``extra``."""
    paths = [*first, str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), **extra}
