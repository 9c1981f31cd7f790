"""The op table's row type, and the shared checks result-type rules are written with.

An ``OpSpec`` is everything the rest of the package knows about an op: its dialect-neutral name,
operand names (a trailing ``*`` marks a variadic group), the attributes it owns with their
converters, how many regions it has, and a rule that computes result types from operand types
and attributes (or ``None`` for ops whose results the caller must state). The builder, printer,
verifier and coverage report all read this one table.
"""

from __future__ import annotations

import sys
from typing import Callable

import attrs

from ..errors import OpBuildError
from ..quant import _INTERNED as _QUANT_TYPES
from ..quant import is_quantized
from ..types import TensorType, TokenType, TupleType, Type, tensor

__all__ = ["OpSpec", "AttrSpec", "fail", "tensor_operand", "region_arg", "same_shape",
           "REGISTRY", "register", "lookup", "builder_method", "BUILDER_METHODS", "HLO_DIALECTS",
           "MHLO_ONLY", "CHLO", "FUNC", "STABLEHLO_ONLY", "INSTEAD_OF",
           "STABLEHLO_NAMESAKE_DIFFERS", "NO_CONVERSION"]

# Values of OpSpec.dialects, the jaxlib dialects that define an op; tests/mhlo_ir/
# test_op_dialects.py checks every op's against the op names jaxlib registers.
HLO_DIALECTS = frozenset({"mhlo", "stablehlo"})
MHLO_ONLY = frozenset({"mhlo"})  # no StableHLO twin: XLA-internal, or spelled otherwise there
# The values of OpSpec.quantized.
QUANTIZED_FAMILIES = ("", "qdq", "dot_like", "storage", "carrier", "not_yet")

CHLO = frozenset({"chlo"})
FUNC = frozenset({"func"})


@attrs.frozen
class AttrSpec:
    """One attribute an op owns: a converter from Python values and whether it must be set."""

    convert: Callable
    required: bool = False


