"""Build-time errors of the data-movement and indexing chapters: each names the op, the operand
or attribute at fault, and what was expected versus what was given. Where MLIR has the same
rule, the well-formed neighbour of each bad program is checked to be accepted by jaxlib (so the
rule is not stricter than MLIR's)."""

from __future__ import annotations

import pytest

import mhlo_ir as hlo
from mhlo_ir import OpBuildError
from tests.oracle import parse

T = hlo.tensor
GDN = hlo.mhlo_attributes.GatherDimensionNumbers
SDN = hlo.mhlo_attributes.ScatterDimensionNumbers
f32, i32, i64 = hlo.f32, hlo.i32, hlo.i64


def _builder(*types):
    m = hlo.Module("e")
    f = m.add_function("main", list(types), visibility="public")
    return m, f.builder(), f.arguments


def _raises(match, build, *types):
    _, b, args = _builder(*types)
    with pytest.raises(OpBuildError, match=match):
        build(b, *args)


# -- pad, reverse, broadcast, copy, bitcast -----------------------------------------------------

@pytest.mark.parametrize("build, match", [
    (lambda b, x, v: b.pad(x, v, (0,), (0, 0)),
     r"'pad' edge_padding_low has 1 entries, expected 2 \(the rank of operand"),
    (lambda b, x, v: b.pad(x, v, (0, 0), (0, 0), (0, -1)),
     r"'pad' interior_padding\[1\] = -1 must be non-negative"),
    (lambda b, x, v: b.pad(x, v, (-2, 0), (-1, 0)),
     r"'pad' dimension 0: padding low -2, high -1, interior 0 of size 2 gives negative size -1"),
    (lambda b, x, v: b.pad(x, x, (0, 0), (0, 0)),
     r"'pad' operand padding_value must be tensor<f32> .*got tensor<2x3xf32>"),
])
def test_pad_errors(build, match):
    _raises(match, build, T((2, 3), f32), T((), f32))


def test_pad_padding_value_element_type():
    _raises(r"'pad' operand padding_value must be tensor<f32>.*got tensor<i32>",
            lambda b, x, v: b.pad(x, v, (0, 0), (0, 0)), T((2, 3), f32), T((), i32))


def test_pad_negative_but_nonnegative_size_is_accepted_by_mlir():
    m, b, (x, v) = _builder(T((2, 3), f32), T((), f32))
    y = b.pad(x, v, (-2, 0), (0, -3), (0, 0))
    assert y.type == T((0, 0), f32)
    b.return_(y)
    parse(m.to_text())


@pytest.mark.parametrize("dims, match", [
    ((0, 0), r"'reverse' dimensions \[0, 0\] has repeated entries"),
    ((2,), r"'reverse' dimensions entry 2 is out of range for operand tensor<2x3xf32> of rank 2"),
])
def test_reverse_errors(dims, match):
    _raises(match, lambda b, x: b.reverse(x, dims), T((2, 3), f32))


def test_broadcast_negative_size():
    _raises(r"'broadcast' broadcast_sizes\[1\] = -1 must be non-negative",
            lambda b, x: b.broadcast(x, (2, -1)), T((3,), f32))


def test_bitcast_bit_size():
    _raises(r"'bitcast' result tensor<5xf64> holds 320 bits, expected 192 \(as operand "
            r"tensor<2x3xf32>\)", lambda b, x: b.bitcast(x, T((5,), hlo.f64)), T((2, 3), f32))


def test_copy_result_type_must_match():
    _raises(r"'copy' result types \(tensor<3xi32>\) differ from the inferred \(tensor<3xf32>\)",
            lambda b, x: b.create("copy", (x,), result_types=(T((3,), i32),)), T((3,), f32))


# -- dimension sizes ----------------------------------------------------------------------------

def test_get_dimension_size_out_of_range():
    _raises(r"'get_dimension_size' dimension 2 is out of range for operand tensor<2x3xf32> of "
            r"rank 2", lambda b, x: b.get_dimension_size(x, 2), T((2, 3), f32))


