"""mhlo_ir is pure Python: building and printing never import jax, jaxlib or MLIR bindings,
and the package works where jaxlib cannot be imported at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BUILD = textwrap.dedent('''
    import numpy as np
    import mhlo_ir as hlo

    m = hlo.Module("pure", location=hlo.NameLoc("mod"))
    t = hlo.tensor((2, 3), hlo.f32)
    g = m.add_function("g", [t], visibility="private")
    gb = g.builder()
    gb.return_(gb.tanh(g.arguments[0]))
    f = m.add_function("main", [t, hlo.tensor((3, 4), hlo.bf16)], visibility="public",
                       arg_locations=[hlo.FileLineColLoc("a.py", 1, 2), hlo.UNKNOWN])
    b = f.builder()
    x, w = f.arguments
    with b.at_location("model.py", 3, 7):
        y = b.add(x, b.constant(np.ones((2, 3), np.float32)))
        big = b.constant(np.arange(40, dtype=np.int8).reshape(5, 8))
        s = b.reduce(y, b.constant(np.float32(0)), [1], lambda bb, a, e: bb.add(a, e))
    d = b.dot_general(b.convert(y, hlo.bf16), w, ((1,), (0,)), result_element_type=hlo.f32)
    z = b.call(g, [y])
    p = b.compare(z, y, "GT", "FLOAT")
    q = b.select(p, z, y)
    tr = b.transpose(q, [1, 0])
    cc = b.custom_call("my_target", [tr], hlo.tensor((3, 2), hlo.f32),
                          backend_config={"k": "v"}, api_version=4,
                          location=hlo.FusedLoc([hlo.NameLoc("n")], metadata="m"))
    i, v = b.while_([b.constant(np.int32(0)), s],
                    lambda bb, i, v: bb.compare(i, bb.constant(np.int32(3)), "LT"),
                    lambda bb, i, v: (bb.add(i, bb.constant(np.int32(1))), bb.multiply(v, v)))
    y.owner.set_attr("my.attr", {"a": [1, 2.5, "s", True]})
    b.return_(cc, d, v, big)
    m.verify()
    texts = [m.to_text(), m.to_text(locations="alias"), m.to_text(locations=False), str(m)]
''')

REPORT = textwrap.dedent('''
    import json, sys
    bad = sorted(n for n in sys.modules
                 if n.split(".")[0] in ("jax", "jaxlib", "mlir")
                 or n.startswith(("jaxlib.", "mlir", "_mlir", "jax.")))
    print(json.dumps({"bad": bad, "text": texts[0], "len": [len(t) for t in texts]}))
''')

# A meta-path finder, installed before anything else, that makes jax/jaxlib/MLIR unimportable.
BLOCK = textwrap.dedent('''
    import sys

    BLOCKED = ("jax", "jaxlib", "mlir", "_mlir")

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"blocked for this test: {name}")
            return None

    sys.meta_path.insert(0, Blocker())
    for name in BLOCKED:
        try:
            __import__(name)
        except ImportError:
            pass
        else:
            raise SystemExit(f"the blocker failed to block {name}")
''')


def _run(code: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_building_and_printing_imports_no_mlir_jax_or_jaxlib():
    out = _run(BUILD + REPORT)
    assert out["bad"] == []
    assert '"mhlo.custom_call"' in out["text"] and '"mhlo.while"' in out["text"]
    assert all(n > 1000 for n in out["len"])


def test_the_check_sees_an_import_when_there_is_one():
    # The detector itself must be able to fail: importing jaxlib shows up in its report.
    out = _run(BUILD + "import jaxlib.mlir.ir\n" + REPORT)
    assert "jaxlib" in out["bad"] and any(n.startswith("jaxlib.mlir") for n in out["bad"])


def test_mhlo_ir_works_when_jaxlib_cannot_be_imported():
    blocked = _run(BLOCK + BUILD + REPORT)
    assert blocked["bad"] == []
    # ... and prints exactly what it prints where jaxlib is present.
    assert blocked["text"] == _run(BUILD + REPORT)["text"]
    from tests.oracle import parse
    parse(blocked["text"])


def test_the_blocker_really_blocks():
    code = BLOCK + textwrap.dedent('''
        import json
        try:
            import jaxlib.xla_client
            print(json.dumps({"imported": True}))
        except ImportError as e:
            print(json.dumps({"imported": False, "error": str(e)}))
    ''')
    out = _run(code)
    assert out == {"imported": False, "error": "blocked for this test: jaxlib"}
