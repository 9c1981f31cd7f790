"""lower.lax's loops and branches against jax.lax's, where an adversarial comparison found
them apart: a Python scalar a body returns for a carry of another kind (2.7 carried on as
2 before), fori_loop's index dtype with numpy or float bounds, a value leaked out of a body,
tokens in carries. Oracle: jax.jit of the same function (numbers bit for bit), and jax
refusing what we refuse."""

from __future__ import annotations

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from lower.tracing import UnexpectedTracerError

jax = pytest.importorskip("jax")
jnp = jax.numpy


def ours(f, *args):
    closed = lax.make_jaxpr(f)(*args)
    return verify.run(lower_jaxpr_to_module("f", closed).module, *args)


LOOPS = {
    "while": lambda L, out: lambda c: L.while_loop(lambda s: s[0] < 3,
                                                   lambda s: (s[0] + 1, out), (0, c))[1],
    "fori": lambda L, out: lambda c: L.fori_loop(0, 3, lambda i, v: out, c),
    "scan": lambda L, out: lambda c: L.scan(lambda v, _: (out, None), c, None, length=2)[0],
}


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("out, init", [(2.7, np.int32(0)), (-1.9, np.int32(0)),
                                       (2, np.bool_(False)), (True, np.int32(0)),
                                       (1.5j, np.float32(0))],
                         ids=["float-int", "negative-float-int", "int-bool", "bool-int",
                              "complex-float"])
def test_a_python_scalar_of_another_kind_is_refused_for_a_carry(loop, out, init):
    with pytest.raises(TypeError):
        jax.jit(LOOPS[loop](jax.lax, out))(init)
    with pytest.raises(TypeError, match="output .* expected"):
        ours(LOOPS[loop](lax, out), init)


def test_an_int_out_of_the_carrys_range_is_a_type_error_naming_both():
    with pytest.raises(TypeError, match="the Python int 1000 does not fit int8"):
        ours(LOOPS["fori"](lax, 1000), np.int8(0))


@pytest.mark.parametrize("loop", sorted(LOOPS))
def test_a_python_scalar_of_the_carrys_kind_is_carried(loop):
    for out, init in ((2.5, np.float32(0)), (3, np.int32(0)), (False, np.bool_(True))):
        (got,) = ours(LOOPS[loop](lax, out), init)
        assert got.dtype == init.dtype and got == out


@pytest.mark.parametrize("lower, upper", [
    (0, np.int8(3)), (np.int16(0), 3), (np.int64(0), np.int64(3)), (0.0, 3.0),
    (np.int8(0), np.int8(3)), (1, 4)])
def test_the_fori_index_is_int32_as_jaxs(lower, upper):
    def f(L):
        return lambda v: L.fori_loop(lower, upper, lambda i, c: c + i * 5, v)
    (got,) = ours(f(lax), np.int32(1))
    want = np.asarray(jax.jit(f(jax.lax))(np.int32(1)))
    assert got.dtype == want.dtype == np.int32 and got == want


@pytest.mark.parametrize("lower, upper", [(np.uint8(1), np.int8(3)), (np.float32(0), 3)])
def test_fori_bounds_of_two_types_are_refused_as_jax_refuses_them(lower, upper):
    def f(L):
        return lambda v: L.fori_loop(lower, upper, lambda i, c: c, v)
    with pytest.raises(TypeError, match="lower and upper .* must have equal types"):
        jax.jit(f(jax.lax))(np.int32(1))
    with pytest.raises(TypeError, match="lower and upper must have equal types"):
        ours(f(lax), np.int32(1))


def _leaking(L, sibling: bool):
    leak = []

    def f(x):
        def body(c):
            leak.append(c * 2.0)
            return c + 1.0
        y = L.while_loop(lambda c: c < 3.0, body, x)
        if sibling:  # used inside another loop's body
            return L.while_loop(lambda c: c < 9.0, lambda c: c + leak[0], y)
        return y + leak[0]
    return f


@pytest.mark.parametrize("sibling", [False, True], ids=["after", "in-a-sibling-loop"])
def test_a_value_leaked_out_of_a_body_is_refused_as_jax_refuses_it(sibling):
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(_leaking(jax.lax, sibling))(np.float32(0))
    with pytest.raises(UnexpectedTracerError, match="trace has ended"):
        lax.make_jaxpr(_leaking(lax, sibling))(np.float32(0))


def test_a_value_of_an_earlier_make_jaxpr_is_refused():
    kept = []
    lax.make_jaxpr(lambda x: kept.append(x * 2.0) or x)(np.float32(0))
    with pytest.raises(UnexpectedTracerError):
        lax.make_jaxpr(lambda x: x + kept[0])(np.float32(0))
    with pytest.raises(UnexpectedTracerError):
        lax.make_jaxpr(lambda x: kept[0])(np.float32(0))


@pytest.mark.parametrize("kind", ["while", "scan", "cond"])
def test_a_token_in_a_carry_or_branch_is_a_type_error_saying_so(kind):
    f = {"while": lambda c: lax.while_loop(lambda s: s[1] < 3,
                                           lambda s: (lax.after_all(s[0]), s[1] + 1),
                                           (lax.create_token(), 0)),
         "scan": lambda c: lax.scan(lambda s, _: (s, None), lax.create_token(), None,
                                    length=2),
         "cond": lambda c: lax.cond(c > 0, lambda t: t, lambda t: t, lax.create_token())}[kind]
    with pytest.raises(TypeError, match="holds a token"):
        lax.make_jaxpr(lambda c: (f(c), c)[1])(np.float32(1))


@pytest.mark.parametrize("lower_dtype, upper", [(np.int32, np.int64(5)), (np.int8, 300),
                                                (np.int16, 7)])
def test_a_traced_fori_bound_converts_the_other_as_jax_does(lower_dtype, upper):
    def f(L):
        return lambda lo, v: L.fori_loop(
            lo, upper, lambda i, c: c + L.convert_element_type(i, np.int32), v)
    want = np.asarray(jax.jit(f(jax.lax))(lower_dtype(0), np.int32(0)))
    (got,) = ours(f(lax), lower_dtype(0), np.int32(0))
    assert got == want
