"""The parser's fast path: a whole one-line op read by one regular expression.

Most lines of a program are a single-result op without regions in one of two shapes,

    %5 = "mhlo.add"(%4, %arg1) <{...}> : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %5 = mhlo.add %4, %arg1 : tensor<8xf32>

and a program repeats a handful of op kinds, attribute dictionaries, signatures and locations
many times. Lexing such a line token by token costs ~30 tokens; here one match splits it into
its pieces, and each piece's text is parsed once per parse (by the token-level readers, which
must consume all of it) and then looked up. Whatever the expressions do not match, or a piece
that does not parse whole, goes to the token-level parser, so this path can only be faster,
never different: the op is made, checked and named exactly as ``_Parser.make`` makes it.
"""

from __future__ import annotations

import re

from .dialect import BY_PREFIX
from .ir import make_operation
from .location import UNKNOWN, read_location_text
from .op_forms import ELEMENTWISE
from .parse_templates import rememberable, template_line
from .syntax import NAME_ID, ParseError, Token, TokenStream
from .types import FunctionType, read_function_text, read_type

__all__ = ["GENERIC_LINE", "PRETTY_LINE", "VOID_LINE", "REGION_HEAD", "LineCache", "one_line",
           "generic_op", "pretty_op", "void_op", "known_line", "label_line"]

# The lexer's rule for a name after % or ^ (``%1a`` is two tokens there, so never one name here).
_ID = NAME_ID
_NAME = "%" + _ID
_USE = _NAME + r"(?:#[0-9]+)?"
# Group 1: result; 2: op name; 3: operands; 4: properties (with <{ }>); 5: signature;
# 6: location (with loc( )). The line must end right after.
GENERIC_LINE = re.compile(
    r"[ \t\n]*(" + _NAME + r') = "([A-Za-z0-9_$.\-]+)"\(((?:' + _USE + r"(?:, " + _USE +
    r")*)?)\)( <\{[^\n]*?\}>)? : (\([^\n]*?\) -> [^\n]*?)( loc\([^\n]*\))?(?=\n)")
# Group 1: result; 2: op name; 3: operands; 4: the type (one, or a function type); 5: location.
PRETTY_LINE = re.compile(
    r"[ \t\n]*(" + _NAME + r") = ([a-z_]+\.[a-z_0-9]+) (" + _USE + r"(?:, " + _USE +
    r")*) : ([^\n]*?)( loc\([^\n]*\))?(?=\n)")


# A line of an op without results, regions or properties (a return): group 1: op name;
# 2: operands; 3: its function type (ending ``-> ()``); 4: location.
VOID_LINE = re.compile(
    r'[ \t\n]*"([A-Za-z0-9_$.\-]+)"\(((?:' + _USE + r"(?:, " + _USE + r")*)?)\)"
    r" : (\([^\n]*?\) -> \(\))( loc\([^\n]*\))?(?=\n)")


