"""Our side: a corpus module through mhlo_ir's parser and printer, then verify's API.

parse (``mhlo_ir.parse``; with ``generic_input``, of MLIR's generic print of the module) →
``program.transform`` → ``Module.verify`` and ``to_text(dialect=...)`` → ``verify.compile``
(which lowers quantized programs first: ``verify.api.dequantized``) → run with the
``@inputs`` values → judge. Each step's failure has its own status.
"""

from __future__ import annotations

from mhlo_ir.dialect import MHLO, STABLEHLO
from mhlo_ir.errors import IRError
from mhlo_ir.parser import parse
from mhlo_ir.syntax import ParseError

from .. import api
from ..errors import ArgumentError, CompileError, VerificationError
from . import program
from .outcome import ModuleOutcome, Unsupported, judge_outputs

__all__ = ["run_module", "DIALECTS"]

DIALECTS = {"mhlo": MHLO, "stablehlo": STABLEHLO}


def _line(e, limit: int = 400) -> str:
    """An error as one line: its first meaningful line, shortened."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and
             not ln.startswith("Failed to parse using StableHLO")]
    text = lines[0] if lines else type(e).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _unsupported_parse(text: str, e: ParseError) -> str | None:
    """Why a module our parser refuses is out of the run's reach today, or None when the
    refusal is a parser gap to count as parse_error."""
    if "dynamic dimensions" in e.message:
        return f"dynamic shapes: mhlo_ir's tensor types are static ({_line(e.message, 200)})"
    return None


def run_module(text: str, source: str, dialect: str = "mhlo",
               generic_input: bool = False, cache=None) -> ModuleOutcome:
    """One module of a corpus file through our round trip (see the module docstring). The
    executable is put in ``cache`` (a ``task.ExecutableCache``) for the reference."""
    if generic_input:
        from . import mlir
        ir, _ = mlir.context()
        try:
            text = mlir.to_generic(text)
        except ir.MLIRError as e:
            if "!quant." in text:
                return ModuleOutcome("unsupported", "quantized element types (!quant.uniform): "
                                     "jaxlib's MLIR cannot read them, so --generic-input has "
                                     "no generic print to give our parser")
            return ModuleOutcome("parse_error", "(generic input) MLIR cannot read the module: "
                                 + _line(mlir.error_text(e)))
        source = f"{source} (MLIR's generic print)"
    try:
        module = parse(text, source=source)
    except ParseError as e:
        why = _unsupported_parse(text, e)
        if why is not None:
            return ModuleOutcome("unsupported", why)
        return ModuleOutcome("parse_error", _line(e))
    except IRError as e:  # Module.verify on what was read
        return ModuleOutcome("parse_error", f"Module.verify: {_line(e)}")
    try:
        t = program.transform(module)
    except Unsupported as e:
        return ModuleOutcome("unsupported", str(e))
    try:
        module.verify()
        printed = module.to_text(dialect=DIALECTS[dialect])
    except Exception as e:  # noqa: BLE001 - the verifier and the printer, as they fail
        return ModuleOutcome("print_error", f"{type(e).__name__}: {_line(e)}")
    try:
        # MHLO: the Module itself, as programs hand it to verify (which prints the same text
        # and, the module being verified already, need not read it back to look for what
        # crashes jaxlib); StableHLO: our text, which verify reads like any text.
        exe = api.compile(module if dialect == "mhlo" else printed, filename=source)
    except (VerificationError, CompileError) as e:
        return ModuleOutcome("compile_error", _line(e))
    if cache is not None:
        cache.by_hlo[exe.input_hlo(canonical=True)] = exe
    try:
        outs = exe(*t.arguments)
    except ArgumentError as e:
        return ModuleOutcome("exec_error", f"arguments: {_line(e)}")
    except Exception as e:  # noqa: BLE001 - jaxlib's runtime errors
        return ModuleOutcome("exec_error", _line(e))
    return judge_outputs(outs, t.checks)
