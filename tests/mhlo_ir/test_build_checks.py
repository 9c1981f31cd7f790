"""Issue #8: mistakes caught when the op is built, in Python, with a message that names the op,
the argument and expected versus actual, before jaxlib sees the text.

One section per kind of mistake: constant values their type cannot hold, non-integer or
impossible dimensions, region bodies of the wrong arity, while_ states, Python scalars as
operands, the one-result/several-results return convention, and the Builder's repr (ops
after a terminator: test_terminated.py). Where the claim is "jaxlib would reject it (or
compute something else)", a test shows that on the raw text too.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import OpBuildError, dtypes as D, f32, i32, tensor
from mhlo_ir.exact import exact_array


def E(*parts):
    """A pattern matching the literal ``parts`` in order, anything in between."""
    return ".*".join(re.escape(p) for p in parts)


@pytest.fixture
def b():
    m = hlo.Module("checks")
    f = m.add_function("main", [tensor((2, 3), f32), tensor((), f32), tensor((), i32),
                                tensor((4,), f32), tensor((2, 3), i32)])
    return f.builder()


def args(b):
    return b.function.arguments


def value_of(c):
    return c.attributes["value"].to_array()


# -- 1. constants: the value must fit the type ---------------------------------------------------

REFUSED_CONSTANTS = [
    # (value, dtype, pattern)
    (1.5, i32, E("'constant' value 1.5 is not an integer", "i32 holds integers")),
    (np.float32(-0.5), D.ui8, E("'constant' value -0.5 is not an integer")),
    ([1.0, 2.25], D.i64, E("'constant' element [1] = 2.25 is not an integer")),
    (300, D.i8, E("'constant' value 300 is out of range for i8, which holds -128..127")),
    (-1, D.ui8, E("'constant' value -1 is out of range for ui8, which holds 0..255")),
    ([1, 300], D.i8, E("element [1] = 300 is out of range for i8")),
    (np.array([[1, 2], [3, -129]]), D.i8, E("element [1, 1] = -129 is out of range for i8")),
    (np.array([7, 8]), D.i4, E("element [1] = 8 is out of range for i4, which holds -8..7")),
    (4, D.ui2, E("value 4 is out of range for ui2, which holds 0..3")),
    (2**64, D.ui64, E("value 18446744073709551616 is out of range for ui64")),
    ([2**64, 0], D.ui64, E("element [0] = 18446744073709551616 is out of range for ui64")),
    (2**63, D.i64, E("value 9223372036854775808 is out of range for i64")),
    (2.0**63, D.i64, E("value 9.223372036854776e+18 is out of range for i64")),
    (np.nan, i32, E("value nan is not a finite number, so it has no i32 value")),
    (np.inf, D.ui8, E("value inf is not a finite number")),
    (2, D.i1, E("value 2 is not a boolean: i1 holds True and False (or 0 and 1)")),
    (0.5, D.i1, E("value 0.5 is not a boolean")),
    (1 + 2j, f32, E("is complex, and f32 is not (pass the real part")),
    (1e10, D.f16, E("value 10000000000.0 overflows f16, whose largest finite value is 65504")),
    (65520.0, D.f16, E("value 65520.0 overflows f16")),
    (1e300, f32, E("value 1e+300 overflows f32")),
    (np.float32(3.4e38), D.bf16, E("overflows bf16")),
    (1000.0, D.f8E4M3FN, E("value 1000.0 overflows f8E4M3FN, whose largest finite value is 448")),
    (100.0, D.f4E2M1FN, E("value 100.0 overflows f4E2M1FN, whose largest finite value is 6")),
    (np.inf, D.f8E4M3FN, E("value inf is not representable in f8E4M3FN (it would become nan)")),
    (np.inf, D.f4E2M1FN, E("value inf is not representable in f4E2M1FN")),
    (np.nan, D.f4E2M1FN, E("value nan is not representable in f4E2M1FN")),
    (0.0, D.f8E8M0FNU, E("value 0.0 is not representable in f8E8M0FNU")),
    (-2.0, D.f8E8M0FNU, E("value -2.0 is not representable in f8E8M0FNU")),
    (1e300 + 1j, D.complex64, E("the real part of value 1e+300 overflows f32")),
    ([1, 1e300j], D.complex64, E("the imaginary part of element [1] = 1e+300 overflows f32")),
    ("3", i32, E("'constant' value str '3' holds strings, not numbers")),
    (["a", "b"], None, E("value list ['a', 'b'] holds strings, not numbers")),
    (np.array([1, "a"], dtype=object), None,
     E("has dtype object (element [1] is str 'a'); constants take arrays of dtype bool")),
    (np.array([1, None], dtype=object), i32, E("has dtype object (element [1] is NoneType")),
    (None, None, E("'constant' value None is not a number")),
    ([[1], [1, 2]], None, E("is not a rectangular array")),
    ([2**70], None, E("value [1180591620717411303424] holds integers beyond int64: pass "
                      "dtype")),
    (2**31, None, E("Python int 2147483648 does not fit in i32: pass dtype")),
    (np.datetime64("2020-01-01"), None, E("holds datetime64[D] values, not numbers")),
    (1.0, "float", E("'constant' dtype:", "'float' is not an MLIR element type name")),
]


@pytest.mark.parametrize("value, dtype, pattern", REFUSED_CONSTANTS,
                         ids=[f"{i}" for i in range(len(REFUSED_CONSTANTS))])
def test_constant_refuses_values_its_type_cannot_hold(b, value, dtype, pattern):
    with pytest.raises(OpBuildError, match=pattern):
        b.constant(value, dtype)


def test_chlo_constant_converts_as_constant(b):
    with pytest.raises(OpBuildError, match=E("'chlo.constant' value 300 is out of range for i8")):
        b.chlo_constant(300, D.i8)
    assert b.chlo_constant(2.5).type == tensor((), f32)


ACCEPTED_CONSTANTS = [
    # (value, dtype, expected array): what the conversion keeps
    (2.0, i32, np.int32(2)),
    (True, i32, np.int32(1)),
    ([True, False], D.i8, np.array([1, 0], np.int8)),
    ([True, False], f32, np.array([1, 0], np.float32)),
    (1, D.i1, np.bool_(True)),
    (0.0, D.i1, np.bool_(False)),
    (-8, D.i4, np.array(-8, ml_dtypes.int4)),
    ([2**64 - 1, 0], D.ui64, np.array([2**64 - 1, 0], np.uint64)),
    (2.0**63 - 1024, D.i64, np.int64(2**63 - 1024)),
    (65519.0, D.f16, np.float16(65504)),  # rounds to the largest finite value, as IEEE does
    (6.9, D.f4E2M1FN, np.array(6, ml_dtypes.float4_e2m1fn)),
    (1e-30, D.f16, np.float16(0)),  # underflow rounds to zero, as numpy does
    (np.inf, D.f16, np.float16(np.inf)),  # inf given as such goes into a type with inf
    (np.nan, f32, np.float32(np.nan)),
    (0.1, D.bf16, np.array(0.1, ml_dtypes.bfloat16)),
    (4.0, D.f8E8M0FNU, np.array(4, ml_dtypes.float8_e8m0fnu)),
    (1 + 2j, D.complex64, np.complex64(1 + 2j)),
    (3, D.complex64, np.complex64(3)),
    (np.zeros(3, ml_dtypes.bfloat16), f32, np.zeros(3, np.float32)),
    ([], D.i8, np.zeros(0, np.int8)),
]


@pytest.mark.parametrize("value, dtype, expected", ACCEPTED_CONSTANTS,
                         ids=[f"{i}" for i in range(len(ACCEPTED_CONSTANTS))])
def test_constant_keeps_values_its_type_can_hold(b, value, dtype, expected):
    got = value_of(b.constant(value, dtype))
    assert got.dtype == np.asarray(expected).dtype
    np.testing.assert_array_equal(got.astype(np.float64) if got.dtype.kind == "V" else got,
                                  np.asarray(expected).astype(np.float64)
                                  if got.dtype.kind == "V" else expected)


def test_constant_defaults():
    """Python floats and ints become f32 and i32 without dtype, numpy values keep theirs; a
    DenseElementsAttr with a different dtype is refused rather than ignored."""
    b = hlo.Module("m").add_function("main", []).builder()
    assert b.constant(1.5).type == tensor((), f32)
    assert b.constant(3).type == tensor((), i32)
    assert b.constant(np.int8(3)).type == tensor((), D.i8)
    attr = hlo.DenseElementsAttr.from_array(np.zeros(2, np.float32))
    assert b.constant(attr, f32).attributes["value"] is attr
    with pytest.raises(OpBuildError, match=E("'constant' value is a DenseElementsAttr of "
                                             "tensor<2xf32>, which is not of dtype i32")):
        b.constant(attr, i32)


def test_numpy_would_have_built_wrong_constants():
    """What the checks prevent: numpy's own conversion truncates, wraps and saturates."""
    assert np.asarray(1.5, dtype=np.int32) == 1
    assert int(np.asarray(20, dtype=ml_dtypes.int4)) == 4
    assert float(np.asarray(100.0, dtype=ml_dtypes.float4_e2m1fn)) == 6
    assert np.isnan(float(np.asarray(0.0, dtype=ml_dtypes.float8_e8m0fnu)))
    with np.errstate(over="ignore"):
        assert np.isinf(np.asarray(1e10, dtype=np.float16))


