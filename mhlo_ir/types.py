"""Types: ranked tensors, tokens, tuples, function types and MHLO's async bundles.

Types are immutable values with structural equality. Each one renders its text once, when it is
created: a program mentions the same few types thousands of times, so the printer only reads a
cached string. ``tensor(shape, element_type)`` interns tensor types for the same reason.
"""

from __future__ import annotations

import re
from math import prod as _prod
from typing import Iterable, Sequence

import attrs
import numpy as np

from .dialect import MHLO, STABLEHLO
from .dtypes import element_type as _named_element_type, from_numpy, parse_element_type

# The canonical text of each static tensor type read so far -> the type (interned: the text
# decides the type, so this changes nothing that is read, only how fast).
_READ: dict = {}
_TENSOR_TEXT = re.compile(r"tensor<(?:[0-9]+x)*[a-zA-Z][a-zA-Z0-9_]*>")
# A function type of such tensors: its input list, and its one result or result list.
_TENSORS = r"((?:tensor<(?:[0-9]+x)*[a-zA-Z][a-zA-Z0-9_]*>(?:, (?=t))?)*)"
_FUNCTION_TEXT = re.compile(r"\(" + _TENSORS + r"\) -> (?:(tensor<(?:[0-9]+x)*[a-zA-Z]"
                            r"[a-zA-Z0-9_]*>)|\(" + _TENSORS + r"\))")

__all__ = [
    "Type", "TensorType", "TokenType", "TupleType", "FunctionType", "AsyncBundleType", "tensor",
    "token",
    "tuple_type", "function_type", "parse_type", "read_type",
]


def as_tuple(xs) -> tuple:
    """``tuple(xs)`` as a Python function, for attrs converters: attrs reads each converter's
    signature, and for a builtin such as ``tuple`` that compiles ``tokenize``'s regular
    expressions, a few milliseconds of ``import mhlo_ir``."""
    return tuple(xs)


class Type:
    """Base of all types. ``render(dialect)`` gives the MLIR text of the type."""

    __slots__ = ()

    def render(self, dialect) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


def _shape(dims) -> tuple:
    out = []
    for d in dims:
        if d.__class__ is not int:
            if isinstance(d, (bool, np.bool_)):
                raise TypeError(f"tensor dimension {d!r} is not an integer")
            try:
                d = int(d.__index__())
            except (AttributeError, TypeError):
                raise TypeError(f"tensor dimension {d!r} is not an integer") from None
        if d < 0:
            raise ValueError(f"tensor dimension {d} is negative")
        if d > MAX_DIMENSION:
            raise ValueError(f"tensor dimension {d} is too large: MLIR and XLA take dimensions "
                             f"up to 2**63 - 1 = {MAX_DIMENSION}")
        out.append(d)
    return tuple(out)


# MLIR's parser refuses a dimension of 2**63 ("invalid dimension"); XLA refuses a tensor whose
# byte size overflows int64 ("overflow in static extent product"), multiplying the element
# size by the dimensions in order, so a later 0 does not undo an overflow (measured with
# jaxlib 0.10.2: tensor<2305843009213693951xf32> converts to HLO, ...952xf32 does not, nor
# does 2**62x0x2**62 in f32 while 0x2**62x2**62 does).
MAX_DIMENSION = 2**63 - 1


def _check_size(dims, et) -> None:
    size = et.dtype.itemsize
    if 0 not in dims and _prod(dims) * size <= MAX_DIMENSION:
        return  # (no zero: every partial product is at most the whole)
    for k, d in enumerate(dims):
        size *= d
        if size > MAX_DIMENSION:
            text = "x".join(map(str, dims))
            raise ValueError(
                f"tensor<{text}x{et.name}> is too large: XLA refuses tensors of 2**63 bytes or "
                f"more ({et.dtype.itemsize}-byte elements times dimensions "
                f"{list(dims[:k + 1])} already overflow, counted in order)")


