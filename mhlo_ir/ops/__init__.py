"""The op table: one OpSpec per op, declared by chapter. Importing this fills ``REGISTRY``.

Every module of this package other than ``spec`` is imported here, in name order, so adding a
chapter is adding a file. The chapters (elementwise, chlo, data movement, indexing, linalg,
convolution, windows, control flow, collectives, custom calls, tuples and tokens, ...)
register specs and their typed front doors; ``args``, ``convert`` and ``construct`` hold what
the chapters share and register nothing.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from .spec import BUILDER_METHODS, REGISTRY, AttrSpec, OpSpec, builder_method, lookup

for _m in sorted(m.name for m in _pkgutil.iter_modules(__path__)):
    if _m != "spec":
        _importlib.import_module(f"{__name__}.{_m}")

__all__ = ["REGISTRY", "OpSpec", "AttrSpec", "lookup", "builder_method", "BUILDER_METHODS"]
