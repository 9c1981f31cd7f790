"""Cases for tuples, tokens, custom calls, barriers, domain, fusion, composite, async ops and
host/channel transfers."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
import verify
from mhlo_ir.mhlo_attributes import ChannelHandle
from tests.mhlo_ir.ops.cases import assert_close, case, module, rand

f32, i32 = hlo.f32, hlo.i32
T23 = hlo.tensor((2, 3), f32)


# -- tuple, get_tuple_element -------------------------------------------------------------------

@case("tuple", "mixed_round_trip", reference=lambda x, y: [y, x])
def _():
    def body(b, x, y):
        t = b.tuple([x, y, b.create_token()])
        return b.get_tuple_element(t, 1), b.get_tuple_element(t, 0)
    return module([T23, hlo.tensor((4,), hlo.i1)], body), \
        [rand((2, 3), np.float32), rand((4,), bool)]


@case("tuple", "nested", reference=lambda x: [x])
def _():
    def body(b, x):
        inner = b.tuple([x])
        outer = b.tuple([inner, b.tuple([])])
        return b.get_tuple_element(b.get_tuple_element(outer, 0), 0)
    return module([hlo.tensor((3,), hlo.complex64)], body), [rand((3,), np.complex64)]


@case("get_tuple_element", "each_index", reference=lambda x, y, z: [z, y, x])
def _():
    def body(b, x, y, z):
        t = b.tuple([x, y, z])
        return [b.get_tuple_element(t, i) for i in (2, 1, 0)]
    return module([hlo.tensor((2,), hlo.i8), hlo.tensor((), f32), hlo.tensor((1, 2), hlo.ui64)],
                  body), [rand((2,), np.int8), rand((), np.float32), rand((1, 2), np.uint64)]


# -- tokens ----------------------------------------------------------------------------------

@case("create_token", "ordering_a_value", reference=lambda x: [x])
def _():
    return module([T23], lambda b, x: b.add_dependency(x, b.create_token())), \
        [rand((2, 3), np.float32)]


@case("after_all", "joins_tokens", reference=lambda x: [x * 2])
def _():
    def body(b, x):
        t = b.after_all(b.create_token(), b.create_token(), b.after_all())
        return b.add(b.add_dependency(x, t), x)
    return module([hlo.tensor((3,), i32)], body), [rand((3,), np.int32)]


@case("add_dependency", "float_and_int", reference=lambda x, y: [x, y])
def _():
    def body(b, x, y):
        t = b.create_token()
        return b.add_dependency(x, t), b.add_dependency(y, b.after_all(t))
    return module([T23, hlo.tensor((2,), hlo.ui8)], body), \
        [rand((2, 3), np.float32), rand((2,), np.uint8)]


@case("optimization_barrier", "values_and_token",
      reference=lambda x, y: [np.float32(2) * x, y])
def _():
    def body(b, x, y):
        bx, by, _ = b.optimization_barrier(x, y, b.create_token())
        return b.add(bx, bx), by
    return module([T23, hlo.tensor((2,), hlo.i1)], body), \
        [rand((2, 3), np.float32), rand((2,), bool)]


# -- custom_call ------------------------------------------------------------------------------

def _top2(x):
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :2].astype(np.int32)
    return [np.take_along_axis(x, idx, -1), idx]


@case("custom_call", "TopK_decomposed_by_xla", reference=_top2)
def _():
    # "TopK" is a target XLA itself rewrites (TopkDecomposer), so it runs on CPU.
    return module([hlo.tensor((2, 5), f32)], lambda b, x: b.custom_call(
        "TopK", [x], [hlo.tensor((2, 2), f32), hlo.tensor((2, 2), i32)])), \
        [np.float32([[3, 1, 4, 1.5, 9], [2, 7, 1, 8, 2.5]])]


@case("custom_call", "Sharding_annotation", reference=lambda x: [x])
def _():
    return module([hlo.tensor((4,), hlo.i64)], lambda b, x: b.custom_call(
        "Sharding", [x], hlo.tensor((4,), hlo.i64), **{"mhlo.sharding": "{replicated}"})), \
        [rand((4,), np.int64)]


@case("custom_call", "api4_dict_config_verified")
def _():
    return module([T23], lambda b, x: b.custom_call(
        "my_target", [x], T23, api_version=4, backend_config={"alpha": 1.5},
        has_side_effect=True)), [rand((2, 3), np.float32)]


# -- domain, fusion, composite ----------------------------------------------------------------

@case("domain", "sharding_identity", reference=lambda x: [x])
def _():
    return module([T23], lambda b, x: b.domain(x, "{maximal device=0}", "{maximal device=0}")), \
        [rand((2, 3), np.float32)]


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


def _composite_module(et, dtype):
    m = hlo.Module("case")
    t = hlo.tensor((3,), et)
    dec = m.add_function("my_double", [t], visibility="private")
    db = dec.builder()
    db.return_(db.add(dec.arguments[0], dec.arguments[0]))
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    r = b.composite("my.double", [f.arguments[0]], dec,
                       composite_attributes={"factor": 2}, version=1)
    b.return_(r)
    return m, [rand((3,), dtype)]


@case("composite", "f32", reference=lambda x: [x + x])
def _():
    return _composite_module(f32, np.float32)


@case("composite", "i16", reference=lambda x: [x + x])
def _():
    return _composite_module(hlo.i16, np.int16)


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


# -- send, recv, infeed, outfeed (verified only: see their not_run reasons) ---------------------

@case("send", "host_and_device_channels")
def _():
    def body(b, x):
        t = b.send([x], b.create_token(), ChannelHandle(1, 2), is_host_transfer=True)
        return b.add_dependency(x, b.send([x, x], t, 3))
    return module([T23], body), [rand((2, 3), np.float32)]


@case("recv", "host_and_device_channels")
def _():
    def body(b, x):
        y, t = b.recv(b.create_token(), [T23], ChannelHandle(2, 3), is_host_transfer=True)
        z, w, t2 = b.recv(t, [T23, hlo.tensor((2,), i32)], 4)
        return b.add(b.add(x, y), z), w
    return module([T23], body), [rand((2, 3), np.float32)]


@case("infeed", "two_values_with_layout")
def _():
    def body(b, x):
        y, z, _ = b.infeed(b.create_token(), [T23, hlo.tensor((2,), i32)], layout=[[1, 0], [0]])
        return b.add(x, y), z
    return module([T23], body), [rand((2, 3), np.float32)]


@case("outfeed", "two_values")
def _():
    def body(b, x, y):
        t = b.outfeed([x, y], b.create_token(), outfeed_config="cfg")
        return b.add_dependency(x, t)
    return module([T23, hlo.tensor((2,), i32)], body), \
        [rand((2, 3), np.float32), rand((2,), np.int32)]
