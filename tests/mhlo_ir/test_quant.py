"""Quantized element types (mhlo_ir.quant) and the ops that take them (mhlo_ir.quant_checks).

Oracles: MLIR's own spellings (the CHECK lines of MLIR's quant parser tests, and StableHLO's
quantized corpus, which MLIR printed), StableHLO's spec for what is refused, and our parser
reading back what the printer wrote.
"""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mhlo_ir as hlo
from mhlo_ir import OpBuildError
from mhlo_ir.quant import QuantizedType, parse_quantized, quantized
from verify.conformance import DEFAULT_DIR

CORPUS = DEFAULT_DIR / "quantized"
Q = quantized(hlo.i8, hlo.f32, 0.0039172410964965817, -128)


# -- the type ------------------------------------------------------------------------------

@pytest.mark.parametrize("written, printed", [
    # MLIR's test/Dialect/Quant/parse-uniform.mlir: what MLIR prints for what it reads (its
    # first case has zero point 127 in i8<-8:7>, which StableHLO's C7 refuses: 7 here)
    ("!quant.uniform<i8<-8:7>:f32, 0.99872:7>", "!quant.uniform<i8<-8:7>:f32, 9.987200e-01:7>"),
    ("!quant.uniform<u8:f32, 0.99872>", "!quant.uniform<u8:f32, 9.987200e-01>"),
    ("!quant.uniform<u8:f32, 2.0e-2>", "!quant.uniform<u8:f32, 2.000000e-02>"),
    ("!quant.uniform<u8:f32, 2.0e+2>", "!quant.uniform<u8:f32, 2.000000e+02>"),
    ("!quant.uniform<i16:f32, 2.0e+2>", "!quant.uniform<i16:f32, 2.000000e+02>"),
    ("!quant.uniform<i8:f32:1, {2.0e+2:-120,0.99872:127}>",  # MLIR's says u8 (C7 again)
     "!quant.uniform<i8:f32:1, {2.000000e+02:-120,9.987200e-01:127}>"),
    ("!quant.uniform<i8:bf16, 2.0e+2>", "!quant.uniform<i8:bf16, 2.000000e+02>"),
    # StableHLO's corpus: scales that need all 17 digits, and MLIR's exponent form
    ("!quant.uniform<i8:f32, 0.0039188104517319626:-128>",
     "!quant.uniform<i8:f32, 0.0039188104517319626:-128>"),
    ("!quant.uniform<i32:f32, 1.537725862903607E-5>",
     "!quant.uniform<i32:f32, 1.537725862903607E-5>"),
    # a scale whose decimal would not read back (1000001.0): MLIR writes the double's bits
    ("!quant.uniform<i2:bf16, 0x412E848200000000>", "!quant.uniform<i2:bf16, 0x412E848200000000>"),
    # the storage type's full range is not spelled; a zero zero point neither
    ("!quant.uniform<i8<-128:127>:f32, 1.5:0>", "!quant.uniform<i8:f32, 1.500000e+00>"),
])
def test_types_print_as_mlir_prints_them(written, printed):
    t = parse_quantized(written)
    assert t.name == printed == str(t)
    assert parse_quantized(printed) is t
    assert hlo.parse_type(f"tensor<3x2x{written}>") is hlo.tensor((3, 2), t)


def test_types_are_interned_values():
    a = quantized(hlo.i8, hlo.f32, 0.5, -3)
    assert a is quantized("i8", "f32", 0.5, -3) is parse_quantized(a.name)
    assert a is not quantized(hlo.i8, hlo.f32, 0.5, -2)
    assert pickle.loads(pickle.dumps(a)) is a
    assert isinstance(a, hlo.ElementType) and a.kind == "quant" and a.dtype == "int8"
    assert (a.storage, a.expressed, a.scale, a.zero_point, a.axis) == \
        (hlo.i8, hlo.f32, 0.5, -3, None)
    p = quantized(hlo.ui8, hlo.f32, [0.5, 0.25], [1, 2], axis=1)
    assert p.is_per_axis and p.scales == (0.5, 0.25) and p.zero_points == (1, 2)
    with pytest.raises(ValueError, match="per axis"):
        p.scale
    assert hlo.tensor((4, 2), p).element_type is p


