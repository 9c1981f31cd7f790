"""The Builder: creates operations at an insertion point, checking and inferring types.

There is no global state: a Builder holds its block (and, for a function body, its function)
and is passed to whoever builds. Region bodies are Python functions that receive a Builder for
the new block and its arguments, and return the values the region yields.

Every op in the table can be built with ``create``; the named methods are thin, typed front
doors to it. The elementwise ones are generated here from the table's families; the others are
declared in their chapters of ``mhlo_ir.ops`` next to their specs (``builder_method``) and
attached to Builder when this module loads.
"""

from __future__ import annotations

from contextlib import contextmanager
from types import FunctionType
from typing import Callable, Iterator, Sequence, Union

from .errors import OpBuildError
from .ir import (VALUE_CLASSES, Block, Function, Operation, Region, Value,
                 _new_single_result_op, make_operation)
from .location import UNKNOWN, Location, checked_location, loc as make_loc
from .ops import REGISTRY
from .ops.elementwise import BINARY, UNARY
from .ops.args import as_results, check_values
from .ops.construct import validate as _validate
from .ops.control_flow import combining_region as _combining_region
from .ops.spec import BUILDER_METHODS, fail
from .types import Type
from .region_bodies import ARITY as _ARITY, arity as _arity, arity_error as _arity_error
from .region_bodies import bad_results as _bad_results
from .terminated import terminated as _terminated
from .weak_scalars import weak_pair as _weak_pair

__all__ = ["Builder", "Results", "as_results"]

# What builder methods return: a Value for one result, a tuple of Values for several, the
# Operation for none (see ``mhlo_ir.ops.args.results``; ``as_results`` undoes it).
Results = Union[Value, tuple, Operation]

_RESERVED = {"and", "or", "not", "if", "while", "return"}
_RETURN = REGISTRY["return"]
_FUNC_RETURN = REGISTRY["func.return"]


def _method_name(op: str) -> str:
    return op + "_" if op in _RESERVED else op


_values = check_values