def test_set_dimension_size_size_type():
    _raises(r"'set_dimension_size' operand size must be tensor<i32>, got tensor<i64>",
            lambda b, x, n: b.set_dimension_size(x, n, 0), T((2, 3), f32), T((), i64))


# -- dynamic variants ---------------------------------------------------------------------------

def test_dynamic_broadcast_in_dim_shape_length():
    _raises(r"'dynamic_broadcast_in_dim' operand output_dimensions must have 2 entries \(one "
            r"per dimension\), got tensor<3xi64>",
            lambda b, x, s: b.dynamic_broadcast_in_dim(x, s, (1,), (2, 3)),
            T((3,), f32), T((3,), i64))


def test_dynamic_broadcast_in_dim_known_dims_overlap():
    _raises(r"'dynamic_broadcast_in_dim' operand dimensions \[0\] are listed as both known "
            r"expanding and known non-expanding",
            lambda b, x, s: b.dynamic_broadcast_in_dim(
                x, s, (1,), (2, 3), known_expanding_dimensions=(0,),
                known_nonexpanding_dimensions=(0,)), T((3,), f32), T((2,), i64))


def test_dynamic_broadcast_in_dim_reuses_broadcast_rules():
    _raises(r"'dynamic_broadcast_in_dim' operand dimension 0 has size 3, expected 1 or 2",
            lambda b, x, s: b.dynamic_broadcast_in_dim(x, s, (0,), (2, 3)),
            T((3,), f32), T((2,), i64))


def test_dynamic_reshape_errors():
    _raises(r"'dynamic_reshape' result tensor<4xf32> has 4 elements, expected 6",
            lambda b, x, s: b.dynamic_reshape(x, s, (4,)), T((2, 3), f32), T((1,), i32))
    _raises(r"'dynamic_reshape' operand output_shape must have integer elements, got "
            r"tensor<1xf32>", lambda b, x, s: b.dynamic_reshape(x, s, (6,)),
            T((2, 3), f32), T((1,), f32))


def test_dynamic_iota_errors():
    _raises(r"'dynamic_iota' operand output_shape must have rank 1, got tensor<i32>",
            lambda b, s: b.dynamic_iota(s, T((3,), f32)), T((), i32))
    _raises(r"'dynamic_iota' iota_dimension 1 is out of range",
            lambda b, s: b.dynamic_iota(s, T((3,), f32), 1), T((1,), i32))


def test_dynamic_pad_errors():
    _raises(r"'dynamic_pad' result must have rank 2, got tensor<6xf32>",
            lambda b, x, v, p: b.dynamic_pad(x, v, p, p, p, (6,)),
            T((2, 3), f32), T((), f32), T((2,), i64))
    _raises(r"'dynamic_pad' operand interior_padding must have 2 entries",
            lambda b, x, v, p, q: b.dynamic_pad(x, v, p, p, q, (2, 3)),
            T((2, 3), f32), T((), f32), T((2,), i64), T((3,), i64))


def test_real_dynamic_slice_operand_types_differ():
    _raises(r"'real_dynamic_slice' operand strides must have the same type as start_indices "
            r"\(tensor<2xi64>\), got tensor<2xi32>",
            lambda b, x, p, q: b.real_dynamic_slice(x, p, p, q, (2, 2)),
            T((2, 3), f32), T((2,), i64), T((2,), i32))


# -- dynamic_slice, dynamic_update_slice --------------------------------------------------------

