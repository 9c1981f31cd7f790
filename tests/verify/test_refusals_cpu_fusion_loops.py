"""A fusion whose body copies a value it computes, inside a while loop (its body or its
condition, however deep), or in a function called from one: XLA:CPU (jaxlib 0.10.2) aborts
the process compiling it ("Check failed: has_layout()"). Refused in Python for Modules and
text (found by the review of 2026-12-07); the abort is shown in a child process with the
refusal bypassed; the neighbours that compile (outside loops, in a case, copying one of the
fusion's arguments) run to numpy's numbers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from tests.child_env import child_env
from verify.errors import CompileError


def _fusion(copy: str) -> str:
    """A kLoop fusion of %acc squaring it; ``copy``: "computed" copies the product,
    "argument" the fusion's argument, "" none."""
    first = {"computed": """%m = mhlo.multiply %p, %p : tensor<4xf32>
          %c = "mhlo.copy"(%m) : (tensor<4xf32>) -> tensor<4xf32>""",
             "unused": """%c = mhlo.multiply %p, %p : tensor<4xf32>
          %d = "mhlo.copy"(%c) : (tensor<4xf32>) -> tensor<4xf32>""",
             "argument": """%c0 = "mhlo.copy"(%p) : (tensor<4xf32>) -> tensor<4xf32>
          %c = mhlo.multiply %c0, %p : tensor<4xf32>""",
             "": "%c = mhlo.multiply %p, %p : tensor<4xf32>"}[copy]
    return f"""%f = "mhlo.fusion"(%acc) ({{
        ^bb0(%p: tensor<4xf32>):
          {first}
          mhlo.return %c : tensor<4xf32>
        }}) {{fusion_kind = #mhlo<fusion_kind kLoop>}} : (tensor<4xf32>) -> tensor<4xf32>"""


def _loop(step: str, cond: str = "") -> str:
    """@main squares its argument twice in a while loop whose body is ``step`` (defining
    %f from %acc); ``cond`` is put in the condition (unused there)."""
    return f"""module @m {{
  func.func private @square(%acc: tensor<4xf32>) -> tensor<4xf32> {{
    {_fusion("computed")}
    return %f : tensor<4xf32>
  }}
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {{
    %zero = mhlo.constant dense<0> : tensor<i32>
    %w:2 = mhlo.while(%i = %zero, %acc = %x) : tensor<i32>, tensor<4xf32>
     cond {{
      {cond}
      %two = mhlo.constant dense<2> : tensor<i32>
      %lt = mhlo.compare LT, %i, %two : (tensor<i32>, tensor<i32>) -> tensor<i1>
      mhlo.return %lt : tensor<i1>
    }} do {{
      %one = mhlo.constant dense<1> : tensor<i32>
      %n = mhlo.add %i, %one : tensor<i32>
      {step}
      mhlo.return %n, %f : tensor<i32>, tensor<4xf32>
    }}
    return %w#1 : tensor<4xf32>
  }}
}}"""


_IN_CASE = """%f = "mhlo.case"(%i) ({{
        {fusion}
        mhlo.return %f : tensor<4xf32>
      }}, {{
        mhlo.return %acc : tensor<4xf32>
      }}) : (tensor<i32>) -> tensor<4xf32>"""

REFUSED = {
    "in the body": _loop(_fusion("computed")),
    "in a case in the body": _loop(_IN_CASE.format(fusion=_fusion("computed"))),
    "in the condition": _loop("%f = mhlo.add %acc, %acc : tensor<4xf32>",
                              cond=_fusion("computed")),
    "in a function the body calls":
        _loop("%f = func.call @square(%acc) : (tensor<4xf32>) -> tensor<4xf32>"),
}
X = np.array([0, 1, 2, -3], np.float32)


@pytest.mark.parametrize("where", REFUSED)
def test_refused_for_modules_and_text(where):
    text = REFUSED[where]
    for source in (hlo.parse(text), text):
        with pytest.raises(CompileError, match=r"in a while loop.*copies a value it computes"
                                               r".*Check failed: has_layout") as e:
            verify.compile(source)
        assert e.value.jaxlib_message is None
    with pytest.raises(CompileError, match="has_layout"):
        verify.run(text, X)


_CHILD = """
import sys, numpy as np, verify, verify.api as api
api._cpu_refusals = lambda m: None
print(verify.run(sys.stdin.read(), np.arange(4, dtype=np.float32))[0].tolist())
"""


def test_the_refused_program_does_abort_the_compile():
    r = subprocess.run([sys.executable, "-c", _CHILD], input=REFUSED["in the body"],
                       capture_output=True, text=True, timeout=300, env=child_env())
    if r.returncode == 0:
        pytest.skip("this jaxlib compiles it: the refusal can be lifted for it")
    assert r.returncode < 0 and "has_layout" in r.stderr, (r.returncode, r.stderr[-300:])


@pytest.mark.parametrize("source, want", [
    (_loop(_fusion("argument")), X ** 4),  # copying the fusion's argument
    (_loop(_fusion("")), X ** 4),          # no copy
    (_loop(_fusion("unused")), X ** 4),    # a copy nothing uses
    ("""module @m {
  func.func public @main(%acc: tensor<4xf32>) -> tensor<4xf32> {
    """ + _fusion("computed") + """
    return %f : tensor<4xf32>
  }
}""", X ** 2),                             # outside any loop
], ids=["argument copy in a loop", "no copy in a loop", "unused copy in a loop",
        "outside loops"])
def test_the_neighbours_run(source, want):
    np.testing.assert_array_equal(verify.run(source, X)[0], want)
