"""MLIR's custom op forms, described once and used both ways: printed with ``pretty=True`` and
read back by the parser.

An op's spec names its custom form (``OpSpec.pretty``): a ``Form``, the sequence of pieces MLIR's
assembly format for the op spells, left to right. Text pieces are written as given (spacing
included) and read as tokens; the other pieces each know how to print a part of the op and
how to read that part back, side by side, so printer and parser cannot drift::

    # %0 = mhlo.compare LT, %a, %b, FLOAT : (T, T) -> tensor<i1>
    Form((" ", Enum("comparison_direction"), ", ", Operands(),
          Optional("compare_type", (", ", Enum("compare_type"))), AttrDict(), " : ",
          FUNCTIONAL))

Most of MLIR's formats are a few shapes (``ELEMENTWISE``, ``FUNCTIONAL_FORM``, chlo's
``operand : T -> R``); the type pieces carry MLIR's custom type printers (SameOperandsAndResult-
Type, SelectOpType, ComplexOpType, ...). Forms that are code in MLIR rather than a format (the
while loop's regions) are pieces of their own. An op without a form, or whose form does not
apply to the output dialect (``Form.dialects``), prints generically, which MLIR reads too.

``Form.result_names`` are the names MLIR's printer gives results (``%values, %indices``,
StableHLO's ``%c``/``%cst`` constants) and ``Form.arg_name`` those of region arguments
(``%iterArg``): the printer's numbering for ``pretty=True`` follows MLIR's (see
``mhlo_ir.printer``).
"""

from __future__ import annotations

import re

import attrs

from .compact_reduce import compact_body, compact_reducer
from .pretty_arrays import (_WINDOW, AlgorithmBody, ConvWindow, Dims, DotDims, EnumList,
                            SliceRanges)
from .pretty_scalars import Attr, Enum, ExpMantissa, Int, String, Symbol, ValueAttr
from .types import FunctionType, TensorType

__all__ = ["Form", "Operands", "Enum", "Int", "Attr", "String", "Symbol", "Dims", "EnumList",
           "AlgorithmBody",
           "SliceRanges", "DotDims", "ConvWindow", "ExpMantissa", "ValueAttr", "AttrDict",
           "Optional", "TypePiece", "Returned", "While", "Reduce", "Scan", "scan_arg_names",
           "custom_form", "read_pretty"]


# -- reading state ------------------------------------------------------------------------

class _Reading:
    """What the pieces of a form have read so far."""

    __slots__ = ("p", "name", "tok", "operands", "attrs", "results", "regions", "spec",
                 "implied")

    def __init__(self, p, name, tok, spec):
        self.p, self.name, self.tok, self.spec = p, name, tok, spec
        self.operands: list = []
        self.attrs: dict = {}
        self.results: tuple | None = None
        self.regions: list = []
        self.implied: list = []  # the blocks of regions the text implies, not spells

    def check_operand_types(self, types, tok) -> None:
        ts = self.p.ts
        if len(types) != len(self.operands):
            raise ts.error(f"'{self.name}' has {len(self.operands)} operands but its type "
                           f"lists {len(types)}", tok)
        for i, (v, want) in enumerate(zip(self.operands, types)):
            if v.type != want:
                raise ts.error(f"'{self.name}' operand {i} has type {v.type} but the text "
                               f"says {want}", tok)


_TOKEN = re.compile(r"->|[A-Za-z_][A-Za-z0-9_]*|\S")


@attrs.frozen
class _Text:
    """Literal text: printed as is, read as its tokens (spacing is free in reading)."""

    text: str
    tokens: tuple

    def render(self, pr, op) -> str:
        return self.text

    def read(self, r) -> None:
        for t in self.tokens:
            r.p.ts.expect(t)

    def starts(self, ts) -> bool:
        """Whether the text comes next: its first two tokens (``, precision`` and ``,
        algorithm`` both start with a comma: dot_general's optional parts)."""
        tokens = self.tokens
        return bool(tokens) and ts.at(tokens[0]) and (len(tokens) < 2 or ts.at(tokens[1], 1))


def _piece(x):
    return _Text(x, tuple(_TOKEN.findall(x))) if isinstance(x, str) else x


# -- operands and attributes --------------------------------------------------------------

