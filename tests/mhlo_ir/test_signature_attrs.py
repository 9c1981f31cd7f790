"""Argument and result attributes XLA reads, checked by Module.verify before jaxlib sees
them (mhlo_ir.signature_attrs): each refusal beside jaxlib's own failure on the same module
with the check bypassed, and the values jaxlib takes, compiled."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import ModuleVerificationError
from mhlo_ir import verifier

F2 = hlo.tensor((2,), hlo.f32)


def _module(args, results=None, arg_attrs=(), res_attrs=()):
    """@main over ``args`` returning ``results`` (zeros; default: the arguments)."""
    m = hlo.Module("s")
    f = m.add_function("main", list(args), visibility="public")
    for i, name, value in arg_attrs:
        f.set_arg_attr(i, name, value)
    b = f.builder()
    outs = list(f.arguments) if results is None else [
        b.after_all(f.arguments[0]) if isinstance(t, hlo.TokenType) else
        b.broadcast_in_dim(b.constant(np.zeros((), t.element_type.dtype)), t.shape, [])
        for t in results]
    b.return_(*outs)
    for i, name, value in res_attrs:
        f.set_result_attr(i, name, value)
    return m


def _jaxlib_fails(monkeypatch, m, words, step=verify.compile):
    """With the signature checks bypassed, jaxlib fails on ``m`` saying ``words``."""
    monkeypatch.setattr(verifier, "entry_problem", lambda *a: None)
    monkeypatch.setattr(verifier, "alias_problem", lambda *a: None)
    monkeypatch.setattr(verifier, "shared_alias", lambda *a: None)
    with pytest.raises(Exception, match=words):
        step(m)


def _aliased(args, results, *pairs):
    return _module(args, results, [(i, "tf.aliasing_output", k) for i, k in pairs])


def test_two_arguments_aliased_to_one_result_are_refused(monkeypatch):
    m = _aliased([F2, F2], [F2], (0, 0), (1, 0))
    with pytest.raises(ModuleVerificationError, match=r"@main: arguments 0 and 1 are both "
                                                      r"aliased \(tf.aliasing_output\) to "
                                                      "result 0"):
        m.verify()
    _jaxlib_fails(monkeypatch, m, "output index {} is already aliased with param 0",
                  verify.check)


def test_an_alias_to_or_from_a_token_is_refused(monkeypatch):
    m = _aliased([hlo.token(), F2], [F2], (0, 0))
    with pytest.raises(ModuleVerificationError, match=r"argument 0: tf.aliasing_output 0 "
                                                      "aliases !token with result 0, "
                                                      "tensor<2xf32>: XLA aliases tensors"):
        m.verify()
    _jaxlib_fails(monkeypatch, m, r"param_subshape.IsArray\(\)")


@pytest.mark.parametrize("arg, result", [
    (F2, F2), (F2, hlo.tensor((2,), hlo.i32)), (hlo.tensor((4,), hlo.f32),
                                                 hlo.tensor((2, 2), hlo.f32)),
    (F2, hlo.tensor((4,), hlo.f16)), (hlo.tensor((4,), hlo.i4), hlo.tensor((2,), hlo.i8)),
    (hlo.tensor((0,), hlo.f32), hlo.tensor((0, 3), hlo.i8))])
def test_aliases_of_one_size_in_bytes_compile_and_run(arg, result):
    m = _aliased([arg], [result], (0, 0))
    c = verify.compile(m)
    c(*[np.zeros(s, d) for s, d in c.parameters])


def test_an_alias_of_another_size_is_refused_on_cpu(monkeypatch):
    m = _aliased([hlo.tensor((4,), hlo.i4)], [hlo.tensor((4,), hlo.i8)], (0, 0))
    m.verify()  # (a backend that pads to tiles may take it)
    with pytest.raises(verify.CompileError, match=r"@main: argument 0 \(tensor<4xi4>, 2 "
                                                  r"bytes\) is aliased \(tf.aliasing_output\) "
                                                  r"to result 0 \(tensor<4xi8>, 4 bytes\)"):
        verify.compile(m.to_text())
    import verify.api as api
    monkeypatch.setattr(api, "_cpu_refusals", lambda m: None)
    with pytest.raises(verify.CompileError, match="to have the same size"):
        verify.compile(m)


def test_jax_donations_pass():
    # what jax emits: one argument per result, of the same type; jax.buffer_donor otherwise
    m = _aliased([F2, F2, F2], [F2, F2], (0, 1), (1, 0))
    m.lookup("main").set_arg_attr(2, "jax.buffer_donor", True)
    m.verify()
    verify.compile(m)


def test_an_aliased_argument_that_is_also_a_buffer_donor_is_refused(monkeypatch):
    m = _aliased([F2], [F2], (0, 0))
    m.lookup("main").set_arg_attr(0, "jax.buffer_donor", True)
    with pytest.raises(ModuleVerificationError, match="argument 0: tf.aliasing_output 0 and "
                                                      "jax.buffer_donor both given"):
        m.verify()
    _jaxlib_fails(monkeypatch, m, "already aliased with one output", verify.check)


F23 = hlo.tensor((2, 3), hlo.f32)


@pytest.mark.parametrize("value, why, jaxlib", [
    ("bogus", r"is neither \"default\", \"auto\" nor an XLA layout", "Error parsing user-"),
    ("{1,0:bogus}", "is neither", "Error parsing user-specified layout mode"),
    ("{0}", r"lists dimensions \[0\], expected an order of \[0, 1\]",
     "minor_to_major field contains 1 elements"),
    ("{1,1}", r"lists dimensions \[1, 1\]", "duplicate values")])
@pytest.mark.parametrize("side", ["argument", "result"])
def test_a_layout_mode_xla_cannot_read_is_refused(monkeypatch, value, why, jaxlib, side):
    attrs = [(0, "mhlo.layout_mode", value)]
    m = _module([F23], None, *((attrs, ()) if side == "argument" else ((), attrs)))
    with pytest.raises(ModuleVerificationError, match=f"@main, {side} 0: mhlo.layout_mode "
                                                      f"'.*' {why}"):
        m.verify()
    _jaxlib_fails(monkeypatch, m, jaxlib)


@pytest.mark.parametrize("value", ["bogus", "host", "Device", ""])
def test_an_unknown_memory_kind_is_refused(monkeypatch, value):
    m = _module([F23], None, [(0, "mhlo.memory_kind", value)])
    with pytest.raises(ModuleVerificationError, match=f"argument 0: mhlo.memory_kind "
                                                      f"'{value}' is not a memory kind; XLA "
                                                      "knows device, pinned_host, "
                                                      "unpinned_host"):
        m.verify()
    _jaxlib_fails(monkeypatch, m, "Unknown memory kind")


@pytest.mark.parametrize("name, value", [
    ("mhlo.layout_mode", v) for v in ("default", "auto", "{1,0}", "{0,1}", " {1, 0} ",
                                      "{1,0:E(4)}")] + [
    ("mhlo.memory_kind", v) for v in ("device", "pinned_host", "unpinned_host")])
def test_the_values_xla_reads_compile_and_run(name, value):
    m = _module([F23], None, [(0, name, value)], [(0, name, value)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    if value == "{0,1}":  # (verify.run hands a column-major buffer's bytes back as row-major)
        verify.compile(m)
    else:
        np.testing.assert_array_equal(verify.run(m, x)[0], x)


_CALLEE = '''module @m {{
  func.func private @g(%a: {t} {{{attrs}}}) -> tensor<2xf32> {{
    %c = mhlo.constant dense<1.0> : tensor<2xf32>
    func.return %c : tensor<2xf32>
  }}
  func.func public @main(%x: tensor<2xf32>, %t: !mhlo.token) -> tensor<2xf32> {{
    %0 = func.call @g({arg}) : ({t}) -> tensor<2xf32>
    func.return %0 : tensor<2xf32>
  }}
}}'''


@pytest.mark.parametrize("t,attrs,arg", [
    ("!mhlo.token", "tf.aliasing_output = 0 : i32", "%t"),
    ("tensor<2xf32>", "tf.aliasing_output = 0 : i32, jax.buffer_donor = true", "%x"),
    ("tensor<2xf32>", 'mhlo.layout_mode = "bogus"', "%x"),
    ("tensor<2xf32>", 'mhlo.layout_mode = "{0,1}"', "%x"),
    ("tensor<2xf32>", 'mhlo.memory_kind = "bogus"', "%x"),
])
def test_a_private_functions_attributes_are_not_the_entrys(t, attrs, arg):
    """jaxlib reads these of @main alone (jax writes layout modes of private functions
    too): on a callee they compile, and Module.verify takes them."""
    text = _CALLEE.format(t=t, attrs=attrs, arg=arg)
    verify.compile(hlo.parse(text))
    with pytest.raises(ModuleVerificationError):  # (the same on @main is refused)
        hlo.parse(text.replace("func.func private @g", "func.func private @g2").replace(
            "@main", "@g").replace("@g2", "@main").replace("func.call @g(", "func.call @main("))