@attrs.frozen(eq=False)
class OpSpec:
    """One row of the op table."""

    name: str
    operands: tuple = ()
    attributes: dict = attrs.field(factory=dict)
    regions: int = 0
    infer: Callable | None = None
    # check(op, operand_types, attributes, result_types, regions) raises OpBuildError when the
    # op is ill-formed; it runs when the op is built and again when a module is verified.
    check: Callable | None = None
    # Whether ``infer`` itself rejects everything ``check`` would of the result types it
    # returns (dot_general: the check re-infers the shape to compare), so that the check
    # need not run again on inferred results; it still runs on given ones (Module.verify).
    infer_checks: bool = False
    # How many results an op of this spec has, where the count is fixed and ``check`` (which
    # replaces the comparison with ``infer``'s results) takes it for granted: a result count
    # other than this fails before ``check`` runs. None: ``infer`` or ``check`` says.
    n_results: int | None = None
    # operand_check(op, operands, attributes, result_types) raises OpBuildError when the op
    # contradicts what its operand Values themselves are, which types cannot show: a shape
    # operand that is a constant holding another shape than the result type's (jaxlib reads
    # such constants: mhlo_ir.ops.held), a prefetching copy of a value that is no block
    # argument. The builder's ``create`` and Module.verify run it on every op of such a spec
    # (no cache keyed by types stands for such an op: ``decided_by_types``).
    operand_check: Callable | None = None
    # uses_check(module, ops) -> (function, user op, message) | None: a rule on how the results
    # of this spec's ops (``ops``, every one of the module) may be used, which only the whole
    # module shows (a prefetching copy's result may only be returned). Module.verify runs it
    # once per spec that has one and ops in the module.
    uses_check: Callable | None = None
    # "hlo" ops are spelled through the output dialect (mhlo.add); others keep their full name
    # (func.call, func.return).
    namespace: str = "hlo"
    # The chapter is the module of mhlo_ir.ops that declares the op; ``register`` sets it.
    chapter: str = ""
    # The dialects that define this op: HLO_DIALECTS, MHLO_ONLY (an "hlo" op without a
    # StableHLO twin: printing it as StableHLO is an error, not text jaxlib would reject),
    # or CHLO / FUNC for ops of those namespaces, which print as such in every output dialect
    # (Dialect.has_op says whether a dialect can print an op).
    dialects: frozenset = HLO_DIALECTS
    # MLIR's custom form of the op (a ``mhlo_ir.pretty_forms.Form``), which the printer
    # writes with ``pretty=True`` and the parser reads; None: printed generically.
    pretty: object = None
    terminator: bool = False
    # dialect_check(op, dialect) raises OpBuildError when this instance of the op has no
    # form in ``dialect`` though the op has (all_to_all's tuple form in StableHLO), and
    # returns the attributes to print instead of the op's where the dialect spells the op's
    # meaning otherwise (JAX's typed-FFI custom_call in MHLO), else None; the printer's fast
    # paths leave every op of such a spec to its general path, which calls it.
    dialect_check: Callable | None = None
    # dialect_check_when(attributes): whether an op of these attributes needs dialect_check
    # at all (None: every op); the others keep the printer's fast paths.
    dialect_check_when: Callable | None = None
    variadic_regions: bool = False
    doc: str = ""
    # Why the test suite does not execute this op on CPU ("" = it does, against numpy); the
    # coverage report (python -m verify.coverage) shows it, and tests/mhlo_ir/ops enforce it.
    not_run: str = ""
    # Regions that may use only their own block arguments and values (reduction bodies,
    # comparators): jaxlib rejects captured outer values in them ("requires all operands to
    # be defined in the parent region for export"). while/if/case regions may capture.
    closed_regions: bool = False
    # How the op takes quantized tensors, by its family in StableHLO's spec (mhlo_ir.
    # quant_checks says what each family requires): "qdq" (evaluated as quantize(op(
    # dequantize(x))): elementwise math, compare, select, batch norms...), "dot_like" (dot,
    # dot_general, convolution), "storage" (moves stored integers: one quantized type
    # throughout), "carrier" (any types, as its own rule says: returns, calls, loops,
    # tuples, custom calls), "not_yet" (StableHLO takes them, mhlo_ir does not yet), or ""
    # (StableHLO defines no quantized form: refused).
    quantized: str = attrs.field(default="", validator=attrs.validators.in_(QUANTIZED_FAMILIES))
    # Operands and results are tensors or tokens, never tuples, as MHLO declares them
    # (while, if, case, send...): their own rules take any type but a tuple.
    no_tuples: bool = False
    # How many of ``operands`` are variadic groups (``inputs*``): derived, for the operand
    # count checks every build and verify runs.
    n_variadic: int = attrs.field(init=False)

    def __attrs_post_init__(self):
        object.__setattr__(self, "n_variadic", sum(1 for o in self.operands if o.endswith("*")))

    def needs_dialect_check(self, op) -> bool:
        """Whether ``op`` (of this spec) must have ``dialect_check`` asked of it."""
        if self.dialect_check is None:
            return False
        when = self.dialect_check_when
        return when is None or when(op.attributes)

    @property
    def decided_by_types(self) -> bool:
        """Whether an op of this spec is well formed or not by its operand types,
        attributes and result types alone (it has no ``operand_check``): the one rule for
        every cache that lets an op stand for another alike by those (the builder's memo,
        the verifier's alike ops, the parser's line tables)."""
        return self.operand_check is None

    @property
    def variadic(self) -> bool:
        return bool(self.operands) and self.operands[-1].endswith("*")

    def full_name(self, dialect) -> str:
        """The op's name in ``dialect`` (``mhlo.add``); an error for a dialect without the
        op, rather than text jaxlib would reject: it names the op and what to use instead
        (``INSTEAD_OF``)."""
        if self.namespace != "hlo":
            return self.name
        if dialect.name not in self.dialects or (
                dialect.name == "stablehlo" and self.name in STABLEHLO_NAMESAKE_DIFFERS):
            raise OpBuildError(_no_form(self, dialect.name))
        return dialect.op_name(self.name)

    def validate(self, types: tuple, attributes, result_types, regions) -> tuple:
        """The op's result types, checked: inferred when ``result_types`` is None, else
        checked against the spec's rule; required attributes and the region count are
        checked too. The one validation of an op: the builder runs it when an op is made
        and ``Module.verify`` again on every op (ops can be edited after building), so the
        two can never disagree. Raises OpBuildError.

        Quantized tensors (``mhlo_ir.quant``) are judged by ``mhlo_ir.quant_checks``, by the
        op's family in StableHLO's spec, wherever they appear in operands or results."""
        wrong = operand_count_error(self, len(types))
        if wrong is not None:  # (before any rule indexes the types)
            fail(self.name, wrong)
        if _QUANT_TYPES and (any(map(is_quantized, types)) or (
                result_types is not None and any(map(is_quantized, result_types)))):
            from ..quant_checks import validate_quantized
            return validate_quantized(self, types, attributes, result_types, regions)
        inferred = self.validate_plain(types, attributes, result_types, regions)
        if result_types is None and _QUANT_TYPES and any(map(is_quantized, inferred)):
            # A quantized result of operands that are not (a constant of a quantized type):
            # judged as Module.verify judges the op, which passes its result types.
            from ..quant_checks import validate_quantized
            return validate_quantized(self, types, attributes, inferred, regions)
        return inferred

    def validate_plain(self, types: tuple, attributes, result_types, regions) -> tuple:
        """``validate`` by the op's own rule alone, whatever the element types."""
        name = self.name
        if self.no_tuples:
            _refuse_tuples(name, "operand", types)
            if result_types is not None:
                _refuse_tuples(name, "result", result_types)
        for k, a in self.attributes.items():
            if a.required and (not attributes or k not in attributes):
                fail(name, f"requires attribute {k}")
        if self.variadic_regions:
            if not regions:
                fail(name, "needs at least one region")
        elif len(regions) != self.regions:
            fail(name, f"has {self.regions} regions, got {len(regions)}")
        if result_types is None:
            if self.infer is None:
                fail(name, "cannot infer its result types: pass result_types")
            result_types = _inferred(self, name, types, attributes)
            if self.no_tuples:
                _refuse_tuples(name, "result", result_types)
            # The check runs on inferred results too, so that building and Module.verify
            # (which passes the op's result types) run the same code on every op, unless
            # the spec's infer runs the check's rules itself (infer_checks).
            if self.check is not None and not self.infer_checks:
                self.check(name, types, attributes, result_types, regions)
            return result_types
        result_types = tuple(result_types)
        n = self.n_results
        if n is not None and len(result_types) != n:
            fail(name, f"has {len(result_types)} results, expected {n}")
        for i, t in enumerate(result_types):
            if not isinstance(t, Type):
                fail(name, f"result type {i} must be a Type, got {t!r}")
        if self.check is not None:
            self.check(name, types, attributes, result_types, regions)
        elif self.infer is not None and not self.terminator:
            inferred = _inferred(self, name, types, attributes)
            if inferred != result_types:
                fail(name, f"result types ({', '.join(map(str, result_types))}) differ "
                           f"from the inferred ({', '.join(map(str, inferred))})")
        return result_types


