"""FloatAttr and DenseArrayAttr hold the value of their type, as MLIR holds it.

Oracle: MLIR (jaxlib's bindings) reading the literal ``repr(v) : type``: what it prints back is
what our attribute prints, and a value it turns into inf or NaN (``1e40 : f32`` reads as
``0x7F800000``) is one we refuse. Before, ``FloatAttr(0.1, f32)`` held the f64 0.1 and so
differed from its own printed text parsed back, and ``FloatAttr(1e40, f32)`` printed inf.
"""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mhlo_ir as hlo
from mhlo_ir.attributes import DenseArrayAttr, FloatAttr, parse_attribute, to_attribute
from mhlo_ir.dialect import MHLO
from tests.mhlo_ir.parse_support import assert_exact, mlir_dictionary
from tests.oracle import normalize_hex

FLOAT_TYPES = [e for e in hlo.ALL_ELEMENT_TYPES if e.kind == "float"]


def _mlir_reads(texts: list) -> list:
    """MLIR's print of each attribute text."""
    d = mlir_dictionary({f"a.x{i:03d}": t for i, t in enumerate(texts)})
    body = d[1:-1]
    out = []
    for i in range(len(texts)):
        head = f"a.x{i:03d} = "
        start = body.index(head) + len(head)
        end = body.find(", a.x", start)
        out.append(body[start:] if end < 0 else body[start:end])
    return out


def _literal(v: float) -> str:
    """``v`` as an MLIR float literal (it wants a ``.``: ``1e+40`` is ``1.0e+40``)."""
    r = repr(float(v))
    if "." in r:
        return r
    return r.replace("e", ".0e") if "e" in r else r + ".0"


def _try(v, et):
    try:
        return FloatAttr(v, et)
    except ValueError:
        return None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True),
                          st.sampled_from(FLOAT_TYPES)),
                min_size=1, max_size=8))
def test_float_attr_is_what_its_text_parses_to(cases):
    """print -> parse gives an equal attribute (same bits), and MLIR reading the Python
    literal gives the very text we print (so we round as MLIR rounds)."""
    made = [(v, et, _try(v, et)) for v, et in cases]
    for _, _, a in made:
        if a is not None:
            got = parse_attribute(a.render(MHLO))
            assert_exact(got, a)
            assert got == a and hash(got) == hash(a)
    decimal = [(v, et, a) for v, et, a in made if math.isfinite(v)]
    if not decimal:
        return
    theirs = _mlir_reads([f"{_literal(v)} : {et.name}" for v, et, _ in decimal])
    for (v, et, a), t in zip(decimal, theirs):
        if a is None and et.name == "f8E8M0FNU":
            continue   # zero or negative (MLIR prints -1.0 : f8E8M0FNU, which is no value)
        mlir = parse_attribute(t)
        held = float(mlir.value)
        if a is None:
            # Refused: MLIR made it inf or NaN, or (f4E2M1FN, no inf) saturated it.
            assert not math.isfinite(held) or et.name == "f4E2M1FN", (v, et, t)
        else:
            assert normalize_hex(a.render(MHLO)) == t, (v, et)
            assert_exact(mlir, a)


