"""Compile-only TPU through libtpu (the ``tpu`` extra): every op case, SPMD programs read back
from XLA's optimized HLO, a lowered MLP whose flops are counted by hand, and the errors.

Oracles: XLA:TPU itself (what it compiles, the shapes and collectives its partitioner writes
into the optimized HLO, its cost model), hand-counted flops, and the committed
``docs/tpu_results.json``, which ``--record-tpu-results`` rewrites from a run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from lower import lax, lower_jaxpr_to_module
from lower import tracing as tr
from lower.axis_context import Mesh, P, spec_to_hlo_sharding
from mhlo_ir import f32, tensor
from tests.child_env import child_env

pytestmark = pytest.mark.tpu

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "tpu_results.json"
TOPOLOGY = "v5e:2x2"


def matmul_module(x_sharding, w_sharding, out_sharding, m=16, k=32, n=8):
    mod = hlo.Module("matmul")
    fn = mod.add_function("main", [tensor((m, k), f32), tensor((k, n), f32)],
                          visibility="public",
                          arg_attrs=[{"mhlo.sharding": x_sharding},
                                     {"mhlo.sharding": w_sharding}],
                          res_attrs=[{"mhlo.sharding": out_sharding}])
    b = fn.builder()
    x, w = fn.arguments
    b.return_(b.dot(x, w))
    return mod


# -- every op case ----------------------------------------------------------------------------

def test_every_op_case_compiles_for_tpu_or_is_listed(request):
    """Each case compiles for v5e:2x2 in a worker process (XLA:TPU aborts on some programs);
    the outcome of every case is the committed docs/tpu_results.json, whose reasons are
    docs/op_coverage.md's TPU column."""
    from tests.verify import tpu_cases
    from verify.conformance.pool import run_tasks
    ids = sorted(tpu_cases.cases())
    results = run_tasks(ids, 2, 300, {"worker_module": "tests.verify.tpu_cases",
                                      "topology": TOPOLOGY})
    got = {}
    for case_id, r in zip(ids, results):
        if r["status"] == "compiles":
            got[case_id] = "compiles"
        elif r["status"] == "crash":
            got[case_id] = tpu_cases.crash_reason(case_id)
        else:
            got[case_id] = r["reason"]
    path = request.config.getoption("--record-tpu-results")
    if path:
        Path(path).write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        return
    want = json.loads(RESULTS.read_text())
    changed = {k: (want.get(k), v) for k, v in got.items() if want.get(k) != v}
    assert not changed, ("TPU outcomes differ from docs/tpu_results.json (rerun with "
                         f"--record-tpu-results=docs/tpu_results.json): {changed}")
    assert set(want) == set(got)
    assert sum(v == "compiles" for v in got.values()) > 400


# -- SPMD: what the partitioner made --------------------------------------------------------

