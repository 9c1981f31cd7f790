"""Calls, annotations and tokens (lower/rules/calls.py, lower/lax/calls.py): custom_jvp_call,
custom_vjp_call, remat2, remat_opt, name, sharding_constraint, create_token, after_all,
platform_index, optimization_barrier and the total-order comparisons.

Each compile costs seconds, so programs gather several primitives; structure is checked on
the module without compiling where it can be.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from lower import core, lax, lower_jaxpr_to_module
from lower.axis_context import Mesh, P, SPMDAxisContext
from lower.rules.calls import platform_choice, sharding_text
from tests.lower.harness import check, ops, ordered_effect_identity, run
from tests.oracle import assert_fixed_point

I32 = np.int32


def eqn(closed, name):
    (e,) = [e for e in closed.eqns if e.primitive.name == name]
    return e


# -- custom derivatives ---------------------------------------------------------------------

def test_custom_jvp_and_vjp_lower_their_primal_with_closed_over_values():
    x = np.arange(6, dtype=I32).reshape(2, 3)
    bias = np.array([10, 20, 30], I32)

    def f(x):
        w = x * 3

        @lax.custom_jvp
        def g(a, pair):  # closes over w (a traced value) and bias (a constant)
            return {"s": a * w + bias, "d": pair[0] - pair[1]}
        g.defjvp(lambda primals, tangents: (g(*primals), tangents[0]))

        @lax.custom_vjp
        def h(a, b):
            return a * b, a + b
        h.defvjp(lambda a, b: (h(a, b), (a, b)), lambda res, ct: ct)

        out = g(x, (x, 1))
        return h(out["s"], out["d"])

    closed = lax.make_jaxpr(f)(x)
    jvp, vjp = eqn(closed, "custom_jvp_call"), eqn(closed, "custom_vjp_call")
    assert jvp.params["num_consts"] == 1 and vjp.params["num_consts"] == 0
    assert jvp.invars[0] is eqn(closed, "mul").outvars[0]  # w is the hoisted constant
    s, d = x * x * 3 + bias, x - 1
    check(run(f, x), [s * d, s + d])


def test_custom_derivatives_need_their_rule():
    def f(x):
        return lax.custom_jvp(lambda a: a)(x)
    with pytest.raises(AttributeError, match="No JVP defined"):
        lax.make_jaxpr(f)(np.ones(2, np.float32))


EFF, effect = ordered_effect_identity("calls_test_effect")


def test_inline_bodies_thread_ordered_effect_tokens():
    def f(x):
        g = lax.custom_jvp(effect)
        g.defjvp(lambda p, t: None)
        return lax.checkpoint(lambda a: effect(a * 2.0), differentiated=True)(g(x))
    closed = lax.make_jaxpr(f)(np.ones(2, np.float32))
    assert eqn(closed, "custom_jvp_call").effects == {EFF} == eqn(closed, "remat2").effects
    m = lower_jaxpr_to_module("eff", closed, ordered_effects=[EFF]).module
    assert_fixed_point(m)
    (create,) = ops(m, "create_token")
    first, second = ops(m, "after_all")
    assert list(first.operands) == [create.result] and list(second.operands) == [first.result]


# -- checkpoint -----------------------------------------------------------------------------

def _remat_module(prevent_cse, differentiated):
    x = np.arange(4, dtype=I32)

    def f(x, y):
        return lax.checkpoint(lambda a, b: a * b + np.arange(4, dtype=I32),
                              prevent_cse=prevent_cse, differentiated=differentiated)(x, y)
    closed = lax.make_jaxpr(f)(x, x)
    assert eqn(closed, "remat2").params["jaxpr"].constvars == []  # open: constants are operands
    return lower_jaxpr_to_module("remat", closed).module


def test_checkpoint_puts_operands_behind_a_barrier_only_when_differentiated_and_prevent_cse():
    for prevent_cse, differentiated in ((True, False), (False, True)):
        assert not ops(_remat_module(prevent_cse, differentiated), "optimization_barrier")
    m = _remat_module(True, True)
    assert_fixed_point(m)
    (barrier,) = ops(m, "optimization_barrier")
    main = m.lookup("main")
    # the constant, then both arguments; the body reads them behind the barrier only
    assert list(barrier.operands[1:]) == list(main.arguments)
    (mul,) = ops(m, "multiply")
    assert list(mul.operands) == list(barrier.results[1:])
    assert '"jit(main)/checkpoint/mul"' in m.to_text()  # the body's name scope
    x = np.arange(4, dtype=I32)
    check(verify.run(m, x, x + 1), [x * (x + 1) + x])
    # one flag per operand (constant, x, y): only y goes behind the barrier
    m = _remat_module((False, False, True), True)
    (barrier,) = ops(m, "optimization_barrier")
    assert list(barrier.operands) == [m.lookup("main").arguments[1]]


# -- annotations, barriers, tokens, total order ---------------------------------------------

SPECIAL = np.array([-np.nan, -np.inf, -1.5, -0.0, 0.0, 2.0, np.inf, np.nan], np.float32)


def total_order_key(x: np.ndarray) -> np.ndarray:
    """XLA's total order on float32 as integers: flip the magnitude bits of negatives."""
    i = x.view(np.int32).astype(np.int64)
    return np.where(i < 0, i ^ 0x7FFFFFFF, i)


