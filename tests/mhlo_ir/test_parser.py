"""mhlo_ir.parse: text back into the AST.

Oracles: our printer (every op case, four print modes) must read back to a module printing the
same bytes; MLIR's own prints of those modules (generic, and its custom forms where we read
them) must parse to modules whose MLIR generic re-print equals MLIR's generic print of the
original; and mistakes are ParseErrors at the right line and column.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.dialect import STABLEHLO
from mhlo_ir.syntax import ParseError
from tests import oracle
from tests.mhlo_ir import ops as ops_pkg
from tests.mhlo_ir.ops.cases import CASES

for _m in pkgutil.iter_modules(ops_pkg.__path__):
    if _m.name.startswith("cases"):
        importlib.import_module(f"{ops_pkg.__name__}.{_m.name}")

CASE_LIST = [c for cs in CASES.values() for c in cs]
MODES = {"generic": {}, "pretty": {"pretty": True}, "alias": {"locations": "alias"},
         "stablehlo": {"dialect": STABLEHLO}}


def _built(case):
    m, _ = case.build()
    return m


@pytest.mark.parametrize("case", CASE_LIST, ids=lambda c: c.id)
def test_every_case_reads_back_byte_identical(case):
    m = _built(case)
    for mode, kw in MODES.items():
        try:
            text = m.to_text(**kw)
        except hlo.OpBuildError:
            assert mode == "stablehlo"  # an MHLO-only op
            continue
        back = hlo.parse(text)
        assert back.to_text(**kw) == text, mode
        if mode == "generic":
            # Read as the other dialect's text, it is the same module.
            assert back.to_text(pretty=True) == m.to_text(pretty=True)


def _with_locations(case):
    """The case's module with a distinct location on every op and argument."""
    m = _built(case)
    n = 0
    for fn in m.functions:
        stack = [fn.body]
        while stack:
            region = stack.pop()
            for block in region.blocks:
                for op in block.operations:
                    n += 1
                    op.location = hlo.FileLineColLoc("f.py", n, 3) if n % 3 else \
                        hlo.NameLoc(f"op{n}", hlo.FileLineColLoc("g.py", n, 1))
                    stack.extend(op.regions)
    return m


@pytest.mark.parametrize("case", CASE_LIST[::7], ids=lambda c: c.id)
def test_locations_read_back_inline_and_aliased(case):
    m = _with_locations(case)
    for kw in ({}, {"locations": "alias"}, {"locations": "alias", "pretty": True}):
        text = m.to_text(**kw)
        assert hlo.parse(text).to_text(**kw) == text


# -- MLIR's own prints as input --------------------------------------------------------------

@pytest.mark.parametrize("case", CASE_LIST[::3], ids=lambda c: c.id)
def test_mlir_generic_print_reads_as_mlir_means_it(case):
    mlir_text = oracle.mlir_generic(_built(case).to_text(locations=False))
    ours = hlo.parse(mlir_text).to_text(locations=False)
    assert oracle.normalize_hex(ours) == mlir_text


def test_mlir_custom_forms_we_read_mean_what_mlir_means():
    """MLIR's default print (custom forms) of every case: where our parser reads all of it,
    MLIR's generic print of our re-print equals its generic print of the original. Ops whose
    custom form the parser does not read yet are refused with an error naming the op."""
    read = refused = 0
    for case in CASE_LIST:
        text = _built(case).to_text(locations=False)
        pretty = str(oracle.parse(text))
        try:
            back = hlo.parse(pretty)
        except ParseError as e:
            assert "custom form" in e.message or "expected" in e.message, e
            refused += 1
            continue
        read += 1
        # Against MLIR's generic print of its own custom print: that print leaves out
        # default-valued attributes (topk's largest = true), which MLIR then reads as unset.
        assert oracle.mlir_generic(back.to_text(locations=False)) == oracle.mlir_generic(pretty)
    assert read >= 458, (read, refused)


# -- what the parser reads -------------------------------------------------------------------