def test_dense_from_array_converts_exactly():
    """The attribute constructor itself refuses lossy conversions (ValueError / TypeError)."""
    with pytest.raises(ValueError, match=E("value 1.5 is not an integer")):
        hlo.DenseElementsAttr.from_array(1.5, tensor((), i32))
    with pytest.raises(TypeError, match=E("holds strings")):
        hlo.DenseElementsAttr.from_array(np.array(["x"]))
    same = np.arange(3, dtype=np.int32)
    assert exact_array(same, i32) is same  # no copy, no check for data of the right dtype


# -- 2. dimensions: integers, and sizes XLA takes ---------------------------------------------

def _dim_cases(b):
    x, s, si, v, xi = args(b)

    def add(r, a, c):
        return r.add(a, c)

    return {
        "reduce": (lambda d: b.reduce(x, s, [d], add), "'reduce' dimensions"),
        "pad": (lambda d: b.pad(x, s, [d, 0], [0, 0]), "'pad' edge_padding_low"),
        "pad_high": (lambda d: b.pad(x, s, [0, 0], [0, d]), "'pad' edge_padding_high"),
        "pad_interior": (lambda d: b.pad(x, s, [0, 0], [0, 0], [d, 0]),
                         "'pad' interior_padding"),
        "reverse": (lambda d: b.reverse(x, [d]), "'reverse' dimensions"),
        "broadcast": (lambda d: b.broadcast(x, [d]), "'broadcast' broadcast_sizes"),
        "dynamic_slice": (lambda d: b.dynamic_slice(x, [si, si], [d, 1]),
                          "'dynamic_slice' slice_sizes"),
        "gather": (lambda d: b.gather(x, b.constant(np.zeros((1, 1), np.int32)), dict(
            offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
            index_vector_dim=1), (1, d)), "'gather' slice_sizes"),
        "rng": (lambda d: b.rng(s, s, (d,)), "'rng' shape"),
        "rng_bit_generator": (lambda d: b.rng_bit_generator(
            b.constant(np.zeros(2, np.uint64)), (d,), D.ui32), "'rng_bit_generator'"),
        "fft": (lambda d: b.fft(b.convert(v, D.complex64), "FFT", [d]), "'fft' fft_length"),
        "reduce_window_padding": (lambda d: b.reduce_window(
            x, s, [1, 1], add, padding=[(d, 0), (0, 0)]), "'reduce_window' padding[0]"),
        "select_and_scatter_padding": (lambda d: b.select_and_scatter(
            x, x, s, lambda r, a, c: r.compare(a, c, "GE"), add, window_dimensions=[1, 1],
            padding=[(0, 0), (0, d)]), "'select_and_scatter' padding[1]"),
        "topk": (lambda d: b.topk(x, d), "'topk' k"),
        "all_gather": (lambda d: b.all_gather(x, d, [[0]]), "'all_gather' all_gather_dim"),
        "reduce_scatter": (lambda d: b.reduce_scatter(x, d, add, [[0]]),
                           "'reduce_scatter' scatter_dimension"),
        "scan": (lambda d: b.scan([x], [], d, lambda r, a: (a,)), "'scan' dimension"),
        "broadcast_in_dim_shape": (lambda d: b.broadcast_in_dim(x, [2, 3, d], [0, 1]),
                                   "'broadcast_in_dim'"),
        "broadcast_in_dim_dims": (lambda d: b.broadcast_in_dim(x, [2, 3, 4], [0, d]),
                                  "'broadcast_in_dim' broadcast_dimensions"),
        "reshape": (lambda d: b.reshape(x, [3, 2, d]), "'reshape'"),
        "transpose": (lambda d: b.transpose(x, [d, 0]), "'transpose' permutation"),
        "slice": (lambda d: b.slice(x, [0, 0], [d, 3]), "'slice' limit_indices"),
        "iota": (lambda d: b.iota([d], f32), "'iota'"),
        "dot_general": (lambda d: b.dot_general(x, x, ((d,), (1,))), "'dot_general'"),
        "convolution_padding": (lambda d: b.convolution(
            b.reshape(x, [1, 2, 3, 1]), b.reshape(x, [2, 3, 1, 1]), _conv_dims(),
            padding=[(0, d), (0, 0)]), "'convolution' padding[0]"),
        "convolution_groups": (lambda d: b.convolution(
            b.reshape(x, [1, 2, 3, 1]), b.reshape(x, [2, 3, 1, 1]), _conv_dims(),
            feature_group_count=d), "'convolution' feature_group_count"),
        "rng_get_and_update_state": (lambda d: b.rng_get_and_update_state(d),
                                     "'xla.rng_get_and_update_state' delta"),
    }


