"""How jaxlib's diagnostics read through ``verify.VerificationError``: named after the source
(never jaxlib's ``-``), the offending line with a caret under the column, each message once.

Oracles: hand-written MLIR text whose error position is known (line, column and the character
there), jaxlib's raw message (``jaxlib_message``) for what it said, and jaxlib's own behaviour
where the summary rearranges it.
"""

from __future__ import annotations

import re

import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import f32, tensor
from tests.verify.test_api import jaxlib_only_error
from verify import CompileError, VerificationError

MISMATCH = """\
module @mismatch {
  func.func public @main(%arg0: tensor<2xf32>, %arg1: tensor<2xi32>) -> tensor<2xf32> {
    %0 = "mhlo.add"(%arg0, %arg1) : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
"""

UNDEFINED = MISMATCH.replace("%arg0, %arg1) :", "%arg0, %nope) :")

# XLA's own shape checks (after MLIR's verifier passed): MLIR points at the return, XLA's op
# metadata names the op's line.
XLA_LEVEL = """\
module {
  func.func public @main(%arg0: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {
    %0 = "mhlo.cbrt"(%arg0) : (tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>>
    %1 = "mhlo.add"(%0, %0) : (tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>) -> \
tensor<2xcomplex<f32>>
    return %1 : tensor<2xcomplex<f32>>
  }
}
"""


def pointed(err: VerificationError) -> tuple:
    """``(line number, shown text, caret offset)`` from the summary's ``N | text`` and
    ``| ^`` lines."""
    lines = str(err).splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"^\s+(\d+) \| (.*)$", ln)
        if m:
            caret = lines[i + 1]
            assert re.match(r"^\s+\| *\^$", caret), caret
            return int(m[1]), m[2], caret.index("^") - (ln.index("| ") + 2)
    raise AssertionError(f"no source line in:\n{err}")


def check_error(text, **kw) -> VerificationError:
    with pytest.raises(VerificationError) as info:
        verify.check(text, **kw)
    return info.value


@pytest.mark.parametrize("text,line,column", [(MISMATCH, 3, 10), (UNDEFINED, 3, 28)],
                         ids=["verifier", "parser"])
def test_caret_under_the_column(text, line, column):
    e = check_error(text)
    n, shown, caret = pointed(e)
    assert (n, e.line, e.column) == (line, line, column)
    src = text.splitlines()[line - 1]
    assert shown == src.strip()
    assert shown[caret] == src[column - 1]  # the caret is under the character jaxlib means
    assert src[column - 1:].startswith('"mhlo.add"' if column == 10 else "%nope")


def test_file_name_is_kept_never_dash():
    e = check_error(MISMATCH)
    assert "-:3:10" in e.jaxlib_message  # what jaxlib says
    assert e.location == "<mlir text @mismatch>:3:10"
    assert "at <mlir text @mismatch>:3:10" in str(e)
    assert not re.search(r"(^|\s)-:\d", str(e))
    e = check_error(MISMATCH, filename="model.mlir")
    assert e.location == "model.mlir:3:10" and "at model.mlir:3:10" in str(e)
    e = check_error(MISMATCH.replace("module @mismatch", "module"))
    assert e.location == "<mlir text>:3:10"


def test_module_objects_are_named_after_the_module():
    m = hlo.Module("layouts")
    fn = m.add_function("main", [tensor((2, 3), hlo.f8E5M2)], visibility="public")
    b = fn.builder()
    y = jaxlib_only_error(b, *fn.arguments)
    b.return_(y)
    e = check_error(m)
    assert e.filename == "<mhlo_ir module @layouts>"
    assert e.location == f"<mhlo_ir module @layouts>:{e.line}:{e.column}"
    assert m.to_text().splitlines()[e.line - 1] == e.source_line
    assert "mhlo.minimum_broadcast_shapes" in e.source_line
    e = check_error(m, filename="layouts.mlir")
    assert e.location.startswith("layouts.mlir:")


