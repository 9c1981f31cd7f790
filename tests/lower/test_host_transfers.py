"""The seed's send_to_host / receive_from_host: jaxlib accepts the ops they build (channel
types, frontend attributes), XLA:TPU compiles them, and a CPU compile is refused in Python
with the way to the host that CPU has."""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
import verify
from lower.host_transfers import receive_from_host, send_to_host
from verify.errors import CompileError


def _round_trip(dtype=hlo.f32):
    m = hlo.Module("h")
    t3 = hlo.tensor((3,), dtype)
    f = m.add_function("main", [t3], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    t = send_to_host(b, 1, b.create_token(), x, "out")
    t, y = receive_from_host(b, 2, t, t3, "in")
    b.return_(y)
    return m


def test_jaxlib_accepts_them_and_cpu_compiles_are_refused_in_python(monkeypatch):
    m = _round_trip()
    text = verify.check(m)
    assert "type = 2" in text and "type = 3" in text
    assert '_xla_host_transfer_original_type = "f32"' in text
    with pytest.raises(CompileError, match=r"'send' \(a host transfer\) has no XLA:CPU "
                                           "implementation.*Builder.host_callback") as e:
        verify.compile(m)
    assert e.value.jaxlib_message is None  # said in Python, before jaxlib compiled
    # Text, as our parser reads it, gets the same refusal ...
    with pytest.raises(CompileError, match=r"'send' \(a host transfer\) has no XLA:CPU") as e:
        verify.compile(m.to_text())
    assert e.value.jaxlib_message is None
    # ... and jaxlib, left to itself, refuses it too.
    import verify.api as api
    monkeypatch.setattr(api, "_cpu_refusals", lambda m: None)
    with pytest.raises(CompileError, match="not supported by XLA:CPU"):
        verify.compile(m.to_text())


@pytest.mark.tpu
def test_xla_tpu_compiles_host_transfers():
    compiled = verify.compile(_round_trip(), "tpu", topology="v5e:2x2")
    hlo_text = compiled.optimized_hlo()
    assert "send(" in hlo_text and "recv(" in hlo_text and "is_host_transfer=true" in hlo_text


def test_64_bit_types_cannot_cross():
    with pytest.raises(NotImplementedError, match="host transfers of float64"):
        _round_trip(hlo.f64)
