"""verify.conformance: the check semantics against hand-computed values, the AST edits and the
transformation, a fixed sample of the corpus end to end (generic-input mode), and the pool
counting a hanging and a crashing worker."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from verify.conformance import checks, family, program, run_conformance
from verify.conformance.checks import ALMOST_EQ_TOLERANCE, judge, ulp_distance
from verify.conformance.corpus import DEFAULT_DIR, split_modules

TOP = np.iinfo(np.uint64).max
f32 = np.float32


def _f32(*xs):
    return np.array(xs, np.float32)


# -- ULP distance ---------------------------------------------------------------------------

def test_ulp_zero_signs_and_nan():
    # +0/-0: opposite signs, bits(|a|) + bits(|e|) = 0; NaNs (any payload) are 0 apart.
    a = _f32(0.0, -0.0, -0.0, np.nan)
    e = _f32(-0.0, 0.0, -0.0, np.nan)
    payload = np.array([0x7FC00001], np.uint32).view(np.float32)
    assert ulp_distance(a, e).tolist() == [0, 0, 0, 0]
    assert ulp_distance(payload, _f32(np.nan)).tolist() == [0]


def test_ulp_neighbours_and_sign_crossing():
    one = f32(1.0)
    up = np.nextafter(one, f32(2))
    up3 = up
    for _ in range(2):
        up3 = np.nextafter(up3, f32(2))
    assert ulp_distance(_f32(1.0), np.array([up])).tolist() == [1]
    assert ulp_distance(_f32(1.0), np.array([up3])).tolist() == [3]
    tiny = np.float32(1e-45)  # the smallest subnormal: bits 1
    assert ulp_distance(np.array([tiny]), _f32(0.0)).tolist() == [1]
    assert ulp_distance(np.array([tiny]), np.array([-tiny])).tolist() == [2]
    assert ulp_distance(np.array([tiny]), _f32(-0.0)).tolist() == [1]
    # 1.0 (0x3F800000) against -1.0: 2 * 0x3F800000 apart.
    assert ulp_distance(_f32(1.0), _f32(-1.0)).tolist() == [2 * 0x3F800000]


def test_ulp_infinities_and_one_nan_are_not_comparable():
    big = np.finfo(np.float32).max
    a = _f32(np.inf, np.inf, -np.inf, np.nan, 1.0)
    e = _f32(np.inf, big, np.inf, 1.0, np.nan)
    assert ulp_distance(a, e).tolist() == [0, TOP, TOP, TOP, TOP]


def test_ulp_narrow_types():
    b = ml_dtypes.bfloat16
    assert ulp_distance(np.array([1.0, 2.0], b), np.array([1.0078125, 2.0], b)).tolist() == \
        [1, 0]
    h = np.float16
    assert ulp_distance(np.array([-0.0], h), np.array([np.float16(6e-8)], h)).tolist() == [1]
    e4 = ml_dtypes.float8_e4m3fn
    # float8 in a byte: 1.0 is 0x38, 1.125 is 0x39; -1.0 (0xB8) is 2 * 0x38 from 1.0.
    assert ulp_distance(np.array([1.0, 1.0], e4), np.array([1.125, -1.0], e4)).tolist() == \
        [1, 2 * 0x38]


def test_ulp_complex_is_the_larger_part():
    up2 = np.nextafter(np.nextafter(f32(1), f32(2)), f32(2))
    a = np.array([complex(1.0, 1.0)], np.complex64)
    e = np.array([complex(1.0, float(up2))], np.complex64)
    assert ulp_distance(a, e).tolist() == [2]
    e2 = np.array([complex(np.nan, 1.0)], np.complex64)
    assert ulp_distance(a, e2).tolist() == [TOP]


def test_expect_close_threshold():
    x = f32(1.0)
    for _ in range(4):
        x = np.nextafter(x, f32(2))
    up3 = np.nextafter(np.nextafter(np.nextafter(f32(1), f32(2)), f32(2)), f32(2))
    assert judge("expect_close", _f32(1.0), np.array([up3])).ok
    v = judge("expect_close", _f32(1.0), np.array([x]))
    assert not v.ok and "worst 4 ULP" in v.detail and "at [0]" in v.detail
    # Integers have no ULPs: close means equal.
    assert judge("expect_close", np.array([3], np.int32), np.array([3], np.int32)).ok
    assert not judge("expect_close", np.array([3], np.int32), np.array([4], np.int32)).ok


def test_expect_close_bounds_both_ways():
    """The check dialect's op carries its bounds: at most max_ulp and at least min_ulp apart
    (min: a check that two values differ)."""
    up = np.array([np.nextafter(f32(1), f32(2))])
    assert not judge("expect_close", _f32(1.0), up, max_ulp=0).ok
    assert judge("expect_close", _f32(1.0), up, max_ulp=1, min_ulp=1).ok
    v = judge("expect_close", _f32(1.0), _f32(1.0), max_ulp=5, min_ulp=1)
    assert not v.ok and "min ULP distance 1, nearest 0 ULP" in v.detail
    assert not judge("expect_close", _f32(np.nan), _f32(np.nan), min_ulp=1).ok


def test_check_of_reads_an_op_and_fixes_a_call():
    """CheckOps.td's defaults for the ops (max 1 ULP, tolerance 1e-4); a custom call's
    tolerances are fixed, whatever attributes it carries; a kind not judged is an error."""
    attrs = {"max_ulp_difference": 10, "min_ulp_difference": 2}.get
    assert checks.check_of("expect_close", True) == checks.Check("expect_close", None, 1, 0)
    assert checks.check_of("expect_close", True, attrs) == \
        checks.Check("expect_close", None, 10, 2)
    assert checks.check_of("expect_close", False, attrs) == checks.Check("expect_close")
    assert checks.check_of("expect_almost_eq", True) == \
        checks.Check("expect_almost_eq", 1e-4)
    assert checks.check_of("expect_almost_eq", False, {"tolerance": 1.0}.get) == \
        checks.Check("expect_almost_eq")
    for kind, op_form in (("expect_serialized_eq", False), ("eq", True),
                          ("expect_eq_const", False)):
        with pytest.raises(ValueError, match=f"'check.{kind}' is not judged here"):
            checks.check_of(kind, op_form)
    # bounds that are no bounds: unsupported on both sides (a negative one crashed the judge)
    for name, value in (("max_ulp_difference", -1), ("min_ulp_difference", 1.5),
                        ("max_ulp_difference", "big")):
        with pytest.raises(ValueError, match=f"its {name} is"):
            checks.check_of("expect_close", True, {name: value}.get)
    with pytest.raises(ValueError, match="its tolerance is 'big'"):
        checks.check_of("expect_almost_eq", True, {"tolerance": "big"}.get)


# Each module must fail (the reviewers' cases, 2026-12-07): an op-form expect_close at max 0
# and 1 ULP off; an op-form expect_almost_eq at its default 1e-4 and 5e-4 off; an op-form
# expect_close whose min_ulp_difference 1 two equal values miss; custom calls whose stray
# `tolerance` attributes once loosened them (0.5 off).
def _negated(expected: str, check: str) -> str:
    """A module checking negate([1, 2]) against ``expected`` with ``check`` (a line taking
    %0, the actual, and %e, the expected)."""
    return f"""module {{
  func.func @main() {{
    %cst = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %e = stablehlo.constant dense<{expected}> : tensor<2xf32>
    %0 = stablehlo.negate %cst : tensor<2xf32>
    {check} : (tensor<2xf32>, tensor<2xf32>) -> ()
    return
  }}
}}"""


_MUST_FAIL = "\n// -----\n".join([
    _negated("[-1.0, -2.00000024]",
             '"check.expect_close"(%0, %e) <{max_ulp_difference = 0 : ui64}>'),
    _negated("[-1.0005, -2.0]", '"check.expect_almost_eq"(%0, %e)'),
    _negated("[-1.0, -2.0]", '"check.expect_close"(%0, %e) '
                             '<{max_ulp_difference = 5 : ui64, min_ulp_difference = 1 : ui64}>'),
    _negated("[-1.5, -2.5]", "stablehlo.custom_call @check.expect_almost_eq(%0, %e) "
                             "{has_side_effect = true, tolerance = 1.000000e+00 : f64}"),
])

_NOT_JUDGED = """
module {
  func.func @main() -> tensor<2xf32> {
    %cst = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %0 = stablehlo.negate %cst : tensor<2xf32>
    stablehlo.custom_call @check.expect_serialized_eq(%0, %cst) {has_side_effect = true}
        : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %0 : tensor<2xf32>
  }
}
"""


def test_check_ops_and_calls_are_judged_by_their_own_bounds(tmp_path):
    """Both sides judge each module of _MUST_FAIL a failure (they passed all four), and a
    check kind neither judges is unsupported before anything runs (it was a crash)."""
    bad, unknown = tmp_path / "bad.mlir", tmp_path / "unknown.mlir"
    bad.write_text(_MUST_FAIL)
    unknown.write_text(_NOT_JUDGED)
    r = run_conformance(tmp_path, files=[bad, unknown], jobs=1, timeout=120)
    got = {rec["file"]: rec for rec in r["files"]}
    for side in ("ours", "reference"):
        mods = got["bad.mlir"][side]["modules"]
        assert [m["status"] for m in mods] == ["fail"] * 4, (side, mods)
        assert "max ULP distance 0" in mods[0]["reason"]
        assert "tolerance 0.0001" in mods[1]["reason"]
        assert "min ULP distance 1" in mods[2]["reason"]
        assert "tolerance 0.001" in mods[3]["reason"]
        assert got["unknown.mlir"][side]["status"] == "unsupported"
        assert "check.expect_serialized_eq' is not judged here" in \
            got["unknown.mlir"][side]["reason"]


def test_a_crashed_side_counts_as_many_modules_as_the_other():
    """Module totals of both sides add up to the same count when one side's worker died."""
    from verify.conformance.report import summarize
    mods = [{"status": "pass", "reason": ""}] * 3
    records = [{"file": "f.mlir", "family": "f",
                "ours": {"status": "crash", "reason": "SIGABRT"},
                "reference": {"status": "pass", "reason": "", "modules": mods}}]
    totals = summarize(records)["module_totals"]
    assert totals == {"ours": {"crash": 3}, "reference": {"pass": 3}}


