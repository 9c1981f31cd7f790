"""``python -m verify FILE.mlir``: run as a real subprocess on files written to tmp_path.

Results are checked against numpy on the same inputs; failures must exit 1 with the readable
message and no Python traceback. A few option combinations run ``main()`` in-process, which is
the same code without the interpreter start-up.
"""

from __future__ import annotations

import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
from verify import cli

GOOD = """\
module {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<i32>) \
-> (tensor<2x3xf32>, tensor<i32>) {
    %0 = "mhlo.add"(%arg0, %arg0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = "mhlo.negate"(%arg1) : (tensor<i32>) -> tensor<i32>
    return %0, %1 : tensor<2x3xf32>, tensor<i32>
  }
}
"""

BAD = GOOD.replace('"mhlo.add"(%arg0, %arg0)', '"mhlo.add"(%arg0, %arg1)').replace(
    "(tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>",
    "(tensor<2x3xf32>, tensor<i32>) -> tensor<2x3xf32>")


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "verify", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.mlir"
    p.write_text(GOOD)
    return p


def results(stdout: str) -> dict:
    """``result i: dtype[shape]`` headers → (dtype, shape text)."""
    return {int(m[1]): (m[2], m[3]) for m in re.finditer(r"^result (\d+): (\w+)\[(.*)\]$",
                                                        stdout, re.M)}


def test_inputs_from_npy_files(good, tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "n.npy", np.array(7, np.int32))
    proc = run_cli(good, "--input", tmp_path / "x.npy", tmp_path / "n.npy")
    assert proc.returncode == 0, proc.stderr
    assert results(proc.stdout) == {0: ("float32", "2, 3"), 1: ("int32", "")}
    body = proc.stdout.split("result 1:")
    # numpy's own repr of the expected values appears verbatim
    assert repr(x + x) in body[0]
    assert repr(np.array(-7, np.int32)) in body[1]


def test_random_inputs_are_seeded(good):
    a = run_cli(good, "--random", "--seed", "3")
    b = run_cli(good, "--random", "--seed", "3")
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    assert results(a.stdout) == {0: ("float32", "2, 3"), 1: ("int32", "")}
    # The printed results are what the program computes on the seeded inputs.
    x, n = cli.random_inputs([((2, 3), np.float32), ((), np.int32)], seed=3)
    assert repr(x + x) in a.stdout and repr(np.array(-n)) in a.stdout


def test_bad_module_exits_1_with_readable_message(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text(BAD)
    proc = run_cli(p)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "'mhlo.add' op requires compatible types for all operands and results" in proc.stderr
    assert "3 | %0 = \"mhlo.add\"(%arg0, %arg1)" in proc.stderr
    assert "Failed to parse using StableHLO" not in proc.stderr
    assert proc.stdout == ""


def test_check_only(good, tmp_path):
    proc = run_cli(good, "--check-only")
    assert proc.returncode == 0, proc.stderr
    assert "verified" in proc.stdout and "result" not in proc.stdout
    bad = tmp_path / "bad.mlir"
    bad.write_text(BAD)
    proc = run_cli(bad, "--check-only")
    assert proc.returncode == 1 and "requires compatible types" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_inputs_and_wrong_inputs(good, tmp_path):
    proc = run_cli(good)
    assert proc.returncode == 1
    assert "takes 2 arguments" in proc.stderr and "--random" in proc.stderr
    assert "Traceback" not in proc.stderr
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float64))
    np.save(tmp_path / "n.npy", np.array(1, np.int32))
    proc = run_cli(good, "--input", tmp_path / "x.npy", "--input", tmp_path / "n.npy")
    assert proc.returncode == 1
    assert "argument 0: expected dtype float32, got float64" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- in-process: the same main() ---------------------------------------------------------------

def test_compile_only_and_missing_file(good, tmp_path, capsys):
    assert cli.main([str(good), "--compile-only"]) == 0
    out = capsys.readouterr().out
    assert "compiled for cpu" in out and "float32[2, 3], int32[]" in out
    assert cli.main([str(tmp_path / "nope.mlir")]) == 1
    assert "No such file" in capsys.readouterr().err