def test_top_level_functions_need_no_module():
    m = hlo.parse("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                  "  %0 = mhlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n")
    assert m.name is None and [f.name for f in m.functions] == ["f"]
    assert m.functions[0].entry_block.operations[0].spec.name == "add"


def test_stablehlo_text_gives_the_dialect_neutral_module():
    b_text = ('module @m {\n  func.func @main(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {\n'
              '    %0 = "stablehlo.transpose"(%arg0) <{permutation = array<i64: 1, 0>}> : '
              '(tensor<2x3xf32>) -> tensor<3x2xf32>\n    return %0 : tensor<3x2xf32>\n  }\n}\n')
    m = hlo.parse(b_text)
    # Printed pretty, StableHLO's transpose takes its custom form.
    assert m.to_text(dialect=STABLEHLO, pretty=True) == b_text.replace(
        '"stablehlo.transpose"(%arg0) <{permutation = array<i64: 1, 0>}>',
        "stablehlo.transpose %arg0, dims = [1, 0]")
    mhlo_text = m.to_text()
    assert "dense<[1, 0]> : tensor<2xi64>" in mhlo_text
    oracle.assert_fixed_point(mhlo_text)


def test_unknown_ops_print_back_as_written():
    text = ('"builtin.module"() ({\n  "func.func"() <{function_type = (tensor<2xf32>) -> '
            '(), sym_name = "main"}> ({\n  ^bb0(%arg0: tensor<2xf32>):\n'
            '    "check.expect_eq_const"(%arg0) <{value = dense<[1.000000e+00, 2.000000e+00]>'
            ' : tensor<2xf32>}> {note = "kept"} : (tensor<2xf32>) -> ()\n'
            '    %0:2 = "my.pair"(%arg0) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<i1>)\n'
            '    "func.return"() : () -> ()\n  }) : () -> ()\n}) : () -> ()\n')
    m = hlo.parse(text)
    assert m.to_text() == text
    op = m.functions[0].entry_block.operations[0]
    assert op.spec.name == "check.expect_eq_const"
    assert np.array_equal(np.asarray(op.attributes["value"].to_array()), [1.0, 2.0])


def test_split_files_keep_file_line_numbers():
    one = "func.func @f() {\n  return\n}\n"
    text = one + "// -----\n" + one + "// -----\nfunc.func @g() {\n  retur\n}\n"
    with pytest.raises(ParseError) as e:
        hlo.parse_modules(text)
    assert e.value.line == 10
    assert [m.functions[0].name for m in hlo.parse_modules(text.rsplit("// -----", 1)[0])] \
        == ["f", "f"]


def test_parse_file_names_the_file(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text("func.func @f() {\n  %0 = mhlo.add %x, %x : tensor<f32>\n}\n")
    with pytest.raises(ParseError, match=r"bad\.mlir:2:17: use of undefined value %x"):
        hlo.parse_file(p)


def test_region_values_end_with_their_region():
    text = ('func.func @f(%a: tensor<2xf32>) -> tensor<f32> {\n'
            '  %c = mhlo.constant dense<0.000000e+00> : tensor<f32>\n'
            '  %r = "mhlo.reduce"(%a, %c) <{dimensions = dense<0> : tensor<1xi64>}> ({\n'
            '  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
            '    %s = mhlo.add %x, %y : tensor<f32>\n    mhlo.return %s : tensor<f32>\n'
            '  }) : (tensor<2xf32>, tensor<f32>) -> tensor<f32>\n'
            '  return %s : tensor<f32>\n}\n')
    with pytest.raises(ParseError, match=r"^8:10: use of undefined value %s"):
        hlo.parse(text)
    ok = hlo.parse(text.replace("  return %s : tensor<f32>\n}", "  return %r : tensor<f32>\n}"))
    assert ok.functions[0].result_types == (hlo.tensor((), hlo.f32),)


def test_functions_do_not_see_each_other():
    text = ("func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  return %a : tensor<f32>\n}\n"
            "func.func @g() -> tensor<f32> {\n  return %a : tensor<f32>\n}\n")
    with pytest.raises(ParseError, match=r"^5:10: use of undefined value %a"):
        hlo.parse(text)


# -- mistakes --------------------------------------------------------------------------------

BAD = [
    # (text, line:col, message part)
    ("func.func @f(%a: tensor<2xf32>) {\n  %0 = mhlo.add %a, %a : tensor<2xf32>\n"
     "  %0 = mhlo.add %a, %a : tensor<2xf32>\n  return\n}\n", "3:3", "redefinition of SSA "
     "value %0"),
    ("func.func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) {\n"
     "  %0 = \"mhlo.add\"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>\n"
     "  return\n}\n", "2:8", "'add' operands lhs and rhs must have the same shape"),
    ("func.func @f(%a: tensor<2xf32>) {\n  %0 = \"mhlo.add\"(%a, %a) : (tensor<2xf32>, "
     "tensor<2xi32>) -> tensor<2xf32>\n  return\n}\n", "2:29", "operand 1 has type "
     "tensor<2xf32> but its type says tensor<2xi32>"),
    ("func.func @f(%a: tensor<2xf32>) {\n  %0 = mhlo.sort %a\n  return\n}\n", "2:8",
     "'mhlo.sort' has no custom form this parser reads"),
    ("func.func @f(%a: tensor<2x3xf32>) {\n  %0 = \"mhlo.transpose\"(%a) <{permutation = "
     "dense<[1.5, 0.0]> : tensor<2xf32>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>\n  return\n}\n",
     "2:8", "'mhlo.transpose' attribute permutation"),
    ("func.func @f(%a: tensor<2xf32>) {\n  %0 = \"mhlo.add\"(%a, %a) <{bogus = 1 : i32}> : "
     "(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n  return\n}\n", "2:8",
     "has no property 'bogus'"),
    ("func.func @f() {\n  return loc(#loc9)\n}\n#loc1 = loc(\"a\":1:2)\n", "2:14",
     "undefined location alias #loc9"),
    ("func.func @f() {\n  return\n}\nfunc.func @f() {\n  return\n}\n", "4:1",
     "already has a symbol named @f"),
    ("module {\n  func.func @f() {\n    return\n  }\n}\nmodule {\n}\n", "6:1",
     "text after the module"),
    ("func.func @f() {\n  %0 = mhlo.constant dense<1> : tensor<i8>\n  %1 = mhlo.constant "
     "dense<300> : tensor<i8>\n  return\n}\n", "3:28", "300 out of range for i8"),
    ("func.func @f() -> tensor<f32> {\n  %0 = mhlo.constant dense<1> : tensor<i32>\n"
     "  return %0 : tensor<i32>\n}\n", None, "returns (tensor<i32>) but @f is declared to "
     "return (tensor<f32>)"),
]


@pytest.mark.parametrize("text,where,message", BAD)
def test_mistakes_are_errors_at_their_place(text, where, message):
    if where is None:
        with pytest.raises(hlo.ModuleVerificationError, match=message.replace("(", r"\(")
                           .replace(")", r"\)")):
            hlo.parse(text)
        return
    with pytest.raises(ParseError) as e:
        hlo.parse(text)
    assert f"{e.value.line}:{e.value.column}" == where, str(e.value)
    assert message in str(e.value)


def test_parsed_modules_run():
    """A parsed module is an ordinary Module: jaxlib runs it."""
    verify = pytest.importorskip("verify")
    text = ("func.func @main(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {\n"
            "  %0 = mhlo.multiply %a, %b : tensor<3xi32>\n"
            "  %1 = \"mhlo.add\"(%0, %a) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>\n"
            "  return %1 : tensor<3xi32>\n}\n")
    a, b = np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32)
    (out,) = verify.run(hlo.parse(text), a, b)
    np.testing.assert_array_equal(out, a * b + a)


def test_errors_show_the_line_with_a_caret():
    text = ("func.func @f(%a: tensor<2xf32>) {\n"
            '  %0 = "mhlo.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n'
            "  return\n}\n")
    with pytest.raises(ParseError) as e:
        hlo.parse(text, source="x.mlir")
    lines = str(e.value).splitlines()
    assert lines[0] == "x.mlir:2:23: use of undefined value %b"
    assert lines[1] == '    %0 = "mhlo.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> ' \
                       'tensor<2xf32>'
    assert lines[2].index("^") == lines[1].index("%b")


def test_errors_in_a_long_line_show_a_window_of_it():
    hexdigits = "ab" * 50_000
    text = ('func.func @f() -> tensor<100000xi8> {\n  %0 = mhlo.constant dense<"0x' + hexdigits +
            'zz"> : tensor<100001xi8>\n  return %0 : tensor<100000xi8>\n}\n')
    with pytest.raises(ParseError) as e:
        hlo.parse(text)
    shown, caret = str(e.value).splitlines()[1:3]
    assert len(shown) < 200 and shown.strip().startswith("%0 = mhlo.constant")
    assert caret.index("^") <= len(shown)


@pytest.mark.parametrize("text", ["module {\n}\n", "module @m attributes {foo.x = 1 : i32} {}",
                                  '"builtin.module"() ({\n^bb0:\n}) : () -> ()\n',
                                  "module {\n^bb0:\n  func.func @f() {\n    return\n  }\n}"])
def test_empty_and_labelled_module_bodies_read_and_print_as_mlir_does(text):
    from tests.oracle import mlir_generic
    want = mlir_generic(text)
    assert hlo.parse(text).to_text(locations=False) == want
    assert mlir_generic(want) == want


def test_a_module_built_empty_prints_its_one_block():
    for m in (hlo.Module("x"), hlo.Module()):
        from tests.oracle import mlir_generic
        text = m.to_text(locations=False)
        assert mlir_generic(text) == text


def test_a_generic_module_region_without_its_block_is_refused():
    with pytest.raises(ParseError, match="region with 1 blocks"):
        hlo.parse('"builtin.module"() ({\n}) : () -> ()\n')


def test_text_nested_past_the_recursion_limit_is_a_parse_error():
    """MLIR reads such nests; our recursive readers stop with a ParseError at the place, never
    a RecursionError (deep lists, types, locations; unclosed ones too)."""
    from mhlo_ir.attributes import parse_attribute
    from mhlo_ir.location import parse_location
    from mhlo_ir.types import parse_type
    n = 3000
    attr = "[" * n + "]" * n
    deep = [
        lambda: hlo.parse("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = "
                          f'"mhlo.add"(%a, %a) {{foo.x = {attr}}} : (tensor<2xf32>, '
                          "tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}"),
        lambda: parse_attribute(attr), lambda: parse_attribute("[" * n),
        lambda: parse_type("tuple<" * n + "i32" + ">" * n),
        lambda: parse_location("fused[" * n + '"a":1:2' + "]" * n),
    ]
    for read in deep:
        with pytest.raises(ParseError, match="nested too deeply"):
            read()
    # a nest within the limit reads as MLIR reads it
    shallow = "[" * 40 + "1 : i32" + "]" * 40
    from tests.mhlo_ir.parse_support import mlir_dictionary
    from mhlo_ir.dialect import MHLO
    assert f"{{foo.x = {parse_attribute(shallow).render(MHLO)}}}" == \
        mlir_dictionary({"foo.x": shallow})


@pytest.mark.parametrize("op", ['"stablehlo.copy"(%a)', '"stablehlo.erf"(%a)',
                                '"stablehlo.acos"(%a)', '"stablehlo.bitcast"(%a)'])
def test_ops_a_dialect_does_not_have_are_refused_as_jaxlib_refuses_them(op):
    """Read as the table's op, invalid StableHLO became a valid MHLO module."""
    text = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            f"  %0 = {op} : (tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}}")
    with pytest.raises(Exception, match="unregistered operation"):
        oracle.mlir_generic(text)
    with pytest.raises(ParseError, match=r"is no op of stablehlo: \w+ is mhlo's alone"):
        hlo.parse(text)
    assert hlo.parse(text.replace("stablehlo.", "mhlo.")).to_text(locations=False) == \
        oracle.mlir_generic(text.replace("stablehlo.", "mhlo."))


