"""StableHLO's own quantization lowering, the one inside jaxlib, beside mhlo_ir's.

jaxlib's Python MLIR bindings cannot parse ``!quant.uniform`` types (they register no quant
dialect), but its portable-artifact serializer, in C++, can: it parses and verifies quantized
StableHLO (or MHLO) text with StableHLO's own verifier, and the artifact deserializes into the
bindings' context with its quantized types. There StableHLO's passes run as they run in its
reference interpreter (``stablehlo-legalize-quant-to-math``), and the result is text XLA
compiles. This is the reference mhlo_ir's lowering (``mhlo_ir.quant_lowering``, what
``verify`` uses) is tested against, and what the conformance run's reference side runs.
"""

from __future__ import annotations

from . import _jaxlib, bindings
from .errors import VerificationError
from .portable import _check_target

__all__ = ["read_quantized", "stablehlo_lowering", "stablehlo_accepts", "mlir_print",
           "QUANT_PIPELINE"]

# What StableHLO's reference interpreter runs before it interprets a quantized program
# (stablehlo/reference/Api.cpp, createStablehloLowerQuantPipeline's first pass): quantized
# ops become integer and float math on their storage, written with chlo's broadcasting ops.
QUANT_PIPELINE = "builtin.module(func.func(stablehlo-legalize-quant-to-math))"
# Its second: those chlo ops as StableHLO, for the interpreter, which has no chlo ops (XLA
# legalizes them itself, and this pass cannot: the broadcasts of per-axis scales along a
# leading dimension, docs/findings.md 21).
CHLO_PIPELINE = "builtin.module(func.func(chlo-legalize-to-stablehlo))"


def _artifact(text: str) -> bytes:
    _, X = _jaxlib.xla()
    return _jaxlib.on_big_stack(X.mlir.serialize_portable_artifact, text, _check_target(None))


def stablehlo_accepts(text: str) -> str | None:
    """None when StableHLO's parser and verifier (in jaxlib's C++) accept ``text``, else their
    error: the oracle for quantized programs that jaxlib's Python MLIR cannot read."""
    try:
        _artifact(text)
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
        return str(e)
    return None


def read_quantized(text: str, ctx):
    """``text`` (quantized StableHLO or MHLO) as a module of the bindings' context ``ctx``
    (which must be current), through a portable artifact. Raises VerificationError with
    StableHLO's diagnostic when it refuses the text."""
    try:
        data = _artifact(text)
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
        raise VerificationError(str(e), text) from None
    _, X = _jaxlib.xla()
    return X.mlir.deserialize_portable_artifact(data, ctx)


def lower_in_place(module, chlo: bool = False) -> None:
    """Run StableHLO's quantization lowering on a bindings module (its context current);
    with ``chlo``, then the legalization of the chlo ops it writes (for the interpreter)."""
    bindings_passes = _jaxlib.require("jaxlib.mlir.dialects.stablehlo")
    bindings_passes.register_stablehlo_passes()
    passmanager = _jaxlib.require("jaxlib.mlir.passmanager")
    passmanager.PassManager.parse(QUANT_PIPELINE).run(module.operation)
    if chlo:
        passmanager.PassManager.parse(CHLO_PIPELINE).run(module.operation)


def stablehlo_lowering(text: str) -> str:
    """``text`` with its quantized types lowered by StableHLO's own pass inside jaxlib, as MLIR
    prints it (``verify.run`` takes it). VerificationError when StableHLO refuses the text;
    the pass's own error when it cannot lower an op."""
    ir, ctx = bindings.context()
    with ctx, ir.Location.unknown():
        module = read_quantized(text, ctx)
        lower_in_place(module)
        return module.operation.get_asm()


def mlir_print(text: str) -> str:
    """MLIR's own print of quantized ``text`` (read through a portable artifact): the oracle
    for how mhlo_ir prints quantized types."""
    ir, ctx = bindings.context()
    with ctx, ir.Location.unknown():
        return str(read_quantized(text, ctx))
