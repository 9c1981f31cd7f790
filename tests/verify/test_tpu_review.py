"""What a TPU compile (compile-only, through libtpu, no TPU) refuses in Python because libtpu
would take the process down (a review of 2026-12-07): each refusal is shown to be needed by
compiling the same program with the refusal bypassed in a subprocess, where the process dies;
and what the review found refused or unread wrongly now compiles and reads."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from tests.child_env import child_env
from verify.errors import CompileError

pytestmark = pytest.mark.tpu

TOPOLOGY = "v5e:2x2"
T = hlo.tensor((8, 128), hlo.f32)

# Builders of the programs, by name, run here and in the bypassing subprocess alike.
BUILD = """
import numpy as np, mhlo_ir as hlo
def i2_add():
    t = hlo.tensor((32, 128), hlo.i2)
    m = hlo.Module("m"); f = m.add_function("main", [t, t], visibility="public")
    b = f.builder(); b.return_(b.add(*f.arguments)); return m, {}
def c128_tiled():
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((8, 128), hlo.complex128)], visibility="public",
                       arg_attrs=[{"mhlo.sharding": "{devices=[4,1]0,1,2,3}"}])
    b = f.builder(); b.return_(b.add(f.arguments[0], f.arguments[0]))
    return m, {"num_partitions": 4}
def device_send():
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((4,), hlo.f32)], visibility="public")
    b = f.builder()
    b.send([f.arguments[0]], b.create_token(), hlo.ChannelHandle(1, 1),
           is_host_transfer=False, source_target_pairs=[[0, 1]])
    b.return_(f.arguments[0]); return m, {"num_replicas": 2}
def internal_target():
    t = hlo.tensor((8, 128), hlo.f32)
    m = hlo.Module("m"); f = m.add_function("main", [t], visibility="public")
    b = f.builder(); b.return_(b.custom_call("X64Combine", [f.arguments[0]], [t]))
    return m, {}
def wrong_topk():
    t = hlo.tensor((8, 128), hlo.f32)
    m = hlo.Module("m"); f = m.add_function("main", [t], visibility="public")
    b = f.builder(); b.return_(b.custom_call("TopK", [f.arguments[0]], [t])); return m, {}
"""
_ns: dict = {}
exec(BUILD, _ns)


@pytest.mark.parametrize("name, message", [
    ("i2_add", "'add' of tensor<32x128xi2>"),
    ("c128_tiled", "complex128 values with a tiled sharding"),
    ("device_send", "'send' between devices"),
    ("internal_target", "internal target X64Combine"),
    ("wrong_topk", "calls TopK wrongly"),
])
def test_what_libtpu_aborts_on_is_refused_in_python(name, message):
    m, kw = _ns[name]()
    with pytest.raises(CompileError, match=message) as e:
        verify.compile(m, "tpu", topology=TOPOLOGY, **kw)
    assert e.value.jaxlib_message is None
    code = (BUILD + "import verify, verify.api as api\n"
            "api._tpu_refusals = lambda m: None\n"
            "api._tpu_partitioned_refusals = lambda m: None\n"
            f"m, kw = {name}()\n"
            f"verify.compile(m, 'tpu', topology={TOPOLOGY!r}, **kw)\n"
            "print('compiled')\n")
    _dies(code)


def _dies(code: str) -> None:
    """Run ``code`` (a compile with a refusal bypassed) in a subprocess: libtpu must take it
    down; a compile that prints "compiled" means the refusal can be lifted (skip)."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=child_env())
    if r.returncode == 0 and "compiled" in r.stdout:
        pytest.skip("this libtpu compiles it: the refusal can be lifted for it")
    assert r.returncode < 0, (r.returncode, r.stderr[-500:])


def test_two_bit_values_may_still_be_made_and_converted():
    t2 = hlo.tensor((32, 128), hlo.i2)
    m = hlo.Module("m")
    f = m.add_function("main", [t2], visibility="public")
    b = f.builder()
    b.return_(b.convert(f.arguments[0], hlo.i8))
    verify.compile(m, "tpu", topology=TOPOLOGY)


def test_a_v5e_side_over_sixteen_chips_is_a_value_error():
    m = hlo.Module("m")
    f = m.add_function("main", [T], visibility="public")
    b = f.builder()
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    with pytest.raises(ValueError, match="at most 16 chips on a side"):
        verify.compile(m, "tpu", topology="v5e:32x32")
    code = ("import mhlo_ir as hlo, verify, verify.tpu as tpu\n"
            "tpu._V5E_SIDE = 99\n"
            "m = hlo.Module('m')\n"
            "f = m.add_function('main', [hlo.tensor((8, 128), hlo.f32)], visibility='public')\n"
            "b = f.builder(); b.return_(b.add(f.arguments[0], f.arguments[0]))\n"
            "verify.compile(m, 'tpu', topology='v5e:32x32')\n"
            "print('compiled')\n")
    _dies(code)


def test_a_manual_argument_sharding_is_refused_on_tpu_too():
    m = hlo.Module("m")
    f = m.add_function("main", [T], visibility="public", arg_attrs=[{"mhlo.sharding":
                                                                       "{manual}"}])
    b = f.builder()
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    with pytest.raises(CompileError, match=r"\{manual\} in a partitioned program"):
        verify.compile(m, "tpu", topology=TOPOLOGY, num_partitions=4)


def test_per_device_shapes_of_a_bounded_dynamic_parameter():
    text = ('func.func public @main(%arg0: tensor<?x128xf32, #stablehlo.bounds<16, ?>> '
            '{mhlo.sharding = "{devices=[4,1]0,1,2,3}"}) -> tensor<?x128xf32, '
            '#stablehlo.bounds<16, ?>> {\n'
            '  %0 = stablehlo.add %arg0, %arg0 : tensor<?x128xf32, #stablehlo.bounds<16, ?>>\n'
            '  return %0 : tensor<?x128xf32, #stablehlo.bounds<16, ?>>\n}\n')
    c = verify.compile(text, "tpu", topology=TOPOLOGY, num_partitions=4)
    assert c.shard_shapes() == [(4, 128)]   # (the bound, 16, split four ways)


def test_replicas_and_partitions_with_a_tiled_result_compile_for_a_topology():
    # (refused where a loaded executable is built: jaxlib aborts there; compile-only is fine)
    m = hlo.Module("m", attributes={"mhlo.num_partitions": 2})
    f = m.add_function("main", [T], visibility="public",
                       res_attrs=[{"mhlo.sharding": "{devices=[2,1]0,1}"}])
    b = f.builder()
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    c = verify.compile(m, "tpu", topology=TOPOLOGY, num_replicas=2, num_partitions=2)
    assert not c.runnable and "ENTRY" in c.optimized_hlo()
    np.testing.assert_equal(c.shard_shapes(), [(8, 128)])
