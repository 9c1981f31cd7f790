"""What XLA:CPU cannot compile of the ops XLA uses internally, refused in Python (kept open by
the second review of 2026-12-07, closed in the ninth session): a bitcast to another type, a
fusion of another kind than kLoop or with no results (kOutput with an add root aborts the
process), and an async_start of anything but one all_reduce, all_gather or
collective_permute (reduce_scatter aborts the process). Each refusal is shown needed with it
bypassed: in a subprocess where XLA takes the process down, in this one where it fails
cleanly; the forms that stay allowed run against numpy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
import verify.api as api
from tests.child_env import child_env
from tests.verify.test_api_refusals_cpu import _still_fails
from verify.errors import CompileError

T = hlo.tensor
f32 = hlo.f32


def _module(arg_types, build, m=None):
    m = m or hlo.Module("m")
    f = m.add_function("main", arg_types, visibility="public")
    b = f.builder()
    out = build(b, *f.arguments)
    b.return_(*(out if isinstance(out, (list, tuple)) else (out,)))
    return m.verify()


def _refused(m, pattern, replicas=1):
    for source in (m, m.to_text()):
        with pytest.raises(CompileError, match=pattern) as e:
            verify.compile(source, num_replicas=replicas)
        assert e.value.jaxlib_message is None


def _fails_bypassed(m, pattern, replicas=1, monkeypatch=None):
    with monkeypatch.context() as p:
        p.setattr(api, "_cpu_refusals", lambda m: None)
        with pytest.raises(CompileError, match=pattern):
            verify.compile(m, num_replicas=replicas)


def _aborts_bypassed(m, replicas=1):
    code = ("import mhlo_ir as hlo, verify, verify.api as api\n"
            "api._cpu_refusals = lambda m: None\n"
            f"verify.compile(hlo.parse(open(0).read()), num_replicas={replicas})\n"
            "print('compiled')\n")
    r = subprocess.run([sys.executable, "-c", code], input=m.to_text(), capture_output=True,
                       text=True, timeout=300, env=child_env())
    _still_fails(r, "compiled")
    assert r.returncode < 0 or "Check failed" in r.stderr, (r.returncode, r.stderr[-400:])


# -- bitcast ----------------------------------------------------------------------------------

@pytest.mark.parametrize("to, theirs", [
    (T((3, 2), f32), "Unexpected bitcast operation seen during layout assignment"),
    (T((2, 3), hlo.i32), "Unexpected bitcast operation"),
    (T((6,), f32), "minor_to_major field contains 1 elements"),
])
def test_a_bitcast_to_another_type_is_refused(to, theirs, monkeypatch):
    m = _module([T((2, 3), f32)], lambda b, x: b.bitcast(x, to))
    _refused(m, rf"'bitcast' of tensor<2x3xf32> to {to}: .*use 'bitcast_convert'")
    _fails_bypassed(m, theirs, monkeypatch=monkeypatch)


def test_an_identity_bitcast_runs():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = _module([T((2, 3), f32)], lambda b, a: b.bitcast(a, T((2, 3), f32)))
    np.testing.assert_array_equal(verify.run(m, x)[0], x)


# -- fusion -----------------------------------------------------------------------------------

def _dot_add_fusion(kind, root="add"):
    def build(b, x):
        w = b.constant(np.ones((4, 3), np.float32))
        c = b.constant(np.full((2, 3), 5, np.float32))

        def body(r, y, w, *c):
            d = r.dot_general(y, w, ((1,), (0,)))
            return [r.add(d, *c) if c else d]
        return b.fusion([x, w, c] if root == "add" else [x, w], body, fusion_kind=kind)
    return _module([T((2, 4), f32)], build)


def test_an_output_fusion_is_refused_where_xla_cpu_aborts_or_fails(monkeypatch):
    m = _dot_add_fusion("kOutput")
    _refused(m, "'fusion' of kind kOutput: XLA:CPU compiles fusions of kind kLoop")
    _aborts_bypassed(m)  # (dot_op_emitter.cc: "Check failed: addend_array_ == nullptr")
    _fails_bypassed(_dot_add_fusion("kOutput", root="dot"), "Dot fusion supports only `add` "
                    "root instruction", monkeypatch=monkeypatch)


@pytest.mark.parametrize("kind, theirs", [("kInput", "Unsupported fusion kind"),
                                          ("kCustom", "Fusion must have backend config")])
def test_input_and_custom_fusions_are_refused(kind, theirs, monkeypatch):
    m = _module([T((4,), f32)], lambda b, x: b.fusion([x], lambda r, y: [r.add(y, y)],
                                                      fusion_kind=kind))
    _refused(m, f"'fusion' of kind {kind}")
    _fails_bypassed(m, theirs, monkeypatch=monkeypatch)


def test_a_fusion_without_results_is_refused(monkeypatch):
    def build(b, x):
        b.fusion([x], lambda r, y: [])
        return x
    m = _module([T((4,), f32)], build)
    _refused(m, "'fusion' with no results")
    _fails_bypassed(m, "must have users", monkeypatch=monkeypatch)


def test_a_loop_fusion_of_a_dot_and_an_add_runs():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    got = verify.run(_dot_add_fusion("kLoop"), x)[0]
    np.testing.assert_array_equal(got, x @ np.ones((4, 3), np.float32) + 5)


# -- async_start ------------------------------------------------------------------------------

def _async(inner):
    m = hlo.Module("m")
    t = T((4,), f32)
    g = m.add_function("g", [t])
    gb = g.builder()
    gb.return_(inner(gb, g.arguments[0]))
    return _module([t], lambda b, x: b.async_done(b.async_start([x], g)), m)


_INNER = {
    "all_reduce": lambda b, a: b.all_reduce(a, "add", [[0, 1]]),
    "all_gather": lambda b, a: b.all_gather(a, 0, [[0, 1]]),
    "collective_permute": lambda b, a: b.collective_permute(a, [[0, 1], [1, 0]]),
}


def test_async_collectives_xla_runs_asynchronously_run_as_numpy():
    x0, x1 = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.float32) + 10
    want = {"all_reduce": [x0 + x1] * 2, "all_gather": [np.concatenate([x0, x1])] * 2,
            "collective_permute": [x1, x0]}
    for name, inner in _INNER.items():
        outs = verify.compile(_async(inner), num_replicas=2).run_sharded([[x0], [x1]])[0]
        for d in range(2):
            np.testing.assert_array_equal(outs[d], want[name][d], err_msg=name)


def test_an_async_reduce_scatter_is_refused_where_xla_aborts():
    m = _async(lambda b, a: b.reduce_scatter(a, 0, "add", [[0, 1]]))
    _refused(m, "@g holds 'reduce_scatter'", replicas=2)
    _aborts_bypassed(m, replicas=2)  # ("Check failed: buffer != nullptr")


@pytest.mark.parametrize("inner, ours, theirs", [
    (lambda b, a: b.negate(a), "@g holds 'negate'", "async-done expects the shape of output"),
    (lambda b, a: b.negate(b.all_reduce(a, "add", [[0, 1]])), "@g holds 2 ops",
     "expected to contain only the root and parameter instructions"),
    (lambda b, a: b.all_to_all(a, 0, 0, 2, [[0, 1]]), "@g holds 'all_to_all'",
     "Expected instruction to have shape equal to f32\\[4\\]"),
])
def test_other_async_computations_are_refused(inner, ours, theirs, monkeypatch):
    m = _async(inner)
    _refused(m, f"'async_start' of a function XLA cannot run asynchronously: {ours}",
             replicas=2)
    _fails_bypassed(m, theirs, replicas=2, monkeypatch=monkeypatch)
