"""What a built distribution holds: the PEP 561 markers and the metadata pyproject declares.

A wheel build needs the ``wheel`` package (or a newer setuptools than a fresh venv has), so
the build test runs setuptools' own ``egg_info`` and ``build_py`` on a copy of the project:
``build_py`` lays out exactly the files a wheel packs, package data included."""

from __future__ import annotations

import importlib.resources
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("mhlo_ir", "lower", "verify")


@pytest.mark.parametrize("package", PACKAGES)
def test_installed_package_has_py_typed(package):
    assert importlib.resources.files(package).joinpath("py.typed").is_file()


def test_build_includes_py_typed_and_metadata(tmp_path):
    pytest.importorskip("setuptools", minversion="61")  # reads [project] from pyproject
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, src / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path / "out"
    out.mkdir()
    script = ("import sys, setuptools; sys.argv = ['setup.py', 'egg_info', '--egg-base', "
              f"{str(out)!r}, 'build_py', '--build-lib', {str(out)!r}]; setuptools.setup()")
    proc = subprocess.run([sys.executable, "-c", script], cwd=src, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for package in PACKAGES:
        assert (out / package / "py.typed").is_file(), package
        assert (out / package / "__init__.py").is_file(), package
    (info,) = out.glob("*.egg-info")
    pkg_info = (info / "PKG-INFO").read_text()
    assert "Version: 0.1.0" in pkg_info
    assert "Classifier: Typing :: Typed" in pkg_info
    assert "Project-URL: " in pkg_info
    sources = (info / "SOURCES.txt").read_text().split()
    assert {f"{p}/py.typed" for p in PACKAGES} <= set(sources)