def test_names_barriers_tokens_and_total_order_comparisons():
    ints = np.array([-3, 0, 5], I32)

    def f(x, k):
        a, b = lax.broadcast_in_dim(x, (8, 8), (0,)), lax.broadcast_in_dim(x, (8, 8), (1,))
        named = lax.checkpoint_name({"a": a, "k": k}, "saved")
        t = lax.after_all(lax.create_token(), lax.create_token())
        kb, xb = lax.optimization_barrier((named["k"], x))
        return (lax.eq_to(a, b), lax.le_to(a, b), lax.lt_to(named["a"], b),
                lax.lt_to(kb, 0), t, lax.after_all(), xb)

    closed = lax.make_jaxpr(f)(SPECIAL, ints)
    assert [e.params["name"] for e in closed.eqns if e.primitive.name == "name"] == ["saved"] * 2
    eq, le, lt, kneg, tok, tok0, xb = run(f, SPECIAL, ints)
    ka, kb = total_order_key(SPECIAL)[:, None], total_order_key(SPECIAL)[None, :]
    check([eq, le, lt, kneg], [ka == kb, ka <= kb, ka < kb, ints < 0])
    assert not eq[3, 4] and eq[7, 7] and lt[0, 1] and lt[3, 4]  # -0 < 0, NaN == NaN
    check([tok, tok0], [np.False_, np.False_])  # tokens leave main as dummy booleans
    np.testing.assert_array_equal(xb, SPECIAL)


def test_total_order_comparisons_of_complex_numbers():
    """XLA's verifier refuses TOTALORDER on complex operands (jax 0.10.2's eq_to lowering hits
    it): real parts compare first, then imaginary parts, each in the total order."""
    parts = np.array(list(itertools.product(SPECIAL[[0, 3, 4, 5, 7]], repeat=2)), np.float32)
    z = parts.view(np.complex64)[:, 0]   # NaN payloads and signs kept, unlike arithmetic
    a, b = z[:, None], z[None, :]
    eq, le, lt = run(lambda a, b: (lax.eq_to(a, b), lax.le_to(a, b), lax.lt_to(a, b)),
                     *np.broadcast_arrays(a, b))
    key = np.stack([total_order_key(parts[:, 0]), total_order_key(parts[:, 1])], -1)
    ka, kb = [tuple(k) for k in key], [tuple(k) for k in key]
    check([eq, le, lt], [np.array([[x == y for y in kb] for x in ka]),
                         np.array([[x <= y for y in kb] for x in ka]),
                         np.array([[x < y for y in kb] for x in ka])])


# -- sharding constraints ---------------------------------------------------------------------

class _JaxLikeSharding:
    """Renders itself as JAX's shardings do (here in XLA's iota form)."""

    def _to_xla_hlo_sharding(self, ndim):
        assert ndim == 2
        return "{devices=[2,1]<=[2]}"


def test_sharding_text_from_strings_meshes_and_jax_shardings():
    mesh = Mesh.create({"x": 2, "y": 2})
    assert sharding_text("{replicated}", 2) == "{replicated}"
    assert sharding_text(lax.NamedSharding(mesh, P("y", None)), 2) == \
        "{devices=[2,1,2]0,2,1,3 last_tile_dim_replicate}"
    assert sharding_text(_JaxLikeSharding(), 2) == "{devices=[2,1]<=[2]}"
    assert sharding_text(None, 2) is None and sharding_text(object(), 2) is None


