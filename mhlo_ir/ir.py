"""The program structure: values, operations, blocks, regions, functions and modules.

These are identity objects (two adds of the same operands are two operations). They are kept
small on purpose, since a program has one Operation and one result Value per op and Python's
per-object costs dominate building and printing: ``__slots__`` everywhere, tuples rather than
lists for operands and results, and no use-lists.

NOTE: every pointer back up the tree (an op's ``parent`` block, a block's region, a region's
op, an argument's block, a result's op, a function's module) is a weak reference, so that a
program holds no reference cycles: a dropped module is freed at once by reference counting,
in the memory the next one reuses, instead of waiting as cyclic garbage for Python's collector
(whose collections of dropped programs were a fifth of building and printing small modules in
a loop). Containers keep their contents alive (a module its functions, a block its ops, an op
its operands); a contained object does not keep its container alive: once the module is gone,
``op.parent`` and ``function.module`` are None.
"""

from __future__ import annotations

import itertools

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Iterable, Sequence

from .attributes import Attribute, to_attribute
from .dense import HEX_THRESHOLD
from .dialect import MHLO, Dialect
from .errors import IRError, OpBuildError
from .location import UNKNOWN, Location
from .op_attributes import OpAttributes
from .text import check_attr_name, check_string
from .types import FunctionType, TupleType, Type

if TYPE_CHECKING:
    from .builder import Builder

# What the printer writes from a Function's or Module's own fields: the same name in their
# attribute dictionary would be a second copy (jaxlib: "'sym_name' is an inferred attribute
# and should not be specified in the explicit attribute dictionary").
FUNCTION_RESERVED = frozenset({"sym_name", "sym_visibility", "function_type", "arg_attrs",
                               "res_attrs"})
MODULE_RESERVED = frozenset({"sym_name", "sym_visibility"})
# func.func's properties that a Function keeps in its attribute dictionary (no field of its
# own): MLIR's generic form writes them among the properties (``<{..., no_inline, ...}>``),
# its custom form in ``attributes {no_inline}``.
FUNCTION_PROPERTIES = frozenset({"no_inline"})


def _check_symbol(name, what):
    check_string(name, what)
    if not name:
        raise IRError(f"{what} must not be empty")

__all__ = ["Value", "OpResult", "BlockArgument", "Operation", "GeneralOperation",
           "SingleResultOp", "SingleResultRegionOp", "Block", "Region", "Function", "Module"]


class Value:
    """An SSA value: an operation's result or a block's argument. Every value has ``type``."""

    __slots__ = ()

    def __repr__(self):
        return f"<{type(self).__name__} {self.type}>"


_weak = weakref.ref


def _upward(slot: str, doc: str, shared: bool = True) -> property:
    """A property for the weak pointer up the tree held in ``slot``: reading gives the
    container (None if there is none, or nothing holds it any more); assigning one stores
    its shared ``_ref`` (``shared``: blocks and regions keep one) or a new weak reference."""
    def get(self) -> object:
        r = getattr(self, slot)
        return None if r is None else r()

    def put(self, target) -> None:
        setattr(self, slot, None if target is None else
                target._ref if shared else _weak(target))
    return property(get, put, doc=doc)


class OpResult(Value):
    """Result ``index`` of a multi-result operation ``owner``."""

    __slots__ = ("type", "_owner", "index")

    def __init__(self, type, owner, index):
        self.type = type
        self._owner = _weak(owner)
        self.index = index

    @property
    def owner(self):
        """The operation (None once nothing holds it)."""
        return self._owner()

    def __repr__(self):
        return f"<OpResult #{self.index} of {self.owner.spec.name}: {self.type}>"


class BlockArgument(Value):
    """Argument ``index`` of block ``owner``."""

    __slots__ = ("type", "_owner", "index", "location")

    def __init__(self, type, owner, index, location=UNKNOWN):
        self.type = type
        self._owner = owner._ref
        self.index = index
        self.location = location

    @property
    def owner(self):
        """The block (None once nothing holds it)."""
        return self._owner()

    def __repr__(self):
        return f"<BlockArgument #{self.index}: {self.type}>"