@pytest.mark.parametrize("timeout", [0, -5, float("nan")])
def test_a_timeout_must_be_positive(timeout, capsys):
    from verify.conformance.__main__ import main
    with pytest.raises(ValueError, match="timeout must be a number of seconds above 0"):
        run_conformance(DEFAULT_DIR, files=[], timeout=timeout)
    with pytest.raises(SystemExit):
        main([str(DEFAULT_DIR), "--timeout", str(timeout)])
    assert "--timeout must be more than 0 seconds" in capsys.readouterr().err


# -- almost_eq, eq, the *_const checks ------------------------------------------------------

def test_almost_eq():
    assert ALMOST_EQ_TOLERANCE == 1e-3
    assert judge("expect_almost_eq", _f32(1.0, 0.0, np.nan, np.inf),
                 _f32(1.0009, -0.0, np.nan, np.inf)).ok
    for a, e in [(1.0, 1.0011), (np.nan, 1.0), (1.0, np.nan), (np.inf, -np.inf),
                 (np.inf, 3e38), (-np.inf, 1.0)]:
        assert not judge("expect_almost_eq", _f32(a), _f32(e)).ok, (a, e)
    c = np.complex128
    assert judge("expect_almost_eq", np.array([1 + 1j], c), np.array([1.0005 + 0.9995j], c)).ok
    assert not judge("expect_almost_eq", np.array([1 + 1j], c), np.array([1 + 1.002j], c)).ok


