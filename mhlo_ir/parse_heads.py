"""The parser's fast path for what opens and closes a module and a function in generic form:
read by one regular expression or string test each, as parse_lines reads one-line ops.

    "builtin.module"() <{sym_name = "m"}> ({
      "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"}> ({
      ...
      }) : () -> ()
    }) : () -> ()

Token by token, these lines were most of what reading a small module cost (a 20-op module's
parse took 0.2 ms, 0.14 of it outside its op lines). Only the shapes our printer and
MLIR's print are taken: properties in MLIR's (sorted) order, names without escapes, and no
argument or result attributes. Anything else returns None and is read token by token, where
its errors are reported, so this path can only be faster, never different.
"""

from __future__ import annotations

import re

from .location import UNKNOWN
from .syntax import Token
from .types import FunctionType

__all__ = ["MODULE_HEAD", "FUNCTION_HEAD", "PRETTY_FUNCTION_HEAD", "module_head", "function_head",
           "pretty_function_head", "empty_tail"]

_SYMBOL = r'"([A-Za-z0-9_$.\-]+)"'  # (a name with an escape goes the tokens' way)
# After the op name: the name, if any, then the body's opening "(" (the region's "{" follows).
MODULE_HEAD = re.compile(r"\(\) (?:<\{sym_name = " + _SYMBOL + r"\}> )?\(")
# After the op name: the function type's text, the name, the visibility; then "({".
# A function type holds neither braces nor quotes nor ", sym_name = " (types here have none).
FUNCTION_HEAD = re.compile(r'\(\) <\{function_type = ([^{}"\n]*?), sym_name = ' + _SYMBOL +
                           r'(?:, sym_visibility = "(public|private|nested)")?\}> \(\{')


def module_head(ts):
    """``(name or None, end)`` when ``ts`` (just past ``"builtin.module"``, nothing peeked)
    reads a MODULE_HEAD; else None."""
    if ts._ahead:
        return None
    m = MODULE_HEAD.match(ts.text, ts._pos)
    if m is None:
        return None
    return m.group(1), m.end()


def function_head(cache, ts):
    """``(name, FunctionType, visibility or None, end)`` when ``ts`` (just past
    ``"func.func"``, nothing peeked) reads a FUNCTION_HEAD whose type parses whole (through
    ``cache``, a parse_lines.LineCache); else None."""
    if ts._ahead:
        return None
    m = FUNCTION_HEAD.match(ts.text, ts._pos)
    if m is None:
        return None
    ftype = cache.type(m.group(1))
    if not isinstance(ftype, FunctionType):
        return None
    return m.group(2), ftype, m.group(3), m.end()


_EMPTY_TAIL = ") : () -> ()"


def empty_tail(ts) -> bool:
    """Consume ``) : () -> ()`` (a module's or function's end, after its region's ``}``,
    without an attribute dictionary) when ``ts`` reads it next, nothing peeked; the
    location after it is the caller's to read."""
    if ts._ahead or not ts.text.startswith(_EMPTY_TAIL, ts._pos):
        return False
    ts._pos += len(_EMPTY_TAIL)
    return True


# ``func.func`` in custom form, after its name: `` [visibility] @name(%a: tensor<...>, ...)
# [-> tensor<...> | -> (tensor<...>, ...)] {`` then the line's end, arguments without
# attributes or locations (a function of 200 arguments was a third of its module's reading).
# Group 1: visibility; 2: name; 3: arguments; 4: results.
_TENSOR = r"tensor<[^<>\n]*>"
_ARG = r"%(?:[0-9]+|[A-Za-z$._\-][A-Za-z0-9$._\-]*): " + _TENSOR
PRETTY_FUNCTION_HEAD = re.compile(
    r" (?:(public|private|nested) )?@([A-Za-z_][A-Za-z0-9_$.]*)\(((?:" + _ARG + "(?:, " + _ARG +
    r")*)?)\)(?: -> (" + _TENSOR + r"|\(" + _TENSOR + "(?:, " + _TENSOR + r")*\)))? \{(?=\n)")
_ARG_PARTS = re.compile(r"(%[^:]+): (" + _TENSOR + ")")
_RESULT_TYPES = re.compile(_TENSOR)


def pretty_function_head(cache, ts):
    """``(visibility or None, name, [(arg name, type, UNKNOWN, token)], result types, end)``
    when ``ts`` (just past ``func.func``, nothing peeked) reads a PRETTY_FUNCTION_HEAD whose
    types each parse whole (through ``cache``); else None. ``end`` is past its ``{``."""
    if ts._ahead:
        return None
    m = PRETTY_FUNCTION_HEAD.match(ts.text, ts._pos)
    if m is None:
        return None
    read = cache.type
    args = []
    for am in _ARG_PARTS.finditer(ts.text, m.start(3), m.end(3)):
        t = read(am.group(2))
        if t is None:
            return None
        args.append((am.group(1), t, UNKNOWN, Token("%", am.group(1), am.start(1))))
    results = []
    if m.group(4) is not None:
        for rm in _RESULT_TYPES.finditer(m.group(4)):
            t = read(rm.group())
            if t is None:
                return None
            results.append(t)
    return m.group(1), m.group(2), args, results, m.end()
