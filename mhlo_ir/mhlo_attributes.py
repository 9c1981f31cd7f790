"""MHLO's enum and structured attributes, spelled through the output dialect (and CHLO's
comparison enums, which are spelled the same in every dialect).

Each renders the way MLIR prints it for the dialect in hand (``#mhlo<comparison_direction GT>``,
``#mhlo.dot<...>``), so the same value can later print as StableHLO. Empty list fields of the
structured attributes are omitted exactly where MLIR's printer omits them.
"""

from __future__ import annotations

from typing import Sequence

import attrs
import numpy as np

from .attributes import Attribute

__all__ = [
    "EnumAttr", "comparison_direction", "comparison_type", "precision", "fft_type", "transpose",
    "rng_algorithm", "rng_distribution", "DotDimensionNumbers", "DotAlgorithm",
    "GatherDimensionNumbers",
    "ScatterDimensionNumbers", "ConvDimensionNumbers", "ChannelHandle", "OutputOperandAlias",
    "RaggedDotDimensionNumbers", "MiscEnumAttr", "ChloEnumAttr", "ENUM_VALUES",
    "MISC_ENUM_VALUES", "misc_enum", "read_dialect_attribute", "register_dialect_attribute",
]

ENUM_VALUES = {
    "comparison_direction": ("EQ", "NE", "GE", "GT", "LE", "LT"),
    "comparison_type": ("NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"),
    "precision": ("DEFAULT", "HIGH", "HIGHEST"),
    "fft_type": ("FFT", "IFFT", "RFFT", "IRFFT"),
    "transpose": ("TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"),
    "rng_algorithm": ("DEFAULT", "THREE_FRY", "PHILOX"),
    "rng_distribution": ("UNIFORM", "NORMAL"),
}


@attrs.frozen
class EnumAttr(Attribute):
    """One value of a dialect enum, e.g. ``EnumAttr("comparison_direction", "GT")``."""

    kind: str
    value: str

    def __attrs_post_init__(self):
        allowed = ENUM_VALUES.get(self.kind)
        if allowed is None:
            raise ValueError(
                f"unknown enum kind {self.kind!r}; expected one of {sorted(ENUM_VALUES)}")
        if self.value not in allowed:
            raise ValueError(f"{self.kind}: {self.value!r} is not one of {', '.join(allowed)}")

    def render(self, dialect) -> str:
        return dialect.enum(self.kind, self.value)

    @classmethod
    def parse(cls, ts, dialect) -> "EnumAttr":
        """Reads an enum as ``dialect.enum`` spells it (``#mhlo<comparison_direction GT>``,
        ``#mhlo.rng_algorithm<THREE_FRY>``)."""
        kind = dialect.attribute_mnemonic(ts)
        if kind not in ENUM_VALUES:
            raise ts.expected(f"a #{dialect.name} enum attribute")
        tok = dialect.read_enum(ts, kind)
        return ts.make(tok, cls, kind, tok.text)


def _enum_factory(kind, cls=EnumAttr, values=ENUM_VALUES, upper: bool = True):
    """The converter to ``kind`` enum attributes of class ``cls`` (EnumAttr, whose values
    are read case-insensitively, or MiscEnumAttr, whose are not): an attribute of that kind
    passes, a string naming a value becomes one (made once per value)."""
    cache = {}

    def make(value):
        if isinstance(value, cls):
            if value.kind != kind:
                raise ValueError(f"expected a {kind} attribute, got {value.kind}")
            return value
        if not isinstance(value, str):
            raise TypeError(f"{kind}: {value!r:.60} is not one of "
                            f"{', '.join(values[kind])}")
        key = value.upper() if upper else value
        try:
            return cache[key]
        except KeyError:
            cache[key] = attr = cls(kind, key)  # (validated: a bad value raises, uncached)
            return attr

    make.__name__ = kind
    make.__doc__ = f"The ``{kind}`` enum value named ``value``" + \
        (" (case-insensitive)." if upper else ".")
    return make