def test_dynamic_slice_errors():
    _raises(r"'dynamic_slice' has 1 start_indices, expected 2",
            lambda b, x, i, j: b.dynamic_slice(x, [i], (1, 1)),
            T((2, 3), f32), T((), i32), T((), i64))
    _raises(r"'dynamic_slice' operand start_indices\[1\] is tensor<i64>, expected tensor<i32>",
            lambda b, x, i, j: b.dynamic_slice(x, [i, j], (1, 1)),
            T((2, 3), f32), T((), i32), T((), i64))
    _raises(r"'dynamic_slice' slice_sizes\[1\] = 4 is out of range: need 0 <= size <= 3",
            lambda b, x, i, j: b.dynamic_slice(x, [i, i], (1, 4)),
            T((2, 3), f32), T((), i32), T((), i64))
    _raises(r"'dynamic_slice' operand start_indices\[0\] must have rank 0, got tensor<1xi32>",
            lambda b, x, i: b.dynamic_slice(x, [i], (1,)), T((3,), f32), T((1,), i32))


def test_dynamic_slice_mixed_index_types_are_rejected_by_mlir_too():
    text = """func.func public @main(%a: tensor<2x3xf32>, %i: tensor<i32>, %j: tensor<i64>)
      -> tensor<1x2xf32> {
      %0 = "mhlo.dynamic_slice"(%a, %i, %j) {slice_sizes = dense<[1, 2]> : tensor<2xi64>}
        : (tensor<2x3xf32>, tensor<i32>, tensor<i64>) -> tensor<1x2xf32>
      return %0 : tensor<1x2xf32>
    }"""
    with pytest.raises(Exception, match="start indices must have same element type"):
        parse(text)


def test_dynamic_update_slice_errors():
    _raises(r"'dynamic_update_slice' update dimension 1 has size 4, larger than operand "
            r"dimension 1 \(3\)", lambda b, x, u, i: b.dynamic_update_slice(x, u, [i, i]),
            T((2, 3), f32), T((1, 4), f32), T((), i32))
    _raises(r"'dynamic_update_slice' operand update must have element type f32, got "
            r"tensor<1x1xi32>", lambda b, x, u, i: b.dynamic_update_slice(x, u, [i, i]),
            T((2, 3), f32), T((1, 1), i32), T((), i32))


# -- gather -------------------------------------------------------------------------------------

_ROWS = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1)


@pytest.mark.parametrize("dn, sizes, match", [
    (dict(_ROWS, offset_dims=(1, 2)), (1, 3),
     r"'gather' operand tensor<4x3xf32> has rank 2, expected len\(offset_dims\) \+ "
     r"len\(collapsed_slice_dims\) \+ len\(operand_batching_dims\) = 2 \+ 1 \+ 0"),
    (_ROWS, (2, 3), r"'gather' slice_sizes\[0\] = 2 must be 0 or 1: dimension 0 is in "
                    r"collapsed_slice_dims"),
    (_ROWS, (1, 4), r"'gather' slice_sizes\[1\] = 4 is out of range"),
    (_ROWS, (1,), r"'gather' slice_sizes has 1 entries, expected 2"),
    (dict(_ROWS, start_index_map=(0, 1)), (1, 3),
     r"'gather' start_index_map has 2 entries, expected 1 \(the size of index_vector_dim 1"),
    (dict(_ROWS, index_vector_dim=3), (1, 3),
     r"'gather' index_vector_dim 3 is out of range: need 0 <= index_vector_dim <= 2"),
    (dict(_ROWS, offset_dims=(2,)), (1, 3),
     r"'gather' offset_dims entry 2 is out of range for the result of rank 2"),
    (dict(_ROWS, start_index_map=(2,)), (1, 3),
     r"'gather' start_index_map entry 2 is out of range for operand"),
])
def test_gather_errors(dn, sizes, match):
    _raises(match, lambda b, x, i: b.gather(x, i, dn, sizes), T((4, 3), f32), T((2, 1), i32))


def test_gather_collapsed_must_be_sorted_as_in_mlir():
    dn = dict(offset_dims=(1,), collapsed_slice_dims=(1, 0), start_index_map=(0, 1),
              index_vector_dim=1)
    _raises(r"'gather' collapsed_slice_dims \[1, 0\] must be sorted",
            lambda b, x, i: b.gather(x, i, dn, (1, 1, 3)), T((4, 3, 3), f32), T((2, 2), i32))


