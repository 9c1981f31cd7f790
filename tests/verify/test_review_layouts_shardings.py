"""How arrays go into partitioned programs and laid-out parameters (a review of 2026-12-07):
an ``{unreduced}`` sharding XLA's partitioner aborts the process on is refused in Python
(checked with the refusal bypassed in a subprocess, where jaxlib aborts); run_global says
which argument it cannot split; a parameter layout is refused only where jaxlib's copy would
give the program other bytes (a size-1 dimension's order moves nothing; tiles that pad do),
checked against numpy with the check bypassed."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from tests.child_env import child_env
from verify.errors import ArgumentError, CompileError

T84 = hlo.tensor((8, 4), hlo.i32)
X84 = np.arange(32, dtype=np.int32).reshape(8, 4)


def _doubling(arg_sharding=None, result_sharding=None, partitions=2):
    m = hlo.Module("u", attributes={"mhlo.num_partitions": partitions})
    f = m.add_function("main", [T84], visibility="public")
    if arg_sharding:
        f.set_arg_attr(0, "mhlo.sharding", arg_sharding)
    b = f.builder()
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    if result_sharding:
        f.set_result_attr(0, "mhlo.sharding", result_sharding)
    return m


def _aborts_without_the_refusal(m, propagate):
    code = ("import mhlo_ir as hlo, verify, verify.api as api\n"
            "api._whole_sharding_refusal = lambda m, p: None\n"  # ({manual} is refused there too)
            f"verify.compile(hlo.parse(open(0).read()), num_partitions=2, "
            f"propagate_result_shardings={propagate})\n"
            "print('compiled')\n")
    r = subprocess.run([sys.executable, "-c", code], input=m.to_text(), capture_output=True,
                       text=True, timeout=300, env=child_env())
    if r.returncode == 0 and "compiled" in r.stdout:
        pytest.fail("jaxlib compiled it: the refusal is out of date")
    assert r.returncode < 0 or "IsTiledLeaf" in r.stderr, (r.returncode, r.stderr[-400:])


@pytest.mark.parametrize("arg, result, propagate", [
    (None, "{unreduced}", False),
    ("{replicated}", "{unreduced}", False),
    ("{unreduced}", None, True),
], ids=["result", "result_after_replicated_arg", "arg_with_free_results"])
def test_an_unreduced_sharding_the_partitioner_aborts_on_is_refused(arg, result, propagate):
    m = _doubling(arg, result)
    with pytest.raises(CompileError, match=r"\{unreduced\} in a partitioned program.*"
                                           "IsTiledLeaf") as e:
        verify.compile(m, num_partitions=2, propagate_result_shardings=propagate)
    assert e.value.jaxlib_message is None
    with pytest.raises(CompileError, match="IsTiledLeaf"):  # text, as our parser reads it
        verify.compile(m.to_text(), num_partitions=2, propagate_result_shardings=propagate)
    _aborts_without_the_refusal(m, propagate)


def test_an_unreduced_argument_runs_per_device_and_run_global_says_so():
    exe = verify.compile(_doubling("{unreduced}"), num_partitions=2)
    with pytest.raises(ArgumentError, match="argument 0: an array with sharding "
                                            r"\{unreduced\}.*run_sharded"):
        exe.run_global(X84)
    outs = exe.run_sharded([[X84], [X84 + 1]])
    # (each device adds its own value to itself; the result is replicated from device 0's)
    np.testing.assert_array_equal(outs[0][0], 2 * X84)


def _laid_out(shape, layout):
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    return (f'module @m {{\nfunc.func public @main(%arg0: {t} {{mhlo.layout_mode = "{layout}"}})'
            f" -> {t} {{\n  %0 = mhlo.add %arg0, %arg0 : {t}\n  return %0 : {t}\n}}\n}}\n")


@pytest.mark.parametrize("shape, layout, refused", [
    ((1, 3), "{0,1}", False),     # a size-1 dimension: the same bytes in either order
    ((3, 1), "{0,1}", False),
    ((2, 3), "{0,1}", True),      # bypassed: the transposed array's numbers
    ((2, 3), "{1,0:T(2,128)}", True),   # tiles pad it: jaxlib's run fails on the size
    ((2, 3), "{1,0:T(4)}", True),
    ((4, 6), "{1,0:T(2,3)}", False),    # tiles that pad nothing: XLA:CPU reads it untiled
])
def test_a_parameter_layout_is_refused_where_the_run_would_read_other_bytes(shape, layout,
                                                                              refused):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    exe = verify.compile(_laid_out(shape, layout))
    if not refused:
        np.testing.assert_array_equal(exe(x)[0], 2 * x)
        return
    with pytest.raises(ArgumentError, match="argument 0: the program takes it in"):
        exe(x)
    exe._layouts_checked = True   # the check bypassed: what jaxlib does with it
    try:
        got = exe(x)[0]
    except Exception as e:  # noqa: BLE001 - jaxlib's own error type
        assert "incompatible size" in str(e) or "Mismatch" in str(e), e
    else:
        assert not np.array_equal(got, 2 * x), "jaxlib ran it right: the refusal is too wide"


def test_a_manual_sharding_on_main_is_refused_before_the_partitioner_aborts():
    m = _doubling("{manual}")
    with pytest.raises(CompileError, match=r"\{manual\} in a partitioned program.*"
                                           "IsManualLeaf"):
        verify.compile(m, num_partitions=2)
    _aborts_without_the_refusal(m, False)


def test_a_hand_made_householder_product_call_is_refused_on_cpu():
    t = hlo.tensor((8, 128), hlo.f32)
    m = hlo.Module("m")
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    b.return_(b.custom_call("ProductOfElementaryHouseholderReflectors", [f.arguments[0]], [t]))
    with pytest.raises(CompileError, match="of 1 operands and 1 results.*XLA:CPU segfaults"):
        verify.compile(m)
    code = ("import mhlo_ir as hlo, verify, verify.api as api\n"
            "api._cpu_refusals = lambda m, *a: None\n"
            "verify.compile(hlo.parse(open(0).read()))\n"
            "print('compiled')\n")
    r = subprocess.run([sys.executable, "-c", code], input=m.to_text(), capture_output=True,
                       text=True, timeout=300, env=child_env())
    if r.returncode == 0 and "compiled" in r.stdout:
        pytest.fail("jaxlib compiled it: the refusal is out of date")
    # Most runs segfault; some (seen under load) fail the QR expander's RET_CHECK instead.
    assert r.returncode < 0 or (
        "RET_CHECK failure" in r.stderr and "qr_expander" in r.stderr), (r.returncode,
                                                                        r.stderr[-300:])
