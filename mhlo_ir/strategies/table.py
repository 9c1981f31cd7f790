"""The generator's rule table: for each op of the op table, how to draw a well-formed call of
it in a scope, or why generated programs leave it out.

``tests/mhlo_ir/strategies/test_rules.py`` checks that every op of ``mhlo_ir.OP_TABLE`` is in
exactly one of ``RULES`` and ``EXCLUDED``, so an op added to the table without a rule fails
the suite instead of silently never being generated.
"""

from __future__ import annotations

from typing import Callable

import attrs

from ..xla_cpu import TWO_BIT_COLLECTIVES

__all__ = ["Rule", "RULES", "EXCLUDED", "REFUSED", "rule", "exclude", "refuses"]


@attrs.frozen
class Rule:
    """How to draw one op. ``fn(scope)`` builds it (and whatever operands it needs) and
    returns the tensor values it adds to the pool, or raises ``Skip``; it adds to its
    ``Generation``'s traits what a comparison of two executors must allow for. ``nests``: it
    builds regions or functions that are filled with drawn ops."""

    name: str
    fn: Callable
    nests: bool = False


RULES: dict = {}
EXCLUDED: dict = {}


def rule(*names, nests: bool = False):
    """Register ``fn(scope, name)`` as the rule of each op in ``names``."""
    def register(fn):
        for name in names:
            if name in RULES:
                raise ValueError(f"two rules for {name}")
            RULES[name] = Rule(name, (lambda s, _n=name: fn(s, _n)), nests)
        return fn
    return register


def exclude(reason: str, *names) -> None:
    for name in names:
        EXCLUDED[name] = reason


def exclude_not_run(registry) -> None:
    """Ops the op table says do not run on XLA:CPU, excluded with the table's reason."""
    for name, op in registry.items():
        if op.not_run and name not in RULES and name not in EXCLUDED:
            EXCLUDED[name] = "does not run on XLA:CPU: " + op.not_run


exclude("a terminator: every function and region of a generated program ends with one",
        "func.return", "return")


def _sub_byte(et):
    return et.is_sub_byte


def _small_float(et):
    return et.kind == "float" and et.bits <= 8


def _two_bits(et):
    return et.bits == 2


def _c128(et):
    return et.name == "complex<f64>"


# Element types XLA:CPU (jaxlib 0.10.2) refuses, or crashes on, for an op whose builder
# accepts them, measured by compiling every rule alone on every element type
# (docs/findings.md): op -> (why, predicate on the element type). Generated programs leave
# these pairs out; each is a finding, not a rule of the language.
REFUSED: dict = {
    "chlo.bessel_i1e": ("chlo legalization fails for 8-bit and 4-bit floats", _small_float),
    "chlo.erfc": ("chlo legalization fails for 8-bit and 4-bit floats", _small_float),
    "chlo.top_k": ("XLA:CPU: custom element sizes on non-sub-byte types (the i32 iota it "
                   "makes for sub-byte operands)", _sub_byte),
    "topk": ("XLA:CPU: custom element sizes on non-sub-byte types (the i32 iota it makes for "
             "sub-byte operands)", _sub_byte),
    "concatenate": ("XLA:CPU aborts the process compiling a concatenate of i2 or ui2",
                    _two_bits),
    **{name: (f"XLA:CPU corrupts its heap running a {name} of i2 or ui2 (verify refuses "
              "it)", _two_bits) for name in TWO_BIT_COLLECTIVES},
    "cross-replica-sum": ("XLA:CPU: AllReduce for 2-bit datatypes is not supported",
                          _two_bits),
    "all_reduce": ("XLA:CPU: AllReduce for 2-bit datatypes is not supported", _two_bits),
    "reduce_scatter": ("XLA:CPU: AllReduce for 2-bit datatypes is not supported", _two_bits),
    "sort": ("XLA:CPU: 'Inputs must have the same shape' when an operand has a sub-byte "
             "type (its layout's element size)", _sub_byte),
    "mulhi": ("XLA:CPU cannot fuse a signed mulhi with other elementwise ops ('Unsupported "
              "elementwise operation'), and its optimization barriers are removed before "
              "fusion", lambda et: et.kind == "sint"),
    "chlo.mulhi": ("it becomes mhlo.mulhi, which XLA:CPU cannot fuse when signed",
                   lambda et: et.kind == "sint"),
    **{name: ("XLA:CPU: 'unsupported operand type S2 in op dot' (4-bit dots of one type "
              "run; widening ones are mhlo_ir.xla_cpu.widening_sub_byte_dot)", _two_bits)
       for name in ("dot_general", "dot")},
    "rng": ("XLA:CPU aborts the process compiling rng of integers narrower than 32 bits "
            "or floats narrower than 16 (mhlo_ir.xla_cpu.narrow_rng)",
            lambda et: et.kind in ("sint", "uint", "bool") and et.bits < 32 or
            et.kind == "float" and et.bits < 16),
}
for _op in ("add", "atan2", "compare", "divide", "maximum", "minimum", "multiply", "power",
            "subtract"):
    REFUSED["chlo.broadcast_" + _op] = ("chlo legalization fails for complex<f64> "
                                        "(complex<f32> works)", _c128)


def refuses(op: str, et) -> bool:
    entry = REFUSED.get(op)
    return entry is not None and entry[1](et)