class TensorType(Type):
    """``tensor<2x3xf32>``: a ranked tensor with static dimensions (rank 0 and size 0 allowed).

    Tensor types are interned: constructing one with a shape and element type seen before
    returns the same object. Equality is therefore identity, and hashing costs what hashing an
    object id costs, which is what keeps type checks and the printer's caches cheap.
    """

    __slots__ = ("shape", "element_type", "_text", "__weakref__")
    _interned: dict = {}

    def __new__(cls, shape, element_type):
        key0 = shape if shape.__class__ is tuple else tuple(shape)
        key = (key0, element_type)
        for d in key0:
            if d.__class__ is not int:  # bools and floats hash like ints: validate first
                key = None
                break
        interned = cls._interned
        if key is not None:
            try:
                hit = interned.get(key)
            except TypeError:  # (an unhashable element type: from_numpy says what is wrong)
                hit = None
            if hit is not None:
                return hit
            dims = key0
            if dims and not (min(dims) >= 0 and max(dims) <= MAX_DIMENSION):
                dims = _shape(dims)  # (which says what is wrong)
            et = from_numpy(element_type)
            same = et is element_type  # (key is the canonical key, looked up above)
        else:
            key = (key0, element_type)  # (the tuple made once: shape may be a generator)
            dims = _shape(key0)
            et = from_numpy(element_type)
            same = False
        canonical = (dims, et)
        self = None if same else interned.get(canonical)
        if self is None:
            _check_size(dims, et)
            if et.kind == "quant":
                et.check_shape(dims)
            new = object.__new__(cls)
            _set_shape(new, dims)
            _set_element_type(new, et)
            _set_text(new, f"tensor<{'x'.join(map(str, dims))}x{et.name}>" if dims else
                      f"tensor<{et.name}>")
            # setdefault is atomic: two threads interning the same type get one object.
            self = interned.setdefault(canonical, new)
        if not same:
            try:
                interned[key] = self
            except TypeError:
                pass
        return self

    def __setattr__(self, name, value):
        raise AttributeError("TensorType is immutable")

    # NOTE: the slots' own setters, which __new__ calls as functions (object.__setattr__
    # looks the descriptor up on every call).

    def __reduce__(self):
        return (TensorType, (self.shape, self.element_type))

    def __repr__(self):
        return f"TensorType(shape={self.shape}, element_type={self.element_type!r})"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def dtype(self):
        """The numpy dtype of the elements."""
        return self.element_type.dtype

    def render(self, dialect=None) -> str:
        return self._text

    @classmethod
    def parse(cls, ts, dialect=None) -> "TensorType":
        """Reads ``tensor<2x3xf32>`` from token stream ``ts``: the inverse of ``render``."""
        # A text read before is looked up whole: a signature spells the same few types
        # hundreds of times, and lexing each one token by token was most of reading one.
        m = _match_next(ts, _TENSOR_TEXT)
        if m is not None:
            hit = read_tensor_text(m.group())
            if hit is not None:
                _consume(ts, m)
                return hit
        start = ts.expect("tensor")
        ts.expect("<")
        dims = ts.dimension_list()
        et = parse_element_type(ts)
        if ts.at(","):
            raise ts.error("tensor encodings are not supported")
        end = ts.expect(">")
        t = ts.make(start, tensor, dims, et)
        text = ts.text[start.pos:end.pos + 1]
        if text == t._text:  # only the canonical spelling is reused
            _remember(text, t)
        return t

    def __str__(self):
        return self._text


_set_shape = TensorType.shape.__set__
_set_element_type = TensorType.element_type.__set__
_set_text = TensorType._text.__set__


@attrs.frozen
class TokenType(Type):
    """``!mhlo.token``: orders side effects. Its spelling depends on the output dialect."""

    def render(self, dialect) -> str:
        return dialect.token_type

    @classmethod
    def parse(cls, ts, dialect) -> "TokenType":
        """Reads a token type: the dialect's (``!mhlo.token``) or the other's, which MLIR
        takes for either dialect's ops (jaxlib's conversion from HLO writes
        ``mhlo.add_dependency`` of a ``!stablehlo.token``)."""
        tok = ts.peek()
        if tok.kind != "!" or tok.text not in _TOKEN_SPELLINGS:
            raise ts.expected(dialect.token_type)
        ts.next()
        return TOKEN

    def __str__(self):
        return "!token"


