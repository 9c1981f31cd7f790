"""The Builder: creates operations at an insertion point, checking and inferring types.

There is no global state: a Builder holds its block (and, for a function body, its function)
and is passed to whoever builds. Region bodies are Python functions that receive a Builder for
the new block and its arguments, and return the values the region yields.

Every op in the table can be built with ``create``; the named methods below are thin, typed
front doors to it (elementwise methods are generated from the table's families).
"""

from __future__ import annotations

from contextlib import contextmanager
from types import FunctionType
from typing import Callable, Iterator, Sequence, Union


from .dense import DenseElementsAttr, dense_i64
from .errors import OpBuildError
from .ir import (Block, Function, Operation, Region, SingleResultOp,
                 VALUE_CLASSES, Value, _new_single_result_op, make_operation)
from .location import UNKNOWN, Location, loc as make_loc
from .mhlo_attributes import DotDimensionNumbers, comparison_direction, comparison_type
from .ops import REGISTRY
from .ops.elementwise import BINARY, UNARY
from .ops.args import (check_values, as_results, constant_attr, ints, value_list)
from .ops.construct import MEMO as _MEMO, memo, no_make as _no_make, result_type as _result
from .ops.construct import shape_arg as _shape_arg, tensor_type as _tensor, validate as _validate
from .ops.spec import BUILDER_METHODS, fail
from .types import TensorType, Type
from .region_bodies import ARITY as _ARITY, arity as _arity, arity_error as _arity_error
from .region_bodies import bad_results as _bad_results
from .terminated import terminated as _terminated
from .weak_scalars import weak_constant as _weak_constant, weak_pair as _weak_pair

__all__ = ["Builder", "Results", "as_results"]

# What builder methods return: a Value for one result, a tuple of Values for several, the
# Operation for none (see ``mhlo_ir.ops.args.results``; ``as_results`` undoes it).
Results = Union[Value, tuple, Operation]

_RESERVED = {"and", "or", "not", "if", "while", "return"}


def _method_name(op: str) -> str:
    return op + "_" if op in _RESERVED else op


