"""Element types: the 28 scalar types an MHLO tensor can hold, and their numpy dtypes.

Each element type is an interned singleton, so comparing two of them is an identity check and
printing one costs a slot read. The numpy side uses ``ml_dtypes`` for everything numpy lacks
(bfloat16, the float8/float4 formats, 2- and 4-bit integers); those are stored one element per
byte, which is also the layout jaxlib's dense-elements parser expects.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = [
    "ElementType", "element_type", "from_numpy", "ALL_ELEMENT_TYPES",
    "i1", "i2", "i4", "i8", "i16", "i32", "i64", "ui2", "ui4", "ui8", "ui16", "ui32", "ui64",
    "bf16", "f16", "f32", "f64", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ",
    "f8E4M3B11FNUZ", "f8E3M4", "f8E4M3", "f8E8M0FNU", "f4E2M1FN", "complex64", "complex128",
]


class ElementType:
    """One MLIR element type (``f32``, ``ui8``, ``complex<f64>``...) and its numpy dtype.

    ``kind`` is one of ``"bool"``, ``"sint"`` (signless integers, which MLIR prints and XLA
    treats as signed), ``"uint"``, ``"float"`` and ``"complex"``. ``bits`` is the logical
    width; ``dtype.itemsize`` is the storage width.
    """

    __slots__ = ("name", "dtype", "kind", "bits", "mantissa_bits", "component")

    def __init__(self, name, dtype, kind, bits, mantissa_bits=0, component=None):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.kind = kind
        self.bits = bits
        # Significand precision including the implicit bit (APFloat's "precision"); the
        # printer needs it to reproduce MLIR's float formatting.
        self.mantissa_bits = mantissa_bits
        self.component = component

    @property
    def is_integer(self) -> bool:
        return self.kind in ("sint", "uint")

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_sub_byte(self) -> bool:
        """Narrower than a byte (i2, ui4, f4E2M1FN...): what XLA packs, and what many of its
        backends' rules leave out; not i1, which XLA stores as a byte."""
        return self.bits < 8 and self.kind != "bool"

    def __repr__(self):
        return f"mhlo_ir.dtypes.{_PY_NAMES.get(self.name, self.name)}"

    def __str__(self):
        return self.name

    def render(self, dialect=None) -> str:
        """The type's text (``f32``): element types are types too, in a TypeAttr or signature."""
        return self.name

    @staticmethod
    def parse(ts, dialect=None) -> "ElementType":
        """Reads an element type from token stream ``ts``: the inverse of ``render``."""
        return parse_element_type(ts)

    def __reduce__(self):
        return (element_type, (self.name,))


def _float(name, dtype, bits):
    return ElementType(name, dtype, "float", bits, ml_dtypes.finfo(dtype).nmant + 1)