def test_the_print_dialect_may_be_named():
    m = hlo.parse("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                  "  %0 = mhlo.add %a, %a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}")
    assert m.to_text(dialect="stablehlo") == m.to_text(dialect=STABLEHLO)
    with pytest.raises(TypeError, match="dialect must be"):
        m.to_text(dialect="xla")


def test_a_function_declaration_is_refused_saying_so():
    text = ("module {\n  func.func private @ext(tensor<2xf32>) -> tensor<2xf32>\n"
            "  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            "    %0 = call @ext(%a) : (tensor<2xf32>) -> tensor<2xf32>\n"
            "    return %0 : tensor<2xf32>\n  }\n}")
    oracle.mlir_generic(text)  # MLIR reads it (jaxlib cannot compile it)
    with pytest.raises(ParseError, match=r"2:21: function declarations .* are not read"):
        hlo.parse(text)


# jax.jit(lambda x: lax.approx_max_k(x, 2)).lower(...).as_text() with jaxlib 0.10: the
# comparator function ends with stablehlo.return, not func.return.
_APPROX_TOP_K = """module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, \
mhlo.num_replicas = 1 : i32} {
  func.func @top_k_gt_f32_comparator(%arg0: tensor<f32>, %arg1: tensor<f32>, \
%arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<i1> {
    %0 = stablehlo.compare GT, %arg0, %arg1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %0 : tensor<i1>
  }
  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>) {
    %0 = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %c = stablehlo.constant dense<-1> : tensor<i32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1:2 = stablehlo.custom_call @ApproxTopK(%arg0, %0, %cst, %c) {backend_config = "", \
called_computations = [@top_k_gt_f32_comparator], mhlo.backend_config = {aggregate_to_topk = \
true, is_fallback = true, recall_target = 0.949999988 : f32, reduction_dim = 1 : i64, \
reduction_input_size_override = -1 : i64, top_k = 2 : i64}} : (tensor<4x4xf32>, \
tensor<4x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<4x2xf32>, tensor<4x2xi32>)
    return %1#0, %1#1 : tensor<4x2xf32>, tensor<4x2xi32>
  }
}
"""