class LineCache:
    """Tables from a piece's text to what it means, for one parse.

    All but the locations naming an alias (``loc(#loc3)``, which only the module's own alias
    table means) are shared by every parse in the process, taken from ``_tables``: a piece's
    text means the same in every module read with the same dialect and op checks, and a
    program's pieces (types, signatures, attribute dictionaries, lines) recur across the
    programs of a corpus or a test campaign. Each value is immutable, or never changed once
    made (an attribute dictionary), so parses in several threads share them safely."""

    __slots__ = ("parser", "sigs", "types", "props", "locs", "own_locs", "tails", "callers")

    def __init__(self, parser):
        self.parser = parser
        # sigs: (dialect name, signature text) -> FunctionType (or None: not one)
        # types: (dialect name, type text) -> Type (or None)
        # props: (dialect name, properties text) -> dict (or None)
        # locs: location text -> Location (or None), for texts without "#"
        # tails: (dialect name, op name, the line after its operands up to its location) ->
        #   (spec, OpAttributes or None, operand types, result type): an op made and checked
        #   once from those pieces, made again without the checks (and, by ``known_line``,
        #   without the regular expression); a PRETTY_LINE's key is (dialect name, op name,
        #   None, type text, operand count)
        (self.sigs, self.types, self.props, self.locs,
         self.tails) = _tables(parser.check_ops)
        self.own_locs: dict = {}  # location texts naming an alias, for this parse only
        self.callers: dict = {}  # callsites' callers by the text after them (this parse)

    def _whole(self, text, read):
        """``read(ts)`` on all of ``text``, or None if it fails or leaves some unread."""
        ts = TokenStream(text)
        try:
            v = read(ts)
            ts.expect_end()
        except (ParseError, TypeError, ValueError):
            return None
        return v

    def signature(self, text):
        p = self.parser
        key = (p.dialect.name, text)
        try:
            return self.sigs[key]
        except KeyError:
            pass
        t = read_function_text(text) or self._whole(text, lambda ts: read_type(ts, p.dialect))
        if not isinstance(t, FunctionType) or len(t.results) != 1:
            t = None
        self.sigs[key] = t
        return t

    def type(self, text):
        p = self.parser
        key = (p.dialect.name, text)
        try:
            return self.types[key]
        except KeyError:
            pass
        t = self._whole(text, lambda ts: read_type(ts, p.dialect))
        self.types[key] = t
        return t

    def properties(self, text):
        key = (self.parser.dialect.name, text)
        try:
            return self.props[key]
        except KeyError:
            pass
        d = self._by_parser(text[2:-1], self.parser.attr_dict)  # " <{...}>" -> "{...}"
        self.props[key] = d
        return d

    def location(self, text):
        """The location ``text`` (`` loc(...)``) reads as; UNKNOWN for no text (a line
        without one); None where it does not read whole."""
        if not text:
            return UNKNOWN
        locs = self.locs if "#" not in text else self.own_locs
        try:
            return locs[text]
        except KeyError:
            pass
        loc = read_location_text(text[5:-1], self.callers) if text.startswith(" loc(") \
            and text.endswith(")") else None
        if loc is None:  # (another form than printers write, or one to report: by tokens)
            loc = self._by_parser(text[1:], self.parser.tokens_location)
        locs[text] = loc
        return loc

    def _by_parser(self, text, method):
        """``_whole`` of a parser ``method`` (``attr_dict``, ``tokens_location``): it reads
        the parser's stream, which is ``text``'s for the time of the call."""
        p = self.parser
        saved = p.ts

        def read(ts):
            p.ts = ts
            try:
                return method()
            finally:
                p.ts = saved

        return self._whole(text, read)


# The tables LineCache shares, per op-check setting: replaced whole (never emptied in place,
# so a parse holding the old ones is undisturbed) once one grows past the limit.
_TABLES: dict = {}
_TABLE_LIMIT = 8192


def _tables(check_ops: bool) -> tuple:
    tables = _TABLES.get(check_ops)
    if tables is None or max(map(len, tables)) > _TABLE_LIMIT:  # (once a parse)
        tables = _TABLES[check_ops] = ({}, {}, {}, {}, {})
    return tables


def location_line(cache: LineCache, ts):
    """The location that ends the line at the ``loc`` the token stream ``ts`` has peeked at
    (its ``(`` peeked too), read whole through ``cache`` and consumed; None where the rest of
    the line is not one location (read token by token then).

    NOTE: an op the token reader reads (one holding a region, most often: its location ends
    the line that closes it) is followed by its location, the longest piece of a lowered
    program's text (a call-site chain); read by tokens it was a third of parsing one."""
    text = ts.text
    start = ts._ahead[0].pos
    end = text.find("\n", start)
    if end < 0:
        end = len(text)
    if text[end - 1] != ")":  # (a block argument's location, the rest of a signature after it)
        return None
    loc = cache.location(" " + text[start:end])
    if loc is None:
        return None
    ts._ahead.clear()
    ts._pos = end
    return loc