@pytest.mark.parametrize("text, message", [
    ("!quant.uniform<i8:f32, 0.0:1>", "scale must be positive and finite"),
    ("!quant.uniform<i8:f32, 1.0:300>", "zero point 300 is outside the storage range"),
    ("!quant.uniform<i8<-8:7>:f32, 0.99872:127>", r"zero point 127 is outside the storage "
                                                  r"range \[-8, 7\]"),
    ("!quant.uniform<i8<5:2>:f32, 1.0:3>", r"storage range \[5, 2\]"),
    ("!quant.uniform<i8<-200:2>:f32, 1.0>", r"within i8's \[-128, 127\]"),
    ("!quant.uniform<i64:f32, 1.0>", "quantized storage type"),
    ("!quant.uniform<i8:i32, 1.0>", "expressed type must be bf16, f16, f32 or f64"),
    ("!quant.any<i8:f32>", "!quant.any types are not supported"),
    ("!quant.uniform<i8:f32, {1.0,2.0}>", "need a quantization dimension"),
    ("!quant.uniform<i8:f32:0, {{1.0}}>", "sub-channel"),
    # MLIR: "unexpected decimal integer literal for a floating point value"
    ("!quant.uniform<i8:f32, 1:3>", r"a scale is a float: the decimal integer 1 is not one"),
    ("!quant.uniform<i8:f32:0, {1.0:1, 2:3}>", r"decimal integer 2 is not one"),
])
def test_bad_types_are_parse_errors_naming_the_constraint(text, message):
    with pytest.raises(hlo.ParseError, match=message):
        parse_quantized(text)


def test_scales_fit_the_expressed_type_and_zero_points_broadcast():
    with pytest.raises(ValueError, match="out of f16's range"):
        quantized(hlo.i8, hlo.f16, 1e5)  # MLIR: "scale out of expressed type range"
    with pytest.raises(ValueError, match="out of f32's range"):
        quantized(hlo.i8, hlo.f32, 1e-300)
    import numpy as np
    p = quantized(hlo.i8, hlo.f32, [0.5, 0.25], np.int64(3), axis=0)
    assert p.zero_points == (3, 3)


def test_add_mixes_per_tensor_and_per_axis_as_stablehlo_does():
    m, b, (x,) = _main(1, (2, 2))
    pa = quantized(hlo.i8, hlo.f32, [0.5, 0.25], axis=1)
    t = b.uniform_quantize(x, quantized(hlo.i8, hlo.f32, 0.5))
    narrow = b.uniform_quantize(x, quantized(hlo.i8, hlo.f32, 0.5, storage_min=-127))
    s = b.create("add", (b.uniform_quantize(x, pa), t), result_types=[hlo.tensor((2, 2), pa)])
    assert s.results[0].type.element_type is pa
    b.create("add", (t, narrow), result_types=[t.type])  # add_c3 compares storage types only
    with pytest.raises(hlo.OpBuildError, match="gives a per-axis result"):
        b.create("add", (b.uniform_quantize(x, pa), t), result_types=[t.type])
    with pytest.raises(hlo.OpBuildError, match="infers it from lhs"):  # measured: StableHLO
        b.create("add", (t, b.uniform_quantize(x, pa)), result_types=[hlo.tensor((2, 2), pa)])


def test_per_axis_types_fit_their_tensor():
    p = quantized(hlo.i8, hlo.f32, [1.0, 2.0, 3.0], axis=1)
    assert hlo.tensor((4, 3), p).shape == (4, 3)
    with pytest.raises(ValueError, match="3 scales, but dimension 1 of the tensor has size 2"):
        hlo.tensor((4, 2), p)
    with pytest.raises(ValueError, match="has rank 1"):
        hlo.tensor((3,), p)


# -- ops taking quantized tensors ------------------------------------------------------------

def _main(n_args=2, shape=(4,)):
    m = hlo.Module("q")
    f = m.add_function("main", [hlo.tensor(shape, hlo.f32)] * n_args, visibility="public")
    return m, f.builder(), f.arguments


def test_quantized_ops_build_print_and_read_back():
    m, b, (x, y) = _main()
    q2 = quantized(hlo.i8, hlo.f32, 0.5, 3)
    q3 = quantized(hlo.i8, hlo.f32, 0.25)
    a, c = b.uniform_quantize(x, Q), b.uniform_quantize(y, q2)
    s = b.create("add", (a, c), result_types=[hlo.tensor((4,), q3)]).results[0]
    t = b.transpose(b.reshape(b.sine(s), (2, 2)), (1, 0))
    r = b.uniform_quantize(t, Q)  # requantize
    b.return_(b.uniform_dequantize(r), b.compare(a, a, "LT"))
    m.verify()
    for dialect in (hlo.MHLO, hlo.STABLEHLO):
        for pretty in (False, True):
            text = m.to_text(dialect=dialect, pretty=pretty)
            assert hlo.parse(text).to_text(dialect=dialect, pretty=pretty) == text
    pretty = m.to_text(dialect=hlo.STABLEHLO, pretty=True)
    assert "stablehlo.sine %2 : tensor<4x!quant.uniform<i8:f32, 2.500000e-01>>" in pretty
    assert ("stablehlo.uniform_quantize %arg0 : (tensor<4xf32>) -> "
            f"tensor<4x{Q.name}>") in pretty


