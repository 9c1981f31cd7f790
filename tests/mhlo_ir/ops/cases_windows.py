"""Cases for region ops over reductions, windows, elements and scans: reduce, reduce_window,
select_and_scatter, map, scan. Integer cases are exact; float sums state tolerances."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from tests.mhlo_ir.ops.cases import RNG, case, module, rand

T = hlo.tensor


def _ty(x):
    return T(x.shape, hlo.from_numpy(x.dtype))


def _module(args, body):
    return module([_ty(a) for a in args], body), list(args)


def _scalar(b, value, dtype):
    return b.constant(np.asarray(value, dtype=dtype))


# -- reduce ----------------------------------------------------------------------------------

@case("reduce", "i32_sum_two_dims", reference=lambda x: [x.sum((0, 2), dtype=np.int32)])
def _():
    return _module([rand((2, 3, 4), np.int32)], lambda b, x: b.reduce(
        x, _scalar(b, 0, np.int32), [0, 2], lambda r, a, e: r.add(a, e)))


@case("reduce", "f32_max_and_sum", reference=lambda x: [
    x.max(1), x.astype(np.float64).sum(0).astype(np.float32)], rtol=1e-6, atol=1e-6)
def _():
    def body(b, x):
        mx = b.reduce(x, _scalar(b, -np.inf, np.float32), [1], lambda r, a, e: r.maximum(a, e))
        s = b.reduce(x, _scalar(b, 0, np.float32), [0], lambda r, a, e: r.add(a, e))
        return [mx, s]
    return _module([rand((3, 5), np.float32)], body)


@case("reduce", "argmax_two_inputs", reference=lambda x: [x.max(1), x.argmax(1).astype(np.int32)])
def _():
    # A variadic reduce: (value, index) pairs, keeping the first index of the maximum.
    x = np.stack([RNG.permutation(6) for _ in range(4)]).astype(np.float32)

    def body(b, x):
        idx = b.iota((4, 6), hlo.i32, 1)

        def pick(r, av, ai, ev, ei):
            gt = r.compare(ev, av, "GT")
            eq = r.compare(ev, av, "EQ")
            lt_i = r.compare(ei, ai, "LT")
            take = r.or_(gt, r.and_(eq, lt_i))
            return [r.select(take, ev, av), r.select(take, ei, ai)]
        return list(b.reduce([x, idx], [_scalar(b, -np.inf, np.float32),
                                         _scalar(b, 0, np.int32)], [1], pick))
    return _module([x], body)


@case("reduce", "bool_all", reference=lambda x: [x.all(0)])
def _():
    return _module([rand((3, 4), np.bool_)], lambda b, x: b.reduce(
        x, _scalar(b, True, np.bool_), [0], lambda r, a, e: r.and_(a, e)))


# -- reduce_window ---------------------------------------------------------------------------

def reduce_window_reference(x, init, fn, window, strides=None, base=None, wdil=None,
                            padding=None):
    """StableHLO's reduce_window for one input: pad (and base-dilate) with ``init``, then fold
    ``fn`` over each (dilated) window in row-major order."""
    r = x.ndim
    strides = strides or (1,) * r
    base = base or (1,) * r
    wdil = wdil or (1,) * r
    padding = padding or ((0, 0),) * r
    shape = [(n - 1) * d + 1 for n, d in zip(x.shape, base)]
    y = np.full(shape, init, x.dtype)
    y[tuple(slice(None, None, d) for d in base)] = x
    y = np.pad(y, padding, constant_values=init)
    out_shape = [max(0, (n - ((w - 1) * d + 1)) // s + 1)
                 for n, w, d, s in zip(y.shape, window, wdil, strides)]
    out = np.empty(out_shape, x.dtype)
    for pos in np.ndindex(*out_shape):
        acc = init
        for off in np.ndindex(*window):
            acc = fn(acc, y[tuple(p * s + o * d for p, s, o, d in zip(pos, strides, off, wdil))])
        out[pos] = acc
    return out


@case("reduce_window", "f32_max_pool", reference=lambda x: [reduce_window_reference(
    x, np.float32(-np.inf), max, (1, 2, 2, 1), (1, 2, 2, 1))])
def _():
    return _module([rand((1, 4, 5, 2), np.float32)], lambda b, x: b.reduce_window(
        x, _scalar(b, -np.inf, np.float32), (1, 2, 2, 1), lambda r, a, e: r.maximum(a, e),
        window_strides=(1, 2, 2, 1)))


@case("reduce_window", "i32_sum_dilations_padding", reference=lambda x: [
    reduce_window_reference(x, np.int32(0), lambda a, e: a + e, (2, 3), (2, 1), (2, 1), (1, 2),
                            ((1, 0), (2, 2)))])
def _():
    return _module([rand((3, 4), np.int32)], lambda b, x: b.reduce_window(
        x, _scalar(b, 0, np.int32), (2, 3), lambda r, a, e: r.add(a, e),
        window_strides=(2, 1), base_dilations=(2, 1), window_dilations=(1, 2),
        padding=[(1, 0), (2, 2)]))


@case("reduce_window", "f64_sum_and_i32_count_two_inputs", reference=lambda x: [
    reduce_window_reference(x, 0.0, lambda a, e: a + e, (2, 2)),
    reduce_window_reference((x > 0).astype(np.int32), np.int32(0), lambda a, e: a + e, (2, 2))],
    rtol=1e-12, atol=1e-12)
def _():
    def body(b, x):
        pos = b.convert(b.compare(x, b.constant(np.zeros((3, 3))), "GT"), hlo.i32)
        return list(b.reduce_window(
            [x, pos], [_scalar(b, 0.0, np.float64), _scalar(b, 0, np.int32)], (2, 2),
            lambda r, a, c, e, d: [r.add(a, e), r.add(c, d)]))
    return _module([rand((3, 3), np.float64)], body)


# -- select_and_scatter ----------------------------------------------------------------------

def select_and_scatter_reference(x, src, init, window, strides, padding=None, pad_value=None):
    """Scatter (add) each source value into the first maximum of its window."""
    padding = padding or ((0, 0),) * x.ndim
    y = np.pad(x, padding, constant_values=pad_value) if pad_value is not None else x
    out = np.full(y.shape, init, src.dtype)
    for pos in np.ndindex(*src.shape):
        best = None
        for off in np.ndindex(*window):
            p = tuple(q * s + o for q, s, o in zip(pos, strides, off))
            if best is None or y[p] > y[best]:
                best = p
        out[best] += src[pos]
    return out[tuple(slice(lo, n - hi) for (lo, hi), n in zip(padding, y.shape))]


@case("select_and_scatter", "f32_maxpool_grad_overlapping", reference=lambda x, s: [
    select_and_scatter_reference(x, s, np.float32(0), (2, 3), (1, 2))], rtol=1e-6, atol=1e-6)
def _():
    x = RNG.permutation(20).reshape(4, 5).astype(np.float32)   # a unique maximum per window
    return _module([x, rand((3, 2), np.float32)], lambda b, x, s: b.select_and_scatter(
        x, s, _scalar(b, 0, np.float32), lambda r, a, c: r.compare(a, c, "GE"),
        lambda r, a, c: r.add(a, c), window_dimensions=(2, 3), window_strides=(1, 2)))


@case("select_and_scatter", "i32_padded", reference=lambda x, s: [
    select_and_scatter_reference(x, s, np.int32(0), (2, 2), (2, 2), ((1, 0), (0, 1)),
                                 np.iinfo(np.int32).min)])
def _():
    x = (RNG.permutation(12).reshape(3, 4) + 1).astype(np.int32)
    return _module([x, rand((2, 2), np.int32)], lambda b, x, s: b.select_and_scatter(
        x, s, _scalar(b, 0, np.int32), lambda r, a, c: r.compare(a, c, "GE"),
        lambda r, a, c: r.add(a, c), window_dimensions=(2, 2), window_strides=(2, 2),
        padding=[(1, 0), (0, 1)]))


# -- map -------------------------------------------------------------------------------------

# XLA:CPU may fuse the multiply-add into one rounding: 1 ulp of tolerance.
@case("map", "f32_fma", reference=lambda x, y: [x * y + np.float32(1)], rtol=1e-6, atol=1e-6)
def _():
    return _module([rand((2, 3), np.float32), rand((2, 3), np.float32)], lambda b, x, y: b.map(
        [x, y], lambda r, a, c: r.add(r.multiply(a, c), _scalar(r, 1, np.float32))))


@case("map", "i32_to_bool", reference=lambda x: [x > 0])
def _():
    return _module([rand((4,), np.int32)], lambda b, x: b.map(
        x, lambda r, a: r.compare(a, _scalar(r, 0, np.int32), "GT")))


@case("map", "c64_conj_mul", reference=lambda x: [x * np.conj(x)], rtol=1e-6, atol=1e-6)
def _():
    def body(r, a):
        conj = r.complex(r.real(a), r.negate(r.imag(a)))
        return r.multiply(a, conj)
    return _module([rand((2, 2), np.complex64)], lambda b, x: b.map(x, body))


# -- scan ------------------------------------------------------------------------------------

def _scan_ref(x, c0):
    # output_i = carry before step i; carry' = x_i + 2 * carry.
    outs, c = [], c0
    for v in x:
        outs.append(c)
        c = v + 2 * c
    return [np.array(outs, x.dtype), np.asarray(c, x.dtype)]


@case("scan", "i32_exclusive_recurrence", reference=_scan_ref)
def _():
    def body(b, x, c):
        out, carry = b.scan(x, c, 0, lambda r, v, k: [
            k, r.add(v, r.multiply(k, _scalar(r, 2, np.int32)))])  # outputs, then carries
        return [out, carry]
    return _module([rand((5,), np.int32), np.int32(3)], body)


@case("scan", "f32_cumsum_dim1_reverse", reference=lambda x: [
    np.flip(np.cumsum(np.flip(x.astype(np.float64), 1), 1), 1).astype(np.float32),
    x.astype(np.float64).sum(1).astype(np.float32)], rtol=1e-6, atol=1e-6)
def _():
    def body(b, x):
        def step(r, v, k):
            s = r.add(v, k)
            return [s, s]
        out, carry = b.scan(x, b.constant(np.zeros(2, np.float32)), 1, step,
                            is_reverse=True)
        return [out, carry]
    return _module([rand((2, 4), np.float32)], body)


def _nested_scan_ref(x, y, c, d):
    # Per step: outputs (k, l); the inner scan adds u three times to k, so k' = k + 4u.
    outs0, outs1, k = [], [], c
    for u in x:
        outs0.append(k)
        outs1.append(d)
        k = np.int32(k + 4 * u)
    return [np.array(outs0, np.int32), np.array(outs1, np.float32), np.asarray(k, np.int32),
            np.asarray(d, np.float32)]


@case("scan", "nested_two_inputs_two_carries", reference=_nested_scan_ref)
def _():
    # Two operand groups of two, and a scan inside the body: MLIR names the arguments
    # %input, %input_0, %carry, %carry_1 and, inside, %input_2, %carry_3 (its custom form).
    def body(b, x, y, c, d):
        def step(r, u, v, k, h):
            _, inner = r.scan([r.broadcast_in_dim(u, (3,), ())], [k], 0,
                              lambda q, a, kk: [a, q.add(a, kk)], is_associative=True)
            return [k, h, r.add(u, inner), h]
        return list(b.scan([x, y], [c, d], 0, step))
    return _module([rand((5,), np.int32) % 100, rand((5,), np.float32), np.int32(7),
                    np.float32(0.5)], body)
