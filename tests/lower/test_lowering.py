"""Jaxprs from the tracing front end, lowered by our rules, run by jaxlib, checked with numpy;
and the machinery: registry errors, tokens, donation, shardings, locations, caching."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from lower import core, lower_jaxpr_to_module, register_lowering, tracing as tr
from lower.mlir import (LoweringRuleContext, TokenSet, cache_lowering, lower_fun,
                        lowering_rule)
from tests.oracle import assert_fixed_point

RNG = np.random.default_rng(0)


def lower(f, *args, **kw):
    closed = tr.make_jaxpr(f)(*args)
    return lower_jaxpr_to_module("jit_f", closed, **kw).module


def run(f, *args):
    m = lower(f, *args)
    assert_fixed_point(m)
    return verify.run(m, *args)


F32 = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
G32 = RNG.uniform(0.5, 2, (3, 4)).astype(np.float32)
I32 = RNG.integers(-50, 50, (3, 4)).astype(np.int32)
J32 = RNG.integers(1, 7, (3, 4)).astype(np.int32)

FLOAT_UNARY = {
    "neg": np.negative, "exp": np.exp, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
    "abs": np.abs, "sign": np.sign, "floor": np.floor, "ceil": np.ceil,
    "logistic": lambda x: 1 / (1 + np.exp(-x)), "expm1": np.expm1, "exp2": np.exp2,
    "is_finite": np.isfinite,
}
POSITIVE_UNARY = {"log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
                  "log1p": np.log1p, "cbrt": np.cbrt}


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY) + sorted(POSITIVE_UNARY))
def test_float_unary(name):
    ref = {**FLOAT_UNARY, **POSITIVE_UNARY}[name]
    x = G32 if name in POSITIVE_UNARY else F32
    (out,) = run(getattr(tr, name), x)
    np.testing.assert_allclose(out, ref(x), rtol=2e-6, atol=1e-6)  # f32 transcendental


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
          "min": np.minimum}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("x,y", [(F32, G32), (I32, J32)], ids=["f32", "i32"])
def test_binary_exact(name, x, y):
    (out,) = run(getattr(tr, name), x, y)
    np.testing.assert_array_equal(out, BINARY[name](x, y))


def test_integer_division_truncates_and_rem_follows():
    q, r = run(lambda a, b: (tr.div(a, b), tr.rem(a, b)), I32, J32)
    np.testing.assert_array_equal(q, np.trunc(I32 / J32).astype(np.int32))
    np.testing.assert_array_equal(r, I32 - np.trunc(I32 / J32).astype(np.int32) * J32)


@pytest.mark.parametrize("name,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                      ("le", np.less_equal), ("gt", np.greater),
                                      ("ge", np.greater_equal)])
def test_comparisons(name, ref):
    u = (I32 % 5).astype(np.uint32)
    outs = run(lambda a, b, c: (getattr(tr, name)(a, b), getattr(tr, name)(c, c[::-1])
                                if False else getattr(tr, name)(c, c)), F32, G32, u)
    np.testing.assert_array_equal(outs[0], ref(F32, G32))
    np.testing.assert_array_equal(outs[1], ref(u, u))


def test_select_n_convert_clamp_integer_pow():
    def f(x, i):
        pred = tr.gt(x, 0.0)
        picked = tr.select_n(pred, tr.neg(x), x)        # where(x > 0, x, -x)
        three = tr.select_n(tr.rem(i, 3), i, tr.neg(i), tr.mul(i, 2))  # integer selector
        return (picked, tr.convert_element_type(x, np.int32),
                tr.convert_element_type(i, np.bool_), tr.clamp(-1.0, x, 1.0),
                tr.integer_pow(x, 3), tr.integer_pow(x, -2), three)
    i = np.abs(I32)
    outs = run(f, F32, i)
    np.testing.assert_array_equal(outs[0], np.abs(F32))
    np.testing.assert_array_equal(outs[1], F32.astype(np.int32))
    np.testing.assert_array_equal(outs[2], i != 0)
    np.testing.assert_array_equal(outs[3], np.clip(F32, -1, 1))
    np.testing.assert_allclose(outs[4], F32 ** 3, rtol=1e-6)
    np.testing.assert_allclose(outs[5], F32 ** -2.0, rtol=1e-5)
    np.testing.assert_array_equal(outs[6], np.choose(i % 3, [i, -i, 2 * i]))


def test_complex_max_is_lexicographic():
    a = np.array([1 + 5j, 2 - 1j, 3 + 1j], np.complex64)
    c = np.array([1 + 6j, 1 + 9j, 3 + 1j], np.complex64)
    mx, mn = run(lambda x, y: (tr.max(x, y), tr.min(x, y)), a, c)
    np.testing.assert_array_equal(mx, [1 + 6j, 2 - 1j, 3 + 1j])
    np.testing.assert_array_equal(mn, [1 + 5j, 1 + 9j, 3 + 1j])


def test_shapes_reductions_and_dot():
    x = RNG.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    w = RNG.uniform(-1, 1, (4, 5)).astype(np.float32)

    def f(x, w):
        return (tr.reshape(x, (6, 4)), tr.transpose(x, (2, 0, 1)), tr.reduce_sum(x, (0, 2)),
                tr.reduce_max(x, 1), tr.reduce_min(x), tr.dot(x, w),
                tr.concatenate([x, x], 1), tr.slice(x, (0, 1, 0), (2, 3, 4), (1, 1, 2)),
                tr.broadcast_in_dim(w, (3, 4, 5), (1, 2)), tr.iota(x, np.int32, (2, 3), 1))
    outs = run(f, x, w)
    refs = [x.reshape(6, 4), x.transpose(2, 0, 1), x.sum((0, 2)), x.max(1), x.min(), x @ w,
            np.concatenate([x, x], 1), x[0:2, 1:3, 0:4:2], np.broadcast_to(w, (3, 4, 5)),
            np.broadcast_to(np.arange(3, dtype=np.int32), (2, 3))]
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


def test_dot_general_batch_and_preferred_type():
    a = RNG.integers(-3, 3, (2, 3, 4)).astype(np.int8)
    b = RNG.integers(-3, 3, (2, 4, 5)).astype(np.int8)
    (out,) = run(lambda x, y: tr.dot_general(x, y, (((2,), (1,)), ((0,), (0,))),
                                             preferred_element_type=np.int32), a, b)
    np.testing.assert_array_equal(out, np.einsum("bij,bjk->bik", a.astype(np.int32),
                                                 b.astype(np.int32)))


def test_constants_zero_stride_arrays_become_broadcasts():
    big = np.broadcast_to(np.arange(4, dtype=np.float32), (1000, 4))
    m = lower(lambda x: x + big, np.zeros((1000, 4), np.float32))
    text = m.to_text()
    assert "tensor<1000x4xf32>}>" not in text.split("broadcast_in_dim")[0]
    assert 'dense<"0x' not in text
    (out,) = verify.run(m, np.ones((1000, 4), np.float32))
    np.testing.assert_array_equal(out, big + 1)


def test_missing_rule_names_primitive_and_platform():
    with pytest.raises(NotImplementedError, match="'no_such_prim' on platform 'tpu'"):
        lowering_rule(core.Primitive("no_such_prim"), "tpu")


def test_platform_specific_rules_and_gpu_alias():
    prim = core.Primitive("my_platform_prim")
    register_lowering(prim, lambda ctx, x: [ctx.builder.negate(x)])
    register_lowering(prim, lambda ctx, x: [ctx.builder.abs(x)], platform="gpu")
    assert lowering_rule(prim, "cuda") is lowering_rule(prim, "rocm")
    assert lowering_rule(prim, "cuda") is not lowering_rule(prim, "cpu")
    with pytest.raises(ValueError, match="unknown platform 'metal'"):
        register_lowering(prim, lambda ctx, x: [x], platform="metal")


def _with_eqn(prim_name, x_aval, params=None, effects=frozenset()):
    x = core.Var(x_aval)
    y = core.Var(x_aval)
    eqn = core.JaxprEqn([x], [y], core.Primitive(prim_name), params or {}, effects)
    return core.ClosedJaxpr(core.Jaxpr([], [x], [y], [eqn], effects), [])


def test_ordered_effects_thread_tokens():
    eff = core.OrderedEffect("print")
    seen = []

    def rule(ctx, x):
        (tok,) = ctx.tokens_in.tokens()
        seen.append(tok)
        ctx.set_tokens_out(TokenSet([(eff, ctx.builder.after_all(tok))]))
        return [x]
    register_lowering("effectful_id", rule)
    closed = _with_eqn("effectful_id", core.ShapedArray((2,), np.float32), effects={eff})
    m = lower_jaxpr_to_module("eff", closed, ordered_effects=[eff]).module
    text = assert_fixed_point(m)
    assert '"mhlo.create_token"' in text and '"mhlo.after_all"' in text
    main = m.lookup("main")
    # The entry point returns a dummy tensor<0xi1> in place of the effect's token.
    assert str(main.result_types[0]) == "tensor<0xi1>"
    out = verify.run(m, np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(out[1], [1.0, 2.0])
    assert len(seen) == 1


def test_donation_aliases_and_jaxlib_donates():
    x = np.arange(4, dtype=np.float32)
    closed = tr.make_jaxpr(lambda a, b: (a + b, tr.reduce_sum(a)))(x, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = lower_jaxpr_to_module("don", closed, donated_args=[True, False]).module
    assert m.lookup("main").arg_attrs[0]["tf.aliasing_output"] == hlo.i32_attr(0)
    exe = verify.compile(m)
    from verify import _jaxlib
    dev = exe.devices[0]
    a, b = _jaxlib.put(x, dev), _jaxlib.put(x, dev)
    outs = exe.loaded.execute_sharded([a, b]).disassemble_into_single_device_arrays()
    assert a.is_deleted() and not b.is_deleted()
    np.testing.assert_array_equal(_jaxlib.to_numpy(outs[0][0]), 2 * x)


def test_unusable_donation_warns():
    x = np.arange(4, dtype=np.float32)
    closed = tr.make_jaxpr(lambda a: tr.reduce_sum(a))(x)
    with pytest.warns(UserWarning, match=r"donated buffers were not usable: float32\[4\]"):
        lower_jaxpr_to_module("don", closed, donated_args=[True])


def test_shardings_and_replication_compile_on_8_partitions():
    x = RNG.uniform(-1, 1, (8, 4)).astype(np.float32)
    closed = tr.make_jaxpr(lambda a: tr.tanh(a) * 2.0)(x)
    m = lower_jaxpr_to_module("spmd", closed, arg_shardings=["{devices=[8,1]0,1,2,3,4,5,6,7}"],
                              result_shardings=["{devices=[8,1]0,1,2,3,4,5,6,7}"],
                              num_partitions=8).module
    text = assert_fixed_point(m)
    assert 'mhlo.sharding = "{devices=[8,1]0,1,2,3,4,5,6,7}"' in text
    exe = verify.compile(m, num_partitions=8)
    shards = exe.run_sharded([[x[i:i + 1]] for i in range(8)])[0]
    np.testing.assert_allclose(np.concatenate(shards), np.tanh(x) * 2, rtol=1e-6)
    rep = lower_jaxpr_to_module("rep", closed, replicated_args=[True]).module
    assert "mhlo.is_same_data_across_replicas" in rep.to_text()
    verify.check(rep)


def test_locations_carry_name_stack_and_source_line():
    m = lower(lambda x: tr.exp(x), F32)
    text = m.to_text()
    assert 'loc("jit(main)/exp"("' in text and "test_lowering.py" in text
    from jaxlib import _hlo
    from jaxlib import xla_client as xc
    comp = xc._xla.mlir.mlir_module_to_xla_computation(text)
    options = _hlo.HloPrintOptions.short_parsable()
    options.print_metadata = True
    hlo_text = comp.get_hlo_module().to_string(options)
    assert 'op_name="jit(main)/exp"' in hlo_text  # reaches XLA's op metadata


def test_rules_registered_while_lowering_apply_to_later_equations():
    """jaxpr_subcomp resolves rules once per platform; a rule registered meanwhile (by
    another rule, generic or for the platform) is still the one later equations use."""
    a = core.ShapedArray((3,), np.float32)
    register_lowering("late_b", lambda ctx, x: [ctx.builder.negate(x)])
    register_lowering("late_c", lambda ctx, x: [ctx.builder.negate(x)])

    def late_a(ctx, x):
        register_lowering("late_b", lambda ctx, x: [ctx.builder.exponential(x)])
        register_lowering("late_c", lambda ctx, x: [ctx.builder.sine(x)], platform="cpu")
        return [x]
    register_lowering("late_a", late_a)
    x, y, z, w = (core.Var(a) for _ in range(4))
    eqns = [core.JaxprEqn([x], [y], core.Primitive("late_a"), {}),
            core.JaxprEqn([y], [z], core.Primitive("late_b"), {}),
            core.JaxprEqn([z], [w], core.Primitive("late_c"), {})]
    m = lower_jaxpr_to_module("late", core.ClosedJaxpr(core.Jaxpr([], [x], [w], eqns), []),
                              platform="cpu").module
    arg = np.array([0.5, -1.0, 2.0], np.float32)
    (out,) = verify.run(m, arg)
    np.testing.assert_allclose(out, np.sin(np.exp(arg)), rtol=1e-6)


def test_cache_lowering_emits_one_private_function():
    register_lowering("cached_double", cache_lowering(
        lambda ctx, x: [ctx.builder.add(x, x)]))
    a = core.ShapedArray((3,), np.float32)
    x, y, z = core.Var(a), core.Var(a), core.Var(a)
    p = core.Primitive("cached_double")
    jaxpr = core.Jaxpr([], [x], [z], [core.JaxprEqn([x], [y], p, {}),
                                      core.JaxprEqn([y], [z], p, {})])
    m = lower_jaxpr_to_module("cache", core.ClosedJaxpr(jaxpr, [])).module
    assert [f.name for f in m.functions] == ["main", "cached_double"]
    assert m.to_text().count('"func.call"') == 2
    (out,) = verify.run(m, np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(out, [4, 8, 12])


def test_lower_fun_and_call_lowering():
    register_lowering("softplus", lower_fun(lambda x: [tr.log1p(tr.exp(x))]))
    a = core.ShapedArray((4,), np.float32)
    x, y = core.Var(a), core.Var(a)
    inner = core.ClosedJaxpr(core.Jaxpr([], [x], [y], [
        core.JaxprEqn([x], [y], core.Primitive("softplus"), {})]), [])
    u, v, w = core.Var(a), core.Var(a), core.Var(a)
    pjit = core.Primitive("jit", multiple_results=True)
    outer = core.Jaxpr([], [u], [w], [core.JaxprEqn([u], [v], pjit, {"jaxpr": inner,
                                                                      "name": "inner"}),
                                      core.JaxprEqn([v], [w], pjit, {"jaxpr": inner,
                                                                      "name": "inner"})])
    m = lower_jaxpr_to_module("calls", core.ClosedJaxpr(outer, [])).module
    assert [f.name for f in m.functions] == ["main", "inner"]  # cached: one callee
    xv = np.linspace(-2, 2, 4).astype(np.float32)
    (out,) = verify.run(m, xv)
    sp = np.log1p(np.exp(xv))
    np.testing.assert_allclose(out, np.log1p(np.exp(sp)), rtol=1e-6)


def test_lower_fun_traces_once_per_avals_and_parameters_in_a_lowering():
    """A lower_fun rule's function is traced once per (avals, parameters) in one lowering and
    its jaxpr lowered again for each equation; other avals or parameters, or another
    lowering, trace anew. Counted by the function itself; the numbers are numpy's."""
    traces = []

    def scaled_softplus(x, *, scale):
        traces.append((x.aval, scale))
        return [tr.log1p(tr.exp(x)) * np.float32(scale).astype(x.dtype)]
    register_lowering("scaled_softplus", lower_fun(scaled_softplus))

    def sp(x, scale):
        return tr.bind("scaled_softplus", [x], [x.aval], scale=scale)

    def f(x, y):
        return [sp(x, 2.0), sp(sp(x, 2.0), 2.0), sp(x, 3.0), sp(y, 2.0)]
    xv = np.linspace(-2, 2, 4).astype(np.float32)
    yv = np.linspace(-1, 1, 6).astype(np.float64).reshape(2, 3)
    closed = tr.make_jaxpr(f)(xv, yv)
    m = lower_jaxpr_to_module("m", closed).module
    assert [(a.shape, scale) for a, scale in traces] == [((4,), 2.0), ((4,), 3.0),
                                                         ((2, 3), 2.0)]
    outs = verify.run(m, xv, yv)

    def want(v, scale):
        return np.log1p(np.exp(v)) * scale
    for out, ref in zip(outs, [want(xv, 2), want(want(xv, 2), 2), want(xv, 3), want(yv, 2)]):
        np.testing.assert_allclose(out, ref, rtol=1e-6)
    lower_jaxpr_to_module("m", closed)  # (a new lowering: its own traces)
    assert len(traces) == 6