def test_gather_batching_dims_sizes():
    dn = dict(offset_dims=(2,), collapsed_slice_dims=(1,), operand_batching_dims=(0,),
              start_indices_batching_dims=(0,), start_index_map=(1,), index_vector_dim=2)
    _raises(r"'gather' operand batching dimension 0 has size 2 but start_indices batching "
            r"dimension 0 has size 3", lambda b, x, i: b.gather(x, i, dn, (1, 1, 3)),
            T((2, 4, 3), f32), T((3, 5, 1), i32))
    _raises(r"'gather' start_indices_batching_dims entry 2 must be a dimension of start_indices "
            r"tensor<2x5x1xi32> other than index_vector_dim 2",
            lambda b, x, i: b.gather(x, i, dict(dn, start_indices_batching_dims=(2,)),
                                     (1, 1, 3)),
            T((2, 4, 3), f32), T((2, 5, 1), i32))


def test_gather_indices_must_be_integers():
    _raises(r"'gather' operand start_indices must have integer elements, got tensor<2x1xf32>",
            lambda b, x, i: b.gather(x, i, _ROWS, (1, 3)), T((4, 3), f32), T((2, 1), f32))


def test_gather_explicit_result_type_is_checked():
    def build(b, x, i):
        return b.create("gather", (x, i), {"dimension_numbers": _ROWS,
                                           "slice_sizes": (1, 3)},
                        result_types=(T((3, 3), f32),))
    _raises(r"'gather' result types \(tensor<3x3xf32>\) differ from the inferred "
            r"\(tensor<2x3xf32>\)", build, T((4, 3), f32), T((2, 1), i32))


def test_gather_dimension_numbers_type():
    _raises(r"'gather' attribute dimension_numbers: expected GatherDimensionNumbers or a dict",
            lambda b, x, i: b.gather(x, i, [1, 0], (1, 3)), T((4, 3), f32), T((2, 1), i32))


def test_dynamic_gather_errors():
    _raises(r"'dynamic_gather' cannot infer the result type: slice_sizes is not a constant",
            lambda b, x, i, s: b.dynamic_gather(x, i, s, _ROWS),
            T((4, 3), f32), T((2, 1), i32), T((2,), i64))
    _raises(r"'dynamic_gather' result dimension 0 has size 3, expected 2",
            lambda b, x, i, s: b.dynamic_gather(x, i, s, _ROWS, T((3, 3), f32)),
            T((4, 3), f32), T((2, 1), i32), T((2,), i64))


# -- scatter ------------------------------------------------------------------------------------

_ROW_UPDATES = dict(update_window_dims=(1,), inserted_window_dims=(0,),
                    scatter_dims_to_operand_dims=(0,), index_vector_dim=1)


def _add(r, old, new):
    return r.add(old, new)


@pytest.mark.parametrize("dn, utype, match", [
    (_ROW_UPDATES, T((3, 3), f32),
     r"'scatter' updates dimension 0 has size 3, expected 2 \(from scatter_indices"),
    (_ROW_UPDATES, T((2, 4), f32),
     r"'scatter' updates window dimension 1 has size 4, larger than inputs dimension 1 \(3\)"),
    (_ROW_UPDATES, T((2, 3, 1), f32), r"'scatter' updates tensor<2x3x1xf32> has rank 3"),
    (_ROW_UPDATES, T((2, 3), i32),
     r"'scatter' operand updates\[0\] must have element type f32 \(as inputs\[0\]\)"),
    (dict(_ROW_UPDATES, inserted_window_dims=()), T((2, 3), f32),
     r"'scatter' inputs have rank 2, expected len\(update_window_dims\) \+ "
     r"len\(inserted_window_dims\) \+ len\(input_batching_dims\) = 1 \+ 0 \+ 0"),
    (dict(_ROW_UPDATES, scatter_dims_to_operand_dims=(5,)), T((2, 3), f32),
     r"'scatter' scatter_dims_to_operand_dims entry 5 is out of range for inputs"),
    (dict(_ROW_UPDATES, update_window_dims=(2,)), T((2, 3), f32),
     r"'scatter' update_window_dims entry 2 is out of range for updates tensor<2x3xf32>"),
])
def test_scatter_errors(dn, utype, match):
    _raises(match, lambda b, x, i, u: b.scatter(x, i, u, dn, _add),
            T((4, 3), f32), T((2, 1), i32), utype)