class Operation:
    """One operation: its spec (from the op table), operands, attributes, regions, results.

    ``attributes`` maps names to Attributes; the printer sends the names the spec declares to
    MLIR's properties (``<{...}>``) and any others (``mhlo.sharding``...) to the discardable
    dictionary, as MLIR does. It is a read-only mapping: change attributes with ``set_attr``
    (or assign a new mapping), never in place. Builders share one mapping among ops built
    from the same arguments, and printers cache its text by its identity across prints.

    NOTE: builders make an operation with exactly one result a ``SingleResultOp``, which *is*
    its result value (as a torch.fx Node is); ``make_operation`` picks the class. Most ops
    have one result, and not allocating a separate result object halves the objects per op
    that Python's cyclic GC must scan, which is what keeps per-op cost flat up to 100,000
    ops. This class holds what both layouts store; ``Operation(...)`` makes the general one
    (``GeneralOperation``: operands and results in tuples), whose two slots a single-result
    op would only carry empty (16 bytes of each op of a 100,000-op chain). ``regions`` is
    likewise a slot only of the layouts that may hold some (see SingleResultOp).
    """

    __slots__ = ("spec", "attributes", "location", "_parent", "__weakref__")

    def __new__(cls, *args, **kwargs):
        return _object_new(GeneralOperation if cls is Operation else cls)

    parent = _upward("_parent", "The block holding the op.")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def result(self) -> Value:
        """The only result (an error if there are several or none)."""
        results = self.results
        if len(results) != 1:
            raise IRError(f"'{self.spec.name}' has {len(results)} results, not one")
        return results[0]

    def attr(self, name: str, default=None):
        if self.attributes is None:
            return default
        return self.attributes.get(name, default)

    def set_attr(self, name: str, value) -> None:
        """Set an attribute (e.g. ``mhlo.sharding``, or one the op owns such as
        ``broadcast_dimensions``).

        An attribute the op's spec owns goes through the spec's own converter, as in the
        builder (``[0]`` becomes the index array the op's rules read, not an ArrayAttr); a
        value of the wrong kind raises OpBuildError naming the op and the attribute. Other
        names go through ``to_attribute``. The op is not re-checked as a whole (an edit may
        take several steps): ``Module.verify`` does that.

        Builders share one attribute mapping among ops built from the same arguments, so this
        copies before writing; treat ``attributes`` itself as read-only.
        """
        spec = self.spec
        try:
            check_attr_name(name)
        except (TypeError, ValueError) as e:
            raise OpBuildError(f"'{spec.name}' set_attr: {e}") from None
        owned = spec.attributes.get(name)
        try:
            attr = owned.convert(value) if owned is not None else to_attribute(value)
        except Exception as e:  # noqa: BLE001 - converters raise what their parsing raises
            raise OpBuildError(f"'{spec.name}' attribute {name}: {e} (got "
                               f"{type(value).__name__} {value!r:.60})") from e
        if not isinstance(attr, Attribute):  # pragma: no cover - a converter's bug
            raise OpBuildError(f"'{spec.name}' attribute {name}: the converter made "
                               f"{type(attr).__name__} {attr!r:.60}, not an Attribute")
        current = self.attributes
        if current is not None and not isinstance(current, Mapping):
            raise OpBuildError(f"'{spec.name}' attributes is {type(current).__name__} "
                               f"{current!r:.60}, not a mapping: assign one to op.attributes")
        if name == "mhlo.sharding":
            _check_sharding(attr, sharded_type(self), f"'{spec.name}'", OpBuildError)
        attrs = dict(current) if current else {}
        attrs[name] = attr
        self.attributes = OpAttributes(attrs)

    def __repr__(self):
        return f"<Operation {self.spec.name} at {id(self):#x}>"


class GeneralOperation(Operation):
    """An operation with its operands and results in tuples (any number of results; what
    ``Operation(...)`` makes). ``spec``, ``operands``, ``result_types`` and the rest as
    ``Operation`` takes them."""

    __slots__ = ("operands", "_results", "regions")

    def __init__(self, spec, operands: tuple, result_types: Sequence[Type],
                 attributes: dict | None = None, regions: tuple = (),
                 location: Location = UNKNOWN, parent=None):
        self.spec = spec
        self.operands = operands
        self.attributes = attributes
        self.regions = regions
        self.location = location
        self._parent = None if parent is None else parent._ref
        self._results = tuple([OpResult(t, self, i) for i, t in enumerate(result_types)]) \
            if result_types else ()  # (every region's return: none)
        if regions:
            for r in regions:
                r.parent = self

    @property
    def results(self) -> tuple:
        return self._results