def test_compile_error_exits_1(tmp_path, capsys):
    m = hlo.Module("cc")
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.custom_call("no_such_target_xyz", [f.arguments[0]], [f.arguments[0].type]))
    p = tmp_path / "cc.mlir"
    p.write_text(m.to_text())
    assert cli.main([str(p), "--check-only"]) == 0
    assert cli.main([str(p)]) == 1
    assert "no_such_target_xyz" in capsys.readouterr().err


def test_zero_argument_program_runs_without_inputs(tmp_path, capsys):
    m = hlo.Module("iota")
    f = m.add_function("main", [], visibility="public")
    b = f.builder()
    b.return_(b.iota((4,), hlo.i32))
    p = tmp_path / "iota.mlir"
    p.write_text(m.to_text())
    assert cli.main([str(p)]) == 0
    out = capsys.readouterr().out
    assert "result 0: int32[4]" in out and repr(np.arange(4, dtype=np.int32)) in out


def test_input_and_random_together_is_an_error(good, tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    assert cli.main([str(good), "--random", "--input", str(tmp_path / "x.npy")]) == 1
    assert "not both" in capsys.readouterr().err


def test_usage_errors_exit_2(good):
    for bad in (["--platform", "tpux"], ["--platform", "tpu"], ["--topology", "v5e:2x2"],
                ["--show", "hlo,nonsense"]):
        with pytest.raises(SystemExit) as info:
            cli.main([str(good), *bad])
        assert info.value.code == 2, bad
    with pytest.raises(SystemExit):
        cli.main([str(good), "--check-only", "--compile-only"])


def test_counts_and_options_check_only_would_ignore_exit_2(good, capsys):
    """--num-replicas 0 was a ValueError (exit 1); --check-only with options about compiling
    or running printed "verified" and ignored them."""
    for bad, said in ((["--num-replicas", "0", "--random"], "--num-replicas must be at least 1"),
                      (["--num-partitions", "-1"], "--num-partitions must be at least 1"),
                      (["--check-only", "--show", "hlo"], "--show would be ignored"),
                      (["--check-only", "--random", "--seed", "3"],
                       "--random, --seed would be ignored")):
        with pytest.raises(SystemExit) as info:
            cli.main([str(good), *bad])
        assert info.value.code == 2, bad
        assert said in capsys.readouterr().err


def test_a_file_of_two_modules_is_one_clear_error(good, tmp_path, capsys):
    """jaxlib reads two modules as one holding both (verified, then "MLIR module must have a
    main function" at compile): said at the check, naming the second module's line."""
    two = tmp_path / "two.mlir"
    text = GOOD.strip() + "\n" + GOOD.strip() + "\n"
    two.write_text(text)
    second = 1 + GOOD.strip().count("\n") + 1
    for mode in (["--check-only"], ["--random"]):
        assert cli.main([str(two), *mode]) == 1
        err = capsys.readouterr().err
        assert f"more than one module (another starts at line {second})" in err, err


def test_random_inputs_cover_every_element_type():
    params = [((2, 3), t.dtype) for t in hlo.ALL_ELEMENT_TYPES]
    arrays = cli.random_inputs(params, seed=1)
    for (shape, dtype), a in zip(params, arrays):
        assert a.shape == shape and a.dtype == dtype
        if dtype.kind == "V" and "e8m0" not in dtype.name:  # ml_dtypes floats and ints
            assert np.all(np.isfinite(a.astype(np.float32))), dtype
    assert cli.random_inputs([((4,), ml_dtypes.uint4)], 0)[0].astype(int).min() >= 0


# -- help and messages -------------------------------------------------------------------------

def test_help_names_the_program_and_its_modes():
    proc = run_cli("--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("usage: python -m verify ")  # not argparse's guess, "__main__.py"
    assert "__main__.py" not in out
    for option in ("--check-only", "--compile-only", "--random", "--input", "--seed",
                   "--platform {cpu,cuda,tpu}", "--topology", "--show", "--num-partitions"):
        assert option in out, option
    assert "python -m verify model.mlir --random" in out  # examples under the same name
    assert "exit status: 0 success, 1" in out


def test_help_under_the_mhlo_run_script_name():
    """The installed entry point (``mhlo-run``, verify.cli:main) runs with argv[0] naming the
    script; the help then says ``mhlo-run``."""
    code = ("import sys; sys.argv[0] = '/usr/local/bin/mhlo-run'; "
            "from verify.cli import main; sys.exit(main(['--help']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: mhlo-run ")
    assert "mhlo-run model.mlir --check-only" in proc.stdout
    assert "python -m verify" not in proc.stdout


def test_errors_name_the_file_with_a_caret_and_once(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text(BAD)
    proc = run_cli(p, "--check-only")
    assert proc.returncode == 1
    err = proc.stderr
    message = "'mhlo.add' op requires compatible types for all operands and results"
    assert err.startswith(f"error: {message}\n")
    assert err.count(message) == 1
    assert f"at {p}:3:10" in err
    lines = err.splitlines()
    i = next(i for i, ln in enumerate(lines) if "3 | " in ln)
    shown = lines[i].split("| ", 1)[1]
    assert shown[lines[i + 1].index("^") - lines[i].index("| ") - 2:].startswith('"mhlo.add"')
    # read from standard input: named <stdin>
    proc = subprocess.run([sys.executable, "-m", "verify", "-", "--check-only"], input=BAD,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "at <stdin>:3:10" in proc.stderr


def test_token_parameter_is_refused_in_one_line(tmp_path, capsys):
    p = tmp_path / "tok.mlir"
    p.write_text("""\
module {
  func.func public @main(%arg0: !mhlo.token, %arg1: tensor<2xf32>) -> tensor<2xf32> {
    return %arg1 : tensor<2xf32>
  }
}
""")
    assert cli.main([str(p), "--compile-only"]) == 0
    assert "parameters (token or tuple, float32[2])" in capsys.readouterr().out
    assert cli.main([str(p), "--random"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["error: @main has a token or tuple parameter, which cannot be "
                                "passed from the command line; use --compile-only, or array "
                                "parameters"]


def test_show_what_the_compiler_made(good, capsys):
    assert cli.main([str(good), "--show", "cost,memory,shapes,hlo"]) == 0
    out = capsys.readouterr().out
    assert "compiled for cpu; parameters (float32[2, 3], int32[])" in out
    for section in ("-- cost analysis --", "-- memory (bytes per device) --",
                    "-- per-device parameter shapes --", "-- optimized HLO --"):
        assert section in out
    assert "argument_size_in_bytes: 28" in out      # f32[2,3] and i32[]
    assert "parameter 0: [2, 3]" in out and "parameter 1: []" in out and "ENTRY" in out
    assert "(not run: give --input files or --random to run it)" in out


def test_show_with_inputs_shows_then_runs(good, tmp_path, capsys):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "k.npy", np.int32(5))
    assert cli.main([str(good), "--show", "shapes", "--input", str(tmp_path / "x.npy"),
                     str(tmp_path / "k.npy")]) == 0
    out = capsys.readouterr().out
    assert "parameter 0: [2, 3]" in out
    assert results(out) == {0: ("float32", "2, 3"), 1: ("int32", "")}
    assert repr(x + x) in out and repr(np.array(-5, np.int32)) in out


def test_several_devices_run_whole_arrays(tmp_path, capsys):
    # (a replicated psum over 2 replicas: each adds the same input, so twice the input)
    text = """\
module {
  func.func public @main(%arg0: tensor<3xi32>) -> tensor<3xi32> {
    %0 = "mhlo.all_reduce"(%arg0) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %s = "mhlo.add"(%a, %b) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "mhlo.return"(%s) : (tensor<i32>) -> ()
    }) : (tensor<3xi32>) -> tensor<3xi32>
    return %0 : tensor<3xi32>
  }
}
"""
    p = tmp_path / "psum.mlir"
    p.write_text(text)
    np.save(tmp_path / "x.npy", np.array([1, -2, 3], np.int32))
    assert cli.main([str(p), "--num-replicas", "2", "--input", str(tmp_path / "x.npy")]) == 0
    out = capsys.readouterr().out
    assert results(out) == {0: ("int32", "3")}
    assert repr(np.array([2, -4, 6], np.int32)) in out
    assert cli.main([str(p), "--num-replicas", "2"]) == 0   # no inputs: compiled, said so
    assert "(not run: give --input files or --random" in capsys.readouterr().out
