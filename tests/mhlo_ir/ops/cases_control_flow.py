"""Cases for while, if, case, return, func.return and func.call."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from tests.mhlo_ir.ops.cases import case, module, rand

f32, i32, i1 = hlo.f32, hlo.i32, hlo.i1
S32 = hlo.tensor((), i32)


def _scalar(v, dtype):
    return np.asarray(v, dtype=dtype)


# -- while ------------------------------------------------------------------------------------

def _while_ref(n, x):
    acc = np.zeros_like(x)
    for i in range(int(n)):
        acc = (acc + x * np.float32(i)).astype(np.float32)
    return [_scalar(max(int(n), 0), np.int32), acc]


@case("while", "counter_and_float_accumulator", reference=_while_ref)
def _():
    def body(b, n, x):
        zero = b.constant(np.int32(0))
        acc0 = b.constant(np.zeros((2, 3), np.float32))

        def cond(bb, i, acc, x_):
            return bb.compare(i, n, "LT")

        def step(bb, i, acc, x_):
            fi = bb.broadcast_in_dim(bb.convert(i, f32), (2, 3), ())
            return bb.add(i, bb.constant(np.int32(1))), bb.add(acc, bb.multiply(x_, fi)), x_
        i, acc, _ = b.while_([zero, acc0, x], cond, step)
        return i, acc
    return module([S32, hlo.tensor((2, 3), f32)], body), \
        [_scalar(5, np.int32), rand((2, 3), np.float32)]


def _collatz_ref(n):
    steps = 0
    n = int(n)
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return [_scalar(steps, np.int64)]


@case("while", "i64_collatz_steps", reference=_collatz_ref)
def _():
    one, two, three = (np.int64(1), np.int64(2), np.int64(3))

    def body(b, n):
        def cond(bb, v, steps):
            return bb.compare(v, bb.constant(one), "NE")

        def step(bb, v, steps):
            even = bb.compare(bb.remainder(v, bb.constant(two)), bb.constant(np.int64(0)), "EQ")
            nxt = bb.select(even, bb.divide(v, bb.constant(two)),
                            bb.add(bb.multiply(v, bb.constant(three)), bb.constant(one)))
            return nxt, bb.add(steps, bb.constant(one))
        return b.while_([n, b.constant(np.int64(0))], cond, step)[1]
    return module([hlo.tensor((), hlo.i64)], body), [_scalar(27, np.int64)]


@case("while", "bool_and_complex_state_zero_trips", reference=lambda p, z: [p, z])
def _():
    def body(b, p, z):
        return b.while_([p, z], lambda bb, p_, z_: bb.constant(np.bool_(False)),
                        lambda bb, p_, z_: (bb.not_(p_), bb.add(z_, z_)))
    return module([hlo.tensor((3,), i1), hlo.tensor((2,), hlo.complex64)], body), \
        [rand((3,), bool), rand((2,), np.complex64)]


# -- if ---------------------------------------------------------------------------------------

def _if_module(et, shape):
    t = hlo.tensor(shape, et)

    def body(b, pred, x, y):
        return b.if_(pred, lambda bb: [x, y], lambda bb: [y, x])
    return module([hlo.tensor((), i1), t, t], body)


for _name, _et, _dt in (("float", f32, np.float32), ("int", hlo.ui16, np.uint16),
                        ("bool", i1, bool), ("complex", hlo.complex128, np.complex128)):
    for _p in (True, False):
        def _build(et=_et, dt=_dt, p=_p):
            return _if_module(et, (2,)), [np.bool_(p), rand((2,), dt), rand((2,), dt)]
        case("if", f"{_name}_{'true' if _p else 'false'}",
             reference=lambda p, x, y: [x, y] if p else [y, x])(_build)


@case("if", "computes_in_branches_no_results", reference=lambda p, x: [np.abs(x)])
def _():
    def body(b, p, x):
        r = b.if_(p, lambda bb: bb.negate(x), lambda bb: x)
        b.if_(p, lambda bb: [], lambda bb: [])  # no results
        return r
    # p: x < 0 at element 0 decides the branch; the reference is |x| for this input.
    x = np.float32([-2.5, -1.0])
    return module([hlo.tensor((), i1), hlo.tensor((2,), f32)], body), [np.bool_(True), x]


# -- case -------------------------------------------------------------------------------------

def _case_ref(i, x):
    i = int(i)
    if i == 0:
        return [x + x]
    if i == 1:
        return [x * x]
    return [x - x]  # the last branch also runs for out-of-range indices


for _idx in (0, 1, 2, 7, -1):
    def _build(idx=_idx):
        def body(b, i, x):
            return b.case(i, [lambda bb: bb.add(x, x), lambda bb: bb.multiply(x, x),
                              lambda bb: bb.subtract(x, x)])
        return module([S32, hlo.tensor((3,), i32)], body), \
            [_scalar(idx, np.int32), rand((3,), np.int32)]
    case("case", f"i32_index_{_idx}".replace("-", "minus"), reference=_case_ref)(_build)


@case("case", "float_single_branch", reference=lambda i, x: [np.float32(2) * x])
def _():
    return module([S32, hlo.tensor((2,), f32)], lambda b, i, x: b.case(
        i, [lambda bb: bb.add(x, x)])), [_scalar(3, np.int32), rand((2,), np.float32)]


# -- return, func.return, func.call -----------------------------------------------------------

@case("return", "region_returns_several", reference=lambda x: [x.sum(), x.max()])
def _():
    def body(b, x):
        z = b.constant(np.float32(0))
        lo = b.constant(np.float32(-np.inf))
        return b.reduce([x, x], [z, lo], [0], lambda bb, a, m, e, f: (bb.add(a, e),
                                                                        bb.maximum(m, f)))
    return module([hlo.tensor((5,), f32)], body), [np.float32([1, 2, 3, 4, 5.5])]


@case("func.return", "several_dtypes", reference=lambda x, y, z: [z, x, y])
def _():
    return module([hlo.tensor((2,), hlo.bf16), hlo.tensor((), hlo.i8), hlo.tensor((1,), i1)],
                  lambda b, x, y, z: (z, x, y)), \
        [rand((2,), hlo.bf16.dtype), rand((), np.int8), rand((1,), bool)]


def _call_module():
    m = hlo.Module("case")
    t = hlo.tensor((3,), f32)
    sq = m.add_function("square_and_sum", [t], visibility="private")
    sb = sq.builder()
    x = sq.arguments[0]
    sb.return_(sb.multiply(x, x), sb.reduce(x, sb.constant(np.float32(0)), [0],
                                            lambda bb, a, e: bb.add(a, e)))
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    y, s = b.call(sq, [f.arguments[0]])
    y2, _ = b.call("square_and_sum", [y], [t, hlo.tensor((), f32)])
    b.return_(y2, s)
    return m


@case("func.call", "by_function_and_by_name",
      reference=lambda x: [(x * x) * (x * x), x.sum(dtype=np.float32)], rtol=1e-6)
def _():
    return _call_module(), [rand((3,), np.float32)]