def test_a_function_ending_with_mhlos_return_reads_prints_and_runs():
    """jaxlib reads and runs a function that ends with (stablehlo|mhlo).return; jax emits
    one for approx_top_k's comparator. Its types are still checked against the function's
    (jaxlib 0.10 does not check them: it ran @main returning a tensor<2xf32> declared
    tensor<3xf32>; docs/findings.md)."""
    module = hlo.parse(_APPROX_TOP_K)
    comparator = module.functions[0]
    assert comparator.entry_block.operations[-1].spec.name == "return"
    generic = module.to_text(locations=False, dialect=STABLEHLO)
    assert generic == oracle.mlir_generic(_APPROX_TOP_K)
    assert hlo.parse(module.to_text(pretty=True, dialect=STABLEHLO)).to_text(
        locations=False, dialect=STABLEHLO) == generic
    x = np.array([[1, 5, 3, 2], [9, 0, 8, 7], [4, 4, 1, 6], [0, 2, 3, 1]], np.float32)
    values, indices = verify.run(module, x)
    np.testing.assert_array_equal(values, -np.sort(-x, axis=1)[:, :2])
    np.testing.assert_array_equal(indices, np.argsort(-x, axis=1, kind="stable")[:, :2])
    wrong = ("func.func public @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n"
             "  mhlo.return %a : tensor<2xf32>\n}\n")
    with pytest.raises(hlo.ModuleVerificationError, match="returns.*tensor<2xf32>.*declared"):
        hlo.parse(wrong)
