"""Dense element attributes: tensors of constants, held as raw little-endian bytes.

Holding bytes (not a numpy array) makes the attribute immutable and hashable and keeps the
printer's work to one ``bytes.hex()`` for large data, which is what makes big constants cheap.
Sub-byte types (i1, i2/i4, f4) take one byte per element, the layout ``ml_dtypes`` uses and the
one jaxlib's hex parser expects.

Text follows MLIR's printer: ``dense<>`` for no elements, ``dense<v>`` when every element has
the same bits (a splat), a nested list when there are at most ``hex_threshold`` elements, and
``dense<"0x...">`` above it. We print the hex in lowercase: it is 2.3x faster to produce than
MLIR's uppercase and MLIR reads either.
"""

from __future__ import annotations


import re
from binascii import unhexlify as _unhexlify

import attrs
import numpy as np

from .attributes import Attribute, DenseArrayAttr, read_number_literal
from .exact import ACCEPTED_DTYPES, as_array, exact_array
from .floatfmt import format_scalar, parse_float_bits
from .index_array import IndexArrayAttr, index_array
from .syntax import LongString, ParseError, Token
from .types import TensorType, _consume, _match_next, read_tensor_text, read_type, tensor

__all__ = ["DenseElementsAttr", "dense", "dense_i64", "i64_array", "index", "HEX_THRESHOLD"]

HEX_THRESHOLD = 100
# A splat holds one element whatever its type's size, so an attribute that lists numbers
# (dimensions, paddings, pairs, device ids) is expanded only up to this many elements: a few
# bytes of text declaring tensor<2147483648x2xi64> would otherwise ask numpy for 32 GiB.
LIST_LIMIT = 1 << 20


def _le_bytes(arr: np.ndarray) -> bytes:
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and np.little_endian is False):
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return np.ascontiguousarray(arr).tobytes()


def _frozen_bytes(data) -> bytes:
    if data.__class__ is bytes:
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"dense elements attribute: data must be bytes, got {type(data).__name__}")


def is_splat(raw: bytes, itemsize: int, n: int) -> bool:
    """Whether the ``n`` elements of ``itemsize`` bytes in ``raw`` all have the same bits."""
    if n <= 1:
        return n == 1
    first = raw[:itemsize]
    if raw[-itemsize:] != first:
        return False
    return raw == first * n


# MLIR's DenseElementsAttr holds integers, floats and complex numbers only (its parser reads
# a tensor of another element type's elements as strings, a DenseStringElementsAttr); a
# quantized element type's numbers printed as its storage or expressed values would read
# back as neither.
_QUANTIZED = ("dense elements of {t}: a quantized element type holds no dense elements "
              "(MLIR's take integer, float and complex element types); make a constant of "
              "its expressed type and uniform_quantize it")


