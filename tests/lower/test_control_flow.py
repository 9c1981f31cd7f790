"""Control flow (while, cond, scan): traced with lower.lax, lowered by our rules, run by
jaxlib and compared with plain Python/numpy loops; plus ordered-effect tokens through loops and
branches, batched loop predicates, closures over enclosing traced values, nesting."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from lower import core, lax, lower_jaxpr_to_module
from tests.lower.harness import ordered_effect_identity, walk
from tests.oracle import assert_fixed_point

RNG = np.random.default_rng(4)


def lower(f, *args, **kw):
    return lower_jaxpr_to_module("jit_f", lax.make_jaxpr(f)(*args), **kw).module


def run(f, *args):
    m = lower(f, *args)
    assert_fixed_point(m)
    return verify.run(m, *args)


def op_names(m) -> list:
    return [op.name for fn in m.functions for op in walk(fn)]


# -- while ----------------------------------------------------------------------------------------

def test_while_carries_of_several_dtypes():
    f32 = RNG.uniform(-1, 1, (2, 3)).astype(np.float32)
    i8 = np.array([1, -2, 3], np.int8)
    u32 = np.array([7, 9], np.uint32)
    c64 = np.array([1 + 2j, -1j], np.complex64)

    def f(x, a, u, c):
        def body(s):
            i, x, a, u, c, flag = s
            return (i + 1, x * 2.0, a * np.int8(-1), u + np.uint32(3), c * np.complex64(1j),
                    lax.not_(flag))
        return lax.while_loop(lambda s: s[0] < 5, body, (0, x, a, u, c, True))
    i, x, a, u, c, flag = run(f, f32, i8, u32, c64)
    assert i.dtype == np.int32 and i == 5
    np.testing.assert_array_equal(x, f32 * 32)  # powers of two: exact in f32
    np.testing.assert_array_equal(a, -i8)
    np.testing.assert_array_equal(u, u32 + 15)
    np.testing.assert_array_equal(c, c64 * 1j ** 5)
    assert flag.dtype == np.bool_ and not flag


def test_while_data_dependent_trip_count_and_closed_over_consts():
    # Collatz steps, with the limit and the step from the enclosing function (cond and body
    # constants, threaded through the loop state).
    def f(n, one, limit):
        def body(s):
            k, x = s
            odd = lax.eq(lax.rem(x, 2), one)
            return k + one, lax.select_n(odd, lax.div(x, 2), x * 3 + one)
        return lax.while_loop(lambda s: lax.and_(lax.ne(s[1], one), s[0] < limit), body, (0, n))
    ns = np.array([1, 6, 7, 27], np.int32)
    m = lower(f, ns[0], np.int32(1), np.int32(1000))
    assert_fixed_point(m)
    exe = verify.compile(m)

    def collatz(x):
        k = 0
        while x != 1:
            x, k = (3 * x + 1 if x % 2 else x // 2), k + 1
        return k
    for n in ns:
        k, x = exe(n, np.int32(1), np.int32(1000))
        assert (k, x) == (collatz(int(n)), 1)
    k, x = exe(np.int32(27), np.int32(1), np.int32(10))  # the limit stops it early
    assert k == 10


def _batched_while(x_aval, limit_aval):
    """A ``while`` whose predicate is a vector (as vmap makes it): each element stops on its
    own. Built by hand: the front end asks for a scalar predicate, as JAX's does."""
    cond = lax.make_jaxpr(lambda lim, x: lax.lt(x, lim))(limit_aval, x_aval)
    body = lax.make_jaxpr(lambda x: x + np.int32(1))(x_aval)
    lim, x = core.Var(limit_aval), core.Var(x_aval)
    out = core.Var(x_aval)
    eqn = core.JaxprEqn([lim, x], [out], core.Primitive("while", True),
                        {"cond_jaxpr": cond, "body_jaxpr": body, "cond_nconsts": 1,
                         "body_nconsts": 0})
    return core.ClosedJaxpr(core.Jaxpr([], [lim, x], [out], [eqn]), [])


def test_while_batched_predicate_stops_elementwise():
    aval = core.ShapedArray((5,), np.int32)
    m = lower_jaxpr_to_module("batched", _batched_while(aval, aval)).module
    assert_fixed_point(m)
    x = np.array([0, 3, 9, -4, 2], np.int32)
    lim = np.array([4, 3, 1, 0, 6], np.int32)
    (out,) = verify.run(m, lim, x)
    np.testing.assert_array_equal(out, np.maximum(x, lim))


