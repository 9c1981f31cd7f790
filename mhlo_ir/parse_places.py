"""Where in its text an op was read, for the errors only the whole module shows.

An ill-formed op is a ParseError at its line and column as it is read; a whole-module
problem (a return of the wrong types, a call of a function the text does not define, an op
after the terminator) is found by ``Module.verify`` once the text is read, and its message
names the op by its location, "unknown" for text without ``loc(...)``. Nothing is recorded
while parsing, which stays as fast as before: only when verification fails is the text read
again, recording where each op starts, and the failing op found there by its place in the
module's walk order.
"""

from __future__ import annotations

from .errors import ModuleVerificationError
from .ir import walk
from .syntax import _patterns

__all__ = ["placed"]


def placed(text: str, source, check_ops: bool, module, error: ModuleVerificationError):
    """``error`` (about an op of ``module``, read from ``text``) as a ModuleVerificationError
    that starts with the op's ``line:column`` and shows its line, as a ParseError does (with
    ``line`` and ``column`` attributes); None where the error names no op or the op is not
    found again."""
    from .parser import _Parser
    op = getattr(error, "op", None)
    if op is None:
        return None
    ordinal = next((i for i, (_, o) in enumerate(walk(module)) if o is op), None)
    if ordinal is None:
        return None
    parser = _Parser(text, source, check_ops)
    parser.positions = {}
    try:
        again = parser.module()
    except (ValueError, RecursionError):  # (it read the first time: not expected)
        return None
    pos = next((parser.positions.get(id(o)) for i, (_, o) in enumerate(walk(again))
                if i == ordinal), None)
    if pos is None:
        return None
    pos = _patterns()[1].match(text, pos).end()  # (a line path's start: before the blanks)
    shown = parser.ts.error_at(pos, str(error))
    e = ModuleVerificationError(str(shown))
    e.op, e.line, e.column = op, shown.line, shown.column
    return e