@attrs.frozen(cache_hash=True)
class DenseElementsAttr(Attribute):
    """A constant tensor: its type and its elements' raw bytes (one element if ``splat``)."""

    type: TensorType
    # Always immutable bytes of the right length: the printer caches an attribute's text by
    # its identity, so a bytearray changed after a print would print stale text.
    data: bytes = attrs.field(repr=lambda b: f"<{len(b)} bytes>", converter=_frozen_bytes)
    splat: bool = False
    # The integers of a small i64 attribute (dimension lists), kept so rules need not decode.
    ints: tuple | None = attrs.field(default=None, eq=False, hash=False, repr=False)

    def __attrs_post_init__(self):
        t = self.type
        if not isinstance(t, TensorType):
            raise TypeError(f"dense elements attribute: type must be a TensorType, got {t!r}")
        if t.element_type.kind == "quant":
            raise TypeError(_QUANTIZED.format(t=t))
        n = 1 if self.splat else t.num_elements
        if len(self.data) != n * t.dtype.itemsize:
            what = "one element" if self.splat else f"{n} elements"
            raise ValueError(f"dense elements attribute of {t}: {len(self.data)} bytes of data, "
                             f"expected {n * t.dtype.itemsize} ({what} of {t.dtype.itemsize} "
                             "bytes)")

    @classmethod
    def from_array(cls, array, type: TensorType | None = None) -> "DenseElementsAttr":
        """From a numpy array, scalar or nested list of numbers; ``type`` fixes shape and
        element type. Values are converted exactly (``mhlo_ir.exact``): 1.5 into an integer
        type, 300 into i8 or 1e10 into f16 raise ValueError, strings and objects TypeError."""
        if type is None:
            arr = as_array(array)
            if arr.dtype.kind == "O":   # integers only (as_array refuses other objects)
                if isinstance(array, np.ndarray) and all(
                        -2**63 <= int(x) < 2**63 for x in arr.reshape(-1).tolist()):
                    raise TypeError(f"value {array!r:.50} has dtype object; without a dtype "
                                    f"(or type), constants take arrays of dtype "
                                    f"{ACCEPTED_DTYPES}: pass one, or convert it "
                                    "(np.asarray(value, np.int64))")
                raise TypeError(f"value {array!r:.50} holds integers beyond int64: pass "
                                "dtype (or a type) that holds them (ui64 takes up to "
                                "2**64 - 1, a float type larger ones)")
            type = tensor(arr.shape, arr.dtype)
        else:
            arr = exact_array(array, type.element_type)
            if arr.shape != type.shape:
                if arr.size == 1:
                    arr = arr.reshape(())
                else:
                    raise ValueError(
                        f"dense: array of shape {arr.shape} does not match {type}")
        if type.num_elements == 0:
            return cls(type, b"", False)
        if arr.ndim == 0 or arr.size == 1:
            return cls(type, _le_bytes(arr.reshape(1)), True)
        raw = _le_bytes(arr)
        itemsize = arr.dtype.itemsize
        if is_splat(raw, itemsize, arr.size):
            return cls(type, raw[:itemsize], True)
        return cls(type, raw, False)

    def to_array(self) -> np.ndarray:
        """The elements as a (new, writable) numpy array of the type's shape and dtype."""
        dt = self.type.dtype.newbyteorder("<")
        flat = np.frombuffer(self.data, dtype=dt)
        if self.splat:
            return np.full(self.type.shape, flat[0], dtype=self.type.dtype)
        return flat.astype(self.type.dtype).reshape(self.type.shape)

    def listed(self) -> np.ndarray:
        """``to_array`` of an attribute that lists numbers: ValueError for a splat of more
        than LIST_LIMIT elements."""
        n = self.type.num_elements
        if self.splat and n > LIST_LIMIT:
            raise ValueError(f"{self.type} has {n} elements: more than the {LIST_LIMIT} an "
                             "attribute listing dimensions, paddings or device ids may hold")
        return self.to_array()

    def prints_hex(self, hex_threshold: int) -> bool:
        """Whether ``render`` spells the data in hex (not a splat, more elements than
        ``hex_threshold``): big data, which printers emit as a piece of its own."""
        return not self.splat and self.type.num_elements > hex_threshold

    def hex_pieces(self) -> list:
        """``render``'s hex text in three pieces, the hex alone in the middle (not copied into
        a line: for 16 MiB of data it is a 32 MiB string)."""
        return ['dense<"0x', self.data.hex(), f'"> : {self.type._text}']

    def render(self, dialect=None, hex_threshold: int = HEX_THRESHOLD) -> str:
        t = self.type
        n = t.num_elements
        if n == 0 and not self.splat:  # (MLIR keeps a splat's value with no elements)
            return f"dense<> : {t._text}"
        if self.splat:
            return f"dense<{splat_text(t.element_type, self.data)}> : {t._text}"
        if n > hex_threshold:
            return f'dense<"0x{self.data.hex()}"> : {t._text}'
        return f"dense<{_nested(self.to_array(), t.element_type)}> : {t._text}"

    @classmethod
    def parse(cls, ts, dialect=None) -> "DenseElementsAttr":
        """Reads ``dense<...> : tensor<...>`` in every form ``render`` writes (``dense<>``, a
        splat, nested lists with ``(re,im)`` pairs and bools, ``"0x..."`` hex in either case)
        and those MLIR also reads (``dense<[]>``, 0 and 1 for bools, a one-element hex string
        as a splat). The bytes come back canonical, one element when all are equal, as
        ``from_array`` makes them: ``parse(render(x)) == x``."""
        return _parse_dense(cls, ts, dialect)


