"""Attribute converters refuse the kinds jaxlib rejects (issue #8), each with an OpBuildError
naming the op and the attribute; and, for each, the text the old converters let through is
shown to be rejected by jaxlib itself (forced into the module past the converter)."""

from __future__ import annotations

import re

import attrs
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import attributes as A
from mhlo_ir.dense import DenseElementsAttr
from mhlo_ir.mhlo_attributes import ChannelHandle, EnumAttr, OutputOperandAlias
from mhlo_ir.ops import convert
from mhlo_ir.ops.custom_call import IndexLayout
from mhlo_ir.syntax import TokenStream
from tests.mhlo_ir.ops.probe import case_op, forced_text, jaxlib_verdicts, rebuild
from tests.oracle import assert_fixed_point

DENSE_I64 = DenseElementsAttr.from_array(np.array([1, 0], np.int64))
PRECISION = EnumAttr("precision", "HIGHEST")


@attrs.frozen
class Wrong:
    """``op`` (its first case, or case ``case``) given ``value`` for ``attr``: the builder
    refuses with ``refusal``; ``raw`` (what the old converter made of it, or an attribute of
    the same mistake) forced into the text makes jaxlib say ``jaxlib``."""

    op: str
    attr: str
    value: object
    refusal: str
    raw: object
    jaxlib: str
    case: str | None = None
    also: dict = attrs.field(factory=dict)  # other attributes forced along with raw

    @property
    def id(self):
        return f"{self.op}.{self.attr}={self.value!r:.30}"


def _layout_pair(**kw):
    return {"operand_layouts": A.ArrayAttr([IndexLayout((1, 0))]),
            "result_layouts": A.ArrayAttr([IndexLayout((1, 0))]), **kw}


CC = "api4_dict_config_verified"  # custom_call case: one tensor<2x3xf32> in, one out
INDEX_LAYOUTS = r"Array of layout \(1D tensor of index type\) attributes"

