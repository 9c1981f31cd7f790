"""The head and tail lines of a generic op with regions, each read whole.

An op holding regions spans lines, so the one-line paths (``mhlo_ir.parse_lines``) leave it
to the token reader, and most of a lowered program's region ops are reductions:

    %18 = "mhlo.reduce"(%arg47, %17) <{dimensions = dense<1> : tensor<1xi64>}> ({
    ^bb0(%arg254: tensor<f32>, %arg255: tensor<f32>):
      ...
    }) : (tensor<16x32xf32>, tensor<f32>) -> tensor<16xf32> loc(...)

Read token by token, the head and the tail were four fifths of the cost of such an op (the
body's lines already go the line paths), ~15x MLIR's time for it. Here the head after the op
name (operands, properties, the opening ``({``) and the tail after the closing ``)`` (its
signature and location) are each one match, their pieces looked up in the parse's
``LineCache``. Anything else (an attribute dictionary after the regions, a use the scopes do
not define, a piece that does not read whole) is left where it is for the token reader,
which then reports it: this path can only be faster, never different.

An op whose one region is a combining block (``mhlo_ir.combining``: a reduction's body) is
more: all five lines are one match whose pieces but its SSA names and locations are a key,
kept once the token reader has read an op of that key up to where the match ends
(``remember_combining``), and a later op of the key is made whole from it
(``combining_op``), its names resolved and its locations read through the ``LineCache``.
A key never holds a location's text (a location the match took into a signature, one not
ending its line, leaves the op to the token reader).
"""

from __future__ import annotations

import re

from .combining import combining_recipe, combining_regions
from .ir import make_operation
from .parse_lines import _NAME, _USE, TENSOR
from .parse_templates import LOC_START, rememberable
from .types import FunctionType

__all__ = ["region_head", "region_tail", "combining_op", "remember_combining"]

_BLANK = re.compile(r"[ \t\r\n\v\f]*")  # (what the lexer skips between tokens)


def _ends_op(text: str, end: int) -> bool:
    """Whether the op whose last line ends at ``end`` ends there: the token reader would read
    a location on the next line (``loc(...)``, perhaps after a comment) as its own."""
    return not text.startswith(("l", "/"), _BLANK.match(text, end).end())


# Group 1: operands; 2: properties (with <{ }>). Ends at the "{" opening the first region.
_HEAD = re.compile(r"\(((?:" + _USE + r"(?:, " + _USE + r")*)?)\)( <\{[^\n]*?\}>)? \((?=\{\n)")
# After the ")" closing the regions. Group 1: the op's function type; 2: location.
_TAIL = re.compile(r" : (\([^\n]*?\) -> [^\n]*?)( loc\([^\n]*\))?(?=\n)")


def region_head(cache, ts):
    """``(operands, properties)`` of a generic op whose name ``ts`` has just read and whose
    line ends opening its first region, ``ts`` moved to that region's ``{``; None (``ts``
    untouched) for anything else."""
    if ts._ahead:
        return None
    text = ts.text
    m = _HEAD.match(text, ts._pos, ts._pos + 4096)
    if m is None or text.find("//", m.start(), m.end()) >= 0:
        return None  # (a comment may hide what looks like a piece)
    p = cache.parser
    operands = []
    uses = m.group(1)
    if uses:
        lookup = p.scope.lookup
        for use in uses.split(", "):
            v = lookup(use)
            if v is None:
                return None
            operands.append(v)
    props = {}
    if m.group(2) is not None:
        props = cache.properties(m.group(2))
        if props is None:
            return None
    ts._pos = m.end()
    return operands, props


def region_tail(cache, ts):
    """``(function type, location, end)`` of the line that closes a generic op's regions,
    ``ts`` just after its ``)`` (not moved: the caller checks the type against the operands
    first); None for anything else (an attribute dictionary there, a piece that does not
    read whole)."""
    if ts._ahead:
        return None
    text = ts.text
    m = _TAIL.match(text, ts._pos, ts._pos + 4096)
    if m is None or text.find("//", m.start(), m.end()) >= 0 or not _ends_op(text, m.end()):
        return None
    ftype = cache.type(m.group(1))
    if ftype.__class__ is not FunctionType:
        return None
    loc = cache.location(m.group(2))
    if loc is None:
        return None
    return ftype, loc, m.end()