def one_line(cache: LineCache, text: str, pos: int, block):
    """``(op, end)`` for the one-line op at ``pos`` read whole (``known_line``, else a
    GENERIC_LINE or PRETTY_LINE match), added to nothing yet; None to read it token by token;
    ``REGION_HEAD`` for a line that opens an op's regions.
    The expressions look at most 4096 characters ahead: a longer line (a constant's hex) is
    left to the tokens, where their lazy matching would crawl through megabytes. A line
    holding ``//`` is too: a comment may hide what looks like a location."""
    known = known_line(cache, text, pos, block)
    if known is not None:
        return known  # (or REGION_HEAD)
    m = GENERIC_LINE.match(text, pos, pos + 4096)
    read = generic_op
    if m is None:
        m = PRETTY_LINE.match(text, pos, pos + 4096)
        read = pretty_op
        if m is None:
            m = VOID_LINE.match(text, pos, pos + 4096)
            if m is None:
                return None
            read = void_op
    if text.find("//", m.start(), m.end()) >= 0:
        return None  # a comment, which the expressions cannot tell from a piece
    p = cache.parser
    outer = p.dialect
    name = m.group(1 if read is void_op else 2)
    p.dialect = BY_PREFIX.get(name.partition(".")[0], outer)  # its pieces' spelling
    try:
        op = read(cache, m, block)
    finally:
        p.dialect = outer
    return None if op is None else (op, m.end())


def _typed_operands(p, frame, args: str, ins: tuple):
    """The values ``args`` (``"%a, %b"``) names, innermost scope first (where a chain's
    operands are), when they are as many as ``ins`` and of those types; else None (the
    token-level path reports the problem at its place)."""
    if len(ins) == 2:  # most ops: without the loops
        a, sep, b = args.partition(", ")
        if not sep or ", " in b:
            return None
        va = frame.get(a)
        if va is None:
            va = p.scope.lookup(a)
            if va is None:
                return None
        vb = frame.get(b)
        if vb is None:
            vb = p.scope.lookup(b)
            if vb is None:
                return None
        if va.type is not ins[0] or vb.type is not ins[1]:
            return None
        return [va, vb]
    operands = []
    if args:
        for a in args.split(", "):
            v = frame.get(a)
            if v is None:
                v = p.scope.lookup(a)
                if v is None:
                    return None
            operands.append(v)
    if len(operands) != len(ins):
        return None
    for v, t in zip(operands, ins):
        if v.type is not t:
            return None
    return operands


def generic_op(cache: LineCache, m, block):
    """The op of a GENERIC_LINE match, or None to read the line token by token."""
    result, name, args, props_text, sig_text, loc_text = m.groups()
    p = cache.parser
    frames = p.scope.frames
    frame = frames[-1]
    if result in frame:
        return None  # a redefinition: reported by the token-level path
    tail = (p.dialect.name, name, f"{props_text or ''} : {sig_text}")  # as known_line splits
    made = cache.tails.get(tail)
    if made is not None:
        spec, attributes, ins, rt = made
    else:
        ftype = cache.signature(sig_text)
        if ftype is None:
            return None
        spec, ins = None, ftype.inputs
    operands = _typed_operands(p, frame, args, ins)
    if operands is None:
        return None
    location = cache.location(loc_text)
    if location is None:
        return None
    if spec is not None:
        op = make_operation(spec, operands, (rt,), attributes, (), location, block)
    else:
        props = cache.properties(props_text) if props_text else {}
        if props is None:
            return None
        op = p.make(name, operands, props, {}, (), ftype.results, location,
                    Token("string", name, m.start(2) - 1), block)
        tails = cache.tails
        if len(tails) <= _TABLE_LIMIT and rememberable(op):
            tails[tail] = (op.spec, op.attributes, ins, op.results[0].type)
    frame[result] = op.results[0]
    return op


def void_op(cache: LineCache, m, block):
    """The op of a VOID_LINE match, made as ``_Parser.make`` makes it, or None."""
    p = cache.parser
    ftype = cache.type(m.group(3))
    if not isinstance(ftype, FunctionType) or ftype.results:
        return None
    operands = _typed_operands(p, p.scope.frames[-1], m.group(2), ftype.inputs)
    if operands is None:
        return None
    location = cache.location(m.group(4))
    if location is None:
        return None
    op = p.make(m.group(1), operands, {}, {}, (), (), location,
                Token("string", m.group(1), m.start(1) - 1), block)
    tails = cache.tails
    if len(tails) <= _TABLE_LIMIT and rememberable(op):
        # (known_line's key of a line without results: a 4-tuple, a generic line's is 3)
        tails[(p.dialect.name, m.group(1), " : " + m.group(3), None)] = (
            op.spec, op.attributes, ftype.inputs, None)
    return op