def _refuse_tuples(op: str, what: str, types) -> None:
    for i, t in enumerate(types):
        if t.__class__ is TupleType:
            fail(op, f"{what} {i} must be a tensor or a token, got {t} (MHLO takes no tuple "
                     "here: pass its elements)")


def operand_count_error(spec, n: int) -> str | None:
    """What is wrong with ``n`` operands for ``spec`` (``has 2 operands, expected 1
    (operand)``), or None: as many as its operands, or at least the fixed ones when the last
    is variadic (``inputs*``)."""
    names = spec.operands
    fixed = len(names) - spec.n_variadic
    if fixed == len(names) and n != fixed:
        return f"has {n} operands, expected {fixed} ({', '.join(names)})"
    if n < fixed:
        return f"has {n} operands, expected at least {fixed} ({', '.join(names)})"
    return None


def _inferred(spec, name, types, attributes) -> tuple:
    """The spec's result types; a type its rule cannot make (a result too large for XLA:
    ``tensor<...> is too large``) is an OpBuildError naming the op, like every other rule's."""
    try:
        return tuple(spec.infer(name, types, attributes))
    except (ValueError, TypeError) as e:
        if isinstance(e, OpBuildError):
            raise
        fail(name, f"result type: {e}")


# What to use instead of an op that has no StableHLO form, for full_name's error. jaxlib's own
# mhlo_to_stablehlo (measured, jaxlib 0.10.2) turns some of them into
# ``stablehlo.custom_call @mhlo.<op>(...) {mhlo.attributes = {...}, mhlo.version = 1 : i64}``,
# an XLA-internal encoding that only XLA reads back and that carries no compatibility promise;
# we point at the chlo op instead (chlo travels in StableHLO programs and portable artifacts
# as is), and name the custom call so that nobody wonders why we do not print it. The rest
# jaxlib cannot convert at all ("failed to legalize operation"). tests/mhlo_ir/ops/
# test_stablehlo_conversion.py checks every entry against what jaxlib does.
_CHLO_TWIN = "use chlo.{op} (Builder.chlo_{op}){extra}, which StableHLO programs carry as is"
_CUSTOM_CALL = ("; jaxlib's mhlo_to_stablehlo writes it as stablehlo.custom_call @mhlo.{op}, "
                "an XLA-internal encoding without StableHLO's compatibility promise, which "
                "mhlo_ir does not print")