# Marks a SingleResultOp whose ``_a`` holds the operand tuple (no operands, or more than two).
_MANY = object()


def make_operation(spec, operands, result_types, attributes=None, regions=(),
                   location=UNKNOWN, parent=None) -> Operation:
    """An Operation, as a SingleResultOp when it has exactly one result."""
    if len(result_types) == 1:
        n = len(operands)
        if n == 2:
            a, b = operands
        elif n == 1:
            a, b = operands[0], None
        else:
            a, b = tuple(operands), _MANY
        op = _new_single_result_op(spec, a, b, attributes, result_types[0], location, parent,
                                   SingleResultRegionOp if regions else SingleResultOp)
        if regions:
            op.regions = regions = tuple(regions)
            for r in regions:
                r.parent = op
        return op
    op = _object_new(GeneralOperation)  # (as _new_single_result_op: no class call)
    _general_init(op, spec, operands, result_types, attributes, regions, location, parent)
    return op


class SingleResultOp(Operation, Value):
    """An operation with exactly one result, standing for that result (``type``, ``owner``,
    ``index`` as on OpResult).

    NOTE: up to two operands are held in slots of their own rather than in a tuple. A tuple
    of values is one more object per op for Python's cyclic GC to scan, and at 100,000 ops
    those scans were half the build time; ``operands`` is rebuilt on access instead.
    An op of this exact class holds no region: its ``regions`` is the class's empty tuple,
    not a slot, and one with regions is a ``SingleResultRegionOp`` (``make_operation``
    picks). The slot would cost 16 bytes an op, not 8: objects are allocated in 16-byte
    steps, and without it a region-free op is 96 bytes instead of 112.
    """

    __slots__ = ("type", "_a", "_b")

    regions = ()

    def __init__(self, *args, **kwargs):
        raise TypeError("SingleResultOp is made by ir.make_operation (one layout, in "
                        "_new_single_result_op), not called directly")

    @property
    def operands(self) -> tuple:
        b = self._b
        if b is None:
            return (self._a,)
        if b is _MANY:
            return self._a
        return (self._a, b)

    @operands.setter
    def operands(self, values) -> None:
        values = tuple(values)
        if len(values) == 2:
            self._a, self._b = values
        elif len(values) == 1:
            self._a, self._b = values[0], None
        else:
            self._a, self._b = values, _MANY

    @property
    def results(self) -> tuple:
        return (self,)

    @property
    def owner(self):
        return self

    @property
    def index(self) -> int:
        return 0

    def __repr__(self):
        return f"<{self.spec.name}: {self.type} at {id(self):#x}>"


class SingleResultRegionOp(SingleResultOp):
    """A SingleResultOp holding regions (a reduce, a sort, a map...): ``regions`` is a slot
    here, a tuple of at least one Region, fixed when ``make_operation`` made the op."""

    __slots__ = ("regions",)


# The classes of single-result ops, and the concrete Value classes, for class-identity tests
# on hot paths (``in`` a frozenset is cheaper than isinstance with an abstract base).
SINGLE_RESULT_CLASSES = frozenset({SingleResultOp, SingleResultRegionOp})
VALUE_CLASSES = frozenset({OpResult, BlockArgument, SingleResultOp, SingleResultRegionOp})


def _new_single_result_op(spec, a, b, attributes, type_, location, parent,
                          cls=SingleResultOp):
    """A region-free SingleResultOp with operands ``a`` and ``b`` (``b`` None: one operand;
    ``b`` _MANY: ``a`` is the operand tuple): the one place its slots are laid out, for
    ``make_operation`` and the builders' hot paths alike (``cls``: SingleResultRegionOp for
    ``make_operation`` to give regions).

    NOTE: a function rather than ``SingleResultOp.__init__``: CPython (3.11) runs a plain
    function call inline in its eval loop but instantiating a class with a Python
    ``__init__`` through C, which made building an op a third slower."""
    op = _object_new(cls)
    op.spec = spec
    op._a = a
    op._b = b
    op.attributes = attributes
    op.location = location
    op._parent = None if parent is None else parent._ref
    op.type = type_
    return op