def _nested(arr: np.ndarray, et) -> str:
    if arr.ndim == 0:
        return format_scalar(arr[()], et)
    if arr.ndim == 1:
        return "[" + ", ".join(format_scalar(x, et) for x in arr) + "]"
    return "[" + ", ".join(_nested(sub, et) for sub in arr) + "]"


def dense(array, type: TensorType | None = None) -> DenseElementsAttr:
    """A dense elements attribute from a numpy array (or anything ``numpy.asarray`` takes)."""
    return DenseElementsAttr.from_array(array, type)


# (element type, the element's little-endian bytes) -> its text: the few values splats hold
# (0, 1, -inf...) recur at every shape. Keyed by exact bytes (never by value: -0.0 == 0.0);
# bounded.
_SPLAT_TEXTS: dict = {}


def splat_text(et, data: bytes) -> str:
    """The text of one element of ``et`` stored as ``data`` (inside ``dense<...>``)."""
    key = (et, data)
    text = _SPLAT_TEXTS.get(key)
    if text is None:
        scalar = np.frombuffer(data, dtype=et.dtype.newbyteorder("<"))[0]
        text = format_scalar(scalar, et)
        if len(_SPLAT_TEXTS) > 4096:
            _SPLAT_TEXTS.clear()
        _SPLAT_TEXTS[key] = text
    return text


_I64_CACHE: dict = {}


def index(v) -> int:
    """``v`` as a Python int if it is an integer (numpy ints too); bools and floats, which
    ``int()`` would silently turn into dimension numbers, are errors."""
    if v.__class__ is int:
        return v
    if isinstance(v, (bool, np.bool_)) or not hasattr(v, "__index__"):
        raise TypeError(f"expected an integer, got {type(v).__name__} {v!r}")
    return v.__index__()


def dense_i64(values) -> DenseElementsAttr:
    """``dense<[...]> : tensor<Nxi64>``: a genuine 1-D i64 tensor attribute, interned.

    Op attributes that hold integer lists (dimensions, permutation, slice bounds...) are
    IndexArrayAttr, which each output dialect spells its own way (``index_array``); the op
    table's converter ``i64_array`` turns a DenseElementsAttr given to such a slot into one.
    """
    if isinstance(values, DenseElementsAttr):
        return values
    # Validated before the cache is consulted: 1.0 and True hash and compare equal to 1, so
    # a lookup first would accept them once [1] had been cached.
    key = tuple(values)
    for v in key:
        if v.__class__ is not int:
            key = tuple(map(index, key))
            break
    hit = _I64_CACHE.get(key)
    if hit is not None:
        return hit
    ints = key
    for v in ints:
        if not -2**63 <= v < 2**63:
            raise ValueError(f"{v} does not fit in i64")
    arr = np.asarray(ints, dtype=np.int64).reshape(-1)
    attr = DenseElementsAttr.from_array(arr)
    object.__setattr__(attr, "ints", ints)
    if len(_I64_CACHE) > 65536:
        _I64_CACHE.clear()
    _I64_CACHE[key] = attr
    return attr


