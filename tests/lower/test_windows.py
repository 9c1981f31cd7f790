"""Generic and windowed reductions (reduce, reduce_window and its sum/max/min forms), pooling
gradients (select_and_scatter, select_and_scatter_add, select_and_gather_add), and the small
additions beside them (scatter-sub, rng_uniform, argmax/argmin of complex numbers): traced
with lower.lax, lowered, run by jaxlib and compared with numpy; then JAX's own jaxprs for the
same programs, lowered by us, against jax.jit.

Values are chosen so the comparisons are exact: integers, small integer-valued floats, and
distinct values wherever a window picks its maximum (a tie would make the pick depend on the
order of the window walk).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from lower.lax import ScatterDimensionNumbers as SDN
from tests.lower.harness import check, ops, run

RNG = np.random.default_rng(11)
X = RNG.permutation(20).astype(np.float32).reshape(4, 5) - 7  # distinct: no ties in a window
XI = RNG.integers(-5, 6, (4, 5)).astype(np.int32)


# -- numpy references ------------------------------------------------------------------------

def _windows(shape, dims, strides, pads, base=None, wdil=None):
    """For every window of the grid: its output index and the positions of its elements in
    the padded, base-dilated input, in row-major window order."""
    rank = len(shape)
    base = base or (1,) * rank
    wdil = wdil or (1,) * rank
    full = [(n - 1) * b + 1 + lo + hi for n, b, (lo, hi) in zip(shape, base, pads)]
    grid = [(f - ((w - 1) * d + 1)) // s + 1 if f >= (w - 1) * d + 1 else 0
            for f, w, d, s in zip(full, dims, wdil, strides)]
    for out in itertools.product(*map(range, grid)):
        yield out, [tuple(o * s + k * d for o, s, k, d in zip(out, strides, ks, wdil))
                    for ks in itertools.product(*map(range, dims))]


def _dilate_pad(x, fill, pads, base=None):
    """``x`` base-dilated and padded (non-negative pads) with ``fill``."""
    base = base or (1,) * x.ndim
    shape = [(n - 1) * b + 1 + lo + hi for n, b, (lo, hi) in zip(x.shape, base, pads)]
    y = np.full(shape, fill, x.dtype)
    y[tuple(slice(lo, lo + (n - 1) * b + 1, b)
            for n, b, (lo, _) in zip(x.shape, base, pads))] = x
    return y


def reduce_window_ref(xs, inits, fn, dims, strides, pads, base=None, wdil=None):
    """Fold ``fn(accs, elems) -> accs`` over each window, holes and padding holding the
    inits."""
    ys = [_dilate_pad(x, i, pads, base) for x, i in zip(xs, inits)]
    grid = list(_windows(xs[0].shape, dims, strides, pads, base, wdil))
    shape = tuple(np.max([o for o, _ in grid], axis=0) + 1) if grid else ()
    outs = [np.zeros(shape, x.dtype) for x in xs]
    for out, positions in grid:
        accs = tuple(np.asarray(i, x.dtype) for i, x in zip(inits, xs))
        for p in positions:
            accs = tuple(np.asarray(a, x.dtype) for a, x in zip(fn(accs, [y[p] for y in ys]),
                                                               xs))
        for o, a in zip(outs, accs):
            o[out] = a
    return outs


def select_and_scatter_ref(x, source, select, init, combine, dims, strides, pads, fill):
    """Each window's selected element (``select(current, candidate)`` keeps current)
    receives the window's source value, combined from ``init``."""
    y = _dilate_pad(x, fill, pads)
    out = np.full(y.shape, init, source.dtype)
    for out_idx, positions in _windows(x.shape, dims, strides, pads):
        pick = positions[0]
        for p in positions[1:]:
            if not select(y[pick], y[p]):
                pick = p
        out[pick] = combine(out[pick], source[out_idx])
    return out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, pads))]


# -- reduce ------------------------------------------------------------------------------------