# A generic op whose one region is a combining block (most reductions), all five lines:
#   %r = "mhlo.reduce"(%x, %i) <{...}> ({
#   ^bb0(%a: tensor<f32>, %b: tensor<f32>):
#     %c = "mhlo.add"(%a, %b) : (...) -> tensor<f32> loc(...)
#     "mhlo.return"(%c) : (tensor<f32>) -> () loc(...)
#   }) : (...) -> tensor<16xf32> loc(...)
_OP = r'"([A-Za-z0-9_$.\-]+)"'
_PROPS = r"( <\{[^\n]*?\}>)?"
_LOC = r"( loc\([^\n]*\))?"
_COMBINING = re.compile(
    r"[ \t\n]*(" + _NAME + r") = " + _OP + r"\(((?:" + _USE + r"(?:, " + _USE + r")*)?)\)" +
    _PROPS + r" \(\{\n"
    r"[ \t]*\^bb0\((" + _NAME + r"): (" + TENSOR + r"), (" + _NAME + r"): (" + TENSOR +
    r")\):\n"
    r"[ \t]*(" + _NAME + r") = " + _OP + r"\((" + _NAME + r"), (" + _NAME + r")\)" + _PROPS +
    r" : (\([^\n]*?\) -> [^\n]*?)" + _LOC + r"\n"
    r"[ \t]*" + _OP + r"\((" + _NAME + r")\) : (\([^\n]*?\) -> \(\))" + _LOC + r"\n"
    r"[ \t]*\}\) : (\([^\n]*?\) -> [^\n]*?)" + _LOC + r"(?=\n)")
# Groups: 1 result, 2 op, 3 operands, 4 properties; the label's 5 %a, 6 its type, 7 %b, 8 its
# type; the inner op's 9 result, 10 name, 11 and 12 operands, 13 properties, 14 signature,
# 15 location; the return's 16 name, 17 operand, 18 signature, 19 location; the op's 20
# signature, 21 location. Those naming values and locations are left out of the key.
_NAMES = (1, 3, 5, 7, 9, 11, 12, 15, 17, 19, 21)
_KEYED = tuple(i for i in range(2, 22) if i not in _NAMES)


def _match(cache, text, pos):
    """The combining op's match at ``pos`` with its key, or (None, None)."""
    m = _COMBINING.match(text, pos, pos + 8192)
    if m is None or text.find("//", m.start(), m.end()) >= 0 or not _ends_op(text, m.end()):
        return None, None  # (a comment may hide what looks like a piece)
    g = m.group
    a, b, c = g(5), g(7), g(9)
    if g(11) != a or g(12) != b or g(17) != c or a == b or c == a or c == b:
        return None, None  # (the body reads other values: the token reader's)
    key = m.group(*_KEYED)
    for piece in key:
        if piece is not None and LOC_START.search(piece) is not None:
            # A location the expression took as part of a signature (one not ending its
            # line, ``loc (...)``) would be keyed as text and then lost.
            return None, None
    return m, ("combining", cache.parser.dialect.name) + key


def combining_op(cache, text: str, pos: int, block):
    """``(op, end)`` for the combining op at ``pos`` when the token reader has read one of
    its key (every piece but names and locations) before; None otherwise."""
    m, key = _match(cache, text, pos)
    if m is None:
        return None
    hit = cache.tails.get(key)
    if hit is None:
        return None
    spec, attrs, ins, rt, recipe = hit
    p = cache.parser
    g = m.group
    frame = p.scope.frames[-1]
    result = g(1)
    if result in frame:
        return None  # (a redefinition: reported by the token reader)
    uses = g(3).split(", ") if g(3) else ()
    if len(uses) != len(ins):
        return None  # (the token reader says the signature lists another number)
    lookup = p.scope.lookup
    if lookup(g(5)) is not None or lookup(g(7)) is not None or lookup(g(9)) is not None:
        return None  # (the body redefines a visible name: the token reader says so)
    operands = []
    for use, t in zip(uses, ins):
        v = lookup(use)
        if v is None or v.type is not t:
            return None
        operands.append(v)
    location = cache.location
    loc, iloc, rloc = location(g(21)), location(g(15)), location(g(19))
    if loc is None or iloc is None or rloc is None:
        return None
    op = make_operation(spec, tuple(operands), (rt,), attrs,
                        combining_regions(recipe, iloc, rloc), loc, block)
    frame[result] = op
    return op, m.end()


def remember_combining(cache, text: str, pos: int, op, next_pos: int) -> None:
    """Keep the key of the combining op at ``pos``, which the token reader read as ``op``
    (checked, named and its pieces parsed there) up to ``next_pos`` (where the next token
    starts), for ``combining_op`` to make the next."""
    if len(op.results) != 1 or not rememberable(op):
        return
    recipe = combining_recipe(op)
    if recipe is None:
        return
    m, key = _match(cache, text, pos)
    if m is None or key in cache.tails:
        return
    end = m.end()
    if text[min(end, next_pos):max(end, next_pos)].strip():
        return  # the reader stopped elsewhere (what follows on the line is no part of it)
    cache.tails[key] = (op.spec, op.attributes, tuple([v.type for v in op.operands]),
                        op.results[0].type, recipe[:6])
