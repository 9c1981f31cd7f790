"""Line templates for ops printed in their custom form (``pretty=True``).

A region-free op's custom form (``mhlo_ir.pretty_forms.Form``) is a function of its kind,
operand and result types, attributes and output dialect, with its operands' SSA names
inserted as they are. So the text after ``%5 = `` is rendered once per such combination with
stand-ins for the operand names, split around them, and kept: every later op of that
combination prints by joining the kept pieces with its own operands' names, without running
the form's pieces (which made the custom form ten times slower than the generic one).

A template is made only when it reproduces the form's own rendering of the op it was made
from, with that op's real names: whatever a form might do that the split cannot follow
(a name not spelled verbatim, an attribute holding a stand-in's character) leaves the op on
the form's path. Big texts (a constant's data) are not kept.
"""

from __future__ import annotations

from operator import attrgetter, is_

from .ir import Block, SingleResultOp, make_operation
from .location import UnknownLoc
from .pretty_forms import custom_form
from .ssa_names import arg_names
from .text import symbol_name

__all__ = ["keyword", "template", "terminator_line", "function_head", "NONE", "ONE", "PAIR",
           "GENERAL"]

# NUL cannot appear in printed text: strings escape it (``\00``), and names, types and
# keywords never hold it.
_MARK = "\x00"
_LONGEST = 2048  # characters: texts above this are rendered each time, not kept


def keyword(spec, dialect, top: bool = False) -> str:
    """The op's name as its custom form spells it: ``mhlo.add``; ``return`` and ``call``
    without ``func.`` in a function's body (``top``, where func is the default dialect),
    ``func.call`` in an op's region."""
    kw = spec.name if spec.namespace == "func" else spec.full_name(dialect)
    return kw[5:] if top and kw.startswith("func.") else kw


def template(pr, op, top: bool = False):
    """``(shape, literals, indices, attributes)`` such that the text after ``op``'s
    ``%name = `` is ``literals[0] + name(operands[indices[0]]) + literals[1] + ...`` (the
    location and the newline excluded). False where ``op`` must take the form's own path: no
    custom form in this dialect, a form with regions (but a reduce whose body its line names,
    ``applies mhlo.add``), a func op with results (``func.call``, spelled by its callee), a
    spec that checks each op against the dialect, or a text over ``_LONGEST`` characters.
    None where this op cannot make the template but another of its kind may. ``top``: the op
    is in a function's body (``return``, not ``func.return``: ``keyword``)."""
    spec = op.spec
    dialect = pr.dialect
    form = custom_form(spec, dialect)
    if form is None or spec.needs_dialect_check(op) or \
            spec.namespace == "func" and (op.results or op.regions):
        return False
    if form.spells_regions(op) or op.regions and not form.has_regions:
        return False  # (a reduce that ``applies`` its body prints no region: it may be one)
    operands = op.operands
    marked_op = op
    if len(set(map(id, operands))) != len(operands):
        # One value twice (mhlo.multiply %0, %0: a square): which name stands for which
        # operand would be ambiguous, so the stand-ins mark a copy of the op whose operands
        # are distinct values of the same types.
        if op.__class__ is not SingleResultOp:  # (one with regions is another class)
            return None
        marked_op = make_operation(spec, Block([v.type for v in operands]).arguments,
                                   (op.type,), op.attributes, (), op.location, None)
    names = pr.names
    try:
        real = form.render(pr, op)
        pr.names = {v: f"{_MARK}{i}{_MARK}" for i, v in enumerate(marked_op.operands)}
        try:
            marked = form.render(pr, marked_op)
        finally:
            pr.names = names
    except KeyError:  # a value the stand-ins do not cover: the form's path says what
        return False
    if not all(x.__class__ is str for x in real) or not all(x.__class__ is str for x in marked):
        return False
    kw = keyword(spec, dialect, top)
    text = kw + "".join(marked)
    if len(text) > _LONGEST:
        return False
    split = text.split(_MARK)
    literals = tuple(split[0::2])
    try:
        indices = tuple(int(x) for x in split[1::2])
    except ValueError:
        return False
    if len(literals) != len(indices) + 1 or any(not 0 <= i < len(operands) for i in indices):
        return False
    rebuilt = [literals[0]]
    for i, lit in zip(indices, literals[1:]):
        rebuilt.append(names[operands[i]])
        rebuilt.append(lit)
    if "".join(rebuilt) != kw + "".join(real):
        return False if marked_op is op else None  # (the copy may differ: another op may do)
    # The attribute mapping is kept with the template: the printer keys templates by its
    # id, which must not be reused by another mapping while the template lives.
    return _SHAPES.get(indices, GENERAL), literals, indices, op.attributes


