"""What a program met for the first time shares with programs met before: a splat's scalar
and printed element, a dot's dimension numbers, an op's attribute mapping, the starts of a
block label's entries. Each memo is keyed by what the text depends on exactly (element type
and bits, the identity of attribute objects), so a program printed after others at other
shapes prints as it would alone; MLIR's re-print of the text is the independent check.
"""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir.attributes import FloatAttr
from mhlo_ir.errors import OpBuildError
from mhlo_ir.op_attributes import shared_attributes
from tests import oracle


def _builder(arg_types=()):
    m = hlo.Module("m")
    f = m.add_function("main", list(arg_types))
    return m, f, f.builder()


# One element's bytes read as several element types: a memo keyed by the bytes alone would
# print one type's spelling for another's (MLIR's spellings, written out here).
_SAME_BYTES = [
    (np.float16(1.0), "1.000000e+00", "f16"),
    (np.int16(0x3C00), "15360", "i16"),
    (np.uint16(0x3C00), "15360", "ui16"),
    (np.array(0x3C00, np.uint16).view(hlo.bf16.dtype)[()], "7.812500e-03", "bf16"),
    (np.float32(-0.0), "-0.000000e+00", "f32"),
    (np.int32(-2**31), "-2147483648", "i32"),
    (np.float32(0.0), "0.000000e+00", "f32"),
]


@pytest.mark.parametrize("order", [1, -1])
def test_splat_elements_print_by_type_and_bits_whatever_printed_before(order):
    m, _, b = _builder()
    outs = []
    for k, (value, text, name) in enumerate(_SAME_BYTES[::order]):
        c = b.constant(value, shape=(2, k + 1))
        outs.append(c)
        line = f"dense<{text}> : tensor<2x{k + 1}x{name}>"
        one, _, ob = _builder()
        ob.return_(ob.constant(value, shape=(2, k + 1)))
        assert line in one.to_text(locations=False)
    b.return_(*outs)
    text = oracle.assert_fixed_point(m)
    for value, spelled, name in _SAME_BYTES:
        assert f"dense<{spelled}> : tensor<" in text


def test_a_splat_at_a_new_shape_keeps_its_own_bits():
    m, _, b = _builder()
    nan1 = np.array(0x7FC00001, np.uint32).view(np.float32)[()]
    values = [0.0, -0.0, 0.0, float(nan1), float("nan"), -0.0, 1, True, 2.5]
    outs = [b.constant(v, shape=(k % 3 + 1, k + 1)) for k, v in enumerate(values)]
    b.return_(*outs)
    text = oracle.assert_fixed_point(m)
    want = ["0.000000e+00", "-0.000000e+00", "0.000000e+00", "0x7FC00001", "0x7FC00000",
            "-0.000000e+00", "1", "true", "2.500000e+00"]
    got = [line.split("dense<")[1].split(">")[0] for line in text.splitlines()
           if "mhlo.constant" in line]
    assert got == want
    # Refusals stay refusals after the value's scalar was kept at another shape.
    b2 = _builder()[2]
    b2.constant(300, shape=(2,))
    with pytest.raises(OpBuildError, match="out of range for i8"):
        b2.constant(300, dtype=hlo.i8, shape=(3,))


def test_ops_built_alike_at_other_shapes_share_their_attribute_mapping():
    widths = (3, 5, 7)
    m, f, b = _builder([t for w in widths for t in
                        (hlo.tensor((2, w), hlo.f32), hlo.tensor((w, 2), hlo.f32))])
    args = f.arguments
    dots = [b.dot_general(args[2 * i], args[2 * i + 1], ((1,), (0,))) for i in range(3)]
    bcasts = [b.broadcast_in_dim(args[2 * i], (4, 2, w), [1, 2]) for i, w in enumerate(widths)]
    assert dots[0].attributes is dots[1].attributes is dots[2].attributes
    assert bcasts[0].attributes is bcasts[1].attributes is bcasts[2].attributes
    b.return_(*dots, *bcasts)
    text = oracle.assert_fixed_point(m)
    assert text.count("lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]") == 3


def test_attribute_mappings_are_shared_by_identity_never_equality():
    pos, neg, pos2 = FloatAttr(0.0, hlo.f32), FloatAttr(-0.0, hlo.f32), FloatAttr(0.0, hlo.f32)
    a = shared_attributes({"epsilon": pos})
    assert shared_attributes({"epsilon": pos}) is a
    assert shared_attributes({"epsilon": neg}) is not a
    assert shared_attributes({"epsilon": neg})["epsilon"] is neg
    assert pos2 == pos and shared_attributes({"epsilon": pos2})["epsilon"] is pos2
    assert shared_attributes({"eps": pos}) is not a  # (the names too)
    with pytest.raises(TypeError, match="read-only"):
        a["epsilon"] = neg