@attrs.frozen
class Operands:
    """All operands, ``%a, %b``; with ``parens``, ``(%a, %b)``. Reading stops at a comma not
    followed by a value (compare's ``, FLOAT``)."""

    parens: bool = False

    def render(self, pr, op) -> str:
        names = pr.names
        body = ", ".join([names[v] for v in op.operands])
        return f"({body})" if self.parens else body

    def read(self, r) -> None:
        p, ts = r.p, r.p.ts
        if self.parens:
            r.operands.extend(p.operands())
            return
        if ts.peek().kind != "%":
            return
        r.operands.append(p.value())
        while ts.at(",") and ts.peek(1).kind == "%":
            ts.next()
            r.operands.append(p.value())


@attrs.frozen
class AttrDict:
    """The op's other attributes, `` {k = v, ...}`` (nothing when there are none): those no
    other piece prints, less ``elide`` (name -> the default MLIR leaves out)."""

    elide: tuple = ()

    def render(self, pr, op) -> str:
        attrs_ = op.attributes
        if not attrs_:
            return ""
        used = pr.form_keys
        elide = dict(self.elide)
        items = [(k, v) for k, v in attrs_.items()
                 if k not in used and not (k in elide and elide[k] == v)]
        return f" {{{pr.named(items)}}}" if items else ""

    def read(self, r) -> None:
        if r.p.ts.at("{"):
            for k, v in r.p.attr_dict().items():
                if k in r.attrs:
                    raise r.p.ts.error(f"'{r.name}': attribute {k!r} is given twice")
                r.attrs[k] = v


@attrs.frozen
class Optional:
    """``pieces`` printed only when attribute ``key`` is set (and not ``default``); read when
    the first (text) piece comes next."""

    key: str
    pieces: tuple = attrs.field(converter=lambda xs: tuple(_piece(x) for x in xs))
    default: object = None  # the value MLIR leaves out (a default-valued attribute)

    def render(self, pr, op) -> str:
        if not op.attributes or self.key not in op.attributes or \
                op.attributes[self.key] == self.default:
            return ""
        return "".join([x.render(pr, op) for x in self.pieces])

    def read(self, r) -> None:
        if self.pieces[0].starts(r.p.ts):
            for x in self.pieces:
                x.read(r)

    def keys(self) -> tuple:
        return tuple(k for x in self.pieces for k in _keys(x))


# -- types --------------------------------------------------------------------------------

def _functional(pr, op) -> str:
    return pr.signature(op.operands, op.results)[3:]


def _read_types(p) -> list:
    types = [p.type()]
    while p.ts.accept(","):
        types.append(p.type())
    return types


@attrs.frozen
class TypePiece:
    """The types after the colon, in one of MLIR's spellings (``kind``):

    - ``same``: one type when operands and results all have it, else ``(A, B) -> R``
      (SameOperandsAndResultType);
    - ``functional``: ``(A, B) -> R``; ``results``: the result types only;
    - ``arrow``: ``A, B -> R`` (chlo); ``pairwise``: ``A, B`` for operands and results alike;
      ``operands``: ``A, B`` for operands (no results);
    - ``select``: ``P, T`` (pred and result) when both branches have the result type, else
      functional; ``complex``: the result when both operands are its real type, else
      functional; ``tuple``: the result (a tuple of the operand types).
    """

    kind: str

    def render(self, pr, op) -> str:
        tt = pr.type_text
        k = self.kind
        ins = [v.type for v in op.operands]
        outs = [r.type for r in op.results]
        if k == "same":
            t = outs[0] if outs else None
            # Equal, not identical: tuple and token types are not interned, and MLIR's
            # (uniqued) types are the same object exactly when they are equal.
            if t is not None and all(x == t for x in ins) and all(x == t for x in outs):
                return tt(t)
            return _functional(pr, op)
        if k == "functional":
            return _functional(pr, op)
        if k == "results" or k == "tuple":
            return ", ".join(tt(t) for t in outs)
        if k == "arrow":
            return ", ".join(tt(t) for t in ins) + " -> " + (
                tt(outs[0]) if len(outs) == 1 else "(" + ", ".join(tt(t) for t in outs) + ")")
        if k == "pairwise" or k == "operands":
            return ", ".join(tt(t) for t in ins)
        if k == "select":
            if ins[1] == outs[0] and ins[2] == outs[0]:
                return f"{tt(ins[0])}, {tt(outs[0])}"
            return _functional(pr, op)
        if k == "complex":
            real = _real(outs[0])
            if ins[0] == real and ins[1] == real:
                return tt(outs[0])
            return _functional(pr, op)
        raise AssertionError(k)

    def read(self, r) -> None:
        p, ts, k = r.p, r.p.ts, self.kind
        tok = ts.peek()
        if k in ("same", "functional", "select", "complex", "tuple", "results"):
            t = p.type()
            if isinstance(t, FunctionType) and k != "results" and k != "tuple":
                r.check_operand_types(t.inputs, tok)
                r.results = t.results
                return
            if k == "functional":
                raise ts.expected("a function type ((operand types) -> result types)", tok)
            if k == "same":
                r.check_operand_types((t,) * len(r.operands), tok)
                r.results = (t,)
            elif k == "select":
                ts.expect(",")
                res = p.type()
                r.check_operand_types((t, res, res), tok)
                r.results = (res,)
            elif k == "complex":
                real = _real(t)
                r.check_operand_types((real, real), tok)
                r.results = (t,)
            elif k == "tuple":
                r.results = (t,)
            else:
                types = [t]
                while ts.accept(","):
                    types.append(p.type())
                r.results = tuple(types)
            return
        if k == "pairwise" or k == "operands":
            types = _read_types(p)
            r.check_operand_types(types, tok)
            r.results = tuple(types) if k == "pairwise" else ()
            return
        if k == "arrow":
            ins = _read_types(p)
            r.check_operand_types(ins, tok)
            ts.expect("->")
            if ts.at("("):
                r.results = tuple(ts.comma_list(p.type, ")", open="("))
            else:
                r.results = (p.type(),)
            return
        raise AssertionError(k)