comparison_direction = _enum_factory("comparison_direction")
comparison_type = _enum_factory("comparison_type")
precision = _enum_factory("precision")
fft_type = _enum_factory("fft_type")
transpose = _enum_factory("transpose")
rng_algorithm = _enum_factory("rng_algorithm")
rng_distribution = _enum_factory("rng_distribution")


# Enums of single ops (fusion's kind, domain's kind), printed like the others.
MISC_ENUM_VALUES = {"fusion_kind": ("kLoop", "kInput", "kOutput", "kCustom"),
                    "kind": ("sharding",)}


@attrs.frozen
class MiscEnumAttr(Attribute):
    """``#mhlo<fusion_kind kLoop>``, ``#mhlo<kind sharding>`` (domain kinds)."""

    kind: str
    value: str

    def __attrs_post_init__(self):
        allowed = MISC_ENUM_VALUES.get(self.kind)
        if allowed is None:
            raise ValueError(f"unknown enum kind {self.kind!r}; expected one of "
                             f"{sorted(MISC_ENUM_VALUES)}")
        if self.value not in allowed:
            raise ValueError(f"{self.kind}: {self.value!r} is not one of {', '.join(allowed)}")

    def render(self, dialect) -> str:
        return dialect.enum(self.kind, self.value)

    @classmethod
    def parse(cls, ts, dialect) -> "MiscEnumAttr":
        """Reads ``#mhlo<fusion_kind kLoop>`` or ``#mhlo<kind sharding>``."""
        kind = dialect.attribute_mnemonic(ts)
        if kind not in MISC_ENUM_VALUES:
            raise ts.expected(f"#{dialect.name}<fusion_kind ...> or #{dialect.name}<kind ...>")
        tok = dialect.read_enum(ts, kind)
        return ts.make(tok, cls, kind, tok.text)


def misc_enum(kind: str):
    """The converter of a MiscEnumAttr of kind ``kind`` (domain's kind, fusion's
    fusion_kind): such an attribute, or a string naming one of its values."""
    return _enum_factory(kind, MiscEnumAttr, MISC_ENUM_VALUES, upper=False)


_CHLO_ENUMS = ("comparison_direction", "comparison_type")


@attrs.frozen
class ChloEnumAttr(Attribute):
    """``#chlo<comparison_direction GT>``: CHLO's own spelling of the comparison enums (it is
    the same in every output dialect, so it does not go through the dialect)."""

    kind: str
    value: str

    def __attrs_post_init__(self):
        if self.kind not in _CHLO_ENUMS:
            raise ValueError(f"unknown chlo enum kind {self.kind!r}; expected "
                             "comparison_direction or comparison_type")
        allowed = ENUM_VALUES[self.kind]
        if self.value not in allowed:
            raise ValueError(f"{self.kind}: {self.value!r} is not one of {', '.join(allowed)}")

    def render(self, dialect=None) -> str:
        return f"#chlo<{self.kind} {self.value}>"

    @classmethod
    def parse(cls, ts, dialect=None) -> "ChloEnumAttr":
        """Reads ``#chlo<comparison_direction GT>`` or ``#chlo<comparison_type FLOAT>``."""
        start = ts.peek()
        if start.kind != "#" or start.text != "#chlo" or not ts.at("<", 1):
            raise ts.expected("#chlo<comparison_direction ...> or #chlo<comparison_type ...>")
        ts.next()
        ts.next()
        kind = ts.expect_kind("bare", "comparison_direction or comparison_type")
        if kind.text not in _CHLO_ENUMS:
            raise ts.error(f"unknown chlo enum kind {kind.text!r}; expected "
                           "comparison_direction or comparison_type", kind)
        value = ts.expect_kind("bare", f"a {kind.text} value")
        ts.expect(">")
        return ts.make(value, cls, kind.text, value.text)


