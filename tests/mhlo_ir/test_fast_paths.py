"""The builder's fast paths (issue #13) check what the generic path checks: a reduction, a
large constant or a region's return built the second time with the same types takes the
memoised path, and must still refuse what the first build refuses, and still compute what
numpy computes."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import OpBuildError, f32, i32, tensor


def _fn(*types):
    m = hlo.Module("m")
    f = m.add_function("main", list(types))
    return m, f, f.builder()


def test_a_repeated_reduction_still_checks_its_body():
    m, f, b = _fn(tensor((4, 3), f32))
    x, = f.arguments
    zero = b.constant(np.float32(0))
    good = b.reduce(x, zero, [1], lambda r, a, c: r.add(a, c))
    # Same operand types and dimensions (the memo's key), a body of the wrong type.
    with pytest.raises(OpBuildError, match="'reduce'.*body returns.*tensor<i32>"):
        b.reduce(x, zero, [1], lambda r, a, c: r.convert(r.add(a, c), i32))
    # ... and of the wrong arity.
    with pytest.raises(OpBuildError, match="reduce"):
        b.reduce(x, zero, [1], lambda r, a: a)
    again = b.reduce(x, zero, [1], lambda r, a, c: r.maximum(a, c))
    b.return_(good, again)
    arr = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    s, mx = verify.run(m, arr)
    np.testing.assert_array_equal(s, arr.sum(1))
    np.testing.assert_array_equal(mx, np.maximum(arr.max(1), 0))  # the init takes part


def test_a_repeated_reduction_still_checks_its_dimensions_and_inits():
    m, f, b = _fn(tensor((4, 3), f32), tensor((), i32))
    x, k = f.arguments
    zero = b.constant(np.float32(0))
    b.reduce(x, zero, [0], lambda r, a, c: r.add(a, c))
    with pytest.raises(OpBuildError, match="dimension 2 is out of range"):
        b.reduce(x, zero, [2], lambda r, a, c: r.add(a, c))
    with pytest.raises(OpBuildError, match="init_values"):
        b.reduce(x, k, [0], lambda r, a, c: r.add(a, c))


def test_large_constants_of_one_type_keep_their_own_values():
    m, f, b = _fn()
    arrays = [np.arange(64, dtype=np.float32) * k for k in (1, -1, 0.5)]
    outs = [b.constant(a) for a in arrays]
    assert len({id(o.attributes) for o in outs}) == 3  # each op its own mapping
    b.return_(*outs)
    for got, want in zip(verify.run(m), arrays):
        np.testing.assert_array_equal(got, want)
    # After the terminator the fast path refuses as the generic one does.
    with pytest.raises(OpBuildError, match="'constant' cannot be added"):
        b.constant(arrays[0])


def test_a_region_return_refuses_what_is_not_a_value():
    m, f, b = _fn(tensor((4,), f32))
    x, = f.arguments
    with pytest.raises(OpBuildError, match=r"'return'.*results\[0\] must be a Value.*int"):
        b.reduce(x, b.constant(np.float32(0)), [0], lambda r, a, c: r.return_(3))


def test_a_function_of_many_results_returns_them_in_order():
    n = 300
    m, f, b = _fn(*[tensor((), i32)] * n)
    b.return_(*reversed(f.arguments))
    assert f.result_types == (tensor((), i32),) * n
    args = [np.int32(i) for i in range(n)]
    assert [int(v) for v in verify.run(m, *args)] == list(reversed(range(n)))


def test_concatenate_checks_each_build_and_computes_numpys():
    m, f, b = _fn(tensor((2, 3), f32), tensor((1, 3), f32), tensor((2, 2), f32))
    x, y, z = f.arguments
    first = b.concatenate([x, y], 0)
    second = b.concatenate([x, y, x], 0)
    one = b.concatenate([x], 1)
    with pytest.raises(OpBuildError, match="'concatenate'.*inputs\\[1\\].*outside dimension 0"):
        b.concatenate([x, z], 0)
    with pytest.raises(OpBuildError, match="concatenate.*dimension"):
        b.concatenate([x, y], True)
    with pytest.raises(OpBuildError, match="dimension 2 is out of range"):
        b.concatenate([x, y], 2)
    b.return_(first, second, one, b.concatenate([x, z], 1))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = -np.arange(3, dtype=np.float32).reshape(1, 3)
    d = np.ones((2, 2), np.float32)
    got = verify.run(m, a, c, d)
    for g, want in zip(got, [np.concatenate([a, c]), np.concatenate([a, c, a]), a,
                             np.concatenate([a, d], 1)]):
        np.testing.assert_array_equal(g, want)


def test_repeated_scalar_constants_keep_their_exact_values():
    # Memoised by class and bits, never by equality: -0.0 == 0.0, True == 1 == 1.0.
    m, f, b = _fn()
    outs = [b.constant(v) for v in (0.0, -0.0, 0.0, np.float32(-0.0), np.float32(0.0),
                                    1, True, 1.0, np.int8(1), np.float16(1), float("nan"))]
    assert outs[0].attributes is outs[2].attributes        # the repeat shares its attribute
    assert outs[0].attributes is not outs[1].attributes
    b.return_(*outs)
    types = [o.type for o in outs]
    assert types == [tensor((), t) for t in (f32, f32, f32, f32, f32, i32, hlo.i1, f32,
                                              hlo.i8, hlo.f16, f32)]
    got = verify.run(m)
    assert [np.signbit(g) for g in got[:5]] == [False, True, False, True, False]
    assert [g.item() for g in got[5:10]] == [1, True, 1.0, 1, 1.0]
    assert np.isnan(got[10])
    # A value that does not fit is refused each time, not remembered.
    for _ in range(2):
        with pytest.raises(OpBuildError, match="does not fit in i32"):
            b.constant(2**40)


def _array_cases(rng):
    """Arrays of every element type: splats, at most 16 elements, larger ones, views that
    are not contiguous, and 0.0/-0.0 splats (equal values, different bits)."""
    from mhlo_ir.dtypes import ALL_ELEMENT_TYPES
    for et in ALL_ELEMENT_TYPES:
        dt = et.dtype
        for shape in ((), (1,), (3,), (4, 4), (5, 7), (0, 3)):
            n = int(np.prod(shape))
            # Values of the type's own range: from bytes of one small random number each.
            flat = rng.integers(0, 2, size=n).astype(dt) if dt.kind != "b" else \
                rng.integers(0, 2, size=n).astype(bool)
            arr = flat.reshape(shape)
            yield arr
            if n:
                yield np.full(shape, arr.reshape(-1)[0], dt)
            if arr.ndim == 2 and n:
                yield arr.T
        if dt.kind == "f" or dt.kind == "c":
            yield np.zeros((4, 8), dt)
            yield -np.zeros((4, 8), dt)


def test_numpy_array_constants_are_exactly_those_of_the_general_path():
    from mhlo_ir.dense import DenseElementsAttr
    m, f, b = _fn()
    checked = 0
    for arr in _array_cases(np.random.default_rng(0)):
        got = b.constant(arr).attributes["value"]
        want = DenseElementsAttr.from_array(arr)
        assert (got.type, got.data, got.splat) == (want.type, want.data, want.splat), arr
        checked += 1
    assert checked > 300


def test_numpy_array_constants_keep_their_bits_through_jaxlib():
    # Splats of 0.0 and -0.0 are equal but keyed apart; a byte-swapped array (the general
    # path) gives the same constant as its native twin; repeats share their attribute.
    m, f, b = _fn()
    zero, negzero = np.zeros((3, 4), np.float32), -np.zeros((3, 4), np.float32)
    small = np.arange(6, dtype=np.int16).reshape(2, 3) - 3
    swapped = small.astype(">i2")
    big = np.arange(40, dtype=np.float32).reshape(5, 8)[:, ::2]  # a strided view
    outs = [b.constant(a) for a in (zero, negzero, zero, small, swapped, big, small)]
    assert outs[0].attributes is outs[2].attributes
    assert outs[0].attributes is not outs[1].attributes
    assert outs[3].attributes is outs[6].attributes
    b.return_(*outs)
    got = verify.run(m)
    assert not np.signbit(got[0]).any() and np.signbit(got[1]).all()
    for g, want in zip(got[3:], (small, small, big, small)):
        assert g.dtype == want.dtype.newbyteorder("=")
        np.testing.assert_array_equal(g, want)
    with pytest.raises(OpBuildError, match="'constant'.*strings"):
        b.constant(np.array(["a", "b"]))


def test_numpy_scalar_constants_of_every_type_are_keyed_by_their_bits():
    # Each element type's scalars: the memoised constant equals the general path's, and
    # values that compare equal (0.0 and -0.0) or not at all (NaN) are never mixed up.
    from mhlo_ir.dense import DenseElementsAttr
    from mhlo_ir.dtypes import ALL_ELEMENT_TYPES
    m, f, b = _fn()
    for et in ALL_ELEMENT_TYPES:
        dt = et.dtype
        values = [np.zeros((), dt)[()], np.ones((), dt)[()]]
        if et.is_float and dt.name != "float8_e8m0fnu":
            values.append(-np.zeros((), dt)[()])
        if (et.is_float and dt.name not in ("float4_e2m1fn",)) or et.is_complex:
            values.append(np.full((), np.nan, dt)[()])
        for _ in range(2):  # the second round takes the memo's hit path
            for v in values:
                got = b.constant(v).attributes["value"]
                want = DenseElementsAttr.from_array(v)
                assert (got.type, got.data, got.splat) == (want.type, want.data, want.splat), \
                    (et.name, v)


def test_a_reduce_body_named_by_its_op_is_the_function_body_and_computes_numpys():
    """``reduce(..., "maximum")`` builds the region a function body builds, without the body
    call; jaxlib runs both to numpy's answers."""
    ops = (("add", np.add, np.float32, 0), ("multiply", np.multiply, np.int32, 1),
           ("maximum", np.maximum, np.int8, -128), ("minimum", np.minimum, np.float32, np.inf),
           ("and", np.bitwise_and, np.uint8, 255), ("or", np.bitwise_or, np.bool_, False),
           ("xor", np.bitwise_xor, np.int16, 0))
    rng = np.random.default_rng(1)
    for name, ufunc, dtype, identity in ops:
        arr = (rng.integers(-3, 4, (3, 4)) != 0 if dtype is np.bool_ else
               rng.integers(-3, 4, (3, 4))).astype(dtype)
        texts = []
        for body in (name, lambda r, a, c, name=name: getattr(r, name + "_" * (
                name in ("and", "or")))(a, c)):
            m, f, b = _fn(tensor(arr.shape, hlo.dtypes.from_numpy(arr.dtype)))
            x, = f.arguments
            b.return_(b.reduce(x, b.constant(np.array(identity, dtype)), [1], body))
            texts.append(m.to_text())
        assert texts[0] == texts[1], name
        got, = verify.run(m, arr)
        np.testing.assert_array_equal(got, ufunc.reduce(arr, axis=1))