@pytest.mark.parametrize("topology,n", [("v5e:2x2", 4), ("v5e:2x4", 8)])
def test_sharded_matmul_rows_need_no_collective(topology, n):
    devices = ",".join(map(str, range(n)))
    m = matmul_module(f"{{devices=[{n},1]{devices}}}", "{replicated}",
                      f"{{devices=[{n},1]{devices}}}")
    c = verify.compile(m, "tpu", topology=topology, num_partitions=n)
    assert c.shard_shapes() == [(16 // n, 32), (32, 8)]
    text = c.optimized_hlo()
    assert f"f32[{16 // n},8]" in text
    assert "all-reduce" not in text and "all-gather" not in text


@pytest.mark.parametrize("topology,n", [("v5e:2x2", 4), ("v5e:2x4", 8)])
def test_sharded_contraction_gets_an_all_reduce(topology, n):
    devices = ",".join(map(str, range(n)))
    m = matmul_module(f"{{devices=[1,{n}]{devices}}}", f"{{devices=[{n},1]{devices}}}",
                      "{replicated}")
    c = verify.compile(m, "tpu", topology=topology, num_partitions=n)
    assert c.shard_shapes() == [(16, 32 // n), (32 // n, 8)]
    text = c.optimized_hlo()
    assert "all-reduce" in text
    assert f"f32[16,{32 // n}]" in text


def test_shard_map_with_an_explicit_psum():
    mesh = Mesh.create({"x": 4})
    rows = spec_to_hlo_sharding(mesh, P("x"), 2)

    def f(v):
        return lax.shard_map(lambda u: lax.psum(tr.tanh(u), "x"), mesh, in_specs=(P("x"),),
                             out_specs=P())(v)
    closed = tr.make_jaxpr(f)(np.zeros((8, 128), np.float32))
    m = lower_jaxpr_to_module("shmap", closed, arg_shardings=[rows],
                              result_shardings=["{replicated}"], num_partitions=4).module
    c = verify.compile(m, "tpu", topology=TOPOLOGY, num_partitions=4)
    assert c.shard_shapes() == [(2, 128)]
    text = c.optimized_hlo()
    assert "all-reduce" in text and "tanh" in text
    assert "f32[2,128]" in text


# -- a lowered program and its cost ---------------------------------------------------------

def test_lowered_mlp_forward_and_backward_flops():
    jax = pytest.importorskip("jax")
    layers, batch, width = 3, 8, 64

    def fwd(x, w, b):
        for _ in range(layers):
            x = jax.numpy.maximum(x @ w + b, 0.0)
        return x
    closed = jax.make_jaxpr(lambda x, w, b: jax.grad(lambda x: fwd(x, w, b).sum())(x))(
        np.zeros((batch, width), np.float32), np.zeros((width, width), np.float32),
        np.zeros((width,), np.float32))
    m = lower_jaxpr_to_module("mlp", closed).module
    tpu = verify.compile(m, "tpu", topology=TOPOLOGY)
    cpu = verify.compile(m)
    # 2 * M * N * K per dot: one forward and one backward dot per layer.
    dots = 2 * layers * 2 * batch * width * width
    # Per layer, a dozen elementwise ops at most over (batch, width) (add, max, two compares,
    # two selects, a divide, a multiply, ...), each at most one flop per element: XLA counted
    # 29 per element for these 3 layers (jaxlib 0.10.2), a dot at half its flops would fail.
    elementwise = layers * 12 * batch * width
    for c in (tpu, cpu):
        flops = c.cost_analysis()["flops"]
        assert dots <= flops <= dots + elementwise, (c.platform, flops, dots)
    assert tpu.memory_stats()["argument_size_in_bytes"] >= 4 * (batch * width + width * width
                                                               + width)
    assert len(tpu.serialize()) > 1000 and len(cpu.serialize()) > 1000
    assert "T(8,128)" in tpu.optimized_hlo()          # TPU tiled layouts
    assert not tpu.runnable and cpu.runnable


# -- errors ---------------------------------------------------------------------------------

def _add():
    m = hlo.Module("add")
    fn = m.add_function("main", [tensor((4,), f32)], visibility="public")
    b = fn.builder()
    b.return_(b.add(fn.arguments[0], fn.arguments[0]))
    return m


def test_unknown_topologies_list_the_accepted_forms():
    with pytest.raises(ValueError, match="not of the form GENERATION:CHIPS; for example "
                                         "v5e:2x2"):
        verify.compile(_add(), "tpu", topology="nonsense")
    with pytest.raises(ValueError, match="libtpu does not accept topology 'v9:2x2'.*"
                                         "accepted forms: v5e:2x2"):
        verify.compile(_add(), "tpu", topology="v9:2x2")
    with pytest.raises(ValueError, match="topology= is for platform='tpu'"):
        verify.compile(_add(), "cpu", topology="v5e:2x2")


def test_more_partitions_than_chips():
    with pytest.raises(ValueError, match="topology v5e:2x2 has 4 chips; the program needs 8"):
        verify.compile(_add(), "tpu", topology="v5e:2x2", num_partitions=8)


def test_compile_only_programs_do_not_run():
    c = verify.compile(_add(), "tpu", topology=TOPOLOGY)
    with pytest.raises(verify.ArgumentError, match="compiled for TPU topology v5e:2x2 "
                                                   "without one"):
        c(np.zeros(4, np.float32))
    if not verify._jaxlib.tpu_attached():
        # without a topology, "tpu" is the attached TPU, and there is none here
        with pytest.raises(verify.PlatformUnavailable, match="no TPU is attached"):
            verify.run(_add(), np.zeros(4, np.float32), platform="tpu")
        with pytest.raises(verify.PlatformUnavailable, match="topology='v5e:2x2'"):
            verify._jaxlib.client("tpu")


def test_an_op_xla_tpu_refuses_names_the_op_and_its_line():
    """XLA:TPU has no f64 FFT: its message, pointing at the fft's line of the text."""
    m = hlo.Module("fft")
    fn = m.add_function("main", [tensor((2, 8), hlo.f64)], visibility="public")
    b = fn.builder()
    b.return_(b.fft(fn.arguments[0], "RFFT", [8]))
    assert verify.compile(m).runnable   # CPU compiles it
    with pytest.raises(verify.CompileError) as e:
        verify.compile(m, "tpu", topology=TOPOLOGY)
    assert "Unexpected operand type for FFT: f64[2,8]" in e.value.error
    assert "mhlo.fft" in e.value.source_line and e.value.op_name == "mhlo.fft"


def test_an_op_without_stablehlo_form_is_refused_in_python():
    m = hlo.Module("dep")
    fn = m.add_function("main", [tensor((4,), f32)], visibility="public")
    b = fn.builder()
    x = fn.arguments[0]
    b.return_(b.add_dependency(x, b.create_token()))
    with pytest.raises(verify.CompileError, match="XLA:TPU takes StableHLO.*'add_dependency' "
                                                  "has no stablehlo form") as e:
        verify.compile(m, "tpu", topology=TOPOLOGY)
    assert e.value.jaxlib_message is None


def test_without_libtpu_the_error_names_the_extra():
    code = ("import sys; sys.modules['libtpu'] = None\n"
            "import verify, mhlo_ir as hlo\n"
            "m = hlo.Module('a'); f = m.add_function('main', [hlo.tensor((2,), hlo.f32)], "
            "visibility='public'); b = f.builder(); b.return_(f.arguments[0])\n"
            "try:\n    verify.compile(m, 'tpu', topology='v5e:2x2')\n"
            "except verify.PlatformUnavailable as e:\n    print('ERR', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, env=child_env(), timeout=300)
    assert "ERR platform 'tpu' is not available here (libtpu is not installed: pip install "\
           "'mhlo-ir[tpu]')" in r.stdout, r.stdout + r.stderr


def test_command_line_shows_a_tpu_compile(tmp_path, capsys):
    from verify import cli
    src = tmp_path / "mm.mlir"
    src.write_text(matmul_module("{devices=[1,8]0,1,2,3,4,5,6,7}",
                                 "{devices=[8,1]0,1,2,3,4,5,6,7}", "{replicated}")
                   .to_text(dialect=hlo.STABLEHLO, pretty=True))
    assert cli.main([str(src), "--platform", "tpu", "--topology", "v5e:2x4",
                     "--num-partitions", "8", "--show", "hlo,cost,memory,shapes"]) == 0
    out = capsys.readouterr().out
    assert "compiled for TPU topology v5e:2x4; parameters (float32[16, 32], float32[32, 8])" \
        in out
    assert "all-reduce" in out and "flops: " in out and "peak_memory_in_bytes: " in out
    assert "parameter 0: [16, 4]" in out and "parameter 1: [4, 8]" in out


@pytest.mark.parametrize("src,dst,refused", [
    (hlo.complex64, hlo.complex128, True), (hlo.f32, hlo.complex128, True),
    (hlo.complex128, hlo.complex64, True), (hlo.complex128, hlo.f32, False),
    (hlo.f32, hlo.f64, False)])
def test_converts_that_abort_xla_tpu_are_refused_in_python(src, dst, refused):
    """XLA:TPU aborts the process on converts to and from complex128 (its 64-bit emulation:
    "Unsupported CVT X{64|128} expansion"); the ones it compiles still compile."""
    m = hlo.Module("cvt")
    fn = m.add_function("main", [tensor((8,), src)], visibility="public")
    b = fn.builder()
    b.return_(b.convert(fn.arguments[0], dst))
    if not refused:
        assert verify.compile(m, "tpu", topology=TOPOLOGY).cost_analysis() is not None
        return
    with pytest.raises(verify.CompileError, match=r"'convert' converts .* XLA:TPU aborts the "
                                                  r"process on it") as e:
        verify.compile(m, "tpu", topology=TOPOLOGY)
    assert e.value.jaxlib_message is None


@pytest.mark.parametrize("op, refused", [
    ("abs", True), ("divide", True), ("tanh", True), ("sine", True), ("rsqrt", True),
    ("add", False), ("exponential", False), ("sqrt", False)])
def test_complex128_ops_that_abort_xla_tpu_are_refused_in_python(op, refused):
    """XLA:TPU's 64-bit emulation aborts the process on these complex128 ops ("Check failed:
    operand->shape().IsTuple()", each measured in a child); its neighbours compile. Text is
    refused as a Module is (our parser reads it)."""
    t = tensor((4,), hlo.complex128)
    m = hlo.Module("c")
    fn = m.add_function("main", [t, t], visibility="public")
    b = fn.builder()
    x, y = fn.arguments
    b.return_(b.abs(x) if op == "abs" else b.create(
        op, (x, y) if op in ("divide", "add") else (x,)).results[0])
    if not refused:
        assert verify.compile(m, "tpu", topology=TOPOLOGY).cost_analysis() is not None
        return
    for source in (m, m.to_text()):
        with pytest.raises(verify.CompileError, match=rf"'{op}' of complex128 .* XLA:TPU "
                                                      "aborts the process on it") as e:
            verify.compile(source, "tpu", topology=TOPOLOGY)
        assert e.value.jaxlib_message is None


_JAX_SHARDY_TEXT = r"""
import numpy as np, jax, jax.numpy as jnp, verify
from jax.experimental import topologies
from jax.sharding import NamedSharding, PartitionSpec as P
jax.config.update("jax_use_shardy_partitioner", True)
topo = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x2")
mesh = jax.sharding.Mesh(np.array(sorted(topo.devices, key=lambda d: d.id)), ("x",))
s = NamedSharding(mesh, P("x"))
f = jax.jit(lambda x: jnp.tanh(x) * 2, in_shardings=s, out_shardings=s)
text = f.trace(jax.ShapeDtypeStruct((16, 128), np.float32, sharding=s)).lower().as_text()
assert "sdy.mesh" in text
print(verify.compile(text, "tpu", topology="v5e:2x2", num_partitions=4).shard_shapes())
"""


def test_jax_text_with_shardy_shardings_compiles_with_shardy():
    """jax writes its shardings in Shardy's dialect (its default partitioner): verify's MLIR
    context reads it, and XLA partitions it with Shardy, as jax's own compile does."""
    r = subprocess.run([sys.executable, "-c", _JAX_SHARDY_TEXT], capture_output=True, text=True,
                       timeout=300, env=child_env(TPU_SKIP_MDS_QUERY="1"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().endswith("[(4, 128)]"), r.stdout


def test_a_lowered_jax_function_compiles_for_a_tpu_topology():
    import jax.numpy as jnp

    import lower.jax as lj
    low = lj.lower(lambda x: jnp.tanh(x) @ x, np.ones((8, 8), np.float32), platform="tpu")
    compiled = low.compile("tpu", topology=TOPOLOGY)
    assert not compiled.runnable
    assert compiled.cost_analysis()["flops"] >= 2 * 8 * 8 * 8  # (the matmul, by hand)


def test_bf16_attention_compiles_for_tpu_with_its_dot_algorithm():
    import jax
    import ml_dtypes

    import lower.jax as lj
    q = np.ones((1, 8, 2, 16), ml_dtypes.bfloat16)
    low = lj.lower(lambda v: jax.nn.dot_product_attention(v, v, v), q, platform="tpu")
    assert "#mhlo.dot_algorithm<lhs_precision_type = bf16" in low.text
    assert low.compile("tpu", topology=TOPOLOGY).cost_analysis()["flops"] > 0


@pytest.mark.parametrize("lhs,rhs", [("bf16", "f32"), ("i8", "f32"), ("i8", "bf16")])
def test_products_of_two_element_types_compile_for_tpu_as_jax_lowers_them(lhs, rhs):
    """jax's rule keeps the operand types of a mixed float/integer dot_general on TPU (no
    converts: tests/lower/test_jax_text_parity.py), and XLA:TPU compiles that program."""
    jax = pytest.importorskip("jax")
    import lower.jax as lj

    types = {"bf16": jax.numpy.bfloat16, "f32": np.float32, "i8": np.int8}
    a, b = np.ones((8, 128), types[lhs]), np.ones((128, 8), types[rhs])
    f = lambda a, b: jax.lax.dot(a, b, preferred_element_type=np.float32)  # noqa: E731
    module = lj.lower(f, a, b, platform="tpu").module
    text = module.to_text()
    assert f"tensor<8x128x{lhs}>, tensor<128x8x{rhs}>" in text and "convert" not in text
    verify.compile(module, "tpu", topology=TOPOLOGY)