_TOKEN_SPELLINGS = frozenset({MHLO.token_type, STABLEHLO.token_type})


@attrs.frozen(cache_hash=True)
class TupleType(Type):
    """``tuple<tensor<f32>, !mhlo.token>``."""

    types: tuple = attrs.field(converter=as_tuple)

    def render(self, dialect) -> str:
        return "tuple<" + ", ".join(t.render(dialect) for t in self.types) + ">"

    @classmethod
    def parse(cls, ts, dialect) -> "TupleType":
        """Reads ``tuple<tensor<f32>, !mhlo.token>``."""
        ts.expect("tuple")
        return cls(ts.comma_list(lambda: read_type(ts, dialect), ">", open="<"))

    def __str__(self):
        return "tuple<" + ", ".join(map(str, self.types)) + ">"


@attrs.frozen(cache_hash=True)
class FunctionType(Type):
    """``(tensor<f32>) -> (tensor<f32>, tensor<i1>)``: a function's signature."""

    inputs: tuple = attrs.field(converter=as_tuple)
    results: tuple = attrs.field(converter=as_tuple)

    def render(self, dialect) -> str:
        return function_type_text(self.inputs, self.results, dialect)

    @classmethod
    def parse(cls, ts, dialect) -> "FunctionType":
        """Reads ``(ins) -> out`` or ``(ins) -> (outs)``; as in MLIR, a function-typed result
        needs the parentheses (``() -> ((i32) -> i32)``)."""
        # Tensor types read before, looked up whole as in TensorType.parse: a function of 200
        # arguments spells 200 of them.
        m = _match_next(ts, _FUNCTION_TEXT)
        if m is not None:
            t = _function_of(m)
            if t is not None:
                _consume(ts, m)
                return t

        def one():
            return read_type(ts, dialect)
        inputs = ts.comma_list(one, ")", open="(")
        ts.expect("->")
        results = ts.comma_list(one, ")", open="(") if ts.at("(") else [one()]
        return cls(inputs, results)


@attrs.frozen(cache_hash=True)
class AsyncBundleType(Type):
    """``!mhlo.async_bundle<inputs, results, context...>``: what async_start hands on."""

    types: tuple = attrs.field(converter=as_tuple)

    def render(self, dialect) -> str:
        return f"!{dialect.name}.async_bundle<" + ", ".join(
            t.render(dialect) if not isinstance(t, TensorType) else t._text
            for t in self.types) + ">"

    @classmethod
    def parse(cls, ts, dialect) -> "AsyncBundleType":
        """Reads ``!mhlo.async_bundle<tuple<tensor<f32>>, tensor<f32>, tensor<i32>>``."""
        tok = ts.peek()
        if tok.kind != "!" or tok.text != f"!{dialect.name}.async_bundle":
            raise ts.expected(f"!{dialect.name}.async_bundle<...>")
        ts.next()
        return ts.make(tok, cls, ts.comma_list(lambda: read_type(ts, dialect), ">", open="<"))

    def __str__(self):
        return "!async_bundle<" + ", ".join(map(str, self.types)) + ">"


TOKEN = TokenType()


def function_type_text(inputs, results, dialect) -> str:
    """``(ins) -> out`` or ``(ins) -> (outs)``: the text of a FunctionType of these types
    (the printer spells a function's type without making one)."""
    ins = ", ".join([t._text if t.__class__ is TensorType else t.render(dialect)
                     for t in inputs])
    if len(results) == 1 and not isinstance(results[0], FunctionType):
        t = results[0]
        return f"({ins}) -> {t._text if t.__class__ is TensorType else t.render(dialect)}"
    outs = ", ".join([t._text if t.__class__ is TensorType else t.render(dialect)
                      for t in results])
    return f"({ins}) -> ({outs})"


def tensor(shape: Iterable[int], element_type) -> TensorType:
    """The tensor type of ``shape`` and ``element_type`` (an ElementType or numpy dtype)."""
    return TensorType(shape, element_type)


def token() -> TokenType:
    """The token type."""
    return TOKEN