def test_lower_fun_parameters_equal_in_python_trace_apart():
    """True, 1 and 1.0 (and 0.0, -0.0) are equal as dict keys but may trace differently: each
    is its own trace."""
    seen = []

    def offset(x, *, by):
        seen.append((type(by).__name__, str(by)))
        return [x + np.float32(by)]
    register_lowering("offset_by", lower_fun(offset))

    def f(x):
        return [tr.bind("offset_by", [x], [x.aval], by=by)
                for by in (True, 1, 1.0, 0.0, -0.0, 1.0)]
    xv = np.zeros(2, np.float32)
    lower_jaxpr_to_module("m", tr.make_jaxpr(f)(xv))
    assert seen == [("bool", "True"), ("int", "1"), ("float", "1.0"), ("float", "0.0"),
                    ("float", "-0.0")]


def test_lower_fun_ops_carry_the_equations_named_scopes():
    """As jax's lower_fun: a decomposition's ops are located in its equation's name stack."""
    register_lowering("softplus2", lower_fun(lambda x: [tr.log1p(tr.exp(x))]))

    def f(x):
        with tr.named_scope("blk"):
            return tr.bind("softplus2", [x], [x.aval])
    m = lower(f, F32)
    text = m.to_text()
    assert 'loc("jit(main)/blk/exp"' in text and 'loc("jit(main)/blk/log1p"' in text
    np.testing.assert_allclose(verify.run(m, F32)[0], np.log1p(np.exp(F32)), rtol=1e-6)


