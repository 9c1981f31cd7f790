"""Cases for fusion, composite and the async ops."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
import verify
from tests.mhlo_ir.ops.cases import assert_close, case, module, rand

f32, i32 = hlo.f32, hlo.i32
T23 = hlo.tensor((2, 3), f32)


# -- fusion, composite ----------------------------------------------------------------

@case("fusion", "loop_int", reference=lambda x, y: [x * y + x])
def _():
    # One result only: jaxlib 0.10's CPU compiler aborts the process on a multi-result fusion.
    def body(b, x, y):
        return b.fusion([x, y], lambda bb, p, q: bb.add(bb.multiply(p, q), p),
                        fusion_kind="kLoop")
    return module([hlo.tensor((3,), i32)] * 2, body), [rand((3,), np.int32), rand((3,), np.int32)]


@case("fusion", "default_kind_float", reference=lambda x: [np.negative(x)])
def _():
    # The default kind, kLoop, is the one XLA:CPU compiles (kInput: "Unsupported fusion kind").
    return module([T23], lambda b, x: b.fusion([x], lambda bb, p: bb.negate(p))), \
        [rand((2, 3), np.float32)]


def _composite_module(et, dtype, version=1):
    m = hlo.Module("case")
    t = hlo.tensor((3,), et)
    dec = m.add_function("my_double", [t], visibility="private")
    db = dec.builder()
    db.return_(db.add(dec.arguments[0], dec.arguments[0]))
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    r = b.composite("my.double", [f.arguments[0]], dec,
                       composite_attributes={"factor": 2}, version=version)
    b.return_(r)
    return m, [rand((3,), dtype)]


@case("composite", "f32", reference=lambda x: [x + x])
def _():
    return _composite_module(f32, np.float32)


@case("composite", "i16", reference=lambda x: [x + x])
def _():
    return _composite_module(hlo.i16, np.int16)


@case("composite", "version_0", reference=lambda x: [x + x])
def _():
    # Version 0 is the default, which MLIR's custom form leaves out.
    return _composite_module(f32, np.float32, version=0)


# -- async ------------------------------------------------------------------------------------

def _async_module(update=False):
    """main starts @sum (an all_reduce over replicas 0 and 1) and waits for it."""
    m = hlo.Module("case")
    t = hlo.tensor((3,), f32)
    callee = m.add_function("sum", [t], visibility="private")
    cb = callee.builder()
    cb.return_(cb.all_reduce(callee.arguments[0], lambda bb, p, q: bb.add(p, q),
                             replica_groups=[[0, 1]]))
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    bundle = b.async_start([f.arguments[0]], callee)
    if update:
        bundle = b.async_update(bundle)
    b.return_(b.async_done(bundle))  # one result: a Value
    return m


def _async_run():
    m = _async_module()
    exe = verify.compile(m, num_replicas=2)
    ins = [[rand((3,), np.float32)] for _ in range(2)]
    (out,) = exe.run_sharded(ins)
    for d in range(2):
        assert_close(out[d], ins[0][0] + ins[1][0], what=f"device {d}")


@case("async_start", "all_reduce_two_replicas", run=_async_run)
def _():
    return _async_module(), []


@case("async_done", "all_reduce_two_replicas", run=_async_run)
def _():
    return _async_module(), []


def _async_update_module():
    # A generic async computation (not one XLA:CPU turns into a collective start/done): it
    # converts to HLO, which is what verify.check runs; compiling it fails (see not_run).
    m = hlo.Module("case")
    t = hlo.tensor((3,), f32)
    callee = m.add_function("two", [t], visibility="private")
    cb = callee.builder()
    x = callee.arguments[0]
    cb.return_(cb.add(x, x), cb.multiply(x, x))
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    bundle = b.async_update(b.async_start([f.arguments[0]], callee))
    b.return_(*b.async_done(bundle))
    return m


@case("async_update", "generic_two_results_verified")
def _():
    return _async_update_module(), []
