"""The typed front doors (issue #8, "one op description drives everything"): each non-generated
Builder method is declared in the op-table chapter that declares its op's spec, and
``Builder.constant``'s element-type defaults for Python values are the documented ones."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import OpBuildError
from mhlo_ir.ops import BUILDER_METHODS, REGISTRY
from mhlo_ir.ops.elementwise import BINARY, UNARY

ROOT = Path(__file__).resolve().parents[2]

# Moved out of builder.py into their chapters; their specs say where.
MOVED = ("constant", "iota", "convert", "broadcast_in_dim", "reshape", "transpose", "slice",
         "concatenate", "compare", "select", "clamp", "dot_general")


@pytest.fixture
def b():
    m = hlo.Module("front_doors")
    f = m.add_function("main", [], visibility="public")
    return f.builder()


@pytest.mark.parametrize("name", MOVED)
def test_front_door_lives_in_its_ops_chapter(name):
    fn = getattr(hlo.Builder, name)
    assert BUILDER_METHODS[name] is fn
    assert fn.__module__ == f"mhlo_ir.ops.{REGISTRY[name].chapter}"
    assert fn.__qualname__ == f"Builder.{name}" and fn.__name__ == name
    assert list(inspect.signature(fn).parameters)[0] == "b"


def test_builder_module_holds_only_generic_and_generated_methods():
    """builder.py defines create, region, return_ and the like; every other op's method comes
    from the table (a chapter's builder_method, or the elementwise families)."""
    generated = {hlo.builder._method_name(n) for n in (*UNARY, *BINARY)}
    own = {k for k, v in vars(hlo.Builder).items()
           if inspect.isfunction(v) and v.__module__ == "mhlo_ir.builder"
           and k not in generated and not k.startswith("__")}
    assert own == {"create", "_one", "at_location", "region", "return_"}


def test_front_doors_keep_their_docstrings():
    for name in ("constant", "convert", "compare", "select", "clamp", "dot_general"):
        assert getattr(hlo.Builder, name).__doc__, name
    assert "JAX without x64" in hlo.Builder.constant.__doc__


def test_no_module_of_the_package_exceeds_800_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "mhlo_ir").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 800}
    assert long == {}


# -- constant: Python values take JAX's defaults without x64, alone or in lists ---------------

@pytest.mark.parametrize("value, expected", [
    (3, hlo.tensor((), hlo.i32)),
    ([1, 2], hlo.tensor((2,), hlo.i32)),
    ((1, 2), hlo.tensor((2,), hlo.i32)),
    ([[1], [2]], hlo.tensor((2, 1), hlo.i32)),
    (1.5, hlo.tensor((), hlo.f32)),
    ([1.5, 2.0], hlo.tensor((2,), hlo.f32)),
    ([1, 2.5], hlo.tensor((2,), hlo.f32)),
    ([], hlo.tensor((0,), hlo.f32)),
    (1j, hlo.tensor((), hlo.complex64)),
    ([1j, 2], hlo.tensor((2,), hlo.complex64)),
    (True, hlo.tensor((), hlo.i1)),
    ([True, False], hlo.tensor((2,), hlo.i1)),
    # numpy values keep their dtype, in a list too
    (np.array([1, 2]), hlo.tensor((2,), hlo.i64)),
    (np.float64(2.0), hlo.tensor((), hlo.f64)),
    ([np.float16(1), np.float16(2)], hlo.tensor((2,), hlo.f16)),
])
def test_constant_defaults_for_python_values(b, value, expected):
    assert b.constant(value).type == expected
    assert b.chlo_constant(value).type == expected


def test_constant_list_values_are_kept(b):
    c = b.constant([[1, -2], [3, 2**31 - 1]])
    assert c.owner.attributes["value"].to_array().tolist() == [[1, -2], [3, 2**31 - 1]]
    assert b.constant([0.1, 1e30]).owner.attributes["value"].to_array().tolist() == \
        np.array([0.1, 1e30], np.float32).tolist()
    assert b.constant([1, 2], hlo.i64).type == hlo.tensor((2,), hlo.i64)


@pytest.mark.parametrize("value, message", [
    ([1, 2**40], "element [1] = 1099511627776 is out of range for i32, which holds "
                 "-2147483648..2147483647: pass dtype (e.g. dtype=i64)"),
    ([2**63], "out of range for i32"),
    ([2**70], "holds integers beyond int64: pass dtype"),
    ([1e40], "element [0] = 1e+40 overflows f32"),
])
def test_constant_list_values_beyond_the_default_type_are_refused(b, value, message):
    with pytest.raises(OpBuildError, match=re.escape(message)):
        b.constant(value)


def test_list_constants_run_with_their_values():
    m = hlo.Module("lists")
    f = m.add_function("main", [], visibility="public")
    fb = f.builder()
    fb.return_(fb.constant([1, 2, 3]), fb.constant([[0.5, -1.0]]))
    ints, floats = verify.run(m)
    assert ints.dtype == np.int32 and ints.tolist() == [1, 2, 3]
    assert floats.dtype == np.float32 and floats.tolist() == [[0.5, -1.0]]