def test_sharding_constraint_compiles_on_two_partitions():
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    rows = lax.NamedSharding(Mesh.create({"x": 2}), P("x", None))

    def f(x):
        y = lax.with_sharding_constraint(x * 2.0, rows)
        z = lax.with_sharding_constraint(y + 1.0, "{devices=[1,2]0,1}", unconstrained_dims=[0])
        return lax.with_sharding_constraint(z, _JaxLikeSharding())

    closed = lax.make_jaxpr(f)(x)
    assert eqn(closed, "mul").outvars[0] is closed.eqns[2].invars[0]
    m = lower_jaxpr_to_module("wsc", closed, num_partitions=2, arg_shardings=["{replicated}"],
                              result_shardings=["{replicated}"]).module
    text = assert_fixed_point(m)
    calls = ops(m, "custom_call")
    assert [c.attributes["mhlo.sharding"].value for c in calls] == \
        ["{devices=[2,1]0,1}", "{devices=[1,2]0,1}", "{devices=[2,1]<=[2]}"]
    assert 'backend_config = "unspecified_dims=[0]"' in text and text.count("backend_config") == 1
    outs = verify.compile(m, num_partitions=2).run_sharded([[x], [x]])[0]
    for o in outs:
        np.testing.assert_array_equal(o, x * 2 + 1)


def test_sharding_constraint_is_an_identity_when_it_cannot_apply():
    x = np.ones((2, 2), np.float32)
    unknown = lax.make_jaxpr(lambda a: lax.with_sharding_constraint(a, object()))(x)
    assert not ops(lower_jaxpr_to_module("u", unknown).module, "custom_call")
    # inside a manual (shard_map) region the value is a shard: no whole-mesh sharding applies
    manual = lax.make_jaxpr(lambda a: lax.with_sharding_constraint(a, "{devices=[2,1]0,1}"))(x)
    ctx = SPMDAxisContext(Mesh.create({"x": 2}), frozenset({"x"}))
    m = lower_jaxpr_to_module("m", manual, axis_context=ctx).module
    assert not ops(m, "custom_call")
    verify.check(m)


# -- platforms ----------------------------------------------------------------------------------

def test_platform_index_is_the_lowering_platforms_constant():
    out = core.Var(core.ShapedArray((), I32))
    platforms = (("cpu",), ("cuda", "rocm"), None)
    closed = core.ClosedJaxpr(core.Jaxpr([], [], [out], [core.JaxprEqn(
        [], [out], core.Primitive("platform_index"), {"platforms": platforms})]), [])
    for platform, want in (("cpu", 0), ("cuda", 1), ("rocm", 1), ("tpu", 2)):
        m = lower_jaxpr_to_module("pi", closed, platform=platform).module
        (c,) = ops(m, "constant")
        assert c.attributes["value"].to_array() == want and c.type == hlo.tensor((), I32)
    assert platform_choice((("cpu",), None, None), "tpu") == 1
    with pytest.raises(NotImplementedError, match="platform 'tpu'"):
        platform_choice((("cpu",),), "tpu")


def test_platform_dependent_takes_the_lowering_platforms_branch():
    x = np.arange(3, dtype=I32)

    def plus(a):
        return a + 1

    def f(a):
        return lax.platform_dependent(a, cpu=plus, rocm=plus, cuda=lambda v: v * 2,
                                      default=lambda v: -v)
    closed = lax.make_jaxpr(f)(x)
    platforms = (("cpu", "rocm"), ("cuda",), None)
    assert eqn(closed, "platform_index").params == {"platforms": platforms}
    assert eqn(closed, "cond").params["branches_platforms"] == platforms
    for platform, op in (("cuda", "multiply"), ("tpu", "negate"), ("rocm", "add")):
        assert ops(lower_jaxpr_to_module("pd", closed, platform=platform).module, op)
    check(run(f, x), [x + 1])
    with pytest.raises(ValueError, match="cuda"):
        lax.make_jaxpr(lambda a: lax.platform_dependent(a, gpu=plus))(x)


# -- against JAX ----------------------------------------------------------------------------

