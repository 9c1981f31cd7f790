"""Combining regions: the one-block region most region-holding ops of a program hold,

    ^bb0(%a: T, %b: T):
      %c = inner(%a, %b)
      return(%c)

(every reduction's body, reduce_window's, all_reduce's, scatter's update, sort's comparator),
told from others and made anew in one place: the parser makes such an op whole from one it
read before (``mhlo_ir.parse_regions``, ``parse_templates``), and the verifier judges such
ops alike once (their rules see the region's types and its inner op's kind only).

A body named by its op (``b.reduce(x, zero, [1], "add")``, what every reduction JAX lowers
builds) is a ``CombiningRegion``: the region holds its recipe and makes its block on first
access, and the printer writes it from the recipe, so a program's reductions cost no block.
"""

from __future__ import annotations

import functools
import threading

from .errors import IRError, OpBuildError
from .ir import Block, Region, _weak, make_operation
from .location import UNKNOWN
from .op_attributes import OpAttributes
from .terminated import terminated

__all__ = ["CombiningRegion", "combines", "recipe_problem", "region_types", "combining_ops",
           "combining_recipe", "combining_regions"]

_BLOCKS = Region.__dict__["blocks"]  # the base class's slots, under CombiningRegion's properties
_REF = Region.__dict__["_ref"]
_MAKING = threading.Lock()


class CombiningRegion(Region):
    """The region ``^bb0(%a: T, %b: T): %c = inner(%a, %b); return(%c)`` held as its recipe
    (``inner``'s spec, ``T``, the inner op's result type, the location of both ops): a
    Region like any other to whoever reads ``blocks`` (made then, once, and from then on
    the region's own, to read and edit), printed from the recipe while nobody has.

    NOTE: a reduction's body made eagerly is a Block, two BlockArguments, two ops, two
    weak references and three containers: a dozen objects for Python's cyclic GC where an
    elementwise op is one, and the most of building and printing a ``reduce_sum``. The
    printer (``print_combining``), the numbering (``ssa_names``) and the verifier read the
    recipe while ``made`` is False; anything else reads ``blocks``. The recipe's fields stay
    as they were once the block is made (another thread may make it while a printer reads
    them: what the printer decided from ``made`` stays true), but no longer describe the
    region: its block does.
    """

    __slots__ = ("spec", "scalar", "result_type", "location", "made")

    def __init__(self, spec, scalar, result_type, location=UNKNOWN):
        self.spec = spec
        self.scalar = scalar
        self.result_type = result_type
        self.location = location
        self.made = False
        self._parent = None

    @property
    def blocks(self) -> list:
        if not self.made:
            return self._make()
        return _BLOCKS.__get__(self)

    @blocks.setter
    def blocks(self, blocks) -> None:
        if not self.made:
            self._make()  # (the recipe no longer says what the region holds)
        _BLOCKS.__set__(self, blocks)

    @property
    def _ref(self):
        if not self.made:
            self._make()
        return _REF.__get__(self)

    @_ref.setter
    def _ref(self, ref) -> None:  # (copy.copy restores the slot)
        _REF.__set__(self, ref)

    def _make(self) -> list:
        """The block the recipe describes, made once (under a lock: two threads reading
        ``blocks`` at once get the same block). A recipe edited into something else is an
        IRError saying what."""
        with _MAKING:
            if self.made:
                return _BLOCKS.__get__(self)
            why = recipe_problem(self)
            if why is not None:
                raise IRError(f"a combining region's recipe: {why}")
            t, loc = self.scalar, self.location
            block = _block(t, t, self.spec, None, self.result_type, return_spec(), loc, loc)
            terminated(block, block.operations[-1])  # (as a builder's region is)
            ref = _weak(self)
            _REF.__set__(self, ref)
            block._parent = ref
            blocks = [block]
            _BLOCKS.__set__(self, blocks)
            self.made = True
            return blocks


def combines(spec) -> bool:
    """Whether ``spec`` can be a combining recipe's inner op: a binary elementwise op with
    no attributes or regions (add, maximum, and...), what a body named by its op names."""
    return getattr(spec, "chapter", None) == "elementwise" and len(spec.operands) == 2 and \
        not spec.attributes and not spec.regions