def test_fori_loop_concrete_bounds_is_scan_traced_bounds_is_while():
    x = np.arange(4, dtype=np.float32)

    def body(i, c):
        return c * 2.0 + lax.convert_element_type(i, np.float32)
    m1 = lower(lambda x: lax.fori_loop(2, 7, body, x), x)
    m2 = lower(lambda x, lo, hi: lax.fori_loop(lo, hi, body, x), x, np.int32(2), np.int32(7))
    assert "while" in op_names(m1) and "dynamic_slice" not in op_names(m1)
    ref = x.copy()
    for i in range(2, 7):
        ref = ref * 2 + i
    (o1,) = verify.run(m1, x)
    (o2,) = verify.run(m2, x, np.int32(2), np.int32(7))
    np.testing.assert_array_equal(o1, ref)
    np.testing.assert_array_equal(o2, ref)
    (empty,) = verify.run(m2, x, np.int32(5), np.int32(3))  # no iteration
    np.testing.assert_array_equal(empty, x)


# -- cond / switch --------------------------------------------------------------------------

def test_cond_two_branches_is_case_with_bool_and_numeric_predicates():
    x = RNG.uniform(-2, 2, (3,)).astype(np.float32)

    def f(p, k, x):
        a = lax.cond(p, lambda v: v * 2.0, lambda v: v - 1.0, x)
        b = lax.cond(k, lambda v, w: (v, w + 1), lambda v, w: (-v, w - 1), x, k)
        return (a, *b)
    m = lower(f, np.bool_(True), np.int32(0), x)
    assert_fixed_point(m)
    assert op_names(m).count("case") == 2 and "if" not in op_names(m)
    exe = verify.compile(m)
    for p in (True, False):
        for k in (0, 3, -2):
            a, b, c = exe(np.bool_(p), np.int32(k), x)
            np.testing.assert_array_equal(a, x * 2 if p else x - 1)
            np.testing.assert_array_equal(b, x if k else -x)
            assert c == (k + 1 if k else k - 1)


def test_switch_three_branches_clamps_out_of_range_index():
    x = np.array([1.5, -2.0], np.float32)
    y = np.int32(10)

    def f(i, x, y):
        branches = [lambda v, w: (v + 1.0, w), lambda v, w: (v * v, w * 2),
                    lambda v, w: (-v, w - 3)]
        return lax.switch(i, branches, x, y)
    m = lower(f, np.int32(0), x, y)
    assert_fixed_point(m)
    exe = verify.compile(m)
    refs = [(x + 1, y), (x * x, y * 2), (-x, y - 3)]
    for i in range(-3, 6):
        a, b = exe(np.int32(i), x, y)
        ra, rb = refs[min(max(i, 0), 2)]  # JAX clamps the index into range
        np.testing.assert_array_equal(a, ra)
        assert b == rb
    # an unsigned index, converted then clamped
    m8 = lower(f, np.uint8(0), x, y)
    exe8 = verify.compile(m8)
    for i in (0, 1, 2, 200):
        a, _ = exe8(np.uint8(i), x, y)
        np.testing.assert_array_equal(a, refs[min(i, 2)][0])


def test_cond_branches_close_over_different_outer_values():
    # Each branch uses its own enclosing values: all become common leading operands.
    x = np.arange(3, dtype=np.float32)

    def f(i, x, a, b):
        return lax.switch(i, [lambda v: v + a, lambda v: v * b, lambda v: a * b + v], x)
    a, b = np.float32(2), np.float32(-3)
    exe = verify.compile(lower(f, np.int32(0), x, a, b))
    for i, ref in enumerate([x + a, x * b, a * b + x]):
        np.testing.assert_array_equal(exe(np.int32(i), x, a, b)[0], ref)


# -- scan ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("unroll", [1, 3, True])
@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
def test_scan_matches_numpy_cumulative(reverse, unroll):
    xi = RNG.integers(-9, 9, (7, 2)).astype(np.int32)
    xf = RNG.uniform(0.5, 1.5, (7,)).astype(np.float32)

    def f(xi, xf):
        def step(c, x):
            s, p, m = c
            a, b = x
            s, p, m = s + a, p * b, lax.max(m, a)
            return (s, p, m), (s, p, lax.reduce_sum(a))
        init = (np.zeros(2, np.int32), np.float32(1), np.full(2, -100, np.int32))
        carry, ys = lax.scan(step, init, (xi, xf), reverse=reverse, unroll=unroll)
        return (*carry, *ys)  # make_jaxpr takes a flat tuple of outputs
    m = lower(f, xi, xf)
    assert_fixed_point(m)
    s, p, mx, cs, cp, rs = verify.run(m, xi, xf)
    oi, of = (xi[::-1], xf[::-1]) if reverse else (xi, xf)
    ref_cs, ref_cp = np.cumsum(oi, 0), np.cumprod(of)
    ref_mx = np.maximum.accumulate(np.maximum(oi, -100), 0)
    if reverse:  # ys are stacked at the index they were computed for
        ref_cs, ref_cp = ref_cs[::-1], ref_cp[::-1]
    np.testing.assert_array_equal(cs, ref_cs)
    np.testing.assert_allclose(cp, ref_cp, rtol=1e-6)  # f32 products, 7 factors
    np.testing.assert_array_equal(rs, xi.sum(1))
    np.testing.assert_array_equal(s, xi.sum(0))
    np.testing.assert_allclose(p, np.prod(xf), rtol=1e-6)
    np.testing.assert_array_equal(mx, ref_mx[-1])


