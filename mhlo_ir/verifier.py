"""Whole-module checks in pure Python, run before any text reaches jaxlib.

Builders already check each op as it is made; this pass catches what only the whole module
shows, and what editing a built module can break: values used outside the function or region
that defines them (or before their definition), blocks without terminators, ops after a
terminator, returns that disagree with the function type, calls and ``called_computations``
naming missing functions, recursive calls, attributes of the wrong kind, and ops edited into
a state their spec rejects (``OpSpec.validate``, the same check the builder runs).

Every problem is a ModuleVerificationError naming the function, the op, its location and what
was expected; whatever a module holds, no other exception escapes (an op's rules may fail on
attributes of a kind they never expected: that too is reported as the op's error).

NOTE: regions are walked with an explicit stack, so nesting depth is limited by memory, not by
Python's recursion limit. Visibility is one dict from each value to the frame of the block
that defines it: a value is visible while that frame is open (an enclosing block, or the same
block earlier), and not from inside a closed region (reduction bodies, comparators) when it
was defined outside it (a constant excepted, see ``_capturable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .attributes import ArrayAttr, Attribute, DictionaryAttr, SymbolRefAttr
from .combining import CombiningRegion, combining_recipe, recipe_problem
from .errors import ModuleVerificationError, OpBuildError
from .ir import (FUNCTION_RESERVED, walk, MODULE_RESERVED, VALUE_CLASSES, Block, BlockArgument,
                 Function, GeneralOperation, Module, Operation, OpResult, Region,
                 SingleResultOp, SingleResultRegionOp, Value, sharded_type)
from .op_attributes import OpAttributes
from .sharding_text import sharding_problem
from .signature_attrs import (alias_problem, entry_problem, module_attribute_problem,
                              shared_alias)
from .location import CallSiteLoc, FileLineColLoc, FusedLoc, Location, NameLoc, UnknownLoc
from .ops.spec import OpSpec, operand_count_error
from .text import check_attr_name
from .types import TensorType, Type
from .verifier_text import (definitions as _index, fail as _fail, fail_at as _fail_at,
                            loc as _loc, op_name as _op_name, show as _show, text as _text,
                            types as _types, types_of as _types_of, where as _where)

__all__ = ["verify_module", "call_problem"]

_OP_CLASSES = frozenset({GeneralOperation, SingleResultOp, SingleResultRegionOp})
_LOCATION_CLASSES = frozenset({UnknownLoc, NameLoc, FileLineColLoc, CallSiteLoc, FusedLoc})
_MAPPING_CLASSES = frozenset({dict, MappingProxyType})
_VISIBILITIES = (None, "public", "private", "nested")
# Frame states: not yet entered (a later region of the same op), open, closed.
_PENDING, _OPEN, _CLOSED = 0, 1, 2


def _capturable(v) -> bool:
    """Whether a closed region (a reduce body, a comparator...) may use ``v`` though it is
    defined outside: a ``constant``'s result. MLIR verifies such a use, XLA copies the
    constant into the computation, and jaxlib's own reader writes it: deserializing a
    portable artifact hoists the constants of every comparator and body out of them (any
    float ``jnp.sort``). Other values used there fail jaxlib's export."""
    return v.__class__ is SingleResultOp and v.spec.name == "constant"
_NO_ATTRS: Mapping = MappingProxyType({})


class _Frame:
    """One block being verified: where it is, and whether its values are visible now."""

    __slots__ = ("block", "pos", "depth", "floor", "floor_owner", "state", "top", "owner",
                 "region", "pending")

    def __init__(self, block, depth, floor, floor_owner, top, owner, region):
        self.block = block
        self.pos = 0
        self.depth = depth
        # Values defined in frames shallower than ``floor`` are hidden (a closed region).
        self.floor = floor
        self.floor_owner = floor_owner
        self.state = _PENDING
        self.top = top
        self.owner = owner
        self.region = region
        self.pending = None  # the op whose regions are being verified