def test_each_message_once():
    """jaxlib's text has the error, a note repeating the op, and a StableHLO fallback line;
    the summary has the error once and no note that only repeats the line shown."""
    e = check_error(MISMATCH)
    message = "'mhlo.add' op requires compatible types for all operands and results"
    assert e.jaxlib_message.count(message) == 1 and "see current operation" in e.jaxlib_message
    assert str(e).count(message) == 1
    assert "see current operation" not in str(e)
    assert "Failed to parse using StableHLO" not in str(e)
    assert e.jaxlib_message.startswith("UNKNOWN: ") and "UNKNOWN" not in str(e)
    # Notes that say something else stay, once, with their own location.
    e = check_error(MISMATCH.replace("%arg0, %arg1) :", "%arg0, %arg0) :"))
    assert "prior use here" in e.jaxlib_message
    assert str(e).count("note: prior use here") == 1
    assert "note: prior use here (at <mlir text @mismatch>:2:" in str(e)


def test_diagnostics_are_parsed():
    e = check_error(MISMATCH)
    sev = [(d.severity, d.line, d.column) for d in e.diagnostics]
    assert sev == [("error", 3, 10), ("note", 3, 10)]
    assert e.diagnostics[0].message == e.error


def test_xla_shape_errors_point_at_the_op_not_the_return():
    e = check_error(XLA_LEVEL)
    assert "Expected element type in shape to be floating for cbrt" in e.error
    assert ":5:5: error:" in e.jaxlib_message  # MLIR's position: the return
    assert "File: -:3:" in e.jaxlib_message  # XLA's metadata: the op
    assert e.line == 3 and e.op_name == "mhlo.cbrt"
    assert e.location == "<mlir text>:3"
    n, shown, caret = pointed(e)
    assert n == 3 and shown[caret:].startswith('"mhlo.cbrt"')
    assert "func.return" not in str(e) and "Python Code Location" not in str(e)


def test_op_locations_through_loc_aliases():
    """An op located through a ``#loc`` alias (the printer's ``locations="alias"``): the error
    names the op's own location and shows the op's line, not the alias definition."""
    m = hlo.Module("aliased")
    fn = m.add_function("main", [tensor((2, 3), hlo.f8E5M2)], visibility="public")
    b = fn.builder()
    with b.at_location("model.py", 12, 3):
        y = jaxlib_only_error(b, *fn.arguments)
    b.return_(y)
    text = m.to_text(locations="alias")
    assert re.search(r'^#loc\d* = loc\("model.py":12:3\)$', text, re.M), text
    e = check_error(text, filename="aliased.mlir")
    assert e.location == "model.py:12:3"
    assert '"mhlo.minimum_broadcast_shapes"' in e.source_line and "loc(#loc" in e.source_line
    assert f"at model.py:12:3 (aliased.mlir:{e.line}:{e.column})" in str(e)


def test_long_lines_are_windowed_around_the_column():
    big = ", ".join(["1.0"] * 400)
    text = f"""\
module {{
  func.func public @main() -> tensor<400xf32> {{
    %0 = "mhlo.constant"() {{value = dense<[{big}]> : tensor<400xf32>}} : () -> tensor<400xf32>
    %1 = "mhlo.frobnicate"(%0) : (tensor<400xf32>) -> tensor<400xf32>
    return %1 : tensor<400xf32>
  }}
}}
"""
    e = check_error(text.replace("dense<[", "dense<[[", 1))  # error deep inside line 3
    n, shown, caret = pointed(e)
    assert n == 3 and len(shown) < 220 and len(e.source_line) > 1000
    assert shown.startswith("... ")
    assert shown[caret] == e.source_line[e.column - 1]


def test_compile_errors_without_position_have_one_headline():
    m = hlo.Module("cc")
    fn = m.add_function("main", [tensor((2,), f32)], visibility="public")
    b = fn.builder()
    b.return_(b.custom_call("no_such_target_xyz", [fn.arguments[0]], [fn.arguments[0].type],
                            api_version=2))
    with pytest.raises(CompileError) as info:
        verify.compile(m)
    e = info.value
    # XLA's status code is kept (it says something here), MLIR's "UNKNOWN: " is not
    assert e.error.startswith("NOT_FOUND: No registered implementation")
    assert "no_such_target_xyz" in e.error
    assert str(e).count("no_such_target_xyz") == 1
