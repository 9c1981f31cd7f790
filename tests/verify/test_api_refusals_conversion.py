"""What jaxlib's conversion to HLO rejects with words about its own rewrite is refused in
Python, for Modules and text, with the reason and a way out: a chlo.broadcast_select beside
a constant in a closed region (the bypassed program shows jaxlib's own rejection)."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
import verify.api as api
from mhlo_ir.jaxlib_conversion import hoisted_region_constant
from verify.errors import VerificationError

_SELECT = """    %p = mhlo.compare LT, %y, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %s = chlo.broadcast_select %p, %y, %y
        : (tensor<2xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
"""


def _program(region_op: str, select: bool = True):
    bodies = {
        "map": """    %0 = "mhlo.map"(%x) <{dimensions = dense<0> : tensor<1xi64>}> ({
    ^bb0(%a: tensor<f32>):
      %c = mhlo.constant dense<3.750000e-01> : tensor<f32>
      %d = mhlo.add %c, %a : tensor<f32>
      mhlo.return %d : tensor<f32>
    }) : (tensor<2xf32>) -> tensor<2xf32>
""",
        # (the constant outside the map, which the verifier lets a closed region use)
        "captured map": """    %c = mhlo.constant dense<3.750000e-01> : tensor<f32>
    %0 = "mhlo.map"(%x) <{dimensions = dense<0> : tensor<1xi64>}> ({
    ^bb0(%a: tensor<f32>):
      %d = mhlo.add %c, %a : tensor<f32>
      mhlo.return %d : tensor<f32>
    }) : (tensor<2xf32>) -> tensor<2xf32>
""",
        "sort": """    %0 = "mhlo.sort"(%x) <{dimension = 0 : i64}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = mhlo.constant dense<3.750000e-01> : tensor<f32>
      %d = mhlo.add %a, %c : tensor<f32>
      %e = mhlo.compare LT, %d, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      mhlo.return %e : tensor<i1>
    }) : (tensor<2xf32>) -> tensor<2xf32>
""",
        "while": """    %n = mhlo.constant dense<0> : tensor<i32>
    %w:2 = mhlo.while(%i = %n, %v = %x) : tensor<i32>, tensor<2xf32>
     cond {
      %c = mhlo.constant dense<3> : tensor<i32>
      %b = mhlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      mhlo.return %b : tensor<i1>
    } do {
      %c = mhlo.constant dense<1> : tensor<i32>
      %j = mhlo.add %i, %c : tensor<i32>
      %u = mhlo.add %v, %v : tensor<2xf32>
      mhlo.return %j, %u : tensor<i32>, tensor<2xf32>
    }
    %0 = mhlo.add %w#1, %x : tensor<2xf32>