WRONG = [
    # infeed's layout: an array of arrays of integers, each a permutation of its result's dims.
    Wrong("infeed", "layout", [1, 0], "entry 0 must be a list of integers",
          A.ArrayAttr([1, 0]), "layout-attribute expected to have elements of type array"),
    Wrong("infeed", "layout", "x", "expected one list of integers per result",
          A.StringAttr("x"), "Invalid attribute `layout` in property conversion"),
    Wrong("infeed", "layout", [["a"], [0]], "expected an integer",
          A.ArrayAttr([A.ArrayAttr(["a"]), A.ArrayAttr([0])]),
          "leaf elements are expected to be of type integer"),
    Wrong("infeed", "layout", [[0, 0], [0]], r"layout\[0\] = \[0, 0\] must be a permutation",
          A.ArrayAttr([A.ArrayAttr([0, 0]), A.ArrayAttr([0])]),
          "minor_to_major field has duplicate values"),
    # custom_call's layouts: index tensors (IndexLayout), both or neither, one per value.
    Wrong("custom_call", "operand_layouts", [DENSE_I64], "entry 0 must be a list of dimensions",
          A.ArrayAttr([DENSE_I64]), INDEX_LAYOUTS, CC),
    Wrong("custom_call", "result_layouts", A.ArrayAttr([A.ArrayAttr([1, 0])]),
          r"expected an array of layouts \(IndexLayout\)", A.ArrayAttr([A.ArrayAttr([1, 0])]),
          INDEX_LAYOUTS, CC, {"operand_layouts": A.ArrayAttr([IndexLayout((1, 0))])}),
    Wrong("custom_call", "operand_layouts", [[1, 0]],
          "operand_layouts and result_layouts must be given together",
          A.ArrayAttr([IndexLayout((1, 0))]), "should be specified for either both operands "
          "and results or none", CC),
    Wrong("custom_call", "operand_layouts", [[0, 0]], r"layout \[0, 0\] is not a permutation",
          None, "", CC),
    Wrong("custom_call", "result_layouts", [[0]], r"result_layouts\[0\] = \[0\] does not fit "
          r"result 0 of type tensor<2x3xf32>", A.ArrayAttr([IndexLayout((0,))]),
          r"incorrect layout dense<0> : tensor<1xindex> for type 'tensor<2x3xf32>'", CC,
          {"operand_layouts": A.ArrayAttr([IndexLayout((1, 0))])}),
    Wrong("custom_call", "called_computations", [3], "entry 0: expected a function or its name",
          A.ArrayAttr([3]), "flat symbol ref array attribute", CC),
    Wrong("custom_call", "called_computations", A.ArrayAttr(["main"]),
          "expected an array of symbol references", A.ArrayAttr(["main"]),
          "flat symbol ref array attribute", CC),
    Wrong("custom_call", "called_computations", "main", "expected a list of functions",
          A.StringAttr("main"), "Invalid attribute `called_computations`", CC),
    Wrong("custom_call", "output_operand_aliases", [1], "expected OutputOperandAlias values",
          A.ArrayAttr([1]), "output_operand_aliases", CC),
    Wrong("custom_call", "output_operand_aliases", A.ArrayAttr(["x"]),
          "expected OutputOperandAlias values", A.ArrayAttr(["x"]), "output_operand_aliases",
          CC),
    Wrong("custom_call", "backend_config", 1.5, "expected a string", A.FloatAttr(1.5, hlo.f64),
          "backend_config", "TopK_decomposed_by_xla"),
    # precision_config: #mhlo<precision ..> values, at most two.
    Wrong("dot_general", "precision_config", [0, 1], "precision: 0 is not one of DEFAULT",
          A.ArrayAttr([0, 1]), "'precision_config' failed to satisfy constraint"),
    Wrong("dot_general", "precision_config", A.ArrayAttr([A.StringAttr("HIGH")]),
          "expected precisions", A.ArrayAttr([A.StringAttr("HIGH")]),
          "'precision_config' failed to satisfy constraint"),
    Wrong("dot_general", "precision_config", ["HIGH"] * 3, "at most 2 entries, got 3",
          A.ArrayAttr([PRECISION] * 3), "have <= 2 elements, got 3"),
    Wrong("convolution", "precision_config", A.ArrayAttr([PRECISION] * 3),
          "at most 2 entries, got 3", A.ArrayAttr([PRECISION] * 3), "<= 2 elements"),
    Wrong("dot", "precision_config", [EnumAttr("comparison_direction", "GT")],
          "expected a precision attribute, got comparison_direction",
          A.ArrayAttr([EnumAttr("comparison_direction", "GT")]),
          "'precision_config' failed to satisfy constraint"),
    # window_reversal: bools (i1), not 0/1 integers or floats.
    Wrong("convolution", "window_reversal", DenseElementsAttr.from_array(np.array([1, 0])),
          r"expected a 1-D tensor of i1 \(bools\), got tensor<2xi64>",
          DenseElementsAttr.from_array(np.array([1, 0])),
          "constant boolean vector/tensor attribute", "f32_strides_dilations_reversal"),
    Wrong("convolution", "window_reversal", [1.0, 0.0], "expected bools, got float 1.0",
          DenseElementsAttr.from_array(np.array([1, 0], np.float32)),
          "constant boolean vector/tensor attribute", "f32_strides_dilations_reversal"),
    # f32, not f64.
    Wrong("batch_norm_training", "epsilon", A.FloatAttr(1e-3, hlo.f64),
          "expected an f32 float, got 1.000000e-03 : f64", A.FloatAttr(1e-3, hlo.f64),
          "'epsilon' failed to satisfy constraint: 32-bit float attribute"),
    # channel handles: integer fields; the type agrees with is_host_transfer.
    Wrong("all_reduce", "channel_handle", ["1", "1"], "ChannelHandle handle: expected an integer",
          None, ""),
    Wrong("send", "channel_handle", 5, r"channel_handle type must be 2 \(device to host\) when "
          "is_host_transfer is true, got type 1", ChannelHandle(5, 1),
          "channel_type should be DEVICE_TO_HOST when is_host_transfer is true"),
    Wrong("recv", "is_host_transfer", False, r"channel_handle type must be 1 \(device to "
          r"device\) when is_host_transfer is false, got type 3", A.FALSE,
          "channel_type should be DEVICE_TO_DEVICE when is_host_transfer is false"),
    # strings of a particular form.
    Wrong("composite", "name", "double", "expected a namespaced op name", A.StringAttr("double"),
          "name must be a valid namespaced op name"),
    Wrong("domain", "entry_metadata", "maximal device=0", "expected an HLO sharding in braces",
          A.StringAttr("maximal device=0"), "'mhlo.domain' op can't be translated to XLA HLO"),
    Wrong("fusion", "fusion_kind", None, "requires attribute fusion_kind", None, ""),
    # collectives jaxlib cannot check
    Wrong("all_reduce", "replica_groups", [], "use_global_device_ids needs replica_groups",
          DenseElementsAttr.from_array(np.zeros((0, 0), np.int64)),
          "replica groups cannot be empty", "i32_channel_global_device_ids"),
]


def _refused(op, name, value, others=None):
    with pytest.raises(hlo.OpBuildError) as e:
        rebuild(op, name, value, others)
    return str(e.value)


@pytest.mark.parametrize("w", WRONG, ids=lambda w: w.id)
def test_the_builder_refuses_it(w):
    m, op = case_op(w.op, w.case)
    message = _refused(op, w.attr, w.value, w.also)
    assert message.startswith(f"'{w.op}' ") and w.attr in message, message
    assert re.search(w.refusal, message), message


