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


# -- constant(value, shape=...): a splat of one scalar ------------------------------------------

SPLATS = [  # value, dtype, shape, what numpy makes of it
    (0.0, None, (2, 3), np.zeros((2, 3), np.float32)),
    (-0.0, None, (3,), np.full((3,), -0.0, np.float32)),
    (7, None, (2, 2), np.full((2, 2), 7, np.int32)),
    (True, None, (4,), np.ones((4,), bool)),
    (np.float16(1.5), None, (2,), np.full((2,), 1.5, np.float16)),
    (np.array(-2, np.int64), None, (3,), np.full((3,), -2, np.int64)),
    (-128, hlo.i8, (2,), np.full((2,), -128, np.int8)),
    (2.5, hlo.f64, (1, 2), np.full((1, 2), 2.5, np.float64)),
    (255, hlo.ui8, (3,), np.full((3,), 255, np.uint8)),
    (float("-inf"), None, (2,), np.full((2,), -np.inf, np.float32)),
    (1.0, None, (0, 3), np.zeros((0, 3), np.float32)),
    (5.0, None, (), np.float32(5.0)),
]


def _run_splats(cases):
    m = hlo.Module("splats")
    f = m.add_function("main", [], visibility="public")
    fb = f.builder()
    fb.return_(*[fb.constant(v, dt, shape=s) for v, dt, s, _ in cases])
    return m, verify.run(m)


def test_splat_constants_run_with_numpys_values():
    # One value, every element: dtype and bits (-0.0's sign too) as np.full gives them.
    m, outs = _run_splats(SPLATS)
    for (value, _, _, want), got in zip(SPLATS, outs):
        assert got.dtype == want.dtype and got.shape == want.shape, value
        assert got.tobytes() == want.tobytes(), value


def test_splat_constants_print_as_mlir_prints_them():
    from tests.oracle import assert_fixed_point
    m, _ = _run_splats(SPLATS)
    text = assert_fixed_point(m)
    assert "dense<0.000000e+00> : tensor<2x3xf32>" in text
    assert "dense<-0.000000e+00> : tensor<3xf32>" in text


def test_splat_constants_equal_the_array_constant_of_the_same_values(b):
    for value, dtype, shape, want in SPLATS:
        splat = b.constant(value, dtype, shape=shape).owner.attributes["value"]
        assert splat == b.constant(want).owner.attributes["value"], value


def test_splat_constants_are_keyed_by_exact_value_shape_and_dtype(b):
    # Remembered splats must not answer for values equal by ==: 0.0 and -0.0, 1 and True
    # and 1.0, nor for another shape or dtype; built in both orders.
    cases = [(0.0, None, (2,)), (-0.0, None, (2,)), (1, None, (2,)), (True, None, (2,)),
             (1.0, None, (2,)), (1.0, None, (3,)), (1.0, hlo.f16, (2,)), (1, hlo.i8, (2,))]
    for order in (cases, cases[::-1]):
        for value, dtype, shape in order:
            c = b.constant(value, dtype, shape=shape)
            want = np.full(shape, value, dtype=np.dtype(dtype.dtype) if dtype else
                           b.constant(value).type.dtype)
            got = c.owner.attributes["value"].to_array()
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), \
                (value, dtype, shape)


@pytest.mark.parametrize("value, dtype, shape, message", [
    (np.ones(3), None, (3,), "'constant' shape=[3] spreads one scalar value over the tensor; "
                             "got a value of type tensor<3xf64>"),
    ([1.0], None, (1,), "got a value of type tensor<1xf32>"),
    (1.0, None, (-1,), "'constant' shape[0] = -1 is negative"),
    (1.0, None, (2.0,), "'constant' shape: expected an integer, got float 2.0"),
    (1.0, None, (True,), "'constant' shape: expected an integer, got bool True"),
    (1.0, None, 3, "'constant' shape must be a list of integers, got int 3"),
    (300, hlo.i8, (2,), "'constant' value 300 is out of range for i8"),
    ("a", None, (2,), "'constant' value str 'a' holds strings"),
])
def test_splat_constants_refuse_bad_input(b, value, dtype, shape, message):
    with pytest.raises(OpBuildError, match=re.escape(message)):
        b.constant(value, dtype, shape=shape)


_X, _TOKEN = hlo.tensor((2, 3), hlo.f32), hlo.token()


@pytest.mark.parametrize("build, message", [
    (lambda b, x, t: b.map([1.5], lambda r, a: a),
     "'map' operand inputs[0] must be a Value (the result of an op or a block argument), "
     "got float 1.5"),
    (lambda b, x, t: b.scan([x, 1.5], [], 0, lambda r, a, c: [a, c]),
     "'scan' operand inputs[1] must be a Value"),
    (lambda b, x, t: b.scan([x], [1.5], 0, lambda r, a, c: [a, c]),
     "'scan' operand inits[0] must be a Value"),
    (lambda b, x, t: b.composite("a.b", [x], "g", result_types=1.5),
     "'composite' result_types must be a Type or a list of Types, got float 1.5"),
    (lambda b, x, t: b.infeed(t, [hlo.tensor((2,), hlo.f32)], layout=1.5),
     "'infeed' layout must be a list of minor-to-major lists, one per result, got float 1.5"),
    (lambda b, x, t: b.chlo_constant_like(np.zeros(2), x),
     "'chlo.constant_like' value must be a scalar, got ndarray array([0., 0.]) of shape [2]"),
    (lambda b, x, t: b.chlo_constant_like([1.5], x),
     "'chlo.constant_like' value must be a scalar, got list [1.5] of shape [1]"),
])
def test_bad_python_arguments_are_refused_naming_the_op_and_argument(build, message):
    """Arguments of the wrong kind escaped as bare AttributeError/TypeError (numpy's among
    them) naming neither the op nor the argument."""
    m = hlo.Module("bad_args")
    f = m.add_function("main", [_X, _TOKEN], visibility="public")
    with pytest.raises(OpBuildError, match=re.escape(message)):
        build(f.builder(), *f.arguments)


def test_chlo_constant_like_takes_scalars_of_any_kind():
    """What the refusal above leaves: Python and numpy scalars, 0-d arrays; jaxlib reads it."""
    m = hlo.Module("constant_like")
    f = m.add_function("main", [_X], visibility="public")
    b, x = f.builder(), f.arguments[0]
    outs = [b.chlo_constant_like(v, x) for v in (1.5, 2, np.float32(0.25), np.array(3.0))]
    assert [o.owner.attributes["value"].value for o in outs] == [1.5, 2.0, 0.25, 3.0]
    b.return_(*outs)
    verify.check(m)
