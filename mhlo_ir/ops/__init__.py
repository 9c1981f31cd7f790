"""The op table: one OpSpec per op, declared by chapter. Importing this fills ``REGISTRY``."""

from . import control_flow, data_movement, elementwise, linalg, misc  # noqa: F401  (fill table)
from .spec import REGISTRY, AttrSpec, OpSpec, lookup

__all__ = ["REGISTRY", "OpSpec", "AttrSpec", "lookup"]