_values = check_values
# ``xs`` as a tuple of ints, checked before it becomes part of a memo key (where 1.0 and True
# would pass for 1).
_ints = ints


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

    __slots__ = ("block", "function", "location")

    def __init__(self, block: Block, function: Function | None = None,
                 location: Location = UNKNOWN) -> None:
        self.block = block
        self.function = function
        self.location = location

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
                            self.location if location is None else location, block)
        block.operations.append(op)
        return op

    _memo = memo

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

    def region(self, arg_types: Sequence[Type], body: Callable, *, op: str = "region",
               what: str = "body", arg_names: Sequence[str] | None = None) -> Region:
        """A one-block region: ``body(builder, *args)`` builds it and returns what it yields.

        If ``body`` returns a value or a sequence of values, a ``return`` is appended; if it
        returns None it must have built its own terminator. ``body`` must take the builder
        and one argument per block argument; otherwise the OpBuildError names ``op``, the
        region (``what``) and its arguments (``arg_names``) and shows the lambda to write.
        """
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
        inner = Builder(block, None, self.location)
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

    # -- constants and data movement -----------------------------------------------------------

    def constant(self, value, dtype=None, *, location=None) -> Value:
        """A constant tensor from a numpy array, a numpy or Python scalar, a nested list of
        numbers, or a DenseElementsAttr. Without ``dtype``, numpy values keep their dtype and
        Python floats and ints become f32 and i32 (as in JAX without x64).

        Values are converted exactly (see ``mhlo_ir.exact``): ``constant(1.5, dtype=i32)``,
        ``constant(300, dtype=i8)``, ``constant(-1, dtype=ui8)`` and ``constant(1e10,
        dtype=f16)`` (which numpy would make inf) raise OpBuildError, as do strings and object
        arrays; bools become 0 and 1 in integer types."""
        if value.__class__ is not DenseElementsAttr:
            value = constant_attr("constant", value, dtype)
        elif dtype is not None:
            value = constant_attr("constant", value, dtype)
        if value.type.num_elements <= 16:
            # Small constants (literals, dimension values) repeat: validate them once. The
            # memo keeps the attribute alive, so its id cannot be reused while cached.
            return self._memo(("constant", id(value)), "constant", (), location,
                              _constant_make, value)
        return self._one("constant", (), {"value": value}, location=location)

    def iota(self, shape, element_type, dimension: int = 0, *, location=None) -> Value:
        return self._one("iota", (), {"iota_dimension": dimension},
                         (_result("iota", shape, element_type),), location=location)

    def convert(self, x: Value, element_type, *, location=None) -> Value:
        """Convert to ``element_type`` (XLA semantics: to i1 means ``!= 0``)."""
        t = _tensor(x, "convert")
        return self._memo(("convert", t, element_type), "convert", (x,), location,
                          _convert_make, t, element_type)

    def broadcast_in_dim(self, x: Value, shape, broadcast_dimensions, *, location=None) -> Value:
        t = getattr(x, "type", None)
        if t.__class__ is not TensorType:
            t = _tensor(x, "broadcast_in_dim")
        cls = shape.__class__
        if cls is not tuple:
            shape = tuple(shape) if cls is list else _shape_arg("broadcast_in_dim", shape, t)
        dims = broadcast_dimensions
        cls = dims.__class__
        if cls is not tuple:
            dims = tuple(dims) if cls is list else _ints("broadcast_in_dim",
                                                         "broadcast_dimensions", dims)
        # Dimensions are checked to be ints before keying (1.0 and True equal 1).
        for d in shape:
            if d.__class__ is not int:
                shape = _shape_arg("broadcast_in_dim", shape, t)
                break
        for d in dims:
            if d.__class__ is not int:
                dims = _ints("broadcast_in_dim", "broadcast_dimensions", dims)
                break
        key = ("broadcast_in_dim", t, shape, dims)
        hit = _MEMO.get(key)
        if hit is not None and x.__class__ in VALUE_CLASSES:  # _memo's hit path, inlined
            block = self.block
            op = _new_single_result_op(hit[0], x, None, hit[1], hit[2][0],
                                       self.location if location is None else location, block)
            block.operations.append(op)
            return op
        return self._memo(key, "broadcast_in_dim", (x,), location, _broadcast_make, t, shape,
                          dims)

    def reshape(self, x: Value, shape, *, location=None) -> Value:
        t = _tensor(x, "reshape")
        shape = _shape_arg("reshape", shape, t)
        return self._memo(("reshape", t, shape), "reshape", (x,), location,
                          _reshape_make, t, shape)

    def transpose(self, x: Value, permutation, *, location=None) -> Value:
        perm = _ints("transpose", "permutation", permutation)
        return self._memo(("transpose", _tensor(x, "transpose"), perm), "transpose", (x,),
                          location, _transpose_make, perm)

    def slice(self, x: Value, start_indices, limit_indices, strides=None, *,
              location=None) -> Value:
        start = _ints("slice", "start_indices", start_indices)
        limit = _ints("slice", "limit_indices", limit_indices)
        strides = (1,) * len(start) if strides is None else _ints("slice", "strides", strides)
        return self._memo(("slice", _tensor(x, "slice"), start, limit, strides), "slice", (x,),
                          location, _slice_make, start, limit, strides)

    def concatenate(self, inputs: Sequence[Value], dimension: int, *, location=None) -> Value:
        return self._one("concatenate", (value_list("concatenate", "inputs", inputs),),
                         {"dimension": dimension},
                         location=location)

    # -- elementwise extras ----------------------------------------------------------------

    def compare(self, lhs: Value, rhs: Value, direction: str, compare_type: str | None = None,
                *, location=None) -> Value:
        """``direction`` is EQ, NE, GE, GT, LE or LT; ``compare_type`` FLOAT, TOTALORDER,
        SIGNED or UNSIGNED (left unset when None). One operand may be a Python scalar (see
        ``add``)."""
        if lhs.__class__ not in VALUE_CLASSES or rhs.__class__ not in VALUE_CLASSES:
            lhs, rhs = _weak_pair(self, "compare", ("lhs", "rhs"), lhs, rhs, location)
        key = ("compare", lhs.type, rhs.type, direction, compare_type)
        return self._memo(key, "compare", (lhs, rhs), location, _compare_make, direction,
                          compare_type)

    def select(self, pred: Value, on_true: Value, on_false: Value, *, location=None) -> Value:
        """``on_true`` where ``pred`` holds, else ``on_false``; one of them may be a Python
        scalar, made a constant of the other's type (see ``add``)."""
        if on_true.__class__ not in VALUE_CLASSES or on_false.__class__ not in VALUE_CLASSES:
            on_true, on_false = _weak_pair(self, "select", ("on_true", "on_false"), on_true,
                                           on_false, location)
        key = ("select", getattr(pred, "type", None), on_true.type, on_false.type)
        return self._memo(key, "select", (pred, on_true, on_false), location, _no_make)

    def clamp(self, min: Value, x: Value, max: Value, *, location=None) -> Value:
        """``x`` limited to [min, max]; ``min`` and ``max`` may be Python scalars, made scalar
        constants of ``x``'s element type (clamp takes scalar bounds)."""
        if min.__class__ not in VALUE_CLASSES or max.__class__ not in VALUE_CLASSES:
            if x.__class__ in VALUE_CLASSES:
                if min.__class__ not in VALUE_CLASSES:
                    min = _weak_constant(self, "clamp", "min", min, "x", x, (), location)
                if max.__class__ not in VALUE_CLASSES:
                    max = _weak_constant(self, "clamp", "max", max, "x", x, (), location)
        key = ("clamp", getattr(min, "type", None), getattr(x, "type", None),
               getattr(max, "type", None))
        return self._memo(key, "clamp", (min, x, max), location, _no_make)

    # -- linear algebra ----------------------------------------------------------------------

    def dot_general(self, lhs: Value, rhs: Value, contracting_dimensions=((), ()),
                    batch_dimensions=((), ()), *, precision_config=None,
                    result_element_type=None, location=None) -> Value:
        """``contracting_dimensions=((lhs dims), (rhs dims))``, likewise ``batch_dimensions``.

        ``result_element_type`` sets a result element type other than the operands' (XLA's
        preferred element type, e.g. f32 results from bf16 operands).
        """
        if contracting_dimensions.__class__ is DotDimensionNumbers:
            if batch_dimensions != ((), ()):
                fail("dot_general", "batch_dimensions cannot be given with a "
                                    "DotDimensionNumbers (it holds the batch dimensions)")
            dn = contracting_dimensions
        else:
            try:
                (lc, rc), (lb, rb) = contracting_dimensions, batch_dimensions
                dn = (tuple(lb), tuple(rb), tuple(lc), tuple(rc))
            except (TypeError, ValueError):
                fail("dot_general", f"contracting_dimensions and batch_dimensions must each be "
                                    f"a pair ((lhs dimensions), (rhs dimensions)), got "
                                    f"{contracting_dimensions!r:.40} and {batch_dimensions!r:.40}")
            exact = True  # checked before keying: 1.0 and True equal 1
            for group in dn:
                for d in group:
                    if d.__class__ is not int:
                        exact = False
            if not exact:
                dn = tuple(_ints("dot_general", what, xs) for what, xs in zip(
                    ("lhs batch dimensions", "rhs batch dimensions",
                     "lhs contracting dimensions", "rhs contracting dimensions"), dn))
        # The memo key and the validation see the same value (a str or a generator would
        # otherwise be keyed as one thing and checked as another).
        if precision_config is None:
            pc = None
        elif isinstance(precision_config, str) or not hasattr(precision_config, "__iter__"):
            fail("dot_general", f"precision_config must be a list of precisions (DEFAULT, "
                                f"HIGH, HIGHEST), one per operand, got "
                                f"{type(precision_config).__name__} {precision_config!r:.40}")
        else:
            pc = tuple(precision_config)
        key = ("dot_general", getattr(lhs, "type", None), getattr(rhs, "type", None), dn, pc,
               result_element_type)
        try:
            hit = _MEMO.get(key)
        except TypeError:
            hit = None
        if hit is not None and lhs.__class__ in VALUE_CLASSES and \
                rhs.__class__ in VALUE_CLASSES:  # _memo's hit path, inlined
            block = self.block
            op = _new_single_result_op(hit[0], lhs, rhs, hit[1], hit[2][0],
                                       self.location if location is None else location, block)
            block.operations.append(op)
            return op
        return self._memo(key, "dot_general", (lhs, rhs), location, _dot_general_make, lhs,
                          rhs, dn, pc, result_element_type)

    # -- the terminator --------------------------------------------------------------------

    def return_(self, *values: Value, location=None) -> Operation:
        """Terminate the block: ``func.return`` in a function body, ``return`` in a region.

        Ops built with this builder afterwards are refused (OpBuildError): they would come
        after the terminator, where they never run and jaxlib rejects the text."""
        if self.function is None:
            return _terminated(self.block,
                               self.create("return", (list(values),), location=location))
        fn = self.function
        types = tuple(_values("func.return", "operands", values)[i].type
                      for i in range(len(values)))
        if fn.result_types is None:
            fn.result_types = types
        elif fn.result_types != types:
            raise OpBuildError(
                f"'func.return' in @{fn.name}: returns ({', '.join(map(str, types))}), but the "
                f"function's result types are ({', '.join(map(str, fn.result_types))})")
        return _terminated(self.block,
                           self.create("func.return", (list(values),), location=location))

