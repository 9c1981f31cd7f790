"""Ops MHLO declares over tensors and tokens alone (while, if, case, optimization_barrier,
domain, send, outfeed, infeed, recv, fusion; ``OpSpec.no_tuples``) refuse a tuple when built,
naming the op and the operand or result, where jaxlib would refuse the text ("must be
variadic of ranked tensor of ... or token"); add_dependency's operand is a tensor (a tuple
or a token refused alike); map names a tuple input as such. And
custom_call's output aliases walk into a single result's tuple, as jaxlib reads them."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import OpBuildError, f32, tensor
from mhlo_ir.mhlo_attributes import OutputOperandAlias

TT = hlo.tuple_type([tensor((2,), f32), tensor((), f32)])

CASES = {
    "while": lambda b, t: b.while_([t], lambda r, s: r.constant(False), lambda r, s: s),
    "if": lambda b, t: b.if_(b.constant(True), lambda r: t, lambda r: t),
    "case": lambda b, t: b.case(b.constant(np.int32(0)), [lambda r: t]),
    "optimization_barrier": lambda b, t: b.optimization_barrier(t),
    "domain": lambda b, t: b.domain(t, "{replicated}", "{replicated}"),
    "outfeed": lambda b, t: b.outfeed([t], b.create_token()),
    "send": lambda b, t: b.send([t], b.create_token(), 1),
    "infeed": lambda b, t: b.infeed(b.create_token(), [TT]),
    "recv": lambda b, t: b.recv(b.create_token(), [TT], 1),
    "fusion": lambda b, t: b.fusion([t], lambda r, a: a),
}


def _builder(*types):
    m = hlo.Module("t")
    f = m.add_function("main", list(types))
    return m, f.builder(), f.arguments


@pytest.mark.parametrize("name", list(CASES))
def test_a_tuple_is_refused_where_mhlo_takes_tensors_and_tokens(name):
    m, b, (t,) = _builder(TT)
    with pytest.raises(OpBuildError, match=rf"'{name}' (operand|result) \d+ must be a tensor "
                                           r"or a token, got tuple<"):
        CASES[name](b, t)


def test_add_dependency_refuses_a_tuple_and_a_token_alike():
    m, b, (t,) = _builder(TT)
    for v in (t, b.create_token()):
        with pytest.raises(OpBuildError, match=rf"'add_dependency' operand must be a tensor, "
                                               rf"got {'tuple<' if v is t else '!token'}"):
            b.add_dependency(v, b.create_token())


def test_jaxlib_refuses_the_tuple_text_too():
    from tests.oracle import mlir_generic
    text = ("func.func @main(%t: tuple<tensor<2xf32>, tensor<f32>>) -> "
            "tuple<tensor<2xf32>, tensor<f32>> {\n"
            '  %0 = "mhlo.optimization_barrier"(%t) : (tuple<tensor<2xf32>, tensor<f32>>) -> '
            "tuple<tensor<2xf32>, tensor<f32>>\n  return %0 : tuple<tensor<2xf32>, "
            "tensor<f32>>\n}")
    with pytest.raises(Exception, match="ranked tensor"):
        mlir_generic(text)


def test_the_elements_of_a_tuple_pass():
    m, b, (u, v) = _builder(tensor((2,), f32), tensor((), f32))
    t = b.tuple([u, v])
    x, s = b.get_tuple_element(t, 0), b.get_tuple_element(t, 1)
    y, z = b.optimization_barrier(x, s)
    b.return_(b.add(y, b.broadcast_in_dim(z, (2,), [])))
    (got,) = verify.run(m, np.arange(2, dtype=np.float32), np.float32(3))
    np.testing.assert_array_equal(got, [3, 4])


def test_map_names_a_tuple_input():
    m, b, (t,) = _builder(TT)
    with pytest.raises(OpBuildError, match=r"'map' operand inputs\[0\] must be a tensor, got "
                                           r"tuple<"):
        b.map([t], lambda r, a: a)


def test_custom_call_output_aliases_walk_into_a_single_result():
    m, b, (x, y) = _builder(tensor((2,), f32), tensor((3,), f32))
    with pytest.raises(OpBuildError, match=r"output tuple index 0 does not exist in "
                                           r"tensor<2xf32>"):
        b.custom_call("foo", [x], tensor((2,), f32),
                      output_operand_aliases=[OutputOperandAlias((0,), 0, ())])
    # one tuple result: the indices pick its element; several results: the first picks one
    r = b.custom_call("foo", [x, y], hlo.tuple_type([tensor((2,), f32), tensor((3,), f32)]),
                      output_operand_aliases=[OutputOperandAlias((1,), 1, ())])
    r2 = b.custom_call("foo", [x, y], [tensor((2,), f32), tensor((3,), f32)],
                       output_operand_aliases=[OutputOperandAlias((1,), 1, ())])
    b.return_(b.get_tuple_element(r, 1), r2[1])
    verify.check(m)
    from tests.oracle import mlir_generic
    bad = ('func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = "mhlo.custom_call"'
           '(%x) <{call_target_name = "foo", output_operand_aliases = [#mhlo.output_operand_alias'
           '<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>]}> : '
           '(tensor<2xf32>) -> tensor<2xf32>\n  return %0 : tensor<2xf32>\n}')
    with pytest.raises(Exception, match="out of bounds"):
        mlir_generic(bad)