def test_scan_without_xs_or_ys_and_of_length_zero():
    def f(x):
        c, none = lax.scan(lambda c, _: (c * 3, None), x, None, length=4)
        assert none is None
        c0, ys0 = lax.scan(lambda c, v: (c + v, v * 2), x, lax.slice(lax.broadcast_in_dim(
            x, (3, 2), (1,)), (0, 0), (0, 2)))
        return c, c0, ys0
    x = np.array([1, -2], np.int32)
    c, c0, ys0 = run(f, x)
    assert ys0.shape == (0, 2)
    np.testing.assert_array_equal(c, x * 81)
    np.testing.assert_array_equal(c0, x)


def test_scan_params_are_jax_s():
    closed = lax.make_jaxpr(lambda x: lax.scan(lambda c, v: (c + v, c), 0.0, x))(
        np.zeros(3, np.float32))
    (eqn,) = [e for e in closed.eqns if e.primitive.name == "scan"]
    assert set(eqn.params) == {"reverse", "length", "jaxpr", "num_consts", "num_carry",
                               "linear", "unroll", "_split_transpose"}
    assert eqn.params["length"] == 3 and eqn.params["num_carry"] == 1
    w = lax.make_jaxpr(lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c + x, 0.0))(
        np.float32(1))
    (weqn,) = w.eqns
    assert set(weqn.params) == {"cond_jaxpr", "body_jaxpr", "cond_nconsts", "body_nconsts"}
    assert (weqn.params["cond_nconsts"], weqn.params["body_nconsts"]) == (0, 1)
    c = lax.make_jaxpr(lambda p, x: lax.cond(p, lambda v: v, lambda v: -v, x))(
        np.bool_(True), np.float32(1))
    (ceqn,) = [e for e in c.eqns if e.primitive.name == "cond"]
    assert set(ceqn.params) == {"branches"} and len(ceqn.params["branches"]) == 2
    assert ceqn.invars[0].aval.dtype == np.int32


# -- nesting and closures -------------------------------------------------------------------

def test_nested_control_flow_with_closures_two_levels_up():
    # scan inside a cond inside a while, the scan body using values of each enclosing level;
    # `scale * c` puts the enclosing value first (the tracer files it with the outer trace).
    xs = np.arange(1, 5, dtype=np.int32)

    def f(xs, scale):
        def outer_body(s):
            k, acc = s

            def inner(c, x):
                return c + scale * x + k, None

            def with_scan(a):
                return lax.scan(inner, a, xs)[0]
            return k + 1, lax.cond(lax.eq(lax.rem(k, 2), 0), with_scan, lambda a: a - 1, acc)
        return lax.while_loop(lambda s: s[0] < 4, outer_body, (0, np.int32(0)))[1]
    m = lower(f, xs, np.int32(3))
    assert_fixed_point(m)
    names = op_names(m)
    assert names.count("while") == 2 and names.count("case") == 1
    (out,) = verify.run(m, xs, np.int32(3))
    acc = 0
    for k in range(4):
        if k % 2 == 0:
            for x in xs:
                acc += 3 * int(x) + k
        else:
            acc -= 1
    assert out == acc


def test_fori_inside_scan_inside_fori():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)

    def f(x):
        def mid(c, row):
            return lax.fori_loop(0, 3, lambda j, cc: cc + row, c), c
        return lax.fori_loop(0, 2, lambda i, c: lax.scan(mid, c, x)[0], np.zeros(2, np.float32))
    (out,) = run(f, x)
    np.testing.assert_array_equal(out, 2 * 3 * x.sum(0))


# -- ordered effects ------------------------------------------------------------------------

EFF, effect = ordered_effect_identity("cf_test_effect")


def _token_of(op):
    (t,) = [v for v in op.operands if v.type == hlo.token()]
    return t


