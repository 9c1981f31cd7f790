"""Arguments to ``verify.run`` and ``Executable``: Python scalars for rank-0 parameters of every
numeric element type, values the type cannot hold refused, non-native byte orders converted.

Oracles: numpy's own cast of the value to the parameter's dtype (what the program must see,
read back through real jaxlib by an identity program) and the ranges ml_dtypes gives for each
type; for refusals, the message must name the argument, the type and the value.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import f32, tensor
from verify import ArgumentError

SCALAR_TYPES = [t for t in hlo.ALL_ELEMENT_TYPES]


@pytest.fixture(scope="module")
def identity():
    """``main(x: f32[3], s_0: T_0[], s_1: T_1[], ...)`` returning all its arguments, one rank-0
    parameter per element type."""
    m = hlo.Module("scalars")
    fn = m.add_function("main", [tensor((3,), f32)] + [tensor((), t) for t in SCALAR_TYPES],
                        visibility="public")
    fn.builder().return_(*fn.arguments)
    return verify.compile(m)


def zeros():
    return [np.zeros(3, np.float32)] + [np.zeros((), t.dtype) for t in SCALAR_TYPES]


@pytest.mark.parametrize("value", [1, 1.0, True], ids=["int", "float", "bool"])
def test_python_scalar_for_every_element_type(identity, value):
    # A float for a bool parameter is refused (see the refusals below): pass False there.
    args = [np.arange(3, dtype=np.float32)] + [
        False if isinstance(value, float) and t == hlo.i1 else value for t in SCALAR_TYPES]
    outs = identity(*args)
    for t, arg, out in zip(SCALAR_TYPES, args[1:], outs[1:]):
        expected = np.asarray(arg).astype(t.dtype)
        assert out.shape == () and out.dtype == t.dtype, t
        assert out.tobytes() == expected.tobytes(), t


def test_scalar_values_reach_the_program(identity):
    """Values other than 1, through jaxlib: each is what numpy's cast to the type gives."""
    cases = {"i8": -128, "ui8": 255, "i4": -8, "ui64": 2**64 - 1, "i64": -2**63, "i32": 7.0,
             "bf16": 1.5, "f16": 65519.0, "f8E4M3FN": 452.0, "f4E2M1FN": -6.2,
             "f8E8M0FNU": 0.25, "f64": 1e300, "complex<f32>": 1 + 2j, "complex<f64>": -3.5,
             "f32": float("nan"), "f8E5M2": float("-inf")}
    args = zeros()
    names = [str(t) for t in SCALAR_TYPES]
    for name, v in cases.items():
        args[1 + names.index(name)] = v
    outs = identity(*args)
    for name, v in cases.items():
        i = 1 + names.index(name)
        expected = np.asarray(v).astype(SCALAR_TYPES[i - 1].dtype)
        assert outs[i].tobytes() == expected.tobytes(), name
    assert float(outs[1 + names.index("f16")]) == 65504.0  # rounded to the largest f16


@pytest.mark.parametrize("type_name,value,message", [
    ("i8", 300, "the Python int 300 does not fit in int8 (range -128 to 127)"),
    ("i8", -129, "the Python int -129 does not fit in int8 (range -128 to 127)"),
    ("i32", 1.5, "the Python float 1.5 is not an integer, but the parameter is int32"),
    ("i32", float("nan"), "the Python float nan is not an integer"),
    ("ui8", -1, "the Python int -1 does not fit in uint8 (range 0 to 255)"),
    ("i4", 8, "the Python int 8 does not fit in int4 (range -8 to 7)"),
    ("ui64", 2**64, "does not fit in uint64 (range 0 to 18446744073709551615)"),
    ("i1", 2, "the Python int 2 is not a bool, which the parameter (bool) is"),
    ("i1", 1.0, "the Python float 1.0 is not a bool"),
    ("f32", 1e40, "the Python float 1e+40 does not fit in float32: the largest finite float32 "
                  "is 3.40282e+38"),
    ("f16", 65520.0, "does not fit in float16: the largest finite float16 is 65504"),
    ("f8E4M3FN", 465.0, "the largest finite float8_e4m3fn is 448"),
    ("f8E4M3FN", float("inf"), "float8_e4m3fn has no infinity"),
    ("f4E2M1FN", 7.0, "the largest finite float4_e2m1fn is 6"),
    ("f4E2M1FN", float("nan"), "float4_e2m1fn has no NaN"),
    ("f8E8M0FNU", -1.0, "float8_e8m0fnu cannot represent it"),
    ("f8E8M0FNU", 0, "the Python int 0 does not fit in float8_e8m0fnu"),
    ("f32", 1j, "the Python complex 1j is complex, but the parameter is float32"),
    ("i32", 2 + 0j, "is complex, but the parameter is int32"),
    ("complex<f32>", 1e40j, "does not fit in complex64"),
    ("f64", 10**400, "is too large for float64"),
], ids=lambda v: str(v)[:20])
def test_values_that_do_not_fit_are_refused(identity, type_name, value, message):
    names = [str(t) for t in SCALAR_TYPES]
    index = 1 + names.index(type_name)
    args = zeros()
    args[index] = value
    with pytest.raises(ArgumentError) as info:
        identity(*args)
    assert str(info.value).startswith(f"argument {index}: ")
    assert message in str(info.value)


