"""``result_accuracy``: how accurately a transcendental op (exponential, log, tanh...) must
compute, as JAX's ``lax.exp(x, accuracy=lax.Tolerance(...))`` asks XLA for it:

    #mhlo.result_accuracy<atol = 1.000000e-05, rtol = 0.0, ulps = 2,
                          mode = #mhlo.result_accuracy_mode<TOLERANCE>>

(``#stablehlo.`` in StableHLO). MLIR leaves out tolerances of 0 and always writes the mode; its
verifier takes tolerances with ``TOLERANCE`` only, never negative ones. The custom form leaves
out the default accuracy (``DEFAULT``), the generic form does not.
"""

from __future__ import annotations

import math

import attrs

from .attributes import Attribute, read_number_literal
from .dtypes import f64
from .floatfmt import float_from_bits, format_float, parse_float_bits
from .mhlo_attributes import register_dialect_attribute

__all__ = ["ResultAccuracy", "MODES", "DEFAULT_ACCURACY", "OPS", "result_accuracy"]

MODES = ("DEFAULT", "HIGHEST", "TOLERANCE")
# The ops that take one (StableHLO's and MHLO's ODS: their unary transcendental functions).
OPS = frozenset({"cbrt", "cosine", "exponential", "exponential_minus_one", "log",
                 "log_plus_one", "logistic", "rsqrt", "sine", "sqrt", "tan", "tanh"})


def _as_float(x) -> float:
    """``float`` wrapped (attrs reads a builtin converter's signature at import: slow)."""
    return float(x)


def _tolerance(what):
    def check(_, __, v):
        if v.__class__ is not float or not math.isfinite(v) or math.copysign(1.0, v) < 0:
            raise ValueError(f"result_accuracy {what} must be a finite float >= 0 (not -0.0), "
                             f"got {v!r}")
    return check


@attrs.frozen
class ResultAccuracy(Attribute):
    """An op's required accuracy: ``mode`` (DEFAULT, HIGHEST, TOLERANCE) and, for TOLERANCE,
    an absolute, a relative and an ulps tolerance (XLA picks an implementation within them)."""

    mode: str = attrs.field(default="DEFAULT")
    atol: float = attrs.field(default=0.0, converter=_as_float, validator=_tolerance("atol"))
    rtol: float = attrs.field(default=0.0, converter=_as_float, validator=_tolerance("rtol"))
    ulps: int = attrs.field(default=0)

    def __attrs_post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"result_accuracy mode must be one of {', '.join(MODES)}, got "
                             f"{self.mode!r}")
        if self.ulps.__class__ is not int or not 0 <= self.ulps < 2**63:
            raise ValueError(f"result_accuracy ulps must be an int in [0, 2**63), got "
                             f"{self.ulps!r}")
        if self.mode != "TOLERANCE" and (self.atol or self.rtol or self.ulps):
            raise ValueError(f"result_accuracy with mode {self.mode} takes no tolerances "
                             "(MLIR's verifier: only TOLERANCE does)")

    def render(self, dialect) -> str:
        parts = []
        if self.atol:
            parts.append(f"atol = {format_float(self.atol, f64)}")
        if self.rtol:
            parts.append(f"rtol = {format_float(self.rtol, f64)}")
        if self.ulps:
            parts.append(f"ulps = {self.ulps}")
        parts.append(f"mode = #{dialect.name}.result_accuracy_mode<{self.mode}>")
        return f"#{dialect.name}.result_accuracy<{', '.join(parts)}>"

    @classmethod
    def parse(cls, ts, dialect) -> "ResultAccuracy":
        """Reads ``#mhlo.result_accuracy<...>`` (the mode required, as in MLIR)."""

        def number(ts):
            tok, spelling = read_number_literal(ts, "a tolerance")
            return float_from_bits(ts.make(tok, parse_float_bits, spelling, f64), f64)

        def mode(ts):
            head = f"#{dialect.name}.result_accuracy_mode"
            if ts.peek().text != head:
                raise ts.expected(f"{head}<...>")
            ts.next()
            ts.expect("<")
            tok = ts.expect_kind("bare", "a mode (" + ", ".join(MODES) + ")")
            ts.expect(">")
            return tok.text
        # In MLIR's order, each at most once, the mode last and required (MLIR refuses the
        # fields in another order: "expected 'mode'").
        readers = {"atol": number, "rtol": number, "ulps": ts.__class__.integer, "mode": mode}
        start = ts.peek()
        closing = dialect.open_struct(ts, "result_accuracy")
        fields = {}
        for name in ("atol", "rtol", "ulps", "mode"):
            if name != "mode" and not ts.at(name):
                continue
            ts.expect(name)
            ts.expect("=")
            fields[name] = readers[name](ts)
            if name != "mode":
                ts.expect(",")
        dialect.close_struct(ts, closing)
        return ts.make(start, cls, **fields)


DEFAULT_ACCURACY = ResultAccuracy()
register_dialect_attribute("result_accuracy", ResultAccuracy.parse)


def result_accuracy(value) -> ResultAccuracy:
    """The attribute of ``value``: a ResultAccuracy, a mode's name ("HIGHEST"), or a dict
    of its fields (``{"mode": "TOLERANCE", "atol": 1e-5}``)."""
    if isinstance(value, ResultAccuracy):
        return value
    if isinstance(value, str):
        return ResultAccuracy(value)
    if isinstance(value, dict):
        return ResultAccuracy(**value)
    raise TypeError(f"result_accuracy takes a ResultAccuracy, a mode's name or a dict of its "
                    f"fields, got {type(value).__name__} {value!r:.60}")