def _show(v) -> str:
    return f"{type(v).__name__} {v!r:.40}"


def _int_field(owner: str, name: str):
    """The converter of an integer field: Python and numpy integers only. ``int()`` made 1.5
    into 1 and True into 1; a float or bool here is a mistake, named with its field."""
    def convert(v) -> int:
        if v.__class__ is int:
            return v
        if isinstance(v, (bool, np.bool_)) or not hasattr(v, "__index__"):
            raise TypeError(f"{owner} {name}: expected an integer, got {_show(v)}")
        return v.__index__()
    convert.__name__ = name
    return convert


def _ints_field(owner: str, name: str):
    """The converter of a list-of-integers field (a list, tuple, range or 1-D array)."""
    def convert(xs) -> tuple:
        if xs.__class__ is tuple:
            for x in xs:
                if x.__class__ is not int:
                    break
            else:
                return xs
        if isinstance(xs, (str, bytes, dict, Attribute)) or not hasattr(xs, "__iter__"):
            raise TypeError(f"{owner} {name}: expected a list of integers, got {_show(xs)}")
        out = []
        for i, x in enumerate(xs):
            if x.__class__ is not int:
                if isinstance(x, (bool, np.bool_)) or not hasattr(x, "__index__"):
                    raise TypeError(f"{owner} {name}: entry {i} must be an integer, got "
                                    f"{_show(x)}")
                x = x.__index__()
            out.append(x)
        return tuple(out)
    convert.__name__ = name
    return convert


def _integer_fields(cls, fields):
    """attrs field transformer: each ``int`` field of a structured attribute takes integers
    only and each ``tuple`` field lists of them, refusing what ``int()`` silently truncated,
    with the class and field named."""
    out = []
    for f in fields:
        if f.converter is None and f.type in ("int", "tuple"):
            make = _int_field if f.type == "int" else _ints_field
            f = f.evolve(converter=make(cls.__name__, f.name))
        out.append(f)
    return out


def struct_attribute(cls):
    """``attrs.frozen`` for a structured attribute whose ``int`` and ``tuple`` fields hold
    integers (see ``_integer_fields``)."""
    return attrs.frozen(cls, field_transformer=_integer_fields)


def _list(name: str, xs: Sequence[int]) -> str:
    return f"{name} = [{', '.join(map(str, xs))}]"


def _fields(*pairs, always=()) -> str:
    """``a = [..], b = [..]`` skipping empty lists, as MLIR's struct printers do."""
    return ", ".join(_list(n, v) for n, v in pairs if v or n in always)


def _read_ints(ts) -> tuple:
    return tuple(ts.comma_list(ts.integer, "]", open="["))


def _read_fields(ts, readers: dict, what: str, required=()) -> dict:
    """``name = value, ...`` up to the closing ``>`` (not consumed), in any order, each name
    at most once, as MLIR's struct parsers read them; ``readers`` maps names to readers."""
    out = {}
    tok = ts.peek()
    if not ts.at(">"):
        while True:
            tok = ts.peek()
            if tok.kind != "bare" or tok.text not in readers:
                raise ts.expected(f"a {what} field ({', '.join(readers)})")
            if tok.text in out:
                raise ts.error(f"duplicate {what} field {tok.text!r}", tok)
            ts.next()
            ts.expect("=")
            out[tok.text] = readers[tok.text](ts)
            if not ts.accept(","):
                break
    missing = [n for n in required if n not in out]
    if missing:
        raise ts.error(f"{what}: missing {', '.join(missing)}", ts.peek())
    return out


def _parse_struct(cls, ts, dialect, mnemonic: str, readers: dict, required=()):
    """A ``#mhlo.<mnemonic><field = value, ...>`` attribute of ``cls``."""
    start = ts.peek()
    closing = dialect.open_struct(ts, mnemonic)
    fields = _read_fields(ts, readers, mnemonic, required)
    dialect.close_struct(ts, closing)
    return ts.make(start, cls, **fields)