@pytest.mark.parametrize("et", FLOAT_TYPES, ids=str)
def test_overflow_boundary_agrees_with_mlir(et):
    """At the type's largest value, between it and the rounding midpoint, at the midpoint
    and past it: we refuse exactly what MLIR turns into inf or NaN (or, in f4E2M1FN which
    has neither, saturates)."""
    fi = ml_dtypes.finfo(et.dtype)
    big = float(fi.max)
    storage = np.dtype(f"u{et.dtype.itemsize}")
    prev = float((np.asarray(fi.max, dtype=et.dtype).reshape(1).view(storage) - 1)
                 .view(et.dtype)[0])
    mid = big + (big if et.name == "f8E8M0FNU" else big - prev) / 2   # powers of two only
    values = [big, (big + mid) / 2, mid, np.nextafter(mid, math.inf), mid * 2]
    values = [float(v) for v in values if math.isfinite(v)]
    theirs = _mlir_reads([f"{_literal(v)} : {et.name}" for v in values])
    for v, t in zip(values, theirs):
        held = float(parse_attribute(t).value)
        refused = not math.isfinite(held) or (et.name == "f4E2M1FN" and v > mid) or \
            (et.name == "f4E2M1FN" and v == mid)   # the tie rounds to even: past 6 (0b111)
        if refused:
            with pytest.raises(ValueError, match=re.escape(f"{v!r} overflows {et.name}")):
                FloatAttr(v, et)
            if et.bits >= 8:   # array<> holds no sub-byte types
                with pytest.raises(ValueError, match=re.escape(f"{v!r} overflows {et.name}")):
                    DenseArrayAttr((1.0, v), et)
        else:
            a = FloatAttr(v, et)
            assert normalize_hex(a.render(MHLO)) == t
            assert float(a.value) == held


def test_1e40_in_f32_is_refused_naming_value_and_type():
    with pytest.raises(ValueError, match=r"FloatAttr of f32: value 1e\+40 overflows f32"):
        FloatAttr(1e40, hlo.f32)
    with pytest.raises(ValueError, match="overflows f16"):
        FloatAttr(np.float32(1e5), hlo.f16)
    with pytest.raises(ValueError, match="too large for f64"):
        FloatAttr(10 ** 400, hlo.f64)
    # inf and nan given as such are kept, in types that have them
    assert FloatAttr(math.inf, hlo.f32).render() == "0x7F800000 : f32"
    assert FloatAttr(-math.inf, hlo.bf16).render() == "0xFF80 : bf16"
    assert FloatAttr(math.nan, hlo.f8E4M3FN).render() == "0x7F : f8E4M3FN"
    with pytest.raises(ValueError, match="not representable in f8E4M3FN"):
        FloatAttr(math.inf, hlo.f8E4M3FN)


def test_values_are_held_rounded():
    a = FloatAttr(0.1, hlo.f32)
    assert a.value == float(np.float32(0.1)) and a.value.__class__ is float
    assert a == FloatAttr(np.float32(0.1), hlo.f32) == parse_attribute("1.000000e-01 : f32")
    assert DenseArrayAttr((0.1,), hlo.f32) == parse_attribute("array<f32: 1.000000e-01>")
    # MLIR rounds the f64 once; ml_dtypes' cast to bf16 went through f32 and gave 0 here
    assert FloatAttr(4.5917757262545217e-41, hlo.bf16).render() == "9.183550e-41 : bf16"
    nan = FloatAttr(math.nan, hlo.f64)
    assert nan == parse_attribute(nan.render())


@pytest.mark.parametrize("x, text", [
    (np.float32(1.5), "1.500000e+00 : f32"), (np.float16(0.5), "5.000000e-01 : f16"),
    (np.float64(2.5), "2.500000e+00 : f64"), (ml_dtypes.bfloat16(1.5), "1.500000e+00 : bf16"),
    (ml_dtypes.float8_e4m3fn(2), "2.000000e+00 : f8E4M3FN"),
    (np.int8(-3), "-3 : i8"), (np.uint16(7), "7 : ui16"), (np.int64(5), "5 : i64"),
    (np.bool_(True), "true"), (3, "3 : i64"), (2.5, "2.500000e+00 : f64"),
])
def test_to_attribute_keeps_numpy_scalar_dtypes(x, text):
    a = to_attribute(x)
    assert a.render(MHLO) == text
    assert mlir_dictionary({"a.x": text}) == "{a.x = " + text + "}"
    assert_exact(parse_attribute(text), a)


def test_to_attribute_refuses_dtypes_mhlo_lacks():
    with pytest.raises(TypeError, match="has no MHLO element type"):
        to_attribute(np.longdouble(1.5))
