"""Making the op a parser read: its spec (the table's, or an opaque one), its attributes
converted by the spec's converters and, with op checks on, the op checked by its rules
(``IllFormedOpError`` at the op's place when they refuse it). Every reader (the token
reader, the line paths' first read of a piece, the custom forms) makes ops here, so an op
read any way is the op the builder would make."""

from __future__ import annotations

from .dialect import BY_PREFIX
from .errors import OpBuildError
from .attributes import DenseArrayAttr
from .dense import DenseElementsAttr
from .index_array import BoolArrayAttr, IndexArrayAttr
from .ir import make_operation
from .op_attributes import OpAttributes
from .opaque import is_opaque, opaque_spec
from .ops.spec import REGISTRY, STABLEHLO_NAMESAKE_DIFFERS, STABLEHLO_ONLY, UNDECLARED
from .syntax import ParseError

__all__ = ["IllFormedOpError", "spec_of", "make_op"]

# The dialects jaxlib registers whole, whose every op name is known here: the table's, and
# these, which the table leaves out (read as opaque ops, as written). Any other name with one
# of these prefixes is no op at all (jaxlib: "unregistered operation ... found in dialect
# ... that does not allow unknown operations"); tests/mhlo_ir/test_op_dialects.py checks
# the list against jaxlib's registered names.
CLOSED_DIALECTS = ("mhlo", "stablehlo", "chlo", "func", "builtin")
KNOWN_UNTABLED = frozenset({*UNDECLARED, *STABLEHLO_ONLY, "func.call_indirect",
                            "func.constant", "builtin.unrealized_conversion_cast"})
# Ops that hold functions or modules: read where they may stand, never as an op in a body.
_STRUCTURAL = {"func.func": "a function", "builtin.module": "a module"}


class IllFormedOpError(ParseError):
    """Text that parses but describes an op its rules refuse (operand types, attributes,
    regions), at the op's line and column: the builder would have refused it too."""


def spec_of(self, name: str, props, n_regions: int, tok=None):  # (the parser's method)
    """(spec, dialect of its attributes): the table's, or an opaque one. A table op spelled
    through a dialect that has no such op (``stablehlo.copy``: MHLO's alone; MHLO's
    ``async_start`` is not StableHLO's namesake) is a ParseError at ``tok``, as jaxlib refuses
    it: read as the table's op, invalid StableHLO would become a valid MHLO module."""
    prefix, _, rest = name.partition(".")
    dialect = BY_PREFIX.get(prefix)
    if dialect is not None:
        spec = REGISTRY.get(rest)
        if spec is not None and spec.namespace == "hlo":
            if not dialect.has_op(spec):
                other = "mhlo" if dialect.name == "stablehlo" else "stablehlo"
                raise self.ts.error(f"'{name}' is no op of {dialect.name}: {rest} is "
                                    f"{other}'s alone ({other}.{rest})", tok)
            if dialect.name == "stablehlo" and rest in STABLEHLO_NAMESAKE_DIFFERS:
                raise self.ts.error(f"'{name}' is StableHLO's own op, not mhlo.{rest}, and "
                                    "this parser does not read it", tok)
            return spec, dialect
    else:
        spec = REGISTRY.get(name)
        if spec is not None:
            return spec, self.dialect
    if prefix in CLOSED_DIALECTS and name not in KNOWN_UNTABLED:
        what = _STRUCTURAL.get(name)
        if what is not None:
            raise self.ts.error(f"'{name}' ({what}) cannot stand in a block: functions "
                                "are read at a module's top level only", tok)
        raise self.ts.error(f"'{name}' is no op of {prefix} (jaxlib registers no such op)",
                            tok)
    return opaque_spec(name, tuple(sorted(props)), n_regions), self.dialect


def make_op(self, name, operands, props, attrs, regions, result_types, location, tok,
            block):
    """The op ``name`` read at ``tok`` (a ``_Parser`` method, ``make``: ``self`` is the
    parser), added to nothing yet."""
    ts = self.ts
    spec, _ = self.spec_of(name, props, len(regions), tok)
    merged = {}
    owned = spec.attributes
    for k, v in props.items():
        merged[k] = v
    for k, v in attrs.items():
        if k in merged:
            raise ts.error(f"'{name}': attribute {k!r} is given twice", tok)
        merged[k] = v
    check = self.check_ops
    if not is_opaque(spec):
        for k, v in merged.items():
            a = owned.get(k)
            if a is not None:
                try:
                    merged[k] = c = a.convert(v)
                    if check and c is not v and (c.__class__ in _SPELLED or
                                                 c.__class__ is DenseArrayAttr):
                        _check_spelling(name, c, v)
                except Exception as e:  # noqa: BLE001 - converters raise what they parse
                    if not check:
                        continue  # kept as written
                    err = ts.error(f"'{name}' attribute {k}: {e}", tok)
                    raise IllFormedOpError(err.message, err.line, err.column,
                                           err.source, source_line=err.source_line,
                                           caret=err.caret) from None
    if check and not is_opaque(spec):
        for k in props:
            if k not in owned:
                raise ts.error(f"'{name}' has no property {k!r}; discardable attributes "
                               "go in the attribute dictionary after the operands", tok)
        try:
            spec.validate(tuple(v.type for v in operands), merged,
                          tuple(result_types), regions)
            if spec.operand_check is not None:  # what constant operands hold, as the builder
                spec.operand_check(spec.name, tuple(operands), merged, tuple(result_types))
        except (OpBuildError, ValueError, OverflowError) as e:
            # (ValueError: a type the op's rules would infer is too large to exist)
            why = str(e) if isinstance(e, OpBuildError) else f"'{spec.name}': {e}"
            err = ts.error(why, tok)
            raise IllFormedOpError(err.message, err.line, err.column, err.source,
                                  source_line=err.source_line, caret=err.caret) from None
    attributes = OpAttributes(merged) if merged else None
    return make_operation(spec, tuple(operands), tuple(result_types), attributes,
                          regions, location, block)


# Attribute values each HLO dialect spells its own way: ``dense<[0, 1]> : tensor<2xi64>`` on
# mhlo ops, ``array<i64: 0, 1>`` on stablehlo ops (bools alike, i1). Their converters take
# either spelling (a builder's argument may be either), but jaxlib refuses the other dialect's
# on an op, so the parser does too (the custom forms' readers check it as they read).
_SPELLED = (IndexArrayAttr, BoolArrayAttr)
_WANTS = {"mhlo": (DenseElementsAttr, "dense<...> : tensor<N x i64 or i1>"),
          "stablehlo": (DenseArrayAttr, "array<i64: ...> or array<i1: ...>")}


def _check_spelling(name: str, converted, written) -> None:
    """(What the generic form's attribute dictionary held: the custom forms read lists.) An
    attribute the table keeps as an ``array<...>`` (chlo's broadcast_dimensions) is one in
    every dialect; the index and bool arrays are the op's dialect's."""
    if converted.__class__ is DenseArrayAttr:
        if isinstance(written, DenseElementsAttr):
            raise TypeError("it is an array<...> attribute (jaxlib refuses dense<...> "
                            "here), got dense<...>")
        return
    wants = _WANTS.get(name.partition(".")[0])
    if wants is not None and isinstance(written, (DenseElementsAttr, DenseArrayAttr)) and \
            not isinstance(written, wants[0]):
        got = "array<...>" if isinstance(written, DenseArrayAttr) else "dense<...>"
        raise TypeError(f"{name.partition('.')[0]} ops spell it {wants[1]} (jaxlib refuses "
                        f"the other dialect's spelling), got {got}")