def _with_index_vector_dim(body: str, dim: int) -> str:
    # MLIR leaves out index_vector_dim when it is 0.
    if not dim:
        return body
    return f"{body}, index_vector_dim = {dim}" if body else f"index_vector_dim = {dim}"


@struct_attribute
class DotDimensionNumbers(Attribute):
    """``#mhlo.dot<lhs_batching_dimensions = [0], ..., rhs_contracting_dimensions = [1]>``."""

    lhs_batching_dimensions: tuple = ()
    rhs_batching_dimensions: tuple = ()
    lhs_contracting_dimensions: tuple = ()
    rhs_contracting_dimensions: tuple = ()

    def render(self, dialect) -> str:
        return dialect.struct("dot", _fields(
            ("lhs_batching_dimensions", self.lhs_batching_dimensions),
            ("rhs_batching_dimensions", self.rhs_batching_dimensions),
            ("lhs_contracting_dimensions", self.lhs_contracting_dimensions),
            ("rhs_contracting_dimensions", self.rhs_contracting_dimensions)))

    @classmethod
    def parse(cls, ts, dialect) -> "DotDimensionNumbers":
        """Reads ``#mhlo.dot<...>``; fields left out are empty lists, as render leaves them."""
        return _parse_struct(cls, ts, dialect, "dot", dict.fromkeys(
            [f.name for f in attrs.fields(cls)], _read_ints))


@struct_attribute
class GatherDimensionNumbers(Attribute):
    """``#mhlo.gather<offset_dims = [..], ..., index_vector_dim = N>``."""

    offset_dims: tuple = ()
    collapsed_slice_dims: tuple = ()
    start_index_map: tuple = ()
    index_vector_dim: int = 0
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()

    def render(self, dialect) -> str:
        body = _fields(
            ("offset_dims", self.offset_dims),
            ("collapsed_slice_dims", self.collapsed_slice_dims),
            ("operand_batching_dims", self.operand_batching_dims),
            ("start_indices_batching_dims", self.start_indices_batching_dims),
            ("start_index_map", self.start_index_map))
        return dialect.struct("gather", _with_index_vector_dim(body, self.index_vector_dim))

    @classmethod
    def parse(cls, ts, dialect) -> "GatherDimensionNumbers":
        """Reads ``#mhlo.gather<...>`` (index_vector_dim 0 and empty lists may be left out)."""
        readers = dict.fromkeys([f.name for f in attrs.fields(cls)], _read_ints)
        readers["index_vector_dim"] = ts.__class__.integer
        return _parse_struct(cls, ts, dialect, "gather", readers)


@struct_attribute
class ScatterDimensionNumbers(Attribute):
    """``#mhlo.scatter<update_window_dims = [..], ..., index_vector_dim = N>``."""

    update_window_dims: tuple = ()
    inserted_window_dims: tuple = ()
    scatter_dims_to_operand_dims: tuple = ()
    index_vector_dim: int = 0
    input_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()

    def render(self, dialect) -> str:
        body = _fields(
            ("update_window_dims", self.update_window_dims),
            ("inserted_window_dims", self.inserted_window_dims),
            ("input_batching_dims", self.input_batching_dims),
            ("scatter_indices_batching_dims", self.scatter_indices_batching_dims),
            ("scatter_dims_to_operand_dims", self.scatter_dims_to_operand_dims))
        return dialect.struct("scatter", _with_index_vector_dim(body, self.index_vector_dim))

    @classmethod
    def parse(cls, ts, dialect) -> "ScatterDimensionNumbers":
        """Reads ``#mhlo.scatter<...>`` (index_vector_dim 0 and empty lists may be left out)."""
        readers = dict.fromkeys([f.name for f in attrs.fields(cls)], _read_ints)
        readers["index_vector_dim"] = ts.__class__.integer
        return _parse_struct(cls, ts, dialect, "scatter", readers)