def verify_module(module: Module, *, ops_checked: bool = False, parsed: bool = False) -> None:
    """Raise ModuleVerificationError describing the first problem found. ``ops_checked``:
    every op has passed ``OpSpec.validate`` since it last changed (the parser validates each
    op as it reads it), so only what the whole module shows is checked. ``parsed`` (with
    ``ops_checked``): the module is fresh from the parser, which resolved each use to a value
    defined before it in an enclosing block of its function and made each op as its spec
    makes it; so a region-free op outside closed regions is checked only for its place
    (terminators, returns) and the functions it names."""
    if not isinstance(module, Module):
        _fail(f"expected a Module, got {_show(module)}")
    if module.name is not None and (not isinstance(module.name, str) or "\0" in module.name):
        _fail(f"the module's name is {_show(module.name)}, not a str (or None)")
    if not isinstance(module.location, Location):
        _fail(f"the module's location is {_show(module.location)}, not a Location")
    _attr_dict(module.attributes, "module", "module attribute name", True, MODULE_RESERVED)
    for name, attr in (module.attributes or {}).items():
        if (why := module_attribute_problem(name, attr, module)) is not None:
            _fail(why)
    functions = module.functions
    if not isinstance(functions, list):
        _fail(f"module.functions must be a list of Functions, got {_show(functions)}")
    names: dict = {}
    for fn in functions:
        if not isinstance(fn, Function):
            _fail(f"module.functions holds {_show(fn)}, not a Function")
        if not isinstance(fn.name, str) or not fn.name:
            _fail(f"a function's name is {_show(fn.name)}, not a non-empty str")
        if fn.name in names:
            _fail(f"symbol @{fn.name} is defined twice")
        names[fn.name] = fn
    # The links up the tree (symbol table, function -> module, region -> op, block ->
    # region, op -> block) are read again from the lists down it, which hand edits change
    # without them: the checks that run after this one (verify's refusals) follow them.
    module._resync()
    v = _Verifier(module, names)
    v.ops_checked = ops_checked
    v.parsed = parsed and ops_checked
    for fn in functions:
        v.signature(fn)
    for fn in functions:
        v.function(fn)
    v.call_graph()
    for spec, ops in v.used.items():  # (the specs with a uses_check, and their ops)
        misuse = spec.uses_check(module, ops)
        if misuse is not None:
            fn, op, message = misuse
            _fail_at(op, f"{_where(fn, op)}: {message}")


def call_problem(module: Module) -> str | None:
    """The first reference to a function the module does not define, or the first call
    cycle (func.call, called_computations, a composite's decomposition), as a message; None
    if there is neither. Only these, for text whose other checks are jaxlib's to make: what
    jaxlib 0.10.2 crashes the process on instead of reporting (``verify`` parses text to
    find them)."""
    names = {fn.name: fn for fn in module.functions}
    v = _Verifier(module, names)
    for fn, op in walk(module):
        for name, attr in (op.attributes or {}).items():
            calling = name == "callee" or name == "called_computations" or \
                name in _CALLING_ATTRS
            for ref in _symbol_refs(attr):
                if ref.name not in names:
                    return (f"in @{fn.name}: '{_op_name(op)}' attribute {name} refers to "
                            f"@{ref.name}, which is not defined")
                if calling:
                    v.calls.setdefault(fn.name, {}).setdefault(ref.name, op)
    try:
        v.call_graph()
    except ModuleVerificationError as e:
        return str(e)
    return None


def _attr_dict(d, where, what, dialect, reserved=frozenset(), optional=False) -> None:
    if d is None and optional:
        return
    if d.__class__ not in _MAPPING_CLASSES and not isinstance(d, Mapping):
        _fail(f"{where}: attributes must be a mapping of names to Attributes, got {_show(d)}")
    for k, a in d.items():
        try:
            check_attr_name(k, what, dialect=dialect, reserved=reserved)
        except (TypeError, ValueError) as e:
            _fail(f"{where}: {e}")
        if not isinstance(a, Attribute):
            _fail(f"{where}: attribute {k} is {_show(a)}, not an Attribute")