def i64_array(v) -> IndexArrayAttr:
    """The converter of the op table's integer-array attributes (dimensions, permutation,
    slice bounds, window sizes...): integers become an interned IndexArrayAttr. A 1-D i64
    DenseElementsAttr (MHLO's spelling, e.g. parsed text) or an i64 DenseArrayAttr
    (StableHLO's) converts to the same value; other tensors are refused."""
    cls = v.__class__
    if cls is IndexArrayAttr:
        return v
    if cls is tuple or cls is list:
        return index_array(v)
    if isinstance(v, DenseElementsAttr):
        t = v.type
        if t.element_type.name != "i64" or t.rank != 1:
            raise TypeError(f"expected a 1-D tensor<Nxi64> attribute, got {t}")
        return index_array(v.ints if v.ints is not None else v.listed().tolist())
    if isinstance(v, DenseArrayAttr):
        if v.type.name != "i64":
            raise TypeError(f"expected an array<i64> attribute, got array<{v.type.name}>")
        return index_array(v.values)
    if isinstance(v, Attribute):
        raise TypeError(f"expected a list of integers, got {type(v).__name__} {v!r:.60}")
    return index_array(v)


# -- parsing ---------------------------------------------------------------------------------

_UINT_FOR_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# ``tensor<Nxindex>``: custom-call layouts (ops.custom_call.IndexLayout), the one dense
# attribute of index elements, which are no element type of ours.
_INDEX_TENSOR = re.compile(r"tensor\s*<\s*(?:\d+\s*x\s*)*index\s*>")


# ``dense<...> : tensor<...>`` as printers write a splat or a 1-D list of numbers (``dense<[1,
# 0]> : tensor<2xi64>``, ``dense<1.000000e+00> : tensor<4x8xf32>``, ``dense<> :
# tensor<0xi64>``, ``dense<true> : tensor<i1>``): read by one match (``_simple_dense``). The
# token reader takes every other spelling, and what this one finds wrong, and says what is.
_NUMBER = r"-?(?:0x[0-9a-fA-F]+|[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+)|true|false"
_SIMPLE_DENSE = re.compile(r"dense<(?:(" + _NUMBER + r")|\[((?:" + _NUMBER + r")(?:, (?:"
                           + _NUMBER + r"))*)\])?> : (tensor<(?:[0-9]+x)*[a-zA-Z][a-zA-Z0-9_]*>)")


def _simple_dense(cls, ts):
    """``_parse_dense``'s attribute where ``ts`` reads a ``_SIMPLE_DENSE`` text of a canonical
    tensor type whose elements convert and agree with it in count, else None (nothing
    consumed): the bytes and splat flag the token reader gives (one element for a splat, a
    list of one, or of equal values; none for dense<>)."""
    m = _match_next(ts, _SIMPLE_DENSE)
    if m is None:
        return None
    one, listed, type_text = m.groups()
    t = read_tensor_text(type_text)
    if t is None:
        return None
    n = t.num_elements
    if one is not None:
        spellings = [one]
    elif listed is not None:
        spellings = listed.split(", ")
        if t.shape != (len(spellings),):
            return None
    elif n:
        return None
    else:
        _consume(ts, m)
        return cls(t, b"", False)
    tok = ts.peek()  # (a stand-in for messages: a text with an error goes the token way)
    try:
        raw = _element_bytes(ts, [(tok, sp) for sp in spellings], t.element_type)
    except (ParseError, TypeError, ValueError):
        return None
    _consume(ts, m)
    return _made(cls, t, raw, one is not None)