def test_expect_eq_is_ieee():
    assert judge("expect_eq", _f32(0.0, 1.5), _f32(-0.0, 1.5)).ok
    assert not judge("expect_eq", _f32(np.nan), _f32(np.nan)).ok
    assert not judge("expect_eq", _f32(1.0), np.array([np.nextafter(f32(1), f32(2))])).ok
    u = np.uint64
    assert judge("expect_eq", np.array([2**64 - 1], u), np.array([2**64 - 1], u)).ok
    assert not judge("expect_eq", np.array([2**64 - 1], u), np.array([2**64 - 2], u)).ok
    i4 = ml_dtypes.int4
    assert not judge("expect_eq", np.array([-8, 7], i4), np.array([-8, 6], i4)).ok
    assert judge("expect_eq", np.array([True, False]), np.array([True, False])).ok


def test_check_eq_by_element_type():
    # Floats: almost_eq at 1e-4; integers and i1: exact.
    assert judge("eq", _f32(1.0), _f32(1.00009)).ok
    assert not judge("eq", _f32(1.0), _f32(1.0002)).ok
    assert not judge("eq", np.array([1], np.int8), np.array([2], np.int8)).ok
    assert not judge("eq", np.array([True]), np.array([False])).ok


def test_const_checks_and_tolerance():
    assert judge("expect_almost_eq_const", _f32(1.0), _f32(1.00009)).ok
    assert not judge("expect_almost_eq_const", _f32(1.0), _f32(1.0002)).ok
    assert judge("expect_almost_eq_const", _f32(1.0), _f32(1.2), tolerance=0.5).ok
    assert not judge("expect_eq_const", _f32(np.nan), _f32(np.nan)).ok


