"""Non-elementwise ops run through jaxlib against numpy references.

Data movement and integer results are compared exactly; float matmuls use small integer values,
so their results are exact too.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify

T = hlo.tensor


def build(arg_types, body, name="ops"):
    """A module whose public @main takes ``arg_types`` and returns what ``body(b, *args)``
    returns (a value or a sequence of values)."""
    m = hlo.Module(name)
    f = m.add_function("main", list(arg_types), visibility="public")
    b = f.builder()
    out = body(b, *f.arguments)
    b.return_(*((out,) if isinstance(out, hlo.Value) else out))
    return m


def run(arg_types, body, *args):
    return verify.run(build(arg_types, body), *args)


def assert_same(got, want):
    """Exact equality, dtype and shape included."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


RNG = np.random.default_rng(0)


def ints(shape, dtype=np.int32, lo=-50, hi=50):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


# -- data movement -----------------------------------------------------------------------------

def test_broadcast_in_dim():
    x, v, y = ints((2, 3)), ints((3,), np.int8), ints((1, 3), np.float32)
    outs = run([T((2, 3), hlo.i32), T((3,), hlo.i8), T((1, 3), hlo.f32)],
               lambda b, x, v, y: [b.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
                                   b.broadcast_in_dim(v, (3, 4), (0,)),
                                   b.broadcast_in_dim(v, (2, 3), (1,)),
                                   b.broadcast_in_dim(y, (5, 3), (0, 1)),
                                   b.broadcast_in_dim(b.constant(np.int32(7)), (2, 2), ())],
               x, v, y)
    assert_same(outs[0], np.broadcast_to(x, (4, 2, 3)))
    assert_same(outs[1], np.broadcast_to(v[:, None], (3, 4)))
    assert_same(outs[2], np.broadcast_to(v, (2, 3)))
    assert_same(outs[3], np.broadcast_to(y, (5, 3)))
    assert_same(outs[4], np.full((2, 2), 7, np.int32))


def test_broadcast_in_dim_permuted_dimensions():
    """broadcast_dimensions need not be increasing: operand dim i goes to result dim dims[i]."""
    x = ints((2, 3))
    (out,) = run([T((2, 3), hlo.i32)], lambda b, x: b.broadcast_in_dim(x, (3, 4, 2), (2, 0)), x)
    assert_same(out, np.broadcast_to(x.T[:, None, :], (3, 4, 2)))


def test_reshape():
    x = ints((2, 3, 4), np.float32)
    outs = run([T((2, 3, 4), hlo.f32)],
               lambda b, x: [b.reshape(x, (6, 4)), b.reshape(x, (24,)), b.reshape(x, (4, 1, 6)),
                             b.reshape(b.reshape(x, (24,)), (2, 3, 4))], x)
    assert_same(outs[0], x.reshape(6, 4))
    assert_same(outs[1], x.reshape(24))
    assert_same(outs[2], x.reshape(4, 1, 6))
    assert_same(outs[3], x)


def test_transpose():
    x = ints((2, 3, 4), np.int64)
    perms = [(2, 0, 1), (1, 0, 2), (0, 1, 2), (2, 1, 0)]
    outs = run([T((2, 3, 4), hlo.i64)], lambda b, x: [b.transpose(x, p) for p in perms], x)
    for p, out in zip(perms, outs):
        assert_same(out, np.transpose(x, p))


@pytest.mark.parametrize("et", [hlo.i32, hlo.ui8, hlo.i64, hlo.f32, hlo.bf16, hlo.f16,
                                hlo.f64, hlo.complex64], ids=lambda e: e.name)
def test_iota(et):
    outs = run([], lambda b: [b.iota((5,), et), b.iota((2, 3), et, 1), b.iota((2, 3), et, 0)])
    assert_same(outs[0], np.arange(5).astype(et.dtype))
    assert_same(outs[1], np.broadcast_to(np.arange(3), (2, 3)).astype(et.dtype))
    assert_same(outs[2], np.broadcast_to(np.arange(2)[:, None], (2, 3)).astype(et.dtype))


