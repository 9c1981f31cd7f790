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