def test_reduce_generic_several_operands_and_a_region_constant():
    def f(x, xi):
        pair = lax.reduce((x, xi), (0.0, -100),
                          lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])), (1,))
        # max over min(x, 2.5): the 2.5 is a constant array inside the region
        clip = lax.reduce(x, -np.inf, lambda a, b: lax.max(a, lax.min(b, lax.reshape(
            lax.mul(b, 0.0) + np.array([2.5], np.float32), ()))), (0,))
        both = lax.reduce(xi, 1, lambda a, b: a * b, (0, 1))
        return [*pair, clip, both]
    outs = run(f, X, XI)
    check(outs, [X.sum(1), XI.max(1), np.minimum(X, 2.5).max(0), np.prod(XI, dtype=np.int32)])


# -- reduce_window ---------------------------------------------------------------------------

def test_reduce_window_generic_with_dilations_and_padding():
    dims, strides, pads, base, wdil = (2, 2), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2)

    def f(xi):
        return lax.reduce_window(xi, 1, lambda a, b: a * b, dims, strides, pads, base, wdil)
    (out,) = run(f, XI)
    (ref,) = reduce_window_ref([XI], [np.int32(1)], lambda a, e: (a[0] * e[0],), dims, strides,
                               pads, base, wdil)
    check([out], [ref])


def test_reduce_window_variadic_same_padding():
    def f(x, xi):
        return lax.reduce_window((x, xi), (0.0, np.int32(-100)),
                                 lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])),
                                 (2, 3), (1, 2), "SAME")
    outs = run(f, X, XI)
    pads = lax.padtype_to_pads(X.shape, (2, 3), (1, 2), "SAME")
    assert pads == ((0, 1), (1, 1))
    refs = reduce_window_ref([X, XI], [np.float32(0), np.int32(-100)],
                             lambda a, e: (a[0] + e[0], max(a[1], e[1])), (2, 3), (1, 2), pads)
    check(outs, refs)


def test_reduce_window_sum_max_min():
    pads = ((1, 1), (0, 1))

    def f(x, xi):
        return [lax.reduce_window_sum(xi, (2, 2), (1, 2), pads),
                lax.reduce_window_max(x, (3, 2), (1, 1), "SAME", window_dilation=(1, 2)),
                lax.reduce_window_min(xi, (2, 1), (2, 1), "VALID", base_dilation=(2, 1))]
    outs = run(f, X, XI)
    same = lax.padtype_to_pads(X.shape, (3, 3), (1, 1), "SAME")
    refs = [reduce_window_ref([XI], [np.int32(0)], lambda a, e: (a[0] + e[0],), (2, 2),
                              (1, 2), pads)[0],
            reduce_window_ref([X], [np.float32(-np.inf)], lambda a, e: (max(a[0], e[0]),),
                              (3, 2), (1, 1), same, wdil=(1, 2))[0],
            reduce_window_ref([XI], [np.iinfo(np.int32).max], lambda a, e: (min(a[0], e[0]),),
                              (2, 1), (2, 1), ((0, 0), (0, 0)), base=(2, 1))[0]]
    check(outs, refs)


# -- pooling gradients -----------------------------------------------------------------------

@pytest.mark.parametrize("prim", ["ge", "le"])
def test_select_and_scatter_add(prim):
    dims, strides, pads = (2, 3), (1, 2), ((1, 0), (1, 1))
    grid = reduce_window_ref([X], [np.float32(0)], lambda a, e: a, dims, strides, pads)[0].shape
    src = np.arange(1, 1 + np.prod(grid), dtype=np.float32).reshape(grid)
    srci = src.astype(np.int32)

    def f(s, si, x, xi):
        return [lax.select_and_scatter_add(s, x, prim, dims, strides, pads),
                lax.select_and_scatter_add(si, xi, prim, dims, strides, pads)]
    outs = run(f, src, srci, X, X.astype(np.int32))
    select = (lambda a, b: a >= b) if prim == "ge" else (lambda a, b: a <= b)
    fill = -np.inf if prim == "ge" else np.inf
    ref = select_and_scatter_ref(X, src, select, 0, lambda a, b: a + b, dims, strides, pads,
                                 fill)
    check(outs, [ref, ref.astype(np.int32)])


