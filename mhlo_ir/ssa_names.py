"""SSA value names as MLIR's printer gives them: what the printer writes for each value.

The generic form numbers the whole module with one counter for op results (``%0``, ``%1``,
``%5#1`` for a multi-result op's second) and one for block arguments (``%arg0``...), region by
region from a stack, the regions an op holds numbered after the ops of the region holding it
and the last one first (so the last function gets ``%arg0``). The custom form numbers each
region from its parent's counters and lets op forms name values (``number_pretty``).

Each function takes the printer ``p`` and fills its ``names`` (value -> text) and ``headers``
(a multi-result op -> ``"%5:2 = "``); the name texts themselves are shared, immutable tuples.
"""

from __future__ import annotations

from .combining import CombiningRegion
from .compact_reduce import compact_reducer
from .ir import SINGLE_RESULT_CLASSES as SINGLE, SingleResultRegionOp

__all__ = ["number", "unflatten", "number_regions", "number_pretty", "value_names",
           "arg_names", "Renumber"]


def number(p, module) -> None:
    """Name every value as MLIR's generic print does: a stack of regions, each region's
    block arguments (``%argN``) and op results (``%N``, ``%N#i``) numbered before the
    regions its ops hold, which are numbered last one first.

    NOTE: a module of one function with one block (every generated program, every
    chain) names its block's ops in one C-level pass, ``%0``, ``%1``..., as if each had
    exactly one result and no regions, which the printing loop's fast path checks op by
    op anyway: the first op it finds otherwise calls ``unflatten``, which finishes the
    numbering from there. That saves a Python pass over the ops, a sixth of printing.
    A hand-edited block that lists one op (or argument) twice is numbered the full way,
    and a value used before the op naming it (a later multi-result op's result, a later
    region's argument) makes the print start over the full way (``KeyError`` in
    ``print_module``): positions, not identities, decide names there."""
    fns = module.functions
    if p.flat is None and len(fns) == 1 and len(fns[0].body.blocks) == 1:
        block = fns[0].body.blocks[0]
        names = p.names
        args = block.arguments
        names.update(zip(args, arg_names(len(args))))
        ops = block.operations
        names.update(zip(ops, value_names(p, len(ops))))
        if len(names) == len(args) + len(ops):  # each op and argument once
            p.flat = block
            return
        names.clear()
    number_regions(p, [fn.body for fn in fns], 0, 0)


def unflatten(p, block, op) -> None:
    """Finish the numbering ``number`` began ahead for ``block``, whose printing loop met
    ``op``: not a region-free single-result op. The ops before it were, so their names
    (one number each) stand; so do those of the ops after it as long as each has a
    result (a multi-result op takes one number too). A result-less op before the end
    would shift them, after the loop may have printed some (a use before its
    definition): ``Renumber`` then starts the print over, numbered first."""
    ops = block.operations
    p.flat = False
    next_value = k = ops.index(op)
    nested = []
    last = len(ops) - 1
    for i in range(k, len(ops)):
        o = ops[i]
        if o.__class__ in SINGLE:
            next_value += 1
        else:
            results = o.results
            if results:
                _name_results(p, o, results, next_value)
                next_value += 1
            elif i != last:
                raise Renumber
        if o.regions:
            nested.extend(o.regions)
    # As number_regions leaves them after the entry block: popped last op's first.
    number_regions(p, nested, next_value, len(block.arguments))


def number_regions(p, stack: list, next_value: int, next_arg: int) -> None:
    """Number the regions on ``stack`` (the last first) and those nested in them."""
    names = p.names
    pop, push = stack.pop, stack.append
    while stack:
        region = pop()
        if region.__class__ is CombiningRegion and not region.made:
            holder = region.parent
            if holder.__class__ is SingleResultRegionOp and len(holder.regions or ()) == 1:
                # Printed from its recipe (print_combining): its two arguments and the
                # inner op's result named as its block's would be, for the region.
                names[region] = (f"%arg{next_arg}", f"%arg{next_arg + 1}",
                                 value_names(p, next_value + 1)[next_value])
                next_arg += 2
                next_value += 1
                continue
        nested = []
        for block in region.blocks:
            for a in block.arguments:
                names[a] = f"%arg{next_arg}"
                next_arg += 1
            ops = block.operations
            vn = value_names(p, next_value + len(ops))
            for op in ops:
                if op.__class__ in SINGLE:
                    names[op] = vn[next_value]
                    next_value += 1
                    if op.regions:
                        nested.extend(op.regions)
                    continue
                results = op.results
                if results:
                    _name_results(p, op, results, next_value)
                    next_value += 1
                if op.regions:
                    nested.extend(op.regions)
        for r in nested:
            push(r)

def _name_results(p, op, results: tuple, n: int) -> None:
    """Name the results of ``op``, not a single-result op, numbered ``n``: ``%n`` for one
    result; ``%n#0``, ``%n#1``... and the line's head ``%n:2 = `` for several."""
    names = p.names
    if len(results) == 1:
        names[results[0]] = f"%{n}"
    else:
        for i, r in enumerate(results):
            names[r] = f"%{n}#{i}"
        p.headers[op] = f"%{n}:{len(results)} = "


