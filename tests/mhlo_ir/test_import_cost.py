"""What ``import mhlo_ir`` costs. Not a timed assertion (machines vary): the test checks what
the import does — no heavy modules it does not need, the op table, builder, printer and
verifier left to their first use — and reports the time it measured next to
``import numpy, ml_dtypes, attrs``."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

import mhlo_ir

ROOT = Path(__file__).resolve().parents[2]

# Never needed to build or print: tests, jax and MLIR, and this package's test strategies.
HEAVY = ("hypothesis", "pytest", "jax", "jaxlib", "mlir", "_mlir", "mhlo_ir.strategies",
         "scipy", "pandas", "IPython")
# Loaded on first use (mhlo_ir/__init__.py's __getattr__), not by the import.
DEFERRED = ("mhlo_ir.builder", "mhlo_ir.ops", "mhlo_ir.mhlo_attributes", "mhlo_ir.printer",
            "mhlo_ir.verifier")


def _python(code: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_loads_no_heavy_or_deferred_modules():
    loaded = json.loads(_python("import sys, json, mhlo_ir; print(json.dumps(list(sys.modules)))"))
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert heavy == []
    assert [m for m in DEFERRED if m in loaded] == []


def test_deferred_names_resolve_to_their_modules_objects():
    from mhlo_ir.builder import Builder
    from mhlo_ir.ops import REGISTRY
    from mhlo_ir.printer import print_module
    from mhlo_ir.verifier import verify_module

    assert mhlo_ir.Builder is Builder and mhlo_ir.OP_TABLE is REGISTRY
    assert mhlo_ir.print_module is print_module and mhlo_ir.verify_module is verify_module
    for name in ("DotDimensionNumbers", "comparison_direction", "EnumAttr", "transpose"):
        assert getattr(mhlo_ir, name) is getattr(importlib.import_module("mhlo_ir.mhlo_attributes"),
                                                 name)
    assert {"Builder", "OP_TABLE", "ChannelHandle", "builder", "ops"} <= set(dir(mhlo_ir))
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mhlo_ir.no_such_name  # noqa: B018


def test_first_use_loads_the_op_table():
    # In a fresh process: building through Function.builder() needs no name from the package.
    out = _python("""if True:
        import sys, mhlo_ir as hlo
        m = hlo.Module("m")
        f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
        b = f.builder()
        b.return_(b.tanh(f.arguments[0]))
        m.verify()
        print("mhlo_ir.ops" in sys.modules, '"mhlo.tanh"' in m.to_text())
    """)
    assert out.split() == ["True", "True"]


def _attrs_classes():
    # Every module of the package, strategies (hypothesis) aside.
    for info in pkgutil.walk_packages(mhlo_ir.__path__, "mhlo_ir."):
        if info.name == "mhlo_ir.strategies":
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and attrs.has(value) and value.__module__ == info.name:
                yield value


def test_no_attrs_converter_is_a_builtin():
    # attrs reads each converter's signature; a builtin's (``converter=tuple``) is parsed from
    # its text signature by ``tokenize``, whose regular expressions then compile: a few ms of
    # every ``import mhlo_ir``. Wrap builtins in a Python function (mhlo_ir.types.as_tuple).
    builtins = []
    for cls in _attrs_classes():
        for field in attrs.fields(cls):
            conv = field.converter
            conv = getattr(conv, "converter", conv)  # attrs.Converter wraps the callable
            if conv is not None and getattr(conv, "__module__", None) == "builtins":
                builtins.append(f"{cls.__module__}.{cls.__qualname__}.{field.name}")
    assert builtins == []


def _best_of(code: str, n: int) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def test_report_import_time(record_property):
    # Reported, not asserted: best of 3 fresh processes each.
    base = _best_of("import numpy, ml_dtypes, attrs", 3)
    ours = _best_of("import mhlo_ir", 3)
    record_property("import_numpy_ml_dtypes_attrs_ms", round(base * 1e3, 1))
    record_property("import_mhlo_ir_ms", round(ours * 1e3, 1))
    print(f"import numpy, ml_dtypes, attrs: {base * 1e3:.0f} ms; "
          f"import mhlo_ir: {ours * 1e3:.0f} ms (best of 3 fresh processes)")
