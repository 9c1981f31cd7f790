"""The builder's front doors' arguments and results: checks of the Python arguments before
they become attributes, types or memo keys, and the one convention for what they return
(``results``: a Value for one result, a tuple for several, the Operation for none).

Each raises OpBuildError naming the op and the argument: ``1.5`` or ``True`` given as a
dimension, a string given as a list of dimensions, a constant value its type cannot hold.
Ints are tested by class first, so the usual argument (a list of Python ints) costs a loop of
identity tests; bools and floats hash like ints, which is why they must be refused before any
of these values keys a cache.
"""

from __future__ import annotations

import numpy as np

from ..dense import DenseElementsAttr, index
from ..dtypes import from_numpy
from ..errors import OpBuildError
from ..exact import as_array, exact_array
from ..ir import Value
from ..quant import is_quantized
from ..types import TensorType, Type, tensor
from .spec import fail

__all__ = ["ints", "integer", "shape", "pairs", "constant_attr", "arg_names", "value_list",
           "type_list", "results", "as_results", "small_array"]


def integer(op: str, what: str, v) -> int:
    """``v`` as a Python int (numpy integers too); bools and floats are refused."""
    if v.__class__ is int:
        return v
    try:
        return index(v)
    except TypeError:
        fail(op, f"{what}: expected an integer, got {type(v).__name__} {v!r:.40}")


def small_array(op: str, what: str, attr: DenseElementsAttr) -> np.ndarray:
    """The elements of ``attr``, an attribute that lists numbers (``DenseElementsAttr.listed``:
    a huge splat raises OpBuildError naming the op)."""
    try:
        return attr.listed()
    except ValueError as e:
        fail(op, f"{what} {e}")


def ints(op: str, what: str, xs) -> tuple:
    """``xs`` (a sequence of integers, or a 1-D integer DenseElementsAttr) as a tuple of
    Python ints."""
    cls = xs.__class__
    if cls is not tuple:
        if cls is list:
            xs = tuple(xs)
        elif isinstance(xs, DenseElementsAttr):
            xs = xs.ints if xs.ints is not None else \
                tuple(small_array(op, what, xs).reshape(-1).tolist())
        elif isinstance(xs, (str, bytes)) or not hasattr(xs, "__iter__"):
            fail(op, f"{what} must be a list of integers, got {type(xs).__name__} {xs!r:.40}")
        elif isinstance(xs, (set, frozenset, dict)) or \
                type(xs).__name__ in ("dict_keys", "dict_values", "dict_items"):
            # Their iteration order is hashing's, not the user's: the op would depend on it.
            fail(op, f"{what} must be an ordered list of integers, got an unordered "
                     f"{type(xs).__name__} {xs!r:.40}")
        else:
            xs = tuple(xs)
    for x in xs:
        if x.__class__ is not int:
            out = []
            for i, v in enumerate(xs):
                try:
                    out.append(index(v))
                except TypeError:
                    fail(op, f"{what}: expected an integer, got {type(v).__name__} "
                             f"{v!r:.40} (entry {i} of {list(xs)!r:.60})")
            return tuple(out)
    return xs


def shape(op: str, what: str, xs) -> tuple:
    """A static shape argument: integers, each a valid tensor dimension."""
    dims = ints(op, what, xs)
    for i, d in enumerate(dims):
        if d < 0:
            fail(op, f"{what}[{i}] = {d} is negative (in {what} {list(dims)})")
    return dims


def pairs(op: str, what: str, v):
    """``[(low, high), ...]`` integer pairs (padding) as a tuple of int pairs; None and
    attributes pass through to the op's converter."""
    if v is None or isinstance(v, DenseElementsAttr):
        return v
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        fail(op, f"{what} must be a list of (low, high) pairs, got {type(v).__name__} "
                 f"{v!r:.40}")
    out = []
    for i, p in enumerate(v):
        if isinstance(p, (str, bytes)) or not hasattr(p, "__iter__"):
            fail(op, f"{what}[{i}] must be a (low, high) pair of integers, got "
                     f"{type(p).__name__} {p!r:.40}")
        p = ints(op, f"{what}[{i}]", p)
        if len(p) != 2:
            fail(op, f"{what}[{i}] must be a (low, high) pair, got {len(p)} integers {list(p)}")
        for x in p:
            if not -2**63 <= x < 2**63:
                fail(op, f"{what}[{i}]: {x} does not fit in i64")
        out.append(p)
    return tuple(out)