@pytest.mark.parametrize("build, message", [
    (lambda b, a, x: b.create("add", (a, x)), "mixes quantized and float tensors"),
    (lambda b, a, x: b.convert(a, hlo.i8), "'convert' does not take quantized tensors"),
    (lambda b, a, x: b.and_(a, a), "'and' does not take quantized tensors"),
    (lambda b, a, x: b.concatenate([a, b.uniform_quantize(x, quantized(hlo.i8, hlo.f32, 2.0))],
                                   0), "must have one type"),
    (lambda b, a, x: b.add(a, b.uniform_quantize(x, quantized(hlo.i4, hlo.f32, 0.5))),
     "must share storage and expressed types"),
    (lambda b, a, x: b.create("sine", (a,), result_types=[
        hlo.tensor((4,), quantized(hlo.i4, hlo.f32, 1.0))]),
     "must share storage type, storage range and expressed type"),
    (lambda b, a, x: b.create("select", (b.compare(a, a, "LT"), a, b.uniform_quantize(
        x, quantized(hlo.i8, hlo.f32, 0.5))), result_types=[a.type]),
     "branches and result must have one type"),
    (lambda b, a, x: b.multiply(*[b.uniform_quantize(b.reshape(x, (2, 2)), quantized(
        hlo.i8, hlo.f32, [0.5, 0.25], axis=1))] * 2), "per tensor only"),
    (lambda b, a, x: b.reduce([a], [b.uniform_quantize(b.constant(0.0),  Q)], [0],
                              lambda rb, p, q: rb.add(p, q)),
     "'reduce' does not take quantized tensors"),
    (lambda b, a, x: b.uniform_dequantize(x), "operand must be a tensor of a quantized type"),
    (lambda b, a, x: b.create("uniform_quantize", (x,), result_types=[hlo.tensor((4,), hlo.i8)]),
     "result must be a tensor of a quantized type"),
    (lambda b, a, x: b.uniform_quantize(b.convert(x, hlo.f16), Q),
     "operand must have the result's expressed type f32"),
    (lambda b, a, x: b.dot_general(a, a, ((0,), (0,))),
     "needs explicit result types"),
    (lambda b, a, x: b.create("dot_general", (a, x), {"dot_dimension_numbers": {
        "lhs_contracting_dimensions": (0,), "rhs_contracting_dimensions": (0,)}},
        result_types=[hlo.tensor((), hlo.f32)]), "needs a quantized rhs"),
    # Python and numpy scalars beside a quantized tensor (the int's hint spoke of i1)
    (lambda b, a, x: b.add(a, 1), "Python int 1 does not go into lhs's type tensor<4x!quant"
                                  ".*takes no Python scalar: quantize a constant of its "
                                  "expressed type"),
    (lambda b, a, x: b.multiply(2.5, a), "Python float 2.5 .*takes no Python scalar"),
    (lambda b, a, x: b.add(a, np.int8(1)), "operand rhs: dense elements of tensor<4x!quant"
                                           ".*uniform_quantize it"),
])
def test_mistakes_with_quantized_tensors_fail_at_build_time(build, message):
    m, b, (x, _) = _main()
    a = b.uniform_quantize(x, Q)
    with pytest.raises(hlo.OpBuildError, match=re.escape(message) if "[" in message else message):
        build(b, a, x)