def test_module_name_is_sanitised():
    closed = tr.make_jaxpr(lambda a: a)(F32)
    m = lower_jaxpr_to_module("jit(my fn)<x>", closed).module
    assert m.name == "jit_my_fn__x"  # (trailing underscores dropped, as jax's)


def test_rule_context_replace_keeps_fields():
    ctx = LoweringRuleContext(None, None, core.Primitive("p"), [1], [2], TokenSet())
    assert ctx.replace(avals_out=[3]).avals_in == [1]


def test_literals_become_one_constant_per_distinct_value():
    """Equal literals share one constant; -0.0, 0.0 and each NaN payload stay apart."""
    f32 = np.dtype(np.float32)
    t = core.ShapedArray((3,), f32)
    x = core.Var(t)
    nan2 = np.frombuffer(np.uint32(0x7FC00002).tobytes(), np.float32)[0]
    lits = [np.float32(0.0), np.float32(-0.0), np.float32(0.0), np.float32(np.nan), nan2,
            np.float32(0.0)]
    eqns, outs = [], []
    for v in lits:
        o = core.Var(t)
        eqns.append(core.JaxprEqn([x, core.Literal(np.asarray(v), core.ShapedArray((), f32))],
                                  [o], core.Primitive("mul"), {}))
        outs.append(o)
    closed = core.ClosedJaxpr(core.Jaxpr([], [x], outs, eqns), [])
    m = lower_jaxpr_to_module("lits", closed).module
    assert_fixed_point(m)
    consts = [op.attributes["value"].data for op in m.functions[0].entry_block.operations
              if op.name == "constant"]
    assert sorted(consts) == sorted({np.float32(v).tobytes() for v in lits})
    arg = np.array([-0.0, 1.5, -2.0], np.float32)
    for v, out in zip(lits, verify.run(m, arg)):
        # the sign of each zero product shows which zero the equation multiplied by
        np.testing.assert_array_equal(np.signbit(out), np.signbit(arg * np.float32(v)))
        np.testing.assert_array_equal(out, arg * np.float32(v))


