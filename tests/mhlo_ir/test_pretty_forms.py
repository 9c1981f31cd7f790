"""Custom (pretty) op forms, symmetric with the parser, in both output dialects.

Oracle: the MLIR bindings in jaxlib. For every op case and dialect, ``to_text(pretty=True)`` is
byte for byte MLIR's default print of our generic text (up to the case of hex digits), our
parser reads MLIR's print to a module whose generic print is MLIR's generic print of that same
text, and our own pretty text reads back to itself.

Ops whose MLIR custom form we do not write yet print generically (MLIR reads that too); the
cases that use them are strict xfails, listed in ``GENERIC`` with the reason, so that a new
form makes them pass and the entry must go.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir.dialect import MHLO, STABLEHLO
from mhlo_ir.syntax import ParseError
from tests import oracle
from tests.mhlo_ir import ops as ops_pkg
from tests.mhlo_ir.ops.cases import CASES
from verify.api import _jaxlib_parse_and_verify

for _m in pkgutil.iter_modules(ops_pkg.__path__):
    if _m.name.startswith("cases"):
        importlib.import_module(f"{ops_pkg.__name__}.{_m.name}")

CASE_LIST = [c for cs in CASES.values() for c in cs]

# (dialect, op) -> why its MLIR custom form is still printed generically.
GENERIC: dict = {}

# Op names whose attributes the parser cannot read yet (see tests/mhlo_ir/test_parser.py).
_PENDING = ("chlo.broadcast_compare", "ragged_dot", "domain", "fusion", "async_")
# StableHLO spellings the printer does not model (tests/mhlo_ir/ops/test_stablehlo_print.py).
_NO_STABLEHLO = {"all_to_all:i32_tuple_form", "async_start:all_reduce_two_replicas",
                 "async_done:all_reduce_two_replicas",
                 "convolution:f32_strides_dilations_reversal"}


def _ops(module) -> set:
    out, stack = set(), [fn.body for fn in module.functions]
    while stack:
        for block in stack.pop().blocks:
            for op in block.operations:
                out.add(op.spec.name)
                stack.extend(op.regions)
    return out


def _params():
    out = []
    for c in CASE_LIST:
        m, _ = c.build()
        ops = _ops(m)
        for d in (MHLO, STABLEHLO):
            if d is STABLEHLO and (c.id in _NO_STABLEHLO or not all(
                    STABLEHLO.has_op(hlo.ops.spec.lookup(n)) for n in ops)):
                continue
            marks = []
            generic = [GENERIC[(d.name, n)] for n in sorted(ops) if (d.name, n) in GENERIC]
            if generic:
                marks.append(pytest.mark.xfail(strict=True, reason=generic[0]))
            out.append(pytest.param(c, d, marks=marks, id=f"{d.name}:{c.id}"))
    return out


PARAMS = _params()


def _reads(case) -> bool:
    return not case.op.startswith(_PENDING)


@pytest.mark.parametrize("case,dialect", PARAMS)
def test_pretty_print_is_mlirs_and_reads_back(case, dialect):
    m, _ = case.build()
    generic = m.to_text(locations=False, dialect=dialect)
    mlir = str(oracle.parse(generic))
    ours = m.to_text(locations=False, dialect=dialect, pretty=True)
    assert oracle.normalize_hex(ours) == mlir
    if not _reads(case):
        return
    # MLIR's custom print means to us what it means to MLIR.
    back = hlo.parse(mlir)
    assert oracle.normalize_hex(back.to_text(locations=False, dialect=dialect)) == \
        oracle.mlir_generic(mlir)
    # And our own pretty text, with locations, reads back to itself.
    text = m.to_text(dialect=dialect, pretty=True, locations="alias")
    assert hlo.parse(text).to_text(dialect=dialect, pretty=True, locations="alias") == text


def test_generic_entries_name_cases():
    """Every GENERIC entry names an op some case of that dialect uses."""
    used = {(p.values[1].name, n) for p in PARAMS for n in _ops(p.values[0].build()[0])}
    assert set(GENERIC) <= used, set(GENERIC) - used


def test_unread_custom_forms_are_refused_by_name():
    text = ('func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n'
            '  %0 = mhlo.sort %a : tensor<2xf32>\n'
            '  return %0 : tensor<2xf32>\n}\n')
    with pytest.raises(ParseError, match="'mhlo.sort' has no custom form"):
        hlo.parse(text)


def test_generic_print_is_untouched_by_forms():
    """pretty=False prints the generic form for ops that have a custom one."""
    c = next(c for c in CASE_LIST if c.op == "compare")
    text = c.build()[0].to_text(locations=False)
    assert '"mhlo.compare"(' in text and "mhlo.compare " not in text


def test_regions_of_a_form_name_their_arguments():
    c = next(c for c in CASE_LIST if c.op == "while")
    text = c.build()[0].to_text(locations=False, pretty=True)
    assert "%iterArg = " in text and "^bb0" not in text
    assert hlo.parse(text).to_text(locations=False, pretty=True) == text


@pytest.mark.parametrize("dialect", [MHLO, STABLEHLO], ids=lambda d: d.name)
def test_func_ops_drop_their_prefix_only_in_a_function_body(dialect):
    # func is the default dialect of a func.func's body, not of an op's region: MLIR prints
    # `call @g` there and `func.call @g` in a while's body.
    t = hlo.tensor((3,), hlo.f32)
    m = hlo.Module("calls")
    g = m.add_function("g", [t], visibility="private")
    gb = g.builder()
    gb.return_(gb.negate(g.arguments[0]))
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    first = b.call(g, [f.arguments[0]])
    w = b.while_([first],
                 lambda bb, s: bb.compare(bb.reduce(s, bb.constant(0.0), [0], "add"),
                                          bb.constant(10.0), "LT"),
                 lambda bb, s: bb.call(g, [s]))
    b.return_(w)
    ours = m.to_text(locations=False, dialect=dialect, pretty=True)
    assert " = call @g(%arg0)" in ours and " = func.call @g(%iterArg)" in ours
    assert ours == str(oracle.parse(m.to_text(locations=False, dialect=dialect)))
    assert hlo.parse(ours).to_text(locations=False, dialect=dialect, pretty=True) == ours


_CONV = ("func.func @main(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> "
         "tensor<1x4x6x6xf32> {{\n  %0 = mhlo.convolution(%x, %w) dim_numbers = {dn}, "
         "window = {{}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : "
         "(tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>\n"
         "  return %0 : tensor<1x4x6x6xf32>\n}}\n")


@pytest.mark.parametrize("dn,ours", [
    ("[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 0]", "spatial dimension 0 given twice"),
    ("[b, f, 0, 1]x[o, i, 1, 1]->[b, f, 0, 1]", "spatial dimension 1 given twice"),
    ("[b, f, 0, 1]x[o, i, 0, 1]->[b, b, 0, 1]", "dimension label b given twice"),
    ("[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 2]", "must name b, f once and spatial"),
])
def test_bad_convolution_dimension_labels_are_parse_errors_where_jaxlib_refuses_them(dn, ours):
    text = _CONV.format(dn=dn)
    with pytest.raises(Exception, match="mhlo.convolution"):
        _jaxlib_parse_and_verify(text)
    with pytest.raises(ParseError, match=rf"^2:\d+: 'mhlo.convolution': .*{ours}"):
        hlo.parse(text)
    assert hlo.parse(_CONV.format(dn="[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]"))


_BINARY = sorted(s.name for s in hlo.OP_TABLE.values()
                 if s.namespace == "hlo" and s.operands == ("lhs", "rhs") and not s.attributes)


@pytest.mark.parametrize("dialect", ["mhlo", "stablehlo"])
def test_a_compact_reduce_applies_what_mlir_reads_there(dialect):
    """``applies X``: a commutative binary op of the reduce's own dialect, as MLIR's reader
    takes it (any other name made a body of that op, opaque where unknown)."""
    text = (f"func.func @main(%a: tensor<2x3xi32>, %c: tensor<i32>) -> tensor<3xi32> {{\n"
            f"  %0 = {dialect}.reduce(%a init: %c) applies {{op}} across dimensions = [0] : "
            f"(tensor<2x3xi32>, tensor<i32>) -> tensor<3xi32>\n"
            f"  return %0 : tensor<3xi32>\n}}\n")
    names = [f"{d}.{n}" for d in ("mhlo", "stablehlo") for n in _BINARY] + ["foo.add"]
    assert len(names) > 20
    for name in names:
        t = text.replace("{op}", name)
        try:
            _jaxlib_parse_and_verify(t)
            theirs = "accepted"
        except Exception as e:  # noqa: BLE001 - jaxlib's error, judged by its text
            theirs = "refused" if "commutative binary-op" in str(e) else f"other: {e}"
        try:
            hlo.parse(t)
            ours = "accepted"
        except ParseError as e:
            ours = "refused" if "expected a commutative binary op" in str(e) else f"other: {e}"
        assert ours == theirs, (name, ours, theirs)


def test_a_reduce_of_mulhi_prints_compactly_as_mlir_prints_it():
    """MHLO's mulhi is commutative (jaxlib's printer writes ``applies mhlo.mulhi``)."""
    m = hlo.Module("r")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.i32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    b.return_(b.reduce(x, b.constant(np.int32(0)), [0], lambda r, a, c: r.mulhi(a, c)))
    text = m.to_text(locations=False, pretty=True)
    assert "applies mhlo.mulhi" in text
    assert text == str(oracle.parse(m.to_text(locations=False)))
    assert hlo.parse(text).to_text(locations=False) == m.to_text(locations=False)


@pytest.mark.parametrize("dialect", [MHLO, STABLEHLO], ids=lambda d: d.name)
def test_ops_of_no_operands_print_their_empty_parentheses_as_mlir_does(dialect):
    """A while of no values and an optimization_barrier of none (with and without an
    attribute): MLIR writes ``while()`` then ``cond``, and ``optimization_barrier {k = v}()``
    (ours wrote ``while() :`` and ``optimization_barrier  :``, which jaxlib cannot read)."""
    m = hlo.Module("empty")
    f = m.add_function("main", [hlo.tensor((2,), hlo.f32)], visibility="public")
    b = f.builder()
    b.while_([], lambda r: r.constant(False), lambda r: [])
    b.optimization_barrier()
    b.optimization_barrier()
    f.entry_block.operations[-1].set_attr("note", "x")
    b.return_(b.optimization_barrier(f.arguments[0]))
    generic = m.to_text(locations=False, dialect=dialect)
    text = m.to_text(locations=False, dialect=dialect, pretty=True)
    assert text == str(oracle.parse(generic))
    assert "while()\n" in text and 'optimization_barrier {note = "x"}()' in text
    assert hlo.parse(text).to_text(locations=False, dialect=dialect) == generic


@pytest.mark.parametrize("dialect", [hlo.MHLO, hlo.STABLEHLO], ids=["mhlo", "stablehlo"])
def test_discardable_attributes_of_a_while_and_returns_print_as_mlir_prints_them(dialect):
    """The custom forms of while (`` attributes {...}`` after its types), of a region's
    return (``{...}`` before the colon) and of func.return (``{...}`` before its operands)
    dropped the op's other attributes (an mhlo.sharding among them): MLIR's default print
    is the oracle, and our parser reads the text back."""
    m = hlo.Module("m")
    t = hlo.tensor((), hlo.i32)
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    x, = f.arguments
    w = b.while_([x], lambda r, v: r.compare(v, r.constant(np.int32(3)), "LT"),
                 lambda r, v: [r.add(v, r.constant(np.int32(1)))])
    w.owner.set_attr("mhlo.frontend_attributes", {"a": "b"})
    w.owner.regions[1].blocks[0].operations[-1].set_attr("mhlo.frontend_attributes",
                                                          {"c": "d"})
    b.return_(w).set_attr("mhlo.frontend_attributes", {"e": "f"})
    ours = m.to_text(locations=False, pretty=True, dialect=dialect)
    for want in ('attributes {mhlo.frontend_attributes = {a = "b"}}',
                 ' {mhlo.frontend_attributes = {c = "d"}} : tensor<i32>',
                 'return {mhlo.frontend_attributes = {e = "f"}} %0 : tensor<i32>'):
        assert want in ours
    ir, ctx = oracle._context()
    with ctx, ir.Location.unknown():
        theirs = ir.Module.parse(m.to_text(locations=False, dialect=dialect)) \
            .operation.get_asm()
    assert ours == theirs
    assert hlo.parse(ours).to_text(locations=False, pretty=True, dialect=dialect) == ours
    assert hlo.parse(ours).to_text(locations=False) == m.to_text(locations=False)


@pytest.mark.parametrize("dialect", [hlo.MHLO, hlo.STABLEHLO], ids=["mhlo", "stablehlo"])
def test_a_result_less_return_with_attributes_prints_as_mlir_prints_it(dialect):
    m = hlo.Module("r")
    f = m.add_function("main", [hlo.tensor((), hlo.i1)])
    b = f.builder()
    p, = f.arguments
    def marked(r):
        r.return_().set_attr("mhlo.frontend_attributes", {"x": "y"})

    def bare(r):
        r.return_()
    b.if_(p, marked, bare, result_types=[])
    b.return_()
    ours = m.to_text(locations=False, pretty=True, dialect=dialect)
    ir, ctx = oracle._context()
    with ctx, ir.Location.unknown():
        assert ours == ir.Module.parse(m.to_text(locations=False, dialect=dialect)) \
            .operation.get_asm()
    assert hlo.parse(ours).to_text(locations=False) == m.to_text(locations=False)


def test_a_dot_general_with_an_algorithm_and_no_precision_reads_back():
    """Both optional parts of StableHLO's dot_general start with a comma: the reader took
    ``, algorithm`` for ``, precision`` and refused our own (and MLIR's) print."""
    generic = (
        '"builtin.module"() ({\n  "func.func"() <{function_type = (tensor<2x3xf32>, '
        'tensor<3x4xf32>) -> tensor<2x4xf32>, sym_name = "main"}> ({\n  ^bb0(%arg0: '
        'tensor<2x3xf32>, %arg1: tensor<3x4xf32>):\n    %0 = "stablehlo.dot_general"(%arg0, '
        '%arg1) <{algorithm = #stablehlo.dot_algorithm<lhs_precision_type = tf32, '
        'rhs_precision_type = tf32, accumulation_type = f32, lhs_component_count = 1, '
        'rhs_component_count = 1, num_primitive_operations = 3, allow_imprecise_accumulation '
        '= false>, dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], '
        'rhs_contracting_dimensions = [0]>}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> '
        'tensor<2x4xf32>\n    "func.return"(%0) : (tensor<2x4xf32>) -> ()\n  }) : () -> ()\n'
        '}) : () -> ()')
    m = hlo.parse(generic)
    pretty = m.to_text(dialect=hlo.STABLEHLO, pretty=True, locations=False)
    assert "contracting_dims = [1] x [0], algorithm = <lhs_precision_type = tf32" in pretty
    ir, ctx = oracle._context()
    with ctx, ir.Location.unknown():
        assert pretty == ir.Module.parse(generic).operation.get_asm()
    assert hlo.parse(pretty).to_text(dialect=hlo.STABLEHLO, locations=False) == \
        m.to_text(dialect=hlo.STABLEHLO, locations=False)


# -- from the review of the custom forms against MLIR's (twelfth session) --------------------

@pytest.mark.parametrize("dialect", [MHLO, STABLEHLO], ids=lambda d: d.name)
def test_a_composite_leaves_out_its_empty_attributes_as_mlir_does(dialect):
    m = hlo.Module("m")
    t = hlo.tensor((2,), hlo.f32)
    g = m.add_function("g", [t], visibility="private")
    g.builder().return_(g.arguments[0])
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    b.return_(b.composite("my.op", [f.arguments[0]], g, composite_attributes={}))
    generic = m.to_text(locations=False, dialect=dialect)
    text = m.to_text(locations=False, dialect=dialect, pretty=True)
    assert text == str(oracle.parse(generic))
    assert "composite_attributes" not in text
    # (read back without the default it leaves out, as MLIR reads it)
    assert hlo.parse(text).to_text(locations=False, dialect=dialect, pretty=True) == text


@pytest.mark.parametrize("dialect", [MHLO, STABLEHLO], ids=lambda d: d.name)
def test_a_reduce_whose_inner_op_has_attributes_prints_its_body_in_full(dialect):
    """A documented difference: MLIR prints ``applies mhlo.add`` and drops the inner op's
    attributes; ours prints the body and keeps them. MLIR reads ours (and compacts it), and
    we read MLIR's compact text back (without the attribute, as MLIR wrote it)."""
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)], visibility="public")
    b = f.builder()
    r = b.reduce(f.arguments[0], b.constant(np.float32(0)), [0], lambda rb, a, c: rb.add(a, c))
    r.owner.regions[0].blocks[0].operations[0].set_attr("mhlo.frontend_attributes",
                                                        {"k": "v"})
    b.return_(r)
    text = m.to_text(locations=False, dialect=dialect, pretty=True)
    assert "applies" not in text and 'mhlo.frontend_attributes = {k = "v"}' in text
    assert hlo.parse(text).to_text(locations=False, dialect=dialect) == \
        m.to_text(locations=False, dialect=dialect)
    theirs = str(oracle.parse(text))
    assert f"applies {dialect.name}.add" in theirs
    assert hlo.parse(theirs).to_text(locations=False, dialect=dialect, pretty=True) == theirs


def test_a_rank0_stablehlo_dynamic_slice_prints_what_mlir_reads():
    """MLIR writes ``dynamic_slice %arg0, , sizes = []`` for no start indices, which no
    reader takes; ours leaves the empty list out, and MLIR reads it."""
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((), hlo.f32)], visibility="public")
    b = f.builder()
    b.return_(b.dynamic_slice(f.arguments[0], [], []))
    text = m.to_text(locations=False, dialect=STABLEHLO, pretty=True)
    assert "stablehlo.dynamic_slice %arg0, sizes = []" in text
    oracle.parse(text)
    assert hlo.parse(text).to_text(locations=False, dialect=STABLEHLO) == \
        m.to_text(locations=False, dialect=STABLEHLO)
