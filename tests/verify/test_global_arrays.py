"""Executable.run_global: whole arrays split by the shardings XLA compiled, results put back
from their shards. The oracle is the data itself: a program that moves data (identity,
reversal, a sum over the sharded axis) gives exactly numpy's answer, whatever the input and
output shardings, tiled evenly or not, replicated along trailing tile dimensions, or iota
device orders."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mhlo_ir as hlo
import verify
from verify.errors import ArgumentError

SHARDINGS_2D = ["{replicated}", "{devices=[4,1]0,1,2,3}", "{devices=[1,4]<=[4]}",
                "{devices=[2,2]3,1,2,0}", "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}",
                "{devices=[2,2]<=[2,2]T(1,0)}", "{maximal device=2}"]


def _program(shape, in_sharding, out_sharding, op="identity"):
    m = hlo.Module("g", attributes={"mhlo.num_partitions": hlo.i32_attr(4)})
    t = hlo.tensor(shape, hlo.i32)
    f = m.add_function("main", [t], visibility="public",
                       arg_attrs=[{"mhlo.sharding": in_sharding}])
    b = f.builder()
    (x,) = f.arguments
    y = x if op == "identity" else b.reverse(x, [0])
    b.return_(b.add(y, b.constant(np.ones(shape, np.int32))))
    f.set_result_attr(0, "mhlo.sharding", out_sharding)
    return m


@settings(max_examples=14, deadline=None)
@given(rows=st.sampled_from([4, 6, 7]), cols=st.sampled_from([4, 5]),
       a=st.sampled_from(SHARDINGS_2D), b=st.sampled_from(SHARDINGS_2D),
       op=st.sampled_from(["identity", "reverse"]))
def test_whole_arrays_in_and_out_whatever_the_shardings(rows, cols, a, b, op):
    x = np.arange(rows * cols, dtype=np.int32).reshape(rows, cols)
    exe = verify.compile(_program((rows, cols), a, b, op), num_partitions=4)
    (got,) = exe.run_global(x)
    want = (x if op == "identity" else x[::-1]) + 1
    np.testing.assert_array_equal(got, want)


def test_outputs_xla_sharded_by_propagation_are_put_back():
    m = hlo.Module("p", attributes={"mhlo.num_partitions": hlo.i32_attr(4)})
    f = m.add_function("main", [hlo.tensor((8, 3), hlo.f32)], visibility="public",
                       arg_attrs=[{"mhlo.sharding": "{devices=[4,1]<=[4]}"}])
    b = f.builder()
    (x,) = f.arguments
    b.return_(b.multiply(x, x),
              b.reduce(x, b.constant(np.float32(0)), [0], lambda r, acc, v: r.add(acc, v)))
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    sq, total = verify.compile(m, num_partitions=4).run_global(x)
    np.testing.assert_array_equal(sq, x * x)
    np.testing.assert_array_equal(total, x.sum(0))


def test_replicas_get_whole_arrays_and_one_device_is_a_plain_call():
    m = hlo.Module("r")
    f = m.add_function("main", [hlo.tensor((3,), hlo.i32)], visibility="public")
    b = f.builder()
    b.return_(b.negate(f.arguments[0]))
    x = np.array([1, -2, 3], np.int32)
    np.testing.assert_array_equal(verify.compile(m, num_replicas=2).run_global(x)[0], -x)
    np.testing.assert_array_equal(verify.compile(m).run_global(x)[0], -x)


def test_manual_shardings_are_refused_with_the_way_out():
    with pytest.raises(ArgumentError, match="manual .* run_sharded"):
        exe = verify.compile(_program((4, 4), "{manual}", "{manual}"), num_partitions=4)
        exe.run_global(np.zeros((4, 4), np.int32))


def test_replicas_times_partitions():
    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    m = _program((4, 4), "{devices=[2,1]0,1}", "{replicated}")
    m.set_attr("mhlo.num_partitions", hlo.i32_attr(2))
    (got,) = verify.compile(m, num_replicas=2, num_partitions=2).run_global(x)
    np.testing.assert_array_equal(got, x + 1)
    # A tiled result here aborts jaxlib's process as it compiles: refused in Python.
    tiled = _program((4, 4), "{devices=[2,1]0,1}", "{devices=[1,2]0,1}")
    tiled.set_attr("mhlo.num_partitions", hlo.i32_attr(2))
    for program in (tiled, tiled.to_text()):
        with pytest.raises(verify.CompileError, match="jaxlib aborts the process"):
            verify.compile(program, num_replicas=2, num_partitions=2)
