"""Readable errors from jaxlib's parser, verifier and compiler, and for what is missing here.

jaxlib reports MLIR diagnostics as text: ``UNKNOWN: -:3:10: error: ...`` followed by notes, an
XLA-level ``Python Code Location`` block, and a StableHLO fallback line that is pure noise. The
file is always ``-`` (jaxlib parses from a string), which tells a user nothing; the position is
exact, but only useful next to the text it points into. ``VerificationError`` parses that text
into diagnostics, names the source (the module, or the file the caller gave), shows the offending
line with a caret under the column, and gives each distinct message once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["VerificationError", "CompileError", "ArgumentError", "CallbackError",
           "JaxlibMissing", "PlatformUnavailable", "Diagnostic", "from_jaxlib", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'mhlo-ir[verify]'"

# A status prefix (``UNKNOWN: ``, ``INVALID_ARGUMENT: ``) that absl adds to the first line.
_STATUS = re.compile(r"^[A-Z][A-Z_]+: ")
_DIAG = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): "
                   r"(?P<sev>error|warning|note|remark): (?P<msg>.*)$")
# Ops located only by a name print as '<unknown>:0: error: loc("name"): message'.
_UNLOCATED = re.compile(r"^<unknown>:0: (?P<sev>error|warning|note|remark): "
                        r"(?:loc\((?P<loc>.*?)\): )?(?P<msg>.*)$")
# XLA's own shape errors carry the op's location in its metadata, after the diagnostic.
_PY_FILE = re.compile(r"^\s*File: (?P<file>.*?):(?P<line>\d+):?\s*$")
_BARE_LOCATION = re.compile(r"^\s+(?P<file>\S+?):(?P<line>\d+)\s*$")
_NOISE = ("Failed to parse using StableHLO",)
_DETAILED = "Detailed error from MLIR: "
# Where the op starts on a printed line: after the results (``%0 = ``, ``%0:2 = ``).
_OP_START = re.compile(r"^\s*(?:%[^=]*=\s*)?")
_TEXT_NAME = "<mlir text>"
_WIDE = 200  # longer source lines are shown as a window around the column
_NOTE_WIDTH = 300


class JaxlibMissing(ImportError):
    """``verify`` needs jaxlib for this, and jaxlib cannot be imported here.

    An ImportError, so ``except ImportError`` still works; its message is one line that says
    what to install, not the import machinery's traceback. ``reason`` is the original error.
    """

    def __init__(self, reason: str | None = None) -> None:
        self.reason = reason
        why = "is not installed" if reason is None or "No module named" in reason else \
            "could not be imported"
        detail = f" ({reason.splitlines()[0]})" if reason else ""
        super().__init__(f"verify needs jaxlib, which {why}{detail}: {INSTALL_HINT}",
                         name="jaxlib")


class PlatformUnavailable(RuntimeError):
    """No client for the asked platform can be made on this machine (no such device, no
    plugin). ``platform`` is what was asked for, ``available`` what would work instead."""

    def __init__(self, platform: str, reason: str, available: list) -> None:
        self.platform, self.reason, self.available = platform, reason, list(available)
        reason = " ".join(reason.split())  # one line, whatever jax or the plugin said
        super().__init__(f"platform {platform!r} is not available here ({reason}); "
                         f"available platforms: {', '.join(self.available) or 'none'}")


@dataclass
class Diagnostic:
    """One diagnostic of jaxlib's message: ``severity`` error/warning/note/remark, where it
    points (``file``/``line``/``column``, or a ``name`` location), and, for XLA's shape
    errors, the op's own location from XLA's metadata (``op_file``/``op_line``)."""

    severity: str
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    name: str | None = None
    op_file: str | None = None
    op_line: int | None = None

    def where(self, filename: str) -> str | None:
        """The location as text, with jaxlib's ``-`` (its name for the string it parsed)
        replaced by ``filename``."""
        if self.file is not None:
            file = filename if self.file == "-" else self.file
            return f"{file}:{self.line}:{self.column}"
        return self.name


def parse_diagnostics(message: str) -> tuple:
    """``(diagnostics, other_lines)``: jaxlib's message split into diagnostics (noise dropped,
    continuation lines joined to the diagnostic they continue) and the lines of a message
    that has no diagnostics at all (XLA's compiler errors)."""
    diags: list = []
    other: list = []
    noise = located = False
    for i, raw in enumerate(message.splitlines()):
        # The status prefix is kept on XLA's own errors (UNIMPLEMENTED, NOT_FOUND... say
        # something), dropped before MLIR diagnostics (always UNKNOWN).
        stripped = _STATUS.sub("", raw, count=1) if i == 0 else raw
        # (a portable artifact's refusal: "Detailed error from MLIR: -:2:1: error: ...")
        stripped = stripped[len(_DETAILED):] if stripped.startswith(_DETAILED) else stripped
        m = _DIAG.match(stripped)
        u = None if m else _UNLOCATED.match(stripped)
        ln = stripped if m or u else raw
        if m or u:
            noise = any(n in ln for n in _NOISE)
            if noise:
                continue
            if m:
                diags.append(Diagnostic(m["sev"], m["msg"].strip(), m["file"], int(m["line"]),
                                        int(m["col"])))
            else:
                diags.append(Diagnostic(u["sev"], u["msg"].strip(), name=u["loc"]))
            continue
        if noise or not ln.strip():
            continue
        if ln.strip() in ("Python Code Location:", "Suspected Python Code Location:"):
            located = True
            continue
        bare = _BARE_LOCATION.match(ln) if located and not diags and other else None
        if bare:
            # XLA:TPU's own errors name the op's line in its metadata (``-:4``), after them.
            diags.append(Diagnostic("error", other.pop(0), op_file=bare["file"],
                                    op_line=int(bare["line"])))
            continue
        py = _PY_FILE.match(ln)
        if py and diags:
            if diags[-1].op_file is None:
                diags[-1].op_file, diags[-1].op_line = py["file"], int(py["line"])
            continue
        if diags:
            diags[-1].message += "\n" + ln.rstrip()
        else:
            other.append(ln.rstrip())
    return diags, other


class VerificationError(Exception):
    """jaxlib rejected the module.

    Points at the first error: ``error`` (its message), ``location`` (as the user knows it:
    ``filename:line:col`` in the text, or the op's own location when the module carried one),
    ``line``/``column``/``source_line`` in the text that was parsed (for an mhlo_ir Module,
    its printed text), and ``op_name``. ``diagnostics`` has everything jaxlib said, parsed;
    ``jaxlib_message`` is jaxlib's text unchanged.
    """

    def __init__(self, message: str, text: str | None = None, *, filename: str | None = None,
                 from_jaxlib: bool = True) -> None:
        super().__init__(message)
        self.jaxlib_message = message if from_jaxlib else None
        self.filename = filename or _TEXT_NAME
        self.text = text
        self.line = self.column = None
        self.source_line = None
        self.op_name = None
        self.location = None
        self.diagnostics: list = []
        self._other: list = []
        self._first = None
        self.error = message.strip()
        if not from_jaxlib:
            return
        self.diagnostics, self._other = parse_diagnostics(message)
        first = next((d for d in self.diagnostics if d.severity == "error"),
                     self.diagnostics[0] if self.diagnostics else None)
        self._first = first
        if first is None:
            self.error = self._other[0] if self._other else self.error
        else:
            self.error = first.message
            self._locate(first, text)
        self._find_op_name()

    def _locate(self, d: Diagnostic, text: str | None) -> None:
        if d.op_file is not None:
            # XLA's shape errors point MLIR's position at the return; its metadata names the op.
            if d.op_file == "-":
                self.location = f"{self.filename}:{d.op_line}"
                self.point_at(text, d.op_line, None)
            else:
                self.location = f"{d.op_file}:{d.op_line}"
                self.point_at(text, *_find_loc(text, f'"{d.op_file}":{d.op_line}:'))
        elif d.file is not None:
            self.location = d.where(self.filename)
            if d.file in ("-", ""):
                self.point_at(text, d.line, d.column)
            else:
                self.point_at(text, *_find_loc(text, f'"{d.file}":{d.line}:{d.column}'))
        elif d.name is not None:
            self.location = d.name
            self.point_at(text, *_find_loc(text, f"loc({d.name})"))

    def point_at(self, text: str | None, line: int | None, column: int | None) -> None:
        """Show ``line`` of ``text`` (1-based) as the source line; without a ``column``, the
        caret goes under the op's name."""
        if text is None or line is None:
            return
        src = text.splitlines()
        if not 0 < line <= len(src):
            return
        self.line, self.source_line = line, src[line - 1]
        self.column = column if column is not None else \
            _OP_START.match(self.source_line).end() + 1

    def _find_op_name(self) -> None:
        """The op named in the message, else the op on the source line."""
        op = re.search(r"'([\w.]+)' op", self.error)
        if op:
            self.op_name = op.group(1)
        elif self.source_line is not None:
            op = re.search(r'"([\w.]+)"\(', self.source_line) or \
                re.match(r"\s*(?:%[^=]*=\s*)?([a-z_]+\.[\w.]+)", self.source_line)
            if op:
                self.op_name = op.group(1)

    def __str__(self) -> str:
        if self.jaxlib_message is None:
            return self.error
        parts = [self.error]
        printed = f"{self.filename}:{self.line}:{self.column}"
        if self.location and self.line is not None and not self.location.startswith(
                self.filename + ":"):
            parts.append(f"  at {self.location} ({printed})")
        elif self.location:
            parts.append(f"  at {self.location}")
        if self.source_line is not None:
            shown, caret = _excerpt(self.source_line, self.column)
            parts.append(f"  {self.line:>5} | {shown}")
            if caret is not None:
                parts.append(f"  {'':>5} | {' ' * caret}^")
        # Each distinct message once: jaxlib repeats the error's text in its notes and the
        # headline above already says it.
        seen = {self.error}
        for d in self.diagnostics:
            if d.message in seen or self._shown(d):
                continue
            seen.add(d.message)
            where = d.where(self.filename)
            msg = _shorten(d.message.replace("\n", "\n    "))
            if where and where != self.location:
                msg += f" (at {where})"
            parts.append(f"  {d.severity}: {msg}")
        for ln in self._other:
            if ln not in seen:
                seen.add(ln)
                parts.append(f"  {_shorten(ln)}")
        return "\n".join(parts)

    def _shown(self, d: Diagnostic) -> bool:
        """Whether a "see current operation" note only repeats the source line shown, or
        names the op XLA's shape error does not mean (MLIR points those at the return)."""
        op = d.message.partition("see current operation: ")[2]
        if not op:
            return False
        first = self._first
        if first is not None and first.op_file is not None and \
                (d.file, d.line, d.column) == (first.file, first.line, first.column):
            return True
        return self.source_line is not None and op.strip() in self.source_line


_ALIAS = re.compile(r"^(#[\w$.\-]+) = loc\((.*)\)\s*$")


def _find_loc(text: str | None, needle: str) -> tuple:
    """``(line, None)`` of the first op whose location contains ``needle``: inline
    (``loc("f.py":3:7)``) or through ``#loc`` aliases (``#loc3 = loc("f.py":3:7)`` defined at
    the end, possibly inside callsite or fused locations of other aliases); Nones if none."""
    if text is None:
        return None, None
    lines = text.splitlines()
    aliases = {}
    for ln in lines:
        m = _ALIAS.match(ln)
        if m:
            aliases[m.group(1)] = m.group(2)
    names = {a for a, body in aliases.items() if needle in body}
    while True:  # aliases built from those aliases
        more = {a for a, body in aliases.items() if a not in names and
                any(re.search(re.escape(n) + r"(?![\w$.\-])", body) for n in names)}
        if not more:
            break
        names |= more
    uses = [re.compile(re.escape(n) + r"(?![\w$.\-])") for n in names]
    for i, ln in enumerate(lines, 1):
        if _ALIAS.match(ln):
            continue
        if needle in ln or any(u.search(ln) for u in uses):
            return i, None
    return None, None


def _excerpt(line: str, column: int | None) -> tuple:
    """The source line without its indent (a window around the column when it is long), and
    where the caret goes in it (None without a column)."""
    indent = len(line) - len(line.lstrip())
    shown = line.strip()
    caret = None if column is None else max(0, min(column - 1 - indent, len(shown)))
    if len(shown) > _WIDE:
        start = 0 if caret is None or caret < _WIDE // 2 else caret - _WIDE // 4
        end = start + _WIDE
        head, tail = ("... " if start else ""), (" ..." if end < len(shown) else "")
        if caret is not None:
            caret += len(head) - start
        shown = head + shown[start:end] + tail
    return shown, caret


def _shorten(s: str) -> str:
    return s if len(s) <= _NOTE_WIDTH else s[:_NOTE_WIDTH] + " ..."


class CompileError(VerificationError):
    """The module verified but XLA could not compile it (unknown custom call, tuple result...)."""


class CallbackError(RuntimeError):
    """A host callback failed while the program ran: it raised (that exception is the
    ``__cause__``), or returned values that do not fit the op's result types. ``name`` and
    ``index`` say which callback (its place in the module's ``host_callbacks``)."""

    def __init__(self, message: str, *, name: str | None = None,
                 index: int | None = None) -> None:
        super().__init__(message)
        self.name, self.index = name, index


class ArgumentError(TypeError):
    """Arguments given to ``run`` do not match the program's parameters."""


def from_jaxlib(exc: Exception, text: str, cls=VerificationError,
                filename: str | None = None) -> VerificationError:
    """jaxlib's exception as a VerificationError (or ``cls``) about ``text``."""
    return cls(str(exc), text, filename=filename)
