"""The tracing front end: Python operators on traced values, named scopes."""

from __future__ import annotations

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from lower import tracing as tr
from tests.lower.harness import check, run


def test_python_operators_record_lax_primitives():
    x = np.array([0, 1, 2, 3, -4], np.int32)
    y = np.array([0, 3, 2, 1, 4], np.int32)

    def f(a, b):
        return [a == b, a != b, a & b, a | b, a ^ b, ~a, abs(a), 1 & a, 6 | b, 5 ^ a]

    names = [e.primitive.name for e in lax.make_jaxpr(f)(x, y).eqns]
    for prim in ("eq", "ne", "and", "or", "xor", "not", "abs"):
        assert prim in names
    check(run(f, x, y), [x == y, x != y, x & y, x | y, x ^ y, ~x, np.abs(x), 1 & x, 6 | y,
                         5 ^ x])


def test_tracer_truth_value_is_an_error_and_hash_is_identity():
    def f(a):
        {a: 1}  # hashable: a traced value can key a dict
        if a > 0:  # noqa: SIM108 -- the point of the test
            return a
        return -a
    with pytest.raises(TypeError, match="no truth value while tracing"):
        lax.make_jaxpr(f)(np.float32(1))


def test_tracer_compared_with_a_non_operand_answers_by_identity_as_jax():
    seen = []

    def f(a):
        seen.append((a == None, a != None, a == "x", a != [1], a in (None, "auto")))  # noqa: E711
        return a
    closed = lax.make_jaxpr(f)(np.float32(1))
    assert seen == [(False, True, False, True, False)]
    assert not closed.jaxpr.eqns and not closed.consts


def test_named_scopes_reach_locations_and_bodies_join_their_stacks():
    def f(x):
        with tr.named_scope("layer1"):
            y = tr.exp(x)
            with tr.named_scope("inner"):
                y = lax.while_loop(lambda c: lax.lt(c[0], 3.0),
                                   lambda c: [c[0] + 1.0, tr.sin(c[1])], [y, y])[1]
        return tr.cos(y)

    closed = lax.make_jaxpr(f)(np.float32(0.5))
    m = lower_jaxpr_to_module("scopes", closed).module
    text = m.to_text()
    assert '"jit(main)/layer1/exp"' in text
    assert '"jit(main)/layer1/inner/while/body/sin"' in text
    assert '"jit(main)/layer1/inner/while/cond/lt"' in text
    assert '"jit(main)/cos"' in text
    from jaxlib import _hlo
    from jaxlib import xla_client as xc
    comp = xc._xla.mlir.mlir_module_to_xla_computation(text)
    options = _hlo.HloPrintOptions.short_parsable()
    options.print_metadata = True
    assert 'op_name="jit(main)/layer1/inner/while/body/sin"' in \
        comp.get_hlo_module().to_string(options)
    (out,) = verify.run(m, np.float32(0.5))
    y = np.exp(np.float32(0.5))
    c, v = y, y
    while c < 3.0:
        c, v = c + np.float32(1), np.sin(v)
    np.testing.assert_allclose(out, np.cos(v), rtol=1e-6)


def test_named_scope_needs_tracing():
    with pytest.raises(RuntimeError, match="inside a function given to make_jaxpr"):
        with tr.named_scope("x"):
            pass


def test_ops_on_enclosing_values_are_recorded_in_the_body():
    """As in JAX: a loop body's broadcast of an outer scalar, iota and constant are equations
    of the body, not hoisted out of it into constants of the loop (which XLA would carry
    through every iteration)."""
    def f(x, d):
        def body(i, u):
            inside = lax.lt(lax.iota(u, np.int32, u.shape, 0), d)  # d: the outer scalar
            return lax.where(inside, lax.add(u, np.ones(u.shape, np.float32)), u)
        return lax.fori_loop(0, lax.add(d, 0), body, x)
    closed = lax.make_jaxpr(f)(np.zeros((4, 3), np.float32), np.int32(2))
    (loop,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "while"]
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["add", "while"]
    assert loop.params["body_nconsts"] == 1  # d alone
    assert [v.aval.shape for v in loop.invars[:1]] == [()]
    body = [e.primitive.name for e in loop.params["body_jaxpr"].jaxpr.eqns]
    assert {"iota", "broadcast_in_dim"} <= set(body)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    (out,) = verify.run(lower_jaxpr_to_module("f", closed).module, x, np.int32(2))
    np.testing.assert_array_equal(out, x + 2 * (np.arange(4) < 2)[:, None])


def test_a_lowering_rules_ops_carry_no_user_frame():
    """What ``lower_fun`` traces while lowering is located by name alone (as jax's lower_fun):
    the line that called the lowering is not where the user wrote the op."""
    from lower.mlir import lower_fun
    from lower import register_lowering
    register_lowering("softplus3", lower_fun(lambda x: [tr.log1p(tr.exp(x))]))
    x = np.zeros(3, np.float32)
    closed = tr.make_jaxpr(lambda a: tr.sin(tr.bind("softplus3", [a], [a.aval])))(x)
    text = lower_jaxpr_to_module("f", closed).module.to_text()
    assert 'loc("jit(main)/exp")' in text and 'loc("jit(main)/log1p")' in text
    assert 'loc("jit(main)/sin"("' in text  # the user's op keeps its line