_object_new = object.__new__
_general_init = GeneralOperation.__init__


def sharded_type(op):
    """The type an op's ``mhlo.sharding`` annotates: its result's, or the tuple of its results'
    (XLA shards a multi-result op with a tuple sharding)."""
    types = tuple(r.type for r in op.results)
    return types[0] if len(types) == 1 else TupleType(types)


def _check_sharding(attr, t, where, error) -> None:
    """A sharding string that cannot annotate type ``t`` (see mhlo_ir.sharding_text) raises
    ``error`` naming ``where``, before jaxlib's conversion to HLO refuses it."""
    from .sharding_text import sharding_problem
    why = sharding_problem(attr, t)
    if why is not None:
        raise error(f"{where}: {why}")


class Block:
    """A list of operations with typed arguments; the last operation is its terminator."""

    __slots__ = ("arguments", "operations", "_parent", "_ref", "__weakref__")

    def __init__(self, arg_types: Iterable[Type] = (), arg_locations=None):
        types = tuple(arg_types)
        locs = tuple(arg_locations) if arg_locations is not None else (UNKNOWN,) * len(types)
        if len(locs) != len(types):
            raise IRError(f"block has {len(types)} argument types but {len(locs)} argument "
                          "locations")
        # Laid out here rather than through BlockArgument(...): a class call with a Python
        # __init__ costs a microsecond, and a 200-argument function made 200 of them.
        self._ref = ref = _weak(self)  # what its ops and arguments hold (one, shared)
        new, cls = _object_new, BlockArgument
        args = []
        append = args.append
        i = 0
        for t in types:
            a = new(cls)
            a.type = t
            a._owner = ref
            a.index = i
            a.location = locs[i]
            append(a)
            i += 1
        self.arguments = tuple(args)
        self.operations: list = []
        self._parent = None

    parent = _upward("_parent", "The region holding the block.")

    @property
    def arg_types(self) -> tuple:
        return tuple([a.type for a in self.arguments])

    @property
    def terminator(self):
        return self.operations[-1] if self.operations else None

    def append(self, op: Operation) -> Operation:
        op._parent = self._ref
        self.operations.append(op)
        return op


class Region:
    """A list of blocks belonging to an operation (MHLO regions have exactly one block)."""

    __slots__ = ("blocks", "_parent", "_ref", "__weakref__")

    def __init__(self, blocks: Iterable[Block] = ()):
        self.blocks = list(blocks)
        self._parent = None
        self._ref = ref = _weak(self)
        for b in self.blocks:
            b._parent = ref

    parent = _upward("_parent", "The operation holding the region (None for a function's "
                     "body).", shared=False)

    @property
    def block(self) -> Block:
        """The single block of a single-block region."""
        if len(self.blocks) != 1:
            raise IRError(f"region has {len(self.blocks)} blocks, expected 1")
        return self.blocks[0]


_is_type = isinstance
_TYPE_REPEATED = itertools.repeat(Type)


def _check_types(name: str, what: str, types: tuple) -> None:
    """TypeError for the first of a function's argument or result ``types`` (``what``) that
    is no Type, saying what to write for an element type (the rank-0 tensor)."""
    if all(map(_is_type, types, _TYPE_REPEATED)):  # (C-level: 201-argument MLPs)
        return
    from .dtypes import ElementType
    i, t = next((i, t) for i, t in enumerate(types) if not isinstance(t, Type))
    if isinstance(t, ElementType):
        raise TypeError(f"function @{name}: {what} {i} type {t.name} is not a Type ({t.name} "
                        f"is an element type: a scalar is the rank-0 tensor<{t.name}>, "
                        f"hlo.tensor((), hlo.{t.name}) when building)")
    raise TypeError(f"function @{name}: {what} {i} type {t!r} is not a Type")