def test_literals_of_one_byte_float_types_with_equal_bytes_stay_apart():
    """float8_e4m3fn and float8_e4m3b11fnuz arrays share numpy's dtype.str ('<V1'): equal
    bytes are still different literals."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    raw = np.array([0x38, 0x21], np.uint8)
    vals = [raw.view(ml_dtypes.float8_e4m3fn), raw.view(ml_dtypes.float8_e4m3b11fnuz),
            raw.view(ml_dtypes.float8_e4m3fn)]
    lits = [core.Literal(v, core.ShapedArray(v.shape, v.dtype)) for v in vals]
    m = lower_jaxpr_to_module("lits", core.ClosedJaxpr(core.Jaxpr([], [], lits, []), [])).module
    assert [op.type.element_type for op in m.functions[0].entry_block.operations
            if op.name == "constant"] == [hlo.f8E4M3FN, hlo.f8E4M3B11FNUZ]
    for v, out in zip(vals, verify.run(m)):
        assert out.dtype == v.dtype
        np.testing.assert_array_equal(out.view(np.uint8), raw)


def _elementwise_mix():
    import jax
    import jax.numpy as jnp

    def f(x, y, s):
        a = jnp.tanh(x * y + 1.0)        # a literal operand: the rule's path reads it
        b = a - jnp.sin(s)               # (8,) minus (): broadcast by the rule's path
        c = (b * b).astype(jnp.int32)    # a square; a conversion (not a one-method rule)
        return -(c << 1) ^ c, jnp.abs(b) / a
    args = (np.linspace(-1, 1, 8, dtype=np.float32), np.full(8, 0.5, np.float32),
            np.float32(0.25))
    return jax.make_jaxpr(f)(*args), args


def test_one_method_rules_called_directly_print_what_their_rules_make(monkeypatch):
    """jaxpr_subcomp calls an elementwise rule's builder method itself when its operands
    share one type (no rule context); the module is the one the rules make, and a rule
    registered over such a primitive is the one used."""
    from lower import mlir as lm
    closed, args = _elementwise_mix()
    direct = lower_jaxpr_to_module("m", closed).module
    rules = lm._resolved_rules("cpu")
    for name in ("add", "mul", "sub", "tanh", "neg", "xor", "abs", "div", "shift_left"):
        rule = rules[name]
        assert rule.same_typed is not None  # (the attribute the direct path reads)
        monkeypatch.setitem(rules, name, lambda ctx, *a, _r=rule, **k: _r(ctx, *a, **k))
    ruled = lower_jaxpr_to_module("m", closed).module
    assert direct.to_text() == ruled.to_text()
    assert direct.to_text(pretty=True) == ruled.to_text(pretty=True)
    monkeypatch.setitem(rules, "mul", lambda ctx, x, y, **_: [ctx.builder.maximum(x, y)])
    text = lower_jaxpr_to_module("m", closed).module.to_text()
    assert '"mhlo.multiply"' not in text and text.count('"mhlo.maximum"') == 2
    outs = verify.run(direct, *args)  # (the numbers: numpy's)
    x, y, s = args
    a = np.tanh(x * y + np.float32(1))
    b = a - np.sin(s)
    c = (b * b).astype(np.int32)
    np.testing.assert_array_equal(outs[0], -(c << 1) ^ c)
    np.testing.assert_allclose(outs[1], np.abs(b) / a, rtol=1e-5)