def _real(t):
    et = getattr(t, "element_type", None)
    if et is None or not et.is_complex:
        return None
    return TensorType(t.shape, et.component)


SAME = TypePiece("same")
FUNCTIONAL = TypePiece("functional")
RESULTS = TypePiece("results")
ARROW = TypePiece("arrow")
PAIRWISE = TypePiece("pairwise")
SELECT = TypePiece("select")
COMPLEX = TypePiece("complex")
TUPLE = TypePiece("tuple")
OPERAND_TYPES = TypePiece("operands")


@attrs.frozen
class PairwiseOrNone:
    """`` %a, %b : A, B`` (the types ``pairwise``), or ``()`` when there are no operands:
    optimization_barrier's optional group and its ``()`` else-branch, which MLIR prints right
    after the attributes (``mhlo.optimization_barrier {k = v}()``)."""

    def render(self, pr, op) -> str:
        if not op.operands:
            return "()"
        return f" {Operands().render(pr, op)} : {PAIRWISE.render(pr, op)}"

    def read(self, r) -> None:
        ts = r.p.ts
        if ts.accept("("):
            ts.expect(")")
            r.results = ()
            return
        Operands().read(r)
        ts.expect(":")
        PAIRWISE.read(r)


@attrs.frozen
class Returned:
    """A terminator's `` %a, %b : A, B``; when it returns nothing, `` `` with ``space``
    (MHLO's and StableHLO's return print their empty operand list), else nothing. Other
    attributes go between the operands and the colon (``mhlo.return %a {k = v} : A``), or
    with ``attrs_first`` before the operands (``return {k = v} %a : A``, func.return's)."""

    space: bool = False
    attrs_first: bool = False

    def render(self, pr, op) -> str:
        extra = AttrDict().render(pr, op) if op.attributes else ""
        if not op.operands:  # (MLIR: the empty list's space, then the dictionary's)
            return (" " if self.space else "") + extra
        tt = pr.type_text
        uses = ", ".join([pr.names[v] for v in op.operands])
        types = ", ".join([tt(v.type) for v in op.operands])
        if self.attrs_first:
            return f"{extra} {uses} : {types}"
        return f" {uses}{extra} : {types}"

    def read(self, r) -> None:
        p, ts = r.p, r.p.ts
        if self.attrs_first:
            AttrDict().read(r)
        uses = []
        if ts.peek().kind == "%":
            uses.append(p.value())
            while ts.accept(","):
                uses.append(p.value())
        if not self.attrs_first:
            AttrDict().read(r)
        if not uses:
            return
        r.operands.extend(uses)
        ts.expect(":")
        tok = ts.peek()
        r.check_operand_types(_read_types(p), tok)
        r.results = ()


