"""Cases for the indexing chapter: dynamic_slice, dynamic_update_slice, gather, dynamic_gather,
scatter, sort, torch_index_select. References are written with numpy's own indexing (not a
re-implementation of the StableHLO rules), and every comparison is exact."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from tests.mhlo_ir.ops.cases import case, module, rand

T = hlo.tensor
GDN = hlo.mhlo_attributes.GatherDimensionNumbers
SDN = hlo.mhlo_attributes.ScatterDimensionNumbers


def _t(x):
    return T(np.shape(x), np.asarray(x).dtype)


def _clamp(start, size, n):
    return min(max(int(start), 0), n - size)


# -- dynamic_slice, dynamic_update_slice --------------------------------------------------------


@case("dynamic_slice", "f32_i32_indices",
      reference=lambda x, i, j: [x[i:i + 2, j:j + 3].copy()])
def _():
    x, i, j = rand((4, 5), np.float32), np.int32(1), np.int32(2)
    return module([_t(x), _t(i), _t(j)],
                  lambda b, a, p, q: b.dynamic_slice(a, [p, q], (2, 3))), [x, i, j]


@case("dynamic_slice", "ui8_clamped_i64_indices",
      reference=lambda x, i, j: [x[_clamp(i, 3, 4):_clamp(i, 3, 4) + 3,
                                   _clamp(j, 1, 3):_clamp(j, 1, 3) + 1].copy()])
def _():
    # XLA clamps start indices so that the slice stays inside the operand.
    x, i, j = rand((4, 3), np.uint8, 0, 255), np.int64(7), np.int64(-5)
    return module([_t(x), _t(i), _t(j)],
                  lambda b, a, p, q: b.dynamic_slice(a, [p, q], (3, 1))), [x, i, j]


def _dus_ref(x, u, *starts):
    out = x.copy()
    idx = tuple(slice(_clamp(s, m, n), _clamp(s, m, n) + m)
                for s, m, n in zip(starts, u.shape, x.shape))
    out[idx] = u
    return [out]


@case("dynamic_update_slice", "i32", reference=_dus_ref)
def _():
    x, u, i, j = rand((4, 4), np.int32), rand((2, 3), np.int32, 10, 20), np.int32(1), np.int32(0)
    return module([_t(x), _t(u), _t(i), _t(j)], lambda b, a, up, p, q: b.dynamic_update_slice(
        a, up, [p, q])), [x, u, i, j]


@case("dynamic_update_slice", "c64_clamped", reference=_dus_ref)
def _():
    x, u, i = rand((5,), np.complex64), rand((2,), np.complex64), np.int32(9)
    return module([_t(x), _t(u), _t(i)],
                  lambda b, a, up, p: b.dynamic_update_slice(a, up, [p])), [x, u, i]


@case("dynamic_update_slice", "i1", reference=_dus_ref)
def _():
    x, u, i = rand((2, 3), np.bool_), np.ones((1, 3), np.bool_), np.int32(1)
    z = np.int32(0)
    return module([_t(x), _t(u), _t(i), _t(z)], lambda b, a, up, p, q: b.dynamic_update_slice(
        a, up, [p, q])), [x, u, i, z]


# -- gather -------------------------------------------------------------------------------------

_ROWS = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1)


@case("gather", "f32_rows", reference=lambda x, i: [x[i[:, 0]]])
def _():
    x, i = rand((5, 3), np.float32), np.array([[4], [0], [2], [4]], np.int32)
    return module([_t(x), _t(i)], lambda b, a, ix: b.gather(a, ix, _ROWS, (1, 3))), [x, i]


@case("gather", "i64_points_sorted",
      reference=lambda x, i: [x[i[..., 0], i[..., 1]]])
def _():
    # Whole-index gather of single elements; index vectors along the last dimension.
    x = rand((3, 4), np.int64)
    i = np.array([[[0, 1], [1, 3]], [[2, 2], [2, 3]]], np.int32)
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1),
             index_vector_dim=2)
    return module([_t(x), _t(i)], lambda b, a, ix: b.gather(
        a, ix, dn, (1, 1), indices_are_sorted=True)), [x, i]


@case("gather", "ui16_windows_clamped_implicit_vector_dim",
      reference=lambda x, i: [np.stack([x[:, _clamp(s, 2, 5):_clamp(s, 2, 5) + 2] for s in i])])
def _():
    # index_vector_dim == rank(start_indices): each index is a scalar. Starts are clamped so
    # windows stay in bounds, and the window keeps both dimensions (offset_dims 1, 2).
    x, i = rand((3, 5), np.uint16, 0, 1000), np.array([0, 4, -2], np.int32)
    dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(1,),
             index_vector_dim=1)
    return module([_t(x), _t(i)], lambda b, a, ix: b.gather(a, ix, dn, (3, 2))), [x, i]


@case("gather", "c64_batching_dims",
      reference=lambda x, i: [np.stack([x[k][i[k, :, 0]] for k in range(x.shape[0])])])
def _():
    # Batched gather: operand dim 0 is paired with start_indices dim 0.
    x, i = rand((2, 4, 3), np.complex64), np.array([[[3], [1]], [[0], [0]]], np.int32)
    dn = GDN(offset_dims=(2,), collapsed_slice_dims=(1,), operand_batching_dims=(0,),
             start_indices_batching_dims=(0,), start_index_map=(1,), index_vector_dim=2)
    return module([_t(x), _t(i)], lambda b, a, ix: b.gather(a, ix, dn, (1, 1, 3))), [x, i]


@case("gather", "i1_rows", reference=lambda x, i: [x[i[:, 0]]])
def _():
    x, i = rand((3, 2), np.bool_), np.array([[2], [1]], np.uint32)
    return module([_t(x), _t(i)], lambda b, a, ix: b.gather(a, ix, _ROWS, (1, 2))), [x, i]


@case("dynamic_gather", "f32_constant_slice_sizes", reference=lambda x, i: [x[i[:, 0]]])
def _():
    x, i = rand((4, 3), np.float32), np.array([[1], [3], [1]], np.int32)
    return module([_t(x), _t(i)], lambda b, a, ix: b.dynamic_gather(
        a, ix, b.constant(np.array([1, 3], np.int64)), _ROWS)), [x, i]


# -- scatter ------------------------------------------------------------------------------------

_ROW_UPDATES = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
                   scatter_dims_to_operand_dims=(0,), index_vector_dim=1)


def _add_at(x, i, u):
    out = x.copy()
    np.add.at(out, i[:, 0], u)
    return [out]


@case("scatter", "i32_add_duplicates", reference=_add_at)
def _():
    x, i, u = rand((4, 3), np.int32), np.array([[1], [3], [1]], np.int32), rand((3, 3), np.int32)
    return module([_t(x), _t(i), _t(u)], lambda b, a, ix, up: b.scatter(
        a, ix, up, _ROW_UPDATES, lambda r, old, new: r.add(old, new))), [x, i, u]


def _replace_rows(x, i, u):
    out = x.copy()
    out[i[:, 0]] = u
    return [out]


@case("scatter", "f32_replace_unique_sorted", reference=_replace_rows)
def _():
    x, i, u = rand((4, 2), np.float32), np.array([[0], [2]], np.int32), rand((2, 2), np.float32)
    return module([_t(x), _t(i), _t(u)], lambda b, a, ix, up: b.scatter(
        a, ix, up, _ROW_UPDATES, lambda r, old, new: new, indices_are_sorted=True,
        unique_indices=True)), [x, i, u]


def _two_inputs(x, y, i, u, v):
    # inputs[0] gets the max of the updates, inputs[1] the updates' sum.
    ox, oy = x.copy(), y.copy()
    np.maximum.at(ox, i[:, 0], u)
    np.add.at(oy, i[:, 0], v)
    return [ox, oy]


@case("scatter", "variadic_i8_max_ui32_add", reference=_two_inputs)
def _():
    x, y = rand((3, 2), np.int8), rand((3, 2), np.uint32, 0, 100)
    i = np.array([[2], [0], [2]], np.int32)
    u, v = rand((3, 2), np.int8), rand((3, 2), np.uint32, 0, 100)

    def body(b, a, c, ix, up, vp):
        return b.scatter([a, c], ix, [up, vp], _ROW_UPDATES,
                         lambda r, o0, o1, n0, n1: [r.maximum(o0, n0), r.add(o1, n1)])
    return module([_t(x), _t(y), _t(i), _t(u), _t(v)], body), [x, y, i, u, v]


def _batched_points(x, i, u):
    out = x.copy()
    for k in range(x.shape[0]):
        for j in range(i.shape[1]):
            out[k, i[k, j]] = u[k, j]
    return [out]


@case("scatter", "c128_batching_dims", reference=_batched_points)
def _():
    # Batched element scatter: inputs dim 0 paired with scatter_indices dim 0; indices are
    # scalars (index_vector_dim == rank); unique per batch, so "replace" is well defined.
    x, u = rand((2, 4), np.complex128), rand((2, 2), np.complex128)
    i = np.array([[3, 0], [1, 2]], np.int32)
    dn = SDN(update_window_dims=(), inserted_window_dims=(1,), input_batching_dims=(0,),
             scatter_indices_batching_dims=(0,), scatter_dims_to_operand_dims=(1,),
             index_vector_dim=2)
    return module([_t(x), _t(i), _t(u)], lambda b, a, ix, up: b.scatter(
        a, ix, up, dn, lambda r, old, new: new)), [x, i, u]


@case("scatter", "i1_or", reference=lambda x, i, u: [_or_at(x, i, u)])
def _():
    x, i, u = rand((4,), np.bool_), np.array([[0], [3]], np.int32), np.array([True, True])
    dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
             index_vector_dim=1)
    return module([_t(x), _t(i), _t(u)], lambda b, a, ix, up: b.scatter(
        a, ix, up, dn, lambda r, old, new: r.or_(old, new))), [x, i, u]


def _or_at(x, i, u):
    out = x.copy()
    np.logical_or.at(out, i[:, 0], u)
    return out


# -- sort ---------------------------------------------------------------------------------------


@case("sort", "f32_ascending_last_dim", reference=lambda x: [np.sort(x, axis=-1)])
def _():
    x = rand((3, 5), np.float32)
    return module([_t(x)], lambda b, a: b.sort(a, lambda r, p, q: r.compare(p, q, "LT"))), [x]


@case("sort", "i32_descending_dim0", reference=lambda x: [-np.sort(-x, axis=0)])
def _():
    x = rand((4, 3), np.int32, -100, 100)
    return module([_t(x)], lambda b, a: b.sort(
        a, lambda r, p, q: r.compare(p, q, "GT", "SIGNED"), dimension=0)), [x]


def _stable_by_key(k, v):
    order = np.argsort(k, axis=1, kind="stable")
    return [np.take_along_axis(k, order, 1), np.take_along_axis(v, order, 1)]


@case("sort", "variadic_stable_ui8_keys_f64_values", reference=_stable_by_key)
def _():
    # Many equal keys: a stable sort keeps the values' original order among them.
    k, v = rand((2, 8), np.uint8, 0, 2), rand((2, 8), np.float64)
    return module([_t(k), _t(v)], lambda b, a, c: b.sort(
        [a, c], lambda r, k0, k1, v0, v1: r.compare(k0, k1, "LT", "UNSIGNED"),
        dimension=1, is_stable=True)), [k, v]


@case("sort", "i1", reference=lambda x: [np.sort(x)])
def _():
    x = rand((6,), np.bool_)
    return module([_t(x)], lambda b, a: b.sort(
        a, lambda r, p, q: r.compare(p, q, "LT", "UNSIGNED"))), [x]


# -- torch_index_select -------------------------------------------------------------------------


@case("torch_index_select", "f32_dim1", reference=lambda x, i: [np.take(x, i, axis=1)])
def _():
    x, i = rand((2, 4, 3), np.float32), np.array([[3, 0], [1, 1], [2, 0]], np.int32)
    return module([_t(x), _t(i)], lambda b, a, ix: b.torch_index_select(a, ix, 1)), [x, i]


@case("torch_index_select", "i16_batch_dims",
      reference=lambda x, i: [np.take_along_axis(x, i.astype(np.int64), axis=1)])
def _():
    x, i = rand((2, 3), np.int16), np.array([[0, 2, 2, 1], [1, 0, 0, 2]], np.int64)
    return module([_t(x), _t(i)], lambda b, a, ix: b.torch_index_select(a, ix, 1, 1)), [x, i]
