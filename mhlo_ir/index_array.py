"""Integer-array attribute values: dimension lists, permutations, slice bounds, paddings, windows.

About thirty attribute slots of the op table (``broadcast_dimensions``, ``permutation``,
``start_indices``, ``edge_padding_low``, ``window_strides``, ``fft_length``, ...) hold a short
list of i64. MHLO spells them ``dense<[1, 2]> : tensor<2xi64>``, StableHLO ``array<i64: 1, 2>``:
one value kind, ``IndexArrayAttr``, holds the integers and the output dialect picks the spelling
(``Dialect.index_arrays``), so no op spec knows either spelling.

NOTE: not a DenseElementsAttr on purpose. The printer special-cases that class (big constants
print as hex in pieces), and code that tests ``isinstance(v, DenseElementsAttr)`` must not
mistake a dimension list for a constant tensor.
"""

from __future__ import annotations

import attrs
import numpy as np

from .attributes import Attribute

__all__ = ["IndexArrayAttr", "BoolArrayAttr", "index_array", "index_ints", "I64_MIN",
           "I64_MAX"]

I64_MIN, I64_MAX = -2**63, 2**63 - 1

# MLIR prints dense elements with more than this many elements as hex (dense.HEX_THRESHOLD; not
# imported from there so that this module stays below dense.py).
_HEX_THRESHOLD = 100


def _as_tuple(values) -> tuple:
    if values.__class__ is tuple:
        return values
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"expected a sequence of integers, got {type(values).__name__} "
                        f"{values!r:.60}")
    return tuple(values)


def _checked(values) -> tuple:
    """``values`` as a tuple of Python ints, each a real integer (numpy ints too; no bools, no
    floats, not even 1.0) in i64 range. Raises TypeError / ValueError."""
    values = _as_tuple(values)
    out = None
    for i, v in enumerate(values):
        if v.__class__ is not int:
            if isinstance(v, (bool, np.bool_)) or not hasattr(v, "__index__"):
                raise TypeError(f"expected integers, got {type(v).__name__} {v!r:.60} at "
                                f"index {i}")
            if out is None:
                out = list(values[:i])
            v = v.__index__()
        elif out is None:
            if I64_MIN <= v <= I64_MAX:
                continue
        if not I64_MIN <= v <= I64_MAX:
            raise ValueError(f"{v} at index {i} does not fit in i64")
        if out is not None:
            out.append(v)
    return values if out is None else tuple(out)


@attrs.frozen(cache_hash=True)
class IndexArrayAttr(Attribute):
    """A list of i64 held as a tuple of Python ints (``ints``); its text is the output
    dialect's: ``dense<[1, 2]> : tensor<2xi64>`` in MHLO, ``array<i64: 1, 2>`` in StableHLO.

    Build it with ``index_array(values)``, which interns; the constructor validates too.
    Iterating it gives the ints, so code that takes a list of dimensions takes one of these.
    """

    ints: tuple = attrs.field(converter=_checked)

    def __iter__(self):
        return iter(self.ints)

    def to_array(self) -> np.ndarray:
        """The ints as a new 1-D int64 numpy array (what DenseElementsAttr.to_array gives)."""
        return np.array(self.ints, dtype=np.int64)

    def render(self, dialect, hex_threshold: int = _HEX_THRESHOLD) -> str:
        if dialect is not None and dialect.index_arrays == "array":
            return array_text(self.ints)
        return dense_text(self.ints, hex_threshold)

    @classmethod
    def parse(cls, ts, dialect) -> "IndexArrayAttr":
        """Reads the dialect's spelling back: ``dense<...> : tensor<Nxi64>`` (any form: list,
        splat, hex) in MHLO, ``array<i64: ...>`` in StableHLO. The other spelling is an
        error, as jaxlib rejects it on the dialect's ops."""
        return index_array(_read_list(ts, dialect, "i64", "integer",
                                      lambda et: et.name == "i64"))


def dense_text(ints: tuple, hex_threshold: int = _HEX_THRESHOLD) -> str:
    """``ints`` as MLIR prints a 1-D ``tensor<Nxi64>`` dense elements attribute: ``dense<>``
    when empty, ``dense<v>`` when every element is ``v`` (a splat: also the one-element case),
    hex above ``hex_threshold`` elements, else a list."""
    n = len(ints)
    t = f"tensor<{n}xi64>"
    if n == 0:
        return f"dense<> : {t}"
    first = ints[0]
    if ints.count(first) == n:
        return f"dense<{first}> : {t}"
    if n > hex_threshold:
        return f'dense<"0x{np.array(ints, dtype="<i8").tobytes().hex()}"> : {t}'
    return f"dense<[{', '.join(map(str, ints))}]> : {t}"


def array_text(ints: tuple) -> str:
    """``ints`` as MLIR prints a ``DenseI64ArrayAttr``: ``array<i64: 1, 2>``, ``array<i64>``."""
    if not ints:
        return "array<i64>"
    return f"array<i64: {', '.join(map(str, ints))}>"