def _constant_make(value):
    return {"value": value}, None


def _convert_make(t, element_type):
    return None, (_result("convert", t.shape, element_type),)


def _broadcast_make(t, shape, dims):
    return ({"broadcast_dimensions": dense_i64(dims)},
            (_result("broadcast_in_dim", shape, t.element_type),))


def _reshape_make(t, shape):
    return None, (_result("reshape", shape, t.element_type),)


def _transpose_make(perm):
    return {"permutation": dense_i64(perm)}, None


def _slice_make(start, limit, strides):
    return {"start_indices": dense_i64(start), "limit_indices": dense_i64(limit),
            "strides": dense_i64(strides)}, None


def _compare_make(direction, compare_type):
    try:
        attrs = {"comparison_direction": comparison_direction(direction)}
        if compare_type is not None:
            attrs["compare_type"] = comparison_type(compare_type)
    except ValueError as e:
        fail("compare", f"attribute {e}")
    return attrs, None


def _dot_general_make(lhs, rhs, dn, precision_config, result_element_type):
    try:
        dnums = dn if isinstance(dn, DotDimensionNumbers) else DotDimensionNumbers(*dn)
    except (TypeError, ValueError) as e:
        fail("dot_general", f"dimension numbers: {e}")
    attrs = {"dot_dimension_numbers": dnums, "precision_config": precision_config}
    if result_element_type is None:
        return attrs, None
    spec = REGISTRY["dot_general"]
    conv = {k: spec.attributes[k].convert(v) for k, v in attrs.items() if v is not None}
    inferred = spec.infer("dot_general", (_tensor(lhs, "dot_general"),
                                          _tensor(rhs, "dot_general")), conv)[0]
    return attrs, (_result("dot_general", inferred.shape, result_element_type),)