def test_mismatched_shapes_fail_and_empty_passes():
    v = judge("expect_eq", np.zeros((2,), f32), np.zeros((3,), f32))
    assert not v.ok and "expected float32[3]" in v.detail
    assert judge("expect_close", np.zeros((2, 0), f32), np.zeros((2, 0), f32)).ok
    with pytest.raises(ValueError, match="unknown check kind"):
        judge("expect_nearly", _f32(1.0), _f32(1.0))
    assert set(checks.KINDS) >= {"expect_close", "eq"}


# -- the AST edits and the transformation ---------------------------------------------------

# MLIR's generic print (tokens may be split across lines).
_GENERIC = '''
"builtin.module"() <{sym_name = "jit_main"}> ({
  "func.func"() <{function_type = () -> tensor<2xf32>, sym_name = "main", sym_visibility =
        "public"}> ({
    %0 = "func.call"() <{callee = @inputs}> : () -> tensor<2xf32>
    %1 = "func.call"() <{callee = @expected}> : () -> tensor<2xf32>
    %2 = "stablehlo.abs"(%0) : (tensor<2xf32>) -> tensor<2xf32>
    "stablehlo.custom_call"(%2, %1) <{call_target_name = "check.expect_close",
        has_side_effect = true}> : (tensor<2xf32>, tensor<2xf32>) -> ()
    "check.expect_almost_eq_const"(%2) <{tolerance = 1.000000e-01 : f32, value =
        dense<[1.0, 2.0]> : tensor<2xf32>}> : (tensor<2xf32>) -> ()
    "func.return"(%2) : (tensor<2xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = () -> tensor<2xf32>, sym_name = "inputs", sym_visibility
        = "private"}> ({
    %0 = "stablehlo.constant"() <{value = dense<[-1.0, 2.0]> : tensor<2xf32>}> : () ->
        tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = () -> tensor<2xf32>, sym_name = "expected",
        sym_visibility = "private"}> ({
    %0 = "stablehlo.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () ->
        tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
'''