def test_scatter_update_computation_signature():
    _raises(r"'scatter' update_computation returns \(tensor<i1>\), expected \(tensor<f32>\)",
            lambda b, x, i, u: b.scatter(x, i, u, _ROW_UPDATES,
                                         lambda r, o, n: r.compare(o, n, "LT")),
            T((4, 3), f32), T((2, 1), i32), T((2, 3), f32))


def test_scatter_variadic_counts_and_shapes():
    _raises(r"'scatter' operand inputs\[1\] has shape \[4, 2\], expected \[4, 3\]",
            lambda b, x, y, i, u: b.scatter([x, y], i, [u, u], _ROW_UPDATES,
                                            lambda r, a, c, d, e: [d, e]),
            T((4, 3), f32), T((4, 2), f32), T((2, 1), i32), T((2, 3), f32))
    _raises(r"'scatter' needs inputs, scatter_indices and as many updates as inputs, got 4 "
            r"operands", lambda b, x, i, u: b.create(
                "scatter", ([x, x], i, [u]), {"scatter_dimension_numbers": _ROW_UPDATES},
                regions=(b.region([T((), f32)] * 4, lambda r, *a: a[2:]),)),
            T((4, 3), f32), T((2, 1), i32), T((2, 3), f32))


# -- sort ---------------------------------------------------------------------------------------

def _lt(r, p, q, *rest):
    return r.compare(p, q, "LT")


def test_sort_errors():
    _raises(r"'sort' dimension 2 is out of range for inputs of rank 2",
            lambda b, x: b.sort(x, _lt, dimension=2), T((2, 3), f32))
    _raises(r"'sort' operand inputs\[1\] has shape \[3\], expected \[2\]",
            lambda b, x, y: b.sort([x, y], _lt), T((2,), f32), T((3,), i32))
    _raises(r"'sort' comparator returns \(tensor<f32>\), expected \(tensor<i1>\)",
            lambda b, x: b.sort(x, lambda r, p, q: r.add(p, q)), T((2,), f32))
    _raises(r"'sort' attribute is_stable: expected a bool, got 'yes'",
            lambda b, x: b.sort(x, _lt, is_stable="yes"), T((2,), f32))


def test_sort_comparator_arguments_are_interleaved_pairs():
    m, b, (x, y) = _builder(T((3,), f32), T((3,), i32))
    seen = []

    def cmp(r, *args):
        seen.extend(a.type for a in args)
        return r.compare(args[0], args[1], "LT")
    outs = b.sort([x, y], cmp)
    b.return_(*outs)
    assert seen == [T((), f32), T((), f32), T((), i32), T((), i32)]
    parse(m.to_text())


# -- torch_index_select -------------------------------------------------------------------------

def test_torch_index_select_errors():
    _raises(r"'torch_index_select' batch_dims 2 is out of range: need 0 <= batch_dims <= dim "
            r"\(1\)", lambda b, x, i: b.torch_index_select(x, i, 1, 2),
            T((2, 3), f32), T((2, 4), i32))
    _raises(r"'torch_index_select' the first 1 \(batch\) dimensions of operand tensor<2x3xf32> "
            r"and index tensor<3x4xi32> differ", lambda b, x, i: b.torch_index_select(x, i, 1, 1),
            T((2, 3), f32), T((3, 4), i32))
    _raises(r"'torch_index_select' dim 2 is out of range", lambda b, x, i: b.torch_index_select(
        x, i, 2), T((2, 3), f32), T((4,), i32))