def test_slice_with_strides():
    x = ints((5, 7), np.uint16, 0, 1000)
    cases = [((1, 0), (5, 7), (2, 3)), ((0, 0), (5, 7), (1, 1)), ((4, 6), (5, 7), (1, 1)),
             ((0, 2), (5, 6), (4, 2)), ((2, 3), (2, 3), (1, 1))]
    outs = run([T((5, 7), hlo.ui16)],
               lambda b, x: [b.slice(x, s, lim, st) for s, lim, st in cases], x)
    for (s, lim, st), out in zip(cases, outs):
        assert_same(out, x[s[0]:lim[0]:st[0], s[1]:lim[1]:st[1]])
    assert outs[-1].shape == (0, 0)


def test_slice_default_strides():
    x = ints((6,))
    (out,) = run([T((6,), hlo.i32)], lambda b, x: b.slice(x, (1,), (4,)), x)
    assert_same(out, x[1:4])


def test_concatenate():
    a, b_, c = ints((2, 1)), ints((2, 3)), ints((2, 2))
    outs = run([T((2, 1), hlo.i32), T((2, 3), hlo.i32), T((2, 2), hlo.i32)],
               lambda b, a, x, c: [b.concatenate([a, x, c], 1), b.concatenate([x, x], 0),
                                   b.concatenate([c], 1)], a, b_, c)
    assert_same(outs[0], np.concatenate([a, b_, c], 1))
    assert_same(outs[1], np.concatenate([b_, b_], 0))
    assert_same(outs[2], c)


# -- dot_general -------------------------------------------------------------------------------

def test_dot_general_matmul_and_batch():
    a, c = ints((2, 3), np.float32, -5, 5), ints((3, 4), np.float32, -5, 5)
    ba, bc = ints((5, 2, 3), np.float32, -5, 5), ints((5, 3, 4), np.float32, -5, 5)
    ta, tc = ints((3, 2), np.float32, -5, 5), ints((4, 3), np.float32, -5, 5)
    outs = run([T((2, 3), hlo.f32), T((3, 4), hlo.f32), T((5, 2, 3), hlo.f32),
                T((5, 3, 4), hlo.f32), T((3, 2), hlo.f32), T((4, 3), hlo.f32)],
               lambda b, a, c, ba, bc, ta, tc: [
                   b.dot_general(a, c, ((1,), (0,))),
                   b.dot_general(ba, bc, ((2,), (1,)), ((0,), (0,))),
                   b.dot_general(ta, tc, ((0,), (1,))),
                   b.dot_general(a, c, ((1,), (0,)), precision_config=["HIGHEST", "HIGHEST"]),
                   b.dot_general(a, a, ((0, 1), (0, 1))),
                   b.dot_general(a, c),  # no contraction: outer product
               ], a, c, ba, bc, ta, tc)
    assert_same(outs[0], a @ c)
    assert_same(outs[1], ba @ bc)
    assert_same(outs[2], ta.T @ tc.T)
    assert_same(outs[3], a @ c)
    assert_same(outs[4], np.float32((a * a).sum()))
    assert_same(outs[5], np.einsum("ij,kl->ijkl", a, c))


def test_dot_general_batch_dims_not_leading():
    """Batch dimensions come first in the result, whatever their position in the operands."""
    x, y = ints((2, 4, 3), np.int32, -9, 9), ints((3, 4, 5), np.int32, -9, 9)
    (out,) = run([T((2, 4, 3), hlo.i32), T((3, 4, 5), hlo.i32)],
                 lambda b, x, y: b.dot_general(x, y, ((2,), (0,)), ((1,), (1,))), x, y)
    assert_same(out, np.einsum("abc,cbd->bad", x, y))


def test_dot_general_result_element_type():
    """i8 x i8 accumulated in i32 (products overflow i8), bf16 x bf16 into f32."""
    x = ints((2, 3), np.int8, 100, 127)
    y = ints((3, 2), np.int8, -128, -100)
    bx = ints((2, 3), np.float32, -50, 50).astype(ml_dtypes.bfloat16)
    by = ints((3, 2), np.float32, -50, 50).astype(ml_dtypes.bfloat16)
    outs = run([T((2, 3), hlo.i8), T((3, 2), hlo.i8), T((2, 3), hlo.bf16), T((3, 2), hlo.bf16)],
               lambda b, x, y, bx, by: [
                   b.dot_general(x, y, ((1,), (0,)), result_element_type=hlo.i32),
                   b.dot_general(bx, by, ((1,), (0,)), result_element_type=hlo.f32)],
               x, y, bx, by)
    assert_same(outs[0], x.astype(np.int32) @ y.astype(np.int32))
    assert_same(outs[1], bx.astype(np.float32) @ by.astype(np.float32))


