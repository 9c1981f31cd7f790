"""Cases for send, recv, infeed and outfeed (verified only: see their not_run reasons)."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.mhlo_attributes import ChannelHandle
from tests.mhlo_ir.ops.cases import case, module, rand

f32, i32 = hlo.f32, hlo.i32
T23 = hlo.tensor((2, 3), f32)


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