def test_select_and_scatter_add_integer_ties_pick_the_first():
    x = np.array([[3, 3, 1], [3, 2, 3]], np.int32)
    src = np.array([[10, 20]], np.int32)
    (out,) = run(lambda s, a: lax.select_and_scatter_add(s, a, "ge", (2, 2), (1, 1), "VALID"),
                 src, x)
    check([out], [np.array([[10, 20, 0], [0, 0, 0]], np.int32)])


def test_select_and_scatter_add_negative_padding_stays_on_the_op():
    """Negative pads crop (jax 0.10.2's own lowering fails here: it slices from -1)."""
    x = RNG.permutation(30).astype(np.float32).reshape(5, 6)
    pads = ((-1, 1), (2, -1))
    src = np.arange(1, 13, dtype=np.float32).reshape(4, 3)
    (out,) = run(lambda s, a: lax.select_and_scatter_add(s, a, "ge", (2, 2), (1, 2), pads),
                 src, x)
    ref = np.zeros_like(x)
    ref[1:, :5] = select_and_scatter_ref(x[1:, :5], src, lambda a, b: a >= b, 0,
                                         lambda a, b: a + b, (2, 2), (1, 2),
                                         ((0, 1), (2, 0)), -np.inf)
    check([out], [ref])


def test_select_and_scatter_generic():
    dims, strides = (2, 2), (2, 1)
    src = np.arange(1, 9, dtype=np.float32).reshape(2, 4)

    def f(x, s):
        return [lax.select_and_scatter(x, lax.ge, dims, strides, "VALID", s, 0.0, lax.add),
                lax.select_and_scatter(x, lax.lt, dims, strides, "VALID", s, -1.0, lax.max)]
    outs = run(f, X, src)
    none = ((0, 0), (0, 0))
    check(outs, [
        select_and_scatter_ref(X, src, lambda a, b: a >= b, 0, lambda a, b: a + b, dims,
                               strides, none, 0),
        select_and_scatter_ref(X, src, lambda a, b: a < b, -1, max, dims, strides, none, 0)])


def test_select_and_scatter_of_scalars_goes_through_rank_1():
    """XLA aborts the whole process on a select_and_scatter of rank 0 (jax's own lowering
    too): a scalar is one window of one element of rank 1. The op's rank is checked before
    compiling, so a regression fails here instead of killing the test run."""
    def f(s, x, si, xi):
        return [lax.select_and_scatter_add(s, x, "ge", (), (), ()),
                lax.select_and_scatter(x, lax.ge, (), (), (), s, 1.0, lax.add),
                lax.select_and_scatter_add(si, xi, "le", (), (), "SAME")]
    args = (np.float32(3), np.float32(-2), np.int8(5), np.int8(1))
    m = lower_jaxpr_to_module("scalars", lax.make_jaxpr(f)(*args)).module
    ranks = [len(op.operands[0].type.shape) for op in ops(m, "select_and_scatter")]
    assert ranks == [1, 1, 1]
    check(verify.run(m, *args), [np.float32(3), np.float32(4), np.int8(5)])


def test_window_regions_may_not_close_over_traced_values():
    """A combiner reading a value of the enclosing function cannot be a region: refused when
    tracing, with what to do, as JAX refuses it (it was a KeyError when lowering)."""
    def f(x, scale):
        return lax.reduce(x, np.float32(0), lambda a, b: a + b * scale, (0,))
    with pytest.raises(TypeError, match="closes over a traced value .* as an operand"):
        lax.make_jaxpr(f)(X, np.float32(2))
    with pytest.raises(TypeError, match="select closes over"):
        lax.make_jaxpr(lambda x, s, t: lax.select_and_scatter(
            x, lambda a, b: a >= b + t, (2, 2), (1, 1), "VALID", s, 0.0, lax.add))(
                X, X[:3, :4], np.float32(1))


_GATHER_CASES = [("ge", (2, 2), (1, 1), ((0, 1), (1, 0)), None, None),
                 ("le", (2, 3), (2, 1), "SAME", (2, 1), (1, 2)),
                 ("ge", (1, 2), (1, 3), ((-1, 0), (0, 2)), None, None)]