def test_a_reduce_body_named_by_its_op_is_checked():
    m, f, b = _fn(tensor((4, 3), f32), tensor((4, 3), f32))
    x, y = f.arguments
    zero = b.constant(np.float32(0))
    with pytest.raises(OpBuildError, match="'reduce'.*'exponential' is not a binary elementwise"):
        b.reduce(x, zero, [1], "exponential")
    with pytest.raises(OpBuildError, match="'reduce'.*'compare' is not a binary elementwise"):
        b.reduce(x, zero, [1], "compare")
    with pytest.raises(OpBuildError, match="'reduce'.*'nope' is not a binary elementwise"):
        b.reduce(x, zero, [1], "nope")
    with pytest.raises(OpBuildError, match="'reduce'.*combines two scalars of one type; this "
                                           "region takes \\(tensor<f32>, tensor<f32>, "):
        b.reduce([x, y], [zero, zero], [1], "add")
    # An op that takes the scalars but gives another type (a comparison would; complex's
    # parts do): refused, as the function body returning it is.
    with pytest.raises(OpBuildError, match="'reduce'"):
        b.reduce(x, zero, [1], "complex")


def test_a_named_reduction_built_again_refuses_what_the_first_build_refuses():
    """A reduce of one input whose body is named takes remembered checks the second time its
    input type, init type, dimensions and body name recur: any of them changed is checked
    afresh (a bool dimension is not the int it equals), and the terminator still ends the
    block."""
    m, f, b = _fn(tensor((4, 3), f32), tensor((4, 3), i32))
    x, k = f.arguments
    zero = b.constant(np.float32(0))
    first = b.reduce(x, zero, [1], "add")
    again = b.reduce(x, zero, (1,), "add")
    assert again.regions[0] is not first.regions[0]  # a region of its own
    assert again.regions[0].parent is again and again.parent is f.entry_block
    with pytest.raises(OpBuildError, match="dimensions: expected an integer, got bool True"):
        b.reduce(x, zero, (True,), "add")
    with pytest.raises(OpBuildError, match="dimensions: expected an integer, got float"):
        b.reduce(x, zero, [1.0], "add")
    with pytest.raises(OpBuildError, match="dimension 2 is out of range"):
        b.reduce(x, zero, [2], "add")
    with pytest.raises(OpBuildError, match=r"init_values\[0\] must be tensor<i32>"):
        b.reduce(k, zero, [1], "add")
    with pytest.raises(OpBuildError, match="'exponential' is not a binary elementwise"):
        b.reduce(x, zero, [1], "exponential")
    mx = b.reduce(x, zero, [0], "maximum")
    mx2 = b.reduce(x, zero, [0], "maximum", location=hlo.NameLoc("here"))
    assert mx2.location == hlo.NameLoc("here")
    b.return_(first, again, mx, mx2)
    with pytest.raises(OpBuildError, match="'reduce' cannot be added"):
        b.reduce(x, zero, [1], "add")
    m.verify()
    arr = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    s1, s2, m1, m2 = verify.run(m, arr, np.zeros((4, 3), np.int32))
    for got, want in ((s1, arr.sum(1)), (s2, arr.sum(1)), (m1, np.maximum(arr.max(0), 0)),
                      (m2, np.maximum(arr.max(0), 0))):
        np.testing.assert_array_equal(got, want)