_NO_CONVERSION = "; jaxlib's mhlo_to_stablehlo cannot convert it either"
INSTEAD_OF = {
    **{op: _CHLO_TWIN.format(op=op, extra="") + _CUSTOM_CALL.format(op=op)
       for op in ("acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh", "erf", "mulhi")},
    "topk": _CHLO_TWIN.format(op="top_k", extra=" (which always takes the largest)")
            + _CUSTOM_CALL.format(op="topk"),
    "ragged_dot": "use chlo.ragged_dot, what JAX emits (not in mhlo_ir's op table yet)"
                  + _NO_CONVERSION,
    "copy": "it is the identity on values (an XLA-internal op): use the operand itself "
            "(mhlo_ir.decompose does)" + _NO_CONVERSION,
    "bitcast": "it is a layout-level reinterpretation inside XLA: use bitcast_convert (and "
               "reshape)" + _NO_CONVERSION + " (only an identity bitcast, which it folds "
                                              "away)",
    "stochastic_convert": "StableHLO has no stochastic rounding op: round with rng_bit_generator "
                          "and convert yourself" + _NO_CONVERSION,
    "trace": "it only tags XLA's traces: drop it" + _NO_CONVERSION,
    "add_dependency": "StableHLO orders effects through token operands only (pass the token "
                      "to the side-effecting op; mhlo_ir.decompose drops it)" + _NO_CONVERSION,
    "domain": "it marks XLA's sharding domains: drop it (mhlo_ir.decompose does) and state "
              "shardings with mhlo.sharding attributes" + _NO_CONVERSION,
    "fusion": "it is XLA's own fused computation: inline its body (mhlo_ir.decompose "
              "does)" + _NO_CONVERSION,
    "async_update": "use the synchronous op (all_reduce, ...)" + _NO_CONVERSION,
    "async_start": "stablehlo.async_start is a different op (its body is a region, not a "
                   "called_computation): use the synchronous op (all_reduce, ...)"
                   + _NO_CONVERSION,
    "async_done": "stablehlo.async_done pairs with StableHLO's own async_start, not with "
                  "this one: use the synchronous op (all_reduce, ...)" + _NO_CONVERSION,
    "xla.rng_get_and_update_state": "it is XLA's internal RNG state: use rng_bit_generator "
                                    "with an explicit state" + _NO_CONVERSION,
    "scan": "use a while loop (mhlo_ir.decompose writes one; chlo.scan is not in mhlo_ir's op "
            "table yet)" + _NO_CONVERSION,
}
# Ops jaxlib's conversion to StableHLO cannot convert (what reaches a PJRT plugin, such as
# the TPU's, must be StableHLO); an identity bitcast it folds away.
NO_CONVERSION = frozenset(op for op, hint in INSTEAD_OF.items() if _NO_CONVERSION in hint)
# Ops whose StableHLO namesake is registered (so OpSpec.dialects has "stablehlo") but is a
# different op: printing ours under that name would be text jaxlib rejects.
STABLEHLO_NAMESAKE_DIFFERS = frozenset({"async_start", "async_done"})


def _no_form(spec, dialect: str) -> str:
    hint = INSTEAD_OF.get(spec.name) if dialect == "stablehlo" else None
    if hint is None:
        return (f"'{spec.name}' has no {dialect} form (it exists in "
                f"{', '.join(sorted(spec.dialects))}): print the module in one of those")
    return f"'{spec.name}' has no {dialect} form: {hint}; or print the module as mhlo"


REGISTRY: dict = {}
BUILDER_METHODS: dict = {}

# jaxlib dialect ops deliberately not in the table, and why (shown by the coverage report).
UNDECLARED = {
    "mhlo.minimum_broadcast_shapes": "operands are tensor<Nxindex> shape values (no index "
                                     "type here) and XLA cannot convert the op to HLO",
    "chlo.ragged_dot": "not yet: needs the #chlo.ragged_dot attribute (mhlo.ragged_dot is "
                       "declared)",
    "chlo.scan": "not yet: several variadic operand groups and regions (mhlo.scan is "
                 "declared)",
}