def _parse_dense(cls, ts, dialect) -> DenseElementsAttr:
    attr = _simple_dense(cls, ts)
    if attr is not None:
        return attr
    start = ts.mark()
    ts.expect("dense")
    ts.expect("<")
    body = ts.peek()
    flat: list = []
    shape = None                     # None: a single element (a splat); else the list's shape
    hex_tok = None
    if body.kind == "string":
        hex_tok = ts.next()
    elif not ts.at(">"):
        if ts.at("["):
            shape = _read_list_whole(ts, flat) or _read_list(ts, flat)
        else:
            _read_element(ts, flat)
    ts.expect(">")
    ts.expect(":")
    type_tok = ts.peek()
    if type_tok.text == "tensor" and _INDEX_TENSOR.match(ts.text, type_tok.pos):
        from .ops.custom_call import IndexLayout
        ts.reset(start)
        return IndexLayout.parse(ts, dialect)
    t = read_type(ts, dialect)
    if t.__class__ is not TensorType:
        raise ts.error(f"dense elements need a ranked tensor type, got {t}", type_tok)
    et = t.element_type
    if et.kind == "quant":
        raise ts.error(_QUANTIZED.format(t=t), type_tok)
    n = t.num_elements
    itemsize = et.dtype.itemsize
    if hex_tok is not None:
        raw = _hex_data(ts, hex_tok, t)
        splat = len(raw) == itemsize and n != 1
    elif not flat and shape is None:           # dense<>
        if n:
            raise ts.error(f"dense<> has no elements, but {t} has {n}", body)
        return cls(t, b"", False)
    else:
        if shape is not None and shape != t.shape:
            raise ts.error(f"inferred shape of elements literal ({list(shape)}) does not match "
                           f"type ({list(t.shape)})", body)
        raw = _element_bytes(ts, flat, et)
        splat = shape is None
    return _made(cls, t, raw, splat)


def _made(cls, t, raw: bytes, splat: bool) -> DenseElementsAttr:
    """The attribute of elements read as ``raw`` (one element if written as a ``splat``):
    canonical, one element when all are equal, as ``from_array`` makes them."""
    n = t.num_elements
    itemsize = t.dtype.itemsize
    if n == 0:
        # No elements: a splat written as one keeps its value, as MLIR keeps and prints it
        # (dense<1.0> : tensor<0x3xf32>); dense<> and [] have none.
        if splat and len(raw) >= itemsize:
            return cls(t, raw[:itemsize], True)
        return cls(t, b"", False)
    if splat or n == 1 or is_splat(raw, itemsize, n):
        return cls(t, raw[:itemsize], True)
    return cls(t, raw, False)


def _read_list(ts, flat: list) -> tuple:
    """A nested list ``[[1, 2], [3, 4]]``: its elements appended to ``flat``, its shape given."""
    open_tok = ts.expect("[")
    shapes = []
    if not ts.accept("]"):
        while True:
            if ts.at("["):
                shapes.append(_read_list(ts, flat))
            else:
                _read_element(ts, flat)
                shapes.append(())
            if ts.accept("]"):
                break
            if not ts.at(","):
                raise ts.expected("',' or ']'")
            ts.next()
    if shapes and any(s != shapes[0] for s in shapes):
        raise ts.error("tensor literal is invalid; ranks are not consistent between elements",
                       open_tok)
    return (len(shapes),) + (shapes[0] if shapes else ())


# A list literal's pieces, for _read_list_whole: brackets, commas, the numbers the lexer reads
# (hex, float, decimal; a "-" before them), true and false, spaces; anything else is (.).
_LIST_PIECE = re.compile(r"(\[)|(\])|(,)|(-?(?:0x[0-9a-fA-F]+|[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?"
                         r"|[0-9]+)(?![0-9A-Za-z_$.])|(?:true|false)(?![0-9A-Za-z_$.]))"
                         r"|[ \t\r\n]+|(.)", re.S)