def _elementwise_method(spec):
    """The builder method of one elementwise op: the hot path of most programs.

    Result types are memoised per operand-type tuple (tensor types are interned, so the key
    hashes by identity); only a type combination never seen before runs the spec's rule.
    """
    name, infer = spec.name, spec.infer
    op_names = spec.operands
    memo: dict = {}
    same: dict = {}  # for operands of one type
    values = VALUE_CLASSES
    new, SRO = object.__new__, SingleResultOp
    # NOTE: both methods build their SingleResultOp inline (what ir._new_single_result_op
    # does): calling the class costs a third of the method, and a helper call a tenth.

    if len(op_names) == 1:
        def method(self, operand, *, location=None):
            if operand.__class__ not in values:
                _values(name, "operand", (operand,))
            t = operand.type
            result_types = memo.get(t)
            if result_types is None:
                result_types = memo[t] = infer(name, (t,), None)
            block = self.block
            op = new(SRO)
            op.spec = spec
            op._a = operand
            op._b = None
            op.attributes = None
            op.regions = ()
            op.location = self.location if location is None else location
            op.parent = block
            op.type = result_types[0]
            block.operations.append(op)
            return op
    else:
        def method(self, lhs, rhs, *, location=None):
            if lhs.__class__ not in values or rhs.__class__ not in values:
                lhs, rhs = _weak_pair(self, name, op_names, lhs, rhs, location)
            lt = lhs.type
            if lt is rhs.type:  # the usual case: keyed by the one type, no key tuple
                result_types = same.get(lt)
                if result_types is None:
                    result_types = infer(name, (lt, lt), None)
                    if len(same) < 4096:
                        same[lt] = result_types
            else:
                key = (lt, rhs.type)
                result_types = memo.get(key)
                if result_types is None:
                    result_types = infer(name, key, None)
                    if len(memo) < 4096:
                        memo[key] = result_types
            block = self.block
            op = new(SRO)
            op.spec = spec
            op._a = lhs
            op._b = rhs
            op.attributes = None
            op.regions = ()
            op.location = self.location if location is None else location
            op.parent = block
            op.type = result_types[0]
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
