"""verify: hand MHLO modules to jaxlib to parse, verify, compile and run (no ``import jax``).

    import verify
    verify.check(module)                    # parse + verify, readable VerificationError
    exe = verify.compile(module, "cpu")     # or "cuda"
    outs = verify.run(module, x, y)         # numpy in, list of numpy out
"""

from .api import Executable, check, compile, run, to_text
from .errors import ArgumentError, CompileError, VerificationError
from ._jaxlib import has_platform

__all__ = ["check", "compile", "run", "Executable", "VerificationError", "CompileError",
           "ArgumentError", "has_platform", "to_text"]