def test_a_dot_checks_what_its_check_checks_when_inferred_and_when_given():
    m, f, b = _builder([hlo.tensor((2, 3), hlo.f32), hlo.tensor((3, 4), hlo.f32)])
    x, y = f.arguments
    # Inferred (the builder): the algorithm rule runs in inference itself (infer_checks).
    bad = hlo.DotAlgorithm(lhs_precision_type=hlo.f32, rhs_precision_type=hlo.f32,
                           accumulation_type=hlo.f32, lhs_component_count=3,
                           rhs_component_count=3, num_primitive_operations=7,
                           allow_imprecise_accumulation=False)
    with pytest.raises(OpBuildError, match="not one XLA knows"):
        b.dot_general(x, y, ((1,), (0,)), algorithm=bad)
    # Given (create with result types, as Module.verify passes them): the check runs.
    with pytest.raises(OpBuildError, match="result must have shape"):
        b.create("dot_general", [x, y], {"dot_dimension_numbers": hlo.DotDimensionNumbers(
            (), (), (1,), (0,))}, result_types=[hlo.tensor((2, 3), hlo.f32)])
    b.return_(b.dot_general(x, y, ((1,), (0,))))
    m.verify()


@pytest.mark.parametrize("n", [1, 63, 64, 65, 130])
def test_labels_of_many_arguments_print_as_mlir_does(n):
    t = [hlo.tensor((k % 3 + 1,), hlo.f32) for k in range(n)]
    m, f, b = _builder(t)
    b.return_(f.arguments[-1])
    oracle.assert_fixed_point(m)


def test_region_labels_print_as_mlir_does():
    # A region's block arguments after the function's: numbered on, not from %arg0.
    m, f, b = _builder([hlo.tensor((), hlo.f32), hlo.tensor((70,), hlo.i32)])
    x, y = f.arguments
    w = b.while_([x, y], lambda r, i, j: r.compare(i, i, "LT"),
                 lambda r, i, j: [r.add(i, i), j])
    b.return_(*w)
    oracle.assert_fixed_point(m)


# -- from the review of these memos (2026-12-07) ----------------------------------------------

def test_splats_of_a_given_dtype_share_one_mapping():
    m, f, b = _builder()
    ops = [b.constant(0.0, dtype=hlo.f32, shape=(4,)) for _ in range(3)]
    assert ops[0].attributes is ops[1].attributes is ops[2].attributes
    b.return_(*ops)
    oracle.assert_fixed_point(m)


def test_no_memo_keeps_a_dropped_programs_big_constant_alive():
    import gc
    import weakref
    rng = np.random.default_rng(0)
    refs = []
    for shape in ((64, 3), (64, 5)):
        m, f, b = _builder()
        c = b.constant(rng.standard_normal(shape).astype(np.float32))
        b.return_(c)
        m.to_text()
        refs.append(weakref.ref(c.attributes["value"]))
        del m, f, b, c
    gc.collect()
    assert [r() for r in refs] == [None, None]


@pytest.mark.parametrize("reduction", [False, True])
def test_a_line_kept_for_a_dropped_mapping_never_prints_for_one_that_reuses_its_id(reduction):
    # The printer keeps an op's line parts by the identity of its attribute mapping, and the
    # parts hold no reference to it: the kept attribute texts of the mapping do, so its id
    # cannot pass to another mapping while the line is kept. Mappings are made and dropped
    # here, where CPython would hand one's memory (its id) to the next, each print checked.
    t = hlo.tensor((3,), hlo.f32)
    for k in range(300):
        m, f, b = _builder([t, t])
        x, y = f.arguments
        if reduction:  # (a reduction's line is kept as a whole, by the same identity)
            out = b.reduce(b.add(x, y), b.constant(np.float32(0)), [0], "add")
            out.set_attr("tag.k", k)
        else:
            out = b.create("add", (x, y), {"tag.k": k}).results[0]
        b.return_(out)
        text = m.to_text(locations=False)
        assert f"tag.k = {k} : i64" in text and text.count("tag.k") == 1, text
        del m, f, b, x, y, out


@pytest.mark.parametrize("pretty", [False, True])
def test_a_function_without_a_return_is_an_ir_error_when_printed(pretty):
    m = hlo.Module("m")
    m.add_function("main", [hlo.tensor((2,), hlo.f32)])
    with pytest.raises(hlo.IRError, match="has no return yet"):
        m.to_text(pretty=pretty)


def test_the_label_heads_kept_are_bounded():
    from mhlo_ir import print_caches
    t = [hlo.tensor((2,), hlo.f32)] * 1500
    m, f, b = _builder(t)
    b.return_(f.arguments[-1])
    oracle.assert_fixed_point(m)
    assert len(print_caches.arg_heads(3)) <= 1024


