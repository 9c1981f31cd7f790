"""Ops whose one region is a combining block, printed in one piece (generic form).

Most region-holding ops of a real program hold the same tiny region: a reduction's body
``^bb0(%a: T, %b: T): %c = op(%a, %b); return(%c)`` (every ``reduce_sum``, ``all_reduce``,
``reduce_window``, ``scatter``'s update). Through the printer's general path such an op
costs ten times an elementwise op's line: a generator for the region, its block's set-up,
the label, each inner op through the loop. Here its five lines are one f-string made from
the pieces the general path itself would print: the op's name, properties and signature
(``_Printer.attribute_parts``/``signature``), the label's type texts, the inner op's line
parts (``fast_parts``, shared with the fast path of the printing loop) and the return's
(``bare_parts``). Locations are asked for in the general path's order (the op's, then the
inner op's, then the return's), so ``#locN`` aliases number alike.

Anything else (several blocks or regions, block arguments with locations, a result-less or
multi-result op, an inner op reading other values, attributes that print in pieces) takes
the general path: ``line`` returns None before it has asked for any location.
"""

from __future__ import annotations

from .combining import (CombiningRegion, combining_ops, combining_recipe, recipe_problem,
                        return_spec)
from .errors import IRError
from .ir import GeneralOperation, SingleResultOp
from .location import Location, UnknownLoc
from .op_attributes import OpAttributes

__all__ = ["line", "recipe", "made"]

# What starts the key of a recipe's line template (see line).
_RECIPE_LINE = "line of a combining recipe"


def recipe(op):
    """``op``'s one region as the custom form's templates key it (``combining_recipe``'s
    types and specs) when it is a combining block whose inner op has no attributes (what a
    reduce that ``applies`` its body holds); else None."""
    made = combining_recipe(op, implied=True)  # (the custom form prints no body location)
    if made is None or made[3] is not None:
        return None
    return made[0], made[1], made[2], made[4], made[5]