def test_per_axis_types_move_through_transpose_reshape_and_broadcast():
    """StableHLO's transpose_c4, reshape_c3 and broadcast_in_dim_c6."""
    m, b, (x,) = _main(1, (2, 2))
    p0 = quantized(hlo.i8, hlo.f32, [1.0, 2.0], axis=0)
    a = b.uniform_quantize(x, p0)

    def op(name, attrs, shape, q):
        return b.create(name, (a,), attrs, result_types=[hlo.tensor(shape, q)]).results[0]
    assert op("transpose", {"permutation": (1, 0)}, (2, 2), p0.with_axis(1)).type \
        .element_type.axis == 1
    with pytest.raises(hlo.OpBuildError, match="the operand's quantization dimension 0 moves"):
        op("transpose", {"permutation": (1, 0)}, (2, 2), p0)
    assert op("reshape", None, (2, 1, 2), p0).type.shape == (2, 1, 2)
    assert op("reshape", None, (1, 2, 2), p0.with_axis(1)).type.shape == (1, 2, 2)
    with pytest.raises(hlo.OpBuildError, match="must keep the quantization dimension whole"):
        op("reshape", None, (2, 2), p0.with_axis(1))  # 2 elements before it, not 1
    assert op("broadcast_in_dim", {"broadcast_dimensions": (0, 2)}, (2, 3, 2), p0)
    with pytest.raises(hlo.OpBuildError, match=r"broadcast_dimensions\[0\] = 1"):
        op("broadcast_in_dim", {"broadcast_dimensions": (1, 2)}, (3, 2, 2), p0.with_axis(2))
    # a size-1 quantized dimension broadcasts its one scale
    m, b, (y,) = _main(1, (1, 2))
    one = b.uniform_quantize(y, quantized(hlo.i8, hlo.f32, [0.5], axis=0))
    wide = quantized(hlo.i8, hlo.f32, [0.5, 0.5, 0.5], axis=0)
    b.create("broadcast_in_dim", (one,), {"broadcast_dimensions": (0, 1)},
             result_types=[hlo.tensor((3, 2), wide)])
    with pytest.raises(hlo.OpBuildError, match="broadcasts one scale"):
        b.create("broadcast_in_dim", (one,), {"broadcast_dimensions": (0, 1)},
                 result_types=[hlo.tensor((3, 2), quantized(hlo.i8, hlo.f32, [0.5, 1.0, 0.5],
                                                            axis=0))])
    with pytest.raises(hlo.OpBuildError, match="per-axis quantized tensors is not supported"):
        b.slice(one, (0, 0), (1, 1))


def test_dot_like_constraints_are_stablehlos():
    m, b, (x, y) = _main(2, (2, 2))
    ql = quantized(hlo.i8, hlo.f32, 0.5, -3)
    lhs = b.uniform_quantize(x, ql)
    dn = {"lhs_contracting_dimensions": (1,), "rhs_contracting_dimensions": (0,)}
    i32q = quantized(hlo.i32, hlo.f32, 0.25)

    def dot(rhs_q, result_t):
        return b.create("dot_general", (lhs, b.uniform_quantize(y, rhs_q)),
                        {"dot_dimension_numbers": dn}, result_types=[result_t]).results[0]
    dot(quantized(hlo.i8, hlo.f32, 0.5), hlo.tensor((2, 2), i32q))
    with pytest.raises(hlo.OpBuildError, match=r"zero points 0 \(StableHLO's C15\)"):
        dot(quantized(hlo.i8, hlo.f32, 0.5, 4), hlo.tensor((2, 2), i32q))
    with pytest.raises(hlo.OpBuildError, match="which it contracts"):
        dot(quantized(hlo.i8, hlo.f32, [0.5, 0.5], axis=0), hlo.tensor((2, 2), i32q))
    with pytest.raises(hlo.OpBuildError, match="gives a result quantized per tensor"):
        dot(quantized(hlo.i8, hlo.f32, 0.5), hlo.tensor((2, 2), quantized(
            hlo.i32, hlo.f32, [0.25, 0.25], axis=1)))
    with pytest.raises(hlo.OpBuildError, match="share storage and expressed types"):
        dot(quantized(hlo.i4, hlo.f32, 0.5), hlo.tensor((2, 2), i32q))


# -- StableHLO's quantized corpus, as MLIR printed it ------------------------------------------

def _quantized_modules():
    if not CORPUS.exists():
        return []
    from verify.conformance.corpus import split_modules
    out = []
    for path in sorted(CORPUS.glob("*.mlir")):
        for i, text in enumerate(split_modules(path.read_text())):
            if "!quant." in text:
                out.append(pytest.param(text, id=f"{path.name[:60]}#{i}"))
    return out


MODULES = _quantized_modules()


@pytest.mark.skipif(not MODULES, reason=f"StableHLO's corpus is not at {CORPUS}")
def test_every_quantized_module_of_the_corpus_prints_as_mlir_printed_it():
    """Our pretty StableHLO print of each of the corpus' 106 quantized modules is the corpus'
    own text line for line (MLIR printed it; hex digits compared case-blind, since the
    corpus' MLIR wrote them in upper case), and the generic print reads back
    byte-identically."""
    assert len(MODULES) == 106
    for param in MODULES:
        text = param.values[0]
        m = hlo.parse(text)
        want = [ln.lower() for ln in text.strip().splitlines()
                if ln.strip() and not ln.startswith("//")]
        got = m.to_text(dialect=hlo.STABLEHLO, pretty=True, locations=False)
        assert got.lower().strip().splitlines() == want, param.id
        generic = m.to_text()
        assert hlo.parse(generic).to_text() == generic
        assert any(isinstance(getattr(v.type, "element_type", None), QuantizedType)
                   for fn in m.functions for op in fn.entry_block.operations
                   for v in op.results)


# -- against StableHLO's own verifier, inside jaxlib -------------------------------------------

