"""Nothing after a terminator (mhlo_ir/terminated.py): ops built after ``return_`` are
refused when built, hand edits of the op list are the user's (they disarm the refusal and
``Module.verify`` judges the result), and jaxlib rejects such text too.
"""

from __future__ import annotations

import re

import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import OpBuildError, f32, tensor


def E(*parts):
    """A regex matching the message parts in order, each taken literally."""
    return ".*".join(re.escape(p) for p in parts)


def test_ops_after_return_are_refused():
    m = hlo.Module("term")
    f = m.add_function("main", [tensor((2,), f32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    y = b.add(x, x)
    b.return_(y)
    msg = "cannot be added: the block already ends with 'func.return'"
    for build, name in [(lambda: b.add(x, x), "add"), (lambda: b.negate(x), "negate"),
                        (lambda: b.constant(1.0), "constant"),
                        (lambda: b.broadcast_in_dim(x, [3, 2], [1]), "broadcast_in_dim"),
                        (lambda: b.create("abs", (x,)), "abs"),
                        (lambda: b.return_(y), "func.return")]:
        with pytest.raises(OpBuildError, match=E(f"'{name}' {msg}", "build it before return_")):
            build()
    assert len(f.entry_block.operations) == 2
    verify.check(m)  # what was built is still a valid module


def test_region_terminators_refuse_too():
    b = hlo.Module("m").add_function("main", [tensor((2,), f32)]).builder()
    (x,) = b.function.arguments

    def body(r, a, c):
        r.return_(r.add(a, c))
        r.multiply(a, c)

    with pytest.raises(OpBuildError, match=E("'multiply' cannot be added: the block already "
                                             "ends with 'return'")):
        b.reduce(x, b.constant(0.0), [0], body)

    def twice(r, a, c):
        r.return_(r.add(a, c))
        return a  # region() would append a second return

    with pytest.raises(OpBuildError, match=E("'return' cannot be added")):
        b.reduce(x, b.constant(0.0), [0], twice)


def test_hand_edits_before_the_terminator_still_work():
    """Inserting before the terminator (or any hand edit of the list) is not the builder's:
    it works, and Module.verify reports an op left after the terminator."""
    m = hlo.Module("edit")
    f = m.add_function("main", [tensor((2,), f32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    neg = b.negate(x)
    b.return_(neg)
    ops = f.entry_block.operations
    ops.insert(0, ops.pop(0))  # a hand edit
    verify.check(m)
    ops.append(ops.pop(0))  # the negate now after the return: the verifier's business
    with pytest.raises(hlo.ModuleVerificationError, match="terminator must be the last op"):
        m.verify()


def test_jaxlib_rejects_ops_after_a_terminator():
    text = ("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  \"func.return\"(%a) : (tensor<2xf32>) -> ()\n"
            "  %0 = \"mhlo.negate\"(%a) : (tensor<2xf32>) -> tensor<2xf32>\n}\n")
    with pytest.raises(verify.VerificationError):
        verify.check(text)


def test_every_hand_edit_of_a_terminated_op_list_disarms_it():
    """sort with a key and ``*=`` are edits like the others: the list takes them and
    Module.verify judges the result."""
    t = hlo.tensor((2,), hlo.f32)
    m = hlo.Module("m")
    f = m.add_function("main", [t])
    b = f.builder()
    y = b.negate(f.arguments[0])
    b.return_(y)
    ops = f.entry_block.operations
    ops.sort(key=lambda op: op.spec.name)  # func.return sorts before negate
    assert [op.spec.name for op in ops] == ["func.return", "negate"]
    ops.append(b.abs(f.arguments[0]))       # disarmed: appending is the user's business
    with pytest.raises(hlo.ModuleVerificationError):
        m.verify()
    m2 = hlo.Module("m")
    f2 = m2.add_function("main", [t])
    b2 = f2.builder()
    b2.return_(f2.arguments[0])
    ops2 = f2.entry_block.operations
    ops2 *= 2
    assert len(ops2) == 2
    with pytest.raises(hlo.ModuleVerificationError):
        m2.verify()