# -- reduce ------------------------------------------------------------------------------------

def test_reduce_sum_and_max():
    x = ints((3, 4, 5))
    f = RNG.permutation(60).reshape(3, 4, 5).astype(np.float32) - 30
    outs = run([T((3, 4, 5), hlo.i32), T((3, 4, 5), hlo.f32)], lambda b, x, f: [
        b.reduce(x, b.constant(np.int32(0)), [1], lambda bb, a, e: bb.add(a, e)),
        b.reduce(x, b.constant(np.int32(0)), [0, 2], lambda bb, a, e: bb.add(a, e)),
        b.reduce(x, b.constant(np.int32(10)), [0, 1, 2], lambda bb, a, e: bb.add(a, e)),
        b.reduce(f, b.constant(np.float32(-np.inf)), [2], lambda bb, a, e: bb.maximum(a, e)),
        b.reduce(f, b.constant(np.float32(np.inf)), [0], lambda bb, a, e: bb.minimum(a, e)),
        b.reduce(x, b.constant(np.int32(1)), [], lambda bb, a, e: bb.multiply(a, e)),
    ], x, f)
    assert_same(outs[0], x.sum(1, dtype=np.int32))
    assert_same(outs[1], x.sum((0, 2), dtype=np.int32))
    assert_same(outs[2], np.int32(x.sum() + 10))
    assert_same(outs[3], f.max(2))
    assert_same(outs[4], f.min(0))
    assert_same(outs[5], x)  # no dimensions: x * 1 elementwise


def test_reduce_several_inputs_argmax():
    """Two inputs reduced together: (max value, its index), distinct values so no ties."""
    v = (RNG.permutation(24).reshape(4, 6) - 12).astype(np.float32)
    idx = np.broadcast_to(np.arange(6, dtype=np.int32), (4, 6)).copy()

    def argmax(bb, av, ai, ev, ei):
        gt = bb.compare(ev, av, "GT")
        return bb.select(gt, ev, av), bb.select(gt, ei, ai)

    vals, where = run([T((4, 6), hlo.f32), T((4, 6), hlo.i32)],
                      lambda b, v, i: b.reduce([v, i], [b.constant(np.float32(-np.inf)),
                                                        b.constant(np.int32(-1))], [1], argmax),
                      v, idx)
    assert_same(vals, v.max(1))
    assert_same(where, v.argmax(1).astype(np.int32))


# -- control flow ------------------------------------------------------------------------------

def test_while_counting_loop():
    def body(b, n):
        def cond(bb, i, acc, hist):
            return bb.compare(i, n, "LT")

        def step(bb, i, acc, hist):
            one = bb.constant(np.int32(1))
            i1 = bb.add(i, one)
            return i1, bb.add(bb.multiply(acc, bb.constant(np.int32(3))), i1), \
                bb.add(hist, bb.broadcast_in_dim(i1, (3,), ()))

        return b.while_([b.constant(np.int32(0)), b.constant(np.int32(0)),
                         b.constant(np.zeros(3, np.int32))], cond, step)

    exe = verify.compile(build([T((), hlo.i32)], body))
    for n in (0, 1, 5, 11, 25, -3):
        i = acc = 0
        hist = 0
        while i < n:
            i += 1
            acc = (acc * 3 + i) & 0xFFFFFFFF
            hist += i
        acc = acc - (1 << 32) if acc >= 1 << 31 else acc
        got_i, got_acc, got_hist = exe(np.int32(n))
        assert_same(got_i, np.int32(max(n, 0)))
        assert_same(got_acc, np.int32(acc))  # wraps for n = 25
        assert_same(got_hist, np.full(3, hist, np.int32))


