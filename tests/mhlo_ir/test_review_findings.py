"""Review of issue #8 at HEAD: what still breaks the rule "bad input gets a clear Python error
naming the op, operand and expected vs actual, at build time, before jaxlib sees the text; never
text jaxlib rejects without saying why; Module.verify / verify.check never raise an internal
error".

Each test asserts the CORRECT behaviour and is marked ``xfail(strict=True)`` while the bug is
there: fixing a bug turns its test into an XPASS failure, and then the marker goes. Only one
test (the replica-group oracle) needs jaxlib, and it only parses and verifies tiny texts.
"""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir import ModuleVerificationError, OpBuildError, f32, i32, tensor

T = tensor


def new(arg_types=(), **kw):
    m = hlo.Module("review")
    f = m.add_function("main", list(arg_types), visibility="public", **kw)
    return m, f, f.builder()


def add_sum(r, a, v):
    return r.add(a, v)


# -- 1. inferred result types that are too large: raw ValueError from types.py -------------------
# OpSpec.validate calls the op's infer rule, which builds the result TensorType; its size check
# raises ValueError ("tensor<...> is too large") that nothing turns into an OpBuildError naming
# the op (iota/reshape/rng/broadcast_in_dim, whose shapes are user arguments, do say the op).

TOO_LARGE = {
    "broadcast": ([T((2,), f32)], lambda b, x: b.broadcast(x, [2**62])),
    "pad": ([T((2,), f32)], lambda b, x: b.pad(x, b.constant(np.float32(0)), [2**62], [0])),
    "pad_interior": ([T((3,), f32)],
                     lambda b, x: b.pad(x, b.constant(np.float32(0)), [0], [0], [2**62])),
    "concatenate": ([T((2**60,), f32)] * 2, lambda b, x, y: b.concatenate([x, y, x, y], 0)),
    "dot_general": ([T((2**40, 1), f32), T((1, 2**40), f32)],
                    lambda b, x, y: b.dot_general(x, y, ((1,), (0,)))),
    "reduce_window": ([T((4,), f32)], lambda b, x: b.reduce_window(
        x, b.constant(np.float32(0)), [1], add_sum, base_dilations=[2**62])),
    "all_gather": ([T((2**59,), f32)], lambda b, x: b.all_gather(x, 0, [list(range(8))])),
}


@pytest.mark.parametrize("name", sorted(TOO_LARGE))
def test_too_large_inferred_result_is_an_op_build_error(name):
    arg_types, build = TOO_LARGE[name]
    _, f, b = new(arg_types)
    op = name.split("_interior")[0]
    with pytest.raises(OpBuildError, match=f"'{op}'"):
        build(b, *f.arguments)


# -- 2. replica_groups padding (-1) that jaxlib or XLA rejects ----------------------------------
# The shared check allows -1 anywhere ("only -1 may pad a group"), but jaxlib's verifier refuses
# any -1 in all_gather / reduce_scatter / all_to_all ("Invalid replica id -1") and
# collective_broadcast ("replica_groups values must be positive"), and a group made only of
# padding makes XLA fail with INTERNAL "Instruction cannot have an empty replica group".

BAD_GROUPS = {
    "all_gather": lambda b, x: b.all_gather(x, 0, [[0, -1]]),
    "reduce_scatter": lambda b, x: b.reduce_scatter(x, 0, add_sum, [[-1]]),
    "all_to_all": lambda b, x: b.all_to_all(x, 0, 0, 1, [[-1]]),
    "collective_broadcast": lambda b, x: b.collective_broadcast(x, [[-1]]),
    "all_reduce_all_padding": lambda b, x: b.all_reduce(x, add_sum, [[-1, -1]]),
    "all_reduce_empty_group": lambda b, x: b.all_reduce(x, add_sum, [[]]),
    "cross_replica_sum_all_padding": lambda b, x: b.cross_replica_sum(x, [[-1]]),
    # jaxlib: "replica id #1 not seen in replica groups"
    "all_reduce_gap": lambda b, x: b.all_reduce(x, add_sum, [[0, 2]]),
    "all_gather_gap": lambda b, x: b.all_gather(x, 0, [[0, 2]]),
}