_Q = "!quant.uniform<i8:f32, 5.000000e-01:2>"
_Q2 = "!quant.uniform<i8:f32, 2.500000e-01>"
_P = "!quant.uniform<i8:f32:1, {5.000000e-01,2.500000e-01:3}>"
_I32 = "!quant.uniform<i32:f32, 1.250000e-01>"


def _text(args, body, result):
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    return f"func.func @main({params}) -> {result} {{\n  %r = {body}\n  return %r : {result}\n}}"


# (case, text): each is judged alike by mhlo_ir's checks and StableHLO's verifier
VERDICTS = [
    ("add_scales_differ", _text([f"tensor<2x2x{_Q}>", f"tensor<2x2x{_Q2}>"],
                                f"stablehlo.add %a0, %a1 : (tensor<2x2x{_Q}>, tensor<2x2x{_Q2}>)"
                                f" -> tensor<2x2x{_Q}>", f"tensor<2x2x{_Q}>")),
    ("add_per_axis_lhs", _text([f"tensor<2x2x{_P}>", f"tensor<2x2x{_Q}>"],
                               f"stablehlo.add %a0, %a1 : (tensor<2x2x{_P}>, tensor<2x2x{_Q}>) ->"
                               f" tensor<2x2x{_P}>", f"tensor<2x2x{_P}>")),
    ("add_per_axis_rhs", _text([f"tensor<2x2x{_Q}>", f"tensor<2x2x{_P}>"],
                               f"stablehlo.add %a0, %a1 : (tensor<2x2x{_Q}>, tensor<2x2x{_P}>) ->"
                               f" tensor<2x2x{_P}>", f"tensor<2x2x{_P}>")),
    ("add_float_and_quantized", _text([f"tensor<2x2x{_Q}>", "tensor<2x2xf32>"],
                                      f"stablehlo.add %a0, %a1 : (tensor<2x2x{_Q}>, "
                                      f"tensor<2x2xf32>) -> tensor<2x2x{_Q}>",
                                      f"tensor<2x2x{_Q}>")),
    ("multiply_per_axis", _text([f"tensor<2x2x{_P}>"], f"stablehlo.multiply %a0, %a0 : "
                                f"tensor<2x2x{_P}>", f"tensor<2x2x{_P}>")),
    ("sine_scales_differ", _text([f"tensor<2x2x{_Q}>"], f"stablehlo.sine %a0 : "
                                 f"(tensor<2x2x{_Q}>) -> tensor<2x2x{_Q2}>", f"tensor<2x2x{_Q2}>")),
    ("and_quantized", _text([f"tensor<2x2x{_Q}>"], f"stablehlo.and %a0, %a0 : "
                            f"tensor<2x2x{_Q}>", f"tensor<2x2x{_Q}>")),
    ("convert_quantized", _text([f"tensor<2x2x{_Q}>"], f"stablehlo.convert %a0 : "
                                f"(tensor<2x2x{_Q}>) -> tensor<2x2xi8>", "tensor<2x2xi8>")),
    ("dot_general_rhs_zero_point", _text(
        [f"tensor<2x2x{_Q}>", f"tensor<2x2x{_Q}>"],
        f"stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<2x2x{_Q}>, "
        f"tensor<2x2x{_Q}>) -> tensor<2x2x{_I32}>", f"tensor<2x2x{_I32}>")),
    ("dot_general", _text(
        [f"tensor<2x2x{_Q}>", f"tensor<2x2x{_Q2}>"],
        f"stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<2x2x{_Q}>, "
        f"tensor<2x2x{_Q2}>) -> tensor<2x2x{_I32}>", f"tensor<2x2x{_I32}>")),
    ("dot_general_per_axis_rhs_contracted", _text(
        [f"tensor<2x2x{_Q}>", "tensor<2x2x!quant.uniform<i8:f32:0, {5.000000e-01,2.500000e-01}>>"],
        "stablehlo.dot_general %a0, %a1, contracting_dims = [1] x [0] : (tensor<2x2x" + _Q +
        ">, tensor<2x2x!quant.uniform<i8:f32:0, {5.000000e-01,2.500000e-01}>>) -> "
        f"tensor<2x2x{_I32}>", f"tensor<2x2x{_I32}>")),
    ("transpose_per_axis_unmoved", _text([f"tensor<2x2x{_P}>"], f"stablehlo.transpose %a0, dims "
                                         f"= [1, 0] : (tensor<2x2x{_P}>) -> tensor<2x2x{_P}>",
                                         f"tensor<2x2x{_P}>")),
    ("transpose_requantizes", _text([f"tensor<2x2x{_Q}>"], f"stablehlo.transpose %a0, dims = "
                                    f"[1, 0] : (tensor<2x2x{_Q}>) -> tensor<2x2x{_Q2}>",
                                    f"tensor<2x2x{_Q2}>")),
    ("reshape_per_axis", _text([f"tensor<2x2x{_P}>"], "stablehlo.reshape %a0 : (tensor<2x2x" + _P
                               + ">) -> tensor<2x1x2x!quant.uniform<i8:f32:2, {5.000000e-01,"
                               "2.500000e-01:3}>>", "tensor<2x1x2x!quant.uniform<i8:f32:2, "
                               "{5.000000e-01,2.500000e-01:3}>>")),
    ("select_branches_differ", _text(
        ["tensor<2x2xi1>", f"tensor<2x2x{_Q}>", f"tensor<2x2x{_Q2}>"],
        f"stablehlo.select %a0, %a1, %a2 : (tensor<2x2xi1>, tensor<2x2x{_Q}>, tensor<2x2x{_Q2}>)"
        f" -> tensor<2x2x{_Q}>", f"tensor<2x2x{_Q}>")),
    ("optimization_barrier_per_axis", _text([f"tensor<2x2x{_P}>"], "stablehlo.optimization_"
                                            f"barrier %a0 : tensor<2x2x{_P}>",
                                            f"tensor<2x2x{_P}>")),
    ("requantize_across_expressed_types", _text(
        [f"tensor<2x2x{_Q}>"], f"stablehlo.uniform_quantize %a0 : (tensor<2x2x{_Q}>) -> "
        "tensor<2x2x!quant.uniform<i8:f16, 5.000000e-01>>",
        "tensor<2x2x!quant.uniform<i8:f16, 5.000000e-01>>")),
]


