"""verify: hand MHLO modules to jaxlib to parse, verify, compile and run (no ``import jax``).

    import verify
    verify.check(module)                    # parse + verify, readable VerificationError
    exe = verify.compile(module, "cpu")     # or "cuda"
    tpu = verify.compile(module, "tpu", topology="v5e:2x2")   # compile-only, no TPU needed
    tpu.cost_analysis()["flops"], tpu.memory_stats(), tpu.optimized_hlo()
    outs = verify.run(module, x, y, 2.0)    # numpy (or Python scalars) in, list of numpy out
    data = verify.serialize_portable(module, target="1.0.0")   # StableHLO portable artifact
    ref = verify.interpret(module, x, y)    # StableHLO's reference interpreter, for comparing

``import verify`` needs no jaxlib; whatever does raises ``JaxlibMissing`` (an ImportError whose
one-line message says ``pip install 'mhlo-ir[verify]'``).
"""

from .api import Executable, check, compile, run, source_name, to_text
from .compiled import Compiled
from .errors import (ArgumentError, CallbackError, CompileError, Diagnostic, JaxlibMissing,
                     PlatformUnavailable, VerificationError)
from ._jaxlib import available_platforms, has_platform
from .interpreter import InterpreterUnsupported, interpret
from .portable import deserialize_portable, portable_targets, serialize_portable

__all__ = ["check", "compile", "run", "Executable", "Compiled", "VerificationError",
           "CompileError", "ArgumentError", "CallbackError", "JaxlibMissing",
           "PlatformUnavailable", "Diagnostic",
           "has_platform", "available_platforms", "to_text", "source_name",
           "serialize_portable", "deserialize_portable", "portable_targets", "interpret",
           "InterpreterUnsupported", "__version__"]


def __getattr__(name: str) -> str:
    # The version is mhlo_ir's (one distribution ships both packages); looked up on demand so
    # that ``import verify`` does not import the IR.
    if name == "__version__":
        from mhlo_ir import __version__
        return __version__
    raise AttributeError(f"module 'verify' has no attribute {name!r}")
