"""rng_bit_generator's initial_state: what XLA compiles, per algorithm (mhlo_ir/ops/random.py).

Oracle: XLA itself. Each refused state passes jaxlib's verifier (verify.check) and then fails
XLA's compile with an error naming no op of the program, on XLA:CPU and on XLA:TPU (libtpu,
compiling for a topology, no chip needed): the builder refuses it first. The states it keeps
compile on one backend at least; the ones only XLA:TPU compiles are refused by verify.compile
for CPU (tests/verify/test_api_refusals_cpu.py).
"""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
import verify
import verify.api
from mhlo_ir import OpBuildError

# (algorithm, state, what the builder says), measured on jaxlib 0.10.2 and libtpu 0.0.42
REFUSED = [
    ("THREE_FRY", "4xui32", "THREE_FRY needs initial_state tensor<2xui64>, got tensor<4xui32>"),
    ("THREE_FRY", "2xi64", "THREE_FRY needs initial_state tensor<2xui64>"),
    ("THREE_FRY", "3xui64", "THREE_FRY needs initial_state tensor<2xui64>"),
    ("PHILOX", "2xi64", "PHILOX needs initial_state tensor<2xui64> or tensor<3xui64>"),
    ("PHILOX", "3xi8", "PHILOX needs initial_state tensor<2xui64> or tensor<3xui64>"),
    ("DEFAULT", "4xui64", "DEFAULT needs an initial_state of 2 words of a 32- or 64-bit "
                          "integer type or 3 ui64 words, got tensor<4xui64>"),
    ("DEFAULT", "1xui64", "DEFAULT needs an initial_state of 2 words"),
    ("DEFAULT", "0xui64", "DEFAULT needs an initial_state of 2 words"),
    ("DEFAULT", "3xi64", "DEFAULT needs an initial_state of 2 words"),
    ("DEFAULT", "2xui16", "DEFAULT needs an initial_state of 2 words"),
]
# Compiled by XLA:CPU (and XLA:TPU, but DEFAULT on 3 words, which only XLA:CPU compiles).
ON_CPU = [("THREE_FRY", "2xui64"), ("PHILOX", "2xui64"), ("PHILOX", "3xui64"),
          ("DEFAULT", "2xui64"), ("DEFAULT", "3xui64")]
# Compiled by XLA:TPU only: DEFAULT is its own algorithm there.
ON_TPU_ONLY = [("DEFAULT", "2xi64"), ("DEFAULT", "2xui32"), ("DEFAULT", "2xi32")]
TOPOLOGY = "v5e:2x2"


def _state(spec):
    n, et = spec.split("x")
    return hlo.tensor((int(n),), hlo.element_type(et))


def _build(alg, spec):
    m = hlo.Module("rbg")
    f = m.add_function("main", [_state(spec)], visibility="public")
    b = f.builder()
    b.return_(*b.rng_bit_generator(f.arguments[0], (2, 3), hlo.ui32, alg))
    return m


def _text(alg, spec):
    """The program ``_build`` would make, written out (the builder refuses it)."""
    st, out = str(_state(spec)), "tensor<2x3xui32>"
    return f"""module {{
  func.func public @main(%s: {st}) -> ({st}, {out}) {{
    %0:2 = "mhlo.rng_bit_generator"(%s) <{{rng_algorithm = #mhlo.rng_algorithm<{alg}>}}> :
        ({st}) -> ({st}, {out})
    func.return %0#0, %0#1 : {st}, {out}
  }}
}}"""


@pytest.mark.parametrize("alg, spec, message", REFUSED)
def test_states_xla_fails_on_are_refused_when_built(alg, spec, message, monkeypatch):
    with pytest.raises(OpBuildError, match=f"'rng_bit_generator' {message}"):
        _build(alg, spec)
    text = _text(alg, spec)
    verify.check(text)  # jaxlib's verifier takes it ...
    monkeypatch.setattr(verify.api, "_cpu_refusals", lambda m: None)  # (XLA:CPU's own word)
    with pytest.raises(verify.CompileError) as e:
        verify.compile(text)  # ... and XLA's compile fails, naming no op
    assert e.value.jaxlib_message is not None  # (XLA's, about its expanded HLO)


@pytest.mark.parametrize("alg, spec", ON_CPU)
def test_states_xla_cpu_takes_compile(alg, spec):
    verify.compile(_build(alg, spec))


@pytest.mark.tpu
@pytest.mark.parametrize("alg, spec", [(a, s) for a, s, _ in REFUSED] + ON_TPU_ONLY)
def test_xla_tpu_fails_on_the_refused_states_and_takes_its_own_default(alg, spec):
    """Why the builder keeps DEFAULT on 2 words of 32- and 64-bit integers: XLA:TPU compiles
    them. Nothing it refuses compiles there either."""
    if (alg, spec) in ON_TPU_ONLY:
        verify.compile(_build(alg, spec), "tpu", topology=TOPOLOGY)
    else:
        with pytest.raises(verify.CompileError):
            verify.compile(_text(alg, spec), "tpu", topology=TOPOLOGY)
