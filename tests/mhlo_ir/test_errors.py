"""Build-time errors: every check of the builder and the op table names the op, the operand or
attribute at fault, and what was expected versus what was given.

Each case builds into a fresh function over a few typed arguments and must raise. Patterns are
regular expressions over the whole message; literal pieces go through ``re.escape``.
Checks that the builder's converters make unreachable from ``create`` (a non-dense ``value``,
a non-symbol ``callee``) are hit by calling the op table's rules directly, as the module
verifier does on ops edited after building.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir import OpBuildError, f32, i1, i32, tensor
from mhlo_ir.ops import lookup
from mhlo_ir.ops.control_flow import region_returns


@pytest.fixture
def env():
    m = hlo.Module("errors")
    f = m.add_function("main", [tensor((2,), f32), tensor((2,), i32), tensor((3,), f32),
                                tensor((2, 3), f32), tensor((4, 3), f32), tensor((), f32)],
                       visibility="public")
    b = f.builder()
    x, xi, x3, x23, x43, s = f.arguments
    callee = m.add_function("callee", [tensor((2,), f32)])
    callee.builder().return_(callee.arguments[0])
    return SimpleNamespace(m=m, f=f, b=b, x=x, xi=xi, x3=x3, x23=x23, x43=x43, s=s,
                           callee=callee)


def E(*parts):
    """A pattern matching the literal ``parts`` in order, anything in between."""
    return ".*".join(re.escape(p) for p in parts)


def _zero(b, dtype=np.float32):
    return b.constant(dtype(0))


def _add(bb, a, e):
    return bb.add(a, e)


DOT = dict(lhs_batching_dimensions=(), rhs_batching_dimensions=(),
           lhs_contracting_dimensions=(0,), rhs_contracting_dimensions=(0,))

# (id, build(env), pattern): each must raise OpBuildError whose message matches the pattern.
CASES = [
    # -- elementwise ---------------------------------------------------------------------------
    ("add_element_types", lambda e: e.b.add(e.x, e.xi),
     E("'add'", "lhs and rhs", "same element type", "tensor<2xf32>", "tensor<2xi32>")),
    ("add_shapes", lambda e: e.b.add(e.x, e.x3),
     E("'add'", "lhs and rhs", "same shape", "tensor<2xf32>", "tensor<3xf32>")),
    ("add_numpy_operand", lambda e: e.b.add(e.x, np.ones(2, np.float32)),
     E("'add'", "operand rhs must be a Value", "or a Python scalar", "ndarray",
       "b.constant(...)")),
    ("add_python_operand", lambda e: e.b.multiply(e.xi, 2.0),  # 2.0 into f32 works: weak type
     E("'multiply'", "operand rhs: Python float 2.0 does not go into lhs's type tensor<2xi32>")),
    ("tuple_operand", lambda e: e.b.add(e.b.tuple([e.x]), e.b.tuple([e.x])),
     E("'add'", "operand lhs must be a tensor", "tuple<tensor<2xf32>>")),
    ("token_operand", lambda e: e.b.negate(e.b.create_token()),
     E("'negate'", "operand operand must be a tensor", "!token")),
    ("unary_kind", lambda e: e.b.not_(e.x),
     E("'not'", "operand operand", "i1 or signless integer or unsigned integer", "tensor<2xf32>")),
    ("unary_float_only", lambda e: e.b.floor(e.xi),
     E("'floor'", "operand operand", "float elements", "tensor<2xi32>")),
    ("binary_kind", lambda e: e.b.shift_left(e.x, e.x),
     E("'shift_left'", "operand lhs", "integer", "tensor<2xf32>")),
    ("subtract_bool", lambda e: (lambda p: e.b.subtract(p, p))(e.b.compare(e.x, e.x, "GT")),
     E("'subtract'", "operand lhs", "signless integer or unsigned integer or float or complex",
       "tensor<2xi1>")),
    ("complex_of_ints", lambda e: e.b.complex(e.xi, e.xi),
     E("'complex'", "operand lhs", "float", "tensor<2xi32>")),
    ("complex_of_f16", lambda e: (lambda h: e.b.complex(h, h))(e.b.convert(e.x, hlo.f16)),
     E("'complex'", "operand lhs", "f32 or f64", "tensor<2xf16>")),
    ("compare_types", lambda e: e.b.compare(e.x, e.xi, "GT"),
     E("'compare'", "lhs and rhs", "same type", "tensor<2xf32>", "tensor<2xi32>")),
    ("compare_direction_via_create",
     lambda e: e.b.create("compare", (e.x, e.x), {"comparison_direction": "BAD"}),
     E("'compare'", "comparison_direction", "'BAD'", "EQ, NE, GE, GT, LE, LT")),
    ("compare_type_via_create",
     lambda e: e.b.create("compare", (e.x, e.x), {"comparison_direction": "GT",
                                                  "compare_type": "WRONG"}),
     E("'compare'", "compare_type", "'WRONG'", "FLOAT")),
    ("compare_missing_direction", lambda e: e.b.create("compare", (e.x, e.x)),
     E("'compare' requires attribute comparison_direction")),
    ("select_pred_type", lambda e: e.b.select(e.x, e.x, e.x),
     E("'select'", "operand pred", "i1", "tensor<2xf32>")),
    ("select_branches", lambda e: e.b.select(e.b.compare(e.x, e.x, "GT"), e.x, e.xi),
     E("'select'", "on_true and on_false", "same type", "tensor<2xf32>", "tensor<2xi32>")),
    ("select_pred_shape", lambda e: e.b.select(e.b.compare(e.x3, e.x3, "GT"), e.x, e.x),
     E("'select'", "operand pred", "scalar or have shape [2]", "tensor<3xi1>")),
    ("clamp_element_type", lambda e: e.b.clamp(e.xi, e.x, e.x),
     E("'clamp'", "operand min", "element type f32", "tensor<2xi32>")),
    ("clamp_shape", lambda e: e.b.clamp(e.x, e.x, e.x3),
     E("'clamp'", "operand max", "scalar or have shape [2]", "tensor<3xf32>")),
    ("convert_shape",
     lambda e: e.b.create("convert", (e.x,), result_types=(tensor((3,), i32),)),
     E("'convert'", "result", "shape [2]", "tensor<3xi32>")),
    ("convert_of_tuple", lambda e: e.b.convert(e.b.tuple([e.x]), i32),
     E("'convert'", "operand must be a tensor Value", "tuple<tensor<2xf32>>")),
    # -- data movement -------------------------------------------------------------------------
    ("constant_not_dense",
     lambda e: hlo.OP_TABLE["constant"].infer("constant", (), {"value": hlo.i32_attr(1)}),
     E("'constant'", "attribute value", "dense elements", "IntegerAttr")),
    ("iota_rank0", lambda e: e.b.iota((), f32),
     E("'iota'", "rank at least 1", "tensor<f32>")),
    ("iota_dimension", lambda e: e.b.iota((2, 3), f32, 2),
     E("'iota'", "iota_dimension 2", "out of range", "tensor<2x3xf32>", "rank 2")),
    ("iota_negative_dimension", lambda e: e.b.iota((2,), f32, -1),
     E("'iota'", "iota_dimension -1", "out of range")),
    ("iota_bool", lambda e: e.b.iota((2,), i1),
     E("'iota'", "integer, float or complex", "tensor<2xi1>")),
    ("iota_not_tensor",
     lambda e: e.b.create("iota", (), {"iota_dimension": 0}, (hlo.token(),)),
     E("'iota'", "result must be a tensor", "!token")),
    ("broadcast_dim_out_of_range", lambda e: e.b.broadcast_in_dim(e.x, (2, 3), [2]),
     E("'broadcast_in_dim'", "broadcast_dimensions[0] = 2", "out of range",
       "tensor<2x3xf32>", "rank 2")),
    ("broadcast_dim_negative", lambda e: e.b.broadcast_in_dim(e.x, (2, 3), [-1]),
     E("'broadcast_in_dim'", "broadcast_dimensions[0] = -1", "out of range")),
    ("broadcast_dim_count", lambda e: e.b.broadcast_in_dim(e.x, (2, 3), [0, 1]),
     E("'broadcast_in_dim'", "broadcast_dimensions has 2 entries, expected 1",
       "tensor<2xf32>")),
    ("broadcast_size", lambda e: e.b.broadcast_in_dim(e.x, (3, 4), [1]),
     E("'broadcast_in_dim'", "operand dimension 0 has size 2, expected 1 or 4",
       "result dimension 1")),
    ("broadcast_repeated", lambda e: e.b.broadcast_in_dim(e.x23, (2, 3, 3), [1, 1]),
     E("'broadcast_in_dim'", "broadcast_dimensions [1, 1]", "repeated")),
    ("broadcast_element_type",
     lambda e: e.b.create("broadcast_in_dim", (e.x,), {"broadcast_dimensions": [0]},
                          (tensor((2,), i32),)),
     E("'broadcast_in_dim'", "result must be a tensor of f32", "tensor<2xi32>")),
    ("broadcast_missing_attr",
     lambda e: e.b.create("broadcast_in_dim", (e.x,), {}, (tensor((2,), f32),)),
     E("'broadcast_in_dim' requires attribute broadcast_dimensions")),
    ("reshape_count", lambda e: e.b.reshape(e.x23, (5,)),
     E("'reshape'", "tensor<5xf32> has 5 elements, expected 6", "tensor<2x3xf32>")),
    ("reshape_element_type",
     lambda e: e.b.create("reshape", (e.x,), result_types=(tensor((2,), i32),)),
     E("'reshape'", "result must be a tensor of f32", "tensor<2xi32>")),
    ("reshape_needs_result", lambda e: e.b.create("reshape", (e.x,)),
     E("'reshape' cannot infer its result types")),
    ("transpose_repeated", lambda e: e.b.transpose(e.x23, [0, 0]),
     E("'transpose'", "permutation [0, 0]", "not a permutation of 0..1", "tensor<2x3xf32>")),
    ("transpose_length", lambda e: e.b.transpose(e.x23, [1, 0, 2]),
     E("'transpose'", "permutation [1, 0, 2]", "not a permutation of 0..1")),
    ("slice_out_of_bounds", lambda e: e.b.slice(e.x, [0], [3]),
     E("'slice'", "dimension 0", "limit (3) <= size (2)", "tensor<2xf32>")),
    ("slice_start_after_limit", lambda e: e.b.slice(e.x, [2], [1]),
     E("'slice'", "dimension 0", "start (2) <= limit (1)")),
    ("slice_negative_start", lambda e: e.b.slice(e.x, [-1], [1]),
     E("'slice'", "dimension 0", "0 <= start (-1)")),
    ("slice_zero_stride", lambda e: e.b.slice(e.x, [0], [2], [0]),
     E("'slice'", "strides[0] = 0", "positive")),
    ("slice_negative_stride", lambda e: e.b.slice(e.x23, [0, 0], [2, 3], [1, -1]),
     E("'slice'", "strides[1] = -1", "positive")),
    ("slice_rank", lambda e: e.b.slice(e.x, [0, 0], [2, 2]),
     E("'slice'", "start_indices has 2 entries, expected 1", "tensor<2xf32>")),
    ("slice_strides_rank", lambda e: e.b.slice(e.x, [0], [2], [1, 1]),
     E("'slice'", "strides has 2 entries, expected 1")),
    ("concatenate_element_type", lambda e: e.b.concatenate([e.x, e.xi], 0),
     E("'concatenate'", "inputs[1]", "element type i32, expected f32")),
    ("concatenate_shape", lambda e: e.b.concatenate([e.x23, e.x43], 1),
     E("'concatenate'", "inputs[1]", "shape [4, 3]", "differs from [2, 3]",
       "outside dimension 1")),
    ("concatenate_rank", lambda e: e.b.concatenate([e.x23, e.x], 0),
     E("'concatenate'", "inputs[1]", "shape [2]", "[2, 3]")),
    ("concatenate_dimension", lambda e: e.b.concatenate([e.x, e.x], 1),
     E("'concatenate'", "dimension 1", "out of range", "rank 1")),
    ("concatenate_negative_dimension", lambda e: e.b.concatenate([e.x, e.x], -1),
     E("'concatenate'", "dimension -1", "out of range")),
    ("concatenate_empty", lambda e: e.b.concatenate([], 0),
     E("'concatenate'", "at least one operand")),
    ("concatenate_bad_attribute",
     lambda e: e.b.create("concatenate", ([e.x],), {"dimension": "abc"}),
     E("'concatenate'", "attribute dimension", "'abc'")),
    # -- dot_general ---------------------------------------------------------------------------
    ("dot_contracting_sizes", lambda e: e.b.dot_general(e.x23, e.x, ((1,), (0,))),
     E("'dot_general'", "contracting dimensions differ in size",
       "lhs dimension 1 has size 3", "rhs dimension 0 has size 2")),
    ("dot_batching_sizes", lambda e: e.b.dot_general(e.x23, e.x43, ((1,), (1,)), ((0,), (0,))),
     E("'dot_general'", "batching dimensions differ in size",
       "lhs dimension 0 has size 2", "rhs dimension 0 has size 4")),
    ("dot_contracting_lengths", lambda e: e.b.dot_general(e.x23, e.x23, ((1,), ())),
     E("'dot_general'", "lhs_contracting_dimensions [1]", "rhs_contracting_dimensions []",
       "differ in length")),
    ("dot_batching_lengths", lambda e: e.b.dot_general(e.x23, e.x23, ((), ()), ((0,), ())),
     E("'dot_general'", "lhs_batching_dimensions [0]", "rhs_batching_dimensions []",
       "differ in length")),
    ("dot_dimension_range", lambda e: e.b.dot_general(e.x23, e.x23, ((5,), (1,))),
     E("'dot_general'", "lhs dimension 5", "out of range", "rank 2")),
    ("dot_rhs_dimension_range", lambda e: e.b.dot_general(e.x23, e.x23, ((1,), (-1,))),
     E("'dot_general'", "rhs dimension -1", "out of range", "rank 2")),
    ("dot_dimension_twice",
     lambda e: e.b.dot_general(e.x23, e.x23, ((0,), (0,)), ((0,), (0,))),
     E("'dot_general'", "lhs dimension 0", "used twice")),
    ("dot_element_types", lambda e: e.b.dot_general(e.x, e.xi, ((0,), (0,))),
     E("'dot_general'", "lhs and rhs", "different element types", "cannot be inferred",
       "result_element_type", "tensor<2xf32>", "tensor<2xi32>")),
    ("dot_precision_count",
     lambda e: e.b.dot_general(e.x, e.x, ((0,), (0,)),
                               precision_config=["DEFAULT"] * 3),
     E("'dot_general'", "precision_config", "at most 2 entries, got 3")),
    ("dot_precision_value",
     lambda e: e.b.dot_general(e.x, e.x, ((0,), (0,)), precision_config=["FAST", "FAST"]),
     E("'dot_general'", "precision_config", "'FAST'", "DEFAULT, HIGH, HIGHEST")),
    ("dot_result_shape",
     lambda e: e.b.create("dot_general", (e.x, e.x), {"dot_dimension_numbers": DOT},
                          result_types=(tensor((2,), f32),)),
     E("'dot_general'", "result must have shape []", "tensor<2xf32>")),
    ("dot_dimension_numbers_type",
     lambda e: hlo.OP_TABLE["dot_general"].infer(
         "dot_general", (e.x.type, e.x.type), {"dot_dimension_numbers": hlo.i32_attr(1)}),
     E("'dot_general'", "dot_dimension_numbers", "DotDimensionNumbers", "IntegerAttr")),
    # -- reduction and control flow ------------------------------------------------------------
    ("reduce_body_returns_wrong_type",
     lambda e: e.b.reduce(e.x, _zero(e.b), [0], lambda bb, a, x: bb.compare(a, x, "GT")),
     E("'reduce'", "body returns (tensor<i1>), expected (tensor<f32>)")),
    ("reduce_body_without_return",
     lambda e: e.b.reduce(e.x, _zero(e.b), [0], lambda bb, a, x: None),
     E("'reduce'", "body does not end with a return")),
    ("reduce_body_arguments",
     lambda e: e.b.create("reduce", ([e.x], [_zero(e.b)]), {"dimensions": [0]},
                          regions=(e.b.region([tensor((2,), f32)] * 2, _add),)),
     E("'reduce'", "body takes arguments (tensor<2xf32>, tensor<2xf32>)",
       "expected (tensor<f32>, tensor<f32>)")),
    ("reduce_init_type", lambda e: e.b.reduce(e.x, _zero(e.b, np.int32), [0], _add),
     E("'reduce'", "init_values[0] must be tensor<f32>, got tensor<i32>")),
    ("reduce_init_rank",
     lambda e: e.b.create("reduce", ([e.x], [e.x]), {"dimensions": [0]},
                          regions=(e.b.region([tensor((), f32)] * 2, _add),)),
     E("'reduce'", "init_values[0] must be tensor<f32>, got tensor<2xf32>")),
    ("reduce_dimension_range", lambda e: e.b.reduce(e.x, _zero(e.b), [1], _add),
     E("'reduce'", "dimension 1", "out of range", "rank 1")),
    ("reduce_dimension_repeated", lambda e: e.b.reduce(e.x23, _zero(e.b), [0, 0], _add),
     E("'reduce'", "dimensions [0, 0]", "repeated")),
    ("reduce_input_shapes",
     lambda e: e.b.reduce([e.x, e.x3], [_zero(e.b)] * 2, [0],
                          lambda bb, a, c, x, y: (bb.add(a, x), bb.add(c, y))),
     E("'reduce'", "inputs[1] has shape [3], expected [2]")),
    ("reduce_init_count",
     lambda e: e.b.create("reduce", ([e.x, e.x], [_zero(e.b)]), {"dimensions": [0]},
                          regions=(e.b.region([], lambda bb: None),)),
     E("'reduce'", "as many init values as inputs", "got 3 operands")),
    ("reduce_operand_groups", lambda e: e.b.create("reduce", ([e.x],), {"dimensions": [0]}),
     E("'reduce'", "operand groups (inputs*, init_values*), got 1")),
    ("reduce_result_types",
     lambda e: e.b.create("reduce", ([e.x], [_zero(e.b)]), {"dimensions": [0]},
                          result_types=(tensor((2,), f32),),
                          regions=(e.b.region([tensor((), f32)] * 2, _add),)),
     E("'reduce'", "results (tensor<2xf32>) differ from the inferred (tensor<f32>)")),
    ("reduce_regions", lambda e: e.b.create("reduce", ([e.x], [_zero(e.b)]),
                                            {"dimensions": [0]}),
     E("'reduce' has 1 regions, got 0")),
    ("while_cond_not_i1",
     lambda e: e.b.while_([e.x], lambda bb, s: s, lambda bb, s: s),
     E("'while'", "cond returns (tensor<2xf32>), expected (tensor<i1>)")),
    ("while_cond_i32",
     lambda e: e.b.while_([e.x], lambda bb, s: bb.constant(np.int32(1)), lambda bb, s: s),
     E("'while'", "cond returns (tensor<i32>), expected (tensor<i1>)")),
    ("while_body_type",
     lambda e: e.b.while_([e.x], lambda bb, s: bb.constant(np.bool_(True)),
                          lambda bb, s: bb.convert(s, i32)),
     E("'while'", "body returns (tensor<2xi32>), expected (tensor<2xf32>)")),
    ("while_results",
     lambda e: e.b.create("while", ([e.x],), result_types=(tensor((2,), i32),),
                          regions=(e.b.region([e.x.type], lambda bb, s: bb.constant(True)),
                                   e.b.region([e.x.type], lambda bb, s: s))),
     E("'while'", "results (tensor<2xi32>) must equal the operand types (tensor<2xf32>)")),
    ("while_region_count", lambda e: e.b.create("while", ([e.x],), regions=()),
     E("'while' has 2 regions, got 0")),
    ("if_branches_disagree",
     lambda e: e.b.if_(e.b.constant(np.bool_(True)), lambda bb: e.x, lambda bb: e.xi),
     E("'if'", "false_branch returns (tensor<2xi32>), expected (tensor<2xf32>)")),
    ("if_pred_type",
     lambda e: e.b.if_(e.b.constant(np.int32(1)), lambda bb: e.x, lambda bb: e.x),
     E("'if'", "operand pred must be tensor<i1>, got tensor<i32>")),
    ("if_pred_shape",
     lambda e: e.b.if_(e.b.compare(e.x, e.x, "GT"), lambda bb: e.x, lambda bb: e.x),
     E("'if'", "operand pred must be tensor<i1>, got tensor<2xi1>")),
    ("if_result_types",
     lambda e: e.b.if_(e.b.constant(np.bool_(True)), lambda bb: e.x, lambda bb: e.x,
                       result_types=(tensor((2,), i32),)),
     E("'if'", "true_branch returns (tensor<2xf32>), expected (tensor<2xi32>)")),
    ("case_index_i64",
     lambda e: e.b.case(e.b.constant(np.int64(1)), [lambda bb: e.x]),
     E("'case'", "operand index must be tensor<i32>, got tensor<i64>")),
    ("case_index_shape",
     lambda e: e.b.case(e.b.constant(np.zeros(2, np.int32)), [lambda bb: e.x]),
     E("'case'", "operand index must be tensor<i32>, got tensor<2xi32>")),
    ("case_no_branches", lambda e: e.b.case(e.b.constant(np.int32(0)), []),
     E("'case' needs at least one branch")),
    ("case_no_regions_create",
     lambda e: e.b.create("case", (e.b.constant(np.int32(0)),), result_types=(), regions=()),
     E("'case' needs at least one region")),
    ("case_no_regions_rule",
     lambda e: hlo.OP_TABLE["case"].check("case", (tensor((), i32),), {}, (), ()),
     E("'case' needs at least one branch")),
    ("case_branches_disagree",
     lambda e: e.b.case(e.b.constant(np.int32(1)), [lambda bb: e.x, lambda bb: e.x3]),
     E("'case'", "branches[1] returns (tensor<3xf32>), expected (tensor<2xf32>)")),
    ("region_two_blocks",
     lambda e: hlo.OP_TABLE["if"].check(
         "if", (tensor((), i1),), {}, (), (hlo.Region([hlo.Block(), hlo.Block()]),) * 2),
     E("'if'", "true_branch must have exactly one block, got 2")),
    ("region_returns_two_blocks",
     lambda e: region_returns("case", "branches[0]", hlo.Region([hlo.Block(), hlo.Block()])),
     E("'case'", "branches[0] must have exactly one block, got 2")),
    # -- functions and calls -------------------------------------------------------------------
    ("call_argument_types", lambda e: e.b.call(e.callee, [e.xi]),
     E("'func.call'", "arguments (tensor<2xi32>)", "@callee's (tensor<2xf32>)")),
    ("call_argument_count", lambda e: e.b.call(e.callee, [e.x, e.x]),
     E("'func.call'", "arguments (tensor<2xf32>, tensor<2xf32>)", "@callee's (tensor<2xf32>)")),
    ("call_by_name_without_types", lambda e: e.b.call("callee", [e.x]),
     E("'func.call'", "@callee", "needs result_types")),
    ("call_numpy_argument", lambda e: e.b.call("callee", [np.ones(2)], [e.x.type]),
     E("'func.call'", "operands[0] must be a Value", "ndarray")),
    ("call_callee_not_symbol",
     lambda e: hlo.OP_TABLE["func.call"].check(
         "func.call", (), {"callee": hlo.StringAttr("callee")}, (), ()),
     E("'func.call'", "attribute callee must be a symbol reference", "StringAttr")),
    ("return_declared_types",
     lambda e: (setattr(e.f, "result_types", (tensor((2,), i32),)), e.b.return_(e.x)),
     E("'func.return'", "@main", "returns (tensor<2xf32>)",
       "result types are (tensor<2xi32>)")),
    ("return_second_time_different",
     lambda e: (e.b.return_(e.x), e.b.return_(e.xi)),
     E("'func.return'", "@main", "returns (tensor<2xi32>)", "result types are (tensor<2xf32>)")),
    ("return_numpy", lambda e: e.b.return_(np.ones(2)),
     E("'func.return'", "operands[0] must be a Value", "ndarray")),
    # -- tuples, tokens, custom calls ----------------------------------------------------------
    ("get_tuple_element_range", lambda e: e.b.get_tuple_element(e.b.tuple([e.x, e.xi]), 2),
     E("'get_tuple_element'", "index 2", "out of range",
       "tuple<tensor<2xf32>, tensor<2xi32>>", "2 elements")),
    ("get_tuple_element_negative", lambda e: e.b.get_tuple_element(e.b.tuple([e.x]), -1),
     E("'get_tuple_element'", "index -1", "out of range")),
    ("get_tuple_element_of_tensor", lambda e: e.b.get_tuple_element(e.x, 0),
     E("'get_tuple_element'", "operand must be a tuple", "tensor<2xf32>")),
    ("after_all_tensor", lambda e: e.b.after_all(e.b.create_token(), e.x),
     E("'after_all'", "inputs[1] must be a token", "tensor<2xf32>")),
    ("after_all_numpy", lambda e: e.b.after_all(np.ones(1)),
     E("'after_all'", "inputs[0] must be a Value", "ndarray")),
    ("custom_call_api4_string",
     lambda e: e.b.custom_call("foo", [e.x], [e.x.type], backend_config="cfg", api_version=4),
     E("'custom_call'", "backend_config must be a dictionary for api_version 4", "string")),
    ("custom_call_api2_dict",
     lambda e: e.b.custom_call("foo", [e.x], [e.x.type], backend_config={"a": 1},
                               api_version=2),
     E("'custom_call'", "backend_config must be a string for api_version 2", "dictionary")),
    ("custom_call_default_api_dict",
     lambda e: e.b.custom_call("foo", [e.x], e.x.type, backend_config={"a": 1}),
     E("'custom_call'", "backend_config must be a string for api_version 1", "dictionary")),
    ("custom_call_api_version",
     lambda e: e.b.custom_call("foo", [e.x], [e.x.type], api_version=7),
     E("'custom_call'", "api_version must be 1, 2, 3 or 4, got 7")),
    ("custom_call_alias",
     lambda e: e.b.custom_call("foo", [e.x], [e.x.type], output_operand_aliases=[
         dict(output_tuple_indices=(), operand_index=3, operand_tuple_indices=())]),
     E("'custom_call'", "output_operand_alias operand_index 3", "out of range", "1 operands")),
    ("custom_call_missing_target",
     lambda e: e.b.create("custom_call", ([e.x],), {}, [e.x.type]),
     E("'custom_call' requires attribute call_target_name")),
    ("custom_call_result_not_type",
     lambda e: e.b.custom_call("foo", [e.x], ["tensor<2xf32>"]),
     E("'custom_call'", "result type 0 must be a Type", "'tensor<2xf32>'")),
    # -- create(): operand counts, result types ------------------------------------------------
    ("create_operand_count", lambda e: e.b.create("add", (e.x,)),
     E("'add' takes 2 operands (lhs, rhs), got 1")),
    ("create_operand_not_value", lambda e: e.b.create("add", (e.x, 3)),
     E("'add'", "operand rhs must be a Value", "int 3")),
    ("create_variadic_not_value", lambda e: e.b.create("tuple", ([e.x, "y"],)),
     E("'tuple'", "val[1] must be a Value", "str")),
    ("create_result_types_differ",
     lambda e: e.b.create("add", (e.x, e.x), result_types=(tensor((2,), i32),)),
     E("'add'", "result types (tensor<2xi32>) differ from the inferred (tensor<2xf32>)")),
    ("create_result_type_string",
     lambda e: e.b.create("add", (e.x, e.x), result_types=("f32",)),
     E("'add'", "result type 0 must be a Type", "'f32'")),
    ("create_region_count", lambda e: e.b.create("if", (e.b.constant(True),),
                                                 result_types=(), regions=()),
     E("'if' has 2 regions, got 0")),
]


@pytest.mark.parametrize("build,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_build_error(env, build, pattern):
    with pytest.raises(OpBuildError, match=pattern):
        build(env)


def test_every_message_starts_with_the_op_name(env):
    """The shared prefix is ``'<op>'``, quoted, so messages read like MLIR's own."""
    for name, build, _ in CASES:
        with pytest.raises(OpBuildError) as info:
            build(env)
        assert re.match(r"'[\w.]+' ", str(info.value)), (name, str(info.value))