def test_transform_on_our_ast():
    import mhlo_ir
    m = mhlo_ir.parse(_GENERIC)
    t = program.transform(m)
    m.verify()
    main = m.lookup("main")
    assert [a.tolist() for a in t.arguments] == [[-1.0, 2.0]]
    assert t.checks == [checks.Check("expect_close"),
                        checks.Check("expect_almost_eq_const", pytest.approx(0.1))]
    assert len(main.arg_types) == 1 and len(main.result_types) == 4
    names = [op.spec.name for op in main.entry_block.operations]
    assert names == ["func.call", "abs", "constant", "func.return"]
    text = m.to_text()
    assert "check." not in text and "@inputs}" not in text
    # The new argument feeds abs; @expected and the constant are returned beside it.
    abs_op = main.entry_block.operations[1]
    assert abs_op.operands[0] is main.arguments[0]


def test_edit_helpers():
    import mhlo_ir as hlo
    m = hlo.Module("m")
    t = hlo.tensor((2,), hlo.f32)
    f = m.add_function("f", [t])
    b = f.builder()
    (x,) = f.arguments
    y = b.negate(x)
    b.return_(b.add(y, y))
    z = program.add_argument(f, t)
    assert z.index == 1 and f.arg_types == (t, t) and f.arguments[1] is z
    assert program.replace_uses(f, y, z) == 2
    add = f.entry_block.operations[1]
    assert add.operands == (z, z)
    program.remove_op(f.entry_block.operations[0])
    assert program.uses(f, x) == []
    m.verify()
    program.rename_function(m, f, "main")
    assert m.lookup("main") is f and m.lookup("f") is None
    with pytest.raises(ValueError):
        program.rename_function(m, f, "main")


def test_family_and_split():
    assert family("abs_bfloat16_20_20.mlir") == "abs"
    assert family("add_any_int8_2_int8_2.mlir") == "add_any"
    assert family("dir/vmap_scatter_add_modes_in_bounds_float32_1.mlir") == "scatter_add"
    assert family("quantized/add_qi8.mlir") == "add"
    assert family("dynamic/add_transpose_dynamic.mlir") == "add_transpose"
    assert family("acos_complex128_20_20_chlo.mlir") == "acos"
    assert family("conv_general_dilated_conv1d_lhs_float32_2_3.mlir") == "conv_general_dilated"
    text = "// RUN: x\nmodule {\n}\n// -----\n\nmodule {\n}\n"
    pieces = split_modules(text)
    assert len(pieces) == 2
    # Line numbers stay the file's: the second module starts on line 6.
    assert pieces[1].split("\n")[5] == "module {"


# -- the corpus, end to end -----------------------------------------------------------------

# (file, ours' status, the reference's status), each file read as written: mixed families
# and element types, a file without @inputs, one split by "// -----", a dynamic and a
# quantized one.
SAMPLE = [
    ("abs_bfloat16_20_20.mlir", "pass", "pass"),
    ("abs_complex128_20_20.mlir", "pass", "pass"),
    ("add_uint64_20_20_uint64_20_20.mlir", "pass", "pass"),
    ("and_bool_20_20_bool_20_20.mlir", "pass", "pass"),
    ("acosh_float16_20_20_chlo.mlir", "pass", "pass"),
    ("sort_int32_100_int32_100.mlir", "pass", "pass"),
    ("iota_2x32_shape_.mlir", "pass", "pass"),
    ("broadcast_in_dim_complex64_2.mlir", "pass", "pass"),
    ("reduce_bfloat16_4_6_int32_4_6.mlir", "pass", "pass"),
    ("dot_general_int8_4_3_float32_3_6.mlir", "pass", "pass"),
    ("dynamic/add_dynamic.mlir", "unsupported", "unsupported"),
    # quantized: ours lowers it with mhlo_ir.quant_lowering, the reference with StableHLO's
    # own lowering inside jaxlib (verify.quantized)
    ("quantized/abs_shape_float32_20_20_qi8.mlir", "pass", "pass"),
    # 21 modules: the i1 add fails on both sides (XLA wraps true + true to false; the
    # StableHLO interpreter's expected value is true), the quantized one passes on both.
    ("quantized/add_qi8.mlir", "fail", "fail"),
]