def _gather_refs(x, t):
    refs = []
    for prim, dims, strides, pads, base, wdil in _GATHER_CASES:
        spans = [(w - 1) * (wdil or (1, 1))[i] + 1 for i, w in enumerate(dims)]
        pads = lax.padtype_to_pads(x.shape, spans, strides, pads)
        if pads[0][0] < 0:  # the numpy reference pads only: crop first
            x, t, pads = x[-pads[0][0]:], t[-pads[0][0]:], ((0, pads[0][1]), pads[1])
        better = (lambda a, b: a >= b) if prim == "ge" else (lambda a, b: a <= b)
        ident = np.asarray(-np.inf if prim == "ge" else np.inf, x.dtype)
        refs.append(reduce_window_ref(
            [x, t], [ident, np.zeros((), t.dtype)],
            lambda a, e, better=better: a if better(a[0], e[0]) else tuple(e),
            dims, strides, pads, base, wdil)[1])
    return refs


def _gather_all(t, x):
    return [lax.select_and_gather_add(t, x, *c) for c in _GATHER_CASES]


def test_select_and_gather_add():
    t = (X * 10 + 3).astype(np.float32)
    check(run(_gather_all, t, X), _gather_refs(X, t))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32"])
def test_select_and_gather_add_without_variadic_reduce_window(dtype):
    """The GPU rule (packed words up to 32 bits, an unrolled fold beyond), lowered for cuda
    and run here: the same picks as the variadic form, -inf windows included."""
    import ml_dtypes
    dt = np.dtype(getattr(ml_dtypes, dtype, None) or dtype)
    x = X.copy()
    x[0, :3] = -np.inf
    if dt.kind == "i":
        x = np.where(np.isinf(x), -100, x)
    x, t = x.astype(dt), (X * 10 + 3).astype(dt)
    gpu = run(_gather_all, t, x, platform="cuda")
    check(gpu, run(_gather_all, t, x))
    if dt.kind != "i":
        check(gpu, _gather_refs(x, t))


# -- scatter-sub, rng_uniform, complex argmax ---------------------------------------------------

def test_scatter_sub():
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
             scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [2], [0], [7]], np.int32)  # a repeat, and one out of bounds (dropped)
    upd = np.arange(20, dtype=np.int32).reshape(4, 5)
    (out,) = run(lambda x, i, u: lax.scatter_sub(x, i, u, dn), XI, idx, upd)
    ref = XI.copy()
    np.subtract.at(ref, idx[:3, 0], upd[:3])
    check([out], [ref])


def test_rng_uniform():
    lo, hi = np.float32(-2), np.float32(3)
    (f32,) = run(lambda a, b: lax.rng_uniform(a, b, (64, 3)), lo, hi)
    assert f32.shape == (64, 3) and f32.dtype == np.float32
    assert (f32 >= lo).all() and (f32 < hi).all() and np.unique(f32).size > 100
    (i32,) = run(lambda a: lax.rng_uniform(a, np.int32(4), (50,)), np.int32(1))
    assert i32.dtype == np.int32 and set(np.unique(i32)) <= {1, 2, 3}


def test_argmax_argmin_of_complex_numbers_order_lexicographically():
    z = np.array([[1 + 2j, 1 + 1j, 2 - 1j, 0j, np.inf - 1j],
                  [1 + 3j, 2 - 5j, 2 - 1j, np.nan + 0j, -np.inf - 1j],
                  [-1 + 9j, 2 - 4j, 1j, 1 + 1j, -np.inf - 2j]], np.complex64)
    outs = run(lambda a: [lax.argmax(a, 0), lax.argmin(a, 0), lax.argmax(a, 1)], z)
    # numpy orders complex numbers lexicographically and returns the first NaN
    check(outs, [np.argmax(z, 0).astype(np.int32), np.argmin(z, 0).astype(np.int32),
                 np.argmax(z, 1).astype(np.int32)])


# -- against JAX ---------------------------------------------------------------------------------

