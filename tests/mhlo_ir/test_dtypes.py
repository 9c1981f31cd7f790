"""The 28 element types: names as MLIR spells them, numpy dtypes as jaxlib maps them."""

from __future__ import annotations

import pickle
import re

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import dtypes
from tests import oracle

ALL = hlo.ALL_ELEMENT_TYPES

# Hand-written: MLIR's spelling, the numpy/ml_dtypes dtype, kind, logical bits, and (floats) the
# APFloat precision (significand bits including the implicit one).
EXPECTED = [
    ("i1", np.bool_, "bool", 1, 0),
    ("i2", ml_dtypes.int2, "sint", 2, 0),
    ("i4", ml_dtypes.int4, "sint", 4, 0),
    ("i8", np.int8, "sint", 8, 0),
    ("i16", np.int16, "sint", 16, 0),
    ("i32", np.int32, "sint", 32, 0),
    ("i64", np.int64, "sint", 64, 0),
    ("ui2", ml_dtypes.uint2, "uint", 2, 0),
    ("ui4", ml_dtypes.uint4, "uint", 4, 0),
    ("ui8", np.uint8, "uint", 8, 0),
    ("ui16", np.uint16, "uint", 16, 0),
    ("ui32", np.uint32, "uint", 32, 0),
    ("ui64", np.uint64, "uint", 64, 0),
    ("bf16", ml_dtypes.bfloat16, "float", 16, 8),
    ("f16", np.float16, "float", 16, 11),
    ("f32", np.float32, "float", 32, 24),
    ("f64", np.float64, "float", 64, 53),
    ("f8E4M3FN", ml_dtypes.float8_e4m3fn, "float", 8, 4),
    ("f8E5M2", ml_dtypes.float8_e5m2, "float", 8, 3),
    ("f8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz, "float", 8, 4),
    ("f8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz, "float", 8, 3),
    ("f8E4M3B11FNUZ", ml_dtypes.float8_e4m3b11fnuz, "float", 8, 4),
    ("f8E3M4", ml_dtypes.float8_e3m4, "float", 8, 5),
    ("f8E4M3", ml_dtypes.float8_e4m3, "float", 8, 4),
    ("f8E8M0FNU", ml_dtypes.float8_e8m0fnu, "float", 8, 1),
    ("f4E2M1FN", ml_dtypes.float4_e2m1fn, "float", 4, 2),
    ("complex<f32>", np.complex64, "complex", 64, 0),
    ("complex<f64>", np.complex128, "complex", 128, 0),
]


def test_the_28_types():
    assert len(ALL) == 28
    assert [t.name for t in ALL] == [e[0] for e in EXPECTED]
    assert len({t.dtype.name for t in ALL}) == 28


@pytest.mark.parametrize("name,dtype,kind,bits,precision", EXPECTED, ids=[e[0] for e in EXPECTED])
def test_type_facts(name, dtype, kind, bits, precision):
    et = hlo.element_type(name)
    assert et.name == name and str(et) == name
    assert et.dtype == np.dtype(dtype)
    assert et.kind == kind
    assert et.bits == bits
    if kind == "float":
        assert et.mantissa_bits == precision
    assert et.is_float == (kind == "float")
    assert et.is_complex == (kind == "complex")
    assert et.is_bool == (kind == "bool")
    assert et.is_integer == (kind in ("sint", "uint"))
    if kind == "complex":
        assert et.component is hlo.element_type(name[8:-1])


@pytest.mark.parametrize("et", ALL, ids=str)
def test_both_ways(et):
    assert hlo.element_type(et.name) is et
    assert hlo.from_numpy(et.dtype) is et
    assert hlo.from_numpy(et.dtype.type) is et
    assert hlo.from_numpy(np.zeros(1, et.dtype).dtype) is et
    assert hlo.from_numpy(et) is et
    assert pickle.loads(pickle.dumps(et)) is et
    assert getattr(hlo, repr(et).rsplit(".", 1)[1]) is et   # repr names the module attribute


def test_from_numpy_spellings():
    assert hlo.from_numpy(bool) is hlo.i1
    assert hlo.from_numpy(float) is hlo.f64
    assert hlo.from_numpy(complex) is hlo.complex128
    assert hlo.from_numpy("float32") is hlo.f32
    assert hlo.from_numpy("bfloat16") is hlo.bf16
    assert hlo.from_numpy(np.dtype(">f4")) is hlo.f32       # byte order does not matter
    assert hlo.from_numpy(np.dtype(">i8")) is hlo.i64
    assert hlo.element_type("complex64") is hlo.complex64
    assert hlo.element_type("complex128") is hlo.complex128


@pytest.mark.parametrize("name", ["f128", "F32", "float32", "complex<f16>", "si32", "i3", "",
                                  "tensor<f32>", "index"])
def test_unknown_name(name):
    with pytest.raises(ValueError, match=r"unknown element type .*expected one of .*f32"):
        hlo.element_type(name)


@pytest.mark.parametrize("dtype", [np.dtype("U3"), np.dtype("S2"), np.dtype(object),
                                   np.dtype("datetime64[s]"), np.dtype("V4"),
                                   np.dtype([("a", np.int32)]), np.longdouble],
                         ids=lambda d: str(np.dtype(d)))
def test_unmapped_dtype(dtype):
    if np.dtype(dtype) == np.float64:          # platforms where long double is double
        pytest.skip("longdouble is float64 here")
    with pytest.raises(TypeError, match="has no MHLO element type"):
        hlo.from_numpy(dtype)


@pytest.mark.parametrize("thing", [3.5, object(), [1, 2]], ids=["float", "object", "list"])
def test_not_a_dtype(thing):
    with pytest.raises(TypeError, match="is not a numpy dtype or element type"):
        hlo.from_numpy(thing)


@pytest.mark.parametrize("et", ALL, ids=str)
def test_strings_are_mlir_names_first(et):
    assert hlo.from_numpy(et.name) is et
    assert hlo.from_numpy(et.dtype.name) is et


@pytest.mark.parametrize("name", ["not a dtype", "f8", "i", "<f4", "F32", "f128", ""])
def test_unknown_string(name):
    """numpy's shorthands are ambiguous next to MLIR's names ("i8"), so they are refused."""
    with pytest.raises(TypeError, match=r"is not an MLIR element type name .*f32.*float32"):
        hlo.from_numpy(name)


def test_mlir_name_wins_over_numpy_shorthand():
    assert hlo.from_numpy("i8") is hlo.i8          # numpy would read int64
    assert hlo.from_numpy("i4") is hlo.i4          # numpy would read int32
    assert hlo.from_numpy("f16") is hlo.f16
    assert hlo.tensor((2,), "i8").dtype == np.int8


def test_none_is_not_a_dtype():
    with pytest.raises(TypeError):
        hlo.from_numpy(None)


def test_tensor_type_text_uses_the_name():
    for et in ALL:
        assert str(hlo.tensor((2, 3), et)) == f"tensor<2x3x{et.name}>"
        assert str(hlo.tensor((), et.dtype)) == f"tensor<{et.name}>"


# -- against MLIR and jaxlib --------------------------------------------------------------------

def test_names_are_mlir_spellings():
    """MLIR parses ``tensor<2xNAME>`` for each name and prints it back unchanged."""
    types = ", ".join(f"tensor<2x{et.name}>" for et in ALL)
    text = ('"builtin.module"() ({\n'
            f'  "func.func"() <{{function_type = ({types}) -> (), sym_name = "f", '
            'sym_visibility = "private"}> ({\n  }) : () -> ()\n}) : () -> ()\n')
    printed = oracle.mlir_generic(text)
    sig = re.search(r"function_type = \((.*)\) -> \(\)", printed).group(1)
    assert sig == types


def test_a_misspelled_name_is_rejected_by_mlir():
    """The oracle above can fail: MLIR does not read a wrong spelling."""
    from jaxlib.mlir import ir
    text = ('"builtin.module"() ({\n  "func.func"() <{function_type = (tensor<2xf8e4m3fn>) -> (), '
            'sym_name = "f", sym_visibility = "private"}> ({\n  }) : () -> ()\n}) : () -> ()\n')
    with pytest.raises(ir.MLIRError):
        oracle.parse(text)


def test_jaxlib_maps_each_type_to_its_dtype():
    """jaxlib's own view of each parameter's numpy dtype is ours; values pass through intact."""
    m = hlo.Module("dtypes")
    f = m.add_function("main", [hlo.tensor((3,), et) for et in ALL], visibility="public")
    f.builder().return_(*f.arguments)
    exe = verify.compile(m)
    assert [dt for _, dt in exe.parameters] == [et.dtype for et in ALL]
    assert [shape for shape, _ in exe.parameters] == [(3,)] * len(ALL)
    rng = np.random.default_rng(0)
    args = []
    for et in ALL:
        comp = et.component or et
        n = 3 * (2 if et.is_complex else 1)
        width = 1 if et.is_bool else (comp.bits if comp.bits < 8 else 8 * comp.dtype.itemsize)
        raw = [int(rng.integers(0, 2 ** min(width, 62))) for _ in range(n)]
        u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[comp.dtype.itemsize]
        args.append(np.array(raw, dtype=u).view(et.dtype))
    outs = exe(*args)
    for et, a, r in zip(ALL, args, outs):
        assert r.dtype == et.dtype, et
        assert r.tobytes() == a.tobytes(), et


def test_dtypes_module_exports():
    for name in dtypes.__all__:
        assert getattr(hlo, name) is getattr(dtypes, name)