def test_ordered_effects_thread_tokens_through_while_and_scan():
    def f(x):
        x = effect(x)
        x = lax.while_loop(lambda c: lax.lt(lax.reduce_sum(c), 100.0),
                           lambda c: effect(c * 2.0), x)
        x, _ = lax.scan(lambda c, v: (effect(c + v), None), x, lax.broadcast_in_dim(
            x, (2, 3), (1,)))
        return effect(x)
    closed = lax.make_jaxpr(f)(np.ones(3, np.float32))
    assert {e.primitive.name: e.effects for e in closed.eqns}["while"] == {EFF}
    m = lower_jaxpr_to_module("eff", closed, ordered_effects=[EFF]).module
    assert_fixed_point(m)
    main = m.lookup("main")
    top = list(main.body.blocks[0].operations)
    create = [op for op in top if op.name == "create_token"]
    after = [op for op in top if op.name == "after_all"]
    loops = [op for op in top if op.name == "while"]
    assert len(create) == 1 and len(after) == 2 and len(loops) == 2
    # the chain: create_token -> after_all -> while -> scan's while -> after_all
    assert _token_of(after[0]) is create[0].result
    assert loops[0].operands[0] is after[0].result
    assert loops[1].operands[0] is loops[0].results[0]
    assert _token_of(after[1]) is loops[1].results[0]
    for loop in loops:  # inside: the token block argument feeds the body's after_all,
        body = loop.regions[1].blocks[0]  # whose token the body returns
        (inner,) = [op for op in walk(loop.regions[1]) if op.name == "after_all"]
        assert _token_of(inner) is body.arguments[0]
        assert body.operations[-1].operands[0] is inner.result
    _dummy_token, out = verify.run(m, np.ones(3, np.float32))
    ref = np.ones(3, np.float32)
    while ref.sum() < 100:
        ref = ref * 2
    np.testing.assert_array_equal(out, ref * 3)  # c + v twice, v = the loop result


def test_ordered_effects_in_one_branch_and_in_a_loop_predicate():
    def f(i, x):
        y = lax.switch(i, [lambda v: v + 1.0, lambda v: effect(v * 3.0), lambda v: -v], x)
        # the predicate has the effect: it is computed before the loop and in the body
        z = lax.while_loop(lambda c: lax.lt(lax.reduce_sum(effect(c)), 50.0),
                           lambda c: c + 4.0, y)
        return y, z
    closed = lax.make_jaxpr(f)(np.int32(0), np.ones(2, np.float32))
    m = lower_jaxpr_to_module("eff2", closed, ordered_effects=[EFF]).module
    assert_fixed_point(m)
    top = list(m.lookup("main").body.blocks[0].operations)
    (case,) = [op for op in top if op.name == "case"]
    assert case.results[0].type == hlo.token()
    rets = [r.blocks[0].operations[-1].operands[0] for r in case.regions]
    (create,) = [op for op in top if op.name == "create_token"]
    assert rets[0] is create.result and rets[2] is create.result  # no effect: token passes
    assert rets[1].owner.name == "after_all"
    (loop,) = [op for op in top if op.name == "while"]
    assert loop.operands[0].type == hlo.token()
    exe = verify.compile(m)
    x = np.ones(2, np.float32)
    for i in range(3):
        _dummy_token, y, z = exe(np.int32(i), x)
        ry = [x + 1, x * 3, -x][i]
        rz = ry.copy()
        while rz.sum() < 50:
            rz = rz + 4
        np.testing.assert_array_equal(y, ry)
        np.testing.assert_array_equal(z, rz)


def test_undeclared_inner_effect_is_a_clear_error():
    closed = lax.make_jaxpr(lambda x: lax.while_loop(lambda c: lax.lt(c, 3.0),
                                                     lambda c: effect(c + 1.0), x))(
        np.float32(0))
    closed.eqns[0].effects = frozenset()  # as a hand-built jaxpr might forget
    with pytest.raises(ValueError, match="ordered effects"):
        lower_jaxpr_to_module("bad", closed)


# -- other params and locations --------------------------------------------------------------

def test_cond_branches_platforms_picks_the_platform_branch():
    x_aval = core.ShapedArray((2,), np.float32)
    b0 = lax.make_jaxpr(lambda v: v * 10.0)(x_aval)
    b1 = lax.make_jaxpr(lambda v: v + 1.0)(x_aval)
    i, x, out = core.Var(core.ShapedArray((), np.int32)), core.Var(x_aval), core.Var(x_aval)
    eqn = core.JaxprEqn([i, x], [out], core.Primitive("cond", True),
                        {"branches": (b0, b1), "branches_platforms": (("cuda", "rocm"), None)})
    closed = core.ClosedJaxpr(core.Jaxpr([], [i, x], [out], [eqn]), [])
    m = lower_jaxpr_to_module("plat", closed, platform="cpu").module
    assert "case" not in op_names(m)
    (o,) = verify.run(m, np.int32(0), np.array([1, 2], np.float32))
    np.testing.assert_array_equal(o, [2, 3])


def test_locations_name_the_sub_jaxpr():
    m = lower(lambda x: lax.while_loop(lambda c: lax.lt(c, 3.0), lambda c: c + 1.0, x),
              np.float32(0))
    text = m.to_text()
    assert "while/body/add" in text and "while/cond/lt" in text