def test_if_both_branches():
    x = ints((3,), np.float32)
    exe = verify.compile(build(
        [T((), hlo.i1), T((3,), hlo.f32)],
        lambda b, p, x: b.if_(p, lambda bb: (bb.negate(x), bb.constant(np.int32(1))),
                              lambda bb: (bb.add(x, x), bb.constant(np.int32(2))))))
    r, k = exe(np.bool_(True), x)
    assert_same(r, -x)
    assert_same(k, np.int32(1))
    r, k = exe(np.bool_(False), x)
    assert_same(r, x + x)
    assert_same(k, np.int32(2))


def test_case_out_of_range_index_runs_last_branch():
    x = ints((2,), np.int32)
    exe = verify.compile(build(
        [T((), hlo.i32), T((2,), hlo.i32)],
        lambda b, k, x: b.case(k, [lambda bb: bb.add(x, bb.constant(np.full(2, 10, np.int32))),
                                   lambda bb: bb.negate(x),
                                   lambda bb: bb.multiply(x, x)])))
    want = {0: x + 10, 1: -x, 2: x * x}
    for k in (0, 1, 2, 3, 100, -1, np.iinfo(np.int32).min):
        (got,) = exe(np.int32(k), x)
        assert_same(got, want.get(k, x * x))


def test_case_single_branch():
    (got,) = run([T((), hlo.i32)], lambda b, k: b.case(k, [lambda bb: bb.constant(
        np.float32(2.5))]), np.int32(4))
    assert_same(got, np.float32(2.5))


# -- tuples, tokens, calls ---------------------------------------------------------------------

def test_tuple_and_get_tuple_element_inside_a_function():
    x, n = ints((3,), np.float32), np.int32(7)

    def body(b, x, n):
        t = b.tuple([x, n])
        nested = b.tuple([t, b.negate(x)])
        return (b.get_tuple_element(t, 1), b.get_tuple_element(t, 0),
                b.get_tuple_element(b.get_tuple_element(nested, 0), 0),
                b.get_tuple_element(nested, 1))

    outs = run([T((3,), hlo.f32), T((), hlo.i32)], body, x, n)
    assert_same(outs[0], n)
    assert_same(outs[1], x)
    assert_same(outs[2], x)
    assert_same(outs[3], -x)


def test_tuple_result_of_main_fails_to_compile():
    """jaxlib fact: a tuple-typed result of @main parses and verifies but does not compile."""
    m = build([T((2,), hlo.f32)], lambda b, x: b.tuple([x, x]))
    verify.check(m)
    with pytest.raises(verify.CompileError):
        verify.compile(m)


def test_tokens_create_token_and_after_all():
    x = ints((2,), np.int32)

    def body(b, x):
        t1 = b.create_token()
        t2 = b.create_token()
        joined = b.after_all(t1, t2)
        b.after_all(joined)
        return b.add(x, x)

    (out,) = run([T((2,), hlo.i32)], body, x)
    assert_same(out, x + x)


def test_call_private_function():
    m = hlo.Module("calls")
    helper = m.add_function("helper", [T((3,), hlo.i32), T((), hlo.i32)], visibility="private")
    hb = helper.builder()
    v, s = helper.arguments
    hb.return_(hb.multiply(v, hb.broadcast_in_dim(s, (3,), ())), hb.add(s, s))
    main = m.add_function("main", [T((3,), hlo.i32), T((), hlo.i32)], visibility="public")
    b = main.builder()
    x, k = main.arguments
    p, q = b.call(helper, [x, k])
    r, _ = b.call("helper", [p, q], [T((3,), hlo.i32), T((), hlo.i32)])
    b.return_(p, q, r)
    x_, k_ = ints((3,)), np.int32(3)
    p_, q_, r_ = verify.run(m, x_, k_)
    assert_same(p_, x_ * 3)
    assert_same(q_, np.int32(6))
    assert_same(r_, x_ * 3 * 6)


def test_custom_call_unknown_target_is_compile_only():
    """Unknown targets verify (only XLA compilation can know the registered targets)."""
    def body(b, x):
        y = b.custom_call("mhlo_ir_test_no_such_target", [x], T((2,), hlo.f32),
                             backend_config="cfg", has_side_effect=True)
        z = b.custom_call("mhlo_ir_test_typed_ffi", [y], T((2,), hlo.f32),
                             backend_config={"k": 1}, api_version=4)
        return z

    m = build([T((2,), hlo.f32)], body)
    verify.check(m)
    with pytest.raises(verify.CompileError):
        verify.compile(m)