def _jax():
    return pytest.importorskip("jax")


def _run_jax_jaxpr(fn, *args):
    jax = _jax()
    closed = jax.make_jaxpr(fn)(*args)
    return verify.run(lower_jaxpr_to_module("jax_fn", closed).module, *args)


def _eqn(closed, name):
    eqns = [e for e in closed.jaxpr.eqns if e.primitive.name == name]
    assert eqns, f"no {name} in {closed}"
    return eqns[0]


def _same_params(ours, theirs, skip=("jaxpr", "computation", "consts", "select_jaxpr",
                                     "scatter_jaxpr", "select_consts", "scatter_consts")):
    assert set(ours.params) == set(theirs.params), (ours.params, theirs.params)
    for k, v in theirs.params.items():
        if k in skip:
            continue
        mine = ours.params[k]
        if k == "select_prim":
            assert mine.name == v.name
        else:
            assert mine == v, (k, mine, v)


def test_params_match_jax():
    jax = _jax()
    jlax = jax.lax
    jnp = jax.numpy
    from jax._src.lax import windowed_reductions as wr
    t = X + 1

    def ge(a, b):
        return a >= b

    pairs = {
        "reduce": (lambda x, xi: lax.reduce((x, xi), (0.0, 0), lambda a, b: (
            a[0] + b[0], lax.max(a[1], b[1])), (1,)),
            lambda x, xi: jlax.reduce((x, xi), (0.0, 0), lambda a, b: (
                a[0] + b[0], jlax.max(a[1], b[1])), (1,)), (X, XI)),
        "reduce_window": (
            lambda x: lax.reduce_window(x, 1.0, lambda a, b: a * b, (2, 2), (1, 2), "SAME",
                                        (1, 2), (2, 1)),
            lambda x: jlax.reduce_window(x, 1.0, lambda a, b: a * b, (2, 2), (1, 2), "SAME",
                                         (1, 2), (2, 1)), (X,)),
        "reduce_window_max": (
            lambda x: lax.reduce_window_max(x, (2, 3), (1, 2), "SAME"),
            lambda x: jlax.reduce_window(x, -jnp.inf, jlax.max, (2, 3), (1, 2), "SAME"), (X,)),
        "select_and_scatter_add": (
            lambda s, x: lax.select_and_scatter_add(s, x, "ge", (2, 2), (1, 1),
                                                    ((0, 1), (1, 0))),
            lambda s, x: wr._select_and_scatter_add(s, x, jlax.ge_p, (2, 2), (1, 1),
                                                    ((0, 1), (1, 0))), (X, X)),
        "select_and_gather_add": (
            lambda t, x: lax.select_and_gather_add(t, x, "le", (2, 2), (1, 1), ((0, 1), (1, 0)),
                                                   (1, 1), (1, 2)),
            lambda t, x: wr._select_and_gather_add(t, x, jlax.le_p, (2, 2), (1, 1),
                                                   ((0, 1), (1, 0)), (1, 1), (1, 2)), (t, X)),
        "select_and_scatter": (
            lambda x, s: lax.select_and_scatter(x, lax.ge, (2, 2), (2, 1), "VALID", s, 0.0,
                                                lax.add),
            lambda x, s: wr._select_and_scatter(x, ge, (2, 2), (2, 1), ((0, 0), (0, 0)), s,
                                                np.float32(0), jlax.add),
            (X, np.ones((2, 4), np.float32))),
        "rng_uniform": (lambda a, b: lax.rng_uniform(a, b, (2, 3)),
                        lambda a, b: jlax.rng_uniform(a, b, (2, 3)),
                        (np.float32(0), np.float32(1))),
    }
    for name, (ours, theirs, args) in pairs.items():
        mine = _eqn(lax.make_jaxpr(ours)(*args), name)
        jaxs = _eqn(jax.make_jaxpr(theirs)(*args), name)
        _same_params(mine, jaxs)
        assert [v.aval.shape for v in mine.outvars] == [v.aval.shape for v in jaxs.outvars]