# the valid ones (each of the others is refused for the reason its name gives)
ACCEPTED = {"add_scales_differ", "add_per_axis_lhs", "sine_scales_differ", "dot_general",
            "reshape_per_axis"}


@pytest.mark.parametrize("case, text", VERDICTS, ids=[c for c, _ in VERDICTS])
def test_checks_judge_as_stablehlos_verifier_does(case, text):
    """What mhlo_ir accepts, StableHLO's parser and verifier (in jaxlib's C++, through its
    portable-artifact serializer) accept, and what it refuses they refuse."""
    pytest.importorskip("jaxlib")
    from verify.quantized import stablehlo_accepts
    theirs = stablehlo_accepts(text)
    assert (theirs is None) == (case in ACCEPTED), theirs
    try:
        hlo.parse(text)
        ours = None
    except (hlo.ParseError, hlo.IRError) as e:
        ours = str(e)
    assert (ours is None) == (theirs is None), f"ours: {ours}\nStableHLO: {theirs}"


def test_a_quantized_constant_is_refused_saying_what_to_do():
    text = f"""func.func @main() -> tensor<2x{_Q}> {{
  %0 = stablehlo.constant dense<[1, 2]> : tensor<2x{_Q}>
  return %0 : tensor<2x{_Q}>
}}"""
    # (the dense attribute of a quantized type is refused first, as its own mistake)
    with pytest.raises(hlo.ParseError, match=r"2:43: dense elements of tensor<2x!quant"
                                             r".*constant of its expressed type and "
                                             r"uniform_quantize it"):
        hlo.parse(text)
    for spelling in ('"stablehlo.constant"()', "stablehlo.constant()"):  # (MLIR prints the
        # second: a quantized constant holds its storage type's values)
        with pytest.raises(hlo.ParseError, match="make a float constant and quantize it"):
            hlo.parse(text.replace(f"stablehlo.constant dense<[1, 2]> : tensor<2x{_Q}>",
                                   f"{spelling} <{{value = dense<[1, 2]> : "
                                   f"tensor<2xi8>}}> : () -> tensor<2x{_Q}>"))


@st.composite
def _quantized_tensors(draw):
    import mhlo_ir.strategies as hst
    shape = draw(st.lists(st.integers(0, 4), max_size=3).map(tuple))
    return hlo.tensor(shape, draw(hst.quantized_types(shape)))


@given(st.lists(_quantized_tensors(), min_size=1, max_size=5))
def test_quantized_types_print_as_mlir_prints_them_and_read_back(ts):
    """Drawn quantized tensor types (any storage, expressed type, scale, zero point, range,
    per axis): our text reads back as the same interned type, and MLIR's own print of a
    function taking them (read through jaxlib's portable-artifact serializer, which runs
    StableHLO's verifier) spells each one exactly as we do."""
    pytest.importorskip("jaxlib")
    from verify.quantized import mlir_print
    for t in ts:
        assert hlo.parse_type(str(t)) is t
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(ts))
    text = (f"func.func @main({params}) -> {ts[0]} {{\n  return %arg0 : {ts[0]}\n}}")
    printed = mlir_print(text)
    header = next(line for line in printed.splitlines() if "func.func" in line)
    assert header.strip().startswith(f"func.func @main({params}) -> {ts[0]}"), \
        (header, params)