def line(pr, op, indent: str):
    """The text of single-result ``op``, whose one region is a combining block, at
    ``indent``; None where the general path must print it (nothing printed or asked)."""
    region = op.regions[0]
    tkey = None
    if region.__class__ is CombiningRegion and region in pr.names:
        # Held as its recipe (a body named by its op) when ssa_names named it, as a whole
        # (decided once there: another thread may make its block meanwhile). Its line is a
        # template kept by everything it depends on but names and locations.
        attrs = op.attributes
        operands = op.operands
        if len(operands) == 2 and (attrs is None or attrs.__class__ is OpAttributes):
            a, b = operands
            tkey = (_RECIPE_LINE, op.spec, a.type, b.type, op.type,
                    id(attrs) if attrs else None, region.spec, region.scalar,
                    region.result_type, indent, pr.locs is None)
            hit = pr.fast.get(tkey)
            if hit is not None:
                # (its key holds the recipe's fields but its location, checked when the
                # template was made: an edited one is refused whatever printed before)
                if not isinstance(region.location, Location):
                    raise IRError(f"a combining region's recipe: {recipe_problem(region)}")
                names = pr.names
                n0, n1, r = names[region]
                loc = "" if pr.locs is None else _suffix(pr.locs, op.location)  # (asked first)
                return _compose(pr, hit, indent, names[op], f"{names[a]}, {names[b]}",
                                n0, n1, r, loc, region.location)
        why = recipe_problem(region)  # (the inner op's parts may be known from other ops)
        if why is not None:
            raise IRError(f"a combining region's recipe: {why}")
        t = region.scalar
        inner_spec, rt = region.spec, region.result_type
        inner_attrs = None
        inner_loc = ret_loc = region.location
        n0, n1, r = pr.names[region]
        inner = ret = None
    else:
        parts = combining_ops(op)
        if parts is None:
            return None
        inner, ret, a0, a1 = parts
        if inner.__class__ is not SingleResultOp or ret.__class__ is not GeneralOperation or \
                ret.spec.dialect_check is not None:
            return None
        if pr.locs is not None and (a0.location.__class__ is not UnknownLoc or
                                    a1.location.__class__ is not UnknownLoc):
            return None  # (the label prints them: the general path)
        t = a0.type
        if a1.type is not t:
            return None
        inner_spec, rt, inner_attrs = inner.spec, inner.type, inner.attributes
        inner_loc, ret_loc = inner.location, ret.location
        names = pr.names
        n0, n1, r = names[a0], names[a1], names[inner]

    # In the general path's order, so that a module with several faults names the same one
    # first: the op's names, signature, location and attributes, then its region's ops.
    names = pr.names
    locs = pr.locs
    spec = op.spec
    name = pr.op_names.get(spec) or pr.op_name(spec)
    head = names[op]
    operands = op.operands
    if len(operands) == 2:
        a, b = operands
        uses = f"{names[a]}, {names[b]}"
    elif len(operands) == 1:
        uses = names[operands[0]]
    else:
        uses = ", ".join([names[v] for v in operands])
    sig = pr.signature(operands, (op,))
    # (Asking for a location numbers its alias: the general path, should this op take it
    # after all, asks for this one first too.)
    loc = "" if locs is None else _suffix(locs, op.location)
    props = extra = ""
    if op.attributes:
        props, extra = pr.kept_attribute_parts(spec, op.attributes)
        if props is None:
            return None  # a big constant printed in pieces

    # The inner op's parts, as the printing loop's fast path keys them, and the return's.
    fast = pr.fast if inner_attrs is None or inner_attrs.__class__ is OpAttributes \
        else pr.own_fast
    if inner_attrs or rt is not t:
        key = (inner_spec, t, t, rt, id(inner_attrs)) if inner_attrs else \
            (inner_spec, t, t, rt)
    else:
        key = (inner_spec, t, t, t)
    inner_parts = fast.get(key)
    if inner_parts is None:
        if inner is None:
            inner, ret = _ops(region)
        inner_parts = fast[key] = pr.fast_parts(inner)
    if inner_parts is False:
        return None
    rkey = (return_spec() if ret is None else ret.spec, None, (rt,))
    ret_parts = pr.fast.get(rkey)
    if ret_parts is None:
        if ret is None:
            inner, ret = _ops(region)
        ret_parts = pr.fast[rkey] = pr.bare_parts(ret)

    # The line's literal pieces, between the names and locations _compose puts in.
    tt = pr.type_text
    inside = indent + "  "
    tts = tt(t)
    pieces = (f" = {name}(", f"){props} ({{\n{indent}^bb0(", f": {tts}, ",
              f": {tts}):\n{inside}", inner_parts[0])
    if locs is None:
        pieces += (f"{inner_parts[2]}{inside}{ret_parts[0]}",
                   f"{ret_parts[2]}{indent}}}){extra}{sig}\n")
    else:
        pieces += (inner_parts[1], f"\n{inside}{ret_parts[0]}", ret_parts[1],
                   f"\n{indent}}}){extra}{sig}")
    if tkey is not None:
        # (Strings alone: the mapping its id keys is kept alive by the entry
        # kept_attribute_parts made for it, cleared only with this one.)
        pr.fast[tkey] = pieces
    return _compose(pr, pieces, indent, head, uses, n0, n1, r, loc, inner_loc, ret_loc)


def _compose(pr, pieces, indent, head, uses, n0, n1, r, loc, inner_loc, ret_loc=None) -> str:
    """The line from its ``pieces`` and what each op has of its own: names, and without
    ``pr.locs`` nothing else; else its location's text ``loc`` (asked for first, as the
    general path does) and its inner op's and return's locations."""
    locs = pr.locs
    if locs is None:
        a, b, c, d, e, f, g = pieces
        return f"{indent}{head}{a}{uses}{b}{n0}{c}{n1}{d}{r}{e}{n0}, {n1}{f}{r}{g}"
    a, b, c, d, e, f1, h, r1, g1 = pieces
    s_in = _suffix(locs, inner_loc)
    s_ret = s_in if ret_loc is None else _suffix(locs, ret_loc)
    return (f"{indent}{head}{a}{uses}{b}{n0}{c}{n1}{d}{r}{e}{n0}, {n1}{f1}{s_in}{h}{r}{r1}"
            f"{s_ret}{g1}{loc}\n")


def _ops(region) -> tuple:
    """(inner op, return) of a recipe's region, made apart from it for their line parts (the
    region itself stays a recipe: its names are the region's)."""
    made = CombiningRegion(region.spec, region.scalar, region.result_type, region.location)
    inner, ret = made.blocks[0].operations
    return inner, ret


def made(pr, region) -> None:
    """Make a recipe's block, for the general path to print, its values named as ssa_names
    named the region."""
    n0, n1, r = pr.names[region]
    block = region.blocks[0]
    a0, a1 = block.arguments
    pr.names.update(((a0, n0), (a1, n1), (block.operations[0], r)))


def _suffix(locs, location) -> str:
    """``_Locations.suffix``, its cache hit inlined (a lowered program's ops share a few)."""
    hit = locs.cache.get(id(location))
    return hit[1] if hit is not None and hit[0] is location else locs.suffix(location)