def _against_jit(fn, *args):
    jax = _jax()
    got = _run_jax_jaxpr(fn, *args)
    want = jax.jit(fn)(*args)
    want = want if isinstance(want, (list, tuple)) else [want]
    check(got, [np.asarray(w) for w in want])


@pytest.mark.parametrize("padding", ["VALID", "SAME"])
def test_jax_max_and_min_pool_gradients(padding):
    jax = _jax()
    jlax, jnp = jax.lax, jax.numpy
    w = np.arange(1, 13, dtype=np.float32)

    def loss(x):
        mx = jlax.reduce_window(x, -jnp.inf, jlax.max, (2, 3), (1, 2), padding)
        mn = jlax.reduce_window(x, jnp.inf, jlax.min, (3, 2), (2, 1), padding)
        return (mx * w[:mx.size].reshape(mx.shape)).sum() + (mn * mn).sum()
    closed = jax.make_jaxpr(jax.grad(loss))(X)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    assert names.count("select_and_scatter_add") == 2, names
    _against_jit(jax.grad(loss), X)


def test_jax_max_pool_tangents():
    jax = _jax()
    jlax, jnp = jax.lax, jax.numpy

    def pool(x):
        return jlax.reduce_window(x, -jnp.inf, jlax.max, (2, 2), (1, 2), ((1, 0), (0, 1)),
                                  (2, 1), (1, 2))

    def f(x, t):
        return jax.jvp(pool, (x,), (t,))
    closed = jax.make_jaxpr(f)(X, X * 3)
    assert "select_and_gather_add" in [e.primitive.name for e in closed.jaxpr.eqns]
    _against_jit(f, X, X * 3 + 1)


def test_jax_generic_reduce_reduce_window_and_select_and_scatter():
    jax = _jax()
    jlax = jax.lax
    from jax._src.lax import windowed_reductions as wr

    def f(x, xi, s):
        pair = jlax.reduce((x, xi), (0.0, 0), lambda a, b: (a[0] + b[0],
                                                            jlax.max(a[1], b[1])), (1,))
        win = jlax.reduce_window((x, xi), (0.0, 0), lambda a, b: (a[0] + b[0], a[1] * b[1]),
                                 (2, 2), (1, 2), "SAME", (1, 2), (2, 1))
        sas = wr._select_and_scatter(x, lambda a, b: a >= b, (2, 2), (2, 1),
                                     ((0, 0), (0, 0)), s, np.float32(0), jlax.add)
        return [*pair, *win, sas]
    closed = jax.make_jaxpr(f)(X, XI, np.ones((2, 4), np.float32))
    names = {e.primitive.name for e in closed.jaxpr.eqns}
    assert {"reduce", "reduce_window", "select_and_scatter"} <= names, names
    _against_jit(f, X, XI, np.arange(8, dtype=np.float32).reshape(2, 4))


def test_jax_reduce_with_a_captured_array():
    """A reducer closing over a JAX array keeps it in its ClosedJaxpr's consts (jax 0.10.2's
    own lowering asserts on this); we rebuild it inside the region."""
    jax = _jax()
    jlax, jnp = jax.lax, jax.numpy
    c = jnp.array(2.5, jnp.float32)

    def f(x):
        return jlax.reduce(x, -jnp.inf, lambda a, b: jlax.max(a, jlax.min(b, c)), (0,))
    assert _eqn(jax.make_jaxpr(f)(X), "reduce").params["jaxpr"].consts
    check(_run_jax_jaxpr(f, X), [np.minimum(X, 2.5).max(0)])


def test_jax_scatter_sub_and_rng_uniform():
    jax = _jax()
    idx = np.array([0, 2, 0], np.int32)
    upd = np.arange(15, dtype=np.int32).reshape(3, 5)
    _against_jit(lambda x, i, u: x.at[i].subtract(u), XI, idx, upd)
    (u,) = _run_jax_jaxpr(lambda a, b: jax.lax.rng_uniform(a, b, (16, 2)), np.float32(1),
                          np.float32(2))
    assert u.shape == (16, 2) and u.dtype == np.float32 and ((u >= 1) & (u < 2)).all()
