"""Lowering rules by family; importing this registers them all."""

from . import elementwise, linalg, reductions, shape  # noqa: F401
