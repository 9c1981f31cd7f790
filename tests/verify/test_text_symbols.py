"""Text (not a Module) that refers to a function it does not define is refused before
jaxlib, which crashes the process on such a ``called_computations`` reference."""

from __future__ import annotations

import pytest

import verify

GOOD = """module @m {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = mhlo.custom_call @foo(%arg0) {called_computations = [@helper]} :
        (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @helper(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    return %arg0 : tensor<2xf32>
  }
}
"""


def test_defined_references_pass_to_jaxlib():
    verify.check(GOOD)


def test_a_dangling_reference_is_refused_in_python():
    bad = GOOD.replace("[@helper]", '[@helper, @"not here"]')
    with pytest.raises(verify.VerificationError, match='refers to @not here'):
        verify.check(bad)
    with pytest.raises((verify.VerificationError, verify.CompileError),
                       match='refers to @not here'):
        verify.compile(bad)


RECURSIVE = """func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = call @f(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "func.call"(%arg0) <{callee = @g}> : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @g(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = call @f(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""


def test_recursive_calls_in_text_are_refused_in_python():
    """jaxlib 0.10.2 segfaults on a call cycle; the text is read with mhlo_ir's parser and
    the cycle named. Run in a child process so a regression crashes only the child."""
    import subprocess
    import sys
    code = ("import sys, verify\n"
            "try:\n    verify.%s(sys.stdin.read())\n"
            "except (verify.VerificationError, verify.CompileError) as e:\n"
            "    print(e)\n")
    for fn in ("check", "compile"):
        r = subprocess.run([sys.executable, "-c", code % fn], input=RECURSIVE, text=True,
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "@f is called recursively (@f -> @g -> @f)" in r.stdout, r.stdout


def test_text_without_cycles_still_compiles():
    fine = RECURSIVE.rsplit("func.func private @g", 1)[0].replace("callee = @g", "callee = @h")
    fine += ("func.func private @h(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
             "  return %arg0 : tensor<2xf32>\n}\n")
    verify.compile(fine)