_RESULT = re.compile(_NAME)
# What known_line and one_line give for a line that opens an op's regions (``... ({``): no
# one-line op, but perhaps a combining op (mhlo_ir.parse_regions.combining_op).
REGION_HEAD = (None, None)


def known_line(cache: LineCache, text: str, pos: int, block):
    """The op of the line at ``pos`` when an earlier line told what it means: ``(op, end)``,
    or None. A GENERIC_LINE whose text after its operands (properties and signature) an
    earlier line had; an elementwise custom form whose op, type and operand count one had
    (``_known_pretty``); else a template (``parse_templates``).

    The line is split by ``str.partition`` (a third of the cost of matching GENERIC_LINE)
    and its tail looked up in ``cache.tails``, which holds only tails that GENERIC_LINE (or
    VOID_LINE, for lines without results) split and whose pieces parsed whole. A tail this
    split gets wrong (a location holding `` loc(``, a string attribute holding ``")"``) is
    not among them, so such a line goes the regular expression's way; a hit is the very text
    an earlier op was made from."""
    start = pos + 1 if text.startswith("\n", pos) else pos
    end = text.find("\n", start)
    if end < 0 or end >= pos + 4096:  # (one_line's bound on the expressions)
        return None
    line = text[start:end].lstrip(" \t")
    if "//" in line:
        return None  # a comment: where it starts is the token reader's to say
    if line.endswith("({"):
        return REGION_HEAD
    if line.startswith('"'):  # a generic line without results: "func.return"(%3) ...
        result, rest = None, line[1:]
    else:
        result, sep, rest = line.partition(' = "')
        if not sep:
            # A custom form: an elementwise one pretty_op read, or a template
            # (parse_templates) a line read token by token left.
            return _known_pretty(cache, line, end, block) or \
                template_line(cache, line.rstrip(" \t"), end, block)
    name, sep, rest = rest.partition('"(')
    args, sep2, rest = rest.partition(")")
    if not sep or not sep2:
        return template_line(cache, line.rstrip(" \t"), end, block)
    body, sep, loc_tail = rest.rpartition(" loc(")
    if not sep:
        body = rest
    p = cache.parser
    dialect = BY_PREFIX.get(name.partition(".")[0], p.dialect).name  # as one_line
    # (the key of a line without results is a 4-tuple, void_op's; GENERIC_LINE's are 3)
    hit = cache.tails.get((dialect, name, body) if result is not None else
                          (dialect, name, body, None))
    if hit is None:  # (a generic line GENERIC_LINE does not take: attributes, say)
        return template_line(cache, line.rstrip(" \t"), end, block)
    frame = p.scope.frames[-1]
    if result is not None and (_RESULT.fullmatch(result) is None or result in frame):
        return None  # (a redefinition: reported by the token-level path)
    spec, attributes, ins, rt = hit
    operands = _typed_operands(p, frame, args, ins)
    location = cache.location(sep + loc_tail) if sep else UNKNOWN  # (no call: most have none)
    if operands is None or location is None:
        return None
    if result is None:
        return make_operation(spec, operands, (), attributes, (), location, block), end
    op = make_operation(spec, operands, (rt,), attributes, (), location, block)
    frame[result] = op
    return op, end