def tuple_type(types: Sequence[Type]) -> TupleType:
    return TupleType(tuple(types))


def function_type(inputs: Sequence[Type], results: Sequence[Type]) -> FunctionType:
    return FunctionType(tuple(inputs), tuple(results))


def read_tensor_text(text: str) -> "TensorType | None":
    """The tensor type ``text`` (a ``_TENSOR_TEXT`` match) spells canonically, as our
    printer and MLIR's write it (``tensor<2x3xf32>``), or None where the token reader must
    say what it is (another spelling, an element type of other syntax, a type too large).
    A text read before is one lookup; a new one is split, not lexed token by token."""
    t = _READ.get(text)
    if t is None:
        dims_text, _, name = text[7:-1].rpartition("x")
        if dims_text and not dims_text.replace("x", "").isdigit():
            return None  # ("2xx3": the tokens' to report)
        try:
            t = TensorType(tuple(map(int, dims_text.split("x"))) if dims_text else (),
                           _named_element_type(name))
        except (TypeError, ValueError):  # (a name no element type has, a type too large)
            return None
        if t._text != text:
            return None  # (leading zeros: read by tokens, then not kept)
        _remember(text, t)
    return t


def read_function_text(text: str) -> "FunctionType | None":
    """The function type all of ``text`` spells when its types are canonical tensor types
    (``(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>``, an op's signature as printers
    write it), else None (the token reader's to read or refuse): split, not lexed."""
    m = _FUNCTION_TEXT.fullmatch(text)
    return None if m is None else _function_of(m)


def _function_of(m) -> "FunctionType | None":
    """The FunctionType of a ``_FUNCTION_TEXT`` match, None where a type in it is not one
    ``read_tensor_text`` takes."""
    ins, one, outs = m.groups()
    read = read_tensor_text
    inputs = [read(x) for x in ins.split(", ")] if ins else []
    results = [read(one)] if one is not None else \
        [read(x) for x in outs.split(", ")] if outs else []
    if None in inputs or None in results:
        return None
    return FunctionType(inputs, results)


def _remember(text: str, t) -> None:
    if len(_READ) > 4096:
        _READ.clear()
    _READ[text] = t


def _match_next(ts, pattern):
    """``pattern`` matched where token stream ``ts`` reads next (None if it does not match, or
    if more than one token was lexed ahead; the caller has usually peeked at the first)."""
    ahead = getattr(ts, "_ahead", None)
    if ahead is None or len(ahead) > 1:
        return None
    text = ts.text
    return pattern.match(text, ahead[0].pos if ahead else ts._skip_re.match(text, ts._pos).end())


def _consume(ts, m) -> None:
    """Continue ``ts`` after match ``m`` of ``_match_next``."""
    ts._ahead.clear()
    ts._pos = m.end()


def read_type(ts, dialect):
    """Reads one type from token stream ``ts``: a tensor, tuple, function or token type, or an
    element type (``f32``), which MLIR also allows where a type is expected."""
    tok = ts.peek()
    if tok.kind == "bare":
        if tok.text == "tensor":
            return TensorType.parse(ts, dialect)
        if tok.text == "tuple":
            return TupleType.parse(ts, dialect)
        return parse_element_type(ts)
    if tok.kind == "!":
        if tok.text.startswith("!quant."):
            return parse_element_type(ts)
        if tok.text.endswith(".async_bundle"):
            return AsyncBundleType.parse(ts, dialect)
        return TokenType.parse(ts, dialect)
    if tok.kind == "punct" and tok.text == "(":
        return FunctionType.parse(ts, dialect)
    raise ts.expected("a type")


def parse_type(text: str, dialect=None):
    """The type spelled by all of ``text`` (``"tensor<2x3xf32>"``, ``"!mhlo.token"``), as
    ``dialect`` (default MHLO) spells it. Raises ``syntax.ParseError``."""
    from .dialect import MHLO
    from .syntax import TokenStream, nested_too_deeply
    ts = TokenStream(text)
    try:
        t = read_type(ts, MHLO if dialect is None else dialect)
    except RecursionError:
        raise nested_too_deeply(ts) from None
    ts.expect_end()
    return t
