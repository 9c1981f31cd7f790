"""Programs over constants that jaxlib's conversion or XLA's folding gets wrong, refused in
Python (a review of the builder, 2026-12-07, ninth session): a dynamic_slice of constant
unsigned start indices with the top bit set (a wrong slice), a bitcast_convert of constants
to 2- or 4-bit elements (wrong numbers), unsigned constants jaxlib reads as signed in shape
operands, a scatter of no updates over constants alone (a segfault); and verify.run of a
program with infeed or outfeed (a hang). Each refusal shown needed with it bypassed; the
neighbours that stay allowed run against numpy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
import verify.api as api
from mhlo_ir import OpBuildError
from tests.child_env import child_env
from tests.verify.test_api_refusals_cpu import _still_fails
from tests.verify.test_refusals_cpu_topk_collectives import _module
from verify.errors import CompileError, VerificationError

T = hlo.tensor


X = np.arange(4, dtype=np.int32)


@pytest.mark.parametrize("dtype, start", [(np.uint8, 255), (np.uint8, 200), (np.uint16, 40000),
                                          (np.uint32, 2**32 - 1)])
def test_a_dynamic_slice_of_big_unsigned_constant_starts_is_refused(dtype, start,
                                                                    monkeypatch):
    m = _module([T((4,), hlo.i32)], lambda b, x: b.dynamic_slice(
        x, [b.constant(np.array(start, dtype))], [2]))
    for source in (m, m.to_text()):
        with pytest.raises(VerificationError, match=f"one {start} of ui.*reading the start as "
                                                    "signed"):
            verify.check(source)
    with monkeypatch.context() as p:  # what jaxlib makes of it: the slice at 0
        p.setattr(api, "_conversion_problem", lambda m: None)
        np.testing.assert_array_equal(verify.run(m, X)[0], [0, 1])
    # the spec clamps the start to 2: as the same index does from an argument, or signed
    m = _module([T((4,), hlo.i32), T((), hlo.from_numpy(np.dtype(dtype)))],
                lambda b, x, i: b.dynamic_slice(x, [i], [2]))
    np.testing.assert_array_equal(verify.run(m, X, np.array(start, dtype))[0], [2, 3])
    m = _module([T((4,), hlo.i32)], lambda b, x: b.dynamic_slice(
        x, [b.constant(np.uint8(127))], [2]))
    np.testing.assert_array_equal(verify.run(m, X)[0], [2, 3])


@pytest.mark.parametrize("src, to", [(np.uint8, hlo.ui4), (np.int8, hlo.i4),
                                     (np.uint16, hlo.ui4), (np.uint8, hlo.ui2)])
def test_a_bitcast_convert_of_constants_to_sub_byte_elements_is_refused(src, to, monkeypatch):
    data = np.array([0x21, 0x43], src)
    k = np.dtype(src).itemsize * 8 // to.bits
    m = _module([], lambda b: b.bitcast_convert(b.constant(data), to))
    with pytest.raises(CompileError, match=f"'bitcast_convert' of constants to {to.name}"):
        verify.compile(m)
    with monkeypatch.context() as p:
        p.setattr(api, "_cpu_refusals", lambda m: None)
        wrong = verify.run(m)[0]
    # from an argument, the bits as numpy reads them: low nibble (or crumb) first
    m = _module([T((2,), hlo.from_numpy(np.dtype(src)))], lambda b, x: b.bitcast_convert(x, to))
    got = verify.run(m, data)[0]
    raw = data.view(np.uint8)
    want = np.stack([(raw >> (to.bits * j)) & ((1 << to.bits) - 1)
                     for j in range(8 // to.bits)], -1).reshape(2, k)
    np.testing.assert_array_equal(got.astype(np.int64) & ((1 << to.bits) - 1), want)
    assert not np.array_equal(wrong.astype(np.int64) & ((1 << to.bits) - 1), want)


_UNSIGNED = {
    "dynamic_reshape": (lambda b, x, s: b.dynamic_reshape(x, s, T((200,), hlo.f32)), "output_shape",
                        "output shape \\[-56\\] is incompatible"),
    "dynamic_broadcast_in_dim": (lambda b, x, s: b.dynamic_broadcast_in_dim(
        b.reshape(x, (1,)), s, [0], T((200,), hlo.f32)), "output_dimensions", "-56"),
}


@pytest.mark.parametrize("op", sorted(_UNSIGNED))
def test_unsigned_constant_shapes_jaxlib_reads_as_negative_are_refused(op):
    make, what, theirs = _UNSIGNED[op]
    m = hlo.Module("m")
    f = m.add_function("main", [T((200,) if op == "dynamic_reshape" else (), hlo.f32)],
                       visibility="public")
    b = f.builder()
    shape = b.constant(np.array([200], np.uint8))
    with pytest.raises(OpBuildError, match=f"'{op}' operand {what} holds 200 as ui8, which "
                                           r"jaxlib reads as signed \(-56\)"):
        make(b, f.arguments[0], shape)
    # jaxlib's own reading of the same text (our parser's checks off, as verify.check reads)
    ok = hlo.Module("m")
    g = ok.add_function("main", [f.arguments[0].type], visibility="public")
    gb = g.builder()
    gb.return_(make(gb, g.arguments[0], gb.constant(np.array([200], np.int32))))
    text = ok.to_text().replace("dense<200> : tensor<1xi32>", "dense<200> : tensor<1xui8>") \
        .replace("tensor<1xi32>", "tensor<1xui8>")
    with pytest.raises(VerificationError, match=theirs):
        verify.check(text)


def test_a_scatter_of_no_updates_over_constants_is_refused_where_jaxlib_segfaults():
    def build(b, x):
        r = b.scatter(b.constant(np.arange(5, dtype=np.float32)),
                      b.constant(np.zeros((0, 1), np.int32)),
                      b.constant(np.zeros((0,), np.float32)),
                      dict(update_window_dims=(), inserted_window_dims=(0,),
                           scatter_dims_to_operand_dims=(0,), index_vector_dim=1), "add")
        return b.add(r, x)
    m = _module([T((5,), hlo.f32)], build)
    for source in (m, m.to_text()):
        with pytest.raises(VerificationError, match="a 'scatter' of no updates whose operand, "
                                                    "indices and updates are all constants"):
            verify.check(source)
    code = ("import mhlo_ir as hlo, verify, verify.api as api\n"
            "api._conversion_problem = lambda m: None\n"
            "verify.check(hlo.parse(open(0).read()))\nprint('checked')\n")
    r = subprocess.run([sys.executable, "-c", code], input=m.to_text(), capture_output=True,
                       text=True, timeout=300, env=child_env())
    _still_fails(r, "checked")
    assert r.returncode < 0, (r.returncode, r.stderr[-300:])
    # the operand from an argument: it runs, to the operand
    m = _module([T((5,), hlo.f32)], lambda b, x: b.scatter(
        x, b.constant(np.zeros((0, 1), np.int32)), b.constant(np.zeros((0,), np.float32)),
        dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
             index_vector_dim=1), "add"))
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(verify.run(m, x)[0], x)


@pytest.mark.parametrize("feed", ["infeed", "outfeed"])
def test_running_a_program_with_a_feed_is_refused_rather_than_waiting_forever(feed):
    def build(b, x):
        t = b.create_token()
        if feed == "outfeed":
            b.outfeed([x], t)
            return x
        return b.add(x, b.infeed(t, [T((2,), hlo.f32)])[0])
    m = _module([T((2,), hlo.f32)], build)
    exe = verify.compile(m)  # (compiling is fine)
    with pytest.raises(RuntimeError, match=f"the program has an {feed}, whose queue jaxlib's "
                                           "Python API cannot fill or drain"):
        exe(np.zeros(2, np.float32))