class Function:
    """``func.func``: a named, typed body in a module.

    ``result_types`` may be left ``None`` until the body's ``return`` is built; it is then taken
    from the returned values.
    """

    __slots__ = ("_name", "arg_types", "result_types", "visibility", "arg_attrs", "res_attrs",
                 "attributes", "body", "location", "_module", "__weakref__")

    def __init__(self, name: str, arg_types: Sequence[Type], result_types=None, *,
                 visibility: str | None = None, arg_attrs=None, res_attrs=None,
                 attributes=None, location: Location = UNKNOWN, arg_locations=None) -> None:
        if visibility not in (None, "public", "private", "nested"):
            raise IRError(f"function @{name}: visibility must be public, private or nested, "
                          f"not {visibility!r}")
        _check_symbol(name, "function name")
        if not isinstance(location, Location):
            raise IRError(f"function @{name}: location must be a Location (hlo.NameLoc(...), "
                          f"hlo.FileLineColLoc(...)), got {type(location).__name__} "
                          f"{location!r:.60}")
        self._module = None
        self._name = name
        self.arg_types = types = tuple(arg_types)
        _check_types(name, "argument", types)
        self.result_types = None if result_types is None else tuple(result_types)
        if self.result_types:
            _check_types(name, "result", self.result_types)
        self.visibility = visibility
        self.arg_attrs = None if arg_attrs is None else _attr_dicts(
            arg_attrs, len(self.arg_types), name, "argument")
        self.res_attrs = None if res_attrs is None else _attr_dicts(
            res_attrs, len(res_attrs), name, "result")
        self.attributes = {
            check_attr_name(k, "function attribute name", reserved=FUNCTION_RESERVED):
                to_attribute(v) for k, v in attributes.items()} if attributes else {}
        self.body = Region([Block(self.arg_types, arg_locations)])
        self.location = location

    module = _upward("_module", "The module holding the function.", shared=False)

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value) -> None:
        """A rename keeps the module's symbol table (``Module.lookup``) in step, as MLIR's
        SymbolTable::rename does: the checks that find ``@main`` read the table."""
        old, self._name = self._name, value
        module = self.module
        if module is not None:
            table = module._symbols
            if table.get(old) is self:
                del table[old]
                table.setdefault(value, self)  # (a taken name: Module.verify reports it)

    @property
    def arguments(self) -> tuple:
        return self.body.blocks[0].arguments

    @property
    def entry_block(self) -> Block:
        return self.body.blocks[0]

    @property
    def type(self) -> FunctionType:
        if self.result_types is None:
            raise IRError(f"function @{self.name} has no return yet, so no result types")
        return FunctionType(self.arg_types, self.result_types)

    def set_arg_attr(self, index: int, name: str, value) -> None:
        """Set an argument attribute such as ``mhlo.sharding`` or ``tf.aliasing_output``."""
        if index.__class__ is bool or not isinstance(index, int) or \
                not 0 <= index < len(self.arg_types):
            raise IndexError(f"function @{self.name} has no argument {index}")
        check_attr_name(name, "argument attribute name", dialect=True)
        attr = to_attribute(value)
        if name == "mhlo.sharding":
            _check_sharding(attr, self.arg_types[index],
                            f"function @{self.name} argument {index}", ValueError)
        if self.arg_attrs is None:
            self.arg_attrs = [{} for _ in self.arg_types]
        self.arg_attrs[index][name] = attr

    def set_result_attr(self, index: int, name: str, value) -> None:
        """Set a result attribute (``jax.result_info``, ``mhlo.sharding``...)."""
        check_attr_name(name, "result attribute name", dialect=True)
        if index.__class__ is bool or not isinstance(index, int) or index < 0:
            raise IndexError(f"function @{self.name}: result index must be a non-negative int, "
                             f"got {index!r}")
        if self.result_types is not None and not 0 <= index < len(self.result_types):
            raise IndexError(f"function @{self.name} has no result {index}")
        n = len(self.result_types) if self.result_types is not None else index + 1
        attr = to_attribute(value)
        if name == "mhlo.sharding" and self.result_types is not None:
            _check_sharding(attr, self.result_types[index],
                            f"function @{self.name} result {index}", ValueError)
        if self.res_attrs is None:
            self.res_attrs = [{} for _ in range(n)]
        while len(self.res_attrs) <= index:
            self.res_attrs.append({})
        self.res_attrs[index][name] = attr

    def builder(self) -> Builder:
        """A Builder inserting at the end of the entry block."""
        return _lazy.Builder(self.body.blocks[0], self)

    def __repr__(self) -> str:
        return f"<Function @{self.name}>"