# StableHLO ops that MHLO lacks (so the table cannot have them: it is spelled through MHLO's
# names), and what they are; a StableHLO parser must map or refuse them.
STABLEHLO_ONLY = {
    "stablehlo.unary_einsum": "einsum of one operand (deprecated in StableHLO); MHLO has no "
                              "such op: a parser would rewrite it (transpose, reduce)",
}


def builder_method(fn):
    """Declare ``fn(builder, ...)`` as a Builder method named like ``fn``.

    Chapters of the op table add their typed front doors this way, next to their specs and
    without importing the builder; ``mhlo_ir.builder`` attaches them all when it loads.
    """
    if fn.__name__ in BUILDER_METHODS:
        raise ValueError(f"builder method {fn.__name__!r} declared twice")
    BUILDER_METHODS[fn.__name__] = fn
    return fn


def register(spec: OpSpec) -> OpSpec:
    """Add ``spec`` to the table, its chapter being the module that declares it."""
    if spec.name in REGISTRY:
        raise ValueError(f"op {spec.name!r} declared twice in the op table")
    module = sys._getframe(1).f_globals.get("__name__", "")
    if spec.chapter:
        raise ValueError(f"op {spec.name!r}: the chapter is the declaring module, not a field")
    if spec.namespace == "hlo":
        if spec.dialects not in (HLO_DIALECTS, MHLO_ONLY):
            raise ValueError(f"op {spec.name!r}: dialects must be HLO_DIALECTS or MHLO_ONLY, "
                             f"got {set(spec.dialects)}")
    elif spec.dialects != {spec.namespace}:
        raise ValueError(f"op {spec.name!r} of namespace {spec.namespace!r} must have "
                         f"dialects={{{spec.namespace!r}}}, got {set(spec.dialects)}")
    spec = attrs.evolve(spec, chapter=module.rsplit(".", 1)[-1])
    REGISTRY[spec.name] = spec
    return spec


def lookup(name: str) -> OpSpec:
    """The spec of the op named ``name`` (neutral, ``mhlo.``-prefixed and ``func.`` names work)."""
    try:
        return REGISTRY[name]
    except KeyError:
        pass
    if "." in name:
        prefix, rest = name.split(".", 1)
        if prefix in ("mhlo", "stablehlo", "hlo") and rest in REGISTRY:
            return REGISTRY[rest]
    raise UnknownOpError(f"unknown op {name!r}: not in the op table") from None


class UnknownOpError(OpBuildError, KeyError):
    """The op table has no op of that name."""

    def __str__(self):
        return self.args[0]


def fail(op: str, message: str):
    """Raise the build error every rule uses: ``'mhlo.<op>': message``."""
    raise OpBuildError(f"'{op}' {message}")


def tensor_operand(op: str, what: str, t) -> TensorType:
    if not isinstance(t, TensorType):
        fail(op, f"operand {what} must be a tensor, got {_show(t)}")
    return t


def region_arg(op: str, what: str, t, shape=()) -> TensorType:
    """The tensor of ``shape`` (a scalar unless given) of operand ``what``'s element type: the
    block argument op ``op``'s region takes for it. A per-axis quantized type has no such
    tensor (its quantization dimension is gone), and StableHLO's region ops take per-tensor
    types only: the op is refused as it refuses quantized operands, not with the type's own
    ValueError from deep inside."""
    et = tensor_operand(op, what, t).element_type
    if getattr(et, "axis", None) is not None:
        from ..quant_checks import refuse_quantized
        refuse_quantized(lookup(op), f"operand {what} is {t}")
    return tensor(shape, et)


def same_shape(op: str, names, types) -> None:
    first = types[0]
    for n, t in zip(names[1:], types[1:]):
        if t.shape != first.shape:
            fail(op, f"operand {n} has shape {_shape(t.shape)}, expected {_shape(first.shape)} "
                     f"(the shape of operand {names[0]}): {t} vs {first}")


def _shape(s) -> str:
    return "[" + ", ".join(map(str, s)) + "]"


def _show(t) -> str:
    if isinstance(t, (TensorType, TupleType)):
        return str(t)
    if isinstance(t, TokenType):
        return "!token"
    return repr(t)