def _known_pretty(cache: LineCache, line: str, end: int, block):
    """known_line for an elementwise custom form (``%3 = mhlo.add %1, %2 : tensor<8xf32>``)
    whose tail (its op name, type and operand count) pretty_op read before: split by
    ``str.partition`` and looked up as pretty_op keys it."""
    result, sep, rest = line.partition(" = ")
    if not sep:
        return None
    name, sep, rest = rest.partition(" ")
    if not sep:
        return None
    args, sep, rest = rest.partition(" : ")
    if not sep:
        return None
    type_text, sep, loc_tail = rest.rpartition(" loc(")
    if not sep:
        type_text = rest
    p = cache.parser
    dialect = BY_PREFIX.get(name.partition(".")[0], p.dialect).name  # as one_line
    made = cache.tails.get((dialect, name, None, type_text, args.count(", ") + 1))
    if made is None or _RESULT.fullmatch(result) is None:
        return None
    frame = p.scope.frames[-1]
    if result in frame:
        return None  # a redefinition: reported by the token-level path
    operands = _typed_operands(p, frame, args, made[2])
    location = cache.location(sep + loc_tail) if sep else UNKNOWN  # (no call: most have none)
    if operands is None or location is None:
        return None
    op = make_operation(made[0], operands, (made[3],), None, (), location, block)
    frame[result] = op
    return op, end


def pretty_op(cache: LineCache, m, block):
    """The op of a PRETTY_LINE match (an elementwise custom form), or None."""
    p = cache.parser
    name = m.group(2)
    operands = _operands(p, m.group(3))
    if operands is None:
        return None
    try:
        spec, _ = p.spec_of(name, {}, 0)
    except ParseError:  # (the token path reads it again, and says where)
        return None
    if spec.pretty is not ELEMENTWISE:  # opaque specs have no form
        return None
    t = cache.type(m.group(4))
    if t is None:
        return None
    if isinstance(t, FunctionType):
        if len(t.inputs) != len(operands) or len(t.results) != 1:
            return None
        ins, rt = t.inputs, t.results
    else:
        ins, rt = (t,) * len(operands), (t,)
    for v, want in zip(operands, ins):
        if v.type is not want:
            return None
    location = cache.location(m.group(5))
    if location is None:
        return None
    # Kept for _known_pretty, which takes the lines like it (known_line tries it first).
    # (A key of its own shape: a generic line's tail is a 3-tuple.)
    op = p.make(name, operands, {}, {}, (), rt, location, Token("bare", name, m.start(2)),
                block)
    if len(cache.tails) <= _TABLE_LIMIT and rememberable(op):
        cache.tails[(p.dialect.name, name, None, m.group(4), len(operands))] = (
            op.spec, None, ins, rt[0])
    return _named(p, m.group(1), op)


def _operands(p, text):
    if not text:
        return ()
    lookup = p.scope.lookup
    out = []
    for name in text.split(", "):
        v = lookup(name)
        if v is None:
            return None  # the token-level path reports it at its place
        out.append(v)
    return tuple(out)


def _named(p, name, op):
    frame = p.scope.frames[-1]
    if name in frame or len(op.results) != 1:
        return None  # a redefinition: reported by the token-level path
    frame[name] = op.results[0]
    return op


# A block label whose arguments are tensors without locations, as functions of many arguments
# print: ``^bb0(%arg0: tensor<8x64xf32>, %arg1: tensor<64x64xf32>):`` then the line's end.
TENSOR = r"tensor<[^<>\n]*>"  # (a tensor type's text, as the line paths take it)
_LABEL_ARGS = _NAME + ": " + TENSOR
LABEL_LINE = re.compile(r"\^" + _ID + r"\(((?:" + _LABEL_ARGS + "(?:, " + _LABEL_ARGS +
                        r")*)?)\):(?=\n)")
_LABEL_ARG = re.compile("(" + _NAME + "): (" + TENSOR + ")")


def label_line(cache: LineCache, text: str, pos: int):
    """``(args, end)`` for the block label at ``pos`` (its ``^`` token's offset) when it is a
    LABEL_LINE whose types each parse whole, ``args`` as ``_Parser.block_label`` gives them;
    else None. Token by token, a 200-argument function's label was a third of reading it."""
    m = LABEL_LINE.match(text, pos)
    if m is None:
        return None
    args = []
    for am in _LABEL_ARG.finditer(text, m.start(1), m.end(1)):
        t = cache.type(am.group(2))
        if t is None:
            return None
        args.append((am.group(1), t, UNKNOWN, Token("%", am.group(1), am.start(1))))
    return args, m.end()
