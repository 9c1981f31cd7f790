"""StableHLO portable artifacts: programs serialized for a StableHLO version, readable by any
jaxlib/XLA that supports that version (StableHLO's compatibility promise), through jaxlib's own
``serialize_portable_artifact`` and ``deserialize_portable_artifact``.

    data = verify.serialize_portable(module, target="1.0.0")   # bytes
    text = verify.deserialize_portable(data)                   # StableHLO text
    verify.run(text, x)                                         # jaxlib runs either

jaxlib's MLIR bindings are used here (allowed in verify/ only), imported on first use.
"""

from __future__ import annotations

import re

from . import _jaxlib, bindings
from .api import source_name, to_text
from .errors import VerificationError

__all__ = ["serialize_portable", "deserialize_portable", "portable_targets"]

# (fullmatch: "$" takes a last "\n"; ASCII: "\d" takes any script's digits, "１.０.０")
_VERSION = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)")


def portable_targets() -> tuple:
    """``(oldest, newest)`` StableHLO versions this jaxlib writes artifacts for, as strings
    (``("0.9.0", "1.17.0")`` with jaxlib 0.10.2)."""
    stablehlo = _jaxlib.require("jaxlib.mlir.dialects.stablehlo")
    return stablehlo.get_minimum_version(), stablehlo.get_current_version()


def _key(version: str) -> tuple:
    return tuple(int(x) for x in _VERSION.fullmatch(version).groups())


def _check_target(target) -> str:
    oldest, newest = portable_targets()
    if target is None:
        return newest
    if not isinstance(target, str) or not _VERSION.fullmatch(target):
        raise ValueError(f"target {target!r} is not a StableHLO version: expected "
                         f"'MAJOR.MINOR.PATCH' from {oldest} to {newest}")
    # jaxlib itself refuses versions below its minimum but silently accepts ones above its
    # own (1.18.0, 2.0.0): an artifact claiming a version this jaxlib cannot know of.
    if not _key(oldest) <= _key(target) <= _key(newest):
        raise ValueError(f"target {target} is outside the StableHLO versions this jaxlib "
                         f"writes: {oldest} (the oldest) to {newest} (its own)")
    return target


def serialize_portable(module_or_text, target: str | None = None, *,
                       filename: str | None = None) -> bytes:
    """The portable artifact (StableHLO bytecode for version ``target``, ``"1.x.y"``; default:
    this jaxlib's own version) of an mhlo_ir Module or of MLIR text (MHLO or StableHLO).

    A Module is verified in Python and printed as StableHLO by mhlo_ir itself, not printed as
    MHLO and converted by jaxlib: the two texts are the same program for every op with a
    StableHLO form (tests/mhlo_ir/ops/test_stablehlo_conversion.py), and for the few without
    one jaxlib's conversion would write ``custom_call @mhlo.<op>``, an XLA-internal encoding
    outside StableHLO's compatibility promise, into an artifact meant to outlive this XLA;
    mhlo_ir raises OpBuildError naming the op and what to use instead (its chlo twin, say).
    Text is handed to jaxlib as is. ValueError for a target outside ``portable_targets()``;
    VerificationError when jaxlib rejects the program or cannot write it for ``target``.
    """
    target = _check_target(target)
    if isinstance(module_or_text, (str, bytes)):
        text = to_text(module_or_text)
    else:
        from mhlo_ir.dialect import STABLEHLO
        from mhlo_ir.ir import Module, walk
        from mhlo_ir.jaxlib_conversion import stablehlo_import_problem
        if not isinstance(module_or_text, Module):
            raise TypeError(f"expected an mhlo_ir Module or its text, got "
                            f"{type(module_or_text).__name__}")
        module_or_text.verify()
        for fn, op in walk(module_or_text):
            if (why := stablehlo_import_problem(op) or _writer_problem(op)) is not None:
                raise VerificationError(f"@{fn.name}: '{op.spec.name}' cannot go into a "
                                        f"portable artifact: {why}",
                                        from_jaxlib=False)
        text = module_or_text.to_text(dialect=STABLEHLO)
    _, X = _jaxlib.xla()
    try:
        return _jaxlib.on_big_stack(X.mlir.serialize_portable_artifact, text, target)
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
        raise VerificationError(str(e), text,
                                filename=source_name(module_or_text, filename)) from None


