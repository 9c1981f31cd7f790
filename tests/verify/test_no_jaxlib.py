"""Without jaxlib: ``import verify`` works, and everything that needs jaxlib says, in one line,
what to install, the library by raising ``verify.JaxlibMissing`` and the CLI on stderr.

Each test runs a child Python in which jaxlib (and jax, which needs it) cannot be imported: a
``sitecustomize`` on PYTHONPATH puts a finder in front of ``sys.meta_path`` that refuses them,
the way a machine without the package does (ModuleNotFoundError, ``name == 'jaxlib'``). The
first test proves that the blocking works, so the others cannot pass by accident.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import verify
from tests.child_env import child_env

ROOT = Path(verify.__file__).resolve().parents[1]
HINT = "pip install 'mhlo-ir[verify]'"

BLOCKER = textwrap.dedent("""
    import sys

    class _NoJaxlib:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("jaxlib", "jax", "jax_plugins"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _NoJaxlib())
""")

GOOD = """\
module @m {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "mhlo.add"(%arg0, %arg0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("nojaxlib")
    (d / "sitecustomize.py").write_text(BLOCKER)
    e = dict(os.environ)
    e["PYTHONPATH"] = child_env(str(d))["PYTHONPATH"]
    return e


def python(env, *args, stdin=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120, input=stdin)


def test_jaxlib_is_really_blocked_and_verify_imports(env):
    proc = python(env, "-c", "import jaxlib")
    assert proc.returncode != 0 and "No module named 'jaxlib'" in proc.stderr
    proc = python(env, "-c", "import verify, mhlo_ir, sys; print(verify.__version__); "
                             "print('jaxlib' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [verify.__version__, "False"]


LIBRARY = textwrap.dedent("""
    import numpy as np, verify
    from verify import _jaxlib, coverage, lapack, mlir_peer
    TEXT = {text!r}
    calls = {{
        "check": lambda: verify.check(TEXT),
        "compile": lambda: verify.compile(TEXT),
        "run": lambda: verify.run(TEXT, np.zeros(2, np.float32)),
        "compile_cuda": lambda: verify.compile(TEXT, platform="cuda"),
        "available_platforms": verify.available_platforms,
        "lapack.register": lapack.register,
        "mlir_peer.Mlir": mlir_peer.Mlir,
        "coverage.jaxlib_ops": lambda: coverage.jaxlib_ops("mhlo"),
        "client": lambda: _jaxlib.client("cpu"),
    }}
    for name, call in calls.items():
        try:
            call()
        except verify.JaxlibMissing as e:
            assert isinstance(e, ImportError) and e.name == "jaxlib"
            print(name, "|", e)
        else:
            print(name, "| no error")
    print("has_platform |", verify.has_platform("cpu"), verify.has_platform("cuda"))
""")


def test_library_raises_jaxlib_missing_with_one_line(env):
    proc = python(env, "-c", LIBRARY.format(text=GOOD))
    assert proc.returncode == 0, proc.stderr
    lines = dict(ln.split(" | ", 1) for ln in proc.stdout.splitlines())
    assert lines.pop("has_platform") == "False False"
    assert set(lines) == {"check", "compile", "run", "compile_cuda", "available_platforms",
                          "lapack.register", "mlir_peer.Mlir", "coverage.jaxlib_ops", "client"}
    for name, message in lines.items():
        # one line (the dict split per line), naming the package and the install command
        assert message == ("verify needs jaxlib, which is not installed (No module named "
                           f"'jaxlib'): {HINT}"), name


def test_python_verifier_runs_before_jaxlib_is_needed(env):
    """A broken mhlo_ir Module is refused by Module.verify() (with its own message), not with
    'jaxlib missing': the Python checks come first in check, compile and run."""
    code = textwrap.dedent("""
        import numpy as np, mhlo_ir as hlo, verify
        def module(broken):
            m = hlo.Module("b")
            f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
            b = f.builder()
            b.return_(b.add(f.arguments[0], f.arguments[0]))
            if broken:
                f.result_types = (hlo.tensor((2,), hlo.i32),)
            return m
        x = np.zeros(2, np.float32)
        for name, fn in [("check", verify.check), ("compile", verify.compile),
                         ("run", lambda m: verify.run(m, x))]:
            for broken in (True, False):
                try:
                    fn(module(broken))
                except Exception as e:
                    print(name, broken, type(e).__name__)
    """)
    proc = python(env, "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{name} {broken} {'ModuleVerificationError' if broken else 'JaxlibMissing'}"
        for name in ("check", "compile", "run") for broken in (True, False)]


@pytest.mark.parametrize("args", [["m.mlir"], ["m.mlir", "--check-only"],
                                  ["m.mlir", "--platform", "cuda"], ["-", "--compile-only"]])
def test_cli_prints_one_line_and_exits_1(env, tmp_path, args):
    (tmp_path / "m.mlir").write_text(GOOD)
    args = [str(tmp_path / a) if a == "m.mlir" else a for a in args]
    proc = python(env, "-m", "verify", *args, stdin=GOOD)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"error: verify needs jaxlib, which is not installed (No module named 'jaxlib'): {HINT}"]


def test_cli_help_and_coverage_without_jaxlib(env):
    proc = python(env, "-m", "verify", "--help")
    assert proc.returncode == 0 and "usage: python -m verify" in proc.stdout
    assert HINT in proc.stdout  # the help says what the tool needs
    proc = python(env, "-m", "verify.coverage")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"error: verify needs jaxlib, which is not installed (No module named 'jaxlib'): {HINT}"]


def test_jaxlib_present_but_broken_says_so():
    """A jaxlib that is installed but fails to import (here: a stand-in package that raises)
    gets the same one-line hint, with the reason."""
    code = textwrap.dedent("""
        import sys
        class _Broken:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "jaxlib":
                    raise ImportError("jaxlib was built for another numpy", name="jaxlib")
        sys.meta_path.insert(0, _Broken())
        import verify
        try:
            verify.check("module {}")
        except verify.JaxlibMissing as e:
            print(e)
    """)
    proc = python(child_env(), "-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("verify needs jaxlib, which could not be imported (jaxlib "
                                   f"was built for another numpy): {HINT}")