@pytest.mark.parametrize("w", [w for w in WRONG if w.raw is not None], ids=lambda w: w.id)
def test_jaxlib_rejects_it(w):
    m, op = case_op(w.op, w.case)
    text = forced_text(m, op, **{w.attr: w.raw}, **w.also)
    with pytest.raises(verify.VerificationError, match=w.jaxlib):
        verify.check(text)


# -- integer widths ------------------------------------------------------------------------

def _integer_slots():
    """(op, attribute, the width its converter gives) for every integer slot of the table."""
    for op, spec in sorted(hlo.OP_TABLE.items()):
        for name, a in spec.attributes.items():
            if a.convert is convert.i64 or a.convert is convert.i32:
                yield op, name, a.convert.__name__


SLOTS = list(_integer_slots())


def test_integer_slots_use_the_width_converters():
    # Every slot whose jaxlib definition is an integer goes through convert.i32 / i64 (a
    # converter of its own would have to refuse the other width too).
    names = {(op, n) for op, n, _ in SLOTS}
    for must in [("concatenate", "dimension"), ("chlo.top_k", "k"), ("topk", "k"),
                 ("copy", "cross_program_prefetch_index"), ("custom_call", "api_version"),
                 ("get_tuple_element", "index"), ("reduce_precision", "exponent_bits"),
                 ("composite", "version"), ("xla.rng_get_and_update_state", "delta"),
                 ("convolution", "feature_group_count"), ("sort", "dimension")]:
        assert must in names, must


def test_other_widths_are_refused_and_jaxlib_rejects_them():
    texts = []
    for op_name, name, width in SLOTS:
        m, op = case_op(op_name)
        if not op.attributes or name not in op.attributes:
            continue
        v = op.attributes[name].value
        other = hlo.i32 if width == "i64" else hlo.i64
        message = _refused(op, name, A.IntegerAttr(v, other))
        assert message.startswith(f"'{op_name}' attribute {name}: expected an {width} "
                                  f"integer, got {v} : {other.name}"), message
        for bad in (1.5, True, "3", np.float32(2)):
            assert f"attribute {name}: expected an integer, got" in _refused(op, name, bad)
        texts.append((op_name, name, forced_text(m, op, **{name: A.IntegerAttr(v, other)})))
    assert len(texts) > 20
    for (op_name, name, _), v in zip(texts, jaxlib_verdicts(t for _, _, t in texts)):
        assert v.startswith("rejected"), (op_name, name, v)


def test_integers_out_of_range_are_refused():
    _, op = case_op("copy", "i1_prefetch_index")
    assert "does not fit in i32" in _refused(op, "cross_program_prefetch_index", 2**31)


# -- what the converters make jaxlib accepts ---------------------------------------------------

def test_layouts_from_lists_print_as_index_tensors():
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.custom_call("foo", [f.arguments[0]], hlo.tensor((3, 2), hlo.f32),
                            operand_layouts=[[0, 1]],
                            result_layouts=[IndexLayout(range(1, -1, -1))]))
    text = verify.check(m)
    assert "operand_layouts = [dense<[0, 1]> : tensor<2xindex>]" in text
    assert "result_layouts = [dense<[1, 0]> : tensor<2xindex>]" in text
    assert_fixed_point(m)


def test_scalar_and_token_layouts_are_empty():
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((), hlo.f32)], visibility="public")
    b = f.builder()
    tok = b.create_token()
    r = b.custom_call("foo", [f.arguments[0], tok], hlo.tensor((), hlo.f32),
                      operand_layouts=[[], []], result_layouts=[()])
    b.return_(r)
    assert "dense<> : tensor<0xindex>" in verify.check(m)
    assert_fixed_point(m)
    with pytest.raises(hlo.OpBuildError, match=r"operand_layouts\[1\] must be empty for "
                                                r"!token, got \[0\]"):
        b.custom_call("foo", [f.arguments[0], tok], hlo.tensor((), hlo.f32),
                      operand_layouts=[[], [0]], result_layouts=[[]])


def test_called_computations_take_names_and_functions():
    m = hlo.Module("m")
    g = m.add_function("g", [hlo.tensor((2,), hlo.f32)], visibility="private")
    gb = g.builder()
    gb.return_(g.arguments[0])
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    r1 = b.custom_call("foo", [f.arguments[0]], hlo.tensor((2,), hlo.f32),
                       called_computations=["g"])
    r2 = b.custom_call("foo", [r1], hlo.tensor((2,), hlo.f32), called_computations=[g])
    b.return_(r2)
    assert verify.check(m).count("called_computations = [@g]") == 2


