"""format_float / format_scalar print exactly what MLIR prints.

Oracle: MLIR itself. A one-element ``dense<"0xHEX"> : tensor<T>`` holds raw little-endian bits
(one byte per element for f4E2M1FN); MLIR re-prints it as the scalar splat ``dense<v>``, which
is the text we must reproduce. Many constants go into one module so one parse checks a batch.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mhlo_ir as hlo
from mhlo_ir.floatfmt import format_float, format_scalar
from tests import oracle

FLOATS = [t for t in hlo.ALL_ELEMENT_TYPES if t.is_float]
SMALL_FLOATS = [t for t in FLOATS if t.dtype.itemsize == 1]      # 8- and 4-bit: exhaustive
WIDE_FLOATS = [t for t in FLOATS if t.dtype.itemsize > 1]        # bf16, f16, f32, f64
COMPLEX = [hlo.complex64, hlo.complex128]
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _nbits(et) -> int:
    """Meaningful bits of one (component) element: 4 for f4E2M1FN, else the storage width."""
    return et.bits if et.bits < 8 else 8 * et.dtype.itemsize


def _is_f32_snan(bits: int) -> bool:
    return (bits >> 23) & 0xFF == 0xFF and bits & 0x7FFFFF and not bits & 0x400000


# Bit patterns hit by known bugs (each pinned by a strict xfail test below). The properties skip
# them so they keep guarding everything else; delete an entry when its bug is fixed.
def _known_bug(et, bits) -> bool:
    return False  # no known bugs left; kept as the hook for the next one


def _module(et, payloads) -> str:
    """A module with one ``mhlo.constant`` of ``tensor<T>`` per raw little-endian payload."""
    t = f"tensor<{et.name}>"
    lines = [f'    %{i} = "mhlo.constant"() <{{value = dense<"0x{p.hex().upper()}"> : {t}}}> '
             f': () -> {t}' for i, p in enumerate(payloads)]
    return ('"builtin.module"() ({\n'
            '  "func.func"() <{function_type = () -> (), sym_name = "main"}> ({\n'
            + "\n".join(lines) + '\n    "func.return"() : () -> ()\n'
            '  }) : () -> ()\n}) : () -> ()\n')


_SCALAR = re.compile(r"value = dense<(.*?)> : tensor<")


def mlir_scalars(et, payloads) -> list:
    """MLIR's text of each one-element constant with these raw bytes."""
    got = _SCALAR.findall(oracle.mlir_generic(_module(et, payloads)))
    assert len(got) == len(payloads)
    return got


def _payload(et, bits: int) -> bytes:
    return int(bits).to_bytes(et.dtype.itemsize, "little")


def _value(et, bits: int):
    """The numpy scalar of ``et`` with these raw bits."""
    return np.array([bits], dtype=UINT[et.dtype.itemsize]).view(et.dtype)[0]


def _complex_payload(et, bits) -> bytes:
    n = et.component.dtype.itemsize
    return bits[0].to_bytes(n, "little") + bits[1].to_bytes(n, "little")


def _complex_value(et, bits):
    return np.array(bits, dtype=UINT[et.component.dtype.itemsize]).view(et.dtype)[0]


def _check_floats(et, bit_list):
    theirs = mlir_scalars(et, [_payload(et, b) for b in bit_list])
    ours = [format_float(_value(et, b), et) for b in bit_list]
    bad = [(hex(b), o, t) for b, o, t in zip(bit_list, ours, theirs) if o != t]
    assert not bad, f"{et}: (bits, ours, MLIR) {bad[:10]}"


# -- special bit patterns ------------------------------------------------------------------------

def special_bits(et) -> list:
    """Zeros, infinities, NaNs (quiet, signalling, with payloads, negative), extremes and
    subnormals of ``et``, as raw bits; derived from ml_dtypes.finfo, not from our code."""
    fi = ml_dtypes.finfo(et.dtype)
    n = _nbits(et)
    u = UINT[et.dtype.itemsize]
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.1, 1 / 3,
            float(fi.max), -float(fi.max), float(fi.smallest_normal),
            float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.eps)]
    with np.errstate(all="ignore"):
        bits = {int(b) & ((1 << n) - 1)
                for b in np.array(vals, np.float64).astype(et.dtype).view(u)}
    sign = 1 << (n - 1)
    bits |= {0, 1, sign, sign | 1, sign - 1, (1 << n) - 1}
    if fi.nmant:
        exp_all = ((1 << fi.nexp) - 1) << fi.nmant
        mant = (1 << fi.nmant) - 1
        bits |= {exp_all, exp_all | 1, exp_all | mant, exp_all | (mant >> 1), sign | exp_all | 1,
                 mant, sign | mant, exp_all - 1, (exp_all - 1) | sign}
    return sorted(b & ((1 << n) - 1) for b in bits)


