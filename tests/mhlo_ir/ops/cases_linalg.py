"""Cases for the linalg chapter: dot_general, dot, einsum, convolution, dynamic_conv,
triangular_solve, cholesky, fft, batch norm, topk, ragged_dot, trace.

References are numpy (float64 where it matters); tolerances are stated per case: exact for
integer products, ~1e-5 relative for f32 sums of a few terms, looser for FFTs and solves."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.ops.linalg import RaggedDotDimensionNumbers
from tests.mhlo_ir.ops.cases import RNG, case, module, rand

T = hlo.tensor
NHWC = hlo.ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))   # [b,0,1,f]x[0,1,i,o]
NCHW = hlo.ConvDimensionNumbers(0, 1, (2, 3), 1, 0, (2, 3), 0, 1, (2, 3))   # [b,f,0,1]x[o,i,0,1]


def _ty(x):
    return T(x.shape, hlo.from_numpy(x.dtype))


def _module(args, body):
    return module([_ty(a) for a in args], body), list(args)


# -- dot_general -----------------------------------------------------------------------------

@case("dot_general", "i32_matmul", reference=lambda a, b: [a @ b])
def _():
    return _module([rand((2, 3), np.int32), rand((3, 4), np.int32)],
                   lambda b, x, y: b.dot_general(x, y, ((1,), (0,))))


@case("dot_general", "f32_batched_precision", reference=lambda a, b: [
    np.einsum("bij,bkj->bik", a.astype(np.float64), b).astype(np.float32)], rtol=1e-5, atol=1e-5)
def _():
    return _module([rand((2, 3, 4), np.float32), rand((2, 5, 4), np.float32)],
                   lambda b, x, y: b.dot_general(x, y, ((2,), (2,)), ((0,), (0,)),
                                                 precision_config=["HIGHEST", "HIGHEST"]))


@case("dot_general", "bf16_algorithm", reference=lambda a, b: [
    np.einsum("ij,jk->ik", a.astype(np.float64), b).astype(np.float32)], rtol=1e-5, atol=1e-5)
def _():
    # (XLA:CPU ignores the algorithm: an f32 product; XLA:TPU computes it in bf16 passes)
    return _module([rand((2, 3), np.float32), rand((3, 4), np.float32)],
                   lambda b, x, y: b.dot_general(
                       x, y, ((1,), (0,)), precision_config=["DEFAULT", "DEFAULT"],
                       algorithm=hlo.DotAlgorithm("bf16", "bf16", "f32")))


@case("dot_general", "c64_outer_batch", reference=lambda a, b: [
    np.einsum("ib,jb->bij", a.astype(np.complex128), b).astype(np.complex64)],
    rtol=1e-5, atol=1e-5)
def _():
    # Batch dimension last in both operands, no contraction: batched outer products.
    return _module([rand((2, 3), np.complex64), rand((4, 3), np.complex64)],
                   lambda b, x, y: b.dot_general(x, y, ((), ()), ((1,), (1,))))


@case("dot_general", "i8_to_i32_result_type", reference=lambda a, b: [
    a.astype(np.int32) @ b.astype(np.int32)])
def _():
    # Products beyond i8's range: the i32 result type makes XLA accumulate in i32.
    a = RNG.integers(-100, 100, (2, 5)).astype(np.int8)
    c = RNG.integers(-100, 100, (5, 3)).astype(np.int8)
    return _module([a, c], lambda b, x, y: b.dot_general(x, y, ((1,), (0,)),
                                                         result_element_type=hlo.i32))


# -- dot -------------------------------------------------------------------------------------

@case("dot", "f32_matmul_precision", reference=lambda a, b, v: [
    (a.astype(np.float64) @ b).astype(np.float32), (a.astype(np.float64) @ v).astype(np.float32),
    np.float32(v.astype(np.float64) @ v)], rtol=1e-5, atol=1e-5)
def _():
    return _module([rand((2, 3), np.float32), rand((3, 4), np.float32), rand((3,), np.float32)],
                   lambda b, x, y, v: [b.dot(x, y, precision_config=["HIGH", "DEFAULT"]),
                                       b.dot(x, v), b.dot(v, v)])


@case("dot", "i32_vecmat", reference=lambda v, m: [v @ m])
def _():
    return _module([rand((3,), np.int32), rand((3, 4), np.int32)], lambda b, v, m: b.dot(v, m))


@case("dot", "c128_matmul", reference=lambda a, b: [a @ b], rtol=1e-12, atol=1e-12)
def _():
    return _module([rand((2, 2), np.complex128), rand((2, 3), np.complex128)],
                   lambda b, x, y: b.dot(x, y))


# -- einsum ----------------------------------------------------------------------------------

@case("einsum", "f32_batched", reference=lambda a, b: [
    np.einsum("bij,bjk->bki", a.astype(np.float64), b).astype(np.float32)], rtol=1e-5, atol=1e-5)
def _():
    return _module([rand((2, 3, 4), np.float32), rand((2, 4, 5), np.float32)],
                   lambda b, x, y: b.einsum(x, y, "bij,bjk->bki"))


@case("einsum", "i32_outer", reference=lambda a, b: [np.einsum("i,j->ij", a, b)])
def _():
    return _module([rand((3,), np.int32), rand((4,), np.int32)],
                   lambda b, x, y: b.einsum(x, y, "i,j->ij"))


# -- convolution -----------------------------------------------------------------------------

def conv_reference(lhs, rhs, dn, strides=None, padding=None, lhs_dilation=None,
                   rhs_dilation=None, window_reversal=None, feature_group_count=1,
                   batch_group_count=1, out_dtype=None):
    """Convolution as the StableHLO spec defines it, in float64/int64 numpy loops."""
    n = len(dn.input_spatial_dimensions)
    strides = strides or (1,) * n
    padding = padding or ((0, 0),) * n
    lhs_dilation = lhs_dilation or (1,) * n
    rhs_dilation = rhs_dilation or (1,) * n
    window_reversal = window_reversal or (False,) * n
    acc = np.complex128 if lhs.dtype.kind == "c" else (
        np.int64 if lhs.dtype.kind in "iu" else np.float64)
    # Canonical layouts: lhs [b, f, s...], rhs [o, i, s...].
    x = np.transpose(lhs, (dn.input_batch_dimension, dn.input_feature_dimension,
                           *dn.input_spatial_dimensions)).astype(acc)
    k = np.transpose(rhs, (dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension,
                           *dn.kernel_spatial_dimensions)).astype(acc)
    for i in range(n):   # lhs dilation, then padding (with zeros)
        if lhs_dilation[i] > 1:
            size = x.shape[2 + i]
            shape = list(x.shape)
            shape[2 + i] = (size - 1) * lhs_dilation[i] + 1
            y = np.zeros(shape, acc)
            idx = [slice(None)] * x.ndim
            idx[2 + i] = slice(None, None, lhs_dilation[i])
            y[tuple(idx)] = x
            x = y
    x = np.pad(x, [(0, 0), (0, 0)] + [tuple(p) for p in padding])
    for i in range(n):   # window reversal, then rhs dilation
        if window_reversal[i]:
            k = np.flip(k, 2 + i)
        if rhs_dilation[i] > 1:
            shape = list(k.shape)
            shape[2 + i] = (k.shape[2 + i] - 1) * rhs_dilation[i] + 1
            y = np.zeros(shape, acc)
            idx = [slice(None)] * k.ndim
            idx[2 + i] = slice(None, None, rhs_dilation[i])
            y[tuple(idx)] = k
            k = y

    def plain(x, k):
        out_sp = [(x.shape[2 + i] - k.shape[2 + i]) // strides[i] + 1 for i in range(n)]
        out = np.zeros((x.shape[0], k.shape[0], *out_sp), acc)
        for pos in np.ndindex(*out_sp):
            win = x[(slice(None), slice(None)) + tuple(
                slice(p * s, p * s + w) for p, s, w in zip(pos, strides, k.shape[2:]))]
            out[(slice(None), slice(None)) + pos] = np.tensordot(
                win, k, axes=(list(range(1, n + 2)), list(range(1, n + 2))))
        return out

    fg, bg = feature_group_count, batch_group_count
    if fg > 1:
        xs = np.split(x, fg, axis=1)
        ks = np.split(k, fg, axis=0)
        out = np.concatenate([plain(a, c) for a, c in zip(xs, ks)], axis=1)
    elif bg > 1:
        xs = np.split(x, bg, axis=0)
        ks = np.split(k, bg, axis=0)
        out = np.concatenate([plain(a, c) for a, c in zip(xs, ks)], axis=1)
    else:
        out = plain(x, k)
    perm = [0] * (n + 2)
    for src, dst in enumerate((dn.output_batch_dimension, dn.output_feature_dimension,
                               *dn.output_spatial_dimensions)):
        perm[dst] = src
    return np.transpose(out, perm).astype(out_dtype or lhs.dtype)


@case("convolution", "f32_nhwc_same_padding", reference=lambda x, k: [
    conv_reference(x, k, NHWC, padding=((1, 1), (1, 1)))], rtol=1e-5, atol=1e-5)
def _():
    return _module([rand((2, 4, 5, 3), np.float32), rand((3, 3, 3, 2), np.float32)],
                   lambda b, x, k: b.convolution(x, k, NHWC, padding=[(1, 1), (1, 1)],
                                                 precision_config=["HIGHEST", "HIGHEST"]))


@case("convolution", "f32_strides_dilations_reversal", reference=lambda x, k: [
    conv_reference(x, k, NCHW, strides=(2, 1), padding=((2, 1), (0, 2)), lhs_dilation=(1, 2),
                   rhs_dilation=(2, 1), window_reversal=(True, False))], rtol=1e-5, atol=1e-5)
def _():
    return _module([rand((1, 2, 5, 4), np.float32), rand((3, 2, 2, 3), np.float32)],
                   lambda b, x, k: b.convolution(
                       x, k, NCHW, window_strides=(2, 1), padding=[(2, 1), (0, 2)],
                       lhs_dilation=(1, 2), rhs_dilation=(2, 1),
                       window_reversal=(True, False)))


@case("convolution", "i32_feature_groups", reference=lambda x, k: [
    conv_reference(x, k, NCHW, feature_group_count=2)])
def _():
    # 4 input features in 2 groups of 2; 6 output features, 3 per group.
    return _module([rand((2, 4, 5, 5), np.int32), rand((6, 2, 2, 2), np.int32)],
                   lambda b, x, k: b.convolution(x, k, NCHW, feature_group_count=2))


@case("convolution", "f32_batch_groups_1d", reference=lambda x, k: [
    conv_reference(x, k, hlo.ConvDimensionNumbers(0, 1, (2,), 1, 0, (2,), 0, 1, (2,)),
                   batch_group_count=2)], rtol=1e-5, atol=1e-5)
def _():
    dn = hlo.ConvDimensionNumbers(0, 1, (2,), 1, 0, (2,), 0, 1, (2,))
    return _module([rand((4, 3, 6), np.float32), rand((4, 3, 3), np.float32)],
                   lambda b, x, k: b.convolution(x, k, dn, batch_group_count=2,
                                                 precision_config=["HIGHEST", "HIGHEST"]))


@case("convolution", "c64_valid", reference=lambda x, k: [conv_reference(x, k, NHWC)],
      rtol=1e-5, atol=1e-5)
def _():
    return _module([rand((1, 3, 3, 2), np.complex64), rand((2, 2, 2, 1), np.complex64)],
                   lambda b, x, k: b.convolution(x, k, NHWC))


@case("convolution", "i8_to_i32_result_type", reference=lambda x, k: [
    conv_reference(x, k, NHWC, out_dtype=np.int32)])
def _():
    x = RNG.integers(-100, 100, (1, 3, 3, 2)).astype(np.int8)
    k = RNG.integers(-100, 100, (2, 2, 2, 2)).astype(np.int8)
    return _module([x, k], lambda b, x, k: b.convolution(x, k, NHWC,
                                                         result_element_type=hlo.i32))


# -- dynamic_conv ----------------------------------------------------------------------------

@case("dynamic_conv", "f32_constant_padding", reference=lambda x, k: [
    conv_reference(x, k, NHWC, strides=(1, 2), padding=((1, 2), (0, 1)))], rtol=1e-5, atol=1e-5)
def _():
    # A constant padding: jaxlib's conversion folds the op into a convolution (padding
    # computed from an argument is refused by verify.check, tests/verify/test_review_refusals)
    def body(b, x, k):
        pad = b.constant(np.array([[1, 2], [0, 1]], np.int32))
        return b.dynamic_conv(x, k, pad, NHWC, T((1, 5, 2, 2), hlo.f32), window_strides=(1, 2),
                              precision_config=["HIGHEST", "HIGHEST"])
    return _module([rand((1, 4, 5, 3), np.float32), rand((3, 3, 3, 2), np.float32)], body)


@case("dynamic_conv", "f32_nhwc")
def _():
    m = hlo.Module("case")
    # Padding from an argument, verified only: not called main, jaxlib checks it with the
    # MHLO-to-StableHLO conversion only (XLA cannot turn it into HLO).
    f = m.add_function("dynamic_conv", [T((1, 4, 4, 1), hlo.f32), T((3, 3, 1, 1), hlo.f32),
                                        T((2, 2), hlo.i64)], visibility="public")
    b = f.builder()
    x, k, p = f.arguments
    b.return_(b.dynamic_conv(x, k, p, NHWC, T((1, 4, 4, 1), hlo.f32)))
    return m, []


# -- triangular_solve ------------------------------------------------------------------------

def _tri(n, lower, dtype, batch=()):
    a = rand(batch + (n, n), dtype)
    a = np.tril(a) if lower else np.triu(a)
    eye = np.eye(n, dtype=dtype)
    return (a * (1 - eye) + eye * (4 + np.abs(a))).astype(dtype)   # well conditioned


def _op(a, lower, unit, transpose):
    a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    a = np.tril(a) if lower else np.triu(a)
    if unit:
        a = a * (1 - np.eye(a.shape[-1])) + np.eye(a.shape[-1])
    if transpose == "TRANSPOSE":
        a = np.swapaxes(a, -1, -2)
    elif transpose == "ADJOINT":
        a = np.conj(np.swapaxes(a, -1, -2))
    return a


def _solve_ref(left, lower, unit, transpose):
    def ref(a, b):
        op = _op(a, lower, unit, transpose)
        bb = b.astype(op.dtype)
        if left:
            x = np.linalg.solve(op, bb)
        else:   # x op = b  <=>  op^T x^T = b^T
            x = np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(bb, -1, -2)),
                            -1, -2)
        return [x.astype(b.dtype)]
    return ref


for _left, _lower, _unit, _tr, _dt in ((True, True, False, "NO_TRANSPOSE", np.float32),
                                       (False, False, True, "TRANSPOSE", np.float64),
                                       (True, False, False, "ADJOINT", np.complex64)):
    def _build(_left=_left, _lower=_lower, _unit=_unit, _tr=_tr, _dt=_dt):
        a = _tri(3, _lower, _dt, (2,))
        rhs = rand((2, 3, 2) if _left else (2, 2, 3), _dt)
        return _module([a, rhs], lambda b, x, y: b.triangular_solve(
            x, y, left_side=_left, lower=_lower, unit_diagonal=_unit, transpose_a=_tr))
    case("triangular_solve",
         f"{np.dtype(_dt).name}_{'left' if _left else 'right'}_{'lower' if _lower else 'upper'}"
         f"{'_unit' if _unit else ''}_{_tr.lower()}",
         reference=_solve_ref(_left, _lower, _unit, _tr),
         rtol=1e-4 if _dt != np.float64 else 1e-10, atol=1e-5 if _dt != np.float64 else 1e-12,
         )(_build)


# -- cholesky --------------------------------------------------------------------------------

def _spd(n, dtype, batch=()):
    a = rand(batch + (n, n), dtype)
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return h.astype(dtype)


def _chol_ref(lower):
    def ref(a):
        wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        if lower:
            return [np.linalg.cholesky(wide).astype(a.dtype)]
        # Upper: a = U^H U, with U the conjugate transpose of the lower factor.
        return [np.conj(np.swapaxes(np.linalg.cholesky(wide), -1, -2)).astype(a.dtype)]
    return ref


@case("cholesky", "f32_lower_batched", reference=_chol_ref(True), rtol=1e-4, atol=1e-5)
def _():
    return _module([_spd(3, np.float32, (2,))], lambda b, a: b.cholesky(a, lower=True))


@case("cholesky", "c128_upper", reference=_chol_ref(False), rtol=1e-10, atol=1e-12)
def _():
    return _module([_spd(3, np.complex128)], lambda b, a: b.cholesky(a, lower=False))


@case("cholesky", "f64_default", reference=lambda a: [
    np.swapaxes(np.linalg.cholesky(a), -1, -2)], rtol=1e-10, atol=1e-12)
def _():
    # Without ``lower`` the attribute is false: the upper factor.
    return _module([_spd(4, np.float64)], lambda b, a: b.cholesky(a))


# -- fft -------------------------------------------------------------------------------------

@case("fft", "c64_fft_ifft", reference=lambda x: [
    np.fft.fft(x.astype(np.complex128)).astype(np.complex64),
    np.fft.ifft2(x.astype(np.complex128)).astype(np.complex64)], rtol=1e-4, atol=1e-4)
def _():
    return _module([rand((2, 3, 8), np.complex64)],
                   lambda b, x: [b.fft(x, "FFT", [8]), b.fft(x, "IFFT", [3, 8])])


@case("fft", "f32_rfft", reference=lambda x: [
    np.fft.rfft2(x.astype(np.float64)).astype(np.complex64)], rtol=1e-4, atol=1e-4)
def _():
    return _module([rand((2, 4, 6), np.float32)], lambda b, x: b.fft(x, "RFFT", [4, 6]))


@case("fft", "c128_irfft", reference=lambda x: [np.fft.irfft(x, 8)], rtol=1e-10, atol=1e-12)
def _():
    # The imaginary parts of the first and last bins are ignored, as numpy does.
    return _module([rand((3, 5), np.complex128)], lambda b, x: b.fft(x, "IRFFT", [8]))


@case("fft", "f64_rfft_3d", reference=lambda x: [np.fft.rfftn(x)], rtol=1e-10, atol=1e-10)
def _():
    return _module([rand((2, 3, 4), np.float64)], lambda b, x: b.fft(x, "RFFT", [2, 3, 4]))


# -- batch norm ------------------------------------------------------------------------------

def _bshape(x, fi):
    s = [1] * x.ndim
    s[fi] = x.shape[fi]
    return s


def _bn_train_ref(eps, fi):
    def ref(x, scale, offset):
        axes = tuple(i for i in range(x.ndim) if i != fi)
        w = x.astype(np.float64)
        mean = w.mean(axes)
        var = w.var(axes)
        y = (w - mean.reshape(_bshape(x, fi))) / np.sqrt(var.reshape(_bshape(x, fi)) + eps)
        y = y * scale.reshape(_bshape(x, fi)) + offset.reshape(_bshape(x, fi))
        return [y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)]
    return ref


@case("batch_norm_training", "f32_nhwc", reference=_bn_train_ref(1e-3, 3), rtol=1e-4,
      atol=1e-4)
def _():
    return _module([rand((2, 3, 3, 4), np.float32), rand((4,), np.float32),
                    rand((4,), np.float32)],
                   lambda b, x, s, o: b.batch_norm_training(x, s, o, epsilon=1e-3,
                                                            feature_index=3))


@case("batch_norm_training", "f64_feature_0", reference=_bn_train_ref(0.5, 0), rtol=1e-10,
      atol=1e-10)
def _():
    return _module([rand((3, 5), np.float64), rand((3,), np.float64), rand((3,), np.float64)],
                   lambda b, x, s, o: b.batch_norm_training(x, s, o, epsilon=0.5,
                                                            feature_index=0))


def _bn_inf_ref(eps, fi):
    def ref(x, scale, offset, mean, var):
        r = lambda v: v.astype(np.float64).reshape(_bshape(x, fi))   # noqa: E731
        y = (x - r(mean)) / np.sqrt(r(var) + eps) * r(scale) + r(offset)
        return [y.astype(x.dtype)]
    return ref


@case("batch_norm_inference", "f32_nchw", reference=_bn_inf_ref(1e-2, 1), rtol=1e-5, atol=1e-5)
def _():
    var = RNG.uniform(0.5, 2, (3,)).astype(np.float32)
    return _module([rand((2, 3, 2, 2), np.float32), rand((3,), np.float32),
                    rand((3,), np.float32), rand((3,), np.float32), var],
                   lambda b, x, s, o, m, v: b.batch_norm_inference(x, s, o, m, v, epsilon=1e-2,
                                                                   feature_index=1))


def _bn_grad_ref(eps, fi):
    # The gradients of y = scale * (x - mean) / sqrt(var + eps) + offset, with mean and var the
    # batch statistics of x (XLA's definition), given dy.
    def ref(x, scale, mean, var, dy):
        axes = tuple(i for i in range(x.ndim) if i != fi)
        n = x.size // x.shape[fi]
        r = lambda v: v.astype(np.float64).reshape(_bshape(x, fi))   # noqa: E731
        w, g = x.astype(np.float64), dy.astype(np.float64)
        inv = 1 / np.sqrt(r(var) + eps)
        xhat = (w - r(mean)) * inv
        d_scale = (g * xhat).sum(axes)
        d_offset = g.sum(axes)
        dx = r(scale) * inv * (g - r(d_offset) / n - xhat * r(d_scale) / n)
        return [dx.astype(x.dtype), d_scale.astype(x.dtype), d_offset.astype(x.dtype)]
    return ref


@case("batch_norm_grad", "f32_feature_last", reference=_bn_grad_ref(1e-3, 2), rtol=1e-4,
      atol=1e-4)
def _():
    x = rand((2, 3, 4), np.float32)
    mean = x.astype(np.float64).mean((0, 1)).astype(np.float32)
    var = x.astype(np.float64).var((0, 1)).astype(np.float32)
    return _module([x, rand((4,), np.float32), mean, var, rand((2, 3, 4), np.float32)],
                   lambda b, x, s, m, v, g: b.batch_norm_grad(x, s, m, v, g, epsilon=1e-3,
                                                              feature_index=2))


# -- topk ------------------------------------------------------------------------------------

def _topk_ref(k, largest):
    def ref(x):
        key = -x.astype(np.float64) if largest else x.astype(np.float64)
        idx = np.argsort(key, axis=-1, kind="stable")[..., :k]
        return [np.take_along_axis(x, idx, -1), idx.astype(np.int32)]
    return ref


@case("topk", "f32_largest", reference=_topk_ref(3, True))
def _():
    x = RNG.permutation(24).reshape(2, 3, 4).astype(np.float32) / 4   # distinct values
    return _module([x], lambda b, x: b.topk(x, 3, largest=True))


@case("topk", "i32_default_largest", reference=_topk_ref(2, True))
def _():
    x = RNG.permutation(10).reshape(2, 5).astype(np.int32) - 5
    return _module([x], lambda b, x: b.topk(x, 2))


@case("topk", "ui8_smallest", reference=_topk_ref(2, False))
def _():
    x = RNG.permutation(12).reshape(3, 4).astype(np.uint8)
    return _module([x], lambda b, x: b.topk(x, 2, largest=False))


# -- ragged_dot (verify only: XLA:CPU cannot compile it) -------------------------------------

@case("ragged_dot", "f32_ragged_rows")
def _():
    dn = RaggedDotDimensionNumbers(hlo.DotDimensionNumbers((), (), (1,), (1,)), (0,), (0,))
    return _module([rand((4, 3), np.float32), rand((2, 3, 5), np.float32),
                    np.array([1, 3], np.int64)],
                   lambda b, x, y, g: b.ragged_dot(x, y, g, dn))


# -- trace -----------------------------------------------------------------------------------

@case("trace", "f32_identity", reference=lambda x: [x])
def _():
    def body(b, x):
        b.trace(x, "in a test")
        return x
    return _module([rand((2, 3), np.float32)], body)
