"""Programs built, then edited by hand through the public structures (renames, the lists of
functions and ops), then handed to jaxlib: the links up the tree that such edits leave behind
(the symbol table, an op's block) must not decide what is refused or run (a review of
2026-12-07: a renamed @main aborted XLA past the refusal meant for it; a valid op moved out of
a loop was refused, an invalid one moved in reached XLA)."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.errors import IRError, ModuleVerificationError
from mhlo_ir.quant import quantized
from mhlo_ir.quant_lowering import lower_quantized
from verify.errors import CompileError

T3 = hlo.tensor((3,), hlo.f32)
X = np.array([1.0, -2.0, 3.5], np.float32)


def test_a_function_renamed_to_main_is_the_one_that_runs():
    m = hlo.Module("renamed")
    f = m.add_function("entry", [T3], visibility="public")
    b = f.builder()
    b.return_(b.add(f.arguments[0], f.arguments[0]))
    f.name = "main"
    assert m.lookup("main") is f and m.lookup("entry") is None
    np.testing.assert_array_equal(verify.run(m, X)[0], X + X)


def test_swapped_names_keep_the_refusal_of_a_tiled_main_result():
    # jaxlib aborts the process compiling this @main for 2 replicas x 2 partitions (measured:
    # "Check failed: TotalNumTiles() == devices"); the refusal must find @main by its name
    # now, not by the name it had when it was added.
    m = hlo.Module("swapped")
    old = m.add_function("main", [hlo.tensor((4,), hlo.f32)], visibility="public")
    old.builder().return_(old.arguments[0])
    real = m.add_function("real", [hlo.tensor((4,), hlo.f32)], visibility="public",
                          res_attrs=[{"mhlo.sharding": "{devices=[2]0,1}"}])
    b = real.builder()
    b.return_(b.add(real.arguments[0], real.arguments[0]))
    old.name, real.name = "old", "main"
    assert m.lookup("main") is real
    with pytest.raises(CompileError, match="tiled sharding"):
        verify.compile(m, num_replicas=2, num_partitions=2)


def test_a_function_removed_from_the_list_frees_its_name():
    m = hlo.Module("replaced")
    old = m.add_function("main", [T3], visibility="public")
    old.builder().return_(old.arguments[0])
    m.functions.remove(old)
    assert m.lookup("main") is None
    new = m.add_function("main", [T3], visibility="public")
    b = new.builder()
    b.return_(b.negate(new.arguments[0]))
    assert new.name == "main" and m.lookup("main") is new
    np.testing.assert_array_equal(verify.run(m, X)[0], -X)


def test_a_function_listed_by_hand_is_found():
    m = hlo.Module("listed")
    f = hlo.Function("main", [T3])
    b = f.builder()
    b.return_(b.abs(f.arguments[0]))
    m.functions.append(f)
    assert m.lookup("main") is f and f.module is m
    np.testing.assert_array_equal(verify.run(m, X)[0], np.abs(X))


def test_a_rename_onto_a_taken_name_is_reported_by_verify():
    m = hlo.Module("twice")
    a = m.add_function("main", [T3])
    a.builder().return_(a.arguments[0])
    g = m.add_function("g", [T3], visibility="private")
    g.builder().return_(g.arguments[0])
    g.name = "main"
    assert m.lookup("main") is a  # (the first keeps it, as the list says)
    with pytest.raises(ModuleVerificationError, match="@main is defined twice"):
        m.verify()


def _loop_with_domain_in_body():
    """@main: a while loop whose body holds a domain; returns (module, main, domain)."""
    m = hlo.Module("moved")
    f = m.add_function("main", [T3], visibility="public")
    b = f.builder()
    made = {}

    def cond(w, i, a):
        return w.compare(i, w.constant(np.int32(2)), "LT")

    def body(w, i, a):
        made["d"] = d = w.domain(a, "{replicated}", "{replicated}")
        return [w.add(i, w.constant(np.int32(1))), w.add(d, a)]
    _, acc = b.while_([b.constant(np.int32(0)), f.arguments[0]], cond, body)
    b.return_(acc)
    return m, f, made["d"]


def test_an_op_moved_out_of_a_loop_by_hand_is_judged_where_it_is_now():
    m, f, d = _loop_with_domain_in_body()
    body = d.parent
    user = next(o for o in body.operations if d in o.operands)
    body.operations.remove(d)
    user.operands = (body.arguments[1], body.arguments[1])
    d.operands = (f.arguments[0],)
    ops = f.entry_block.operations
    ops.insert(len(ops) - 1, d)
    ops[-1].operands = (d,)
    # XLA:CPU runs a domain outside loops (verify refuses one inside: see the next test)
    np.testing.assert_array_equal(verify.run(m, X)[0], X)
    assert d.parent is f.entry_block


def test_an_op_moved_into_a_loop_by_hand_is_refused_in_python():
    m = hlo.Module("moved_in")
    f = m.add_function("main", [T3], visibility="public")
    b = f.builder()
    d = b.domain(f.arguments[0], "{replicated}", "{replicated}")

    def cond(w, i, a):
        return w.compare(i, w.constant(np.int32(2)), "LT")

    def body(w, i, a):
        return [w.add(i, w.constant(np.int32(1))), w.add(a, a)]
    _, acc = b.while_([b.constant(np.int32(0)), f.arguments[0]], cond, body)
    b.return_(acc)
    ops = f.entry_block.operations
    ops.remove(d)
    loop = next(o for o in ops if o.spec.name == "while")
    loop_body = loop.regions[1].blocks[0]
    d.operands = (loop_body.arguments[1],)
    loop_body.operations.insert(0, d)
    ret = loop_body.operations[-1]
    ret.operands = (ret.operands[0], d)
    # jaxlib: "UNIMPLEMENTED: Unhandled opcode for elemental IR emission: domain"
    with pytest.raises(CompileError, match="'domain' inside a while loop"):
        verify.run(m, X)


def test_printing_a_value_of_another_module_names_the_op_and_operand():
    other = hlo.Module("other")
    g = other.add_function("main", [T3])
    g.builder().return_(g.arguments[0])
    m = hlo.Module("m")
    f = m.add_function("main", [T3])
    b = f.builder()
    s = b.add(f.arguments[0], f.arguments[0])
    b.return_(s)
    s.operands = (f.arguments[0], g.arguments[0])
    with pytest.raises(IRError, match="op 'add'.*operand 1.*not defined in this module"):
        m.to_text()


def test_a_quantized_op_lowered_away_keeps_its_sharding():
    q = quantized(hlo.i8, hlo.f32, 0.5, -3)
    m = hlo.Module("q", attributes={"mhlo.num_partitions": 2})
    f = m.add_function("main", [hlo.tensor((4,), hlo.f32)], visibility="public")
    b = f.builder()
    d = b.uniform_dequantize(b.uniform_quantize(f.arguments[0], q))
    d.set_attr("mhlo.sharding", "{replicated}")
    d.set_attr("mhlo.frontend_attributes", {"_xla_stream_annotation": "1"})
    b.return_(d)
    lowered = lower_quantized(m)
    result = lowered.lookup("main").entry_block.operations[-1].operands[0].owner
    assert result.attr("mhlo.sharding") == d.attr("mhlo.sharding")
    assert result.attr("mhlo.frontend_attributes") == d.attr("mhlo.frontend_attributes")
    verify.check(lowered)  # (jaxlib takes the annotated lowering)
    # and the source module is unchanged
    assert m.lookup("main").entry_block.operations[-2] is d