def float_bits(et):
    """Raw bit patterns of ``et``: uniform, special, and 'nice' decimals (short and long
    forms, integral values that MLIR prints in hex)."""
    n = _nbits(et)
    u = UINT[et.dtype.itemsize]

    def from_float(x):
        with np.errstate(all="ignore"):
            return int(np.array([x], np.float64).astype(et.dtype).view(u)[0])

    nice = st.one_of(
        st.floats(allow_nan=False, width=64 if n == 64 else 32),
        st.integers(-(2 ** 70), 2 ** 70).map(float),
        st.builds(lambda m, e: m * 10.0 ** e, st.integers(-99999, 99999), st.integers(-40, 40)),
    ).map(from_float)
    return st.one_of(st.integers(0, (1 << n) - 1), st.sampled_from(special_bits(et)), nice)


# -- exhaustive: every bit pattern of the 8- and 4-bit formats -----------------------------------

@pytest.mark.parametrize("et", SMALL_FLOATS, ids=str)
def test_every_bit_pattern_of_small_floats(et):
    _check_floats(et, [b for b in range(1 << _nbits(et)) if not _known_bug(et, b)])


def test_f4E2M1FN_negative_zero():
    assert mlir_scalars(hlo.f4E2M1FN, [b"\x08"]) == ["-0.000000e+00"]
    assert format_float(_value(hlo.f4E2M1FN, 0x8), hlo.f4E2M1FN) == "-0.000000e+00"


# -- hypothesis over wide floats and complex -------------------------------------------------------

@pytest.mark.parametrize("et", WIDE_FLOATS + SMALL_FLOATS, ids=str)
@settings(max_examples=25)
@given(data=st.data())
def test_format_float_matches_mlir(et, data):
    bits = data.draw(st.lists(float_bits(et).filter(lambda b: not _known_bug(et, b)),
                              min_size=1, max_size=50), label="bits")
    _check_floats(et, bits)


@pytest.mark.parametrize("et", COMPLEX, ids=str)
@settings(max_examples=25)
@given(data=st.data())
def test_format_scalar_complex_matches_mlir(et, data):
    part = float_bits(et.component)
    pairs = data.draw(st.lists(st.tuples(part, part).filter(lambda p: not _known_bug(et, p)),
                               min_size=1, max_size=50), label="bits")
    theirs = mlir_scalars(et, [_complex_payload(et, p) for p in pairs])
    ours = [format_scalar(_complex_value(et, p), et) for p in pairs]
    bad = [(tuple(map(hex, p)), o, t) for p, o, t in zip(pairs, ours, theirs) if o != t]
    assert not bad, f"{et}: (bits, ours, MLIR) {bad[:10]}"


def test_complex64_signaling_nan():
    et = hlo.complex64
    bits = (0x7F800001, 0x3F800000)
    assert mlir_scalars(et, [_complex_payload(et, bits)]) == ["(0x7F800001,1.000000e+00)"]
    assert format_scalar(_complex_value(et, bits), et) == "(0x7F800001,1.000000e+00)"


# -- hand-picked values whose MLIR text is known --------------------------------------------------

