"""Host callbacks built with mhlo_ir alone, compiled and run through jaxlib (no jax): values in
and out, ordering through tokens, loops and calls, failures as CallbackError naming the
callback, and every mistake jaxlib would crash on caught in Python first."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.errors import OpBuildError
from verify.errors import CallbackError, CompileError

F3 = hlo.tensor((3,), hlo.f32)
X = np.array([0.5, -1.0, 2.0], np.float32)


def _module(arg_types=(F3,)):
    m = hlo.Module("cb")
    f = m.add_function("main", list(arg_types), visibility="public")
    return m, f, f.builder()


def test_pure_callback_result_feeds_later_ops_and_types_are_kept():
    m, f, b = _module([F3, hlo.tensor((2,), hlo.i32)])
    x, k = f.arguments
    s, n = b.host_callback(lambda a, i: (np.sin(a), np.int32(i.sum())), [x, k],
                           [F3, hlo.tensor((), hlo.i32)])
    b.return_(b.multiply(s, s), n, b.host_callback(lambda a: a.astype(hlo.bf16.dtype),
                                                   [x], [hlo.tensor((3,), hlo.bf16)]))
    assert m.host_callbacks[0].name == "<lambda>" and len(m.host_callbacks) == 2
    sq, total, half = verify.run(m, X, np.array([3, 4], np.int32))
    np.testing.assert_array_equal(sq, np.sin(X) ** 2)
    assert total.dtype == np.int32 and total.shape == () and total == 7
    assert half.dtype == hlo.bf16.dtype
    np.testing.assert_array_equal(half, X.astype(hlo.bf16.dtype))


def test_python_scalars_take_the_declared_dtype():
    m, f, b = _module()
    (x,) = f.arguments
    b.return_(*b.host_callback(lambda a: (1.5, 7, True), [x],
                               [hlo.tensor((), hlo.f16), hlo.tensor((), hlo.ui8),
                                hlo.tensor((), hlo.i1)]))
    h, u, t = verify.run(m, X)
    assert (h.dtype, u.dtype, t.dtype) == (np.float16, np.uint8, np.bool_)
    assert (h, u, t) == (1.5, 7, True)


def test_ordered_callbacks_run_in_token_order_through_while_and_call():
    log = []
    m, f, b = _module()
    (x,) = f.arguments
    helper = m.add_function("note", [hlo.token(), F3], visibility="private")
    hb = helper.builder()
    t_in, v = helper.arguments
    hb.return_(hb.host_callback(lambda a: log.append(("call", float(a[0]))), [v],
                                token=t_in))
    t = b.create_token()
    t = b.host_callback(lambda a: log.append(("first", float(a[0]))), [x], token=t)

    def cond(cb, tok, i):
        return cb.compare(i, cb.constant(np.int32(3)), "LT")

    def body(bb, tok, i):
        tok = bb.host_callback(lambda n: log.append(("loop", int(n))), [i], token=tok)
        return [tok, bb.add(i, bb.constant(np.int32(1)))]

    t, _ = b.while_([t, b.constant(np.int32(0))], cond, body)
    t = b.call(helper, [t, x])
    b.host_callback(lambda a: log.append(("last", float(a[1]))), [x], token=t)
    b.return_(x)
    verify.run(m, X)
    assert log == [("first", 0.5), ("loop", 0), ("loop", 1), ("loop", 2), ("call", 0.5),
                   ("last", -1.0)]


def test_a_raising_callback_is_a_callback_error_from_it_and_the_program_still_runs():
    calls = []

    def flaky(a):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("first call fails")
        return a + 1

    m, f, b = _module()
    (x,) = f.arguments
    b.return_(b.host_callback(flaky, [x], [F3]))
    exe = verify.compile(m)
    with pytest.raises(CallbackError, match=r"host callback 'flaky' \(index 0\) raised "
                                            r"ValueError: first call fails") as e:
        exe(X)
    assert isinstance(e.value.__cause__, ValueError) and e.value.name == "flaky"
    np.testing.assert_array_equal(exe(X)[0], X + 1)


@pytest.mark.parametrize("ret, match", [
    (lambda a: a.astype(np.float64), r"result 0: expected dtype float32, got float64"),
    (lambda a: a[:2], r"result 0: expected shape \(3,\), got \(2,\)"),
    (lambda a: (a, a), r"returned 2 values, but the op declares 1 result"),
    (lambda a: None, r"returned 0 values, but the op declares 1 result"),
    (lambda a: ([1.5, 2, 3.5j],), r"result 0: expected dtype float32, got complex128"),
    (lambda a: (1e40,), r"got the Python scalar 1e\+40, but the parameter is an array"),
    (lambda a: np.ma.masked_array(a, [0, 1, 0]), r"result 0: a numpy masked array"),
])
def test_wrong_returns_are_refused_before_xla_copies_them(ret, match):
    m, f, b = _module()
    (x,) = f.arguments
    b.return_(b.host_callback(ret, [x], [F3], name="wrong"))
    with pytest.raises(CallbackError, match=match):
        verify.run(m, X)


def test_build_time_mistakes_name_the_op():
    m, f, b = _module()
    (x,) = f.arguments
    with pytest.raises(OpBuildError, match="removes it as dead code"):
        b.host_callback(print, [x], [], has_side_effect=False)
    with pytest.raises(OpBuildError, match="operand 0 must be a tensor.*token="):
        b.host_callback(print, [b.create_token()])
    with pytest.raises(OpBuildError, match="partitioned callback .* cannot return"):
        b.host_callback(print, [x], [F3], partitioned=True)
    with pytest.raises(OpBuildError, match="platform must be one of"):
        b.host_callback(print, [x], platform="tpu")
    with pytest.raises(TypeError, match="must be callable"):
        b.host_callback(42, [x])
    loose = hlo.Function("loose", [F3])
    with pytest.raises(OpBuildError, match="in a Module"):
        loose.builder().host_callback(print, [loose.arguments[0]])
    # By hand: jaxlib's requirements of the FFI target, said when the op is built.
    with pytest.raises(OpBuildError, match="must be a ui64 integer"):
        b.custom_call("xla_ffi_python_cpu_callback", [x], [], api_version=4,
                      backend_config={"index": 0}, has_side_effect=True)
    with pytest.raises(OpBuildError, match="api_version must be 4"):
        b.custom_call("xla_ffi_python_cpu_callback", [x], [], backend_config="",
                      has_side_effect=True)


def test_text_takes_its_callables_from_compile_and_is_checked_against_them():
    m, f, b = _module()
    (x,) = f.arguments
    b.return_(b.host_callback(np.cos, [x], [F3]))
    text = m.to_text()
    assert "backend_config = {index = 0 : ui64}" in text
    with pytest.raises(CompileError, match="no host callbacks were given"):
        verify.compile(text)
    np.testing.assert_array_equal(verify.compile(text, host_callbacks=[np.exp])(X)[0],
                                  np.exp(X))
    two = text.replace("index = 0 : ui64", "index = 1 : ui64")
    with pytest.raises(CompileError, match="has index 1, but only 1 host callbacks"):
        verify.compile(two, host_callbacks=[np.exp])
    # The parsed module prints the same op; its callables come from compile.
    parsed = hlo.parse(text)
    assert parsed.to_text() == text and parsed.host_callbacks == []
    np.testing.assert_array_equal(verify.compile(parsed, host_callbacks=[np.sin])(X)[0],
                                  np.sin(X))


def test_one_index_with_two_signatures_is_refused():
    m, f, b = _module([F3, hlo.tensor((2,), hlo.f32)])
    x, y = f.arguments
    b.host_callback(print, [x])
    b.host_callback(print, [y])
    b.return_(x)
    text = m.to_text().replace("index = 1 : ui64", "index = 0 : ui64")
    with pytest.raises(CompileError, match="called with two signatures"):
        verify.compile(text, host_callbacks=[print, print])


def test_gpu_targets_are_refused_on_cpu_and_tpu_compiles_are_refused():
    m, f, b = _module()
    (x,) = f.arguments
    b.host_callback(print, [x], platform="cuda")
    b.return_(x)
    with pytest.raises(CompileError, match="targets 'xla_ffi_python_gpu_callback'"):
        verify.compile(m)
    m2, f2, b2 = _module()
    b2.host_callback(print, [f2.arguments[0]])
    b2.return_(f2.arguments[0])
    with pytest.raises(CompileError, match="XLA:TPU calls back through send/recv"):
        verify.compile(m2, "tpu", topology="v5e:2x2")


def test_partitioned_callback_runs_once_per_device_on_its_shard():
    seen = []
    lock = threading.Lock()
    m = hlo.Module("p", attributes={"mhlo.num_partitions": hlo.i32_attr(2)})
    f = m.add_function("main", [hlo.tensor((4,), hlo.f32)], visibility="public",
                       arg_attrs=[{"mhlo.sharding": "{devices=[2]0,1}"}])
    b = f.builder()
    (x,) = f.arguments

    def note(a):
        with lock:
            seen.append(a.copy())
    op = b.host_callback(note, [x], partitioned=True)
    b.return_(x)
    with pytest.raises(CompileError, match="no mhlo.sharding, which XLA's SPMD partitioner"):
        verify.compile(m, num_partitions=2)
    op.set_attr("mhlo.sharding", "{devices=[2]0,1}")
    exe = verify.compile(m, num_partitions=2)
    exe.run_sharded([[np.array([1, 2], np.float32)], [np.array([3, 4], np.float32)]])
    assert sorted(map(tuple, seen)) == [(1.0, 2.0), (3.0, 4.0)]


def test_callbacks_are_per_module_and_printing_is_unchanged_by_them():
    def build():
        m, f, b = _module()
        (x,) = f.arguments
        b.return_(b.host_callback(np.tanh, [x], [F3]))
        return m
    a, c = build(), build()
    assert a.to_text() == c.to_text()
    assert a.host_callbacks[0] is not c.host_callbacks[0]
    np.testing.assert_allclose(verify.run(a, X)[0], np.tanh(X), rtol=1e-6)


def test_wrong_returns_name_the_callback_and_executables_with_callbacks_do_not_serialize():
    m, f, b = _module()
    (x,) = f.arguments
    b.return_(b.host_callback(lambda a: np.float64(1.0), [x], [hlo.tensor((), hlo.f32)],
                              name="scalar64"))
    exe = verify.compile(m)
    with pytest.raises(CallbackError, match="expected dtype float32, got float64") as e:
        exe(X)
    assert (e.value.name, e.value.index) == ("scalar64", 0)
    with pytest.raises(verify.ArgumentError, match="calls host callbacks"):
        exe.serialize()


def test_concurrent_runs_each_report_their_own_failure():
    m, f, b = _module([hlo.tensor((), hlo.i32)])
    (k,) = f.arguments

    def check(v):
        if int(v) % 2:
            raise ValueError(f"odd {int(v)}")
        return v
    b.return_(b.host_callback(check, [k], [k.type]))
    exe = verify.compile(m)
    errors: dict = {}

    def run(i):
        try:
            exe(np.int32(i))
        except CallbackError as e:
            errors[i] = str(e.__cause__)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == {i: f"odd {i}" for i in (1, 3, 5, 7)}


def _up_to_three(other):
    """A program whose callback returns its value once that is 3 or more, else the value
    plus one run through ``other(module)`` (an executable, or None: its own)."""
    m, f, b = _module()
    (x,) = f.arguments
    holder = {}

    def up(v):
        return holder["exe"](v + 1)[0] if v[0] < 3 else v.copy()
    b.return_(b.host_callback(up, [x], [F3]))
    exe = verify.compile(m)
    holder["exe"] = other(m) or exe
    return exe


def _within(seconds, fn):
    """``fn()``'s result or exception, or a failure if it runs past ``seconds`` (a hang)."""
    box = {}

    def go():
        try:
            box["out"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["err"] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    if "err" in box:
        raise box["err"]
    return box["out"]


def test_a_callback_running_its_own_executable_fails_clearly_and_another_one_runs():
    """An executable's runs are serialized, so a run from inside its own callback would wait
    forever: it is refused, saying so; an executable compiled again from the same module
    nests (XLA calls back on its own thread, and allows it)."""
    x = np.array([2, 3, 4], np.float32)
    own = _up_to_three(lambda m: None)
    with pytest.raises(CallbackError, match=r"'up' \(index 0\) raised RuntimeError: a host "
                                            r"callback of this executable ran the executable "
                                            r"again") as e:
        _within(60, lambda: own(x))
    assert isinstance(e.value.__cause__, RuntimeError)
    np.testing.assert_array_equal(_within(60, lambda: own(x + 1))[0], x + 1)  # (no nesting)
    twin = _up_to_three(verify.compile)
    np.testing.assert_array_equal(_within(60, lambda: twin(x))[0], x + 1)


def test_a_nested_callbacks_failure_names_each_callback_where_it_failed():
    """A callback running another program whose callback raises: the outer run's error
    names the outer callback, and its cause the inner one (it was relabelled before)."""
    m, f, b = _module()
    (v,) = f.arguments

    def inner(a):
        raise ValueError("inner failed")
    b.return_(b.host_callback(inner, [v], [F3]))
    inner_exe = verify.compile(m)
    m2, f2, b2 = _module()
    (w,) = f2.arguments
    b2.return_(b2.host_callback(lambda a: inner_exe(a)[0], [w], [F3], name="outer"))
    with pytest.raises(CallbackError, match=r"'outer' \(index 0\) raised CallbackError: "
                                            r"host callback 'inner'") as e:
        verify.run(m2, X)
    assert e.value.name == "outer" and e.value.__cause__.name == "inner"
    assert isinstance(e.value.__cause__.__cause__, ValueError)


# -- a review of 2026-12-07 --------------------------------------------------------------------

S = hlo.tensor((), hlo.f32)


def _add_on_host(p, q):
    return np.float32(p + q)


def _combined(kind):
    m, f, b = _module([hlo.tensor((4,), hlo.f32)])
    x, = f.arguments

    def body(r, a, e):
        return [r.host_callback(_add_on_host, [a, e], [S])]
    zero = b.constant(np.float32(0))
    if kind == "reduce":
        out = b.reduce(x, zero, [0], body)
    elif kind == "reduce_window":
        out = b.reduce_window(x, zero, [2], body)
    else:
        dn = hlo.ScatterDimensionNumbers(update_window_dims=[], inserted_window_dims=[0],
                                         scatter_dims_to_operand_dims=[0],
                                         index_vector_dim=1)
        out = b.scatter(x, b.constant(np.array([[1]], np.int32)),
                        b.constant(np.array([10], np.float32)), dn, body)
    b.return_(out)
    return m


@pytest.mark.parametrize("kind", ["reduce", "reduce_window", "scatter"])
def test_a_callback_in_a_combining_body_is_refused_before_xla_aborts(kind):
    m = _combined(kind)
    with pytest.raises(CompileError, match=f"inside a '{kind}' body.*aborts the process"):
        verify.run(m, np.arange(4, dtype=np.float32))
    # the refusal bypassed: XLA:CPU aborts the process (operand_maps.size() == 1)
    import subprocess
    import sys
    from tests.child_env import child_env
    code = ("import numpy as np, verify, verify.host_callbacks as h\n"
            "from tests.verify.test_host_callbacks import _combined\n"
            "h._COMBINING = frozenset()\n"
            f"verify.run(_combined({kind!r}), np.arange(4, dtype=np.float32))\n"
            "print('ran')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=child_env())
    assert "ran" not in r.stdout, "XLA ran it: the refusal is out of date"
    assert r.returncode < 0 or "operand_maps" in r.stderr, (r.returncode, r.stderr[-300:])


def _doubled_text():
    m, f, b = _module([hlo.tensor((2, 3), hlo.f32)])
    x, = f.arguments
    # (not elementwise: a permutation in and back out would cancel)
    b.return_(b.host_callback(lambda a: a + _RAMP, [x], [hlo.tensor((2, 3), hlo.f32)]))
    return m, m.to_text()


_RAMP = np.arange(6, dtype=np.float32).reshape(2, 3) * 100


def test_a_callback_with_column_major_layouts_in_text_is_refused(monkeypatch):
    m, text = _doubled_text()
    col = text.replace("_layouts = [dense<[1, 0]> : tensor<2xindex>]",
                       "_layouts = [dense<[0, 1]> : tensor<2xindex>]")
    assert col.count("dense<[0, 1]>") == 2
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with pytest.raises(CompileError, match="operand 0 has layout \\[0, 1\\], not row-major"):
        verify.compile(col, host_callbacks=m.host_callbacks)
    # the check bypassed: the callable sees (and returns) permuted values, silently
    import mhlo_ir.ops.host_callbacks as hc
    monkeypatch.setattr(hc, "check_call", lambda *a: None)
    got = verify.compile(col, host_callbacks=m.host_callbacks)(x)[0]
    assert not np.array_equal(got, x + _RAMP)
    np.testing.assert_array_equal(verify.compile(text, host_callbacks=m.host_callbacks)(x)[0],
                                  x + _RAMP)


def test_a_token_after_the_first_result_in_text_names_the_op():
    m, f, b = _module()
    tok, y = b.host_callback(lambda a: a + 1, [f.arguments[0]], [F3], token=b.create_token())
    b.return_(y)
    text = m.to_text()
    bad = text.replace("result_layouts = [dense<> : tensor<0xindex>, dense<0> : "
                       "tensor<1xindex>]}> : (!mhlo.token, tensor<3xf32>) -> (!mhlo.token, "
                       "tensor<3xf32>)", "result_layouts = [dense<0> : tensor<1xindex>, "
                       "dense<> : tensor<0xindex>]}> : (!mhlo.token, tensor<3xf32>) -> "
                       "(tensor<3xf32>, !mhlo.token)").replace('"func.return"(%1#1)',
                                                               '"func.return"(%1#0)')
    assert bad != text
    with pytest.raises(CompileError, match="only the first result may be a token"):
        verify.compile(bad, host_callbacks=m.host_callbacks)  # (was an AttributeError)


def test_an_exception_whose_message_cannot_be_read_is_still_a_callback_error():
    class Weird(Exception):
        def __str__(self):
            raise RuntimeError("no message")

    def cb(a):
        raise Weird()
    m, f, b = _module()
    b.return_(b.host_callback(cb, [f.arguments[0]], [F3]))
    with pytest.raises(CallbackError, match="raised Weird: <Weird whose message cannot be read>"):
        verify.run(m, X)


def test_a_run_reentered_through_another_program_s_callback_is_refused_not_hung():
    # A's callback runs B, whose callback (on another of XLA's threads) runs A again: A's
    # runs are serialized, so the nested run would wait forever; it is refused as the
    # direct case is, whatever thread XLA calls B's callback on
    execs = {}

    def compiled(name, fn):
        m, f, b = _module()
        b.return_(b.host_callback(fn, [f.arguments[0]], [F3], name=name))
        return verify.compile(m)

    def a_cb(v):
        return execs["B"](v + 1)[0] if v[0] < 3 else v.copy()

    def b_cb(v):
        return execs["A"](v)[0]
    execs["A"], execs["B"] = compiled("A", a_cb), compiled("B", b_cb)
    box = {}

    def go():
        try:
            box["out"] = execs["A"](np.zeros(3, np.float32))
        except BaseException as e:  # noqa: BLE001
            box["err"] = e
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the nested run hangs"
    err = box.get("err")
    assert isinstance(err, CallbackError), box
    assert "ran the executable again" in str(err)
