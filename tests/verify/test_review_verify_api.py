"""What a review of verify's own API and command line found (2026-12-07, ninth session):
the interpreter given text with complex values (a traceback, or the process aborted) or
without @main (another function ran), .npy inputs of ml_dtypes types the command line
refused, a program it cannot run printed as a traceback, portable artifacts of no bytes
read as an empty module, a non-module or a dynamic_conv serialized, and a mistyped corpus
path taken as an empty corpus. Oracles: numpy, verify.run (XLA) on the same text."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from verify.errors import VerificationError
from verify.interpreter import InterpreterError

_COMPLEX_ARGS = """func.func public @main(%a: tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {
  %0 = stablehlo.add %a, %a : tensor<3xcomplex<f32>>
  return %0 : tensor<3xcomplex<f32>>
}"""
_COMPLEX_RESULT = """func.func public @main(%a: tensor<2xf32>, %b: tensor<2xf32>)
    -> tensor<2xcomplex<f32>> {
  %0 = stablehlo.complex %a, %b : tensor<2xcomplex<f32>>
  return %0 : tensor<2xcomplex<f32>>
}"""


def test_the_interpreter_takes_text_with_complex_values():
    z = np.array([1 + 2j, -3j, 0.5], np.complex64)
    for got in (verify.interpret(_COMPLEX_ARGS, z)[0], verify.run(_COMPLEX_ARGS, z)[0]):
        np.testing.assert_array_equal(got, z + z)
    x, y = np.array([1, 2], np.float32), np.array([3, -4], np.float32)
    for got in (verify.interpret(_COMPLEX_RESULT, x, y)[0], verify.run(_COMPLEX_RESULT, x, y)[0]):
        np.testing.assert_array_equal(got, x + 1j * y)


def test_the_interpreter_runs_main_or_nothing():
    only = ("func.func public @foo(%a: tensor<f32>) -> tensor<f32> {\n"
            "  %0 = stablehlo.negate %a : tensor<f32>\n  return %0 : tensor<f32>\n}")
    with pytest.raises(InterpreterError, match="no function named @main"):
        verify.interpret(only, np.float32(3))


def test_the_command_line_reads_ml_dtypes_inputs_and_reports_what_it_cannot_run(
        tmp_path, capsys):
    from verify.cli import main
    prog = tmp_path / "twice.mlir"
    prog.write_text("func.func public @main(%a: tensor<3xbf16>) -> tensor<3xbf16> {\n"
                    "  %0 = stablehlo.add %a, %a : tensor<3xbf16>\n"
                    "  return %0 : tensor<3xbf16>\n}\n")
    x = np.array([1, 2, 3], ml_dtypes.bfloat16)
    np.save(tmp_path / "x.npy", x)  # (numpy saves it as |V2)
    assert main([str(prog), "--input", str(tmp_path / "x.npy")]) == 0
    assert "[2, 4, 6]" in capsys.readouterr().out
    feed = tmp_path / "feed.mlir"
    feed.write_text("func.func public @main() -> tensor<2xf32> {\n"
                    "  %t = stablehlo.create_token : !stablehlo.token\n"
                    '  %0:2 = "stablehlo.infeed"(%t) {infeed_config = ""} : (!stablehlo.token)'
                    " -> (tensor<2xf32>, !stablehlo.token)\n"
                    "  return %0#0 : tensor<2xf32>\n}\n")
    assert main([str(feed)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the program has an infeed") and "Traceback" not in err


def test_portable_artifacts_refuse_what_they_cannot_be():
    with pytest.raises(ValueError, match="not a StableHLO portable artifact"):
        verify.deserialize_portable(b"")
    with pytest.raises(TypeError, match="expected an mhlo_ir Module or its text, got int"):
        verify.serialize_portable(42)
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((1, 4, 1), hlo.f32)], visibility="public")
    b = f.builder()
    nwc = hlo.ConvDimensionNumbers(0, 2, (1,), 1, 2, (0,), 0, 2, (1,))
    b.return_(b.dynamic_conv(f.arguments[0], b.constant(np.ones((1, 1, 1), np.float32)),
                             b.constant(np.zeros((1, 2), np.int64)), nwc,
                             hlo.tensor((1, 4, 1), hlo.f32)))
    verify.run(m, np.zeros((1, 4, 1), np.float32))  # (MHLO's import folds it: it runs)
    with pytest.raises(VerificationError,
                       match="'dynamic_conv' cannot go into a portable artifact"):
        verify.serialize_portable(m)


def test_the_corpus_command_refuses_a_path_that_is_not_there(tmp_path):
    from verify.conformance.__main__ import main
    for argv in ([str(tmp_path / "no_such_dir")], [str(tmp_path), "--sample", "-1"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
