"""Cases for the data-movement chapter: constant, iota, broadcast_in_dim, broadcast, reshape,
transpose, reverse, slice, concatenate, pad, copy, bitcast, get/set_dimension_size and the
dynamic (shape-operand) variants. All comparisons are exact: these ops only move bits."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import mhlo_ir as hlo
from tests.mhlo_ir.ops.cases import case, module, rand

T = hlo.tensor


def _t(x):
    """The tensor type of numpy array ``x``."""
    return T(np.shape(x), np.asarray(x).dtype)


def _constants(*arrays):
    """A case body returning each array as a constant; the reference is the arrays."""
    arrays = [np.asarray(a) for a in arrays]
    return module([], lambda b: [b.constant(a) for a in arrays]), []


# -- constant: one case per element-type family -------------------------------------------------

_BOOL = [np.array([[True, False, True], [False, False, True]]), np.array(True),
         np.zeros((0, 2), np.bool_)]
_SINT = [np.array([-128, -1, 0, 1, 127], np.int8), np.array([[-(2**31), 7], [2**31 - 1, 0]],
                                                              np.int32),
         np.array([-(2**63), 2**63 - 1, 5], np.int64), np.array([-8, -1, 0, 7], ml_dtypes.int4),
         np.full((2, 2), 3, np.int16)]
_UINT = [np.array([0, 255, 17], np.uint8), np.array([2**32 - 1, 0], np.uint32),
         np.array([2**64 - 1, 1], np.uint64), np.array([0, 15, 9], ml_dtypes.uint4)]
_FLOAT = [np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -3.25e-8], np.float32),
          np.array([1e300, -1e-300, 0.1, np.nan], np.float64),
          np.array([65504.0, -0.0, 6e-8, np.inf], np.float16),
          np.array([1.0, -2.5, 3e38, np.nan], ml_dtypes.bfloat16),
          np.array([448.0, -0.5, 0.0, 2.0], ml_dtypes.float8_e4m3fn),
          np.array([57344.0, -1.0, np.inf, 0.25], ml_dtypes.float8_e5m2),
          np.full((2, 3), 2.5, np.float32)]
_COMPLEX = [np.array([1 + 2j, -0.5 - 1e-3j, np.inf + 0j], np.complex64),
            np.array([[1e200 - 1j, 0j], [np.nan + 1j, -2 + 3j]], np.complex128)]

for _name, _arrays in (("bool", _BOOL), ("sint", _SINT), ("uint", _UINT), ("float", _FLOAT),
                       ("complex", _COMPLEX)):
    case("constant", _name, reference=lambda _a=_arrays: list(_a))(
        lambda _a=_arrays: _constants(*_a))


# -- iota ---------------------------------------------------------------------------------------


def _iota_ref(shape, dim, dtype):
    ar = np.arange(shape[dim]).reshape([-1 if i == dim else 1 for i in range(len(shape))])
    return np.broadcast_to(ar, shape).astype(dtype)


_IOTAS = {
    "int": [((2, 3), 1, np.int32), ((4,), 0, np.uint8), ((3, 2), 0, np.int64)],
    "float": [((2, 3), 0, np.float32), ((5,), 0, ml_dtypes.bfloat16), ((2, 2), 1, np.float64)],
    "complex": [((3,), 0, np.complex64), ((2, 2), 1, np.complex128)],
}

for _name, _specs in _IOTAS.items():
    case("iota", _name, reference=lambda _s=_specs: [_iota_ref(*s) for s in _s])(
        lambda _s=_specs: (module([], lambda b: [b.iota(s, dt, d) for s, d, dt in _s]), []))


# -- broadcast_in_dim, broadcast ----------------------------------------------------------------


@case("broadcast_in_dim", "f32_expand",
      reference=lambda x: [np.broadcast_to(x.reshape(3, 1, 1), (3, 2, 4)).copy()])
def _():
    x = rand((3, 1), np.float32)
    return module([_t(x)], lambda b, a: b.broadcast_in_dim(a, (3, 2, 4), (0, 1))), [x]


@case("broadcast_in_dim", "i1_transposed",
      reference=lambda x: [np.broadcast_to(x.T[:, None, :], (4, 2, 3)).copy()])
def _():
    x = rand((3, 4), np.bool_)
    return module([_t(x)], lambda b, a: b.broadcast_in_dim(a, (4, 2, 3), (2, 0))), [x]


@case("broadcast_in_dim", "scalar_c64", reference=lambda x: [np.full((2, 2), x)])
def _():
    x = np.complex64(1.5 - 2j)
    return module([_t(x)], lambda b, a: b.broadcast_in_dim(a, (2, 2), ())), [x]


@case("broadcast", "f32", reference=lambda x: [np.broadcast_to(x, (2, 1, 2, 3)).copy()])
def _():
    x = rand((2, 3), np.float32)
    return module([_t(x)], lambda b, a: b.broadcast(a, (2, 1))), [x]


@case("broadcast", "i8_scalar", reference=lambda x: [np.full((3,), x)])
def _():
    x = np.int8(-7)
    return module([_t(x)], lambda b, a: b.broadcast(a, (3,))), [x]


# -- reshape, transpose, reverse ----------------------------------------------------------------


@case("reshape", "i32", reference=lambda x: [x.reshape(3, 1, 4), x.reshape(12)])
def _():
    x = rand((2, 6), np.int32)
    return module([_t(x)], lambda b, a: [b.reshape(a, (3, 1, 4)), b.reshape(a, (12,))]), [x]


@case("reshape", "f64_to_scalar", reference=lambda x: [x.reshape(())])
def _():
    x = rand((1, 1), np.float64)
    return module([_t(x)], lambda b, a: b.reshape(a, ())), [x]


@case("transpose", "c64_3d", reference=lambda x: [x.transpose(2, 0, 1)])
def _():
    x = rand((2, 3, 4), np.complex64)
    return module([_t(x)], lambda b, a: b.transpose(a, (2, 0, 1))), [x]


@case("transpose", "ui16", reference=lambda x: [x.T.copy()])
def _():
    x = rand((3, 2), np.uint16, 0, 60000)
    return module([_t(x)], lambda b, a: b.transpose(a, (1, 0))), [x]


@case("reverse", "f32_two_dims", reference=lambda x: [x[::-1, :, ::-1].copy()])
def _():
    x = rand((2, 3, 4), np.float32)
    return module([_t(x)], lambda b, a: b.reverse(a, (0, 2))), [x]


@case("reverse", "i1", reference=lambda x: [x[::-1].copy()])
def _():
    x = rand((5,), np.bool_)
    return module([_t(x)], lambda b, a: b.reverse(a, (0,))), [x]


# -- slice, concatenate -------------------------------------------------------------------------


@case("slice", "i8_strided", reference=lambda x: [x[1:4:2, 0:5:3].copy(), x[0:0, :].copy()])
def _():
    x = rand((5, 5), np.int8)
    return module([_t(x)], lambda b, a: [b.slice(a, (1, 0), (4, 5), (2, 3)),
                                         b.slice(a, (0, 0), (0, 5))]), [x]


@case("slice", "bf16", reference=lambda x: [x[1:, 1:2].copy()])
def _():
    x = rand((3, 4), ml_dtypes.bfloat16)
    return module([_t(x)], lambda b, a: b.slice(a, (1, 1), (3, 2))), [x]


@case("concatenate", "f16_three", reference=lambda x, y: [np.concatenate([x, y, x], axis=1)])
def _():
    x, y = rand((2, 3), np.float16), rand((2, 1), np.float16)
    return module([_t(x), _t(y)], lambda b, a, c: b.concatenate([a, c, a], 1)), [x, y]


@case("concatenate", "ui64_dim0", reference=lambda x, y: [np.concatenate([x, y])])
def _():
    x, y = rand((1, 2), np.uint64, 0, 2**40), rand((3, 2), np.uint64, 0, 9)
    return module([_t(x), _t(y)], lambda b, a, c: b.concatenate([a, c], 0)), [x, y]


# -- pad ----------------------------------------------------------------------------------------


def _pad_ref(x, v, low, high, interior):
    """Pad in numpy: interior first, then edges (negative edges crop)."""
    shape = [n + max(n - 1, 0) * i for n, i in zip(x.shape, interior)]
    out = np.full(shape, v, dtype=x.dtype)
    out[tuple(slice(None, None, i + 1) for i in interior)] = x
    pads = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)]
    out = np.pad(out, pads, constant_values=v)
    crop = tuple(slice(max(-lo, 0), out.shape[d] - max(-hi, 0))
                 for d, (lo, hi) in enumerate(zip(low, high)))
    return out[crop].copy()


@case("pad", "f32_interior_negative",
      reference=lambda x, v: [_pad_ref(x, v, (1, -1), (0, 2), (1, 0))])
def _():
    x, v = rand((2, 3), np.float32), np.float32(-9.5)
    return module([_t(x), _t(v)], lambda b, a, p: b.pad(a, p, (1, -1), (0, 2), (1, 0))), [x, v]


@case("pad", "i32_edges", reference=lambda x, v: [_pad_ref(x, v, (2, 0), (1, 3), (0, 2))])
def _():
    x, v = rand((3, 2), np.int32), np.int32(7)
    return module([_t(x), _t(v)], lambda b, a, p: b.pad(a, p, (2, 0), (1, 3), (0, 2))), [x, v]


@case("pad", "i1_crop_all", reference=lambda x, v: [_pad_ref(x, v, (-1,), (-2,), (2,))])
def _():
    x, v = rand((4,), np.bool_), np.bool_(True)
    return module([_t(x), _t(v)], lambda b, a, p: b.pad(a, p, (-1,), (-2,), (2,))), [x, v]


@case("pad", "c128", reference=lambda x, v: [_pad_ref(x, v, (1,), (1,), (0,))])
def _():
    x, v = rand((2,), np.complex128), np.complex128(1j)
    return module([_t(x), _t(v)], lambda b, a, p: b.pad(a, p, (1,), (1,))), [x, v]


# -- copy, bitcast ------------------------------------------------------------------------------


@case("copy", "c128", reference=lambda x: [x])
def _():
    x = rand((2, 2), np.complex128)
    return module([_t(x)], lambda b, a: b.copy(a)), [x]


@case("copy", "i1_prefetch_index", reference=lambda x: [x])
def _():
    x = rand((3,), np.bool_)
    return module([_t(x)], lambda b, a: b.copy(a, cross_program_prefetch_index=0)), [x]


@case("bitcast", "identity_f32", reference=lambda x: [x])
def _():
    x = rand((2, 3), np.float32)
    return module([_t(x)], lambda b, a: b.bitcast(a, T((2, 3), hlo.f32))), [x]


@case("bitcast", "reshape_verify_only")
def _():
    # Verified only: XLA's CPU compiler rejects a shape-changing bitcast ("Unexpected bitcast
    # operation seen during layout assignment").
    x = rand((2, 3), np.float32)
    return module([_t(x)], lambda b, a: b.bitcast(a, T((3, 2), hlo.i32))), [x]


# -- get_dimension_size, set_dimension_size -----------------------------------------------------


@case("get_dimension_size", "f32", reference=lambda x: [np.int32(3), np.int32(2)])
def _():
    x = rand((2, 3), np.float32)
    return module([_t(x)], lambda b, a: [b.get_dimension_size(a, 1),
                                         b.get_dimension_size(a, 0)]), [x]


@case("set_dimension_size", "i32_masks_reduce",
      reference=lambda x, n: [x[:, :int(n)].sum(axis=1, dtype=np.int32)])
def _():
    # The elements past the runtime size are padding: a reduction skips them.
    x, n = rand((2, 4), np.int32, -50, 50), np.int32(3)

    def body(b, a, size):
        y = b.set_dimension_size(a, size, 1)
        return b.reduce(y, b.constant(np.int32(0)), [1], lambda r, s, e: r.add(s, e))
    return module([_t(x), _t(n)], body), [x, n]


# -- dynamic variants ---------------------------------------------------------------------------


@case("dynamic_broadcast_in_dim", "f32_constant_shape",
      reference=lambda x: [np.broadcast_to(x, (2, 3)).copy()])
def _():
    x = rand((3,), np.float32)

    def body(b, a):
        shape = b.constant(np.array([2, 3], np.int64))
        return b.dynamic_broadcast_in_dim(a, shape, (1,), (2, 3),
                                          known_expanding_dimensions=(),
                                          known_nonexpanding_dimensions=(0,))
    return module([_t(x)], body), [x]


@case("dynamic_broadcast_in_dim", "i32_argument_shape",
      reference=lambda x, s: [np.broadcast_to(x.reshape(1, 2, 1), (3, 2, 2)).copy()])
def _():
    x, s = rand((2, 1), np.int32), np.array([3, 2, 2], np.int32)
    return module([_t(x), _t(s)], lambda b, a, sh: b.dynamic_broadcast_in_dim(
        a, sh, (1, 2), (3, 2, 2))), [x, s]


@case("dynamic_reshape", "f32_constant_shape", reference=lambda x: [x.reshape(3, 2)])
def _():
    x = rand((2, 3), np.float32)
    return module([_t(x)], lambda b, a: b.dynamic_reshape(
        a, b.constant(np.array([3, 2], np.int64)), (3, 2))), [x]


@case("dynamic_reshape", "ui8_argument_shape", reference=lambda x, s: [x.reshape(6)])
def _():
    x, s = rand((2, 3), np.uint8, 0, 255), np.array([6], np.int32)
    return module([_t(x), _t(s)], lambda b, a, sh: b.dynamic_reshape(a, sh, (6,))), [x, s]


@case("dynamic_iota", "constant_shape",
      reference=lambda: [_iota_ref((2, 3), 1, np.float32), _iota_ref((4,), 0, np.int32)])
def _():
    def body(b):
        return [b.dynamic_iota(b.constant(np.array([2, 3], np.int64)), T((2, 3), hlo.f32), 1),
                b.dynamic_iota(b.constant(np.array([4], np.int32)), T((4,), hlo.i32))]
    return module([], body), []


@case("dynamic_iota", "argument_shape", reference=lambda s: [_iota_ref((3, 2), 0, np.int64)])
def _():
    s = np.array([3, 2], np.int32)
    return module([_t(s)], lambda b, sh: b.dynamic_iota(sh, T((3, 2), hlo.i64), 0)), [s]


@case("dynamic_pad", "f32_constant_paddings",
      reference=lambda x, v: [_pad_ref(x, v, (1, 0), (0, 1), (0, 1))])
def _():
    x, v = rand((2, 3), np.float32), np.float32(-1.0)

    def body(b, a, p):
        c = [b.constant(np.array(q, np.int64)) for q in ((1, 0), (0, 1), (0, 1))]
        return b.dynamic_pad(a, p, *c, (3, 6))
    return module([_t(x), _t(v)], body), [x, v]


@case("real_dynamic_slice", "i32_constant_bounds", reference=lambda x: [x[0:2, 1:4:2].copy()])
def _():
    x = rand((3, 4), np.int32)

    def body(b, a):
        c = [b.constant(np.array(q, np.int64)) for q in ((0, 1), (2, 4), (1, 2))]
        return b.real_dynamic_slice(a, *c, (2, 2))
    return module([_t(x)], body), [x]