def test_build_errors_are_type_errors(env):
    """OpBuildError is an IRError and a TypeError, so generic handlers catch it."""
    with pytest.raises(TypeError):
        env.b.add(env.x, env.xi)
    with pytest.raises(hlo.IRError):
        env.b.add(env.x, env.xi)


def test_failed_build_leaves_block_unchanged(env):
    before = list(env.b.block.operations)
    with pytest.raises(OpBuildError):
        env.b.add(env.x, env.x3)
    with pytest.raises(OpBuildError):
        env.b.slice(env.x, [0], [3])
    assert env.b.block.operations == before


def test_unknown_op_name(env):
    with pytest.raises(KeyError, match=E("unknown op 'frobnicate'")):
        env.b.create("frobnicate", (env.x,))
    with pytest.raises(KeyError, match=E("unknown op 'mhlo.frobnicate'")):
        lookup("mhlo.frobnicate")


def test_prefixed_names_reach_the_same_op(env):
    """``mhlo.add`` and ``stablehlo.add`` are spellings of ``add`` (checked the same way)."""
    with pytest.raises(OpBuildError, match=E("'add'", "same element type")):
        env.b.create("mhlo.add", (env.x, env.xi))
    with pytest.raises(OpBuildError, match=E("'add'", "same shape")):
        env.b.create("stablehlo.add", (env.x, env.x3))