def _conv_dims(batch, feature, spatial) -> str:
    names = {batch: "b", feature: "f"}
    names.update({d: str(i) for i, d in enumerate(spatial)})
    return "[" + ", ".join(names[i] for i in range(len(names))) + "]"


@struct_attribute
class ConvDimensionNumbers(Attribute):
    """``#mhlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``: which dimension is which."""

    input_batch_dimension: int
    input_feature_dimension: int
    input_spatial_dimensions: tuple
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: tuple
    output_batch_dimension: int
    output_feature_dimension: int
    output_spatial_dimensions: tuple

    def __attrs_post_init__(self):
        for what, dims in (
                ("input", (self.input_batch_dimension, self.input_feature_dimension,
                           *self.input_spatial_dimensions)),
                ("kernel", (self.kernel_input_feature_dimension,
                            self.kernel_output_feature_dimension, *self.kernel_spatial_dimensions)),
                ("output", (self.output_batch_dimension, self.output_feature_dimension,
                            *self.output_spatial_dimensions))):
            if sorted(dims) != list(range(len(dims))):
                raise ValueError(
                    f"conv dimension numbers: {what} dimensions {list(dims)} are not a "
                    f"permutation of 0..{len(dims) - 1}")

    def render(self, dialect) -> str:
        lhs = _conv_dims(self.input_batch_dimension, self.input_feature_dimension,
                         self.input_spatial_dimensions)
        k = {self.kernel_input_feature_dimension: "i", self.kernel_output_feature_dimension: "o"}
        k.update({d: str(i) for i, d in enumerate(self.kernel_spatial_dimensions)})
        rhs = "[" + ", ".join(k[i] for i in range(len(k))) + "]"
        out = _conv_dims(self.output_batch_dimension, self.output_feature_dimension,
                         self.output_spatial_dimensions)
        return dialect.struct("conv", f"{lhs}x{rhs}->{out}")

    @classmethod
    def parse(cls, ts, dialect) -> "ConvDimensionNumbers":
        """Reads ``#mhlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``, or MLIR's
        ``#mhlo.conv<raw input_batch_dimension = 0, ...>`` with every field named."""
        start = ts.peek()
        closing = dialect.open_struct(ts, "conv")
        if ts.accept("raw"):
            names = [f.name for f in attrs.fields(cls)]
            readers = {n: (_read_ints if n.endswith("dimensions") and "spatial" in n
                           else ts.__class__.integer) for n in names}
            fields = _read_fields(ts, readers, "conv", required=names)
        else:
            ib, if_, isp = _read_conv_dims(ts, "b", "f")
            ts.expect("x")
            ki, ko, ksp = _read_conv_dims(ts, "i", "o")
            ts.expect("->")
            ob, of, osp = _read_conv_dims(ts, "b", "f")
            fields = dict(
                input_batch_dimension=ib, input_feature_dimension=if_,
                input_spatial_dimensions=isp, kernel_input_feature_dimension=ki,
                kernel_output_feature_dimension=ko, kernel_spatial_dimensions=ksp,
                output_batch_dimension=ob, output_feature_dimension=of,
                output_spatial_dimensions=osp)
        dialect.close_struct(ts, closing)
        return ts.make(start, cls, **fields)