def _conv_dims():
    return hlo.ConvDimensionNumbers(input_batch_dimension=0, input_feature_dimension=3,
                                    input_spatial_dimensions=(1, 2),
                                    kernel_input_feature_dimension=2,
                                    kernel_output_feature_dimension=3,
                                    kernel_spatial_dimensions=(0, 1),
                                    output_batch_dimension=0, output_feature_dimension=3,
                                    output_spatial_dimensions=(1, 2))


DIM_NAMES = list(_dim_cases(hlo.Module("m").add_function(
    "main", [tensor((2, 3), f32), tensor((), f32), tensor((), i32), tensor((4,), f32),
             tensor((2, 3), i32)]).builder()))


@pytest.mark.parametrize("bad", [1.5, 1.0, True, np.float64(1.0)], ids=repr)
@pytest.mark.parametrize("case", DIM_NAMES)
def test_non_integer_dimensions_are_refused_everywhere(b, case, bad):
    build, where = _dim_cases(b)[case]
    op, _, what = where.partition(" ")
    # The op, then the argument (the op table's converters say "attribute <name>").
    pattern = re.escape(op) + "( attribute)?" + re.escape(" " + what if what else "")
    with pytest.raises(OpBuildError, match=pattern) as info:
        build(bad)
    msg = str(info.value)
    assert "integer" in msg and repr(bad) in msg, msg


@pytest.mark.parametrize("case", [n for n in DIM_NAMES if n != "rng_get_and_update_state"])
def test_non_list_dimensions_are_refused(b, case):
    """An int where a list is expected, or a dimension of 2**63, is an OpBuildError too."""
    build, where = _dim_cases(b)[case]
    try:
        build(1)
    except OpBuildError:
        pass  # some cases are ill-formed for other reasons (an int is fine as a dimension)
    with pytest.raises(OpBuildError):
        build(2**63)