def number_pretty(p, module) -> None:
    """SSA names as MLIR's default (custom-form) print gives them. Unlike its generic
    print, each region starts from the counters its parent region ended with (so every
    function starts at ``%arg0`` and ``%0``, and sibling regions share numbers); results
    and region arguments may be named by their op's form (``Form.result_names``,
    ``Form.arg_name``: ``%values``, ``%iterArg``, StableHLO's ``%c``), made unique
    against the names visible in the region by MLIR's ``_N`` suffixes, one counter
    of which each region also restores."""
    names, headers, dialect = p.names, p.headers, p.dialect
    # (region, its op's form, next value, next argument, next conflict, visible names)
    stack = [(fn.body, None, None, 0, 0, 0, {}) for fn in module.functions]
    while stack:
        region, form, owner, nv, na, nc, visible = stack.pop()
        if region.__class__ is CombiningRegion and not region.made and \
                owner.spec.name == "reduce" and compact_reducer(owner) is not None:
            continue  # (printed as `applies`: a recipe's values are never printed)
        used = dict(visible)

        def unique(name):
            nonlocal nc
            if name not in used:
                used[name] = True
                return name
            while True:
                probe = f"{name}_{nc}"
                nc += 1
                if probe not in used:
                    used[probe] = True
                    return probe

        prenamed = form is not None and form.arg_name and dialect.name in form.dialects
        if prenamed:
            given = form.arg_name
            if given.__class__ is str:
                for block in region.blocks:
                    for a in block.arguments:
                        names[a] = "%" + unique(given)
            elif region.blocks:
                for a, n in zip(region.blocks[0].arguments, given(owner)):
                    names[a] = "%" + unique(n)
        nested = []
        for bi, block in enumerate(region.blocks):
            args = block.arguments
            if not bi and not used and not prenamed and args and names.keys().isdisjoint(args):
                # A function's arguments: %arg0, %arg1... (nothing named yet to clash with)
                texts = arg_names(na + len(args))[na:na + len(args)]
                names.update(zip(args, texts))
                used.update(dict.fromkeys([t[1:] for t in texts], True))
                na += len(args)
                args = ()
            for a in args:
                if a in names:
                    continue
                if bi == 0:
                    names[a] = "%" + unique(f"arg{na}")
                    na += 1
                else:
                    names[a] = f"%{nv}"
                    nv += 1
            ops = block.operations
            vn = value_names(p, nv + len(ops))
            for op in ops:
                spec_form = op.spec.pretty
                if op.__class__ in SINGLE and (
                        spec_form is None or not spec_form.result_names or
                        not spec_form.names_for(op, dialect)):
                    names[op] = vn[nv]  # numbered: most ops (and MHLO's constants)
                    nv += 1
                    if op.regions:
                        nested.extend([(r, spec_form or None, op) for r in op.regions])
                    continue
                results = op.results
                given = spec_form.names_for(op, dialect) if spec_form and results else ()
                if given:
                    texts = ["%" + unique(n) for n in given]
                    for r, t in zip(results, texts):
                        names[r] = t
                    if len(results) != 1:
                        headers[op] = ", ".join(texts) + " = "
                elif len(results) == 1:
                    names[results[0]] = f"%{nv}"
                    nv += 1
                elif results:
                    for i, r in enumerate(results):
                        names[r] = f"%{nv}#{i}"
                    headers[op] = f"%{nv}:{len(results)} = "
                    nv += 1
                for r in op.regions:
                    nested.append((r, spec_form or None, op))
        for r, f, o in nested:
            stack.append((r, f, o, nv, na, nc, used))

def value_names(p, n: int):
    """``("%0", "%1", ...)`` with at least ``n`` entries: formatting an int per value was a
    third of the numbering pass. The first ``_NAMES_CAP`` are one immutable tuple shared
    by all printers (replaced whole, never changed, so threads cannot see it half
    made); a bigger module extends a list of its own."""
    vn = p.vn
    if len(vn) >= n:
        return vn
    global _SHARED_NAMES
    shared = _SHARED_NAMES
    if n <= _NAMES_CAP:
        if len(shared) < n:
            shared = tuple([f"%{i}" for i in range(min(max(n, 2 * len(shared), 1024),
                                                       _NAMES_CAP))])
            _SHARED_NAMES = shared
        p.vn = shared
        return shared
    own = vn if vn.__class__ is list else list(shared)
    own.extend([f"%{i}" for i in range(len(own), max(n, 2 * len(own)))])
    p.vn = own
    return own


class Renumber(Exception):
    """A block named ahead holds a result-less op before its end (see unflatten)."""


def arg_names(n: int) -> tuple:
    """``("%arg0", "%arg1", ...)`` with at least ``n`` entries (see value_names)."""
    global _ARG_NAMES
    names = _ARG_NAMES
    if len(names) < n:
        names = tuple([f"%arg{i}" for i in range(max(n, 2 * len(names), 64))])
        if n <= _NAMES_CAP:
            _ARG_NAMES = names
    return names


_ARG_NAMES: tuple = ()
_SHARED_NAMES: tuple = ()
_NAMES_CAP = 1 << 18  # 262,144 names, ~15 MB once a module that large has been printed