# -- types, names and values outside the op table ------------------------------------------------

def test_bad_element_type_name():
    with pytest.raises(ValueError, match=E("unknown element type 'f31'", "expected one of",
                                           "bf16", "f32")):
        hlo.element_type("f31")


def test_bad_numpy_dtype():
    with pytest.raises(TypeError, match=E("numpy dtype <U3 has no MHLO element type")):
        tensor((2,), np.dtype("U3"))
    with pytest.raises(TypeError, match=E("'nonsense'", "not an MLIR element type name")):
        tensor((2,), "nonsense")


def test_mlir_spelled_element_type_is_not_reinterpreted():
    # "i8", "i1", "f8" are MLIR element types (8-bit int, bool, ...) but numpy type codes for
    # int64, int8 and float64. Either the MLIR meaning or an error is fine; not numpy's.
    for name in ("i8", "i1", "f8"):
        try:
            t = tensor((2,), name)
        except (TypeError, ValueError):
            continue
        assert t.element_type.name == name


def test_negative_and_non_integer_dims():
    with pytest.raises(ValueError, match=E("tensor dimension -1 is negative")):
        tensor((2, -1), f32)
    with pytest.raises(TypeError, match=E("tensor dimension 1.5 is not an integer")):
        tensor((1.5,), f32)


