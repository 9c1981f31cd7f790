"""OpSpec.dialects against the op names jaxlib's dialects register, so it cannot go stale.

An op name is registered when MLIR, not allowing unregistered ops, gets past the name: a
generic ``"stablehlo.copy"() : () -> ()`` fails with "unregistered operation", while a known op
fails its verifier instead (wrong operand count...). That asks the loaded dialects themselves,
not a list kept beside them.
"""

from __future__ import annotations

import functools
import re

import pytest

import mhlo_ir as hlo
from mhlo_ir.dialect import MHLO, STABLEHLO
from mhlo_ir.ops.spec import (CHLO, FUNC, HLO_DIALECTS, MHLO_ONLY, STABLEHLO_NAMESAKE_DIFFERS,
                              STABLEHLO_ONLY, UNDECLARED)
from mhlo_ir.parse_make import CLOSED_DIALECTS, KNOWN_UNTABLED
from tests import oracle
from verify.coverage import jaxlib_ops

SPECS = sorted(hlo.OP_TABLE.values(), key=lambda s: s.name)


@functools.lru_cache(maxsize=None)
def registered(full_name: str) -> bool:
    ir, ctx = oracle._context()
    assert not ctx.allow_unregistered_dialects
    try:
        with ctx, ir.Location.unknown():
            ir.Module.parse(f'"{full_name}"() : () -> ()')
    except ir.MLIRError as e:
        text = str(e)
        if "unregistered operation" in text or "not found for custom op" in text:
            return False
        return True
    return True  # an op that verifies with nothing (none of ours do, but it is registered)


def test_the_probe_tells_registered_from_unregistered():
    assert registered("mhlo.copy") and registered("stablehlo.add")
    assert not registered("stablehlo.copy") and not registered("mhlo.no_such_op")


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_dialects_are_the_registered_ones(spec):
    if spec.namespace == "hlo":
        have = frozenset(d for d in ("mhlo", "stablehlo") if registered(f"{d}.{spec.name}"))
        assert have == spec.dialects, (
            f"{spec.name}: jaxlib registers it in {sorted(have)}, the table says "
            f"{sorted(spec.dialects)}")
        assert spec.dialects in (HLO_DIALECTS, MHLO_ONLY)
    else:
        assert registered(spec.name), spec.name
        assert spec.dialects == {"chlo": CHLO, "func": FUNC}[spec.namespace]
    assert MHLO.has_op(spec)
    assert STABLEHLO.has_op(spec) == (spec.namespace != "hlo" or "stablehlo" in spec.dialects)


def test_mhlo_only_ops():
    """The table's ops without a StableHLO twin (as of jaxlib 0.10.2; a new twin fails the
    test above, which names it)."""
    only = sorted(s.name for s in SPECS if s.dialects == MHLO_ONLY)
    assert len(only) == 21, only


def test_stablehlo_ops_mhlo_lacks_are_listed():
    """Every StableHLO op is in the table (with a StableHLO twin), deliberately undeclared, or
    listed in STABLEHLO_ONLY with what it is."""
    # op_name, not full_name: async_start's namesake is registered (another op), which
    # full_name refuses to print (spec.STABLEHLO_NAMESAKE_DIFFERS)
    table = {STABLEHLO.op_name(s.name) if s.namespace == "hlo" else s.name for s in SPECS
             if STABLEHLO.has_op(s)}
    missing = []
    for name in jaxlib_ops("stablehlo"):
        twin = "mhlo." + name.split(".", 1)[1]
        if name in table or twin in UNDECLARED:
            continue
        if name in STABLEHLO_ONLY:
            assert registered(name) and not registered(twin), name
            continue
        missing.append(name)
    assert not missing, f"StableHLO ops neither in the table nor in STABLEHLO_ONLY: {missing}"
    stale = sorted(n for n in STABLEHLO_ONLY if n not in jaxlib_ops("stablehlo"))
    assert not stale, f"STABLEHLO_ONLY lists ops jaxlib's stablehlo does not have: {stale}"


def test_register_refuses_inconsistent_dialects():
    from mhlo_ir.ops.spec import OpSpec, register
    with pytest.raises(ValueError, match="dialects"):
        register(OpSpec("chlo.not_an_op", namespace="chlo"))
    with pytest.raises(ValueError, match="dialects"):
        register(OpSpec("not_an_op", dialects=frozenset({"stablehlo"})))
    assert "chlo.not_an_op" not in hlo.OP_TABLE and "not_an_op" not in hlo.OP_TABLE


def _parse_error(op_line: str) -> str:
    text = f"func.func public @main(%a: tensor<2xf32>) {{\n  {op_line}\n  return\n}}\n"
    try:
        hlo.parse(text)
    except (hlo.ParseError, hlo.ModuleVerificationError) as e:
        return str(e)
    return ""


@pytest.mark.parametrize("dialect", CLOSED_DIALECTS)
def test_the_parser_knows_every_op_name_jaxlib_registers(dialect):
    """A closed dialect's registered names are the table's or KNOWN_UNTABLED (read as
    opaque ops); the parser calls any other name of these dialects no op at all."""
    for name in jaxlib_ops(dialect):
        message = _parse_error(f'"{name}"() : () -> ()')
        if name in ("func.func", "builtin.module"):
            assert "cannot stand in a block" in message, (name, message)
        elif name.removeprefix("stablehlo.") in STABLEHLO_NAMESAKE_DIFFERS:
            assert "StableHLO's own op" in message, (name, message)
        else:
            assert "is no op of" not in message, (name, message)
    stale = sorted(n for n in KNOWN_UNTABLED if n not in jaxlib_ops(n.split(".")[0]))
    assert not stale, f"KNOWN_UNTABLED lists names jaxlib does not register: {stale}"


@pytest.mark.parametrize("name", ["mhlo.frobnicate", "stablehlo.addd", "chlo.erff",
                                  "func.frob", "builtin.frob", "mhlo.unary_einsum"])
def test_a_name_no_closed_dialect_registers_is_refused_as_by_jaxlib(name):
    line = f'%0 = "{name}"(%a) : (tensor<2xf32>) -> tensor<2xf32>'
    assert not registered(name)
    assert re.match(rf"2:8: '{re.escape(name)}' is no op of {name.split('.')[0]}",
                    _parse_error(line)), _parse_error(line)
