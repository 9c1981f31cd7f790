"""Test-only oracle: the MLIR Python bindings inside jaxlib.

``mlir_generic(text)`` parses and verifies ``text`` with MLIR and returns MLIR's own generic
print of it. Our printer promises that its output (without locations) is a fixed point of this,
up to the case of hex digits in large constants.
"""

from __future__ import annotations

import re


def _context():
    """``(ir, ctx)``: verify's context of the bindings (MLIR may be used in tests)."""
    from verify.bindings import context
    return context()


def readable(text: str) -> bool:
    """Whether jaxlib's MLIR can read ``text`` at all: its bindings do not register the quant
    dialect, so no ``!quant.uniform`` type parses (the quantized ops' cases are judged by
    running them through mhlo_ir.quant_lowering, and their text against StableHLO's corpus,
    which MLIR printed: tests/mhlo_ir/test_quant*.py)."""
    return (b"!quant." if isinstance(text, (bytes, bytearray)) else "!quant.") not in text


def skip_unless_readable(text: str) -> None:
    if not readable(text):
        import pytest
        pytest.skip("jaxlib's MLIR cannot read !quant types (no quant dialect registered)")


def parse(text: str):
    """Parse + verify with MLIR; returns the ir.Module (raises ir.MLIRError). Skips the test
    for text MLIR here cannot read (``readable``)."""
    skip_unless_readable(text)
    ir, ctx = _context()
    with ctx, ir.Location.unknown():
        return ir.Module.parse(text)


def mlir_generic(text: str) -> str:
    """MLIR's generic print of ``text`` (parsed and verified); skips like ``parse``."""
    skip_unless_readable(text)
    ir, ctx = _context()
    with ctx, ir.Location.unknown():
        return ir.Module.parse(text).operation.get_asm(print_generic_op_form=True)


_HEX = re.compile(r'"0x[0-9a-fA-F]+"')


def normalize_hex(text: str) -> str:
    """Upper-case the hex payloads of dense constants (we print lowercase, MLIR uppercase)."""
    return _HEX.sub(lambda m: '"0x' + m.group(0)[3:-1].upper() + '"', text)


def assert_fixed_point(module_or_text) -> str:
    """Our text (no locations) equals MLIR's generic re-print of it, byte for byte."""
    ours = module_or_text if isinstance(module_or_text, str) else module_or_text.to_text(
        locations=False)
    theirs = mlir_generic(ours)
    if normalize_hex(ours) != theirs:
        import difflib
        diff = "\n".join(difflib.unified_diff(ours.splitlines(), theirs.splitlines(),
                                              "ours", "mlir", lineterm=""))
        raise AssertionError(f"our generic print differs from MLIR's:\n{diff}")
    return ours
