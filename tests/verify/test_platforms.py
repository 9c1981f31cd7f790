"""A platform with no device here: one clear error naming it and the platforms there are.

These run where jaxlib sees no CUDA device (CPU machines, CI); on a CUDA machine they are
skipped, and tests/verify/test_gpu.py checks the other side (``cuda`` is listed and runs).
Both routes to a GPU client are exercised: through jax (installed here) and, in a child
process where jax cannot be imported, through the ``jax_plugins`` CUDA plugin package.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import verify
from verify import PlatformUnavailable

ROOT = Path(verify.__file__).resolve().parents[1]

GOOD = """\
module {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "mhlo.add"(%arg0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""

no_cuda = pytest.mark.skipif(verify.has_platform("cuda"), reason="a CUDA device is present")


@no_cuda
@pytest.mark.parametrize("platform", ["cuda", "gpu"])
def test_compile_for_a_missing_platform(platform):
    with pytest.raises(PlatformUnavailable) as info:
        verify.compile(GOOD, platform=platform)
    e = info.value
    assert e.platform == "cuda" and e.available == ["cpu"]
    assert isinstance(e, RuntimeError)
    msg = str(e)
    assert msg.startswith("platform 'cuda' is not available here")
    assert msg.endswith("available platforms: cpu")
    assert "\n" not in msg
    assert verify.available_platforms() == ["cpu"]
    # Asking again answers from the record of the first try, with the same message.
    with pytest.raises(PlatformUnavailable, match="platform 'cuda' is not available"):
        verify.run(GOOD, platform=platform)


def test_unknown_platform_is_a_value_error_before_any_work():
    with pytest.raises(ValueError, match=r"unknown platform 'npu'; expected one of 'cpu', "
                                         r"'cuda' \(or 'gpu'\), 'rocm', or 'tpu' "
                                         r"\(the attached TPU, or compile-only with a "
                                         r"topology\)"):
        verify.compile("this is not MLIR", platform="npu")  # the text is not even parsed
    if not verify._jaxlib.tpu_attached():
        with pytest.raises(verify.PlatformUnavailable, match="no TPU is attached"):
            verify.compile("this is not MLIR", platform="tpu")  # before any work
    assert verify.has_platform("npu") is False
    # "tpu" runs only on the TPU attached to a TPU VM
    assert verify.has_platform("tpu") is verify._jaxlib.tpu_attached()


@no_cuda
def test_without_jax_the_plugin_route_says_what_to_install():
    code = textwrap.dedent(f"""
        import sys
        sys.modules["jax"] = None  # jax cannot be imported: verify looks for the plugin itself
        import verify
        try:
            verify.compile({GOOD!r}, platform="cuda")
        except verify.PlatformUnavailable as e:
            print(e)
        print(verify.has_platform("cuda"), verify.available_platforms())
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("platform 'cuda' is not available here")
    assert "pip install 'jax[cuda13]'" in first or "jax_plugins" in first
    assert first.endswith("available platforms: cpu")
    assert second == "False ['cpu']"


@no_cuda
def test_cli_platform_cuda_is_one_line(tmp_path):
    p = tmp_path / "m.mlir"
    p.write_text(GOOD)
    for extra in ([], ["--compile-only"]):
        proc = subprocess.run([sys.executable, "-m", "verify", str(p), "--random",
                               "--platform", "cuda", *extra],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 1
        assert proc.stdout == ""
        # Ours is one line. (jax, which the GPU route imports, initialises its other
        # backends too: where libtpu is installed, as with the tpu extra, libtpu logs its
        # search for a TPU on stderr first. Those lines are libtpu's, and never a traceback.)
        ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
        assert len(ours) == 1 and proc.stderr.rstrip().endswith(ours[0]), proc.stderr
        assert "Traceback" not in proc.stderr
        assert ours[0].startswith("error: platform 'cuda' is not available here")
        assert ours[0].endswith("available platforms: cpu")
