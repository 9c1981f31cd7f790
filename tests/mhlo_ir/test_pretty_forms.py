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

import pytest

import mhlo_ir as hlo
from mhlo_ir.dialect import MHLO, STABLEHLO
from mhlo_ir.syntax import ParseError
from tests import oracle
from tests.mhlo_ir import ops as ops_pkg
from tests.mhlo_ir.ops.cases import CASES

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
