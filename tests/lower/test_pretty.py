"""Jaxprs print in the layout jax.make_jaxpr prints."""

from __future__ import annotations

import numpy as np
import pytest

from lower import core, lax, tracing as tr
from lower.pretty import pp_jaxpr


def test_same_text_as_jax_for_a_param_free_program():
    jax = pytest.importorskip("jax")

    def f(a, b):
        return [(a + b) - b, -a, a]

    x = np.zeros((3,), np.float32)
    theirs = jax.make_jaxpr(f)(x, x)
    assert pp_jaxpr(theirs) == str(theirs)  # jax's own jaxpr, read by duck typing
    ours = lax.make_jaxpr(lambda a, b: [(a + b) - b, -a, a])(x, x)
    assert repr(ours) == str(theirs)


def test_names_literals_drops_tokens_and_nested_jaxprs():
    f32 = core.ShapedArray((), np.float32)
    vs = [core.Var(f32) for _ in range(30)]
    eqns = [core.JaxprEqn([vs[i], core.Literal(np.float32(-0.5), f32)], [vs[i + 1]],
                          core.Primitive("add"), {}) for i in range(28)]
    body = lax.make_jaxpr(lambda c: c + 1.0)(np.float32(0))
    eqns.append(core.JaxprEqn([vs[28]], [core.DropVar(f32), vs[29]], core.Primitive("w"),
                              {"body": body, "dtype": np.dtype(np.int8), "name": "x"}))
    text = pp_jaxpr(core.Jaxpr([], [vs[0]], [vs[29]], eqns))
    lines = text.splitlines()
    assert lines[0] == "{ lambda ; a:f32[]. let"
    assert lines[1] == "    b:f32[] = add a -0.5:f32[]"
    assert lines[26] == "    ba:f32[] = add z -0.5:f32[]"   # after z comes ba
    # names go on into nested jaxprs, as in JAX
    assert lines[29].startswith("    _:f32[] bd:f32[] = w[body={ lambda ; be:f32[]. let")
    assert "dtype=int8 name='x'] bc" in text
    assert lines[-1] == "  in (bd,) }"


@pytest.mark.parametrize("case", ["consts", "empty", "one_line", "80_columns", "81_columns"])
def test_same_text_as_jax_for_constants_and_one_line_jaxprs(case):
    """Constants print before ``;`` with no space; a jaxpr fitting in 80 columns prints on
    one line (equations joined by ``; ``), as jax.make_jaxpr's do."""
    jax = pytest.importorskip("jax")
    c = np.arange(3.0, dtype=np.float32)
    x = np.zeros((3,), np.float32)
    if case == "consts":
        theirs = jax.make_jaxpr(lambda a: a + jax.numpy.asarray(c))(x)
        ours = lax.make_jaxpr(lambda a: a + c)(x)
    elif case == "empty":
        theirs = jax.make_jaxpr(lambda a: (a, np.int32(3)))(x)
        ours = lax.make_jaxpr(lambda a: [a, np.int32(3)])(x)
    elif case == "80_columns":  # just fits on one line
        x = np.zeros((3000,), np.float32)
        theirs = jax.make_jaxpr(lambda a: jax.lax.sign(jax.lax.sign(a)))(x)
        ours = lax.make_jaxpr(lambda a: tr.sign(tr.sign(a)))(x)
    else:  # one_line; 81_columns: one column too many
        x = np.zeros((3,) if case == "one_line" else (30000,), np.float32)
        theirs = jax.make_jaxpr(lambda a: -(-a))(x)
        ours = lax.make_jaxpr(lambda a: -(-a))(x)
    assert len(str(theirs).splitlines()) == (1 if case != "81_columns" else 4)
    assert repr(ours) == str(theirs)
    assert pp_jaxpr(theirs) == str(theirs)


def test_nested_jaxprs_go_on_with_the_names_as_jax():
    jax = pytest.importorskip("jax")
    theirs = jax.make_jaxpr(lambda x: jax.lax.while_loop(lambda c: c < 3, lambda c: c + 1, x))(
        np.float32(1))
    text = pp_jaxpr(theirs)
    assert "body_jaxpr={ lambda ; c:f32[]. let" in text and "d:f32[] = add c 1.0:f32[]" in text
    assert "cond_jaxpr={ lambda ; e:f32[]. let" in text
    assert text.index("body_jaxpr=") < text.index("body_nconsts=") < text.index("cond_jaxpr=")