def test_rng_does_not_truncate_float_shapes(b):
    """rng used int(d): (2.7,) became a shape of 2."""
    _, s, *_ = args(b)
    with pytest.raises(OpBuildError, match=E("'rng' shape: expected an integer, got float 2.7")):
        b.rng(s, s, (2.7,))


def test_padding_is_not_truncated(b):
    """The padding converters use numpy.asarray(..., int64), which truncates 1.5 to 1."""
    x, s, *_ = args(b)
    with pytest.raises(OpBuildError, match=E("'reduce_window' padding[0]: expected an integer, "
                                             "got float 1.5")):
        b.reduce_window(x, s, [1, 1], lambda r, a, c: r.add(a, c), padding=[(1.5, 0), (0, 0)])
    with pytest.raises(OpBuildError, match=E("'reduce_window' padding[1] must be a (low, high) "
                                             "pair, got 3 integers [0, 0, 0]")):
        b.reduce_window(x, s, [1, 1], lambda r, a, c: r.add(a, c), padding=[(0, 0), (0, 0, 0)])


def test_dimension_lists_must_be_lists(b):
    x, s, *_ = args(b)
    with pytest.raises(OpBuildError, match=E("'transpose' permutation must be a list of "
                                             "integers, got int 1")):
        b.transpose(x, 1)
    with pytest.raises(OpBuildError, match=E("'slice' start_indices must be a list of "
                                             "integers, got str '01'")):
        b.slice(x, "01", [1, 1])
    with pytest.raises(OpBuildError, match=E("'reverse' dimensions must be a list of integers, "
                                             "got str '01'")):
        b.reverse(x, "01")
    with pytest.raises(OpBuildError, match=E("'pad' edge_padding_low must be a list of "
                                             "integers, got int 0")):
        b.pad(x, s, 0, [0, 0])
    with pytest.raises(OpBuildError, match=E("'dot_general' contracting_dimensions and "
                                             "batch_dimensions must each be a pair")):
        b.dot_general(x, x, (1, 1))


LARGEST = 2**63 - 1


