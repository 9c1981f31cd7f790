"""Cases for tuples, tokens, add_dependency, the optimization barrier and domain."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from tests.mhlo_ir.ops.cases import case, module, rand

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


# -- domain ----------------------------------------------------------------------------------

@case("domain", "sharding_identity", reference=lambda x: [x])
def _():
    return module([T23], lambda b, x: b.domain(x, "{maximal device=0}", "{maximal device=0}")), \
        [rand((2, 3), np.float32)]
