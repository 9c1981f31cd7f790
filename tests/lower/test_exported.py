"""call_exported: jax.export artifacts read by our parser, merged into the lowered module and
called, against jax.jit of the same caller: once per artifact however often it is called,
multi-platform artifacts (the platform index argument), and refusals that say why."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import lower.jax as lj

RNG = np.random.default_rng(5)
X = RNG.standard_normal((3, 4)).astype(np.float32)
Y = RNG.standard_normal((4, 2)).astype(np.float32)


def _g(x, y):
    return jnp.sin(x) @ y + 1, jnp.argmax(x, 0)


def _check(exported):
    def h(x, y):
        a, i = exported.call(x, y)
        b, _ = exported.call(x * 2, y)
        return a * 2 + b, i
    got, want = lj.jit(h)(X, Y), jax.jit(h)(X, Y)
    np.testing.assert_allclose(got[0], np.asarray(want[0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1], np.asarray(want[1]))
    text = lj.lower(h, X, Y).text
    assert text.count('sym_name = "call_exported__g"') == 1  # merged once, called twice
    assert text.count('callee = @call_exported__g') == 2
    return text


def test_an_exported_function_runs_inside_our_program():
    _check(export.export(jax.jit(_g))(X, Y))


def test_a_multi_platform_artifact_gets_the_platform_index():
    text = _check(export.export(jax.jit(_g), platforms=("tpu", "cpu"))(X, Y))
    assert "dense<1> : tensor<i32>" in text  # cpu is the second platform


def test_refusals_say_why():
    tpu_only = export.export(jax.jit(_g), platforms=("tpu",))(X, Y)
    with pytest.raises(ValueError, match=r"exported for \['tpu'\], not for 'cpu'"):
        lj.lower(lambda x, y: tpu_only.call(x, y), X, Y)
    (n,) = export.symbolic_shape("n")
    poly = export.export(jax.jit(lambda v: v * 2))(jax.ShapeDtypeStruct((n, 4), np.float32))
    with pytest.raises(NotImplementedError, match="symbolic shapes"):
        lj.lower(lambda x: poly.call(x), X)


def test_jax_text_of_ffi_calls_reads_back_and_runs_as_mhlo():
    """JAX writes typed-FFI calls (LAPACK, host callbacks) in StableHLO as api_version 1 with
    the configuration in ``mhlo.backend_config``; read by our parser, their MHLO print is XLA's
    conversion of them (api_version 4), which compiles: the same numbers as jax.jit."""
    import mhlo_ir as hlo
    import verify
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
    # (with Shardy, jax's default, the text holds sdy attributes our parser does not read)
    shardy = getattr(jax.config, "jax_use_shardy_partitioner", False)
    jax.config.update("jax_use_shardy_partitioner", False) if shardy else None
    try:
        text = jax.jit(jnp.linalg.cholesky).lower(a).as_text()
        exported = export.export(jax.jit(jnp.linalg.cholesky))(a)
    finally:
        jax.config.update("jax_use_shardy_partitioner", True) if shardy else None
    assert "mhlo.backend_config = {" in text
    m = hlo.parse(text)
    mhlo_text = m.to_text()
    assert "mhlo.backend_config" not in mhlo_text and "api_version = 4 : i32" in mhlo_text
    want = np.asarray(jax.jit(jnp.linalg.cholesky)(a))
    for t in (mhlo_text, m.to_text(dialect="stablehlo")):
        (got,) = verify.run(t, a)
        np.testing.assert_array_equal(got, want)
    # through call_exported, inside our own lowering
    np.testing.assert_array_equal(lj.jit(lambda x: exported.call(x) * 2)(a), want * 2)


def test_jax_spelling_of_ffi_calls_is_checked_as_xla_converts_it():
    import mhlo_ir as hlo
    from mhlo_ir.errors import OpBuildError
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((3,), hlo.f32)], visibility="public")
    b = f.builder()
    for bad, why in [(dict(api_version=2, backend_config=""), "goes with api_version 1"),
                     (dict(backend_config="x"), "an empty backend_config"),
                     (dict(), "must be a dictionary")]:
        config = "text" if why == "must be a dictionary" else {"a": 1}
        with pytest.raises(OpBuildError, match=why):
            b.custom_call("t", [f.arguments[0]], hlo.tensor((3,), hlo.f32),
                          **{"mhlo.backend_config": config, **bad})


def test_a_one_device_artifact_exported_with_shardy_runs_without_its_annotations():
    """jax's default partitioner (Shardy) writes a mesh, sharding constraints (typed keys)
    and op sharding rules (LAPACK calls) into the artifact: on one device they name nothing
    to split, and are left out."""
    a = np.array([[4, 1, 0], [1, 3, 1], [0, 1, 2]], np.float32)
    key = jax.random.key(0)

    def f(x, k):
        return jnp.linalg.cholesky(x) + jax.random.normal(k, (3, 3))
    shardy = getattr(jax.config, "jax_use_shardy_partitioner", None)
    if shardy is None:
        pytest.skip("this jax has no Shardy")
    jax.config.update("jax_use_shardy_partitioner", True)
    try:
        exported = export.export(jax.jit(f))(a, key)
    finally:
        jax.config.update("jax_use_shardy_partitioner", shardy)
    text = exported.mlir_module()
    assert "sdy.mesh" in text and "#sdy.op_sharding_rule" in text
    g = lambda x, k: exported.call(x, k) * 2  # noqa: E731
    np.testing.assert_array_equal(lj.jit(g)(a, key), np.asarray(jax.jit(g)(a, key)))


def test_a_shardy_artifact_for_several_devices_is_refused_saying_how_to_export_it():
    from lower.rules.exported import _without_shardy

    class Artifact:
        nr_devices, fun_name = 2, "f"
    with pytest.raises(NotImplementedError, match="jax_use_shardy_partitioner"):
        _without_shardy("module @m {\n  sdy.mesh @mesh = <[\"x\"=2]>\n}", Artifact())


def test_an_artifact_naming_sdy_in_a_string_is_no_shardy_artifact():
    """Only Shardy's constructs (a mesh, an sdy attribute) make an artifact a Shardy one:
    a result named "sdy.out" (a string in the text) is not one."""
    shardy = getattr(jax.config, "jax_use_shardy_partitioner", False)
    jax.config.update("jax_use_shardy_partitioner", False) if shardy else None
    try:
        exported = export.export(jax.jit(lambda x: {"sdy.out": x * 2}))(X)
    finally:
        jax.config.update("jax_use_shardy_partitioner", True) if shardy else None
    assert "sdy." in exported.mlir_module()
    f = lambda x: exported.call(x)["sdy.out"] + 1  # noqa: E731
    np.testing.assert_array_equal(lj.jit(f)(X), np.asarray(jax.jit(f)(X)))
