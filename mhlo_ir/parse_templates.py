"""The parser's fast path for lines the others do not take: a one-line op read token by token
once becomes a template, and a later line that differs from it only in its SSA names (and its
location) is made from the template.

Custom forms are many (``mhlo.constant dense<0.0> : tensor<8xf32>``, ``mhlo.compare GT, %a,
%b : ...``, ``return %9 : tensor<8xf32>``...), and MLIR prints them by default, so text from
MLIR or StableHLO's corpus is mostly lines the expressions of parse_lines do not match. Read
token by token such a line costs 20-50 us; a program repeats a handful of them.

A template is the line's text after its result part, its uses replaced by ``%`` and its
trailing location cut off, keyed with the dialect the text spells and the number of results
its result part names. It is kept only when the line held exactly the op (it ended the line,
had no regions, and its result part named its results), when its uses, in the order they
appear, are its operands and every ``%`` in it starts one, when the cut-off location reads
as the op's own, and when it has results or uses (a bare ``return`` may have its operands on
the next line): so a line matching it reads as the token parser read the first. The
operands must have the first line's types, which is all else a form's reading depends on (a
form's result types may follow from them). What follows a line read so must start an op
(``starts_op``), else the parser reads the line again token by token: a form may go on past
the line's end (a type list, an attribute dictionary).
"""

from __future__ import annotations

import re

from .combining import combining_recipe, combining_regions
from .ir import make_operation
from .op_attributes import OpAttributes
from .syntax import NAME_ID

__all__ = ["remember", "starts_op", "template_line"]

_USE = re.compile("%" + NAME_ID + r"(?:#[0-9]+)?")
_RESULT = re.compile("(%" + NAME_ID + r")(?::([0-9]+))?")
_LIMIT = 8192  # entries of the shared table (see parse_lines._tables), as its others
# A location's start as the token reader takes it (blanks may part "loc" from "(").
LOC_START = re.compile(r"\bloc[ \t\r\n\v\f]*\(")


def _split(line: str):
    """``(result name or None, result count, template, uses, location text or "")`` of a
    stripped line (``%r = ...`` names one result, ``%r:3 = ...`` a group of three, a line
    without ``=`` none), or None when it cannot be one (a comment, a malformed result)."""
    if "//" in line:
        return None  # a comment: where it starts is the token reader's to say
    result, count = None, 0
    if line.startswith("%"):
        result, sep, line = line.partition(" = ")
        if not sep:
            return None
        m = _RESULT.fullmatch(result)
        if m is None:
            return None
        result, count = m.group(1), int(m.group(2) or 1)
        if count < 1:
            return None
    body, sep, loc_tail = line.rpartition(" loc(")
    if not sep:
        body = line
    uses = _USE.findall(body)
    if body.count("%") != len(uses):
        return None  # a "%" not starting a use (in a string, say): the line is no template
    return result, count, _USE.sub("%", body), uses, sep and sep + loc_tail


def _names(result: str, count: int) -> list:
    """The names a result part binds, as the token parser binds them: ``%r``, and for a group
    of several ``%r#0``, ``%r#1``..."""
    if count == 1:
        return [result]
    return [result] + [f"{result}#{k}" for k in range(count)]


def _line_at(text: str, pos: int):
    """``(stripped line from pos, its end)`` or None for a line of 4096 characters or more
    (as parse_lines bounds its own)."""
    end = text.find("\n", pos)
    if end < 0 or end >= pos + 4096:
        return None
    return text[pos:end].rstrip(" \t"), end


def template_line(cache, line: str, end: int, block):
    """``(op, end)`` when ``line`` (a line's text, stripped of the spaces around it, that ends
    at ``end``) matches a template; else None."""
    parts = _split(line)
    if parts is None:
        return None
    result, count, template, uses, loc_text = parts
    p = cache.parser
    hit = cache.tails.get(("template", p.dialect.name, count, template))
    if hit is None:
        return None
    spec, attributes, ins, results, recipe = hit
    if len(uses) != len(ins):
        return None
    lookup = p.scope.lookup
    operands = []
    for name, t in zip(uses, ins):
        v = lookup(name)
        if v is None or v.type is not t:
            return None
        operands.append(v)
    location = cache.location(loc_text)
    if location is None:
        return None
    frame = p.scope.frames[-1]
    names = _names(result, count) if count else ()
    for name in names:
        if name in frame:
            return None  # a redefinition: reported by the token-level path
    # A region the line does not spell is one its text implies: at the op's location, as
    # MLIR reads it (see remember).
    regions = () if recipe is None else combining_regions(recipe, location, location, location)
    op = make_operation(spec, tuple(operands), results, attributes, regions, location, block)
    if count == 1:
        frame[result] = op.results[0]
    elif count:
        values = op.results
        frame[result] = values[0]
        for k, v in enumerate(values):
            frame[f"{result}#{k}"] = v
    return op, end