def _read_list_whole(ts, flat: list):
    """``_read_list`` for a list of numbers, true and false (``[[1, -2], [0x7F, 3.5]]``) read by
    one expression rather than token by token; None, nothing consumed, for any other text (a
    complex element, a comment, a malformed list), which ``_read_list`` reads or reports.
    The elements' tokens are made as the lexer makes them, for the messages of their
    conversion."""
    ahead = ts._ahead
    if len(ahead) != 1:
        return None
    text = ts.text
    start = ahead[0].pos
    # The list ends before the first ">" (none is in a list of numbers): found without
    # scanning past it, however malformed the list.
    end = text.find(">", start)
    if end < 0:
        return None
    end = len(text[start:end].rstrip(" \t\r\n")) + start
    if text[end - 1] != "]":
        return None
    items: list = []
    levels: list = []  # the shapes of each open list's entries
    prev = None  # what came last: "[" , "," or "item"
    shape = None
    for m in _LIST_PIECE.finditer(text, start, end):
        i = m.lastindex
        if i is None:  # spaces
            continue
        if i == 1:
            if prev == "item" or shape is not None:
                return None
            levels.append([])
            prev = "["
        elif i == 2:
            if prev == "," or not levels:
                return None
            entries = levels.pop()
            if entries and any(e != entries[0] for e in entries):
                return None  # ranks differ: _read_list says so at the bracket
            got = (len(entries),) + (entries[0] if entries else ())
            if levels:
                levels[-1].append(got)
            else:
                shape = got
            prev = "item"
        elif i == 3:
            if prev != "item" or not levels:
                return None
            prev = ","
        elif i == 4:
            if prev == "item" or not levels:
                return None
            piece = m.group(4)
            pos = m.start(4)
            if piece[0] == "-":
                piece, pos = piece[1:], pos + 1
                spelling = "-" + piece
            else:
                spelling = piece
            kind = ("bare" if piece[0] in "tf" else "float" if "." in piece and
                    not piece.startswith("0x") else "int")
            if kind == "bare" and spelling[0] == "-":
                return None  # -true
            items.append((Token(kind, piece, pos), spelling))
            levels[-1].append(())
            prev = "item"
        else:
            return None
    if shape is None or levels:
        return None
    flat.extend(items)
    ahead.clear()
    ts._pos = end
    return shape


def _read_element(ts, flat: list) -> None:
    """One element: ``true``/``false``, a number, or a complex ``(re, im)`` pair; appended to
    ``flat`` as (token, spelling) or (token, (re spelling, im spelling))."""
    tok = ts.peek()
    if tok.kind == "bare" and tok.text in ("true", "false"):
        ts.next()
        flat.append((tok, tok.text))
    elif ts.accept("("):
        _, re = read_number_literal(ts)
        ts.expect(",")
        _, im = read_number_literal(ts)
        ts.expect(")")
        flat.append((tok, (re, im)))
    else:
        flat.append(read_number_literal(ts))


def _int_element_bits(ts, tok, spelling, et) -> int:
    """The two's complement bits (``et.bits`` wide) of an integer element."""
    if spelling in ("true", "false") or "." in spelling or isinstance(spelling, tuple):
        raise ts.error(f"expected an integer element of {et.name}, got {tok.text}", tok)
    neg = spelling.startswith("-")
    body = spelling[1:] if neg else spelling
    v = int(body, 16) if body.startswith("0x") else int(body)
    v = -v if neg else v
    bits = et.bits
    if et.kind == "uint":
        if neg:  # (-0 too, as MLIR refuses it)
            raise ts.error("negative integer literal not valid for unsigned integer type", tok)
        lo = 0
    else:
        lo = -(1 << (bits - 1))
    if not lo <= v < 1 << bits or neg and not v:  # (MLIR: -0 is out of range)
        raise ts.error(f"integer constant {spelling} out of range for {et.name}", tok)
    return v & ((1 << bits) - 1)


def _float_element_bits(ts, tok, spelling, et) -> int:
    if not isinstance(spelling, str) or spelling in ("true", "false"):
        raise ts.error(f"expected a float element of {et.name}", tok)
    return ts.make(tok, parse_float_bits, spelling, et)


def _element_bytes(ts, flat: list, et) -> bytes:
    """The little-endian bytes of the parsed elements, one byte each for sub-byte types. One
    element (a splat: the zeros and ones of every program, at every shape) is kept by its
    spelling and element type."""
    if len(flat) == 1:
        sp = flat[0][1]  # (a str, or a complex element's pair of them: exact)
        short = len(sp) <= 40 if sp.__class__ is str else len(sp[0]) + len(sp[1]) <= 80
    else:
        short = False
    if short:
        key = (et, sp)
        raw = _ONE_ELEMENT.get(key)
        if raw is None:
            raw = _elements_bytes(ts, flat, et)
            if len(_ONE_ELEMENT) > 4096:
                _ONE_ELEMENT.clear()
            _ONE_ELEMENT[key] = raw
        return raw
    return _elements_bytes(ts, flat, et)