def _attr_dicts(dicts, n, fname, what):
    if dicts is None:
        return None
    dicts = [{check_attr_name(k, f"{what} attribute name", dialect=True): to_attribute(v)
              for k, v in (d or {}).items()} for d in dicts]
    if len(dicts) != n:
        raise IRError(f"function @{fname}: {len(dicts)} {what} attribute dictionaries for "
                      f"{n} {what}s")
    return dicts


class Module:
    """``builtin.module``: functions plus module attributes, with a symbol table.

    ``add_function`` uniquifies names (``f``, ``f_0``, ``f_1``...) unless ``exact=True``, the way
    MLIR's SymbolTable does on insertion, so generated helpers never collide. Module attributes
    need a dialect prefix (``mhlo.num_partitions``), as MLIR requires.
    """

    __slots__ = ("name", "attributes", "functions", "_symbols", "_next_suffix", "location",
                 "host_callbacks", "__weakref__")

    def __init__(self, name: str | None = None, attributes=None,
                 location: Location = UNKNOWN) -> None:
        if name is not None:
            check_string(name, "module name")  # MLIR accepts an empty module name
        if not isinstance(location, Location):
            raise IRError(f"module location must be a Location (hlo.NameLoc(...), "
                          f"hlo.FileLineColLoc(...)), got {type(location).__name__} "
                          f"{location!r:.60}")
        self.name = name
        self.attributes = {_module_attr_name(k): to_attribute(v)
                           for k, v in attributes.items()} if attributes else {}
        self.functions: list = []
        self._symbols: dict = {}
        # Per base name, the first suffix not yet tried: uniquifying the n-th "g" costs one
        # probe, not n (20,000 same-named functions took 30 s and more probing from _0).
        self._next_suffix: dict = {}
        self.location = location
        # The Python callables its host-callback ops name by index (``HostCallback``s), in
        # index order: what verify.compile hands to jaxlib. Not printed: text carries indices.
        self.host_callbacks: list = []

    def add_function(self, name: str, arg_types: Sequence[Type], result_types=None, *,
                     exact: bool = False, **kwargs) -> Function:
        """Create a function, add it to the module and return it."""
        return self.insert(Function(name, arg_types, result_types, **kwargs), exact=exact)

    def insert(self, fn: Function, *, exact: bool = False) -> Function:
        """Add ``fn``, renamed ``name_0``, ``name_1``... if its name is taken (unless
        ``exact``, which makes a taken name an IRError). Returns ``fn``."""
        name = fn._name
        if name.__class__ is not str or not name or not name.isascii():
            _check_symbol(name, "function name")  # (a name set after the Function was made)
        symbols = self._symbols
        if len(symbols) != len(self.functions):  # (functions listed or removed by hand)
            symbols = self._resync()
        base = name
        if base in symbols:
            if exact:
                raise IRError(f"module already has a symbol named @{base}")
            i = self._next_suffix.get(base, 0)
            # Names taken otherwise (an exact "g_3", a function renamed by hand) are skipped.
            while f"{base}_{i}" in symbols:
                i += 1
            self._next_suffix[base] = i + 1
            fn._name = name = f"{base}_{i}"  # (not through the setter: fn may be another
            # module's, whose table is not this one)
        symbols[name] = fn
        self.functions.append(fn)
        fn.module = self
        return fn

    def add_host_callback(self, function, name: str | None = None) -> int:
        """Append a Python callable to ``host_callbacks``; returns its index (what a callback
        op's ``backend_config = {index = N : ui64}`` names). ``Builder.host_callback`` calls
        this; call it directly when building the custom_call by hand."""
        from .ops.host_callbacks import HostCallback
        self.host_callbacks.append(HostCallback.of(function, name))
        return len(self.host_callbacks) - 1

    def lookup(self, name: str) -> Function | None:
        """The function named ``name``, or None.

        The symbol table follows ``insert`` and renames (``fn.name = ...``); functions added
        to or removed from ``functions`` by hand are found by reading the list again when the
        table disagrees with it (a miss, a count that differs). ``Module.verify`` reads it
        again in any case."""
        symbols = self._symbols
        fn = symbols.get(name)
        if fn is not None and fn._name == name and len(symbols) == len(self.functions):
            return fn
        return self._resync().get(name)

    def _resync(self) -> dict:
        """The symbol table read again from ``functions`` (the first of a name keeps it; a
        second is Module.verify's to report), each function linked to this module."""
        table: dict = {}
        for fn in self.functions:
            if isinstance(fn, Function):
                table.setdefault(fn._name, fn)
                if fn.module is not self:
                    fn.module = self
        self._symbols = table
        return table

    def set_attr(self, name: str, value) -> None:
        """Set a module attribute such as ``mhlo.num_partitions`` (a dialect prefix is
        required)."""
        self.attributes[_module_attr_name(name)] = to_attribute(value)

    def to_text(self, *, dialect: Dialect = MHLO, locations: bool = True,
                hex_threshold: int = HEX_THRESHOLD, pretty: bool = False) -> str:
        """The module as MLIR text; see ``mhlo_ir.printer.print_module`` for the options."""
        return _lazy.print_module(self, dialect=dialect, locations=locations,
                                  hex_threshold=hex_threshold, pretty=pretty)

    def verify(self) -> Module:
        """Check the whole module in Python (``mhlo_ir.verifier``); raises
        ModuleVerificationError, and no other error, for the first problem. Returns self."""
        from .verifier import verify_module
        verify_module(self)
        return self

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<Module @{self.name} with {len(self.functions)} functions>"