def _writer_problem(op) -> str | None:
    """Why jaxlib's artifact writer fails on ``op`` (which jaxlib compiles as text), or None:
    ``chlo.broadcast_select``, which the writer's legalization of chlo cannot lower at any
    target ("failed to legalize operation 'shape.const_witness' that was explicitly marked
    illegal", whatever the shapes; measured on 0.10.2)."""
    if op.spec.name == "chlo.broadcast_select":
        return ("jaxlib's artifact writer cannot legalize chlo.broadcast_select (it fails on "
                "'shape.const_witness' at every target): broadcast the operands to one shape "
                "(broadcast_in_dim) and use select")
    return None


# What every MLIR bytecode file starts with ("ML\xefR").
_MAGIC = b"ML\xefR"


def _context():
    return bindings.context()


def deserialize_portable(data: bytes, *, isolated: bool = False,
                         timeout: float | None = 60) -> str:
    """The StableHLO text of a portable artifact (of any version this jaxlib reads), as MLIR
    prints it; ``verify.run``/``compile`` and ``mhlo_ir.parse`` take it. ValueError when
    ``data`` is not an artifact jaxlib can read.

    jaxlib's bytecode reader trusts what it reads: truncated or foreign bytes are refused,
    but a corrupted byte inside a well-formed artifact can crash the process (a segfault)
    or never return (both measured with jaxlib 0.10.2). For bytes from elsewhere,
    ``isolated=True`` reads them in a child process (about a second, jaxlib's import), where
    a crash, or a read still going after ``timeout`` seconds, is a ValueError."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected the artifact's bytes, got {type(data).__name__}")
    if bytes(data[:4]) != _MAGIC:  # (jaxlib reads b"" as an empty module)
        raise ValueError("not a StableHLO portable artifact: MLIR bytecode starts with "
                         f"{_MAGIC!r}, these bytes with {bytes(data[:4])!r}")
    if isolated:
        return _deserialize_in_child(bytes(data), timeout)
    ir, ctx = _context()
    _, X = _jaxlib.xla()
    try:
        with ctx, ir.Location.unknown():
            module = X.mlir.deserialize_portable_artifact(bytes(data), ctx)
            return str(module)
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own error types
        why = str(e).strip().strip("'\"").splitlines()
        raise ValueError("not a StableHLO portable artifact jaxlib can read: "
                         f"{why[0] if why else type(e).__name__}") from None


# The child of an isolated read: the artifact on stdin, its text on stdout, a ValueError's
# message on stderr with exit status 2.
_CHILD = """
import sys
import verify.portable as p
try:
    text = p.deserialize_portable(sys.stdin.buffer.read())
except ValueError as e:
    sys.stderr.write(str(e))
    sys.exit(2)
sys.stdout.write(text)
"""


def _deserialize_in_child(data: bytes, timeout) -> str:
    import os
    import subprocess
    import sys
    # (the child imports this verify, wherever it was imported from here)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join([root] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = dict(os.environ, PYTHONPATH=path, TF_CPP_MIN_LOG_LEVEL="3")
    try:
        r = subprocess.run([sys.executable, "-c", _CHILD], input=data, capture_output=True,
                           env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ValueError("not a StableHLO portable artifact jaxlib can read: its reader was "
                         f"still going after {timeout} s (read in a child process, "
                         "isolated=True, and stopped)") from None
    if r.returncode == 0:
        return r.stdout.decode()
    if r.returncode == 2:
        raise ValueError(r.stderr.decode().strip().splitlines()[-1])
    how = f"signal {-r.returncode}" if r.returncode < 0 else f"exit status {r.returncode}"
    raise ValueError("not a StableHLO portable artifact jaxlib can read: its reader died "
                     f"of {how} on these bytes (read in a child process, isolated=True)")