HAND_PICKED = [
    # (type, value, MLIR's text) — the texts are MLIR's documented/observed printing rules.
    (hlo.f32, 16777216.0, "0x4B800000"),              # integral, natural form has no '.'
    (hlo.f16, 0.1, "9.997550e-02"),                     # APFloat truncates before rounding
    (hlo.f32, 3.4028234663852886e38, "3.40282347E+38"),  # natural precision, scientific
    (hlo.f32, 1.0, "1.000000e+00"),
    (hlo.f32, -2.5, "-2.500000e+00"),
    (hlo.f32, 1 / 3, "0.333333343"),
    (hlo.f64, 0.1, "1.000000e-01"),
    (hlo.f64, 1 / 3, "0.33333333333333331"),
    (hlo.f32, 0.0, "0.000000e+00"),
    (hlo.f32, -0.0, "-0.000000e+00"),
    (hlo.f64, -0.0, "-0.000000e+00"),
    (hlo.f32, float("inf"), "0x7F800000"),
    (hlo.f32, float("-inf"), "0xFF800000"),
    (hlo.f64, float("inf"), "0x7FF0000000000000"),
    (hlo.f16, float("inf"), "0x7C00"),
    (hlo.bf16, float("-inf"), "0xFF80"),
    (hlo.f32, 1e-45, "1.401300e-45"),                 # smallest subnormal
    (hlo.f8E4M3FN, 448.0, "4.480000e+02"),
    (hlo.f8E8M0FNU, 1.0, "1.000000e+00"),
    (hlo.f4E2M1FN, 6.0, "6.000000e+00"),
    (hlo.f4E2M1FN, -0.5, "-5.000000e-01"),
]


@pytest.mark.parametrize("et,value,text", HAND_PICKED,
                         ids=[f"{e}-{v!r}" for e, v, _ in HAND_PICKED])
def test_hand_picked(et, value, text):
    x = np.array(value, dtype=np.float64).astype(et.dtype)
    bits = int(x.reshape(1).view(UINT[et.dtype.itemsize])[0])
    assert mlir_scalars(et, [_payload(et, bits)]) == [text]     # the oracle agrees with the fact
    assert format_float(x, et) == text


@pytest.mark.parametrize("et,bits,text", [
    (hlo.f32, 0x7FC00000, "0x7FC00000"),      # the quiet NaN numpy makes
    (hlo.f32, 0xFFC00001, "0xFFC00001"),      # negative NaN with payload
    (hlo.f32, 0x7F800001, "0x7F800001"),      # signalling NaN keeps its bits
    (hlo.f64, 0x7FF0000000000001, "0x7FF0000000000001"),
    (hlo.f8E4M3FNUZ, 0x80, "0x80"),           # FNUZ: the only NaN is "negative zero"
    (hlo.f8E4M3FN, 0xFF, "0xFF"),
    (hlo.f8E8M0FNU, 0xFF, "0xFF"),
], ids=str)
def test_nan_bits(et, bits, text):
    assert mlir_scalars(et, [_payload(et, bits)]) == [text]
    assert format_float(_value(et, bits), et) == text


def test_complex_hand_picked():
    v = np.complex64(complex(1.0, -0.0))
    assert format_scalar(v, hlo.complex64) == "(1.000000e+00,-0.000000e+00)"
    assert mlir_scalars(hlo.complex64, [v.tobytes()]) == ["(1.000000e+00,-0.000000e+00)"]
    w = np.complex128(complex(float("inf"), 0.1))
    assert format_scalar(w, hlo.complex128) == "(0x7FF0000000000000,1.000000e-01)"
    assert mlir_scalars(hlo.complex128, [w.tobytes()]) == ["(0x7FF0000000000000,1.000000e-01)"]


# Magnitudes past every narrow type's largest finite value: f64 distances to the two top
# candidates are then equal (1e20 - 4.0 == 1e20 - 6.0), and APFloat's choice must be kept.
_HUGE = ["1.0e15", "1.0e20", "-3.0e38", "1.0e30", "1.7976931348623157e308", "-1.0e300"]


# (f8E8M0FNU has no sign: we refuse the negative ones, which MLIR reads as NaN)
@pytest.mark.parametrize("et", [t for t in FLOATS if t.dtype.itemsize <= 2 and
                                t.name != "f8E8M0FNU"], ids=str)
def test_decimal_literals_far_past_the_largest_value_round_as_mlir_reads_them(et):
    src = ("func.func @main() -> tensor<6x" + str(et) + "> {\n"
           f"  %0 = mhlo.constant dense<[{', '.join(_HUGE)}]> : tensor<6x{et}>\n"
           f"  return %0 : tensor<6x{et}>\n}}\n")
    want = oracle.mlir_generic(src)
    assert oracle.normalize_hex(hlo.parse(src).to_text(locations=False)) == want
