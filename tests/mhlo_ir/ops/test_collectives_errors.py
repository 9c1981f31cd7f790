"""Build-time errors of the collectives, async, transfer, tuple, token and custom-call ops:
each names the op, the operand or attribute, and what was expected. Where MLIR has the same
rule, the same program written as text is shown to be rejected by jaxlib too, so our checks
are not stricter than MHLO's."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import OpBuildError
from mhlo_ir.mhlo_attributes import ChannelHandle
from tests.mhlo_ir.ops.cases import module
from tests.oracle import parse

f32, i32 = hlo.f32, hlo.i32
T4 = hlo.tensor((4,), f32)


def _build(arg_types, body):
    return module(arg_types, body)


def _add(bb, p, q):
    return bb.add(p, q)


def _mlir_rejects(text_body, args="%a: tensor<4xf32>", match=""):
    text = (f"func.func @f({args}) {{\n  {text_body}\n  \"func.return\"() : () -> ()\n}}")
    with pytest.raises(Exception, match=match):
        parse(text)


# -- replica groups, channels ---------------------------------------------------------------

def test_replica_groups_with_a_repeated_replica():
    with pytest.raises(OpBuildError, match=r"'all_reduce' replica_groups names replica 0 more "
                                           r"than once"):
        _build([T4], lambda b, x: b.all_reduce(x, _add, replica_groups=[[0, 0]]))
    _mlir_rejects('%0 = "mhlo.all_reduce"(%a) ({\n^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
                  '"mhlo.return"(%x) : (tensor<f32>) -> ()\n}) {replica_groups = dense<[[0, 0]]>'
                  ' : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>',
                  match="seen more than once")


def test_ragged_replica_groups_ask_for_padding():
    with pytest.raises(OpBuildError, match=r"all_gather.*replica_groups rows must all have the "
                                           r"same length \(pad short groups with -1\)"):
        _build([T4], lambda b, x: b.all_gather(x, 0, replica_groups=[[0, 1], [2]]))


def test_negative_replica_id_other_than_padding():
    with pytest.raises(OpBuildError, match=r"negative id -2"):
        _build([T4], lambda b, x: b.cross_replica_sum(x, [[0, -2]]))


def test_use_global_device_ids_needs_a_channel():
    with pytest.raises(OpBuildError, match=r"'all_reduce' use_global_device_ids needs a "
                                           r"channel_handle with a positive handle"):
        _build([T4], lambda b, x: b.all_reduce(x, _add, replica_groups=[[0, 1]],
                                               use_global_device_ids=True))
    _mlir_rejects('%0 = "mhlo.all_reduce"(%a) ({\n^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
                  '"mhlo.return"(%x) : (tensor<f32>) -> ()\n}) {replica_groups = dense<[[0, 1]]>'
                  ' : tensor<1x2xi64>, use_global_device_ids} : (tensor<4xf32>) -> '
                  'tensor<4xf32>', match="channel_id must be positive")


def test_channel_handle_forms():
    m = _build([T4], lambda b, x: b.collective_permute(x, [[0, 1]], channel_handle=(5, 1)))
    assert "#mhlo.channel_handle<handle = 5, type = 1>" in m.to_text()
    with pytest.raises(OpBuildError, match=r"'collective_permute' attribute channel_handle: "
                                           r"expected a ChannelHandle"):
        _build([T4], lambda b, x: b.collective_permute(x, [[0, 1]], channel_handle="x"))


# -- all_reduce, reduce_scatter regions --------------------------------------------------------

def test_all_reduce_region_of_the_wrong_type():
    with pytest.raises(OpBuildError, match=r"'all_reduce' computation takes tensor<i32>, which "
                                           r"operands of element type f32 cannot be promoted"):
        _build([T4], lambda b, x: b.create("all_reduce", ([x],), {"replica_groups": [[0, 1]]},
                                           regions=[b.region([hlo.tensor((), i32)] * 2,
                                                             lambda bb, p, q: p)]))


def test_all_reduce_region_taking_three_arguments():
    s = hlo.tensor((), f32)
    with pytest.raises(OpBuildError, match=r"'all_reduce' computation must take two scalars of "
                                           r"one type, got \(tensor<f32>, tensor<f32>, "
                                           r"tensor<f32>\)"):
        _build([T4], lambda b, x: b.create("all_reduce", ([x],), {"replica_groups": [[0, 1]]},
                                           regions=[b.region([s] * 3, lambda bb, p, q, r: p)]))


def test_all_reduce_region_returning_the_wrong_type():
    with pytest.raises(OpBuildError, match=r"'all_reduce' computation returns \(tensor<i1>\), "
                                           r"expected \(tensor<f32>\)"):
        _build([T4], lambda b, x: b.all_reduce(x, lambda bb, p, q: bb.compare(p, q, "LT"),
                                               replica_groups=[[0, 1]]))


def test_all_reduce_operands_of_different_element_types():
    with pytest.raises(OpBuildError, match=r"'all_reduce' operands must share one element type: "
                                           r"operands\[1\] is tensor<4xi32>"):
        _build([T4, hlo.tensor((4,), i32)], lambda b, x, y: b.all_reduce(
            [x, y], _add, replica_groups=[[0, 1]]))


def test_reduce_scatter_dimension_not_divisible():
    with pytest.raises(OpBuildError, match=r"'reduce_scatter' operand dimension 0 \(size 4\) is "
                                           r"not divisible by the group size 3"):
        _build([T4], lambda b, x: b.reduce_scatter(x, 0, _add, replica_groups=[[0, 1, 2]]))


def test_reduce_scatter_wrong_explicit_result():
    with pytest.raises(OpBuildError, match=r"'reduce_scatter' result tensor<4xf32> should have "
                                           r"shape \[2\]"):
        _build([T4], lambda b, x: b.reduce_scatter(x, 0, _add, replica_groups=[[0, 1]],
                                                   result_type=T4))


def test_reduce_scatter_dimension_out_of_range():
    with pytest.raises(OpBuildError, match=r"'reduce_scatter' scatter_dimension 1 is out of "
                                           r"range for an operand of rank 1"):
        _build([T4], lambda b, x: b.reduce_scatter(x, 1, _add, replica_groups=[[0, 1]]))


# -- all_gather, all_to_all --------------------------------------------------------------------

def test_all_gather_infers_with_groups_and_needs_types_without():
    m = _build([hlo.tensor((2, 3), f32)], lambda b, x: b.all_gather(x, 1, [[0, 1, 2]]))
    assert "-> tensor<2x9xf32>" in m.to_text()
    with pytest.raises(OpBuildError, match=r"'all_gather' cannot infer its result types with "
                                           r"empty replica_groups .*: pass result_types"):
        _build([T4], lambda b, x: b.all_gather(x, 0))


def test_all_gather_wrong_result_type():
    with pytest.raises(OpBuildError, match=r"'all_gather' results \(tensor<12xf32>\) differ "
                                           r"from the inferred \(tensor<8xf32>\)"):
        _build([T4], lambda b, x: b.all_gather(x, 0, [[0, 1]],
                                               result_types=[hlo.tensor((12,), f32)]))


def test_all_gather_dim_out_of_range():
    with pytest.raises(OpBuildError, match=r"'all_gather' all_gather_dim 2 is out of range"):
        _build([T4], lambda b, x: b.all_gather(x, 2, [[0, 1]]))


def test_all_to_all_split_count_differs_from_group_size():
    with pytest.raises(OpBuildError, match=r"'all_to_all' split_count 4 differs from the group "
                                           r"size 2"):
        _build([T4], lambda b, x: b.all_to_all(x, 0, 0, 4, [[0, 1]]))
    _mlir_rejects('%0 = "mhlo.all_to_all"(%a) {split_dimension = 0 : i64, concat_dimension = 0 '
                  ': i64, split_count = 4 : i64, replica_groups = dense<[[0, 1]]> : '
                  'tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>',
                  match="group size of replica_groups must be 4")


def test_all_to_all_split_not_divisible():
    with pytest.raises(OpBuildError, match=r"'all_to_all' operands\[0\] dimension 0 \(size 4\) "
                                           r"is not divisible by split_count 3"):
        _build([T4], lambda b, x: b.all_to_all(x, 0, 0, 3, [[0, 1, 2]]))


def test_all_to_all_several_operands_with_split_attributes():
    with pytest.raises(OpBuildError, match=r"'all_to_all' with split_dimension it takes exactly "
                                           r"one operand, got 2"):
        _build([T4, T4], lambda b, x, y: b.all_to_all([x, y], 0, 0, 2, [[0, 1]]))


def test_all_to_all_partial_split_attributes():
    with pytest.raises(OpBuildError, match=r"'all_to_all' split_dimension, concat_dimension and "
                                           r"split_count go together; got only split_dimension"):
        _build([T4], lambda b, x: b.create("all_to_all", ([x],), {
            "split_dimension": 0, "replica_groups": [[0]]}))


# -- collective_permute ------------------------------------------------------------------------

def test_collective_permute_duplicate_targets():
    with pytest.raises(OpBuildError, match=r"'collective_permute' source_target_pairs has "
                                           r"duplicate targets: \[1, 1\]"):
        _build([T4], lambda b, x: b.collective_permute(x, [[0, 1], [2, 1]]))
    _mlir_rejects('%0 = "mhlo.collective_permute"(%a) {source_target_pairs = dense<[[0, 1], '
                  '[2, 1]]> : tensor<2x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>',
                  match="duplicate targets")


def test_collective_permute_pairs_not_pairs():
    with pytest.raises(OpBuildError, match=r"'collective_permute' attribute source_target_pairs: "
                                           r"source_target_pairs must be pairs"):
        _build([T4], lambda b, x: b.collective_permute(x, [[0, 1, 2]]))


# -- transfers, async, tuples, custom calls -------------------------------------------------

def test_send_needs_a_token():
    with pytest.raises(OpBuildError, match=r"'send' operand token must be a token, got "
                                           r"tensor<4xf32>"):
        _build([T4], lambda b, x: b.add_dependency(x, b.send([x], x, 1)))


def test_recv_results_end_with_a_token():
    with pytest.raises(OpBuildError, match=r"'recv' results must end with a token"):
        _build([T4], lambda b, x: b.create("recv", (b.create_token(),),
                                           {"channel_handle": 1}, [T4]).results[0])


def test_infeed_layout_count():
    with pytest.raises(OpBuildError, match=r"'infeed' layout has 2 entries, expected 1"):
        _build([T4], lambda b, x: b.infeed(b.create_token(), [T4], layout=[[0], [0]])[0])


def test_add_dependency_operand_order():
    with pytest.raises(OpBuildError, match=r"'add_dependency' operand must be a tensor, got "
                                           r"!token"):
        _build([T4], lambda b, x: b.add_dependency(b.create_token(), b.create_token()))


def test_fusion_kind_and_domain_kind_values():
    with pytest.raises(OpBuildError, match=r"'fusion' attribute fusion_kind: fusion_kind: "
                                           r"'kFoo' is not one of kLoop, kInput, kOutput, "
                                           r"kCustom"):
        _build([T4], lambda b, x: b.fusion([x], lambda bb, p: p, fusion_kind="kFoo"))
    with pytest.raises(OpBuildError, match=r"'domain' attribute kind: kind: 'none' is not one "
                                           r"of sharding"):
        _build([T4], lambda b, x: b.domain(x, "{replicated}", "{replicated}", kind="none"))


def test_composite_inputs_must_match_the_decomposition():
    m = hlo.Module("m")
    dec = m.add_function("dec", [T4], visibility="private")
    db = dec.builder()
    db.return_(dec.arguments[0])
    f = m.add_function("main", [hlo.tensor((4,), i32)], visibility="public")
    with pytest.raises(OpBuildError, match=r"'composite' inputs \(tensor<4xi32>\) do not match "
                                           r"@dec's arguments \(tensor<4xf32>\)"):
        f.builder().composite("my.op", [f.arguments[0]], dec)


def test_async_start_thread_and_bundle():
    m = hlo.Module("m")
    callee = m.add_function("c", [T4], visibility="private",
                            attributes={"execution_thread": "other"})
    cb = callee.builder()
    cb.return_(callee.arguments[0])
    f = m.add_function("main", [T4], visibility="public")
    b = f.builder()
    with pytest.raises(OpBuildError, match=r"'async_start' execution_thread 'main' differs from "
                                           r"@c's 'other'"):
        b.async_start([f.arguments[0]], callee)
    with pytest.raises(OpBuildError, match=r"'async_done' operand bundle must be an async "
                                           r"bundle"):
        b.async_done(f.arguments[0])


# -- jaxlib behaviour the op table documents -------------------------------------------------

def test_collective_broadcast_does_not_compile_on_cpu():
    """The collective_broadcast not_run reason, measured: XLA:CPU has no collective-broadcast."""
    m = _build([T4], lambda b, x: b.collective_broadcast(x, [[0, 1]]))
    with pytest.raises(verify.CompileError, match="collective-broadcast"):
        verify.compile(m, num_replicas=2)


def test_send_does_not_compile_on_cpu():
    m = _build([T4], lambda b, x: b.add_dependency(x, b.send([x], b.create_token(), 1)))
    with pytest.raises(verify.CompileError, match="send"):
        verify.compile(m)


def test_variadic_all_reduce_with_a_channel_fails_xla_cpu_layout_assignment():
    """jaxlib 0.10 quirk: a variadic all_reduce with a channel_handle is valid MHLO (jaxlib
    verifies it) but XLA:CPU cannot compile it ("LogicalBuffer ... does not have a layout");
    without the channel, or with one operand, it runs (see cases_collectives.py). This test
    fails once jaxlib fixes it, telling us to add a running case."""
    m = _build([T4, T4], lambda b, x, y: b.all_reduce(
        [x, y], _add, replica_groups=[[0, 1]], channel_handle=ChannelHandle(1, 1)))
    verify.check(m)
    with pytest.raises(verify.CompileError, match="does not have a layout"):
        verify.compile(m, num_replicas=2)


def test_replica_id_inside_a_replicated_while_loop():
    """replica_id and all_reduce in a loop body: replica d adds d each trip, then all replicas
    sum their counters."""
    def body(b, x):
        r = b.convert(b.replica_id(), i32)

        def step(bb, i, acc):
            return bb.add(i, bb.constant(np.int32(1))), bb.add(acc, r)
        _, acc = b.while_([b.constant(np.int32(0)), x],
                          lambda bb, i, acc: bb.compare(i, bb.constant(np.int32(3)), "LT"), step)
        return b.all_reduce(acc, _add, replica_groups=[[0, 1, 2]])
    m = _build([hlo.tensor((), i32)], body)
    exe = verify.compile(m, num_replicas=3)
    (out,) = exe.run_sharded([[np.int32(10 * d)] for d in range(3)])
    assert [int(o) for o in out] == [30 + 3 * 3] * 3
