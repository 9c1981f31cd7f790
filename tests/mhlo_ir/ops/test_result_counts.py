"""An op given the wrong number of results is refused by its spec (OpSpec.n_results), before a
rule that takes one result for granted reads it: the builder's ``create``, Module.verify and
the parser all run ``OpSpec.validate``. Before n_results, 18 single-result ops whose ``check``
replaces the comparison with inferred types accepted a second result (text jaxlib refuses)
and raised IndexError on none.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

from mhlo_ir import OpBuildError
from mhlo_ir.ir import walk
from mhlo_ir.parser import IllFormedOpError, parse
from tests.mhlo_ir import ops as ops_pkg
from tests.mhlo_ir.ops.cases import CASES
from verify.api import _jaxlib_parse_and_verify

for _m in pkgutil.iter_modules(ops_pkg.__path__):
    if _m.name.startswith("cases_"):
        importlib.import_module(f"{ops_pkg.__name__}.{_m.name}")

# Ops whose result count is their own business: a custom call's results are the target's,
# a call's its callee's (checked against the callee by Module.verify), a composite's its
# decomposition's.
ANY_COUNT = {"custom_call", "func.call", "composite"}


def _one_op_per_spec() -> dict:
    seen: dict = {}
    for cases in CASES.values():
        for c in cases:
            module, _ = c.build()
            for _, op in walk(module):
                seen.setdefault(op.spec.name, op)
    return seen


OPS = _one_op_per_spec()


def _annotation(op) -> bool:
    """A custom_call to one of XLA's annotations of one value (Sharding, SPMD*Shape...),
    which take one result (mhlo_ir.ops.custom_call: XLA aborts on another count)."""
    from mhlo_ir.ops.custom_call import _ONE_TO_ONE
    target = getattr((op.attributes or {}).get("call_target_name"), "value", None)
    return op.spec.name == "custom_call" and target in _ONE_TO_ONE


@pytest.mark.parametrize("name", sorted(OPS))
def test_a_result_more_or_none_is_refused_by_the_spec(name):
    op = OPS[name]
    spec = op.spec
    types = tuple(v.type for v in op.operands)
    results = tuple(r.type for r in op.results)
    wrong = [() if results else None, results + results[-1:] if results else None]
    for rt in wrong:
        if rt is None:
            continue
        if name in ANY_COUNT and not _annotation(op):
            spec.validate(types, op.attributes, rt, op.regions)  # (no IndexError either)
            continue
        with pytest.raises(OpBuildError, match=f"'{name}'.*(result|returns)"):
            spec.validate(types, op.attributes, rt, op.regions)


_RESHAPE = '"mhlo.reshape"(%a) : (tensor<2x8xf32>) -> '
_CONVERT = '"mhlo.convert"(%a) : (tensor<2x8xf32>) -> '


@pytest.mark.parametrize("line,results", [
    (f"%0:2 = {_RESHAPE}(tensor<16xf32>, tensor<16xf32>)", 2),
    (f"{_RESHAPE}()", 0),
    (f"%0:2 = {_CONVERT}(tensor<2x8xi32>, tensor<2x8xi32>)", 2),
])
def test_parsed_text_with_a_wrong_result_count_is_refused_at_the_op_as_by_jaxlib(line, results):
    text = ("func.func public @main(%a: tensor<2x8xf32>) -> tensor<2x8xf32> {\n"
            f"  {line}\n"
            "  return %a : tensor<2x8xf32>\n}\n")
    with pytest.raises(Exception, match="op requires one result"):
        _jaxlib_parse_and_verify(text)
    with pytest.raises(IllFormedOpError, match=rf"^2:\d+: .*has {results} results, expected 1"):
        parse(text)