i1 = ElementType("i1", np.bool_, "bool", 1)
i2 = ElementType("i2", ml_dtypes.int2, "sint", 2)
i4 = ElementType("i4", ml_dtypes.int4, "sint", 4)
i8 = ElementType("i8", np.int8, "sint", 8)
i16 = ElementType("i16", np.int16, "sint", 16)
i32 = ElementType("i32", np.int32, "sint", 32)
i64 = ElementType("i64", np.int64, "sint", 64)
ui2 = ElementType("ui2", ml_dtypes.uint2, "uint", 2)
ui4 = ElementType("ui4", ml_dtypes.uint4, "uint", 4)
ui8 = ElementType("ui8", np.uint8, "uint", 8)
ui16 = ElementType("ui16", np.uint16, "uint", 16)
ui32 = ElementType("ui32", np.uint32, "uint", 32)
ui64 = ElementType("ui64", np.uint64, "uint", 64)
bf16 = _float("bf16", ml_dtypes.bfloat16, 16)
f16 = _float("f16", np.float16, 16)
f32 = _float("f32", np.float32, 32)
f64 = _float("f64", np.float64, 64)
f8E4M3FN = _float("f8E4M3FN", ml_dtypes.float8_e4m3fn, 8)
f8E5M2 = _float("f8E5M2", ml_dtypes.float8_e5m2, 8)
f8E4M3FNUZ = _float("f8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz, 8)
f8E5M2FNUZ = _float("f8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz, 8)
f8E4M3B11FNUZ = _float("f8E4M3B11FNUZ", ml_dtypes.float8_e4m3b11fnuz, 8)
f8E3M4 = _float("f8E3M4", ml_dtypes.float8_e3m4, 8)
f8E4M3 = _float("f8E4M3", ml_dtypes.float8_e4m3, 8)
f8E8M0FNU = _float("f8E8M0FNU", ml_dtypes.float8_e8m0fnu, 8)
f4E2M1FN = _float("f4E2M1FN", ml_dtypes.float4_e2m1fn, 4)
complex64 = ElementType("complex<f32>", np.complex64, "complex", 64, component=f32)
complex128 = ElementType("complex<f64>", np.complex128, "complex", 128, component=f64)

ALL_ELEMENT_TYPES: tuple[ElementType, ...] = (
    i1, i2, i4, i8, i16, i32, i64, ui2, ui4, ui8, ui16, ui32, ui64,
    bf16, f16, f32, f64, f8E4M3FN, f8E5M2, f8E4M3FNUZ, f8E5M2FNUZ, f8E4M3B11FNUZ,
    f8E3M4, f8E4M3, f8E8M0FNU, f4E2M1FN, complex64, complex128,
)

_BY_NAME = {t.name: t for t in ALL_ELEMENT_TYPES}
_BY_NAME.update(complex64=complex64, complex128=complex128)
_PY_NAMES = {"complex<f32>": "complex64", "complex<f64>": "complex128"}
# ml_dtypes' types compare equal to each other in some numpy versions (all are kind "V"), so
# key the reverse map on the dtype's name, which is unique.
_BY_DTYPE_NAME = {t.dtype.name: t for t in ALL_ELEMENT_TYPES}


def element_type(name: str) -> ElementType:
    """The element type spelled ``name`` as MLIR prints it (``"f32"``, ``"complex<f64>"``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"unknown element type {name!r}; expected one of "
            + ", ".join(t.name for t in ALL_ELEMENT_TYPES)) from None


def from_numpy(dtype) -> ElementType:
    """The element type that holds values of numpy ``dtype`` (bool → i1, int32 → i32...)."""
    if isinstance(dtype, ElementType):
        return dtype
    if dtype is None:  # numpy reads None as float64; here it is a mistake
        raise TypeError("None is not a dtype or element type")
    if isinstance(dtype, str):
        # MLIR spellings first ("i8" is an 8-bit integer here, not numpy's int64); other
        # strings only as numpy's full dtype names ("float32", "bfloat16"), never its
        # ambiguous shorthands ("i8", "f8").
        if dtype in _BY_NAME:
            return _BY_NAME[dtype]
        if dtype in _BY_DTYPE_NAME:
            return _BY_DTYPE_NAME[dtype]
        raise TypeError(f"{dtype!r} is not an MLIR element type name ({', '.join(_BY_NAME)}) "
                        "or a numpy dtype name such as 'float32'")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not a numpy dtype or element type") from None
    try:
        return _BY_DTYPE_NAME[dt.name]
    except KeyError:
        raise TypeError(f"numpy dtype {dt} has no MHLO element type") from None


# The names MLIR spells bare (``complex<f32>`` is read in two steps; "complex64" is our alias,
# not MLIR's).
_BARE_NAMES = {t.name: t for t in ALL_ELEMENT_TYPES if not t.is_complex}
_COMPLEX_OF = {"f32": complex64, "f64": complex128}


def parse_element_type(ts) -> ElementType:
    """Reads one element type (``f32``, ``ui4``, ``complex<f64>``, ``!quant.uniform<...>``)
    from token stream ``ts``."""
    tok = ts.peek()
    if tok.kind == "bare":
        if tok.text == "complex":
            ts.next()
            ts.expect("<")
            inner = ts.peek()
            et = _COMPLEX_OF.get(inner.text) if inner.kind == "bare" else None
            if et is None:
                raise ts.expected("f32 or f64 (the complex types XLA has)")
            ts.next()
            ts.expect(">")
            return et
        et = _BARE_NAMES.get(tok.text)
        if et is not None:
            ts.next()
            return et
    elif tok.kind == "!" and tok.text.startswith("!quant."):
        from .quant import read_quantized
        return read_quantized(ts)
    raise ts.expected("an element type (" + ", ".join(t.name for t in ALL_ELEMENT_TYPES) + ")")


def extreme(dtype, low: bool) -> np.ndarray:
    """The least (``low``) or greatest value of numpy ``dtype`` as a 0-d array: -inf or inf
    where the type has infinities, else its finite extreme (float8 types such as f8E4M3FN
    have no inf: -inf would become NaN); the identities of max and min reductions."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array(not low)
    if dtype.kind in "iu" or dtype.name in ("int2", "int4", "uint2", "uint4"):
        info = ml_dtypes.iinfo(dtype)
        return np.array(info.min if low else info.max, dtype)
    with np.errstate(all="ignore"):
        inf = np.array(-np.inf if low else np.inf, dtype)
    if dtype.kind == "c" or np.isinf(inf.astype(np.float32)):  # complex: (+-inf, 0)
        return inf
    info = ml_dtypes.finfo(dtype)
    return np.array(info.min if low else info.max, dtype)