def recipe_problem(region) -> str | None:
    """What is wrong with ``region``'s recipe fields (edited into other values), or None:
    an op ``combines`` takes, a rank-0 tensor type, the result type the op gives for two
    of it, a Location."""
    from .location import Location
    from .types import TensorType, Type
    spec, t, rt = region.spec, region.scalar, region.result_type
    if not combines(spec):
        return (f"the inner op is {spec!r:.60}, not a binary elementwise op (add, maximum, "
                "and...)")
    if t.__class__ is not TensorType or t.rank != 0:
        return f"the scalar type is {t!r:.60}, not a rank-0 tensor type"
    if not isinstance(rt, Type):
        return f"the result type is {rt!r:.60}, not a Type"
    if not isinstance(region.location, Location):
        return f"the location is {region.location!r:.60}, not a Location"
    try:
        spec.validate((t, t), None, (rt,), ())
    except OpBuildError as e:
        return f"its inner op: {e}"
    return None


@functools.cache
def return_spec():
    """The op table's ``return`` (looked up on first use: the table imports this module)."""
    from .ops.spec import REGISTRY
    return REGISTRY["return"]


def region_types(region):
    """``(argument types, returned types)`` of ``region`` when it is a recipe (its block not
    made: an op's checks read its types without making it); else None."""
    if region.__class__ is CombiningRegion and not region.made:
        t = region.scalar
        return (t, t), (region.result_type,)
    return None


def combining_ops(op):
    """``(inner, return, %a, %b)`` when ``op``'s one region is one block
    ``^bb0(%a, %b): %c = inner(%a, %b); return(%c)`` (the return without attributes); else
    None. What the printer's one-piece path and ``combining_recipe`` both ask first."""
    regions = op.regions
    if len(regions) != 1 or len(regions[0].blocks) != 1:
        return None
    block = regions[0].blocks[0]
    ops = block.operations
    args = block.arguments
    if len(ops) != 2 or len(args) != 2:
        return None
    inner, ret = ops
    x, y = args
    if ret.attributes or ret.regions or ret.results or inner.regions or \
            len(inner.results) != 1 or tuple(inner.operands) != (x, y) or \
            tuple(ret.operands) != inner.results:
        return None
    return inner, ret, x, y


def combining_recipe(op, implied: bool = False):
    """``(type of %a, type of %b, inner spec, its attributes, its result type, return spec,
    inner location, return location)`` when ``op``'s one region is a combining block
    (``combining_ops``) whose arguments have no location and whose inner op's attributes
    are read-only (what a reduction holds); else None.

    ``implied``: arguments located where the whole block and ``op`` are (one location
    object) are taken too: the body MLIR makes of a reduce's ``applies mhlo.add``, which the
    custom form implies rather than spells (who asks must tell it from one without
    locations, by comparing the inner location with ``op.location``)."""
    regions = op.regions
    if len(regions) == 1:
        r = regions[0]
        if r.__class__ is CombiningRegion and not r.made:  # (not made to be read)
            t, loc = r.scalar, r.location
            return (t, t, r.spec, None, r.result_type, return_spec(), loc, loc)
    parts = combining_ops(op)
    if parts is None:
        return None
    inner, ret, x, y = parts
    if x.location is not UNKNOWN or y.location is not UNKNOWN:
        loc = op.location
        if not implied or x.location is not loc or y.location is not loc or \
                inner.location is not loc or ret.location is not loc:
            return None
    attributes = inner.attributes
    if attributes is not None and attributes.__class__ is not OpAttributes:
        return None
    return (x.type, y.type, inner.spec, attributes, inner.results[0].type, ret.spec,
            inner.location, ret.location)


def combining_regions(recipe, inner_location, return_location,
                      argument_location=UNKNOWN) -> tuple:
    """The one region ``recipe`` (``combining_recipe``'s first six) describes, new, as a
    regions tuple, its ops and arguments at the locations given (a CombiningRegion where
    the recipe fits one)."""
    t0, t1, spec, attributes, rt, ret_spec = recipe
    if attributes is None and t0 is t1 and getattr(t0, "shape", None) == () and \
            inner_location is return_location and argument_location is UNKNOWN and \
            ret_spec.name == "return" and combines(spec):
        return (CombiningRegion(spec, t0, rt, inner_location),)  # (a reduce_sum's, mostly)
    return (Region([_block(t0, t1, spec, attributes, rt, ret_spec, inner_location,
                           return_location, argument_location)]),)


def _block(t0, t1, spec, attributes, rt, ret_spec, inner_location, return_location,
           argument_location=UNKNOWN) -> Block:
    """The block ``^bb0(%a: t0, %b: t1): %c = spec(%a, %b); ret_spec(%c)``, new."""
    block = Block((t0, t1), None if argument_location is UNKNOWN else
                  (argument_location, argument_location))
    x, y = block.arguments
    inner = make_operation(spec, (x, y), (rt,), attributes, (), inner_location, block)
    ops = block.operations
    ops.append(inner)
    ops.append(make_operation(ret_spec, (inner,), (), None, (), return_location, block))
    return block