def _module_attr_name(name) -> str:
    return check_attr_name(name, "module attribute name", dialect=True,
                           reserved=MODULE_RESERVED)


class _Lazy:
    """Builder and print_module, imported on first use (they import this module); a
    function-level import on every call costs a microsecond."""

    def __getattr__(self, name):
        from .builder import Builder
        from .printer import print_module
        self.Builder, self.print_module = Builder, print_module
        return getattr(self, name)


_lazy = _Lazy()


def walk(module):
    """Every op of ``module`` (or of one Function) as ``(function, op)``, each function's in a
    pre-order of its regions, without recursion (a 10,000-deep nest is walked like a flat
    list)."""
    for fn in (module,) if isinstance(module, Function) else module.functions:
        stack = [fn.body]
        while stack:
            for block in stack.pop().blocks:
                for op in block.operations:
                    yield fn, op
                    if op.regions:
                        stack.extend(op.regions)


def producers(value):
    """The ops ``value`` is computed through, transitively through operands, each once
    (block arguments end a path; values an op's regions capture are not followed)."""
    seen = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v.__class__ is BlockArgument:
            continue
        op = v.owner
        if id(op) in seen:
            continue
        seen.add(id(op))
        yield op
        stack.extend(op.operands)


# Ops whose results do not depend on their operands' values, only on their static types:
# a value computed through them from constants is still a constant to XLA.
_SHAPE_ONLY_SOURCES = frozenset({"chlo.constant_like", "get_dimension_size"})


def defining_ops(value, empty_is_constant: bool = False):
    """The ops ``value`` is computed by, transitively through operands (each once), or None
    when a block argument is among its inputs: a value computed from constants alone is one
    XLA may fold, which some of its bugs need (see verify's XLA:CPU refusals). The operands
    of ops that read only their operands' static shapes (``chlo.constant_like``,
    ``get_dimension_size``) are not inputs; with ``empty_is_constant``, neither are values
    of no elements (an argument of shape 0x3 holds nothing: a dot contracting it is zeros,
    which XLA folds)."""
    seen: dict = {}
    stack = [value]
    while stack:
        v = stack.pop()
        if empty_is_constant and v is not value and \
                getattr(v.type, "num_elements", None) == 0:
            continue
        if v.__class__ is BlockArgument:
            return None
        op = v.owner
        if id(op) in seen:
            continue
        seen[id(op)] = op
        if op.spec.name not in _SHAPE_ONLY_SOURCES:
            stack.extend(op.operands)
    return list(seen.values())