def test_bool_and_float_dims_are_rejected():
    with pytest.raises(TypeError, match=E("True", "not an integer")):
        hlo.TensorType((True,), f32)
    tensor((1,), f32), tensor((2,), f32)  # now cached
    with pytest.raises(TypeError, match=E("True", "not an integer")):
        tensor((True,), f32)
    with pytest.raises(TypeError, match=E("2.0", "not an integer")):
        tensor((2.0,), f32)


def test_negative_dims_in_builder_name_the_op(env):
    with pytest.raises(OpBuildError, match=E("'reshape'", "-1")):
        env.b.reshape(env.x23, (-1,))


def test_bad_comparison_direction_names_the_op(env):
    with pytest.raises(OpBuildError, match=E("'compare'", "comparison_direction", "'BAD'")):
        env.b.compare(env.x, env.x, "BAD")


def test_bad_comparison_direction_message(env):
    # Whatever the class, the message lists the allowed values.
    with pytest.raises(ValueError, match=E("comparison_direction", "'BAD'",
                                           "EQ, NE, GE, GT, LE, LT")):
        hlo.comparison_direction("BAD")
    with pytest.raises(ValueError, match=E("comparison_type", "'WRONG'", "UNSIGNED")):
        hlo.comparison_type("WRONG")


def test_enum_kind_and_integer_range():
    with pytest.raises(ValueError, match=E("unknown enum kind 'nope'", "comparison_direction")):
        hlo.EnumAttr("nope", "X")
    with pytest.raises(ValueError, match=E("300 does not fit in i8")):
        hlo.IntegerAttr(300, hlo.i8)