# What starts an op at the token reader's place: results (``%r =``, ``%r:2 =``, ``%a, %b =``),
# or a name (a string or bare token); see starts_op.
_RESULTS = re.compile("%" + NAME_ID + r"(?::[0-9]+)?(?:[ \t\r\n]*,[ \t\r\n]*%" + NAME_ID +
                      r"(?::[0-9]+)?)*[ \t\r\n]*=")


def starts_op(text: str, tok) -> bool:
    """Whether token ``tok`` (the next after an op a line path read, not the block's end)
    can start an op, as opposed to going on with that op's text, which any op may (its
    location, ``loc``) and its form may (a type list, an attribute dictionary, a return's
    operands)."""
    kind = tok.kind
    if kind == "bare":
        return tok.text != "loc"
    return kind == "string" or kind == "%" and _RESULTS.match(text, tok.pos) is not None


def rememberable(op) -> bool:
    """Whether the parser may keep ``op``'s line in its process-wide tables and make later
    lines alike from it, unchecked: a line is keyed by its text after the operands, so its
    attributes must be the table's immutable mapping (OpAttributes), and its spec must not
    judge the operand values themselves (``OpSpec.decided_by_types``: no check of what a
    constant operand holds), which that text does not say. Every path that keeps a line
    asks this."""
    a = op.attributes
    return (a is None or a.__class__ is OpAttributes) and op.spec.decided_by_types


def remember(cache, text: str, pos: int, op, next_pos: int) -> None:
    """Keep the line at ``pos`` (its first token's offset), which the token parser read as
    ``op``, as a template if it can be one; ``next_pos`` is where the next token starts.

    An op with a region its line does not spell (a reduce's ``applies mhlo.add``: the body
    follows from the text and the operand types, as the token reader made it) is one when
    that region is a combining block all at the op's location, arguments included (as the
    reader leaves a body the text implies; ``combining_recipe``): a later line makes its
    own region from the recipe, at its own line's location. A region the line spells names its
    arguments, which are not the op's operands, so no such line makes a template."""
    recipe = None
    if op.regions:
        # (Its arguments at the op's location too, or with none where the op has none:
        # combining_recipe's ``implied``.)
        recipe = combining_recipe(op, implied=True)
        if recipe is None or recipe[6] is not op.location or recipe[7] is not op.location:
            return
        recipe = recipe[:6]
    at = _line_at(text, pos)
    if at is None:
        return
    end = at[1]
    if text[min(end, next_pos):max(end, next_pos)].strip():
        return  # the op did not end its line, or went on to the next
    parts = _split(at[0])
    if parts is None:
        return
    result, count, template, uses, loc_text = parts
    if LOC_START.search(template) is not None:
        return  # a location _split did not cut off (``loc (unknown)``): it would be text
    if count != len(op.results) or not (count or uses):
        # (A line of neither results nor uses, ``return``, is no template: an operand list
        # on the next line would be the op's own.)
        return
    operands = op.operands
    if len(uses) != len(operands):
        return
    lookup = cache.parser.scope.lookup
    for name, v in zip(uses, operands):
        if lookup(name) is not v:
            return
    location = cache.location(loc_text)
    if location is None or location != op.location:
        return
    if not rememberable(op):
        return
    attributes = op.attributes
    tails = cache.tails
    if len(tails) <= _LIMIT:
        key = ("template", cache.parser.dialect.name, count, template)
        tails[key] = (op.spec, attributes, tuple([v.type for v in operands]),
                      tuple([r.type for r in op.results]), recipe)

