"""The same programs on CUDA through jaxlib's GPU client, compared with numpy.

Skipped (by tests/conftest.py) where jaxlib sees no CUDA device. Each test compiles one small
module; tolerances allow for the GPU's own reduction order and TF32-free f32 matmuls.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import f32, tensor

pytestmark = pytest.mark.gpu

PLATFORM = "cuda"


def _module(arg_types):
    m = hlo.Module("gpu")
    f = m.add_function("main", arg_types, visibility="public")
    return m, f, f.builder(), f.arguments


def test_add_and_elementwise():
    m, f, b, (x, y) = _module([tensor((2, 3), f32), tensor((2, 3), f32)])
    b.return_(b.add(x, y), b.maximum(x, y), b.compare(x, y, "LT"))
    rng = np.random.default_rng(0)
    a, c = rng.standard_normal((2, 2, 3)).astype(np.float32)
    s, mx, lt = verify.run(m, a, c, platform=PLATFORM)
    np.testing.assert_allclose(s, a + c, rtol=1e-6)
    np.testing.assert_array_equal(mx, np.maximum(a, c))
    np.testing.assert_array_equal(lt, a < c)


def test_dot_general_batched():
    m, f, b, (x, y) = _module([tensor((2, 3, 4), f32), tensor((2, 4, 5), f32)])
    b.return_(b.dot_general(x, y, ((2,), (1,)), ((0,), (0,)),
                            precision_config=["HIGHEST", "HIGHEST"]))
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    c = rng.standard_normal((2, 4, 5)).astype(np.float32)
    (out,) = verify.run(m, a, c, platform=PLATFORM)
    assert out.shape == (2, 3, 5) and out.dtype == np.float32
    np.testing.assert_allclose(out, np.einsum("bij,bjk->bik", a, c), rtol=1e-5, atol=1e-5)


def test_reduce_sum_and_max():
    m, f, b, (x,) = _module([tensor((4, 5), f32)])
    total = b.reduce(x, b.constant(np.float32(0)), [1], lambda bb, acc, e: bb.add(acc, e))
    big = b.reduce(x, b.constant(np.float32(-np.inf)), [0],
                   lambda bb, acc, e: bb.maximum(acc, e))
    b.return_(total, big)
    a = np.arange(20, dtype=np.float32).reshape(4, 5) - 7
    s, mx = verify.run(m, a, platform=PLATFORM)
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(mx, a.max(axis=0))


def test_while_loop():
    """Sum i for i in 0..n-1 with a counter: (i, acc) -> (i + 1, acc + i) while i < n."""
    m, f, b, (n,) = _module([tensor((), hlo.i32)])
    one = b.constant(np.int32(1))
    i0 = b.constant(np.int32(0))
    _, acc = b.while_([i0, i0],
                      lambda bb, i, a: bb.compare(i, n, "LT"),
                      lambda bb, i, a: (bb.add(i, one), bb.add(a, i)))
    b.return_(acc)
    for k in (0, 1, 10):
        (out,) = verify.run(m, np.array(k, np.int32), platform=PLATFORM)
        assert out.dtype == np.int32 and int(out) == k * (k - 1) // 2


def test_bf16_multiply_and_f32_accumulating_dot():
    bf16 = hlo.bf16
    m, f, b, (x, y) = _module([tensor((2, 3), bf16), tensor((3, 2), bf16)])
    b.return_(b.multiply(x, x),
              b.dot_general(x, y, ((1,), (0,)), result_element_type=f32))
    a = np.array([[1.5, -2, 0.25], [3, 0.5, -1]], ml_dtypes.bfloat16)
    c = np.array([[1, 2], [-0.5, 4], [2, 0]], ml_dtypes.bfloat16)
    sq, dot = verify.run(m, a, c, platform=PLATFORM)
    assert sq.dtype == ml_dtypes.bfloat16 and dot.dtype == np.float32
    # Small dyadic values: every product and sum is exact in bf16 and f32.
    np.testing.assert_array_equal(sq.astype(np.float32), a.astype(np.float32) ** 2)
    np.testing.assert_array_equal(dot, a.astype(np.float32) @ c.astype(np.float32))


def test_gpu_argument_checking_and_errors():
    m, f, b, (x,) = _module([tensor((2,), f32)])
    b.return_(b.negate(x))
    exe = verify.compile(m, PLATFORM)
    assert all(d.platform in ("cuda", "gpu") for d in exe.devices)
    with pytest.raises(verify.ArgumentError, match="expected dtype float32, got int32"):
        exe(np.array([1, 2], np.int32))
    (out,) = exe(np.array([1, -2], np.float32))
    np.testing.assert_array_equal(out, [-1, 2])


def test_cuda_is_listed_and_scalars_and_byte_orders_convert():
    assert verify.available_platforms()[:2] == ["cpu", "cuda"]
    m, f, b, (x, s) = _module([tensor((3,), f32), tensor((), hlo.bf16)])
    b.return_(b.multiply(x, x), b.add(s, s))
    sq, twice = verify.run(m, np.array([1, 2, 3], ">f4"), 1.5, platform="gpu")
    np.testing.assert_array_equal(sq, [1, 4, 9])
    assert twice.dtype == ml_dtypes.bfloat16 and float(twice) == 3.0