@pytest.mark.parametrize("name", sorted(BAD_GROUPS))
def test_replica_groups_jaxlib_rejects_are_refused_at_build(name):
    _, f, b = new([T((2,), f32)])
    with pytest.raises(OpBuildError, match="replica"):
        BAD_GROUPS[name](b, *f.arguments)


def test_oracle_jaxlib_rejects_minus_one_in_all_gather():
    """The refusal above is jaxlib's: the same text with -1 in the groups fails its verifier
    (jaxlib parse + verify only)."""
    verify = pytest.importorskip("verify")
    m, f, b = new([T((2,), f32)])
    b.return_(b.all_gather(f.arguments[0], 0, [[0, 1]]))
    text = m.to_text()
    verify.check(text)
    assert "dense<[[0, 1]]>" in text
    with pytest.raises(verify.VerificationError, match="Invalid replica id -1"):
        verify.check(text.replace("dense<[[0, 1]]>", "dense<[[0, -1]]>"))


# -- 3. locations and module-level fields are not checked -----------------------------------------

@pytest.mark.parametrize("bad", ["model.py", 3, ("model.py", 1, 2)], ids=["str", "int", "tuple"])
def test_bad_location_refused_at_build(bad):
    _, f, b = new([T((2,), f32)])
    (x,) = f.arguments
    with pytest.raises(OpBuildError, match="location"):
        b.add(x, x, location=bad)


def test_bad_module_location_is_caught():
    try:
        m = hlo.Module("m", location="model.py")
    except (OpBuildError, hlo.IRError, TypeError, ValueError):
        return  # refused when made: fine
    m.add_function("main", [], visibility="public").builder().return_()
    with pytest.raises(ModuleVerificationError, match="location"):
        m.verify()


def test_module_name_of_wrong_type_is_caught_by_verify():
    m, f, b = new()
    b.return_()
    m.name = 3
    with pytest.raises(ModuleVerificationError):
        m.verify()


def test_to_text_with_raw_attribute_value_says_what_is_wrong():
    m, f, b = new([T((2,), f32)])
    y = b.add(f.arguments[0], f.arguments[0])
    b.return_(y)
    y.attributes = {"mhlo.foo": 5}
    with pytest.raises(hlo.IRError, match="mhlo.foo"):
        m.to_text()


# -- 4. function argument attributes jaxlib rejects -------------------------------------------

def test_aliasing_output_out_of_range_is_caught():
    m, f, b = new([T((2,), f32)])
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    try:
        f.set_arg_attr(0, "tf.aliasing_output", 5)
    except (OpBuildError, hlo.IRError, ValueError, IndexError):
        return
    with pytest.raises(ModuleVerificationError, match="aliasing"):
        m.verify()


# -- 5. Python internal errors instead of an OpBuildError naming the op ---------------------------

@pytest.mark.parametrize("name", ["", 1], ids=["empty", "int"])
def test_set_attr_bad_name_names_the_op(name):
    _, f, b = new([T((2,), f32)])
    y = b.add(f.arguments[0], f.arguments[0])
    with pytest.raises(OpBuildError, match="'add'"):
        y.set_attr(name, 1)


def test_set_arg_attr_float_index_is_refused_clearly():
    _, f, b = new([T((2,), f32)])
    with pytest.raises((hlo.IRError, IndexError), match="argument"):
        f.set_arg_attr(0.0, "mhlo.x", 1)


def test_iota_int_shape_message():
    _, f, b = new()
    with pytest.raises(OpBuildError, match="list of integers|sequence"):
        b.iota(2, f32)


def test_object_array_constant_message_is_accurate():
    _, f, b = new()
    with pytest.raises(OpBuildError) as e:
        b.constant(np.array([1, 2], dtype=object))
    assert "beyond int64" not in str(e.value)


# -- 6. Python scalars and containers of the "wrong" Python class ---------------------------------

def test_scalar_subclasses_work_as_weak_scalars():
    import enum

    class Half(float):
        pass

    class K(enum.IntEnum):
        ONE = 1

    _, f, b = new([T((2,), f32), T((2,), i32)])
    x, n = f.arguments
    b.add(x, Half(0.5))
    b.add(n, K.ONE)


def test_unordered_container_refused_as_dimension_list():
    _, f, b = new([T((2, 3), f32)])
    with pytest.raises(OpBuildError, match="permutation"):
        b.transpose(f.arguments[0], {1, 0})