# -- region forms -------------------------------------------------------------------------

@attrs.frozen
class While:
    """``(%iterArg = %a, ...) : T, ... cond {...} do {...}``: the regions' arguments are
    named by the operands they start as, and their blocks print without a label."""

    def render(self, pr, op):
        names, tt = pr.names, pr.type_text
        args = pr.region_args(op)
        head = ", ".join(f"{names[a]} = {names[v]}" for a, v in zip(args, op.operands))
        types = ", ".join(tt(v.type) for v in op.operands)
        extra = AttrDict().render(pr, op) if op.attributes else ""
        return [f"({head}) : {types}" if op.operands else "()",
                f" attributes{extra}" if extra else "", ("nl",), "cond ",
                ("region", 0), " do ", ("region", 1)]

    def read(self, r) -> None:
        p, ts = r.p, r.p.ts
        pairs = []

        def pair():
            tok = ts.expect_kind("%", "a region argument (%iterArg)")
            ts.expect("=")
            pairs.append((tok, p.value()))
        ts.comma_list(pair, ")", open="(")
        r.operands.extend(v for _, v in pairs)
        types = []
        if pairs:  # (no types, nor their colon, after an empty list: MLIR reads "cond" there)
            ts.expect(":")
            tok = ts.peek()
            types = _read_types(p)
            r.check_operand_types(types, tok)
        r.results = tuple(types)
        if ts.accept("attributes"):
            AttrDict().read(r)
        args = [(t.text, v.type, t) for t, v in pairs]
        ts.expect("cond")
        r.regions.append(read_region_with_args(p, args))
        ts.expect("do")
        r.regions.append(read_region_with_args(p, args))


@attrs.frozen
class Reduce:
    """``(%x init: %i), ... [applies mhlo.add] across dimensions = [0] {attrs} : (...) -> ...``
    then, unless compact, `` reducer(%a: T, %b: T) ...  {body}`` on the next line (the body's
    arguments paired as (accumulator, element) per input)."""

    def render(self, pr, op):
        from .index_array import index_ints
        names, tt = pr.names, pr.type_text
        n = len(op.operands) // 2
        pairs = ", ".join(f"({names[x]} init: {names[i]})"
                          for x, i in zip(op.operands[:n], op.operands[n:]))
        inner = compact_reducer(op)
        applies = f" applies {inner.full_name(pr.dialect)}" if inner is not None else ""
        dims = ", ".join(map(str, index_ints(op.attributes["dimensions"])))
        head = [pairs, applies, f" across dimensions = [{dims}]", AttrDict().render(pr, op),
                " : ", _functional(pr, op)]
        if inner is not None:
            return head
        args = pr.region_args(op)

        def arg(a):
            return f"{names[a]}: {tt(a.type)}{pr.loc(a.location)}"
        reducer = " ".join(f"({arg(a)}, {arg(b)})" for a, b in zip(args[:n], args[n:]))
        return head + [("nl",), f" reducer{reducer}  ", ("region", 0)]

    def read(self, r) -> None:
        p, ts = r.p, r.p.ts
        inputs, inits = [], []
        while True:
            ts.expect("(")
            inputs.append(p.value())
            ts.expect("init")
            ts.expect(":")
            inits.append(p.value())
            ts.expect(")")
            if not ts.accept(","):
                break
        r.operands.extend(inputs + inits)
        inner = None
        if ts.accept("applies"):
            itok = ts.expect_kind("bare", "the reducing op (mhlo.add)")
            inner = itok
        ts.expect("across")
        ts.expect("dimensions")
        ts.expect("=")
        r.attrs["dimensions"] = ts.comma_list(lambda: ts.integer("a dimension"), "]", open="[")
        AttrDict().read(r)
        ts.expect(":")
        FUNCTIONAL.read(r)
        if inner is not None:
            body = compact_body(p, r, inner)
            r.regions.append(body)
            r.implied.append(body.blocks[0])
            return
        ts.expect("reducer")
        firsts, seconds = [], []
        for _ in inputs:
            ts.expect("(")
            for group in (firsts, seconds):
                tok = ts.expect_kind("%", "a reducer argument (%arg1: T)")
                ts.expect(":")
                group.append((tok.text, p.type(), tok, p.trailing_location()))
                if group is firsts:
                    ts.expect(",")
            ts.expect(")")
        r.regions.append(read_region_with_args(p, firsts + seconds))