def _read_conv_dims(ts, a: str, b: str) -> tuple:
    """``[b, 0, 1, f]``: the positions of ``a`` and ``b`` and of each spatial dimension."""
    open_tok = ts.peek()
    pos_a = pos_b = None
    spatial = {}

    def item():
        nonlocal pos_a, pos_b
        tok = ts.peek()
        at = len(spatial) + (pos_a is not None) + (pos_b is not None)
        if tok.kind == "int":
            k = ts.integer()
            if k in spatial:
                raise ts.error(f"spatial dimension {k} appears twice", tok)
            spatial[k] = at
        elif tok.kind == "bare" and tok.text in (a, b):
            ts.next()
            if (pos_a if tok.text == a else pos_b) is not None:
                raise ts.error(f"'{tok.text}' appears twice", tok)
            if tok.text == a:
                pos_a = at
            else:
                pos_b = at
        else:
            raise ts.expected(f"'{a}', '{b}' or a spatial dimension number")

    ts.comma_list(item, "]", open="[")
    if pos_a is None or pos_b is None:
        raise ts.error(f"conv dimensions must name '{a}' and '{b}'", open_tok)
    if sorted(spatial) != list(range(len(spatial))):
        raise ts.error(f"spatial dimensions {sorted(spatial)} are not 0..{len(spatial) - 1}",
                       open_tok)
    return pos_a, pos_b, tuple(spatial[k] for k in range(len(spatial)))


@struct_attribute
class ChannelHandle(Attribute):
    """``#mhlo.channel_handle<handle = 1, type = 1>`` (type 1: device to device)."""

    handle: int
    type: int = 0

    def render(self, dialect) -> str:
        return dialect.struct("channel_handle", f"handle = {self.handle}, type = {self.type}")

    @classmethod
    def parse(cls, ts, dialect) -> "ChannelHandle":
        """Reads ``#mhlo.channel_handle<handle = 1, type = 1>``."""
        integer = ts.__class__.integer
        return _parse_struct(cls, ts, dialect, "channel_handle",
                             {"handle": integer, "type": integer}, required=("handle", "type"))


@struct_attribute
class OutputOperandAlias(Attribute):
    """``#mhlo.output_operand_alias<...>``: a custom call's output reusing an operand's buffer."""

    output_tuple_indices: tuple
    operand_index: int
    operand_tuple_indices: tuple

    def render(self, dialect) -> str:
        return dialect.struct(
            "output_operand_alias",
            f"output_tuple_indices = [{', '.join(map(str, self.output_tuple_indices))}], "
            f"operand_index = {self.operand_index}, "
            f"operand_tuple_indices = [{', '.join(map(str, self.operand_tuple_indices))}]")

    @classmethod
    def parse(cls, ts, dialect) -> "OutputOperandAlias":
        """Reads ``#mhlo.output_operand_alias<output_tuple_indices = [..], ...>``."""
        readers = {"output_tuple_indices": _read_ints, "operand_index": ts.__class__.integer,
                   "operand_tuple_indices": _read_ints}
        return _parse_struct(cls, ts, dialect, "output_operand_alias", readers,
                             required=tuple(readers))


def _dot_dimension_numbers(v) -> DotDimensionNumbers:
    if v.__class__ is not DotDimensionNumbers:
        raise TypeError(f"RaggedDotDimensionNumbers dot_dimension_numbers: expected "
                        f"DotDimensionNumbers, got {_show(v)}")
    return v


@struct_attribute
class RaggedDotDimensionNumbers(Attribute):
    """``#mhlo.ragged_dot<dot_dimension_numbers = #mhlo.dot<...>, lhs_ragged_dimensions = [..],
    rhs_group_dimensions = [..]>``."""

    dot_dimension_numbers: DotDimensionNumbers = attrs.field(converter=_dot_dimension_numbers)
    lhs_ragged_dimensions: tuple
    rhs_group_dimensions: tuple = ()

    def render(self, dialect) -> str:
        parts = [f"dot_dimension_numbers = {self.dot_dimension_numbers.render(dialect)}"]
        for name in ("lhs_ragged_dimensions", "rhs_group_dimensions"):
            v = getattr(self, name)
            if v:
                parts.append(f"{name} = [{', '.join(map(str, v))}]")
        return dialect.struct("ragged_dot", ", ".join(parts))

    @classmethod
    def parse(cls, ts, dialect) -> "RaggedDotDimensionNumbers":
        """Reads ``#mhlo.ragged_dot<dot_dimension_numbers = #mhlo.dot<...>, ...>`` (empty
        lists may be left out, as render leaves them out)."""
        readers = {"dot_dimension_numbers": lambda ts: DotDimensionNumbers.parse(ts, dialect),
                   "lhs_ragged_dimensions": _read_ints, "rhs_group_dimensions": _read_ints}
        start = ts.peek()
        closing = dialect.open_struct(ts, "ragged_dot")
        fields = _read_fields(ts, readers, "ragged_dot", required=("dot_dimension_numbers",))
        dialect.close_struct(ts, closing)
        fields.setdefault("lhs_ragged_dimensions", ())
        return ts.make(start, cls, **fields)


