"""Whole-module rewrites: a new module built op by op from an old one.

Passes that replace some ops by others (the quantization lowering, the decompositions of
``mhlo_ir.decompose``) share this walk: every function is rebuilt in a new module, each old
value mapped to its new one, each op either copied onto the new values or replaced by what a
subclass's ``op`` builds. Regions are rebuilt the same way, so a replaced op inside a
reduction body or a loop is replaced there too. The old module is never changed: its ops
are shared with nothing in the new one (attribute mappings and types, which are immutable,
are).
"""

from __future__ import annotations

from .builder import Builder
from .ir import Block, Function, Module, Region, make_operation

__all__ = ["Rewriter", "rewrite_module"]


class Rewriter:
    """One function's rewrite. ``values`` maps the old program's values to the new one's;
    override ``op`` (the new results of one old op: ``copy`` keeps it) and, for passes that
    change types, ``type``."""

    def __init__(self) -> None:
        self.values: dict = {}
        # Whether the block being rebuilt is in a region of an op whose regions may use only
        # their own values (``OpSpec.closed_regions``: reduce, sort, map bodies...).
        self.closed = False

    def type(self, t):
        """The new program's type for ``t``."""
        return t

    def block(self, old: Block, new: Block, fn: Function | None) -> None:
        """Rebuild ``old``'s ops at the end of ``new`` (whose arguments stand for old's)."""
        for a, b in zip(old.arguments, new.arguments):
            self.values[a] = b
        self.ops(Builder(new, fn), old.operations)

    def ops(self, b: Builder, ops) -> None:
        """Rebuild ``ops`` with ``b``, each at its own location, mapping their results."""
        values = self.values
        made = b.block.operations
        for op in ops:
            b.location = op.location
            start = len(made)
            new = self.op(b, op)
            for r, v in zip(op.results, new):
                values[r] = v
            if op.attributes and len(new) == 1 and len(made) > start:
                _carry_discardable(op, new[0], made[start:])

    def inline(self, b: Builder, block: Block, args) -> list:
        """``block``'s ops rebuilt with ``b`` (not a block of their own) on the new values
        ``args`` for its arguments; the new values its terminator returns."""
        values = self.values
        for a, v in zip(block.arguments, args):
            values[a] = v
        *body, term = block.operations
        self.ops(b, body)
        return [values[v] for v in term.operands]

    def region(self, old: Region) -> Region:
        blocks = []
        for ob in old.blocks:
            nb = Block([self.type(a.type) for a in ob.arguments],
                       [a.location for a in ob.arguments])
            self.block(ob, nb, None)
            blocks.append(nb)
        return Region(blocks)

    def copy(self, b: Builder, op) -> tuple:
        """``op`` again on the new values (its types through ``type``, its regions
        rebuilt)."""
        operands = tuple(self.values[v] for v in op.operands)
        types = [self.type(r.type) for r in op.results]
        saved, self.closed = self.closed, bool(op.spec.closed_regions)
        regions = tuple(self.region(r) for r in op.regions)
        self.closed = saved
        new = make_operation(op.spec, operands, types, op.attributes, regions, op.location,
                             b.block)
        b.block.operations.append(new)
        return new.results

    def op(self, b: Builder, op) -> tuple:
        """The new results standing for ``op``'s, built with ``b`` (at ``op``'s location)."""
        return self.copy(b, op)


def rewrite_module(module: Module, rewriter: type = Rewriter, *args) -> Module:
    """A new module: each function of ``module`` rebuilt by a fresh ``rewriter(*args)``
    (attributes, visibility, locations and host callbacks kept), then verified."""
    out = Module(module.name, attributes=dict(module.attributes or {}),
                 location=module.location)
    for fn in module.functions:
        r = rewriter(*args)
        new = Function(fn.name, [r.type(t) for t in fn.arg_types],
                       None if fn.result_types is None else
                       [r.type(t) for t in fn.result_types],
                       visibility=fn.visibility, arg_attrs=fn.arg_attrs, res_attrs=fn.res_attrs,
                       attributes=fn.attributes, location=fn.location,
                       arg_locations=[a.location for a in fn.arguments])
        out.insert(new, exact=True)
        r.block(fn.entry_block, new.entry_block, new)
    out.host_callbacks = list(module.host_callbacks)
    out.verify()
    return out


def _carry_discardable(op, value, made) -> None:
    """Give the op that now computes ``op``'s one result (``value``, made by ``op``'s
    rewrite among ``made``) the discardable attributes ``op`` held (``mhlo.sharding``,
    ``mhlo.frontend_attributes``...: what its spec does not own), where it lacks them: a
    replaced op's sharding annotates the value that stands for its result."""
    spec_attrs = op.spec.attributes
    extra = [(k, v) for k, v in op.attributes.items() if k not in spec_attrs]
    owner = getattr(value, "owner", None)
    if not extra or owner is None or owner.attributes is op.attributes or \
            len(owner.results) != 1 or not any(o is owner for o in made):
        return
    for k, v in extra:
        if owner.attr(k) is None:
            owner.set_attr(k, v)