def test_get_tuple_element_index_out_of_i32(env):
    with pytest.raises(OpBuildError, match=E("'get_tuple_element'", "attribute index",
                                             "does not fit in i32")):
        env.b.get_tuple_element(env.b.tuple([env.x]), 2**40)


def test_constant_shape_mismatch():
    with pytest.raises(ValueError, match=E("array of shape (3,) does not match tensor<2xf32>")):
        hlo.DenseElementsAttr.from_array(np.ones(3), tensor((2,), f32))


def test_function_and_module_errors(env):
    with pytest.raises(hlo.IRError, match=E("@g", "visibility", "'bogus'")):
        env.m.add_function("g", [], visibility="bogus")
    with pytest.raises(TypeError, match=E("@g", "argument 0 type 'f32' is not a Type")):
        env.m.add_function("g", ["f32"])
    with pytest.raises(hlo.IRError, match=E("already has a symbol named @main")):
        env.m.add_function("main", [], exact=True)
    with pytest.raises(IndexError, match=E("@main has no argument 9")):
        env.f.set_arg_attr(9, "tf.aliasing_output", 0)
    with pytest.raises(hlo.IRError, match=E("@callee2 has no return yet")):
        env.m.add_function("callee2", []).type
    with pytest.raises(hlo.IRError, match=E("region has 0 blocks, expected 1")):
        hlo.Region([]).block
    with pytest.raises(hlo.IRError, match=E("'func.return' has 0 results, not one")):
        env.b.return_(env.x).result


