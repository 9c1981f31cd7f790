"""Indexing and shape-extra primitives traced with lower.lax, lowered by our rules, run by
jaxlib and compared with numpy (exactly: all of this is data movement or integer/float
arithmetic that numpy reproduces bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest

import verify
from lower import core, lax, lower_jaxpr_to_module
from lower.lax import GatherDimensionNumbers as GDN
from lower.lax import GatherScatterMode as Mode
from lower.lax import ScatterDimensionNumbers as SDN
from tests.lower.harness import check, run

RNG = np.random.default_rng(4)




X = RNG.integers(-9, 9, (3, 4)).astype(np.int32)
F = RNG.uniform(-4, 4, (3, 4)).astype(np.float32)


def _np_pad(x, value, config):
    """numpy reference for lax.pad: interior padding, then edges (negative ones crop)."""
    for d, (lo, hi, it) in enumerate(config):
        n = x.shape[d]
        if it and n > 1:
            shape = list(x.shape)
            shape[d] = n + (n - 1) * it
            y = np.full(shape, value, x.dtype)
            idx = [slice(None)] * x.ndim
            idx[d] = slice(None, None, it + 1)
            y[tuple(idx)] = x
            x = y
        width = [(0, 0)] * x.ndim
        width[d] = (max(lo, 0), max(hi, 0))
        x = np.pad(x, width, constant_values=value)
        idx = [slice(None)] * x.ndim
        idx[d] = slice(-min(lo, 0), x.shape[d] + min(hi, 0))
        x = x[tuple(idx)]
    return x


def test_shape_extras_pad_rev_squeeze_expand_dims():
    configs = [((1, 2, 0), (0, 0, 1)), ((-1, 1, 1), (2, -2, 2)), ((0, -2, 0), (-1, -1, 0))]
    x3 = X.reshape(3, 1, 4)

    def f(x, y):
        outs = [lax.pad(x, -7, c) for c in configs]
        outs += [lax.pad(y, 0.5, configs[1]), lax.rev(x, (0,)), lax.rev(x, (0, 1)),
                 lax.squeeze(lax.reshape(x, (3, 1, 4)), (1,)),
                 lax.expand_dims(x, (0, 3))]
        return outs
    outs = run(f, X, F)
    refs = [_np_pad(X, -7, c) for c in configs]
    refs += [_np_pad(F, np.float32(0.5), configs[1]), X[::-1], X[::-1, ::-1],
             x3.squeeze(1), X[None, :, :, None]]
    check(outs, refs)


def test_expand_dims_rule_on_a_hand_built_equation():
    """The expand_dims rule (registered by the shape family) on an equation built directly:
    our front end emits broadcast_in_dim for it, as JAX does."""
    a, r = core.ShapedArray((3, 4), np.int32), core.ShapedArray((3, 1, 4), np.int32)
    x, y = core.Var(a), core.Var(r)
    eqn = core.JaxprEqn([x], [y], core.Primitive("expand_dims"), {"dimensions": (1,)})
    m = lower_jaxpr_to_module("ed", core.ClosedJaxpr(core.Jaxpr([], [x], [y], [eqn]), [])).module
    check(verify.run(m, X), [X[:, None, :]])


def test_dynamic_slice_and_update_slice_clamp_and_wrap_negative():
    starts = np.array([[1, 0], [2, 3], [-1, 1], [5, -9]], np.int32)
    upd = np.array([[100, 101], [102, 103]], np.int32)

    def f(x, s, u):
        outs = []
        for k in range(len(starts)):
            i, j = lax.reshape(lax.slice(s, (k, 0), (k + 1, 1)), ()), \
                lax.reshape(lax.slice(s, (k, 1), (k + 1, 2)), ())
            outs.append(lax.dynamic_slice(x, (i, j), (2, 2)))
            outs.append(lax.dynamic_update_slice(x, u, (i, j)))
        outs.append(lax.dynamic_slice(x, (1, -3), (2, 3)))  # Python ints, one negative
        return outs
    outs = run(f, X, starts, upd)
    refs = []
    for i, j in starts:
        i = i + 3 if i < 0 else i            # negative: from the end (jax.lax semantics)
        j = j + 4 if j < 0 else j
        i, j = min(max(i, 0), 1), min(max(j, 0), 2)  # then clamped so the slice fits
        refs.append(X[i:i + 2, j:j + 2])
        y = X.copy()
        y[i:i + 2, j:j + 2] = upd
        refs.append(y)
    refs.append(X[1:3, 1:4])
    check(outs, refs)


def _rows_dn():
    return GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))


def test_gather_modes_rows_points_windows_and_batching():
    rows = np.array([[2], [0], [-1], [3], [1]], np.int32)        # -1 and 3 out of bounds
    points = np.array([[0, 3], [2, 1], [1, 4], [2, 0]], np.int32)  # (1, 4) out of bounds
    wins = np.array([[0, 0], [1, 2], [2, 3]], np.int32)           # (1,2) ok; (2,3) overflows
    b_idx = np.array([[[3], [0]], [[1], [1]], [[2], [0]]], np.int32)
    point_dn = GDN(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1))
    win_dn = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))
    batch_dn = GDN(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                   operand_batching_dims=(0,), start_indices_batching_dims=(0,))

    def f(x, fx, r, p, w, bi):
        return [lax.gather(x, r, _rows_dn(), (1, 4), mode=Mode.CLIP),
                lax.gather(x, r, _rows_dn(), (1, 4), mode="fill", fill_value=-1),
                # jax.lax.gather's default mode is PROMISE_IN_BOUNDS (XLA clamps), not fill
                lax.gather(fx, r, _rows_dn(), (1, 4)),
                lax.gather(fx, r, _rows_dn(), (1, 4), mode="fill"),   # NaN fill default
                lax.gather(x, lax.slice(r, (0, 0), (2, 1)), _rows_dn(), (1, 4),
                           mode=Mode.PROMISE_IN_BOUNDS),
                lax.gather(x, p, point_dn, (1, 1), mode="clip"),
                lax.gather(x, p, point_dn, (1, 1), mode="fill"),    # int32 min default
                lax.gather(x, w, win_dn, (2, 2), mode="clip"),
                lax.gather(x, w, win_dn, (2, 2), mode="fill", fill_value=0),
                lax.gather(x, bi, batch_dn, (1, 1), mode="clip")]
    outs = run(f, X, F, rows, points, wins, b_idx)
    r = rows[:, 0]
    ok = (r >= 0) & (r < 3)
    rc = np.clip(r, 0, 2)
    pc = np.stack([np.clip(points[:, 0], 0, 2), np.clip(points[:, 1], 0, 3)], 1)
    pok = (points[:, 0] <= 2) & (points[:, 1] <= 3) & (points >= 0).all(1)
    wc = np.stack([np.clip(wins[:, 0], 0, 1), np.clip(wins[:, 1], 0, 2)], 1)
    wok = (wins[:, 0] <= 1) & (wins[:, 1] <= 2)
    win_ref = np.stack([X[i:i + 2, j:j + 2] for i, j in wc])
    refs = [X[rc], np.where(ok[:, None], X[rc], -1),
            F[rc], np.where(ok[:, None], F[rc], np.float32(np.nan)), X[r[:2]],
            X[pc[:, 0], pc[:, 1]],
            np.where(pok, X[pc[:, 0], pc[:, 1]], np.iinfo(np.int32).min).astype(np.int32),
            win_ref, np.where(wok[:, None, None], win_ref, 0).astype(np.int32),
            np.take_along_axis(X, np.clip(b_idx[..., 0], 0, 3), 1)]
    check(outs, refs)


def _np_scatter_rows(x, rows, upd, ufunc, mode):
    y = x.copy()
    rows = np.clip(rows, 0, x.shape[0] - 1) if mode == "clip" else rows
    keep = (rows >= 0) & (rows < x.shape[0])
    if ufunc is None:
        y[rows[keep]] = upd[keep]
    else:
        ufunc.at(y, rows[keep], upd[keep])
    return y


def test_scatter_family_with_duplicates_and_modes():
    rows = np.array([[1], [0], [1], [5], [-2], [2]], np.int32)   # duplicates; 5, -2 OOB
    upd = RNG.integers(-5, 6, (6, 4)).astype(np.int32)
    fupd = RNG.uniform(-3, 3, (6, 4)).astype(np.float32)
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
             scatter_dims_to_operand_dims=(0,))
    uniq = np.array([[2], [0]], np.int32)

    def f(x, fx, r, u, fu, q):
        return [lax.scatter_add(x, r, u, dn), lax.scatter_add(x, r, u, dn, mode="clip"),
                lax.scatter_mul(x, r, u, dn), lax.scatter_min(x, r, u, dn),
                lax.scatter_max(x, r, u, dn, mode=Mode.CLIP),
                lax.scatter_add(fx, r, fu, dn), lax.scatter_max(fx, r, fu, dn),
                lax.scatter(x, q, lax.slice(u, (0, 0), (2, 4)), dn, unique_indices=True,
                            indices_are_sorted=False),
                lax.scatter(x, r, u, dn, mode=Mode.PROMISE_IN_BOUNDS)]
    outs = run(f, X, F, rows, upd, fupd, uniq)
    r = rows[:, 0]
    refs = [_np_scatter_rows(X, r, upd, np.add, "fill"),
            _np_scatter_rows(X, r, upd, np.add, "clip"),
            _np_scatter_rows(X, r, upd, np.multiply, "fill"),
            _np_scatter_rows(X, r, upd, np.minimum, "fill"),
            _np_scatter_rows(X, r, upd, np.maximum, "clip"),
            None, _np_scatter_rows(F, r, fupd, np.maximum, "fill"),
            _np_scatter_rows(X, uniq[:, 0], upd[:2], None, "fill")]
    check(outs[:5], refs[:5])
    # Float addition order differs with duplicates: compare with a tolerance.
    np.testing.assert_allclose(outs[5], _np_scatter_rows(F, r, fupd, np.add, "fill"),
                               rtol=1e-6, atol=1e-6)
    check(outs[6:8], refs[6:8])
    # Plain scatter with duplicate rows: one of the updates wins (XLA leaves it open).
    y = outs[8]
    for row in range(3):
        cands = [upd[k] for k in range(6) if r[k] == row]
        assert any((y[row] == c).all() for c in cands) if cands else (y[row] == X[row]).all()


def test_scatter_with_batching_dims_and_scatter_apply():
    b_idx = np.array([[[3], [0]], [[1], [1]], [[2], [0]]], np.int32)
    upd = RNG.integers(1, 9, (3, 2)).astype(np.int32)
    dn = SDN(update_window_dims=(), inserted_window_dims=(1,), scatter_dims_to_operand_dims=(1,),
             operand_batching_dims=(0,), scatter_indices_batching_dims=(0,))
    pts = np.array([[0, 1], [2, 3], [0, 1]], np.int32)
    pdn = SDN(update_window_dims=(), inserted_window_dims=(0, 1),
              scatter_dims_to_operand_dims=(0, 1))

    def f(x, bi, u, p):
        return [lax.scatter_add(x, bi, u, dn),
                lax.scatter_apply(x, p, lambda v: v * 10 + 1, pdn, update_shape=(3,))]
    outs = run(f, X, b_idx, upd, pts)
    ref = X.copy()
    for bb in range(3):
        for k in range(2):
            ref[bb, b_idx[bb, k, 0]] += upd[bb, k]
    check(outs[:1], [ref])
    # The update function runs once per index: (0, 1), picked twice, gets it twice.
    applied = X.copy()
    for i, j in pts:
        applied[i, j] = applied[i, j] * 10 + 1
    check(outs[1:], [applied])


def test_reduce_precision_and_bitcast_convert_type():
    f32 = np.array([1.0, 1.0 + 2 ** -10, 3.14159265, -65504.0, 1e-8, np.inf], np.float32)
    u8 = RNG.integers(0, 256, (2, 4)).astype(np.uint8)

    def f(x, y):
        return [lax.reduce_precision(x, 5, 10), lax.reduce_precision(x, 8, 7),
                lax.bitcast_convert_type(x, np.int32), lax.bitcast_convert_type(x, np.uint16),
                lax.bitcast_convert_type(y, np.float32)]
    outs = run(f, f32, u8)
    import ml_dtypes
    refs = [f32.astype(np.float16).astype(np.float32),
            f32.astype(ml_dtypes.bfloat16).astype(np.float32),
            f32.view(np.int32), f32.view(np.uint16).reshape(6, 2), u8.view(np.float32)[:, 0]]
    check(outs, refs)


def test_front_end_params_follow_jax():
    def f(x, i):
        lax.gather(x, i, _rows_dn(), (1, 4), mode="clip")
        lax.scatter_add(x, i, lax.slice(x, (0, 0), (2, 4)),
                        SDN((1,), (0,), (0,)))
        return lax.pad(x, 0, ((1, 1, 0), (0, 0, 0)))
    closed = lax.make_jaxpr(f)(X, np.zeros((2, 1), np.int32))
    eqns = {e.primitive.name: e.params for e in closed.eqns}
    assert set(eqns["gather"]) == {"dimension_numbers", "slice_sizes", "indices_are_sorted",
                                   "unique_indices", "mode", "fill_value"}
    assert eqns["gather"]["mode"] is Mode.CLIP
    assert set(eqns["scatter-add"]) == {"dimension_numbers", "indices_are_sorted",
                                        "unique_indices", "mode", "update_jaxpr",
                                        "update_consts"}
    assert [e.primitive.name for e in eqns["scatter-add"]["update_jaxpr"].eqns] == ["add"]
    assert eqns["pad"] == {"padding_config": ((1, 1, 0), (0, 0, 0))}
    with pytest.raises(ValueError, match="unknown gather/scatter mode"):
        Mode.from_any("wrap")
