"""Readable errors from jaxlib's parser, verifier and compiler."""

from __future__ import annotations

import re

__all__ = ["VerificationError", "CompileError", "ArgumentError", "from_jaxlib"]

_DIAG = re.compile(r"^(?:[A-Z_]+: )?(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$")
# Ops located only by a name print as '<unknown>:0: error: loc("name"): message'.
_NAMED = re.compile(r'^(?:[A-Z_]+: )?<unknown>:0: error: loc\((?P<loc>.*?)\): (?P<msg>.*)$')
_NOISE = ("Failed to parse using StableHLO",)


class VerificationError(Exception):
    """jaxlib rejected the module. Keeps jaxlib's full message, and points at the first error:
    ``line``/``column`` in the text, the printed ``source_line`` there, the op name, and the
    op's own location when the module carried one."""

    def __init__(self, message: str, text: str | None = None, *, from_jaxlib: bool = True):
        self.jaxlib_message = message if from_jaxlib else None
        self.line = self.column = None
        self.source_line = None
        self.op_name = None
        self.location = None
        self.error = message.strip()
        lines = [ln for ln in message.splitlines() if not any(n in ln for n in _NOISE)]
        for ln in lines:
            named = _NAMED.match(ln.strip())
            if named:
                self.error = named.group("msg")
                self.location = named.group("loc")
                break
            m = _DIAG.match(ln.strip())
            if m:
                self.error = m.group("msg")
                self.location = f"{m.group('file')}:{m.group('line')}:{m.group('col')}"
                if m.group("file") in ("-", "<unknown>", "") and text is not None:
                    self.line, self.column = int(m.group("line")), int(m.group("col"))
                    src = text.splitlines()
                    if 0 < self.line <= len(src):
                        self.source_line = src[self.line - 1]
                break
        self._find_op_name()
        super().__init__(self._summary(lines) if from_jaxlib else message)

    def _find_op_name(self) -> None:
        """The op named in the message, else the op on the printed source line."""
        op = re.search(r"'([\w.]+)' op", self.error)
        if op:
            self.op_name = op.group(1)
        elif self.source_line is not None:
            op = re.search(r'"([\w.]+)"\(', self.source_line)
            if op:
                self.op_name = op.group(1)

    def _summary(self, lines) -> str:
        parts = [self.error]
        if self.location:
            parts.append(f"  at {self.location}")
        if self.source_line is not None:
            parts.append(f"  {self.line:>5} | {self.source_line.strip()}")
        body = "\n".join(ln for ln in lines if ln.strip())
        parts.append("jaxlib said:\n" + body)
        return "\n".join(parts)


class CompileError(VerificationError):
    """The module verified but XLA could not compile it (unknown custom call, tuple result...)."""


class ArgumentError(TypeError):
    """Arguments given to ``run`` do not match the program's parameters."""


def from_jaxlib(exc: Exception, text: str, cls=VerificationError) -> VerificationError:
    msg = str(exc)
    return cls(msg, text)