def test_case_rule_accepts_i32_index(env):
    # The counterpart of case_index_i64: the rule is not rejecting every index.
    r = env.b.case(env.b.constant(np.int32(0)), [lambda bb: env.x, lambda bb: env.x])
    assert r.type == env.x.type


def test_reserved_custom_call_target_is_rejected():
    """XLA reserves targets starting with '$' and rejects them when converting to HLO."""
    m = hlo.Module()
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)])
    b = f.builder()
    with pytest.raises(hlo.OpBuildError, match=r"'custom_call' call_target_name '\$a'.*reserved"):
        b.custom_call("$a", [f.arguments[0]], [hlo.tensor((2,), hlo.f32)])


def test_elementwise_arity_errors_name_the_op_and_operand():
    m = hlo.Module()
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)])
    b = f.builder()
    x = f.arguments[0]
    with pytest.raises(TypeError, match=r"Builder\.add\(\) missing 1 required positional "
                                        r"argument: 'rhs'"):
        b.add(x)
    with pytest.raises(TypeError, match=r"Builder\.tanh\(\) takes 2 positional arguments"):
        b.tanh(x, x)
    assert f.entry_block.operations == []


@pytest.mark.parametrize("call,match", [
    (lambda b, x: b.slice(x, [0.5, 0], [1.9, 3]),
     "'slice' start_indices: expected an integer, got float 0.5"),
    (lambda b, x: b.transpose(x, (True, False)),
     "'transpose' permutation: expected an integer, got bool"),
    (lambda b, x: b.iota((2, 3), hlo.f32, 1.7),
     "'iota' attribute iota_dimension: expected an integer"),
    (lambda b, x: b.concatenate([x, x], True),
     "'concatenate' attribute dimension: expected an integer"),
    (lambda b, x: b.dot_general(x, x, ((1.9,), (1,))), "'dot_general' lhs contracting dimensions"),
    (lambda b, x: b.transpose(x, [2**64, 0]),
     "'transpose' 18446744073709551616 does not fit in i64"),
    (lambda b, x: b.dot_general(x, x, hlo.DotDimensionNumbers([], [], [1], [1]), ((0,), (0,))),
     "batch_dimensions cannot be given with a DotDimensionNumbers"),
])
def test_dimension_numbers_must_be_integers(call, match):
    """int() would silently turn 0.5 or True into a dimension; these are errors instead."""
    m = hlo.Module()
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)])
    with pytest.raises(hlo.OpBuildError, match=re.escape(match) if "\\" not in match else match):
        call(f.builder(), f.arguments[0])