def test_precision_config_one_for_both_and_pairs():
    _, op = case_op("dot_general")
    for v in ("high", PRECISION, ["DEFAULT", PRECISION], A.ArrayAttr([PRECISION])):
        pc = rebuild(op, "precision_config", v)["precision_config"]
        assert all(e.kind == "precision" for e in pc.elements) and len(pc.elements) <= 2


def test_index_layout_parses_what_it_renders():
    for dims in [(), (0,), (1, 0), (2, 0, 1), (5, 7), (1, 1)]:  # (any index tensor reads)
        a = IndexLayout(dims)
        ts = TokenStream(a.render())
        assert IndexLayout.parse(ts) == a
        ts.expect_end()
    assert IndexLayout((1, 1)).render() == "dense<1> : tensor<2xindex>"  # a splat, as MLIR's
    m, op = case_op("custom_call", CC)  # as a layout, a permutation or refused
    assert re.search(r"operand_layouts\[0\]: layout \[0, 2\] is not a permutation", _refused(
        op, "operand_layouts", A.ArrayAttr([IndexLayout((0, 2))]),
        {"result_layouts": A.ArrayAttr([IndexLayout((1, 0))])}))
    with pytest.raises(TypeError, match="expected an integer"):
        IndexLayout((1.0, 0))


def test_type_attr_holds_types_only():
    assert A.TypeAttr(hlo.f32).render(hlo.MHLO) == "f32"
    assert A.TypeAttr(hlo.tensor((2,), hlo.f32)).render(hlo.MHLO) == "tensor<2xf32>"
    for bad in ("f32", np.float32, None, 3):
        with pytest.raises(TypeError, match="TypeAttr holds a Type or an element type"):
            A.TypeAttr(bad)


def test_output_operand_aliases_from_dicts():
    m, op = case_op("custom_call", CC)
    attrs_ = rebuild(op, "output_operand_aliases", [
        {"output_tuple_indices": (), "operand_index": 0, "operand_tuple_indices": ()}])
    assert attrs_["output_operand_aliases"].elements == (OutputOperandAlias((), 0, ()),)
    assert "OutputOperandAlias operand_index: expected an integer" in _refused(
        op, "output_operand_aliases", [{"output_tuple_indices": (), "operand_index": "0",
                                        "operand_tuple_indices": ()}])


# -- what used to crash jaxlib now stops in Python ----------------------------------------------

def _all_to_all_split_without_groups():
    m, op = case_op("all_to_all", "f32_split0_concat1")
    empty = DenseElementsAttr.from_array(np.zeros((0, 0), np.int64))
    message = _refused(op, "replica_groups", [])
    assert "replica_groups must name the groups" in message
    return forced_text(m, op, replica_groups=empty)


def _all_to_all_one_operand_tuple_form():
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((3,), hlo.i32)], visibility="public")
    with pytest.raises(hlo.OpBuildError, match="needs at least 2 operands"):
        f.builder().all_to_all([f.arguments[0]], replica_groups=[[0]])
    return ("func.func @main(%a: tensor<3xi32>) -> tensor<3xi32> {\n"
            '  %0 = "mhlo.all_to_all"(%a) {replica_groups = dense<0> : tensor<1x1xi64>} : '
            "(tensor<3xi32>) -> tensor<3xi32>\n"
            "  return %0 : tensor<3xi32>\n}\n")


def _composite_decomposing_into_itself():
    m, op = case_op("composite", "f32")
    op.attributes = {**op.attributes, "decomposition": A.SymbolRefAttr("main")}
    with pytest.raises(hlo.ModuleVerificationError, match="@main is called recursively"):
        m.verify()
    return m.to_text()


def _async_callee_without_thread():
    m, op = case_op("async_start")
    callee = next(f for f in m.functions if f.name == "sum")
    del callee.attributes["execution_thread"]
    with pytest.raises(hlo.ModuleVerificationError, match="@sum needs an execution_thread"):
        m.verify()
    return m.to_text()


def test_texts_that_crashed_jaxlib_are_refused_in_python():
    texts = {"all_to_all split form, no groups": _all_to_all_split_without_groups(),
             "all_to_all tuple form, one operand": _all_to_all_one_operand_tuple_form(),
             "composite decomposing into its own function": _composite_decomposing_into_itself()}
    verdicts = dict(zip(texts, jaxlib_verdicts(texts.values(), raw=True)))
    for what, v in verdicts.items():
        assert v.startswith("crash"), (what, v)
    for what, v in zip(texts, jaxlib_verdicts(texts.values())):
        assert v.startswith("rejected"), (what, v)  # verify.check refuses them in Python
    (v,) = jaxlib_verdicts([_async_callee_without_thread()])
    assert "callee must have execution_thread attribute" in v