class _Verifier:
    __slots__ = ("module", "names", "defined", "seen_blocks", "calls", "_index", "ops_checked",
                 "passed", "parsed", "alike", "used")

    def __init__(self, module, names):
        self.module = module
        self.names = names  # name -> Function, as the module will print
        self.defined: dict = {}  # Value -> _Frame of the block defining it
        self.used: dict = {}  # spec -> its ops, for the specs with a uses_check
        self.seen_blocks: set = set()
        self.calls: dict = {}  # function name -> {callee names}
        self._index = None
        self.ops_checked = False
        self.parsed = False
        # What one op passed that another with the same key passes too (see _exit_op and
        # _check_shape); ids are of OpAttributes the module holds while this runs.
        self.passed: set = set()
        # Keys of region-free single-result ops that passed every check (see function).
        self.alike: set = set()

    # -- functions -----------------------------------------------------------------------

    def signature(self, fn) -> None:
        name = fn.name
        where = f"function @{name}"
        if fn.visibility not in _VISIBILITIES:
            _fail(f"{where}: visibility must be public, private or nested, not "
                  f"{_show(fn.visibility)}")
        if not isinstance(fn.location, Location):
            _fail(f"{where}: location is {_show(fn.location)}, not a Location")
        args = fn.arg_types
        if not isinstance(args, tuple) or not all(isinstance(t, Type) for t in args):
            _fail(f"{where}: arg_types must be a tuple of Types, got {_show(args)}")
        results = fn.result_types
        if results is None:
            _fail(f"function @{name} has no return")
        if not isinstance(results, tuple) or not all(isinstance(t, Type) for t in results):
            _fail(f"{where}: result_types must be a tuple of Types, got {_show(results)}")
        _attr_dict(fn.attributes, where, "function attribute name", False, FUNCTION_RESERVED)
        entry = name == "main"  # (jaxlib reads most signature attributes there alone)
        for what, dicts, n in (("argument", fn.arg_attrs, len(args)),
                               ("result", fn.res_attrs, len(results))):
            if dicts is None:
                continue
            if not isinstance(dicts, (list, tuple)):
                _fail(f"{where}: {what} attributes must be a list of dictionaries, got "
                      f"{_show(dicts)}")
            if len(dicts) > n or (what == "argument" and len(dicts) != n):
                _fail(f"function @{name} has {what} attributes for {len(dicts)} {what}s but "
                      f"{'takes' if what == 'argument' else 'returns'} {n}")
            for i, d in enumerate(dicts):
                _attr_dict(d, f"{where}, {what} {i}", f"{what} attribute name", True,
                           optional=True)
                why = d and (entry_problem(d, (args if what == "argument" else results)[i],
                                           entry) or
                             (what == "argument" and alias_problem(i, d, args, results, entry)))
                if why:
                    _fail(f"{where}, {what} {i}: {why}")
        if entry and (why := shared_alias(fn.arg_attrs)) is not None:
            _fail(f"{where}: {why}")
        body = fn.body
        if not isinstance(body, Region) or not isinstance(body.blocks, list):
            _fail(f"{where}: body must be a Region, got {_show(body)}")
        blocks = body.blocks
        if not blocks:
            _fail(f"in @{name}: a region has no blocks")
        if len(blocks) != 1:
            _fail(f"function @{name} has {len(blocks)} blocks; functions here take exactly "
                  "one (there are no branch ops)")
        entry = blocks[0]
        if not isinstance(entry, Block):
            _fail(f"{where}: its body holds {_show(entry)}, not a Block")
        self._block_arguments(entry, where)
        got = tuple(a.type for a in entry.arguments)
        if got != args:
            _fail(f"{where}: the entry block takes {_types(got)} but the function's arg_types "
                  f"are {_types(args)} (the printed signature would disagree with its body)")

    @staticmethod
    def _block_arguments(block, where) -> None:
        args = block.arguments
        if not isinstance(args, tuple):
            _fail(f"{where}: block arguments must be a tuple, got {_show(args)}")
        for i, a in enumerate(args):
            if not isinstance(a, BlockArgument) or not isinstance(getattr(a, "type", None), Type):
                _fail(f"{where}: block argument {i} is {_show(a)}, not a BlockArgument with a "
                      "Type")

    def function(self, fn) -> None:
        """Verify ``fn``'s body, walking nested regions with an explicit stack."""
        defined = self.defined
        parsed = self.parsed
        passed = self.passed
        alike = self.alike
        stack = [_Frame(fn.body.blocks[0], 0, 0, None, True, None, 0)]
        while stack:
            fr = stack[-1]
            if fr.state == _PENDING:
                self._enter_block(fn, fr)
            op = fr.pending
            if op is not None:
                fr.pending = None
                self._exit_op(fn, op, fr)
            ops = fr.block.operations
            n = len(ops)
            i = fr.pos
            up = fr.block._ref
            # Its region-free ops are taken in a run (the outer loop resumes a block after
            # each op with regions). In a parsed module, such an op outside closed regions
            # has its uses visible and its spec's shape (see verify_module; opaque ops take
            # any number of operands): only its place and what it names are checked.
            brief = parsed and not fr.floor
            while i < n:
                op = ops[i]
                if op.__class__ not in _OP_CLASSES and not isinstance(op, Operation):
                    _fail(f"in @{fn.name}: a block holds {_show(op)}, not an Operation")
                spec = op.spec
                if not isinstance(spec, OpSpec):
                    _fail(f"in @{fn.name}: an op's spec is {_show(spec)}, not an OpSpec")
                op._parent = up
                if spec.terminator or i == n - 1:  # (other places need no check)
                    self._check_position(fn, op, spec, ops, i, fr)
                i += 1
                regions = op.regions
                if brief and not regions:
                    if fr.top and spec.terminator:
                        self._check_return(fn, op, fr)
                    self._exit_op(fn, op, fr)
                    continue
                operands = op.operands
                if not isinstance(operands, (tuple, list)):
                    _fail_at(op, f"{_where(fn, op, fr)}: operands must be a tuple of Values, got "
                             f"{_show(operands)}")
                for j, v in enumerate(operands):
                    if v.__class__ not in VALUE_CLASSES and not isinstance(v, Value):
                        _fail_at(op, f"{_where(fn, op, fr)}: "
                                 f"operand {j} is {_show(v)}, not a Value")
                    t = getattr(v, "type", None)  # (None: an edit deleted it)
                    if t.__class__ is not TensorType and not isinstance(t, Type):
                        _fail_at(op, f"{_where(fn, op, fr)}: operand {j}'s type is {_show(t)}, "
                                 "not a Type")
                    d = defined.get(v)
                    if d is None or d.state != _OPEN or d.depth < fr.floor and \
                            not _capturable(v):
                        self._bad_use(fn, op, fr, j, v, stack)
                if fr.top and spec.terminator:
                    self._check_return(fn, op, fr)
                # A region-free single-result op alike (kind, operand types, read-only
                # attribute mapping, result type) to one that passed every check below in
                # this verification passes them too: only its location's kind and its
                # result's place are its own (a layer's ops, a chain's, a lowering's).
                key = None
                if op.__class__ is SingleResultOp and spec.decided_by_types and \
                        spec.uses_check is None:  # (region-free: its exact class)
                    attrs = op.attributes
                    if attrs is None or attrs.__class__ is OpAttributes:
                        # (the spec by identity: a spec object equal to another is not it)
                        try:
                            key = (id(spec), tuple([v.type for v in operands]), id(attrs),
                                   op.type)
                            seen = key in alike
                        except Exception:  # noqa: BLE001 - an edited type that will not
                            key, seen = None, False  # hash: the full checks report it
                        if seen and op.location.__class__ in _LOCATION_CLASSES:
                            if op in defined:
                                _fail_at(op, f"{_where(fn, op, fr)}: the op appears twice in the "
                                         "module")
                            defined[op] = fr
                            continue
                self._check_shape(fn, op, spec, operands, fr)
                regions = op.regions
                # (a recipe has no block to enter: _check_shape checked it whole)
                entered = [k for k, r in enumerate(regions) if r.__class__ is not
                           CombiningRegion or r.made] if regions else ()
                if entered:
                    fr.pos = i
                    fr.pending = op
                    depth = fr.depth + 1
                    closed = spec.closed_regions
                    for k in reversed(entered):
                        stack.append(_Frame(regions[k].blocks[0], depth,
                                            depth if closed else fr.floor,
                                            op if closed else fr.floor_owner, False, op, k))
                    break
                self._exit_op(fn, op, fr)
                if key is not None and spec.name != "func.call" and (
                        key[2] == id(None) or key[2] in passed):
                    # (a call's callee is recorded per function; attributes naming
                    # symbols are checked per op: those are never alike)
                    alike.add(key)
            else:
                fr.state = _CLOSED
                stack.pop()

    def _enter_block(self, fn, fr) -> None:
        block = fr.block

        def where():  # (made on failure only: a reduction's region is entered per op)
            return (f"in @{fn.name}" if fr.owner is None else
                    f"in @{fn.name}, region {fr.region} of '{_op_name(fr.owner)}' "
                    f"(location {_loc(fr.owner)})")
        if block in self.seen_blocks:
            _fail(f"{where()}: the block already appears elsewhere in the module (a region or "
                  "block shared by two ops, or an op nested inside itself)")
        self.seen_blocks.add(block)
        args = block.arguments
        if args.__class__ is not tuple or not all(
                [a.__class__ is BlockArgument and a.type.__class__ is TensorType for a in args]):
            self._block_arguments(block, where())
        if not isinstance(block.operations, list):
            _fail(f"{where()}: a block's operations must be a list, got "
                  f"{_show(block.operations)}")
        if not block.operations:
            _fail(f"{where()}: a block has no terminator (it is empty)")
        fr.state = _OPEN
        region = fn.body if fr.owner is None else fr.owner.regions[fr.region]
        block._parent = region._ref
        if fr.owner is not None and region.parent is not fr.owner:
            region.parent = fr.owner
        defined = self.defined
        for a in block.arguments:
            defined[a] = fr

    def _check_position(self, fn, op, spec, ops, i, fr) -> None:
        """Terminators end their block, and only they do; the right one for the place."""
        last = i == len(ops) - 1
        if spec.terminator and not last:
            rest = ops[i + 1:]
            listed = ", ".join(f"'{_op_name(o)}' (location {_loc(o)})" for o in rest[:3])
            if len(rest) > 3:
                listed += f" and {len(rest) - 3} more"
            _fail_at(op, f"{_where(fn, op, fr)}: "
                     f"a terminator must be the last op of its block, but "
                     f"{len(rest)} op{'s follow' if len(rest) > 1 else ' follows'} it: {listed}")
        if last and not spec.terminator:
            _fail_at(op, f"{_where(fn, op, fr)}: the block does not end with a return")
        if spec.terminator:
            # (a function may end with MHLO's return too: jax's comparator functions for
            # approx_top_k do; jaxlib reads and runs such a function as with func.return)
            if fr.top and spec.name not in ("func.return", "return"):
                _fail_at(op, f"{_where(fn, op, fr)}: expected 'func.return' to end this function")
            elif not fr.top and spec.name != "return":
                _fail_at(op, f"{_where(fn, op, fr)}: expected 'return' to end this region")

    @staticmethod
    def _check_return(fn, op, fr) -> None:
        got = tuple(v.type for v in op.operands)
        if got != fn.result_types:
            _fail_at(op, f"{_where(fn, op, fr)}: returns {_types(got)} but @{fn.name} is declared "
                     f"to return {_types(fn.result_types)}")

    def _check_shape(self, fn, op, spec, operands, fr) -> None:
        """What the op's rules take for granted (``OpSpec.validate`` checks the rest):
        operands that are Values, their count, attributes of the kinds the spec's converters
        make, regions that are one-block Regions."""
        wrong = operand_count_error(spec, len(operands))
        if wrong is not None:
            _fail_at(op, f"{_where(fn, op, fr)}: {wrong}")
        attrs = op.attributes
        if attrs is None:
            attrs = _NO_ATTRS
        elif attrs.__class__ not in _MAPPING_CLASSES and not isinstance(attrs, Mapping):
            _fail_at(op, f"{_where(fn, op, fr)}: attributes must be a mapping of names to "
                     f"Attributes, got {_show(attrs)}")
        owned = spec.attributes
        sharding = attrs.get("mhlo.sharding")
        if sharding is not None:  # (by the op's types: not a mapping's check to remember)
            why = sharding_problem(sharding, sharded_type(op))
            if why is not None:
                _fail_at(op, f"{_where(fn, op, fr)}: {why}")
        key = (spec, id(attrs)) if attrs.__class__ is OpAttributes else None
        if key is not None and key in self.passed:
            attrs = _NO_ATTRS  # this mapping's names and kinds passed for this op kind
        elif key is not None:
            self.passed.add(key)  # (added first: a failure below ends the verification)
        for k, a in attrs.items():
            if k.__class__ is not str or not k:
                _fail_at(op, f"{_where(fn, op, fr)}: attribute name {_show(k)} is not a non-empty "
                         "str")
            if not isinstance(a, Attribute):
                _fail_at(op, f"{_where(fn, op, fr)}: attribute {k} is {_show(a)}, not an Attribute "
                         "(op.set_attr converts Python values)")
            s = owned.get(k)
            if s is not None:
                self._check_owned(fn, op, fr, k, a, s)
        regions = op.regions
        if not isinstance(regions, (tuple, list)):
            _fail_at(op, f"{_where(fn, op, fr)}: regions must be a tuple of Regions, got "
                     f"{_show(regions)}")
        for k, r in enumerate(regions):
            if r.__class__ is CombiningRegion and not r.made:
                self._check_recipe(fn, op, fr, k, r)
                continue
            if not isinstance(r, Region) or not isinstance(r.blocks, list):
                _fail_at(op, f"{_where(fn, op, fr)}: region {k} is {_show(r)}, not a Region")
            if len(r.blocks) != 1:
                _fail_at(op, f"{_where(fn, op, fr)}: a region has {len(r.blocks)} blocks; MHLO "
                         "regions take exactly one")
            if not isinstance(r.blocks[0], Block):
                _fail_at(op, f"{_where(fn, op, fr)}: region {k} holds {_show(r.blocks[0])}, not a "
                         "Block")
        if not isinstance(op.location, Location):
            _fail_at(op, f"{_where(fn, op, fr)}: location is {_show(op.location)}, not a Location")

    def _check_recipe(self, fn, op, fr, k, r) -> None:
        """A region held as its recipe (a body named by its op; its block not made): what
        the recipe holds is of the kinds it takes (``combining.recipe_problem``), and no
        other op holds it. (The rules of the op holding it read its types.)"""
        if r in self.seen_blocks:
            _fail_at(op, f"{_where(fn, op, fr)}: "
                     f"region {k} already appears elsewhere in the module "
                     "(a region shared by two ops)")
        self.seen_blocks.add(r)
        key = ("recipe", id(r.spec), r.scalar, r.result_type, r.location.__class__)
        try:
            known = key in self.passed
        except TypeError:  # (an edit put an unhashable value in)
            known = False
        if not known:
            why = recipe_problem(r)
            if why is not None:
                _fail_at(op, f"{_where(fn, op, fr)}: region {k}'s combining recipe: {why}")
            self.passed.add(key)

    @staticmethod
    def _check_owned(fn, op, fr, name, a, s) -> None:
        """An attribute the spec owns must be of the kind its converter makes: converting
        it again changes nothing (``set_attr`` and the builder store converted values)."""
        try:
            again = s.convert(a)
        except Exception as e:  # noqa: BLE001 - converters raise what their parsing raises
            _fail_at(op, f"{_where(fn, op, fr)}: "
                     f"attribute {name} is {type(a).__name__} {_text(a)}, "
                     f"which '{op.spec.name}' cannot take ({e})")
        if again is not a and again != a:
            _fail_at(op, f"{_where(fn, op, fr)}: "
                     f"attribute {name} is {type(a).__name__} {_text(a)}, "
                     f"expected {type(again).__name__} (as op.set_attr would store: "
                     f"{_text(again)})")

    def _exit_op(self, fn, op, fr) -> None:
        """The op's own rules, once its regions are known to be well formed; then its
        results become visible."""
        spec = op.spec
        attrs = op.attributes if op.attributes is not None else _NO_ATTRS
        results = op.results
        passed = self.passed
        types = ()
        try:
            if not self.ops_checked:
                types = tuple([v.type for v in op.operands])
                rtypes = tuple([r.type for r in results])
                # A region-free op's rules see only its kind, types and attributes: with a
                # read-only OpAttributes (or none), ops alike are judged alike (a layer's
                # ops, a chain's), so each distinct key runs them once per verification.
                key = None
                if attrs is _NO_ATTRS or attrs.__class__ is OpAttributes:
                    if not op.regions:
                        key = (spec, types, id(attrs), rtypes)
                    elif len(op.regions) == 1:
                        # One combining region (a reduction's): the rules see its argument
                        # and return types and its inner op's kind (that op is checked on
                        # its own), all in the recipe.
                        # (its arguments may be at the op's location: the rules read none)
                        recipe = combining_recipe(op, implied=True)
                        if recipe is not None:
                            key = (spec, types, id(attrs), rtypes, recipe[0], recipe[1],
                                   recipe[2], id(recipe[3]), recipe[4], recipe[5])
                try:
                    done = key is not None and key in passed
                except TypeError:  # an edit put an unhashable type in: the rules say so
                    key, done = None, False
                if not done:
                    spec.validate(types, attrs, rtypes, op.regions)
                    if key is not None:
                        passed.add(key)
            if spec.operand_check is not None:  # (what the operands are: per op)
                spec.operand_check(spec.name, op.operands, attrs,
                                   tuple([r.type for r in results]))
            if spec.uses_check is not None:  # (judged once the module is read: verify_module)
                self.used.setdefault(spec, []).append(op)
        except OpBuildError as e:
            message = str(e)
            prefix = f"'{spec.name}' "  # the rules' messages start with the op's name
            _fail_at(op, f"{_where(fn, op, fr)}: "
                     f"{message[len(prefix):] if message.startswith(prefix) else message}")
        except Exception as e:  # noqa: BLE001 - an op edited into a shape its rules never see
            raise ModuleVerificationError(
                f"{_where(fn, op, fr)}: the op's rules cannot read it ({type(e).__name__}: "
                f"{e}); operand types {_types(types)}, attributes "
                f"{{{', '.join(f'{k} = {_text(a)}' for k, a in attrs.items())}}}, result "
                f"types {_types_of(results)}") from e
        if spec.name == "func.call":
            self._check_call(fn, op, fr)
        elif attrs and (attrs.__class__ is not OpAttributes or id(attrs) not in passed):
            self._check_symbols(fn, op, fr, attrs)
            if attrs.__class__ is OpAttributes and _refers_to_nothing(attrs):
                passed.add(id(attrs))  # (an int: never equal to the tuples kept here too)
        defined = self.defined
        for r in results:
            if r in defined:
                _fail_at(op, f"{_where(fn, op, fr)}: the op appears twice in the module")
            defined[r] = fr

    # -- symbols -------------------------------------------------------------------------

    def _defines(self) -> str:
        names = list(self.names)
        shown = ", ".join(f"@{n}" for n in names[:8])
        if len(names) > 8:
            shown += f" and {len(names) - 8} more"
        return f"the module defines {shown}" if names else "the module defines no functions"

    def _check_call(self, fn, op, fr) -> None:
        ref = (op.attributes or _NO_ATTRS).get("callee")
        if not isinstance(ref, SymbolRefAttr):  # (ops_checked promised a checked op)
            _fail_at(op, f"{_where(fn, op, fr)}: attribute callee must be a symbol reference, got "
                     f"{_show(ref)}")
        name = ref.name
        callee = self.names.get(name)
        if callee is None:
            _fail_at(op, f"{_where(fn, op, fr)}: calls @{name}, which is not defined "
                     f"({self._defines()})")
        self.calls.setdefault(fn.name, {}).setdefault(name, op)
        args = tuple(v.type for v in op.operands)
        if args != callee.arg_types:
            _fail_at(op, f"{_where(fn, op, fr)}: passes {_types(args)} to @{name}, which takes "
                     f"{_types(callee.arg_types)}")
        results = tuple(r.type for r in op.results)
        if results != callee.result_types:
            _fail_at(op, f"{_where(fn, op, fr)}: expects {_types(results)} from @{name}, which "
                     f"returns {_types(callee.result_types)}")

    def _check_symbols(self, fn, op, fr, attrs) -> None:
        """Every symbol an op refers to (custom_call's called_computations...) must exist:
        jaxlib does not diagnose a dangling one (0.10.2 crashes the process)."""
        for name, attr in attrs.items():
            if name == "called_computations":
                if not isinstance(attr, ArrayAttr) or not all(
                        isinstance(e, SymbolRefAttr) for e in attr.elements):
                    _fail_at(op, f"{_where(fn, op, fr)}: attribute called_computations must be an "
                             f"array of function references ([@f]), got {_text(attr)}")
                for ref in attr.elements:
                    if ref.name in self.names:
                        self.calls.setdefault(fn.name, {}).setdefault(ref.name, op)
            elif name in _CALLING_ATTRS and isinstance(attr, SymbolRefAttr) and \
                    attr.name in self.names:
                # A composite's decomposition and an async op's computation are calls too:
                # jaxlib 0.10.2 crashes on a composite that decomposes into its own function.
                self.calls.setdefault(fn.name, {}).setdefault(attr.name, op)
                if name == "called_computation":
                    self._check_thread(fn, op, fr, attrs, self.names[attr.name])
                elif name == "decomposition":
                    self._check_decomposition(fn, op, fr, self.names[attr.name])
            for ref in _symbol_refs(attr):
                if ref.name not in self.names:
                    _fail_at(op, f"{_where(fn, op, fr)}: attribute {name} refers to @{ref.name}, "
                             f"which is not defined in the module ({self._defines()})")

    def _check_decomposition(self, fn, op, fr, callee) -> None:
        # jaxlib: "operand at index 0 has type 'tensor<3xf16>', but decomposition has type
        # 'tensor<3xf32>'" (and for results)
        args = tuple(v.type for v in op.operands)
        results = tuple(r.type for r in op.results)
        if args != callee.arg_types or results != callee.result_types:
            _fail_at(op, f"{_where(fn, op, fr)}: "
                     f"a composite of {_types(args)} -> {_types(results)} "
                     f"decomposes into @{callee.name}, of {_types(callee.arg_types)} -> "
                     f"{_types(callee.result_types)}: the types must be the same")

    def _check_thread(self, fn, op, fr, attrs, callee) -> None:
        # MLIR: "callee must have execution_thread attribute", "execution_thread does not
        # match the execution_thread of <callee>".
        want = attrs.get("execution_thread")
        got = (callee.attributes or {}).get("execution_thread")
        if got is None:
            _fail_at(op, f"{_where(fn, op, fr)}: "
                     f"@{callee.name} needs an execution_thread attribute "
                     f"(the op's is {_text(want)})")
        if want is not None and got != want:
            _fail_at(op, f"{_where(fn, op, fr)}: execution_thread {_text(want)} differs from "
                     f"@{callee.name}'s {_text(got)}")

    def call_graph(self) -> None:
        """No function may reach itself through calls: XLA has no recursion, and jaxlib
        0.10.2 crashes the process on such a module (func.call or called_computations)."""
        calls = self.calls
        state: dict = {}  # name -> _OPEN while on the DFS path, _CLOSED when done
        for root in calls:
            if root in state:
                continue
            path = [root]
            its = [iter(calls.get(root, ()))]
            state[root] = _OPEN
            while its:
                callee = next(its[-1], None)
                if callee is None:
                    state[path.pop()] = _CLOSED
                    its.pop()
                    continue
                s = state.get(callee)
                if s == _OPEN:
                    cycle = path[path.index(callee):] + [callee]
                    op = calls[path[-1]][callee]
                    _fail(f"{_where(self.names[path[-1]], op)}: @{callee} is called "
                          f"recursively ({' -> '.join('@' + n for n in cycle)}); XLA has no "
                          "recursion (jaxlib crashes on such a module)")
                if s is None:
                    state[callee] = _OPEN
                    path.append(callee)
                    its.append(iter(calls.get(callee, ())))

    # -- where a value comes from ------------------------------------------------------------

    def _bad_use(self, fn, op, fr, j, v, stack) -> None:
        where = f"{_where(fn, op, fr)}: operand {j} ({v.type})"
        d = self.defined.get(v)
        site = self._site(v)
        what = site[2] if site is not None else self._stray(v)
        if d is not None and d.state == _OPEN:  # hidden by a closed region
            owner = fr.floor_owner
            _fail(f"{where} is captured from outside the region of '{_op_name(owner)}' "
                  f"(location {_loc(owner)}), whose regions may use only their own arguments "
                  f"(pass the value in, or broadcast it); it is {what}")
        if site is None:
            _fail(f"{where} is not defined in this module: it is {what}")
        def_fn, def_block = site[0], site[1]
        if d is None and any(f.block is def_block and f.state == _OPEN for f in stack):
            reason = "used before its definition"
        elif def_fn is not fn:
            reason = "used outside the function that defines it"
        else:
            reason = "used outside the region that defines it"
        _fail(f"{where} is {reason}: it is {what}")

    def _site(self, v):
        """(function, block, description) of where ``v`` is defined in the module, or None.
        Built for the whole module on the first bad use (an error path only)."""
        if self._index is None:
            self._index = _index(self.module)
        return self._index.get(v)

    @staticmethod
    def _stray(v) -> str:
        if isinstance(v, (OpResult, SingleResultOp)):
            owner = v.owner
            return (f"result {v.index} of '{_op_name(owner)}' (location {_loc(owner)}), which "
                    "is in no function of this module (a value of another module, or of an op "
                    "no longer in any block)")
        if isinstance(v, BlockArgument):
            return (f"argument {v.index} of a block that is in no function of this module "
                    "(another module's, or a detached block's)")
        return _show(v)


# Op attributes that name a function the op runs (besides func.call's callee and
# custom_call's called_computations).
_CALLING_ATTRS = frozenset({"decomposition", "called_computation"})


def _refers_to_nothing(attrs) -> bool:
    """Whether ``attrs`` names no function (what _check_symbols records or checks)."""
    for name, attr in attrs.items():
        if name == "called_computations" or name in _CALLING_ATTRS:
            return False
        for _ in _symbol_refs(attr):
            return False
    return True


def _symbol_refs(attr):
    """The symbol references anywhere inside ``attr`` (arrays and dictionaries nest)."""
    stack = [attr]
    while stack:
        a = stack.pop()
        if isinstance(a, SymbolRefAttr):
            yield a
        elif isinstance(a, ArrayAttr):
            stack.extend(reversed(a.elements))
        elif isinstance(a, DictionaryAttr):
            stack.extend(v for _, v in reversed(a.items))