def test_tensor_dimension_limits():
    """MLIR takes dimensions up to 2**63 - 1; XLA also refuses tensors of 2**63 bytes or more,
    multiplying the element size by the dimensions in order."""
    with pytest.raises(ValueError, match=E("tensor dimension 9223372036854775808 is too large",
                                           "up to 2**63 - 1")):
        tensor((2**63,), D.i8)
    with pytest.raises(ValueError, match=E("tensor dimension -1 is negative")):
        tensor((-1,), f32)
    assert tensor((LARGEST,), D.i8).shape == (LARGEST,)
    assert tensor((LARGEST // 4,), f32).shape == (LARGEST // 4,)
    with pytest.raises(ValueError, match=E("tensor<2305843009213693952xf32> is too large",
                                           "4-byte elements")):
        tensor((LARGEST // 4 + 1,), f32)
    with pytest.raises(ValueError, match=E("is too large")):
        tensor((2**62, 0, 2**62), f32)
    assert tensor((0, 2**62, 2**62), f32).num_elements == 0
    for bad in (1.5, True, np.float32(2)):
        with pytest.raises(TypeError, match="is not an integer"):
            tensor((bad,), f32)


def _identity_text(shape, et):
    t = f"tensor<{shape}x{et}>"
    return f"func.func @main(%a: {t}) -> {t} {{\n  return %a : {t}\n}}\n"


@pytest.mark.parametrize("shape, et, ok", [
    (f"{LARGEST}", "i8", True),
    (f"{2**63}", "i8", False),
    (f"{LARGEST // 4}", "f32", True),
    (f"{LARGEST // 4 + 1}", "f32", False),
    (f"{2**62}x0x{2**62}", "f32", False),
    (f"0x{2**62}x{2**62}", "f32", True),
])
def test_jaxlib_agrees_on_the_dimension_limits(shape, et, ok):
    """The limits tensor() enforces are jaxlib's (checked only: nothing is compiled or
    allocated)."""
    dims = [int(d) for d in shape.split("x")]
    etype = D.element_type(et)
    try:
        tensor(dims, etype)
        ours = True
    except ValueError:
        ours = False
    assert ours == ok
    if ok:
        verify.check(_identity_text(shape, et))
    else:
        with pytest.raises(verify.VerificationError):
            verify.check(_identity_text(shape, et))


# -- 3. region bodies: the callable must take the builder and the region's arguments ----------

def _region_cases(b):
    x, s, si, v, xi = args(b)
    p = b.compare(s, s, "LT")
    return {
        "reduce": (lambda body: b.reduce(x, s, [0], body), "'reduce' body", 3,
                   "(builder, acc, x): write lambda b, acc, x: ..."),
        "reduce2": (lambda body: b.reduce([x, xi], [s, si], [0], body), "'reduce' body", 5,
                    "(builder, acc0, acc1, x0, x1): write lambda b, acc0, acc1, x0, x1: ..."),
        "while_cond": (lambda body: b.while_([si], body, lambda r, i: i), "'while' cond", 2,
                       "(builder, x): write lambda b, x: ..."),
        "while_body": (lambda body: b.while_([si, s], lambda r, i, t: p, body), "'while' body",
                       3, "(builder, x0, x1): write lambda b, x0, x1: ..."),
        "if_true": (lambda body: b.if_(p, body, lambda r: [s]), "'if' true_branch", 1,
                    "(builder): write lambda b: ..."),
        "if_false": (lambda body: b.if_(p, lambda r: [s], body), "'if' false_branch", 1,
                     "(builder): write lambda b: ..."),
        "case": (lambda body: b.case(si, [lambda r: [s], body]), "'case' branches[1]", 1,
                 "(builder): write lambda b: ..."),
        "sort": (lambda body: b.sort([x, xi], body), "'sort' comparator", 5,
                 "(builder, lhs0, rhs0, lhs1, rhs1)"),
        "scatter": (lambda body: b.scatter(x, b.constant(np.zeros((1, 1), np.int32)),
                                           b.constant(np.zeros((1, 3), np.float32)), dict(
            update_window_dims=(1,), inserted_window_dims=(0,),
            scatter_dims_to_operand_dims=(0,), index_vector_dim=1), body),
            "'scatter' update_computation", 3, "(builder, old, new)"),
        "reduce_window": (lambda body: b.reduce_window(x, s, [1, 1], body),
                          "'reduce_window' body", 3, "(builder, acc, x)"),
        "select": (lambda body: b.select_and_scatter(
            x, x, s, body, lambda r, a, c: r.add(a, c), window_dimensions=[1, 1]),
            "'select_and_scatter' select", 3, "(builder, lhs, rhs)"),
        "all_reduce": (lambda body: b.all_reduce(x, body, [[0]]), "'all_reduce' body", 3,
                       "(builder, lhs, rhs)"),
        "reduce_scatter": (lambda body: b.reduce_scatter(x, 0, body, [[0]]),
                           "'reduce_scatter' body", 3, "(builder, lhs, rhs)"),
        "fusion": (lambda body: b.fusion([x, v], body), "'fusion' body", 3,
                   "(builder, x0, x1)"),
        "scan": (lambda body: b.scan([x], [s], 0, body), "'scan' body", 3,
                 "(builder, x, carry)"),
    }


REGION_NAMES = list(_region_cases(hlo.Module("m").add_function(
    "main", [tensor((2, 3), f32), tensor((), f32), tensor((), i32), tensor((4,), f32),
             tensor((2, 3), i32)]).builder()))


@pytest.mark.parametrize("case", REGION_NAMES)
def test_region_body_arity_is_checked(b, case):
    build, where, n, tail = _region_cases(b)[case]
    short = eval("lambda " + ", ".join(f"a{i}" for i in range(n - 1)) + ": None")
    takes = f"{n - 1} argument" + ("" if n - 1 == 1 else "s")
    with pytest.raises(OpBuildError, match=E(where, f"takes {takes} but the region has {n} ",
                                             tail)):
        build(short)
    long = eval("lambda " + ", ".join(f"a{i}" for i in range(n + 1)) + ": None")
    with pytest.raises(OpBuildError, match=E(where, f"takes {n + 1} arguments but the region "
                                                    f"has {n}")):
        build(long)


def test_python_arity_error_no_longer_escapes(b):
    """Before: ``TypeError: <lambda>() takes 2 positional arguments but 3 were given`` from
    inside the builder, naming neither the op nor the region."""
    x, s, *_ = args(b)
    with pytest.raises(OpBuildError) as info:
        b.reduce(x, s, [0], lambda acc, y: acc)
    assert "positional" not in str(info.value)
    assert str(info.value) == ("'reduce' body takes 2 arguments but the region has 3 "
                               "(builder, acc, x): write lambda b, acc, x: ...")


def test_region_bodies_may_take_varargs_defaults_methods_and_partials(b):
    import functools
    x, s, *_ = args(b)

    class Sum:
        def __call__(self, r, a, c):
            return r.add(a, c)

        def method(self, r, a, c):
            return r.add(a, c)

    for body in (lambda r, *xs: r.add(*xs), lambda r, a, c, scale=2: r.add(a, c),
                 Sum(), Sum().method, functools.partial(lambda k, r, a, c: r.add(a, c), 1)):
        assert b.reduce(x, s, [0], body).type == tensor((3,), f32)


def test_region_body_errors(b):
    x, s, *_ = args(b)
    with pytest.raises(OpBuildError, match=E("'reduce' body must be a function of the builder "
                                             "and the region's arguments (builder, acc, x), "
                                             "got NoneType None")):
        b.reduce(x, s, [0], None)
    with pytest.raises(OpBuildError, match=E("'reduce' body has required keyword-only "
                                             "arguments (k)")):
        b.reduce(x, s, [0], lambda r, a, c, *, k: a)
    with pytest.raises(OpBuildError, match=E("'reduce' body must return a Value or a list of "
                                             "Values", "got float 1.0")):
        b.reduce(x, s, [0], lambda r, a, c: 1.0)
    with pytest.raises(OpBuildError, match=E("'reduce' body returned str 'q' as result 1, not "
                                             "a Value")):
        b.reduce([x, x], [s, s], [0], lambda r, a0, a1, c0, c1: [a0, "q"])
    with pytest.raises(OpBuildError, match=E("'case' branches must be a list of functions")):
        b.case(args(b)[2], lambda r: [s])


def test_arity_is_cached_per_code_object(b):
    from mhlo_ir import builder as builder_module
    x, s, *_ = args(b)

    def body(r, a, c):
        return r.add(a, c)

    b.reduce(x, s, [0], body)
    assert builder_module._ARITY[body.__code__] == (3, 3, ())

    def with_default(r, a, c, k=1):
        return r.add(a, c)

    b.reduce(x, s, [0], with_default)
    assert builder_module._ARITY[(with_default.__code__, 1, 0)] == (3, 4, ())


# -- 4. while_: the state is a list of Values (or one Value) --------------------------------

def test_while_state_must_be_values(b):
    x, s, si, *_ = args(b)
    with pytest.raises(OpBuildError, match=E("'while' operands must be a Value or a list of "
                                             "Values, got int 3")):
        b.while_(3, lambda r, i: i, lambda r, i: i)
    with pytest.raises(OpBuildError, match=E("'while' operand operand[1] must be a Value",
                                             "int 0")):
        b.while_([si, 0], lambda r, i, j: i, lambda r, i, j: (i, j))


def test_while_takes_a_single_value_as_a_state_of_one(b):
    _, _, si, *_ = args(b)
    ten = b.constant(10)
    out = b.while_(si, lambda r, i: r.compare(i, ten, "LT"),
                   lambda r, i: r.add(i, r.constant(1)))
    assert out.type == tensor((), i32) and out.owner.spec.name == "while"


# -- 6. one result -> the Value, several -> a tuple, none -> the Operation: every method -------

def test_one_result_is_a_value_several_a_tuple_none_the_operation():
    from mhlo_ir.builder import as_results
    m = hlo.Module("conv")
    t2, s, si = tensor((2,), f32), tensor((), f32), tensor((), i32)
    g1 = m.add_function("g1", [t2])
    g1.builder().return_(g1.arguments[0])
    g2 = m.add_function("g2", [t2])
    g2.builder().return_(g2.arguments[0], g2.arguments[0])
    g0 = m.add_function("g0", [t2])
    g0.builder().return_()
    f = m.add_function("main", [t2, s, si])
    b = f.builder()
    x, z, i = f.arguments
    p = b.compare(z, z, "LT")

    def add(r, a, c):
        return r.add(a, c)

    def lt(r, a, c):
        return r.compare(a, c, "LT")

    one = {
        "custom_call": b.custom_call("t", [x], [t2]),
        "custom_call_type": b.custom_call("t", [x], t2),
        "while_list": b.while_([i], lambda r, k: r.compare(k, k, "LT"), lambda r, k: k),
        "while_value": b.while_(i, lambda r, k: r.compare(k, k, "LT"), lambda r, k: k),
        "if_": b.if_(p, lambda r: x, lambda r: x),
        "case": b.case(i, [lambda r: x]),
        "call": b.call(g1, [x]),
        "reduce_list": b.reduce([x], [z], [0], add),
        "sort_list": b.sort([x], lt),
        "reduce_window_list": b.reduce_window([x], [z], [1], add),
        "all_reduce_list": b.all_reduce([x], add, [[0]]),
        "optimization_barrier": b.optimization_barrier(x),
        "fusion": b.fusion([x], lambda r, v: r.negate(v)),
        "composite": b.composite("my.id", [x], g1),
        "scan": b.scan([x], [], 0, lambda r, v: [v]),
        "recv_token_only": b.recv(b.create_token(), [], 1),
    }
    for name, v in one.items():
        assert isinstance(v, hlo.Value), (name, v)
    several = {
        "custom_call": b.custom_call("t", [x], [t2, t2]),
        "while_": b.while_([i, z], lambda r, k, w: r.compare(k, k, "LT"),
                           lambda r, k, w: (k, w)),
        "if_": b.if_(p, lambda r: [x, z], lambda r: [x, z]),
        "call": b.call(g2, [x]),
        "reduce": b.reduce([x, x], [z, z], [0], lambda r, a, c, d, e: [a, c]),
        "scan": b.scan([x], [z], 0, lambda r, v, c: [v, c]),
        "recv": b.recv(b.create_token(), [t2], 1),
        "optimization_barrier": b.optimization_barrier(x, z),
    }
    for name, v in several.items():
        assert isinstance(v, tuple) and all(isinstance(r, hlo.Value) for r in v), (name, v)
    none = {
        "custom_call": b.custom_call("t", [x], [], has_side_effect=True),
        "if_": b.if_(p, lambda r: [], lambda r: []),
        "call": b.call(g0, [x]),
        "trace": b.trace(x, "tag"),
    }
    for name, v in none.items():
        assert isinstance(v, hlo.Operation) and not isinstance(v, hlo.Value), (name, v)
        assert v.results == ()
    assert as_results(one["call"]) == (one["call"],)
    assert as_results(several["call"]) == several["call"]
    assert as_results(none["call"]) == ()
    # scan's results are its outputs, then its carries, flat
    out, carry = several["scan"]
    assert out.type == tensor((2,), f32) and carry.type == s


# -- 5. Python scalars as operands: a constant of the other operand's type --------------------

@pytest.fixture
def sb():
    m = hlo.Module("scalars")
    f = m.add_function("main", [tensor((2,), f32), tensor((2,), i32), tensor((2,), D.i1),
                                tensor((2,), D.ui8)], visibility="public")
    return f.builder()


def _const(v):
    assert v.owner.spec.name == "constant"
    return v.attributes["value"]


def test_python_scalars_become_constants_of_the_other_operands_type(sb):
    x, xi, p, u = sb.function.arguments
    y = sb.add(x, 1.0)
    c = y.operands[1]
    assert y.type == x.type and _const(c).type == x.type and _const(c).splat
    y = sb.multiply(2, x)  # an int into a float tensor, on the left
    assert _const(y.operands[0]).type == x.type
    assert sb.add(xi, 1).type == xi.type
    assert sb.and_(p, True).type == p.type
    assert sb.add(x, np.float32(0.5)).type == x.type  # a numpy scalar of the same dtype
    assert sb.compare(x, 0.0, "LT").type == tensor((2,), D.i1)
    assert sb.compare(1, xi, "LT").operands[0].type == xi.type
    q = sb.compare(x, 0.0, "GT")
    assert sb.select(q, x, 0.0).type == x.type
    assert sb.select(q, -1.0, x).type == x.type
    clamped = sb.clamp(0.0, x, 1.0)
    assert [v.type for v in clamped.operands] == [tensor((), f32), x.type, tensor((), f32)]


WEAK_REFUSED = [
    (lambda b, x, xi, p, u: b.add(xi, 1.5),
     E("'add' operand rhs: Python float 1.5 does not go into lhs's type tensor<2xi32>",
       "convert the tensor first")),
    (lambda b, x, xi, p, u: b.add(x, True),
     E("'add' operand rhs: Python bool True does not go into lhs's type tensor<2xf32>")),
    (lambda b, x, xi, p, u: b.and_(p, 1),
     E("'and' operand rhs: Python int 1 does not go into lhs's type tensor<2xi1>",
       "pass True or False")),
    (lambda b, x, xi, p, u: b.add(x, 1j), E("Python complex 1j does not go into")),
    (lambda b, x, xi, p, u: b.add(u, -1),
     E("'add' operand rhs: value -1 is out of range for ui8, which holds 0..255")),
    (lambda b, x, xi, p, u: b.subtract(300, u), E("'subtract' operand lhs: value 300 is out")),
    (lambda b, x, xi, p, u: b.add(x, 1e300), E("'add' operand rhs: value 1e+300 overflows f32")),
    (lambda b, x, xi, p, u: b.add(x, np.float64(1)),
     E("'add' operand rhs is numpy float64", "but lhs is tensor<2xf32>")),
    (lambda b, x, xi, p, u: b.add(x, np.ones(2)),
     E("'add' operand rhs must be a Value", "or a Python scalar, got ndarray",
       "b.constant(...)")),
    (lambda b, x, xi, p, u: b.add(1, 2),
     E("'add' operands lhs and rhs are both Python scalars (1, 2): one must be a Value")),
    (lambda b, x, xi, p, u: b.add(b.create_token(), 1),
     E("'add' operand lhs must be a tensor to type the Python scalar 1 given as rhs")),
    (lambda b, x, xi, p, u: b.clamp(0, xi, 1.5),
     E("'clamp' operand max: Python float 1.5 does not go into x's type tensor<2xi32>")),
    (lambda b, x, xi, p, u: b.compare(xi, 0.5, "LT"),
     E("'compare' operand rhs: Python float 0.5 does not go into")),
]


@pytest.mark.parametrize("build, pattern", WEAK_REFUSED, ids=range(len(WEAK_REFUSED)))
def test_python_scalars_follow_weak_typing(sb, build, pattern):
    with pytest.raises(OpBuildError, match=pattern):
        build(sb, *sb.function.arguments)


def test_python_scalar_operands_compute_what_they_say(sb):
    x, xi, p, u = sb.function.arguments
    a = sb.add(sb.multiply(2, x), 0.5)
    c = sb.select(sb.compare(xi, 1, "GT"), sb.subtract(xi, 1), 0)
    d = sb.clamp(-1.0, x, 1.0)
    sb.return_(a, c, d, sb.or_(p, False), sb.add(u, 255))
    xs = np.float32([-3, 0.25])
    got = verify.run(sb.function.module, xs, np.int32([5, -2]), np.array([True, False]),
                     np.uint8([0, 1]))
    np.testing.assert_array_equal(got[0], 2 * xs + 0.5)
    np.testing.assert_array_equal(got[1], np.int32([4, 0]))
    np.testing.assert_array_equal(got[2], np.clip(xs, -1, 1))
    np.testing.assert_array_equal(got[3], [True, False])
    np.testing.assert_array_equal(got[4], np.uint8([255, 0]))


# -- 8. the Builder says where it builds ----------------------------------------------------------

def test_builder_repr():
    m = hlo.Module("r")
    f = m.add_function("main", [tensor((2,), f32), tensor((), f32)])
    b = f.builder()
    assert repr(b) == "<Builder at the end of @main's entry block: 2 arguments, 0 ops, open>"
    x, s = f.arguments
    seen = []

    def body(r, a, c):
        seen.append(repr(r))
        return r.add(a, c)

    b.reduce(x, s, [0], body)
    assert seen == ["<Builder at the end of a region block: 2 arguments, 0 ops, open>"]
    with b.at_location("model.py", 3, 7):
        assert repr(b).endswith(', location "model.py":3:7>')
    b.return_(x)
    assert repr(b) == ("<Builder at the end of @main's entry block: 2 arguments, 2 ops, "
                       "terminated by 'func.return'>")


def test_public_builder_methods_have_return_annotations():
    import inspect as _inspect
    missing = [name for name, fn in vars(hlo.Builder).items()
               if callable(fn) and not name.startswith("_")
               and "return" not in getattr(getattr(fn, "__wrapped__", fn), "__annotations__", {})]
    assert missing == []
    assert _inspect.signature(hlo.Builder.add).return_annotation in ("Value", hlo.Value)


# -- every front door: arguments of the wrong kind are OpBuildErrors ----------------------------

def _public_methods():
    import inspect as _inspect
    for name, fn in sorted(vars(hlo.Builder).items()):
        if name.startswith("_") or not callable(fn) or name in ("create", "region",
                                                                 "at_location"):
            continue
        params = list(_inspect.signature(fn).parameters.values())[1:]
        if any(p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in params):
            continue  # batch_norm_*: required keyword arguments
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)
                      and p.default is p.empty]
        for k in range(len(positional)):
            yield name, len(positional), k


@pytest.mark.parametrize("bad", [None, object(), "s"], ids=["None", "object", "str"])
def test_no_front_door_leaks_a_python_error(bad):
    """Each required argument of every public method, given None, an object or a string
    (the others a tensor Value): the builder raises OpBuildError, never Python's own
    TypeError/AttributeError from inside its code."""
    leaks = []
    for name, n, k in _public_methods():
        m = hlo.Module("fuzz")
        f = m.add_function("main", [tensor((2, 3), f32)])
        b = f.builder()
        (x,) = f.arguments
        args = [bad if j == k else x for j in range(n)]
        try:
            getattr(b, name)(*args)
        except OpBuildError:
            pass
        except Exception as e:  # noqa: BLE001 - what the test looks for
            leaks.append(f"{name} argument {k}: {type(e).__name__}: {str(e)[:80]}")
    assert leaks == []


def test_python_scalar_constants_are_kept_by_exact_value(sb):
    """Repeated literals share one attribute (cheap, and the constant memo hits); the key is
    the float's bits, so -0.0 and 0.0, or 1 and True, stay apart."""
    x, xi, p, u = sb.function.arguments
    a, c = sb.add(x, 1.0), sb.add(x, 1.0)
    assert _const(a.operands[1]) is _const(c.operands[1])
    pos, neg = _const(sb.add(x, 0.0).operands[1]), _const(sb.add(x, -0.0).operands[1])
    assert pos.render() == "dense<0.000000e+00> : tensor<2xf32>"
    assert neg.render() == "dense<-0.000000e+00> : tensor<2xf32>"
    assert _const(sb.add(x, 1).operands[1]).type == x.type
    assert _const(sb.and_(p, True).operands[1]).type == p.type
    with pytest.raises(OpBuildError, match="Python int 1 does not go into"):
        sb.and_(p, 1)  # True was cached for i1: 1 is still refused


def test_a_scan_output_slice_shorter_than_its_dimension_is_refused():
    """Stacking a slice at ``dimension`` needs that many dimensions before it: XLA crashed
    the process on a rank-0 slice stacked at dimension 1 (a review)."""
    m = hlo.Module("s")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)], visibility="public")
    b = f.builder()
    init = b.constant(np.float32(0))
    with pytest.raises(OpBuildError, match="body output 0 is tensor<f32>: the outputs are "
                                           "stacked along dimension 1"):
        b.scan([f.arguments[0]], [init], 1, lambda r, x, c: (r.reduce(x, c, [0], "add"), c))
    out, _ = b.scan([f.arguments[0]], [init], 1, lambda r, x, c: (x, c))  # (rank 1: fine)
    assert out.type == hlo.tensor((2, 3), hlo.f32)


def test_a_gather_whose_dropped_dimension_slices_nothing_is_refused():
    """StableHLO allows slice size 0 on a collapsed dimension; XLA then takes the slices as
    empty while the result type keeps the other dimensions, and rejects the count (with
    constant start indices); with a kept dimension's size 0 too, jaxlib takes it."""
    dn = {"offset_dims": (0,), "collapsed_slice_dims": (0,), "start_index_map": (1,),
          "index_vector_dim": 0}
    for sizes in ([0, 2], [0, 0]):
        m = hlo.Module("g")
        f = m.add_function("main", [hlo.tensor((1, 2), hlo.f32)], visibility="public")
        b = f.builder()
        idx = b.constant(np.zeros(1, np.int32))
        if sizes[1]:
            with pytest.raises(OpBuildError, match=r"slice_sizes\[0\] = 0 on a dimension the "
                                                   "result drops"):
                b.gather(f.arguments[0], idx, dn, sizes)
            continue
        g = b.gather(f.arguments[0], idx, dn, sizes)
        assert g.type == hlo.tensor((0,), hlo.f32)
        b.return_(g)
        verify.check(m)