# (element type, one element's spelling) -> its bytes; bounded, spellings of at most 40
# characters (every printer's; a longer literal is not kept).
_ONE_ELEMENT: dict = {}


def _elements_bytes(ts, flat: list, et) -> bytes:
    kind = et.kind
    if kind == "bool":
        out = []
        for tok, sp in flat:
            if sp == "true" or sp == "false":
                out.append(sp == "true")
            else:
                b = _int_element_bits(ts, tok, sp, et)
                out.append(b)
        return bytes(out)
    if kind == "complex":
        comp = et.component
        words = []
        for tok, sp in flat:
            if not isinstance(sp, tuple):
                raise ts.error(f"expected a complex element (re, im) of {et.name}", tok)
            words.append(_float_element_bits(ts, tok, sp[0], comp))
            words.append(_float_element_bits(ts, tok, sp[1], comp))
        storage = _UINT_FOR_SIZE[comp.dtype.itemsize]
    else:
        conv = _float_element_bits if kind == "float" else _int_element_bits
        words = [conv(ts, tok, sp, et) for tok, sp in flat]
        storage = _UINT_FOR_SIZE[et.dtype.itemsize]
    return np.array(words, dtype=storage).astype(np.dtype(storage).newbyteorder("<")).tobytes()


# Hex digits decoded per call of bytes.fromhex: pieces this size keep the copies of the
# source and the decoded bytes in cache and out of fresh memory (whose page faults cost more
# than decoding on a VM); a 16 MiB constant decodes ~1.6x faster than in one piece.
_HEX_PIECE = 1 << 18


def _decode_hex(src: str, start: int, end: int) -> bytes | None:
    """The bytes ``src[start:end]`` spells in hex digits of either case, or None where it
    holds anything else. binascii.unhexlify is the fastest decoder at hand (10-50% faster than
    bytes.fromhex here, which also skips whitespace) and refuses everything but pairs of hex
    digits; a big span is decoded in pieces that stay in the CPU's caches."""
    unhex = _unhexlify
    try:
        if end - start <= _HEX_PIECE:
            return unhex(src[start:end])
        return b"".join([unhex(src[s:s + _HEX_PIECE if s + _HEX_PIECE < end else end])
                         for s in range(start, end, _HEX_PIECE)])
    except ValueError:  # binascii.Error is one; so is a str with non-ASCII characters
        return None


def _hex_data(ts, tok, t: TensorType) -> bytes:
    """The raw bytes of ``"0x..."`` (either case) for tensor type ``t``: all elements, or one
    (a splat); sub-byte elements one byte each with the high bits clear, as MLIR keeps them."""
    # The token's own text, not its decoded value: hex digits have no escapes, so anything
    # but digits in it (an escape, a line break, a space) is an error. (A long token's digits
    # are read straight from the source: see LongString.)
    if tok.__class__ is LongString:
        span = tok.hex_span()
        raw = _decode_hex(tok.source, *span) if span is not None else None
    else:
        text = tok.text
        raw = _decode_hex(text, 3, len(text) - 1) if text.startswith('"0x') else None
    if raw is None:
        raise ts.error('expected a hex string "0x..." of the elements\' raw bytes', tok)
    et = t.element_type
    itemsize = et.dtype.itemsize
    if len(raw) != t.num_elements * itemsize and len(raw) != itemsize:
        raise ts.error(f"elements hex data size is invalid for provided type: {len(raw)} "
                       f"bytes for {t} ({t.num_elements} x {itemsize} bytes)", tok)
    if et.bits < 8 and raw and int(np.frombuffer(raw, np.uint8).max()) >> et.bits:
        bad = next(b for b in raw if b >> et.bits)
        raise ts.error(f"hex byte 0x{bad:02X} is not an element of {et.name}: sub-byte elements "
                       "take one byte each, high bits clear", tok)
    return raw
