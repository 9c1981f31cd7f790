"""The parser's fast path for what opens and closes a module and a function: read by one
regular expression or string test each, as parse_lines reads one-line ops.

    "builtin.module"() <{sym_name = "m"}> ({
      "func.func"() <{function_type = (tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"}> ({
      ...
      }) : () -> ()
    }) : () -> ()

    module @m attributes {mhlo.num_partitions = 1 : i32} {
      func.func public @main(%arg0: tensor<4xf32> {mhlo.x = 1}) -> (tensor<4xf32> {...}) {

Token by token, these lines were most of what reading a small module cost (a 20-op module's
parse took 0.2 ms, 0.14 of it outside its op lines). Only the shapes our printer and
MLIR's print are taken: in generic form, properties in MLIR's (sorted) order, names without
escapes and no argument or result attributes; in custom form, tensor types and attribute
dictionaries without nested braces. Anything else returns None and is read token by token,
where its errors are reported, so this path can only be faster, never different.
"""

from __future__ import annotations

import re

from .location import UNKNOWN
from .parse_lines import TENSOR as _TENSOR
from .syntax import NAME_ID, Token
from .types import FunctionType

__all__ = ["MODULE_HEAD", "FUNCTION_HEAD", "PRETTY_FUNCTION_HEAD", "PRETTY_MODULE_HEAD",
           "module_head", "function_head", "pretty_function_head", "pretty_module_head",
           "empty_tail"]

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


# ``func.func`` in custom form, after its name: `` [visibility] @name(%a: tensor<...> {attrs},
# ...) [-> tensor<...> | -> (tensor<...> {attrs}, ...)] {`` then the line's end: arguments
# without locations, attribute dictionaries without nested braces (a function of 200
# arguments was a third of its module's reading, and StableHLO's corpus gives every result
# attributes). Group 1: visibility; 2: name; 3: arguments; 4: results.
_DICT = r'\{(?:[^{}"\n]|"(?:[^"\\\n]|\\.)*")*\}'  # (strings may hold braces)
_ARG = "%" + NAME_ID + ": " + _TENSOR + "(?: " + _DICT + ")?"
_RESULT = _TENSOR + "(?: " + _DICT + ")?"
PRETTY_FUNCTION_HEAD = re.compile(
    r" (?:(public|private|nested) )?@([A-Za-z_][A-Za-z0-9_$.]*)\(((?:" + _ARG + "(?:, " + _ARG +
    r")*)?)\)(?: -> (" + _TENSOR + r"|\(" + _RESULT + "(?:, " + _RESULT + r")*\)))? \{(?=\n)")
_ARG_PARTS = re.compile(r"(%[^:]+): (" + _TENSOR + ")(?: (" + _DICT + "))?")
_RESULT_PARTS = re.compile("(" + _TENSOR + ")(?: (" + _DICT + "))?")
# ``module`` in custom form, after its name: `` [@name] [attributes {...}]`` before `` {``.
PRETTY_MODULE_HEAD = re.compile(r"(?: @([A-Za-z_][A-Za-z0-9_$.]*))?(?: attributes (" + _DICT +
                                r"))?(?= \{\n)")


def _parts(cache, text: str, start: int, end: int, parts, with_name: bool):
    """The pieces of a list PRETTY_FUNCTION_HEAD matched in ``text[start:end]``: ``(name,
    type, attributes or {}, name offset)`` each (no name without ``with_name``), or None when
    a type or dictionary does not parse whole, or the pieces do not make up the list."""
    out = []
    at = start
    for m in parts.finditer(text, start, end):
        if m.start() != at:
            return None
        at = m.end() + 2  # past ", "
        t = cache.type(m.group(2 if with_name else 1))
        if t is None:
            return None
        attrs = {}
        d = m.group(3 if with_name else 2)
        if d is not None:
            attrs = cache.properties(" <" + d + ">")  # (read as a properties' {...} is)
            if attrs is None:
                return None
            attrs = dict(attrs)  # the function's own: it may be edited
        out.append((m.group(1) if with_name else None, t, attrs, m.start(1)))
    if at - 2 != end and out or not out and start != end:
        return None
    return out


def pretty_function_head(cache, ts):
    """``(visibility or None, name, [(arg name, type, UNKNOWN, token)], argument attributes,
    result types, result attributes, end)`` when ``ts`` (just past ``func.func``, nothing
    peeked) reads a PRETTY_FUNCTION_HEAD whose types and dictionaries each parse whole
    (through ``cache``); else None. The attribute lists are None when all are empty, as the
    token-level reader passes them; ``end`` is past the ``{``."""
    if ts._ahead:
        return None
    text = ts.text
    m = PRETTY_FUNCTION_HEAD.match(text, ts._pos)
    if m is None:
        return None
    args = _parts(cache, text, m.start(3), m.end(3), _ARG_PARTS, True)
    if args is None:
        return None
    results = []
    if m.group(4) is not None:
        if m.group(4).startswith("("):
            results = _parts(cache, text, m.start(4) + 1, m.end(4) - 1, _RESULT_PARTS, False)
            if results is None:
                return None
        else:
            t = cache.type(m.group(4))
            if t is None:
                return None
            results = [(None, t, {}, 0)]
    arg_attrs = [a[2] for a in args]
    res_attrs = [r[2] for r in results]
    return (m.group(1), m.group(2),
            [(a[0], a[1], UNKNOWN, Token("%", a[0], a[3])) for a in args],
            arg_attrs if any(arg_attrs) else None, [r[1] for r in results],
            res_attrs if any(res_attrs) else None, m.end())


def pretty_module_head(cache, ts):
    """``(name or None, attributes, end)`` when ``ts`` (just past ``module``, nothing peeked)
    reads a PRETTY_MODULE_HEAD whose dictionary parses whole; else None. ``end`` is before the
    body's `` {``."""
    if ts._ahead:
        return None
    m = PRETTY_MODULE_HEAD.match(ts.text, ts._pos)
    if m is None:
        return None
    attrs = {}
    if m.group(2) is not None:
        attrs = cache.properties(" <" + m.group(2) + ">")
        if attrs is None:
            return None
    return m.group(1), attrs, m.end()