def _jax_program():
    """A function over jax 0.10 whose jaxpr has this family's primitives, and our front
    end's version of it. What AD would make (a differentiated remat2, remat_opt) is bound
    directly, to keep the program small (test_jax_grad_of_checkpoint_lowers takes the
    real route)."""
    import jax
    from jax import ad_checkpoint
    from jax._src.ad_checkpoint import remat_p
    from jax._src.custom_derivatives import remat_opt_p
    from jax._src.lax import lax as jax_lax
    jnp = jax.numpy
    c = np.array([1.0, -2.0, 0.5], np.float32)

    @jax.custom_jvp
    def sq(a):
        return a * a + c
    sq.defjvp(lambda p, t: (sq(*p), 2 * p[0] * t[0]))

    @jax.custom_vjp
    def mix(a, b):
        return jnp.sin(a) * b
    mix.defvjp(lambda a, b: (mix(a, b), (a, b)), lambda r, g: (g * r[1], g * r[0]))

    def body(a):
        return jnp.sin(jnp.sin(a)) * 1.5

    body_jaxpr = jax.make_jaxpr(body)(c).jaxpr
    fwd_jaxpr = jax.make_jaxpr(lambda a: (jnp.sin(a), jnp.cos(a)))(c)

    def f(x, y):
        u = ad_checkpoint.checkpoint_name(sq(x), "u")
        v = mix(u, y)
        g = remat_p.bind(v, jaxpr=body_jaxpr, prevent_cse=True, differentiated=True,
                         policy=None)[0]
        (w,) = jax.lax.optimization_barrier((g + jax.checkpoint(body)(x),))
        # what jax.vjp makes of a custom_vjp with optimize_remat: residuals, then outputs
        res, o = remat_opt_p.bind(w, num_consts=0, num_res=1, fwd_jaxpr=fwd_jaxpr,
                                  fun_jaxpr_thunk=None)
        p = jax.lax.platform_dependent(o, cpu=lambda a: a + 1, default=lambda a: a - 1)
        return (p * res, jax_lax.lt_to_p.bind(x, y), jax_lax.le_to_p.bind(x, y),
                jax_lax.eq_to_p.bind(x, x))

    def ours(x, y):
        sq_ = lax.custom_jvp(lambda a: a * a + c)
        sq_.defjvp(lambda p, t: None)
        mix_ = lax.custom_vjp(lambda a, b: lax.sin(a) * b)
        mix_.defvjp(lambda a, b: None, lambda r, g: None)
        u = lax.checkpoint_name(sq_(x), "u")
        v = mix_(u, y)
        r = lax.checkpoint(lambda a: lax.sin(lax.sin(a)) * 1.5, differentiated=True)(v)
        (w,) = lax.optimization_barrier((r,))
        p = lax.platform_dependent(w, cpu=lambda a: a + 1, default=lambda a: a - 1)
        t = lax.after_all(lax.create_token())
        wsc = lax.with_sharding_constraint(p, "{replicated}")
        return wsc, lax.lt_to(x, y), lax.le_to(x, y), lax.eq_to(x, x), t
    return jax, f, ours


def test_front_end_params_are_jaxs():
    jax = pytest.importorskip("jax")
    _, f, ours = _jax_program()
    x = np.array([0.5, -0.0, np.nan], np.float32)
    y = np.array([0.25, 0.0, np.nan], np.float32)

    def names(closed) -> dict:
        out: dict = {}
        for e in closed.eqns:
            out.setdefault(e.primitive.name, set(e.params))
        return out
    theirs = names(jax.make_jaxpr(f)(x, y))
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    theirs.update(names(jax.make_jaxpr(
        lambda a: (jax.lax.with_sharding_constraint(a, sharding),
                   jax.lax.after_all(jax.lax.create_token())))(x)))
    mine = names(lax.make_jaxpr(ours)(x, y))
    for prim in ("custom_jvp_call", "custom_vjp_call", "remat2", "name", "optimization_barrier",
                 "platform_index", "cond", "lt_to", "le_to", "eq_to", "sharding_constraint",
                 "create_token", "after_all"):
        assert mine[prim] == theirs[prim], prim


def test_jax_jaxprs_lower_and_match_jax():
    pytest.importorskip("jax")
    jax, f, _ = _jax_program()
    x = np.array([0.5, -0.0, np.nan], np.float32)
    y = np.array([0.25, 0.0, np.nan], np.float32)
    closed = jax.make_jaxpr(f)(x, y)
    prims = {e.primitive.name for e in closed.eqns}
    assert {"custom_jvp_call", "custom_vjp_call", "remat2", "remat_opt", "name",
            "platform_index", "lt_to", "le_to", "eq_to"} <= prims
    (remat,) = [e for e in closed.eqns if e.primitive.name == "remat2"
                and e.params["differentiated"]]
    assert remat.params["prevent_cse"] is True
    m = lower_jaxpr_to_module("jax_calls", closed).module
    assert_fixed_point(m)
    assert len(ops(m, "optimization_barrier")) == 2  # the user's, and the remat's
    got = verify.run(m, x, y)
    want = jax.jit(f)(x, y)
    np.testing.assert_allclose(got[0], np.asarray(want[0]), rtol=2e-6, atol=1e-6)
    check(got[1:], [np.asarray(w) for w in want[1:]])


def test_jax_grad_of_checkpoint_lowers():
    jax = pytest.importorskip("jax")
    x = np.array([0.5, -1.0, 2.0], np.float32)

    def f(a):
        return jax.grad(lambda v: jax.checkpoint(lambda u: jax.numpy.sin(u) * u)(v).sum())(a)
    m = lower_jaxpr_to_module("grad_remat", jax.make_jaxpr(f)(x)).module
    assert ops(m, "optimization_barrier")
    np.testing.assert_allclose(verify.run(m, x)[0], np.asarray(jax.jit(f)(x)), rtol=2e-6)