@attrs.frozen
class Scan:
    """mhlo.scan's ``(%x, ...) inits (%c, ...) dimension=0  [attributes {...}] {^bb0(%input:
    T, ..., %carry: C, ...): ...} : (...) -> (...)``. The two operand groups give
    ``operandSegmentSizes``; the inits, the number of carries among the results
    (``resultSegmentSizes``). Its region's arguments are named ``%input``/``%carry`` (the
    form's ``arg_name``) and printed in the block label."""

    KEYS = ("dimension", "operandSegmentSizes", "resultSegmentSizes")

    def render(self, pr, op):
        names = pr.names
        n_in = op.attributes["operandSegmentSizes"].values[0]
        ins = ", ".join([names[v] for v in op.operands[:n_in]])
        inits = ", ".join([names[v] for v in op.operands[n_in:]])
        rest = AttrDict().render(pr, op)
        rest = f" attributes{rest}" if rest else ""
        return [f"({ins}) inits ({inits}) dimension={int(op.attributes['dimension'].value)} "
                f"{rest} ", ("region", 0, True), " : ", _functional(pr, op)]

    def read(self, r) -> None:
        p, ts = r.p, r.p.ts
        inputs = p.operands()
        ts.expect("inits")
        inits = p.operands()
        ts.expect("dimension")
        ts.expect("=")
        dimension = ts.integer("the scanned dimension")
        r.operands.extend(inputs + inits)
        if ts.accept("attributes"):
            if not ts.at("{"):
                raise ts.error("expected an attribute dictionary after 'attributes'")
            AttrDict().read(r)
        r.regions.append(p.region())
        ts.expect(":")
        tok = ts.peek()
        FUNCTIONAL.read(r)
        if len(r.results) < len(inits):
            raise ts.error(f"'{r.name}' has {len(inits)} inits but {len(r.results)} results: "
                           "each init needs a carry result", tok)
        r.attrs["dimension"] = dimension
        r.attrs["operandSegmentSizes"] = (len(inputs), len(inits))
        r.attrs["resultSegmentSizes"] = (len(r.results) - len(inits), len(inits))


def scan_arg_names(op) -> tuple:
    """MLIR's names for mhlo.scan's region arguments: ``input`` per input, ``carry`` per
    init (made unique by the printer)."""
    n_in, n_init = op.attributes["operandSegmentSizes"].values
    return ("input",) * n_in + ("carry",) * n_init


def read_region_with_args(p, args):
    """``{ ops }`` whose one block has the arguments ``args`` [(name, type, token[,
    location])], named by the op's form rather than by a block label."""
    from .ir import Block, Region
    from .location import UNKNOWN
    ts = p.ts
    ts.expect("{")
    frames = p.scope.frames
    p.scope.open()
    try:
        block = Block([a[1] for a in args], [a[3] if len(a) > 3 else UNKNOWN for a in args])
        for (name, _, tok, *_), value in zip(args, block.arguments):
            p._define(frames[-1], name, value, tok)
        p.block_ops(block, "}")
        return Region([block])
    finally:
        p.scope.close()


# -- forms --------------------------------------------------------------------------------

def _keys(x) -> tuple:
    if isinstance(x, (Enum, Int, Attr, String, Symbol, ValueAttr, Dims, EnumList, DotDims,
                      AlgorithmBody)):
        return (x.key,)
    if isinstance(x, ExpMantissa):
        return ("exponent_bits", "mantissa_bits")
    if isinstance(x, Optional):
        return x.keys()
    if isinstance(x, Reduce):
        return ("dimensions",)
    if isinstance(x, Scan):
        return Scan.KEYS
    if isinstance(x, SliceRanges):
        return ("start_indices", "limit_indices", "strides")
    if isinstance(x, ConvWindow):
        return ("dimension_numbers",) + tuple(k for k, _ in _WINDOW)
    return ()


def _pieces(xs) -> tuple:
    return tuple(_piece(x) for x in xs)