@pytest.fixture(scope="module")
def sample_report():
    if not (DEFAULT_DIR / SAMPLE[0][0]).exists():
        pytest.skip(f"the corpus is not at {DEFAULT_DIR}")
    return run_conformance(DEFAULT_DIR, files=[DEFAULT_DIR / f for f, _, _ in SAMPLE], jobs=2)


def test_sample_statuses(sample_report):
    got = {r["file"]: (r["ours"]["status"], r["reference"]["status"])
           for r in sample_report["files"]}
    assert got == {f: (o, r) for f, o, r in SAMPLE}
    split = next(r for r in sample_report["files"] if r["file"] == "quantized/add_qi8.mlir")
    statuses = [m["status"] for m in split["ours"]["modules"]]
    assert len(statuses) == 21
    assert statuses.count("fail") == 1 and statuses.count("pass") == 20
    assert [m["status"] for m in split["reference"]["modules"]] == statuses
    assert "module" in split["ours"]["reason"] and "expect_eq_const" in split["ours"]["reason"]
    dyn = next(r for r in sample_report["files"] if r["file"] == "dynamic/add_dynamic.mlir")
    assert "dynamic" in dyn["ours"]["reason"]
    s = sample_report["summary"]
    assert s["differences"] == []
    assert s["beyond_reference"] == []
    assert s["totals"]["ours"]["pass"] == s["totals"]["reference"]["pass"] == 11
    assert s["families"]["abs"]["files"] == 3
    json.dumps(sample_report)  # --json prints exactly this


def test_generic_input_mode_reads_mlirs_generic_print():
    """The development aid: our parser reads MLIR's generic print of each module."""
    r = run_conformance(DEFAULT_DIR, files=[DEFAULT_DIR / "abs_bfloat16_20_20.mlir"], jobs=1,
                        generic_input=True)
    (rec,) = r["files"]
    assert (rec["ours"]["status"], rec["reference"]["status"]) == ("pass", "pass")


def test_a_sample_of_300_files_passes_wherever_jaxlib_does():
    """CI's share of the corpus: 300 files drawn with a fixed seed, read as written and
    printed as MHLO; every file jaxlib passes as written passes through our round trip, and
    no file differs (`python -m verify.conformance` runs all of them)."""
    if not DEFAULT_DIR.exists():
        pytest.skip(f"the corpus is not at {DEFAULT_DIR}")
    r = run_conformance(DEFAULT_DIR, sample_size=300, seed=0, jobs=2)
    assert len(r["files"]) == 300
    assert r["summary"]["differences"] == []
    passed = sum(rec["reference"]["status"] == "pass" for rec in r["files"])
    assert passed >= 200  # the sample is not all dynamic/quantized files


def test_hanging_and_crashing_workers_are_counted():
    files = [DEFAULT_DIR / f for f in ("abs_int8_20_20.mlir", "abs_int16_20_20.mlir",
                                       "abs_int32_20_20.mlir")]
    if not files[0].exists():
        pytest.skip(f"the corpus is not at {DEFAULT_DIR}")
    r = run_conformance(DEFAULT_DIR, files=files, generic_input=True, jobs=2, timeout=4,
                        test_hooks={"hang": "abs_int8", "crash": "abs_int16"})
    got = {rec["file"]: (rec["ours"]["status"], rec["reference"]["status"])
           for rec in r["files"]}
    assert got == {"abs_int8_20_20.mlir": ("timeout", "timeout"),
                   "abs_int16_20_20.mlir": ("crash", "crash"),
                   "abs_int32_20_20.mlir": ("pass", "pass")}
    crashed = r["files"][1]["ours"]["reason"]
    assert "SIGABRT" in crashed