# The dot algorithms MLIR's verifier knows ("dot algorithm not known to be supported on any
# hardware" for others), measured against jaxlib's MLIR over every combination of these
# types, accumulation types, counts and operation numbers: any two 8-bit floats (f8E8M0FNU
# aside) accumulating in f32, once, precisely or not; and these.
_DOT_ALGORITHM_F8 = frozenset({"f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ",
                               "f8E4M3B11FNUZ", "f8E3M4", "f8E4M3"})
_DOT_ALGORITHMS = frozenset({
    ("f16", "f16", "f16", 1), ("f16", "f16", "f32", 1), ("bf16", "bf16", "bf16", 1),
    ("bf16", "bf16", "f32", 1), ("bf16", "bf16", "f32", 3), ("bf16", "bf16", "f32", 6),
    ("bf16", "bf16", "f32", 9), ("f32", "f32", "f32", 1), ("f64", "f64", "f64", 1),
    ("tf32", "tf32", "f32", 1), ("tf32", "tf32", "f32", 3)})
# Precision type names: mhlo_ir's float element types and MLIR's tf32 (a storage-less type
# dot algorithms name).
_PRECISION_TYPES = frozenset({"f16", "bf16", "f32", "f64", "tf32", "f8E8M0FNU",
                              *_DOT_ALGORITHM_F8})


def _precision_type(v) -> str:
    name = getattr(v, "name", v)
    if name.__class__ is not str or name not in _PRECISION_TYPES:
        raise TypeError(f"DotAlgorithm precision types are float type names "
                        f"({', '.join(sorted(_PRECISION_TYPES))}), got {_show(v)}")
    return name


def _flag(v) -> bool:
    if v.__class__ is not bool:
        raise TypeError(f"DotAlgorithm allow_imprecise_accumulation: expected a bool, got "
                        f"{_show(v)}")
    return v


