"""``result_accuracy`` on the transcendental ops (``mhlo_ir.result_accuracy``): JAX writes it
for ``lax.exp(x, accuracy=...)``, and our parser refused the text. Oracles: MLIR's generic
and default prints of our text (the bindings in jaxlib), jax's own text read back, and
jax.jit's numbers for our lowering of the same jaxpr."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir.result_accuracy import OPS, ResultAccuracy
from tests import oracle

T = hlo.tensor((3,), hlo.f32)


def _module():
    m = hlo.Module("acc")
    f = m.add_function("main", [T], visibility="public")
    b = f.builder()
    x, = f.arguments
    y = b.create("exponential", [x], {"result_accuracy": {"mode": "TOLERANCE", "atol": 1e-5,
                                                          "rtol": 0.001, "ulps": 2}}).result
    z = b.create("tanh", [y], {"result_accuracy": "HIGHEST"}).result
    w = b.create("log", [z], {"result_accuracy": ResultAccuracy()}).result  # DEFAULT
    v = b.create("sine", [w], {"result_accuracy": {"mode": "TOLERANCE", "ulps": 3}}).result
    b.return_(v)
    return m


@pytest.mark.parametrize("dialect", [hlo.MHLO, hlo.STABLEHLO], ids=["mhlo", "stablehlo"])
def test_result_accuracy_prints_as_mlir_prints_it_and_reads_back(dialect):
    m = _module()
    generic = m.to_text(locations=False, dialect=dialect)
    oracle.assert_fixed_point(generic)
    assert f"#{dialect.name}.result_accuracy<ulps = 3, mode = #{dialect.name}." \
           "result_accuracy_mode<TOLERANCE>>" in generic
    pretty = m.to_text(locations=False, dialect=dialect, pretty=True)
    ir, ctx = oracle._context()
    with ctx, ir.Location.unknown():
        assert pretty == ir.Module.parse(generic).operation.get_asm()
    assert "DEFAULT" in generic and "DEFAULT" not in pretty  # (the custom form leaves it out)
    assert hlo.parse(generic).to_text(locations=False, dialect=dialect) == generic
    assert hlo.parse(pretty).to_text(locations=False, dialect=dialect, pretty=True) == pretty


@pytest.mark.parametrize("value, message", [
    ("FAST", "mode must be one of DEFAULT, HIGHEST, TOLERANCE"),
    ({"mode": "HIGHEST", "atol": 1e-5}, "mode HIGHEST takes no tolerances"),
    ({"mode": "TOLERANCE", "atol": -1.0}, "atol must be a finite float >= 0"),
    ({"mode": "TOLERANCE", "ulps": -2}, "ulps must be an int in"),
    ({"mode": "TOLERANCE", "ulps": 2**63}, "ulps must be an int in"),  # (MLIR: too large)
    ({"mode": "TOLERANCE", "atol": -0.0}, "not -0.0"),  # (MLIR: "Negative tolerance")
])
def test_an_accuracy_mlir_would_refuse_is_refused_when_built(value, message):
    m = hlo.Module("bad")
    f = m.add_function("main", [T])
    b = f.builder()
    with pytest.raises(hlo.OpBuildError, match=f"'exponential' attribute result_accuracy: "
                                               f".*{message}"):
        b.create("exponential", [f.arguments[0]], {"result_accuracy": value})


def test_only_the_transcendental_functions_take_one():
    from mhlo_ir.ops.spec import REGISTRY
    assert {n for n, s in REGISTRY.items() if "result_accuracy" in s.attributes} == OPS


def test_jaxs_text_reads_back_and_our_lowering_writes_what_jax_writes():
    jax = pytest.importorskip("jax")
    import lower.jax as lj
    lax = jax.lax

    def f(x):
        return (lax.exp(x, accuracy=lax.Tolerance(atol=1e-5, rtol=1e-3, ulps=2)),
                lax.tanh(x, accuracy=lax.AccuracyMode.HIGHEST), lax.sin(x))
    x = np.linspace(0.1, 2, 3).astype(np.float32)
    theirs = jax.jit(f).lower(x).as_text()
    read = hlo.parse(theirs)
    ir, ctx = oracle._context()
    with ctx, ir.Location.unknown():
        want = ir.Module.parse(theirs).operation.get_asm()
    assert read.to_text(dialect=hlo.STABLEHLO, pretty=True, locations=False) == \
        want.replace(f"module @{read.name} attributes", f"module @{read.name} attributes")
    ours = lj.jit(f).lower(x).as_text()

    def accuracies(text):
        return sorted(set(a.split("}")[0] for a in text.split("result_accuracy = ")[1:]))
    assert accuracies(ours) == accuracies(theirs) and len(accuracies(ours)) == 2
    for got, w in zip(lj.jit(f)(x), jax.jit(f)(x)):
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-6)


@pytest.mark.parametrize("body", [
    "mode = #mhlo.result_accuracy_mode<TOLERANCE>, atol = 1.0",
    "mode = #mhlo.result_accuracy_mode<TOLERANCE>, ulps = 0",
    "ulps = 1, atol = 1.0, mode = #mhlo.result_accuracy_mode<TOLERANCE>",
    "atol = 1.0"])
def test_fields_out_of_mlirs_order_are_refused_as_mlir_refuses_them(body):
    text = ("func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = mhlo.exponential "
            f"%a {{result_accuracy = #mhlo.result_accuracy<{body}>}} : tensor<3xf32>\n"
            "  return %0 : tensor<3xf32>\n}")
    ir, ctx = oracle._context()
    with ctx, ir.Location.unknown(), pytest.raises(Exception):
        ir.Module.parse(text)
    with pytest.raises(hlo.ParseError):
        hlo.parse(text)


def test_every_accurate_primitive_gets_its_accuracy_as_jax_writes_it():
    """The rules of sin, cos, log, log1p and sqrt (complex-aware) and exp2 dropped it."""
    jax = pytest.importorskip("jax")
    import lower.jax as lj
    lax = jax.lax
    acc = lax.Tolerance(atol=1e-5, rtol=0.0, ulps=1)
    cases = [(f, np.float32) for f in (lax.exp, lax.expm1, lax.tanh, lax.tan, lax.rsqrt,
                                       lax.cbrt, lax.sin, lax.cos, lax.log, lax.log1p,
                                       lax.sqrt, lax.exp2)]
    cases += [(f, np.complex64) for f in (lax.log, lax.log1p, lax.sqrt)]
    for fn, dt in cases:
        x = (np.arange(1, 4) / 2).astype(dt)
        g = lambda v, fn=fn: fn(v, accuracy=acc)  # noqa: E731
        want = jax.jit(g).lower(x).as_text().count("result_accuracy =")
        assert lj.jit(g).lower(x).as_text().count("result_accuracy =") == want == 1, fn
        np.testing.assert_allclose(lj.jit(g)(x), np.asarray(jax.jit(g)(x)), rtol=1e-6)