@attrs.frozen
class Form:
    """An op's custom assembly form (see the module docstring).

    ``pieces`` follow the op name; ``dialects`` are the output dialects that spell the op
    this way (others print it generically); ``result_names`` name its results in every
    dialect's custom print, a tuple or ``f(op, dialect) -> tuple`` (empty: numbered);
    ``arg_name`` names its regions' arguments, one name for all or ``f(op) -> tuple`` of a
    name per argument of the entry block; ``results`` is how many results the form can print
    (None: any)."""

    pieces: tuple = attrs.field(converter=_pieces, default=())
    dialects: frozenset = frozenset({"mhlo", "stablehlo"})
    result_names: object = ()
    arg_name: object = ""
    keys: frozenset = attrs.field(init=False)
    has_regions: bool = attrs.field(init=False)

    def __attrs_post_init__(self):
        object.__setattr__(self, "keys", frozenset(k for x in self.pieces for k in _keys(x)))
        object.__setattr__(self, "has_regions",
                           any(isinstance(x, (While, Reduce, Scan)) for x in self.pieces))

    def spells_regions(self, op) -> bool:
        """Whether ``op``'s text in this form holds its regions: a form with a region piece,
        but for a reduce that ``applies`` its body (MLIR's compact form, no region)."""
        for x in self.pieces:
            if isinstance(x, Reduce):
                return compact_reducer(op) is None
            if isinstance(x, (While, Scan)):
                return True
        return False

    def names_for(self, op, dialect) -> tuple:
        n = self.result_names
        return n(op, dialect) if callable(n) else n

    def render(self, pr, op) -> list:
        """The text after the op name: strings and ("region", i) markers."""
        pr.form_keys = self.keys
        out = []
        for x in self.pieces:
            t = x.render(pr, op)
            if t.__class__ is list:
                out.extend(t)
            else:
                out.append(t)
        return out

    @staticmethod
    def inferred(r, spec) -> tuple:
        if spec.infer is None:
            return ()
        try:
            attrs_ = {k: spec.attributes[k].convert(v) if k in spec.attributes else v
                      for k, v in r.attrs.items()}
            return tuple(spec.infer(spec.name, tuple(v.type for v in r.operands), attrs_))
        except Exception as e:  # noqa: BLE001 - the rule's own message names the problem
            raise r.p.ts.error(f"'{r.name}': {e}", r.tok) from None

    def read(self, p, name, tok, block, spec):
        r = _Reading(p, name, tok, spec)
        for x in self.pieces:
            x.read(r)
        if r.results is None:  # a form without types: the op's rule gives them
            r.results = self.inferred(r, spec)
        loc = p.trailing_location()
        for block in r.implied:
            # As MLIR reads it: the ops and arguments of a body the text implies (a compact
            # reduce's ``applies mhlo.add``) take the op's location.
            for x in block.arguments:
                x.location = loc
            for x in block.operations:
                x.location = loc
        props = {k: v for k, v in r.attrs.items() if k in spec.attributes}
        extra = {k: v for k, v in r.attrs.items() if k not in spec.attributes}
        return p.make(name, r.operands, props, extra, tuple(r.regions), tuple(r.results),
                      loc, tok, block)


def custom_form(spec, dialect):
    """``spec``'s custom form (``OpSpec.pretty``) where ``dialect`` spells the op with it, else
    None (an op without one, or whose form the dialect lacks, prints and reads generically)."""
    form = spec.pretty
    if form is None or not form.pieces or spec.namespace == "hlo" and \
            dialect.name not in form.dialects:
        return None
    return form


# -- reading ------------------------------------------------------------------------------

# Bare op names MLIR resolves inside a function body without their dialect prefix.
_FUNC_SHORT = {"return": "func.return", "call": "func.call"}


def read_pretty(p, tok, block):
    """The op whose custom form starts at bare token ``tok`` (its name), read by parser
    ``p`` (a ``mhlo_ir.parser._Parser``) into ``block``."""
    ts = p.ts
    ts.next()
    name = _FUNC_SHORT.get(tok.text, tok.text)
    if name in ("module", "builtin.module", "func.func"):
        raise ts.error(f"'{tok.text}' cannot appear inside a function", tok)
    spec, dialect = p.spec_of(name, {}, 0, tok)
    form = custom_form(spec, dialect)  # None for opaque specs
    if form is None:
        raise ts.error(f"'{name}' has no custom form this parser reads: write it in the "
                       f"generic form (\"{name}\"(...) ... : (...) -> ...)", tok)
    return form.read(p, name, tok, block, spec)