def _bool_tuple(values) -> tuple:
    values = _as_tuple(values)
    for i, v in enumerate(values):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"expected bools, got {type(v).__name__} {v!r:.60} at index {i}")
    return tuple(bool(v) for v in values)


@attrs.frozen(cache_hash=True)
class BoolArrayAttr(Attribute):
    """A list of bools (convolution's ``window_reversal``) whose text is the output dialect's:
    ``dense<[true, false]> : tensor<2xi1>`` in MHLO, ``array<i1: true, false>`` in StableHLO
    (jaxlib rejects each spelling on the other dialect's op), as IndexArrayAttr does for i64.
    """

    bools: tuple = attrs.field(converter=_bool_tuple)

    def __iter__(self):
        return iter(self.bools)

    def to_array(self) -> np.ndarray:
        """The bools as a new 1-D numpy bool array."""
        return np.array(self.bools, dtype=np.bool_).reshape(-1)

    def render(self, dialect, hex_threshold: int = _HEX_THRESHOLD) -> str:
        if dialect is not None and dialect.index_arrays == "array":
            if not self.bools:
                return "array<i1>"
            return "array<i1: " + ", ".join("true" if b else "false" for b in self.bools) + ">"
        # MHLO's spelling is a 1-D i1 dense elements attribute's, splats and hex included.
        from .dense import DenseElementsAttr
        return DenseElementsAttr.from_array(self.to_array()).render(dialect, hex_threshold)

    @classmethod
    def parse(cls, ts, dialect) -> "BoolArrayAttr":
        """Reads the dialect's spelling back (the other one is an error, as in jaxlib)."""
        return cls(tuple(_read_list(ts, dialect, "i1", "bool", lambda et: et.is_bool)))


def _read_list(ts, dialect, name: str, what: str, element_ok) -> list:
    """The values of a 1-D list attribute of element type ``name`` in the dialect's spelling:
    ``array<name: ...>`` in StableHLO, ``dense<...> : tensor<Nxname>`` (any form: list,
    splat, hex) in MHLO. The other spelling is an error, as jaxlib rejects it on the
    dialect's ops."""
    tok = ts.peek()
    if dialect is not None and dialect.index_arrays == "array":
        from .attributes import DenseArrayAttr
        if not ts.at("array"):
            raise ts.expected(f"array<{name}: ...> (how {dialect.name} spells {what} lists)")
        a = DenseArrayAttr.parse(ts, dialect)
        if not element_ok(a.type):
            raise ts.error(f"expected array<{name}: ...>, got array<{a.type.name}>", tok)
        return list(a.values)
    from .dense import DenseElementsAttr
    if not ts.at("dense"):
        raise ts.expected(f"dense<...> : tensor<Nx{name}> (how "
                          f"{'mhlo' if dialect is None else dialect.name} spells {what} lists)")
    a = DenseElementsAttr.parse(ts, dialect)
    if not element_ok(a.type.element_type) or a.type.rank != 1:
        raise ts.error(f"expected a 1-D tensor<Nx{name}> attribute, got {a.type}", tok)
    try:
        return a.listed().tolist()
    except ValueError as e:
        raise ts.error(str(e), tok) from None


_CACHE: dict = {}
_CACHE_LIMIT = 65536


def index_array(values) -> IndexArrayAttr:
    """The IndexArrayAttr of ``values`` (any iterable of integers), interned: programs use the
    same few dimension lists over and over, and one object per list makes the builder's and
    printer's caches hit by identity.

    Values are checked before the cache is consulted: ``(1.0,)`` and ``(True,)`` are equal keys
    to ``(1,)`` and must not find its entry.
    """
    cls = values.__class__
    if cls is IndexArrayAttr:
        return values
    key = values if cls is tuple else _as_tuple(values)
    for v in key:
        if v.__class__ is not int:
            key = _checked(key)
            break
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    attr = IndexArrayAttr(key)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = attr
    return attr


def index_ints(attr) -> tuple:
    """The ints of an integer-array slot's value: an IndexArrayAttr, or what older code and
    parsed text may have put there (a 1-D i64 DenseElementsAttr or DenseArrayAttr, an
    IntegerAttr for one value)."""
    if attr.__class__ is IndexArrayAttr:
        return attr.ints
    ints = getattr(attr, "ints", None)
    if ints is not None:
        return ints
    values = getattr(attr, "values", None)  # DenseArrayAttr
    if values is not None:
        return tuple(values)
    value = getattr(attr, "value", None)  # IntegerAttr
    if value is not None:
        return (value,)
    listed = getattr(attr, "listed", None)  # a DenseElementsAttr's: a huge splat refused
    return tuple(int(x) for x in (listed() if listed else attr.to_array()).reshape(-1))
