"""More of what XLA:CPU cannot run, refused in Python (found by a review of what the builder
takes, 2026-12-07): collective bodies other than one add, multiply, minimum or maximum (of
bf16 the compile aborts), TopK custom calls not of XLA's shapes (aborts, segfaults, garbage),
a concatenate of 2-bit integers (aborts), a stochastic_convert to floats, and
collective_broadcast. Each refusal is shown needed with it bypassed: in a subprocess where XLA
takes the process down, in this one where it fails cleanly."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from tests.verify.test_api_refusals_cpu import _refused, _still_fails
from verify.errors import CompileError


def _module(arg_types, build):
    m = hlo.Module("m")
    f = m.add_function("main", arg_types, visibility="public")
    b = f.builder()
    out = build(b, *f.arguments)
    b.return_(*(out if isinstance(out, (list, tuple)) else (out,)))
    return m.verify()


def _bypassed(m, expect_ok_word="compiled"):
    """``m`` compiled in a subprocess with the CPU refusals bypassed."""
    code = ("import mhlo_ir as hlo, verify, verify.api as api\n"
            "api._cpu_refusals = lambda m: None\n"
            "verify.compile(hlo.parse(open(0).read()))\n"
            f"print({expect_ok_word!r})\n")
    return subprocess.run([sys.executable, "-c", code], input=m.to_text(),
                          capture_output=True, text=True, timeout=120)


_BODIES = {
    "subtract": lambda r, a, v: r.subtract(a, v),
    "add of one argument twice": lambda r, a, v: r.add(a, a),
    "select": lambda r, a, v: r.select(r.compare(a, v, "GT"), a, v),
    "the right argument": lambda r, a, v: v,
}


@pytest.mark.parametrize("body", list(_BODIES))
@pytest.mark.parametrize("op", ["all_reduce", "reduce_scatter"])
def test_collective_bodies_xla_cpu_does_not_compute_are_refused(op, body):
    def build(b, x):
        if op == "all_reduce":
            return b.all_reduce([x], _BODIES[body], [[0]])
        return b.reduce_scatter(x, 0, _BODIES[body], [[0]])
    m = _module([hlo.tensor((4,), hlo.f32)], build)
    _refused(m, f"'{op}' with a body other than one add")


@pytest.mark.parametrize("et, body", [(hlo.i32, "and_"), (hlo.i1, "xor")])
def test_bitwise_collective_bodies_but_and_or_of_i1_are_refused(et, body):
    m = _module([hlo.tensor((4,), et)],
                lambda b, x: b.all_reduce([x], lambda r, a, v: getattr(r, body)(a, v), [[0]]))
    _refused(m, "'all_reduce' with a body other than one add")


@pytest.mark.parametrize("et, body", [
    (hlo.f32, lambda r, a, v: r.add(a, v)), (hlo.f32, lambda r, a, v: r.add(v, a)),
    (hlo.bf16, lambda r, a, v: r.maximum(a, v)), (hlo.i32, lambda r, a, v: r.multiply(a, v)),
    (hlo.i1, lambda r, a, v: r.and_(a, v)), (hlo.i1, lambda r, a, v: r.or_(a, v))],
    ids=["add", "add-swapped", "bf16-max", "i32-mul", "i1-and", "i1-or"])
def test_the_bodies_xla_cpu_computes_run(et, body):
    x = (np.arange(4) % 2).astype(et.dtype)
    m = _module([hlo.tensor((4,), et)], lambda b, v: b.all_reduce([v], body, [[0]]))
    np.testing.assert_array_equal(verify.run(m, x)[0], x)  # (one replica: x itself)


def test_an_unsupported_body_of_bf16_aborts_xla_cpu():
    m = _module([hlo.tensor((4,), hlo.bf16)],
                lambda b, x: b.all_reduce([x], _BODIES["select"], [[0]]))
    _still_fails(_bypassed(m), "compiled")
    m32 = _module([hlo.tensor((4,), hlo.f32)],
                  lambda b, x: b.all_reduce([x], _BODIES["select"], [[0]]))
    r = _bypassed(m32)
    if r.returncode != 0:  # (f32: a clean error, not an abort)
        assert "Unsupported reduction computation" in r.stderr


def _topk(operand, values, indices, et=hlo.f32, it=hlo.i32, results=2):
    types = [hlo.tensor(values, et), hlo.tensor(indices, it)][:results]
    return _module([hlo.tensor(operand, et)],
                   lambda b, x: b.custom_call("TopK", [x], types))


@pytest.mark.parametrize("case, pattern", [
    ((5,), "gives 1 result, not two"),
    (((2,), (3,), (3,)), r"not both \[k\] for a k of at most 2"),
    (((2, 5), (2, 3), (2, 4)), r"not both \[2, k\]"),
    (((5,), (3,), (3,), hlo.f16), "its operand is tensor<5xf16>, not of f32"),
    (((5,), (3,), (3,), hlo.f32, hlo.i64), "not f32 values and i32 indices")],
    ids=["one-result", "k-over-n", "other-batch", "f16", "i64-indices"])
def test_topk_calls_not_of_xlas_shapes_are_refused(case, pattern):
    m = _topk((5,), (3,), (3,), results=1) if case == (5,) else _topk(*case)
    _refused(m, "'custom_call' to TopK: .*" + pattern)


def test_topk_calls_of_xlas_shapes_run():
    x = np.array([[3, 9, 1, 7, 5], [0, -2, 8, 8, 4]], np.float32)
    values, indices = verify.run(_topk((2, 5), (2, 3), (2, 3)), x)
    np.testing.assert_array_equal(values, -np.sort(-x, axis=1)[:, :3])
    np.testing.assert_array_equal(np.take_along_axis(x, indices, 1), values)


def test_the_topk_call_of_one_result_aborts_xla_cpu():
    _still_fails(_bypassed(_topk((5,), (3,), (3,), results=1)), "compiled")


@pytest.mark.parametrize("et", [hlo.i2, hlo.ui2])
def test_a_concatenate_of_two_bit_integers_is_refused(et):
    m = _module([hlo.tensor((2,), et)], lambda b, x: b.concatenate([x, x], 0))
    _refused(m, f"'concatenate' of {et.name}: XLA:CPU aborts")
    if et is hlo.i2:
        _still_fails(_bypassed(m), "compiled")


def test_a_concatenate_of_four_bit_integers_runs():
    x = np.array([1, -2], hlo.i4.dtype)
    m = _module([hlo.tensor((2,), hlo.i4)], lambda b, v: b.concatenate([v, v], 0))
    np.testing.assert_array_equal(verify.run(m, x)[0].astype(np.int8), [1, -2, 1, -2])


def _stochastic(et):
    return _module([hlo.tensor((3,), hlo.f32), hlo.tensor((3,), hlo.ui32)],
                   lambda b, x, r: b.stochastic_convert(x, r, et))


def test_a_stochastic_convert_to_a_float_type_is_refused():
    m = _stochastic(hlo.bf16)
    _refused(m, "'stochastic_convert' to tensor<3xbf16>: XLA:CPU rounds floats")
    import verify.api as api
    saved, api._cpu_refusals = api._cpu_refusals, lambda m: None
    try:
        with pytest.raises(CompileError, match="stochastic convert"):
            verify.compile(m)
    finally:
        api._cpu_refusals = saved


def test_collective_broadcast_is_refused_on_cpu():
    m = _module([hlo.tensor((2,), hlo.f32)], lambda b, x: b.collective_broadcast(x, [[0]]))
    _refused(m, "'collective_broadcast' has no XLA:CPU implementation")