def test_the_printers_shared_caches_are_bounded_and_replacing_them_changes_no_text(monkeypatch):
    # Each dialect's caches are looked at every _CHECK_EVERY-th print and replaced whole when
    # one has passed the limit: never more than what that many prints add past it.
    from mhlo_ir import print_caches
    monkeypatch.setattr(print_caches, "_SHARED", {})
    monkeypatch.setattr(print_caches, "_SHARED_LIMIT", 40)

    def module(n):
        m, f, b = _builder([hlo.tensor((n,), hlo.f32)] * 2)
        x, y = f.arguments
        b.return_(b.negate(b.add(x, y)))
        return m
    texts, sizes = [], []
    for n in range(1, 400):
        texts.append(module(n).to_text(locations=False))
        entry, = print_caches._SHARED.values()
        sizes.append(max(map(len, entry[1])))
    added = max(b - a for a, b in zip(sizes, sizes[1:]))  # the most one print adds (~6)
    assert 0 < added <= 8 and max(sizes) <= 40 + print_caches._CHECK_EVERY * added
    assert sum(b < a for a, b in zip(sizes, sizes[1:])) >= 2  # replaced, more than once
    monkeypatch.setattr(print_caches, "_SHARED", {})
    assert texts == [module(n).to_text(locations=False) for n in range(1, 400)]
    for n in (1, 7, 399):  # and independently of those caches: what MLIR prints
        oracle.assert_fixed_point(module(n))


def test_a_shape_given_as_a_generator_is_read_once():
    assert hlo.tensor((np.int64(d) for d in (2, 3)), hlo.f32) is hlo.tensor((2, 3), hlo.f32)
    with pytest.raises(TypeError, match="True is not an integer"):
        hlo.tensor((x for x in [True, 3]), hlo.f32)


# -- reading a program met for the first time -----------------------------------------------

@pytest.mark.parametrize("text, read", [
    ("tensor<2x3xf32>", "tensor<2x3xf32>"), ("tensor<f32>", "tensor<f32>"),
    ("tensor<0x5xi1>", "tensor<0x5xi1>"), ("tensor<7xf8E4M3FN>", "tensor<7xf8E4M3FN>"),
    ("tensor<02x3xf32>", "tensor<2x3xf32>"),  # (another spelling: read by the tokens)
    ("tensor<9223372036854775808xf32>", "dimension 9223372036854775808 is too large"),
    ("tensor<4611686018427387904x4xf32>", "is too large: XLA refuses"),
    ("tensor<2xbogus>", "1:10: expected an element type"),
])
def test_a_tensor_type_met_for_the_first_time_reads_as_its_tokens_do(text, read):
    from mhlo_ir.syntax import ParseError
    from mhlo_ir.types import parse_type
    for _ in range(2):  # (new, then kept)
        try:
            got = str(parse_type(text))
        except ParseError as e:
            got = str(e)
        assert read in got


def test_splat_elements_read_by_spelling_and_element_type():
    lines = [f'%{i} = "mhlo.constant"() <{{value = dense<{v}> : tensor<{n}x{t}>}}> : () -> '
             f'tensor<{n}x{t}>' for i, (v, t, n) in enumerate([
                 ("1.500000e+00", "f32", 2), ("1.500000e+00", "bf16", 3),
                 ("1.500000e+00", "f16", 2), ("1.500000e+00", "f8E4M3FN", 4),
                 ("-0.000000e+00", "f32", 5), ("0.000000e+00", "f32", 6),
                 ("1", "i32", 2), ("1", "i8", 3), ("true", "i1", 2), ("0x7FC00001", "f32", 2)])]
    text = ('"builtin.module"() ({\n  "func.func"() <{function_type = () -> tensor<2xf32>, '
            'sym_name = "main"}> ({\n' + "".join(f"    {line}\n" for line in lines) +
            '    "func.return"(%0) : (tensor<2xf32>) -> ()\n  }) : () -> ()\n}) : () -> ()\n')
    m = hlo.parse(text)
    assert m.to_text(locations=False) == text  # (our print of what was read: its spelling)
    oracle.assert_fixed_point(text)
    values = [op.attributes["value"].to_array().reshape(-1)[0]
              for op in m.functions[0].entry_block.operations[:-1]]
    assert [np.float32(values[4]).tobytes(), np.float32(values[5]).tobytes()] == [
        np.float32(-0.0).tobytes(), np.float32(0.0).tobytes()]
    assert values[1] == values[2] == values[0] == 1.5 and values[6] == values[7] == 1


def test_a_long_element_spelling_is_read_but_not_kept():
    import sys
    from mhlo_ir.attributes import parse_attribute
    dense = sys.modules["mhlo_ir.dense"]
    spelling = "1." + "0" * 5000
    a = parse_attribute(f"dense<{spelling}> : tensor<2xf32>")
    assert a.to_array().tolist() == [1.0, 1.0]
    assert all(len(sp) <= 80 for _, sp in dense._ONE_ELEMENT)


def test_a_dimension_of_more_digits_than_int_reads_is_a_parse_error():
    from mhlo_ir.syntax import ParseError
    from mhlo_ir.types import parse_type
    with pytest.raises(ParseError, match="1:8: invalid dimension"):
        parse_type("tensor<" + "1" * 4400 + "xf32>")