class Builder:
    """Builds operations at the end of ``block``.

    ``location`` is the default location for new ops (see ``at_location``); ``function`` is set
    when ``block`` is a function's body, which makes ``return_`` emit ``func.return`` and fix
    the function's result types.

    Every method that builds an op returns its results the same way: the result Value when
    the op has one, a tuple of Values when it has several (``while_`` over a state of two,
    ``custom_call`` with two result types, ``reduce`` of two inputs...), and the Operation
    itself when it has none (``return_``, ``trace``, a result-less ``custom_call``, ``if_``
    or ``call``). A list of one input gives a Value too; ``as_results`` turns any of these
    into a tuple for code generic over result counts. ``create`` is the exception: it always
    returns the Operation.

    Mistakes are OpBuildErrors raised when the op is built, naming the op, the operand or
    attribute and expected versus actual; that includes constants their type cannot hold,
    non-integer dimensions, region bodies of the wrong arity and ops built after the block's
    terminator (``return_``).
    """

    __slots__ = ("block", "function", "location", "enclosing", "_module")

    def __init__(self, block: Block, function: Function | None = None,
                 location: Location = UNKNOWN, enclosing: Function | None = None) -> None:
        self.block = block
        self.function = function
        # The program points up to its module only weakly (mhlo_ir.ir): a builder keeps the
        # module it builds into alive, so that ``builder.function.module`` stays usable.
        self._module = None if function is None else function.module
        self.location = location
        # The function this block is in, however deeply nested (a region's block is built
        # before the op that will hold it exists, so it cannot be found by walking up).
        self.enclosing = function if enclosing is None else enclosing

    def __repr__(self) -> str:
        block = self.block
        ops = block.operations
        if self.function is not None:
            where = f"@{self.function.name}'s entry block"
        else:
            owner = getattr(getattr(block, "parent", None), "parent", None)
            spec = getattr(owner, "spec", None)
            where = f"a region block of '{spec.name}'" if spec is not None else \
                "a region block"
        n_args = len(block.arguments)
        state = "terminated by " + repr(ops[-1].spec.name) if ops and \
            ops[-1].spec.terminator else "open"
        loc = "" if self.location is UNKNOWN else f", location {self.location.render()}"
        return (f"<Builder at the end of {where}: {n_args} argument{'s' if n_args != 1 else ''}, "
                f"{len(ops)} op{'s' if len(ops) != 1 else ''}, {state}{loc}>")

    # -- generic -----------------------------------------------------------------------------

    def create(self, name: str, operands: Sequence = (), attributes: dict | None = None,
               result_types: Sequence[Type] | None = None, regions: Sequence[Region] = (),
               location: Location | None = None) -> Operation:
        """Build any op of the table by name. Variadic operand groups are passed as lists.

        Attributes are converted with the spec's converters (so Python values work); result
        types are inferred when the op allows it, and checked when given.
        """
        spec, operands, attrs, result_types, regions = _validate(
            name, operands, attributes, result_types, regions)
        block = self.block
        op = make_operation(spec, operands, result_types, attrs, regions,
                            self.location if location is None
                            else checked_location(location), block)
        block.operations.append(op)
        return op

    def _one(self, *args, **kwargs) -> Value:
        return self.create(*args, **kwargs).results[0]

    # -- locations ---------------------------------------------------------------------------

    @contextmanager
    def at_location(self, where, line: int | None = None,
                    column: int = 0) -> Iterator[Builder]:
        """``with b.at_location("model.py", 3, 7): ...``: ops built inside get this location."""
        saved = self.location
        self.location = make_loc(where, line, column)
        try:
            yield self
        finally:
            self.location = saved

    # -- regions -----------------------------------------------------------------------------

    def region(self, arg_types: Sequence[Type], body: Callable | str, *, op: str = "region",
               what: str = "body", arg_names: Sequence[str] | None = None) -> Region:
        """A one-block region: ``body(builder, *args)`` builds it and returns what it yields.

        If ``body`` returns a value or a sequence of values, a ``return`` is appended; if it
        returns None it must have built its own terminator. ``body`` must take the builder
        and one argument per block argument; otherwise the OpBuildError names ``op``, the
        region (``what``) and its arguments (``arg_names``) and shows the lambda to write.

        A region of two scalar arguments of one type (a reduction's, a window's, an
        all-reduce's, a scatter's update) may name a binary elementwise op instead:
        ``"add"`` is ``lambda b, x, y: b.add(x, y)``, built without the call.
        """
        if isinstance(body, str):
            return _named_body(self, tuple(arg_types), str(body), op, what)
        arg_types = tuple(arg_types)
        n = len(arg_types) + 1
        # A lambda without defaults (the usual body) is looked up by its code object alone.
        arity = _ARITY.get(body.__code__) if body.__class__ is FunctionType and \
            body.__defaults__ is None and body.__kwdefaults__ is None else None
        if arity is None:
            arity = _arity(body)
        if arity is not None and (n < arity[0] or (arity[1] is not None and n > arity[1])
                                  or arity[2]):
            _arity_error(op, what, body, arity, arg_names, len(arg_types))
        block = Block(arg_types)
        inner = Builder(block, None, self.location, self.enclosing)
        out = body(inner, *block.arguments)
        if out is not None:
            if out.__class__ in VALUE_CLASSES:
                inner.return_(out)
            elif out.__class__ is tuple or out.__class__ is list:
                try:
                    inner.return_(*out)
                except OpBuildError:
                    _bad_results(op, what, out)
                    raise
            else:
                fail(op, f"{what} must return a Value or a list of Values (or None after "
                         f"building its own return), got {type(out).__name__} {out!r:.60}")
        return Region([block])

    # -- the terminator --------------------------------------------------------------------

    def return_(self, *values: Value, location=None) -> Operation:
        """Terminate the block: ``func.return`` in a function body, ``return`` in a region.

        Ops built with this builder afterwards are refused (OpBuildError): they would come
        after the terminator, where they never run and jaxlib rejects the text."""
        if self.function is None:
            # A region's return has no check but its operands' being Values (the op
            # holding the region checks the types): built without the generic path, since
            # every reduction, comparator and loop body ends with one.
            for v in values:
                if v.__class__ not in VALUE_CLASSES:
                    _values("return", "results", values)
            block = self.block
            op = make_operation(_RETURN, values, (), None, (),
                                self.location if location is None
                                else checked_location(location), block)
            block.operations.append(op)
            return _terminated(block, op)
        fn = self.function
        for v in values:
            if v.__class__ not in VALUE_CLASSES:
                _values("func.return", "operands", values)
        types = tuple([v.type for v in values])
        if fn.result_types is None:
            fn.result_types = types
        elif fn.result_types != types:
            raise OpBuildError(
                f"'func.return' in @{fn.name}: returns ({', '.join(map(str, types))}), but the "
                f"function's result types are ({', '.join(map(str, fn.result_types))})")
        # What func.return's spec checks (operands are Values, no results) is checked above:
        # built directly, as a region's return is.
        block = self.block
        op = make_operation(_FUNC_RETURN, values, (), None, (),
                            self.location if location is None else checked_location(location),
                            block)
        block.operations.append(op)
        return _terminated(block, op)


