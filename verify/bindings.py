"""One MLIR context of jaxlib's bindings with the HLO dialects (mhlo, stablehlo, chlo, Shardy's
sdy, and the ones jaxlib's extension registers), for verify/'s parts that need parsed modules:
portable artifacts, the conformance reference, and the tests' oracle. The bindings stay inside
verify/.
"""

from __future__ import annotations

import functools

from ._jaxlib import require
from .errors import JaxlibMissing

__all__ = ["context"]


@functools.lru_cache(maxsize=None)
def context(unregistered: bool = False):
    """``(ir, ctx)``: the bindings' ``ir`` module and a context of this process, one per
    ``unregistered`` (whether ops of unknown dialects, such as StableHLO's ``check``, parse)."""
    ir = require("jaxlib.mlir.ir")
    ext = require("jaxlib.mlir._mlir_libs._jax_mlir_ext")
    mhlo = require("jaxlib.mlir.dialects.mhlo")
    stablehlo = require("jaxlib.mlir.dialects.stablehlo")
    chlo = require("jaxlib.mlir.dialects.chlo")
    ctx = ir.Context()
    reg = ir.DialectRegistry()
    ext.register_dialects(reg)
    ctx.append_dialect_registry(reg)
    ctx.load_all_available_dialects()
    mhlo.register_mhlo_dialect(ctx)
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    try:  # Shardy's, which jax's own text uses for shardings (where this jaxlib has it)
        sdy = require("jaxlib.mlir.dialects.sdy")
    except (ImportError, JaxlibMissing):  # (a jaxlib without Shardy: its text has none)
        sdy = None
    if sdy is not None:
        sdy.register_dialect(ctx)
    ctx.allow_unregistered_dialects = unregistered
    return ir, ctx