def test_output_operand_alias_types_must_match():
    """jaxlib rejects an alias between an operand and an output of different shapes."""
    m = hlo.Module()
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)])
    b = f.builder()
    alias = [hlo.OutputOperandAlias([], 0, [])]
    with pytest.raises(hlo.OpBuildError, match=r"'custom_call' output_operand_alias: operand 0 "
                                               r"has type tensor<2xf32> but the aliased output "
                                               r"has type tensor<3xf32>"):
        b.custom_call("foo", [f.arguments[0]], [hlo.tensor((3,), hlo.f32)],
                      output_operand_aliases=alias)
    with pytest.raises(hlo.OpBuildError, match=r"output_tuple_indices \[4\] do not name"):
        b.custom_call("foo", [f.arguments[0]], [hlo.tensor((2,), hlo.f32)] * 2,
                      output_operand_aliases=[hlo.OutputOperandAlias([4], 0, [])])


def test_messages_name_the_argument_that_is_wrong():
    # (a review of 2026-12-07: a reduce short of init values was reported as a body of the
    # wrong arity; a composite of a Python function as "given by name")
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((3,), hlo.f32)] * 2, visibility="public")
    b = f.builder()
    x, y = f.arguments
    with pytest.raises(hlo.OpBuildError, match="'reduce' takes one init value per input: 2 "
                                               "inputs, 1 init_values"):
        b.reduce([x, y], [b.constant(np.float32(0))], [0],
                 lambda r, a, c, u, v: [r.add(a, u), r.add(c, v)])
    with pytest.raises(hlo.OpBuildError, match="'composite' decomposition must be a Function, "
                                               "or a function's name with result_types, got "
                                               "function"):
        b.composite("my.op", [x], lambda r, a: a)