def _named_body(b, arg_types, name, op, what) -> Region:
    """``Builder.region`` of a body named by its op (see there)."""
    if len(arg_types) != 2 or arg_types[0] is not arg_types[1] or \
            getattr(arg_types[0], "shape", None) != ():
        fail(op, f"{what} named by its op ({name!r}) combines two scalars of one type; this "
                 f"region takes ({', '.join(map(str, arg_types))}): pass a function "
                 f"(b, {', '.join(['x'] * len(arg_types))}) -> values")
    return _combining_region(b, op, name, arg_types[0])


# Every elementwise builder method's memos of result types (pure: each entry is what the
# spec's validation gives again), listed for whoever must empty them (lower.bench's
# first-sight rows).
ELEMENTWISE_MEMOS: list = []


def _elementwise_method(spec):
    """The builder method of one elementwise op: the hot path of most programs.

    Result types are memoised per operand-type tuple (tensor types are interned, so the key
    hashes by identity); only a type combination never seen before runs the spec's rule.
    Each memo holds the result type itself, not validate's one-type tuple: a tuple per type
    met is one more object for the cyclic GC to scan.
    """
    # A miss runs the spec's whole validation (which routes quantized types to their rules).
    name, validate = spec.name, spec.validate
    op_names = spec.operands
    memo: dict = {}
    same: dict = {}  # for operands of one type
    ELEMENTWISE_MEMOS.extend((memo, same))
    values = VALUE_CLASSES
    new_op = _new_single_result_op  # the one layout of a SingleResultOp

    if len(op_names) == 1:
        def method(self, operand, *, location=None):
            if operand.__class__ not in values:
                _values(name, "operand", (operand,))
            t = operand.type
            result_type = memo.get(t)
            if result_type is None:
                result_type = validate((t,), None, None, ())[0]
                if len(memo) > 4096:
                    memo.clear()
                memo[t] = result_type
            block = self.block
            op = new_op(spec, operand, None, None, result_type,
                        self.location if location is None else checked_location(location),
                        block)
            block.operations.append(op)
            return op
    else:
        def method(self, lhs, rhs, *, location=None):
            if lhs.__class__ not in values or rhs.__class__ not in values:
                lhs, rhs = _weak_pair(self, name, op_names, lhs, rhs, location)
            lt = lhs.type
            if lt is rhs.type:  # the usual case: keyed by the one type, no key tuple
                result_type = same.get(lt)
                if result_type is None:
                    result_type = validate((lt, lt), None, None, ())[0]
                    if len(same) > 4096:  # (bounded; a campaign of new shapes keeps the
                        same.clear()      # latest, not the first 4096 it met)
                    same[lt] = result_type
            else:
                key = (lt, rhs.type)
                result_type = memo.get(key)
                if result_type is None:
                    result_type = validate(key, None, None, ())[0]
                    if len(memo) > 4096:
                        memo.clear()
                    memo[key] = result_type
            block = self.block
            op = new_op(spec, lhs, rhs, None, result_type,
                        self.location if location is None else checked_location(location),
                        block)
            block.operations.append(op)
            return op

    method.__name__ = _method_name(name)
    method.__qualname__ = f"Builder.{method.__name__}"
    # Python's own arity errors then read "Builder.add() missing 1 required positional
    # argument: 'rhs'", naming the op and the operand.
    code = method.__code__.replace(co_name=method.__name__)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=method.__qualname__)
    method.__code__ = code
    if len(op_names) == 1:
        method.__doc__ = f"Elementwise ``{name}`` of {op_names[0]}."
        method.__annotations__ = {"operand": "Value", "return": "Value"}
    else:
        method.__doc__ = (f"Elementwise ``{name}`` of {', '.join(op_names)}; one of them may be "
                          f"a Python scalar, which becomes a constant of the other's type "
                          f"(an int into integer or float tensors, a float into float "
                          f"tensors, a bool into i1).")
        method.__annotations__ = {"lhs": "Value | int | float | bool | complex",
                                  "rhs": "Value | int | float | bool | complex",
                                  "return": "Value"}
    return method


for _name in (*UNARY, *BINARY):
    setattr(Builder, _method_name(_name), _elementwise_method(REGISTRY[_name]))


def _attach_chapter_methods():
    for name, fn in BUILDER_METHODS.items():
        if hasattr(Builder, name):
            raise ValueError(f"builder method {name!r} is already defined on Builder")
        fn.__qualname__ = f"Builder.{name}"
        setattr(Builder, name, fn)


_attach_chapter_methods()
