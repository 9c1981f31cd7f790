"""Jaxprs print in the layout jax.make_jaxpr prints."""

from __future__ import annotations

import numpy as np
import pytest

from lower import core, lax
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
    assert lines[29].startswith("    _:f32[] bd:f32[] = w[body={ lambda ; a:f32[]. let")
    assert "dtype=int8 name='x'] bc" in text
    assert lines[-1] == "  in (bd,) }"
