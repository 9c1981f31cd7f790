"""Mistakes the program generator found reaching jaxlib, now refused in Python with the reason.

Each test builds the mistake and checks the OpBuildError; where jaxlib's answer is a plain
rejection (not a crash), the same program written as text shows that jaxlib does reject it,
so that a jaxlib which starts accepting it makes the check visible as stale."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.errors import OpBuildError

T = hlo.tensor


def _builder(*types):
    m = hlo.Module()
    f = m.add_function("main", list(types), visibility="public")
    return m, f.builder(), f.arguments


@pytest.mark.parametrize("et", [hlo.i32, hlo.ui8, hlo.i1, hlo.complex64],
                         ids=lambda t: t.name)
def test_totalorder_is_refused_where_xla_wants_another_compare_type(et):
    _, b, (x, y) = _builder(T((3,), et), T((3,), et))
    with pytest.raises(OpBuildError, match="compare_type TOTALORDER does not fit"):
        b.compare(x, y, "LT" if et.kind != "complex" else "EQ", "TOTALORDER")
    with pytest.raises(OpBuildError, match="compare_type TOTALORDER does not fit"):
        b.chlo_broadcast_compare(x, y, "EQ", "TOTALORDER")
    ty = str(T((3,), et))
    text = f"""module {{
  func.func public @main(%x: {ty}, %y: {ty}) -> tensor<3xi1> {{
    %0 = mhlo.compare EQ, %x, %y, TOTALORDER : ({ty}, {ty}) -> tensor<3xi1>
    func.return %0 : tensor<3xi1>
  }}
}}"""
    with pytest.raises((verify.CompileError, verify.VerificationError),
                       match="Expected comparison type"):
        verify.compile(text)


def test_float_totalorder_still_builds_and_runs():
    m, b, (x, y) = _builder(T((2,), hlo.f32), T((2,), hlo.f32))
    b.return_(b.compare(x, y, "LT", "TOTALORDER"))
    out = verify.run(m, np.float32([-0.0, 1.0]), np.float32([0.0, np.nan]))[0]
    assert out.tolist() == [True, True]


def test_rng_bit_generator_must_make_unsigned_bits():
    _, b, (s,) = _builder(T((2,), hlo.ui64))
    for et in (hlo.i32, hlo.f32):
        with pytest.raises(OpBuildError, match=r"must have unsigned integer elements: XLA "
                                               r"generates ui32 bits"):
            b.rng_bit_generator(s, (3,), et, "THREE_FRY")
    # what the check prevents: the program says i32, XLA hands back uint32
    text = """module {
  func.func public @main(%s: tensor<2xui64>) -> tensor<3xi32> {
    %0:2 = "mhlo.rng_bit_generator"(%s) <{rng_algorithm = #mhlo.rng_algorithm<THREE_FRY>}> :
        (tensor<2xui64>) -> (tensor<2xui64>, tensor<3xi32>)
    func.return %0#1 : tensor<3xi32>
  }
}"""
    out = verify.run(text, np.array([1, 2], np.uint64))[0]
    assert out.dtype != np.int32  # (uint32 in jaxlib 0.10.2)


def test_all_gather_and_reduce_scatter_need_a_non_empty_dimension():
    _, b, (x,) = _builder(T((0, 3), hlo.f32))
    with pytest.raises(OpBuildError, match="size 0 at all_gather_dim 0"):
        b.all_gather(x, 0, replica_groups=[[0]])
    with pytest.raises(OpBuildError, match="size 0 at scatter_dimension 0"):
        b.reduce_scatter(x, 0, lambda r, p, q: r.add(p, q), replica_groups=[[0]])
    assert b.all_gather(x, 1, replica_groups=[[0]]).type == T((0, 3), hlo.f32)


def test_a_fusion_cannot_take_one_value_twice():
    m, b, (x,) = _builder(T((2,), hlo.f32))
    y = b.negate(x)
    with pytest.raises(OpBuildError, match=r"inputs\[1\] repeats an earlier input"):
        b.fusion([y, y], lambda r, p, q: r.multiply(p, q))
    b.return_(b.fusion([y], lambda r, p: r.multiply(p, p)))
    assert verify.run(m, np.float32([1, 2]))[0].tolist() == [1.0, 4.0]


def test_fft_lengths_are_non_negative():
    _, b, (x,) = _builder(T((4,), hlo.complex64))
    with pytest.raises(OpBuildError, match=r"fft_length entries must be non-negative"):
        b.fft(x, "FFT", [-1])
