"""The leaf strategies (element types, tensor types, arrays) generate what they promise, and the
default ``programs()`` run in jaxlib; the quirk that keeps signed mulhi out of them is checked
to be still there."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import mhlo_ir as hlo
import verify
from mhlo_ir import strategies as hst
from tests.oracle import assert_fixed_point

UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


@given(st.data())
def test_arrays_have_the_type_and_reach_every_bit(data):
    t = data.draw(hst.tensor_types())
    a = data.draw(hst.arrays(t))
    assert a.shape == t.shape and a.dtype == t.dtype


def test_arrays_cover_special_values():
    seen = set()

    @settings(max_examples=300)
    @given(hst.arrays(hlo.tensor((4,), hlo.f16)))
    def collect(a):
        seen.update(a.view(np.uint16).tolist())
    collect()
    assert len(seen) > 50  # raw bit patterns, not just "nice" floats
    f = np.array(sorted(seen), np.uint16).view(np.float16)
    assert np.isnan(f).any() and np.isfinite(f).any()


@settings(max_examples=15)
@given(hst.programs())
def test_generated_programs_are_valid_and_run(program):
    m, inputs = program
    m.verify()
    assert_fixed_point(m)
    outs = verify.run(m, *inputs)
    main = m.lookup("main")
    assert [o.shape for o in outs] == [t.shape for t in main.result_types]
    assert [o.dtype for o in outs] == [t.dtype for t in main.result_types]


def test_signed_mulhi_fused_quirk_is_still_there():
    """Why programs() leaves mulhi out: XLA:CPU (jaxlib 0.10.2) rejects a signed mulhi fed by
    another elementwise op. When this starts passing compile, drop _NOT_FUSIBLE."""
    import pytest
    t = hlo.tensor((3,), hlo.i32)
    m = hlo.Module()
    f = m.add_function("main", [t, t], visibility="public")
    b = f.builder()
    b.return_(b.mulhi(f.arguments[0], b.negate(f.arguments[1])))
    with pytest.raises(verify.CompileError, match="Unsupported elementwise operation"):
        verify.compile(m)


def test_large_arrays_pass_the_default_health_checks():
    # a list of 4,096 independent draws tripped large_base_example (and 16,384 the buffer)
    for shape, et in (((64, 64), hlo.f32), ((64, 64), hlo.complex128), ((128, 128), hlo.i8)):
        @settings(max_examples=10, deadline=None)
        @given(hst.arrays(hlo.tensor(shape, et)))
        def draw(a):
            assert a.shape == shape and a.dtype == et.dtype
        draw()