def test_a_constant_of_a_quantized_type_is_refused_when_built():
    """Scalar or array: the builder says what Module.verify says (it built an array one and
    left the refusal to verify; a scalar got numpy's "not inexact")."""
    q = quantized(hlo.i8, hlo.f32, 0.25, 0)
    m = hlo.Module("q")
    b = m.add_function("main", []).builder()
    for value in (0, np.zeros(2, np.int8)):
        with pytest.raises(OpBuildError, match=r"'constant' does not take quantized tensors "
                                               r".*uniform_quantize"):
            b.constant(value, q)
    # The attribute itself is refused: it printed its bytes as floats, which read back as
    # neither the storage nor the expressed values (and MLIR holds no such attribute).
    for make in (lambda: hlo.DenseElementsAttr(hlo.tensor((2,), q), b"\0\0", False),
                 lambda: hlo.dense(np.zeros(2, np.int8), hlo.tensor((2,), q))):
        with pytest.raises(TypeError, match=r"dense elements of tensor<2x!quant.uniform<i8:f32"
                                            r".*expressed type and uniform_quantize it"):
            make()


def test_builder_methods_move_a_per_axis_type_as_the_spec_requires():
    """transpose, reshape and broadcast_in_dim built without result types infer the per-axis
    type StableHLO's constraints take (the explicit ones the test above checks), and run:
    dequantizing the moved tensor gives the moved dequantized tensor. Other data movement
    refuses per-axis tensors naming the op (a raw ValueError escaped before)."""
    import verify
    p0 = quantized(hlo.i8, hlo.f32, [0.5, 2.0], [1, 0], axis=0)
    x = np.array([[1.5, -2.0, 0.5], [4.0, 8.0, -6.0]], np.float32)
    cases = {
        "transpose": (lambda b, a: b.transpose(a, [1, 0]), np.transpose(x), p0.with_axis(1)),
        "reshape": (lambda b, a: b.reshape(a, (1, 2, 3)), x.reshape(1, 2, 3), p0.with_axis(1)),
        "broadcast_in_dim": (lambda b, a: b.broadcast_in_dim(a, (4, 2, 3), [1, 2]),
                             np.broadcast_to(x, (4, 2, 3)), p0.with_axis(1)),
    }
    for name, (make, want, q) in cases.items():
        m, b, (arg,) = _main(1, (2, 3))
        moved = make(b, b.uniform_quantize(arg, p0))
        assert moved.type == hlo.tensor(want.shape, q), name
        b.return_(b.uniform_dequantize(moved))
        (got,) = verify.run(m, x)
        np.testing.assert_array_equal(got, want, err_msg=name)
    m, b, (arg,) = _main(1, (1, 3))
    one = b.uniform_quantize(arg, quantized(hlo.i8, hlo.f32, [0.5], axis=0))
    assert b.broadcast_in_dim(one, (4, 3), [0, 1]).type == hlo.tensor(
        (4, 3), quantized(hlo.i8, hlo.f32, [0.5] * 4, axis=0))
    m, b, (arg,) = _main(1, (2, 3))
    a = b.uniform_quantize(arg, p0)
    for make in (lambda: b.concatenate([a, a], 0), lambda: b.slice(a, [0, 0], [1, 3]),
                 lambda: b.reverse(a, [1])):
        with pytest.raises(hlo.OpBuildError, match="per-axis quantized tensors is not "
                                                   "supported"):
            make()


_PER_AXIS_REGION_OPS = {
    "sort": lambda b, a, z: b.sort(a, lambda r, p, q: r.compare(p, q, "LT"), dimension=0),
    "map": lambda b, a, z: b.map([a], lambda r, p: p),
    "scatter": lambda b, a, z: b.scatter(
        a, b.constant(np.zeros((1, 1), np.int32)), a,
        dict(update_window_dims=(0, 1), inserted_window_dims=(),
             scatter_dims_to_operand_dims=(0,), index_vector_dim=1), lambda r, o, n: n),
    "select_and_scatter": lambda b, a, z: b.select_and_scatter(
        a, a, z, lambda r, p, q: r.compare(p, q, "GE"), lambda r, p, q: q,
        window_dimensions=[1, 1]),
    "all_reduce": lambda b, a, z: b.all_reduce(a, lambda r, p, q: r.add(p, q)),
    "reduce_scatter": lambda b, a, z: b.reduce_scatter(a, 0, lambda r, p, q: r.add(p, q),
                                                       [[0]]),
    "scan": lambda b, a, z: b.scan([a], [z], 0, lambda r, p, c: [p, c]),
    "reduce": lambda b, a, z: b.reduce(a, a, [0], lambda r, p, q: r.add(p, q)),
    "reduce_window": lambda b, a, z: b.reduce_window(a, a, [1, 1], lambda r, p, q: r.add(p, q)),
}