""",
    }
    tail = (_SELECT + "    return %0, %s : tensor<2xf32>, tensor<2xf32>\n" if select else
            "    return %0, %y : tensor<2xf32>, tensor<2xf32>\n")
    return hlo.parse("module @m {\n  func.func public @main(%x: tensor<2xf32>, "
                     "%y: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {\n"
                     + bodies[region_op] + tail + "  }\n}\n")


X, Y = np.array([1.0, -2.0], np.float32), np.array([0.5, 3.0], np.float32)


@pytest.mark.parametrize("region_op", ["map", "captured map", "sort"])
def test_refused_in_python_with_the_reason(region_op):
    m = _program(region_op)
    assert hoisted_region_constant(m)
    for source in (m, m.to_text()):
        with pytest.raises(VerificationError, match="broadcast_select") as e:
            verify.check(source)
        assert e.value.jaxlib_message is None and "mhlo.select" in str(e.value)


@pytest.mark.parametrize("region_op", ["map", "captured map", "sort"])
def test_the_refused_program_is_what_jaxlib_rejects(region_op, monkeypatch):
    monkeypatch.setattr(api, "_conversion_problem", lambda module: None)
    try:
        verify.run(_program(region_op), X, Y)
    except VerificationError as e:
        assert "requires all operands to be defined in the parent region" in str(e)
    else:
        pytest.skip("this jaxlib converts it: the refusal can be lifted for it")


def test_its_neighbours_run():
    # the same closed regions without the broadcast_select, and a while loop's constants
    # beside one, compile and run
    for region_op in ("map", "captured map"):
        (got, _) = verify.run(_program(region_op, select=False), X, Y)
        np.testing.assert_array_equal(got, X + np.float32(0.375))
    (got, _) = verify.run(_program("sort", select=False), X, Y)
    np.testing.assert_array_equal(got, np.sort(X))
    m = _program("while")
    assert not hoisted_region_constant(m)
    got, sel = verify.run(m, X, Y)
    np.testing.assert_array_equal(got, 8 * X + X)
    np.testing.assert_array_equal(sel, Y)


def _stochastic(transpose_operand: bool, transpose_bits: bool):
    def side(name, t, value):
        if not value:
            return name, ""
        return f"%t{name[1:]}", (f'    %t{name[1:]} = "mhlo.transpose"({name}) <{{permutation = '
                                 f'dense<[1, 0, 2]> : tensor<3xi64>}}> : ({t}) -> {t}\n')
    x, tx = side("%x", "tensor<2x2x1xf32>", transpose_operand)
    r, tr = side("%r", "tensor<2x2x1xui32>", transpose_bits)
    return hlo.parse(f"""module @m {{
  func.func public @main(%x: tensor<2x2x1xf32>, %r: tensor<2x2x1xui32>) -> tensor<2x2x1xi8> {{
{tx}{tr}    %0 = "mhlo.stochastic_convert"({x}, {r})
        : (tensor<2x2x1xf32>, tensor<2x2x1xui32>) -> tensor<2x2x1xi8>
    return %0 : tensor<2x2x1xi8>
  }}
}}""")


SX = np.arange(4, dtype=np.float32).reshape(2, 2, 1)
SR = np.zeros((2, 2, 1), np.uint32)


def test_a_stochastic_convert_through_a_transpose_is_refused(monkeypatch):
    m = _stochastic(True, False)
    for source in (m, m.to_text(), _stochastic(False, True), _stochastic(True, True)):
        with pytest.raises(VerificationError, match="stochastic_convert whose operand") as e:
            verify.check(source)
        assert e.value.jaxlib_message is None
    # what jaxlib says without the refusal
    monkeypatch.setattr(api, "_conversion_problem", lambda module: None)
    try:
        verify.run(m, SX, SR)
    except VerificationError as e:
        assert "does not match random tensor shape" in str(e)
    else:
        pytest.skip("this jaxlib converts it: the refusal can be lifted for it")


def test_stochastic_converts_without_transposes_run():
    # with zero random bits a stochastic rounding of integers is the integers themselves
    (got,) = verify.run(_stochastic(False, False), SX, SR)
    np.testing.assert_array_equal(got, SX.astype(np.int8))


def test_the_campaigns_stochastic_convert_is_refused():
    # seed 16006786: both sides come from one einsum, the bits through a slice to a scalar
    # (whose layout is reset) and the operand through a bitcast_convert (which keeps it)
    m = hlo.parse("""module @m {
  func.func public @main(%a: tensor<4x3x2xf64>, %b: tensor<3x2xf64>) -> tensor<4x2x3x2x2xi16> {
    %5 = "mhlo.einsum"(%a, %b) <{einsum_config = "abc,bx->acbx"}>
        : (tensor<4x3x2xf64>, tensor<3x2xf64>) -> tensor<4x2x3x2xf64>
    %6 = "mhlo.slice"(%5) <{limit_indices = dense<1> : tensor<4xi64>,
        start_indices = dense<0> : tensor<4xi64>, strides = dense<1> : tensor<4xi64>}>
        : (tensor<4x2x3x2xf64>) -> tensor<1x1x1x1xf64>
    %7 = mhlo.reshape %6 : (tensor<1x1x1x1xf64>) -> tensor<f64>
    %8 = mhlo.convert %7 : (tensor<f64>) -> tensor<ui32>
    %9 = "mhlo.broadcast_in_dim"(%8) <{broadcast_dimensions = dense<> : tensor<0xi64>}>
        : (tensor<ui32>) -> tensor<4x2x3x2x2xui32>
    %10 = mhlo.bitcast_convert %5 : (tensor<4x2x3x2xf64>) -> tensor<4x2x3x2x2xf32>
    %11 = "mhlo.stochastic_convert"(%10, %9)
        : (tensor<4x2x3x2x2xf32>, tensor<4x2x3x2x2xui32>) -> tensor<4x2x3x2x2xi16>
    return %11 : tensor<4x2x3x2x2xi16>
  }
}""")
    with pytest.raises(VerificationError, match="stochastic_convert whose operand"):
        verify.check(m)