def terminator_line(pr, op, indent: str, top: bool):
    """The line of a result-less op without regions or attributes (``return %3 :
    tensor<f32>``) in its custom form, from a template kept with the printer's line parts
    per op kind, operand types and whether it ends a function's body (``top``: spelled
    ``return``, not ``func.return``); None where the form's own path must print it."""
    operands = op.operands
    key = (op.spec, _TERMINATOR, top, tuple([v.type for v in operands]))
    parts = pr.fast.get(key)
    if parts is None:
        parts = template(pr, op, top)
        if parts is not None:
            pr.fast[key] = parts
    if not parts:
        return None
    names = pr.names
    lits = parts[1]
    line = [indent, lits[0]]
    for i, lit in zip(parts[2], lits[1:]):
        line.append(names[operands[i]])
        line.append(lit)
    line.append("\n" if pr.locs is None else pr.locs.line_end(op.location))
    return "".join(line)


# The second entry of terminator_line's keys: never a type, an int, a tuple or None, nor
# the printer's own markers, so never equal to what another line's key holds there.
_TERMINATOR = object()


# How a template's operand names are filled in (the printer's fast path spells out the first
# three): no operand, the one operand, operands 0 and 1 in order, or any other way.
NONE, ONE, PAIR, GENERAL = 0, 1, 2, 3
_SHAPES = {(): NONE, (0,): ONE, (0, 1): PAIR}


_TYPE = attrgetter("type")


def function_head(pr, fn) -> str:
    """``  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {``, a line. The head of
    a function without attribute dictionaries or argument locations to print, whose
    arguments ssa_names named ``%arg0``, ``%arg1``... in order (every function not edited
    by hand), depends on nothing else than its name, visibility and types: kept with the
    shared signatures under them (small generated programs print thousands of these)."""
    names, tt = pr.names, pr.type_text
    args = fn.arguments
    key = None
    if not (fn.arg_attrs or fn.res_attrs or fn.attributes) and (
            pr.locs is None or all([a.location.__class__ is UnknownLoc for a in args])):
        if all(map(is_, map(names.__getitem__, args), arg_names(len(args)))):
            key = ("pretty func.func", fn.name, fn.visibility, fn.result_types,
                   *map(_TYPE, args))
            head = pr.sigs.get(key)
            if head is not None:
                return head
        args = [f"{names[a]}: {tt(a.type)}" for a in args]
    else:
        arg_attrs = fn.arg_attrs or [None] * len(args)
        args = [f"{names[a]}: {tt(a.type)}"
                f"{f' {{{pr.named(d.items())}}}' if d else ''}{pr.loc(a.location)}"
                for a, d in zip(args, arg_attrs)]
    res_attrs = list(fn.res_attrs or ())
    res_attrs += [{}] * (len(fn.result_types) - len(res_attrs))
    if not fn.result_types:
        results = ""
    elif len(fn.result_types) == 1 and not res_attrs[0]:
        results = f" -> {tt(fn.result_types[0])}"
    else:
        results = " -> (" + ", ".join(
            tt(t) + (f" {{{pr.named(a.items())}}}" if a else "")
            for t, a in zip(fn.result_types, res_attrs)) + ")"
    vis = f"{fn.visibility} " if fn.visibility else ""
    extra = f" attributes {{{pr.named(fn.attributes.items())}}}" if fn.attributes else ""
    head = f"  func.func {vis}@{symbol_name(fn.name)}({', '.join(args)}){results}{extra} {{\n"
    if key is not None:
        pr.sigs[key] = head
    return head
