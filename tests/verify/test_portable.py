"""verify.serialize_portable / deserialize_portable: op cases survive the round trip through a
StableHLO portable artifact and jaxlib runs what comes back to the same bits; bad targets and
bad bytes are clear errors."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.errors import OpBuildError
from tests.child_env import ROOT, child_env
from tests.mhlo_ir import ops as ops_pkg
from tests.mhlo_ir.ops.cases import CASES, assert_close

for _m in pkgutil.iter_modules(ops_pkg.__path__):
    if _m.name.startswith("cases_"):
        importlib.import_module(f"{ops_pkg.__name__}.{_m.name}")

OPS = ["add", "dot_general", "reduce", "while", "convolution", "sort", "gather", "case"]
ROUND_TRIP = [next(c for c in CASES[op] if c.reference is not None) for op in OPS]


def _module():
    m = hlo.Module("twice")
    f = m.add_function("main", [hlo.tensor((3,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    return m


@pytest.mark.parametrize("target", ["1.0.0", None], ids=["1.0.0", "current"])
@pytest.mark.parametrize("case", ROUND_TRIP, ids=lambda c: c.id)
def test_round_trip_runs_the_same(case, target, cpu_client):
    m, inputs = case.build()
    data = verify.serialize_portable(m, target=target)
    assert isinstance(data, bytes) and data.startswith(b"ML\xefR")  # MLIR bytecode
    text = verify.deserialize_portable(data)
    assert "stablehlo." in text and "mhlo." not in text
    want = verify.compile(m, client=cpu_client)(*inputs)
    got = verify.compile(text, client=cpu_client)(*inputs)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w, what=f"{case.id} result {i}")


# Found here, left to the op table's owner: MLIR drops sort's default dimension (-1) from its
# print, and the sort rule then reads attributes None ('NoneType' object has no attribute 'get').
@pytest.mark.parametrize("case", ROUND_TRIP, ids=lambda c: c.id)
def test_what_comes_back_parses(case):
    """The deserialized text is StableHLO as MLIR prints it, which mhlo_ir reads too."""
    m, _ = case.build()
    text = verify.deserialize_portable(verify.serialize_portable(m, "1.0.0"))
    back = hlo.parse(text)
    assert back.to_text(dialect=hlo.dialect.STABLEHLO)


def test_text_input_mhlo_and_stablehlo():
    m = _module()
    x = np.arange(3, dtype=np.float32)
    for text in (m.to_text(), m.to_text(dialect=hlo.dialect.STABLEHLO)):
        back = verify.deserialize_portable(verify.serialize_portable(text, "1.5.0"))
        np.testing.assert_array_equal(verify.run(back, x)[0], 2 * x)


def test_targets_are_jaxlibs():
    oldest, newest = verify.portable_targets()
    assert (oldest, newest) == ("0.9.0", "1.17.0")  # jaxlib 0.10.2
    for t in (oldest, newest):
        assert verify.deserialize_portable(verify.serialize_portable(_module(), t))


@pytest.mark.parametrize("target, message", [
    ("1.2", r"target '1.2' is not a StableHLO version: expected 'MAJOR.MINOR.PATCH' from "
            r"0\.9\.0 to 1\.17\.0"),
    ("v1.0.0", "is not a StableHLO version"),
    (1, "target 1 is not a StableHLO version"),
    ("0.8.0", r"target 0\.8\.0 is outside the StableHLO versions this jaxlib writes: 0\.9\.0 "
              r"\(the oldest\) to 1\.17\.0 \(its own\)"),
    ("1.18.0", "outside the StableHLO versions"),  # jaxlib itself would accept this one
    # (digits of other scripts: "\\d" took them, and jaxlib's refusal blamed the module)
    ("\uff11.\uff10.\uff10", "is not a StableHLO version"),
    ("1.\u0660.0", "is not a StableHLO version"),
])
def test_bad_target(target, message):
    with pytest.raises(ValueError, match=message):
        verify.serialize_portable(_module(), target)


def test_op_without_a_stablehlo_form_is_refused():
    m = hlo.Module("e")
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.erf(f.arguments[0]))
    with pytest.raises(OpBuildError, match=r"'erf' has no stablehlo form: use chlo\.erf"):
        verify.serialize_portable(m, "1.0.0")


def test_broadcast_select_is_refused_before_the_writer():
    """jaxlib's writer fails on chlo.broadcast_select at every target ("failed to legalize
    operation 'shape.const_witness'"), though jaxlib runs the op: said in Python, with what
    to write instead, and that works."""
    m = hlo.Module("bs")
    f = m.add_function("main", [hlo.tensor((4,), hlo.i1), hlo.tensor((2, 4), hlo.f32),
                                hlo.tensor((), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.chlo_broadcast_select(*f.arguments))
    with pytest.raises(verify.VerificationError,
                       match=r"'chlo.broadcast_select' cannot go into a portable artifact: "
                             r".*const_witness"):
        verify.serialize_portable(m)
    with pytest.raises(Exception, match="const_witness"):  # (jaxlib's own, on the text)
        verify.serialize_portable(m.to_text(dialect=hlo.dialect.STABLEHLO))
    m2 = hlo.Module("bs2")
    f2 = m2.add_function("main", [hlo.tensor((4,), hlo.i1), hlo.tensor((2, 4), hlo.f32),
                                  hlo.tensor((), hlo.f32)], visibility="public")
    b2 = f2.builder()
    p, x, y = f2.arguments
    b2.return_(b2.select(b2.broadcast_in_dim(p, (2, 4), [1]), x, b2.broadcast_in_dim(y, (2, 4),
                                                                                      [])))
    back = verify.deserialize_portable(verify.serialize_portable(m2))
    args = (np.array([1, 0, 1, 0], bool), np.arange(8, dtype=np.float32).reshape(2, 4),
            np.float32(-1))
    np.testing.assert_array_equal(verify.run(back, *args)[0], np.where(args[0], args[1], -1))


def test_constants_hoisted_out_of_a_comparator_read_back():
    """jaxlib's reader moves a comparator's constants out of it (every float jnp.sort's
    artifact): the text it gives back parses, and runs to the original's numbers."""
    m = hlo.Module("s")
    f = m.add_function("main", [hlo.tensor((4,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.sort(f.arguments[0], lambda r, p, q: r.compare(
        r.add(p, r.constant(np.float32(1))), q, "LT"), dimension=0, is_stable=True))
    text = verify.deserialize_portable(verify.serialize_portable(m, "1.0.0"))
    assert text.index("stablehlo.constant") < text.index("stablehlo.sort")  # hoisted
    back = hlo.parse(text)
    x = np.array([3, 1, 2, 0], np.float32)
    # x[i] + 1 < x[j] orders 1 before 0 and 3 before 2 (ties of the shifted order stay)
    assert verify.run(back, x)[0].tolist() == verify.run(m, x)[0].tolist() == [1, 0, 3, 2]


def test_rejected_text_is_a_verification_error():
    bad = _module().to_text().replace("tensor<3xf32>) -> tensor<3xf32>\n", "tensor<3xf32>) -> "
                                      "tensor<4xf32>\n", 1)
    with pytest.raises(verify.VerificationError):
        verify.serialize_portable(bad, "1.0.0")


def test_not_an_artifact():
    with pytest.raises(ValueError, match="not a StableHLO portable artifact"):
        verify.deserialize_portable(b"garbage")
    with pytest.raises(TypeError, match="bytes"):
        verify.deserialize_portable("module {}")
    with pytest.raises(ValueError, match="not a StableHLO portable artifact"):
        verify.deserialize_portable(b"garbage", isolated=True)


def test_a_target_with_a_trailing_newline_is_no_version():
    with pytest.raises(ValueError, match="is not a StableHLO version"):
        verify.serialize_portable(_module(), "1.0.0\n")


def _corrupted(data, i, byte):
    bad = bytearray(data)
    bad[i] = byte
    return bytes(bad)


# One-byte corruptions of _module()'s 1.0.0 artifact on which jaxlib 0.10.2's reader
# segfaults (byte 106) and never returns (byte 99), found by trying them in child processes.
CRASHES, HANGS = (106, 0xAF), (99, 0xAF)


def test_isolated_reads_give_the_same_text_and_survive_what_kills_the_reader():
    """``isolated=True`` reads in a child process: the same text as in this one, and for
    bytes jaxlib's reader dies on (or never finishes) a ValueError, not a dead process."""
    import subprocess
    import sys
    data = verify.serialize_portable(_module(), "1.0.0")
    assert verify.deserialize_portable(data, isolated=True) == \
        verify.deserialize_portable(data)
    bad = _corrupted(data, *CRASHES)
    r = subprocess.run([sys.executable, "-c", "import sys, verify\n"
                        "verify.deserialize_portable(sys.stdin.buffer.read())"],
                       input=bad, capture_output=True, env=child_env(), cwd=ROOT, timeout=120)
    if r.returncode >= 0:
        pytest.skip("this jaxlib's reader (or this artifact) no longer crashes on the byte")
    with pytest.raises(ValueError, match=rf"its reader died of signal {-r.returncode} "):
        verify.deserialize_portable(bad, isolated=True)
    try:
        verify.deserialize_portable(_corrupted(data, *HANGS), isolated=True, timeout=10)
    except ValueError as e:
        assert "not a StableHLO portable artifact jaxlib can read" in str(e)


def test_a_refusal_to_write_an_older_version_points_at_the_line():
    # jaxlib's message says "Detailed error from MLIR: -:2:1: error: ..." (the function whose
    # f8E4M3 type the oldest version lacks): its line and caret, as other errors have them
    oldest = verify.portable_targets()[0]
    text = ("module @m {\n"
            "func.func public @main(%arg0: tensor<3xf8E4M3>) -> tensor<3xf8E4M3> {\n"
            "  %0 = stablehlo.add %arg0, %arg0 : tensor<3xf8E4M3>\n"
            "  return %0 : tensor<3xf8E4M3>\n}\n}\n")
    try:
        verify.serialize_portable(text, target=oldest)
    except verify.VerificationError as e:
        assert e.line == 2 and "func.func public @main" in e.source_line, (e.line, str(e))
        assert "Detailed error" not in str(e)
    else:
        pytest.skip(f"this jaxlib writes f8E4M3 for {oldest}")