def test_a_crash_on_one_side_is_counted_against_that_side():
    """Both sides of a file share a worker; when it dies, each side runs again in a worker of
    its own, so the side that kills it is the one counted."""
    files = [DEFAULT_DIR / f for f in ("abs_int16_20_20.mlir", "abs_int32_20_20.mlir")]
    if not files[0].exists():
        pytest.skip(f"the corpus is not at {DEFAULT_DIR}")
    r = run_conformance(DEFAULT_DIR, files=files, jobs=2, timeout=60,
                        test_hooks={"crash": ("abs_int16", "reference")})
    got = {rec["file"]: (rec["ours"]["status"], rec["reference"]["status"])
           for rec in r["files"]}
    assert got == {"abs_int16_20_20.mlir": ("pass", "crash"),
                   "abs_int32_20_20.mlir": ("pass", "pass")}
    assert "SIGABRT" in r["files"][0]["reference"]["reason"]


# Files whose verdicts must not depend on sharing executables: a pass, a float failure (a
# 3-ULP miss, both sides), 21 modules in one file, and igamma, whose HLO differs between the
# two sides (its constants are laid out differently), so it compiles twice.
_SHARING = ("abs_int32_20_20.mlir", "sinh_float64_20_20_chlo.mlir", "quantized/add_qi8.mlir",
            "igamma_float32_20_20_float32_20_20_chlo.mlir")


def test_sharing_executables_changes_no_verdict():
    files = [DEFAULT_DIR / f for f in _SHARING]
    if not all(f.exists() for f in files):
        pytest.skip(f"the corpus is not at {DEFAULT_DIR}")

    def verdicts(report):
        return {rec["file"]: (rec["ours"]["status"], rec["reference"]["status"],
                              [m["status"] for m in rec["ours"]["modules"] or ()],
                              [m["status"] for m in rec["reference"]["modules"] or ()])
                for rec in report["files"]}

    shared = run_conformance(DEFAULT_DIR, files=files, jobs=2)
    alone = run_conformance(DEFAULT_DIR, files=files, jobs=2, share_executables=False)
    assert verdicts(shared) == verdicts(alone)
    assert alone["run"]["shared_compiles"] == 0
    per_file = {rec["file"]: rec["reference"]["shared_compiles"] for rec in shared["files"]}
    assert per_file["abs_int32_20_20.mlir"] == 1
    assert per_file["igamma_float32_20_20_float32_20_20_chlo.mlir"] == 0
    assert per_file["sinh_float64_20_20_chlo.mlir"] == 1
    # 19 of its 20 runnable modules (the empty-tensor one's HLO differs: ours uses one
    # constant twice where the reference has two).
    assert per_file["quantized/add_qi8.mlir"] >= 18


def test_an_exception_in_a_module_is_a_crash_naming_it(monkeypatch):
    from verify.conformance import ours, task
    f = DEFAULT_DIR / "abs_float32_20_20.mlir"
    if not f.exists():
        pytest.skip(f"the corpus is not at {DEFAULT_DIR}")

    def broken(*args):
        raise AttributeError("no such thing")

    monkeypatch.setattr(ours, "run_module", broken)
    result = task.run_task((str(f), ("ours",)), {})["ours"]
    assert result["status"] == "crash"
    assert "AttributeError raised at test_conformance.py" in result["reason"]
    assert "no such thing" in result["reason"]


def test_cli_json(capsys):
    from verify.conformance.__main__ import main
    f = DEFAULT_DIR / "abs_float32_20_20.mlir"
    if not f.exists():
        pytest.skip(f"the corpus is not at {DEFAULT_DIR}")
    assert main([str(f), "--generic-input", "--json", "--jobs", "1", "--quiet",
                 "--dialect", "stablehlo"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run"]["dialect"] == "stablehlo"
    assert report["summary"]["totals"] == {"ours": {"pass": 1}, "reference": {"pass": 1}}