@struct_attribute
class DotAlgorithm(Attribute):
    """``#mhlo.dot_algorithm<lhs_precision_type = bf16, ..., allow_imprecise_accumulation =
    false>``: how a dot_general computes (the operands' precision, the accumulation type,
    how many primitive products), as jax's ``lax.DotAlgorithmPreset`` names them. Only the
    combinations MLIR's verifier knows are taken (``known``)."""

    lhs_precision_type: str = attrs.field(converter=_precision_type)
    rhs_precision_type: str = attrs.field(converter=_precision_type)
    accumulation_type: str = attrs.field(converter=_precision_type)
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = attrs.field(default=False, converter=_flag)

    @property
    def known(self) -> bool:
        """Whether MLIR's verifier knows this algorithm (it refuses the others)."""
        if (self.lhs_component_count, self.rhs_component_count) != (1, 1):
            return False
        if self.lhs_precision_type in _DOT_ALGORITHM_F8 and \
                self.rhs_precision_type in _DOT_ALGORITHM_F8:
            return self.accumulation_type == "f32" and self.num_primitive_operations == 1
        return not self.allow_imprecise_accumulation and (
            self.lhs_precision_type, self.rhs_precision_type, self.accumulation_type,
            self.num_primitive_operations) in _DOT_ALGORITHMS

    def body(self) -> str:
        """The fields as MLIR writes them, inside the brackets."""
        return (f"lhs_precision_type = {self.lhs_precision_type}, rhs_precision_type = "
                f"{self.rhs_precision_type}, accumulation_type = {self.accumulation_type}, "
                f"lhs_component_count = {self.lhs_component_count}, rhs_component_count = "
                f"{self.rhs_component_count}, num_primitive_operations = "
                f"{self.num_primitive_operations}, allow_imprecise_accumulation = "
                f"{'true' if self.allow_imprecise_accumulation else 'false'}")

    def render(self, dialect) -> str:
        return dialect.struct("dot_algorithm", self.body())

    @classmethod
    def _readers(cls, ts) -> dict:
        def name(ts):
            return ts.expect_kind("bare", "a float type name").text

        def flag(ts):
            tok = ts.expect_kind("bare", "true or false")
            if tok.text not in ("true", "false"):
                raise ts.expected("true or false", tok)
            return tok.text == "true"
        return {"lhs_precision_type": name, "rhs_precision_type": name,
                "accumulation_type": name, "lhs_component_count": ts.__class__.integer,
                "rhs_component_count": ts.__class__.integer,
                "num_primitive_operations": ts.__class__.integer,
                "allow_imprecise_accumulation": flag}

    @classmethod
    def parse(cls, ts, dialect) -> "DotAlgorithm":
        """Reads ``#mhlo.dot_algorithm<...>`` (every field, as MLIR writes them)."""
        readers = cls._readers(ts)
        return _parse_struct(cls, ts, dialect, "dot_algorithm", readers,
                             required=tuple(readers))

    @classmethod
    def parse_body(cls, ts) -> "DotAlgorithm":
        """Reads the bracketed fields alone, ``<lhs_precision_type = bf16, ...>``: StableHLO
        dot_general's custom form."""
        start = ts.expect("<")
        readers = cls._readers(ts)
        fields = _read_fields(ts, readers, "dot_algorithm", required=tuple(readers))
        ts.expect(">")
        return ts.make(start, cls, **fields)


_STRUCTS = {"dot": DotDimensionNumbers.parse, "dot_algorithm": DotAlgorithm.parse,
            "gather": GatherDimensionNumbers.parse,
            "scatter": ScatterDimensionNumbers.parse, "conv": ConvDimensionNumbers.parse,
            "channel_handle": ChannelHandle.parse,
            "output_operand_alias": OutputOperandAlias.parse,
            "ragged_dot": RaggedDotDimensionNumbers.parse}


def register_dialect_attribute(mnemonic: str, parse) -> None:
    """Makes ``read_dialect_attribute`` hand ``#mhlo.<mnemonic>`` / ``#mhlo<mnemonic ...>``
    to ``parse(ts, dialect)``: for attribute kinds defined outside this module."""
    _STRUCTS[mnemonic] = parse


def read_dialect_attribute(ts, dialect):
    """Reads one of the output dialect's enum or structured attributes (``#mhlo...``)."""
    mnemonic = dialect.attribute_mnemonic(ts)
    parse = _STRUCTS.get(mnemonic)
    if parse is None:
        if mnemonic in ENUM_VALUES:
            return EnumAttr.parse(ts, dialect)
        if mnemonic in MISC_ENUM_VALUES:
            return MiscEnumAttr.parse(ts, dialect)
        known = sorted([*_STRUCTS, *ENUM_VALUES, *MISC_ENUM_VALUES])
        if mnemonic is None and ts.at("<", 1):
            raise ts.error(f"a blank between {ts.peek().text} and its '<': MLIR reads "
                           f"'{ts.peek().text} <' as a reference to an alias")
        raise ts.error(f"unknown {dialect.name} attribute {mnemonic or ts.peek().text!r}; "
                       "expected one of " + ", ".join(known))
    return parse(ts, dialect)
