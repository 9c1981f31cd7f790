"""Lowering rules by family; every module here is imported (adding a family is adding a
file), which registers its rules."""

import importlib as _importlib
import pkgutil as _pkgutil

for _m in sorted(m.name for m in _pkgutil.iter_modules(__path__)):
    _importlib.import_module(f"{__name__}.{_m}")