@pytest.mark.parametrize("name", sorted(_PER_AXIS_REGION_OPS))
def test_region_ops_refuse_per_axis_tensors_naming_the_op(name):
    """StableHLO's region ops take per-tensor quantized operands only, and a per-axis type has
    no scalar for the region's block arguments: refused as the op refuses quantized tensors,
    not with the bare ValueError of making that scalar (which escaped before)."""
    m, b, (arg,) = _main(1, (3, 2))
    a = b.uniform_quantize(arg, quantized(hlo.i8, hlo.f32, [0.5, 0.25], [1, 2], axis=1))
    z = b.uniform_quantize(b.constant(np.float32(0)), Q)
    with pytest.raises(OpBuildError, match=rf"'{name}' does not take quantized tensors "
                                           r"\(operand \w+(\[0\])? is tensor<3x2x!quant"):
        _PER_AXIS_REGION_OPS[name](b, a, z)


def test_quantized_dot_and_convolution_builders_take_a_result_element_type():
    """StableHLO's dot-like forms through the builder methods with result_element_type: a
    quantized lhs and rhs of different types into a third (i8 x i8 -> i32), and hybrid
    (float lhs, quantized weights). Both were refused; b.create built them. Values chosen
    exact in every type, so the product must match numpy's exactly."""
    import verify
    ql, qr = quantized(hlo.i8, hlo.f32, 0.25, -3), quantized(hlo.i8, hlo.f32, 0.5, 0)
    qo = quantized(hlo.i32, hlo.f32, 0.125, 0)
    x = np.array([[0.25, -1.0, 2.0], [1.5, 0.5, -0.75]], np.float32)
    w = np.array([[1.0, -0.5, 2.0, 0.0], [0.5, 1.5, -1.0, 3.0], [-2.0, 1.0, 0.5, 0.5]],
                 np.float32)
    m = hlo.Module("q")
    f = m.add_function("main", [hlo.tensor(x.shape, hlo.f32), hlo.tensor(w.shape, hlo.f32)])
    b = f.builder()
    a, c = b.uniform_quantize(f.arguments[0], ql), b.uniform_quantize(f.arguments[1], qr)
    y = b.dot_general(a, c, ((1,), (0,)), result_element_type=qo)
    assert y.type == hlo.tensor((2, 4), qo)
    z = b.dot(a, c, result_element_type=qo)
    assert z.type == y.type
    hybrid = b.dot_general(f.arguments[0], c, ((1,), (0,)), result_element_type=hlo.f32)
    assert hybrid.type == hlo.tensor((2, 4), hlo.f32)
    lhs = b.uniform_quantize(b.reshape(f.arguments[0], (1, 2, 3, 1)), ql)
    k = b.uniform_quantize(b.reshape(b.slice(f.arguments[1], [0, 0], [1, 2]), (1, 2, 1, 1)),
                           qr)
    conv = b.convolution(lhs, k, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
                         result_element_type=qo)
    assert conv.type == hlo.tensor((1, 2, 2, 1), qo)
    b.return_(b.uniform_dequantize(y), b.uniform_dequantize(z), hybrid,
              b.uniform_dequantize(conv))
    *dots, got_conv = verify.run(m, x, w)
    for got in dots:
        np.testing.assert_array_equal(got, x @ w)
    np.testing.assert_array_equal(got_conv.reshape(2, 2),
                                  w[0, 0] * x[:, :2] + w[0, 1] * x[:, 1:])


@pytest.mark.parametrize("op", ["is_finite", "iota", "infeed"])
def test_ops_stablehlo_defines_on_quantized_tensors_say_not_yet(op):
    """StableHLO's spec takes per-tensor quantized tensors for is_finite, iota, the dynamic
    ops and the I/O ops (jaxlib's verifier accepts is_finite and iota): refused as not taken
    yet, not as defined nowhere."""
    from mhlo_ir.ops.spec import REGISTRY
    assert REGISTRY[op].quantized == "not_yet"
    q = quantized(hlo.i8, hlo.f32, 0.25, -4)
    m = hlo.Module("q")
    f = m.add_function("main", [hlo.tensor((3,), q)])
    b = f.builder()
    if op == "is_finite":
        with pytest.raises(hlo.OpBuildError, match="StableHLO defines quantized is_finite, but "
                                                   "mhlo_ir does not take it yet"):
            b.is_finite(f.arguments[0])