def test_scalars_only_for_rank_0_and_numpy_scalars_keep_their_dtype(identity):
    args = zeros()
    args[0] = 2.0
    with pytest.raises(ArgumentError, match=r"argument 0: got the Python scalar 2.0, but the "
                                            r"parameter is an array of shape \(3,\) and dtype "
                                            r"float32"):
        identity(*args)
    f32_index = 1 + [str(t) for t in SCALAR_TYPES].index("f32")
    args = zeros()
    args[f32_index] = np.float64(2.0)  # a numpy scalar is an array of its dtype, not a number
    with pytest.raises(ArgumentError, match=f"argument {f32_index}: expected dtype float32, "
                                            "got float64"):
        identity(*args)


def test_run_with_array_and_scalar():
    """The case that prompted it: ``verify.run(m, X, 2.0)`` for ``x * s``."""
    for et, scalar, x in [(f32, 2.0, np.arange(4, dtype=np.float32)),
                          (hlo.bf16, 3, np.arange(4).astype(ml_dtypes.bfloat16)),
                          (hlo.i8, -2, np.arange(4, dtype=np.int8))]:
        m = hlo.Module("scale")
        fn = m.add_function("main", [tensor((4,), et), tensor((), et)], visibility="public")
        b = fn.builder()
        x_arg, s = fn.arguments
        b.return_(b.multiply(x_arg, b.broadcast_in_dim(s, (4,), [])))
        (out,) = verify.run(m, x, scalar)
        assert out.dtype == x.dtype
        np.testing.assert_array_equal(out.astype(np.float64),
                                      x.astype(np.float64) * scalar)


def test_non_native_byte_order_is_converted():
    m = hlo.Module("twice")
    fn = m.add_function("main", [tensor((3,), f32), tensor((3,), hlo.i32)],
                        visibility="public")
    b = fn.builder()
    x, n = fn.arguments
    b.return_(b.add(x, x), b.add(n, n))
    big_f, big_i = np.array([0, 0.5, 1], ">f4"), np.array([-1, 0, 1], ">i4")
    assert not big_f.dtype.isnative and big_f.dtype != np.float32
    xs, ns = verify.run(m, big_f, big_i)
    np.testing.assert_array_equal(xs, [0, 1, 2])
    np.testing.assert_array_equal(ns, [-2, 0, 2])
    assert xs.dtype == np.float32 and ns.dtype == np.int32
    # A different type in another byte order is still the wrong type.
    with pytest.raises(ArgumentError, match=r"argument 0: expected dtype float32, got >i4"):
        verify.run(m, big_i, big_i)
    with pytest.raises(ArgumentError, match=r"argument 1: expected shape \(3,\), got \(2,\)"):
        verify.run(m, big_f, big_i[:2])


def test_run_sharded_converts_and_checks_the_same_way():
    m = hlo.Module("rep")
    fn = m.add_function("main", [tensor((2,), f32), tensor((), hlo.i32)], visibility="public")
    b = fn.builder()
    x, n = fn.arguments
    b.return_(b.multiply(x, x), b.negate(n))
    exe = verify.compile(m, num_replicas=2)
    squares, negs = exe.run_sharded([[np.array([1, 2], ">f4"), 3], [np.array([3, 4], "<f4"), -4]])
    np.testing.assert_array_equal(squares[0], [1, 4])
    np.testing.assert_array_equal(squares[1], [9, 16])
    assert [int(v) for v in negs] == [-3, 4]
    with pytest.raises(ArgumentError, match="device 1, argument 1 .*: the Python float 0.5 is "
                                            "not an integer, but the parameter is int32"):
        exe.run_sharded([[np.zeros(2, np.float32), 1], [np.zeros(2, np.float32), 0.5]])


_LAYOUT = '''func.func public @main(%a: tensor<2x3xf32> {{mhlo.layout_mode = {arg}}}) -> \
(tensor<2x3xf32> {{mhlo.layout_mode = {res}}}) {{
  %0 = "mhlo.add"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}}'''


def test_an_argument_in_a_layout_other_than_row_major_is_refused_by_run(monkeypatch):
    """jaxlib's copy to the device writes row-major bytes, which a program taking its
    argument in layout {0,1} reads column-major: its numbers were the transpose's."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    column = _LAYOUT.format(arg='"{0,1}"', res='"{0,1}"')
    with pytest.raises(verify.ArgumentError, match=r"argument 0: .*layout \{0,1\}"):
        verify.run(column, x)
    exe = verify.compile(column)  # (it compiles; with the check bypassed, the bytes misread)
    monkeypatch.setattr(type(exe), "_check_parameter_layouts", lambda self: None)
    np.testing.assert_array_equal(exe(x)[0], 2 * x.reshape(3, 2).T)  # (read column-major)
    for arg in ('"{1,0}"', '"default"', '"auto"'):  # (a result in {0,1} comes back right)
        np.testing.assert_array_equal(verify.run(_LAYOUT.format(arg=arg, res='"{0,1}"'), x)[0],
                                      2 * x)


def test_a_masked_array_is_refused_not_read_without_its_mask():
    """np.asarray drops a mask: the program would sum the masked values (1003, not 3)."""
    m = hlo.Module("sum")
    f = m.add_function("main", [hlo.tensor((3,), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.reduce(f.arguments[0], b.constant(np.float32(0)), [0], "add"))
    x = np.ma.masked_array(np.array([1, 1000, 2], np.float32), mask=[0, 1, 0])
    for run in (verify.run, verify.interpret):
        with pytest.raises(ArgumentError, match=r"argument 0: a numpy masked array.*filled"):
            run(m, x)
    assert verify.run(m, x.filled(0))[0] == 3