def constant_attr(op: str, value, dtype=None) -> DenseElementsAttr:
    """The value attribute of a constant op: ``value`` converted exactly (``mhlo_ir.exact``)
    to ``dtype``. Without one, numpy arrays and scalars keep their dtype, and Python numbers,
    alone or in (nested) lists and tuples, take JAX's defaults without x64: ints become i32,
    floats f32, complex numbers complex64 and bools i1 (numpy would make them 64-bit)."""
    if isinstance(value, DenseElementsAttr):
        if dtype is not None:
            et = _element_type(op, dtype)
            if value.type.element_type is not et:
                fail(op, f"value is a DenseElementsAttr of {value.type}, which is not of "
                         f"dtype {et.name} (leave dtype out, or convert the array first)")
        return value
    try:
        if dtype is None:
            cls = value.__class__
            if cls is float:
                # The common literal: a float f32 holds (or inf/nan) converts as is; only one
                # that would overflow takes exact_array's checks (and its message).
                if -_F32_OVERFLOW < value < _F32_OVERFLOW or value != value or \
                        value in _INFS:
                    arr = np.asarray(value, np.float32)
                else:
                    arr = exact_array(value, "f32")
            elif cls is int:
                if not -2**31 <= value < 2**31:
                    fail(op, f"Python int {value} does not fit in i32: pass dtype (e.g. "
                             f"dtype=i64)")
                arr = np.asarray(value, np.int32)
            elif cls is list or cls is tuple or cls is complex:
                arr = _python_numbers(op, value)
            else:  # from_array checks the value (as_array) and keeps numpy's dtype
                return DenseElementsAttr.from_array(value)
            return DenseElementsAttr.from_array(arr)
        et = _element_type(op, dtype)
        if is_quantized(et):
            # (before converting the value, whose errors would not say why)
            fail(op, f"does not take quantized tensors (dtype {et}): make a float constant "
                     "and quantize it (uniform_quantize)")
        arr = exact_array(value, et)
        return DenseElementsAttr.from_array(arr, tensor(arr.shape, et))
    except OpBuildError:
        raise
    except (TypeError, ValueError) as e:
        fail(op, str(e))


def _python_numbers(op, value):
    """A Python complex number or a (nested) list of numbers as an array of the 32-bit type
    JAX without x64 gives it; numpy's 64-bit defaults are narrowed exactly (a value out of
    range is refused, floats round to the nearest f32)."""
    arr = as_array(value)
    dt = arr.dtype
    # Python ints: int64, or uint64 for those in [2**63, 2**64). Beyond that numpy makes an
    # object array, which from_array refuses with its own message.
    if dt == np.int64 or dt == np.uint64:
        try:
            return exact_array(value, "i32")
        except ValueError as e:
            fail(op, f"{e}: pass dtype (e.g. dtype=i64)")
    if dt == np.float64:
        return exact_array(arr, "f32")
    if dt == np.complex128:
        return exact_array(arr, "complex64")
    # Bools and numpy scalars of narrower types as numpy has them; from_array refuses the
    # rest (object arrays) naming the value as given.
    return value


# float32's IEEE overflow threshold, max + ulp(max) / 2: Python floats below it in magnitude
# round to a finite float32.
_F32_OVERFLOW = float(np.finfo(np.float32).max) * (1 + 2.0**-25)
_INFS = (float("inf"), float("-inf"))


def _element_type(op, dtype):
    try:
        return from_numpy(dtype)
    except TypeError as e:
        fail(op, f"dtype: {e}")


def value_list(op: str, what: str, xs) -> list:
    """A Value or a sequence of Values as a list (a single Value is a list of one); anything
    else is refused, naming what was expected."""
    if isinstance(xs, Value):
        return [xs]
    if isinstance(xs, (list, tuple)):
        return list(xs)
    if isinstance(xs, (str, bytes)) or not hasattr(xs, "__iter__"):
        fail(op, f"{what} must be a Value or a list of Values, got {type(xs).__name__} "
                 f"{xs!r:.60}")
    return list(xs)


def type_list(op: str, what: str, ts) -> tuple:
    """Result types given as a Type or a sequence of Types, as a tuple (the op's rule checks
    each entry)."""
    if isinstance(ts, Type):
        return (ts,)
    if isinstance(ts, (str, bytes)) or not hasattr(ts, "__iter__"):
        fail(op, f"{what} must be a Type or a list of Types, got {type(ts).__name__} "
                 f"{ts!r:.60}")
    return tuple(ts)


def arg_names(n: int, *prefixes: str, interleave: bool = False) -> list:
    """Names for a region's block arguments in error messages: ``("acc", "x")`` for one
    input, ``acc0, acc1, x0, x1`` for two (``interleave``: ``lhs0, rhs0, lhs1, rhs1``)."""
    if n == 1:
        return list(prefixes)
    if interleave:
        return [f"{p}{i}" for i in range(n) for p in prefixes]
    return [f"{p}{i}" for p in prefixes for i in range(n)]


def results(op):
    """What every builder method returns for the op it built: the result Value when the op has
    one result, a tuple of its results when it has several, and the Operation itself when it
    has none (``return_``, ``trace``, a ``custom_call`` with no results)."""
    rs = op.results
    if len(rs) == 1:
        return rs[0]
    return rs if rs else op


def as_results(x) -> tuple:
    """The inverse of ``results`` for code generic over result counts: what a builder method
    returned, as a tuple of Values (``()`` for an Operation without results)."""
    if isinstance(x, Value):
        return (x,)
    if isinstance(x, tuple):
        return x
    rs = getattr(x, "results", None)
    if rs is not None:
        return tuple(rs)
    return tuple(x)


def check_values(op: str, what: str, xs) -> tuple:
    """``xs`` as a tuple, each a Value, else an OpBuildError naming the entry."""
    xs = tuple(xs)
    for i, x in enumerate(xs):
        if not isinstance(x, Value):
            fail(op, f"operand {what}[{i}] must be a Value (the result of an op or a block "
                     f"argument), got {type(x).__name__} {x!r:.60}")
    return xs


def tensor_of(x, op: str):
    """The tensor type of Value ``x``, else an OpBuildError in ``op``'s name."""
    t = getattr(x, "type", None)
    if not isinstance(t, TensorType):
        fail(op, f"operand must be a tensor Value, got {x!r:.60}")
    return t