def test_any_two_scalar_region_may_be_named_by_its_op():
    """reduce_window and scatter take a named body as reduce does: the same text as the
    function body, numpy's answers through jaxlib."""
    arr = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    texts = []
    for body in ("maximum", lambda r, a, c: r.maximum(a, c)):
        m, f, b = _fn(tensor((3, 4), f32))
        x, = f.arguments
        b.return_(b.reduce_window(x, b.constant(np.float32(-np.inf)), [1, 2], body))
        texts.append(m.to_text())
    assert texts[0] == texts[1]
    got, = verify.run(m, arr)
    np.testing.assert_array_equal(got, np.maximum(arr[:, :-1], arr[:, 1:]))
    m, f, b = _fn(tensor((3, 4), f32))
    x, = f.arguments
    with pytest.raises(OpBuildError, match="'map'.*named by its op .'add'. combines two "
                                           "scalars of one type; this region takes "
                                           r"\(tensor<f32>\)"):
        b.map([x], "add")


def test_a_named_body_is_the_function_body_where_the_result_type_differs_too():
    """map's region may return another type: ``"complex"`` builds what the lambda builds;
    a str subclass names an op as a str does."""
    texts = []
    for body in ("complex", np.str_("complex"), lambda r, a, c: r.complex(a, c)):
        m, f, b = _fn(tensor((3,), f32))
        x, = f.arguments
        b.return_(b.map([x, x], body))
        m.verify()
        texts.append(m.to_text())
    assert texts[0] == texts[1] == texts[2]
    arr = np.float32([1.5, -2, 0])
    got, = verify.run(m, arr)
    np.testing.assert_array_equal(got, arr + 1j * arr)
    # A reduction's body must give the accumulator's type: refused as the lambda's is.
    m, f, b = _fn(tensor((3,), f32))
    x, = f.arguments
    with pytest.raises(OpBuildError, match="'reduce'"):
        b.reduce(x, b.constant(np.float32(0)), [0], "complex")
