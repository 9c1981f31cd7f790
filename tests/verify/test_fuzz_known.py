"""verify.fuzz.known: a disagreement is named after the finding of docs/findings.md whose op
pattern its program holds (the reproducers of those findings, written here by hand), and a
program without such a pattern stays new. Checked against the findings' own programs, run:
each still disagrees the way its entry says."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from verify import differential
from verify.fuzz.known import KNOWN, known_finding


def _unary(op, et, out_et=None, **kw):
    m = hlo.Module("k")
    t = hlo.tensor((4,), et)
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    if op == "convert":
        y = b.convert(x, out_et)
    else:
        y = getattr(b, op)(x, **kw)
    b.return_(y)
    return m


def _disagree(m, *inputs):
    xla = verify.run(m, *inputs)
    ref = verify.interpret(m, *inputs)
    return differential.compare(xla, ref)


@pytest.mark.parametrize("name, module, inputs", [
    ("xla_popcnt_sub_byte", lambda: _unary("popcnt", hlo.i4),
     lambda: [np.array([-8, -2, 7, 1], hlo.i4.dtype)]),
    ("interpreter_f8e3m4_rounding", lambda: _unary("floor", hlo.f8E3M4),
     lambda: [np.array([1.5, -1.5, 2.25, 0.25], hlo.f8E3M4.dtype)]),
    ("xla_f4e2m1fn_max_to_int", lambda: _unary("convert", hlo.f4E2M1FN, hlo.ui4),
     lambda: [np.array([0.5, 1, 6, 2], hlo.f4E2M1FN.dtype)]),
])
def test_the_findings_own_programs_are_named(name, module, inputs):
    m = module()
    diffs = _disagree(m, *inputs())
    assert differential.classify(diffs) is not None, "the finding no longer reproduces"
    assert known_finding(m, diffs) == name


def test_other_programs_stay_new():
    m = _unary("floor", hlo.f8E4M3FN)   # rounding, but not in f8E3M4
    fake = [differential.Difference(0, "nan", "made up")]
    assert known_finding(m, fake) is None
    assert known_finding(_unary("popcnt", hlo.i4), fake) is None  # popcnt differs in ints
    assert known_finding(m, [differential.Difference(0, "nan", "x", "subnormal_flush")]) \
        is None  # explained differences are not disagreements


def test_interpreter_aborts_are_named_by_op_and_message():
    from verify.fuzz.known import known_crash
    assert known_crash(["convert", "fft"], "LLVM ERROR: Semantics mismatch between provided "
                       "type and complex value") == "interpreter_fft_abort"
    assert known_crash(["convolution"], "LLVM ERROR: Incompatible index and shape found "
                       "while flattening index") == "interpreter_convolution_permuted_output"
    assert known_crash(["gather"], "LLVM ERROR: Incompatible index and shape found while "
                       "flattening index") is None  # the words, but not the op: new
    assert known_crash(["fft"], "Segmentation fault") is None


def test_every_known_finding_names_an_entry_of_findings_md():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text()
    for f in KNOWN:
        assert f"### {f.entry}. " in text, f.name
    flat = " ".join(text.split())  # the messages wrap across lines there
    for _, _, words in __import__("verify.fuzz.known", fromlist=["x"]).KNOWN_CRASHES:
        assert all(w in flat for w in words)
