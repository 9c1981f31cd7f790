"""The MLIR Python bindings inside jaxlib, for the reference side and ``--generic-input``.

Nothing here uses mhlo_ir: the reference is jaxlib alone. One context per process (a worker
makes it once), with jaxlib's dialects, mhlo, stablehlo and chlo registered as tests/oracle.py
registers them, StableHLO's passes (for the quantization lowering) and unregistered dialects
allowed (the corpus' ``"check.expect_eq_const"`` ops belong to a dialect jaxlib does not have).
"""

from __future__ import annotations

import functools

from .. import bindings
from .._jaxlib import require

__all__ = ["context", "to_generic"]


@functools.lru_cache(maxsize=None)
def context():
    """``(ir, ctx)``: the bindings' context with unknown dialects allowed (the corpus' check
    ops) and StableHLO's passes registered (the quantization lowering)."""
    ir, ctx = bindings.context(unregistered=True)
    require("jaxlib.mlir.dialects.stablehlo").register_stablehlo_passes()
    return ir, ctx


def error_text(e: Exception) -> str:
    """An MLIRError's diagnostics on one line each (its str() says only 'Unable to parse')."""
    diags = getattr(e, "error_diagnostics", None)
    if not diags:
        return str(e)
    lines = []
    for d in diags:
        lines.append(f"{d.location}: {d.message}")
        lines.extend(f"  {n.location}: {n.message}" for n in d.notes)
    return "\n".join(lines)


def to_generic(text: str) -> str:
    """MLIR's generic print of ``text`` (parsed and verified by MLIR): the development aid
    behind ``--generic-input``, which lets mhlo_ir's parser, while it reads few custom forms,
    be tried on the corpus through the form it reads for every op."""
    ir, ctx = context()
    with ctx, ir.Location.unknown():
        return ir.Module.parse(text).operation.get_asm(print_generic_op_form=True)
