"""Tokens of MLIR's textual syntax, read lazily from a string: the lexer under every ``parse``.

Each type, attribute and location kind parses itself next to its ``render`` (``TensorType.parse``,
``FloatAttr.parse``, ``FusedLoc.parse``...), reading from one ``TokenStream``; this module only
knows MLIR's lexical rules, taken from MLIR's own lexer (``mlir/lib/AsmParser/Lexer.cpp``):

- bare identifiers ``[A-Za-z_][A-Za-z0-9_$.]*`` (keywords such as ``tensor`` and ``dense``
  included); ``%``, ``#``, ``!`` and ``^`` names with a suffix ``[0-9]+`` or
  ``[A-Za-z$._-][A-Za-z0-9$._-]*``; ``@name`` and ``@"quoted name"``;
- integers (decimal, ``0x`` hex) and floats, which need a decimal point (``1.``, ``1.5e-3``:
  ``1e5`` is the integer 1 followed by the identifier ``e5``); a sign is a separate ``-`` token;
- strings with MLIR's escapes ``\\\\``, ``\\"``, ``\\n``, ``\\t`` and ``\\XX`` (two hex digits,
  one byte); a newline inside a string is an error;
- punctuation, ``->`` and ``...``; ``//`` comments and whitespace between tokens.

``tensor<2x3xf32>`` lexes badly token by token (``2``, ``x3xf32``; ``0x3`` is even a hex
number), so MLIR's parser splits such tokens again; ``TokenStream.dimension_list`` reads the
dimensions straight from the characters instead.

Errors are ``ParseError`` (a ValueError) with a 1-based line and column and, where one token was
expected, what was expected and what was found.
"""

from __future__ import annotations

from .text import bytes_string

__all__ = ["ParseError", "Token", "LongString", "TokenStream", "decode_string"]

# Strings longer than this are lexed as ``LongString``s: not copied, and not searched for line
# breaks here (``string_value`` refuses them where the value is read; hex with one does not
# decode), so a big constant's hex is scanned once, for its closing quote.
_LONG_STRING = 4096


class ParseError(ValueError):
    """Text that does not parse: ``line``:``column`` (1-based) in ``source``, a message, and
    for a wrong token ``expected`` and ``found`` (None otherwise). ``source_line`` is the
    line of text (a window of it around the column, if long), shown under the message with a
    caret under the column."""

    def __init__(self, message: str, line: int, column: int, source: str | None = None,
                 expected: str | None = None, found: str | None = None,
                 source_line: str | None = None, caret: int | None = None):
        where = f"{line}:{column}" if source is None else f"{source}:{line}:{column}"
        shown = "" if source_line is None else \
            f"\n  {source_line}\n  {' ' * ((caret if caret is not None else column) - 1)}^"
        super().__init__(f"{where}: {message}{shown}")
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        self.expected = expected
        self.found = found
        self.source_line = source_line
        self.caret = caret


class Token:
    """One token: ``kind`` and its ``text`` as written, starting at offset ``pos``.

    Kinds: ``"bare"`` (identifiers and keywords), ``"%"``, ``"#"``, ``"!"``, ``"^"`` and
    ``"@"`` (prefixed names; the text keeps the prefix), ``"int"`` (decimal or ``0x`` hex),
    ``"float"``, ``"string"`` (text with its quotes and escapes; ``TokenStream.string_value``
    decodes it), ``"punct"`` and ``"eof"``.
    """

    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind: str, text: str, pos: int):
        self.kind = kind
        self.text = text
        self.pos = pos

    def describe(self) -> str:
        """The token as an error message names it."""
        if self.kind == "eof":
            return "end of input"
        text = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return repr(text)

    def __repr__(self):
        return f"Token({self.kind!r}, {self.text!r}, {self.pos})"


class LongString(Token):
    """A string token too long to copy out of the source until its text is asked for: a big
    constant's hex (tens of megabytes) is decoded straight from the source (``hex_span``), a
    piece at a time."""

    __slots__ = ("source", "end")

    def __init__(self, source: str, pos: int, end: int):
        self.kind = "string"
        self.pos = pos
        self.source = source
        self.end = end  # one past the closing quote

    @property
    def text(self) -> str:
        return self.source[self.pos:self.end]

    def hex_span(self) -> tuple | None:
        """Where the digits of a ``"0x..."`` string lie in ``source``: ``(start, end)``
        (None for other strings)."""
        pos = self.pos
        if not self.source.startswith('"0x', pos):
            return None
        return pos + 3, self.end - 1


_PATTERNS = None
# What follows % ^ # ! in a name: digits, or an identifier that does not start with one (so
# ``%1a`` is two tokens). The parser's fast paths spell their expressions with it.
NAME_ID = r"(?:[0-9]+|[A-Za-z$._\-][A-Za-z0-9$._\-]*)"


def _patterns():
    """(token regex, whitespace regex, decimal digits regex), compiled on first use: importing
    mhlo_ir must not pay for a parser nobody calls."""
    global _PATTERNS
    if _PATTERNS is None:
        import re
        string = r'"(?:[^"\\\n\v\f]|\\["\\nt]|\\[0-9a-fA-F]{2})*"'
        token = re.compile(
            r"(?P<int>0x[0-9a-fA-F]+)"
            r"|(?P<float>[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?)"
            r"|(?P<dec>[0-9]+)"
            r"|(?P<bare>[A-Za-z_][A-Za-z0-9_$.]*)"
            r"|(?P<prefixed>[%#!^]" + NAME_ID + ")"
            r"|(?P<at>@(?:[A-Za-z_][A-Za-z0-9_$.]*|" + string + "))"
            r"|(?P<string>" + string + ")"
            r"|(?P<punct>->|\.\.\.|[-()\[\]{}<>,:=?*+|])")
        skip = re.compile(r"(?:[ \t\r\n\v\f]+|//[^\n\r]*)*")
        digits = re.compile(r"[0-9]+")
        _PATTERNS = (token, skip, digits)
    return _PATTERNS


_KIND = {"int": "int", "dec": "int", "float": "float", "bare": "bare", "at": "@",
         "string": "string", "punct": "punct"}
_SIMPLE_ESCAPES = {'"': 0x22, "\\": 0x5C, "n": 0x0A, "t": 0x09}


def decode_string(text: str) -> str:
    """The value of a string token's ``text`` (quotes included). ``\\XX`` escapes are bytes, so
    the whole is decoded as UTF-8, bytes that are not UTF-8 kept as surrogates (mhlo_ir.text:
    an MLIR string holds any bytes)."""
    body = text[1:-1]
    if "\\" not in body:
        return body
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            j = body.find("\\", i)
            if j < 0:
                j = n
            out += body[i:j].encode("utf-8")
            i = j
            continue
        e = body[i + 1]
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 2
        else:
            out.append(int(body[i + 1:i + 3], 16))
            i += 3
    return bytes_string(bytes(out))


def nested_too_deeply(ts) -> "ParseError":
    """The ParseError for text nested past Python's recursion limit, where reading stopped:
    the readers recurse through nested lists, types, locations and regions (MLIR reads
    deeper nests; ``sys.setrecursionlimit`` lets us too)."""
    import sys
    return ts.error_at(min(ts._pos, len(ts.text)), "nested too deeply to read within "
                       f"Python's recursion limit ({sys.getrecursionlimit()}; "
                       "sys.setrecursionlimit raises it)")


class TokenStream:
    """Tokens of ``text``, lexed on demand, with the helpers every ``parse`` shares.

    ``source`` names the text in error messages (like MLIR's ``"-"`` for standard input).
    """

    __slots__ = ("text", "source", "_pos", "_ahead", "_token_re", "_skip_re", "_end")

    def __init__(self, text: str, source: str | None = None):
        if not isinstance(text, str):
            raise TypeError(f"expected MLIR text as a str, got {type(text).__name__}")
        self.text = text
        self.source = source
        self._pos = 0          # where lexing continues (after the tokens in _ahead)
        self._ahead = []       # tokens lexed but not consumed
        self._token_re, self._skip_re, _ = _patterns()
        self._end = len(text)

    # -- lexing ---------------------------------------------------------------------------

    def _lex(self) -> Token:
        text = self.text
        pos = self._skip_re.match(text, self._pos).end()
        if pos >= self._end:
            self._pos = pos
            return Token("eof", "", pos)
        if text[pos] == '"':
            # Fast path for strings without escapes: a big constant's hex is megabytes long,
            # and the regex takes a second per few megabytes.
            end = text.find('"', pos + 1)
            # Without a backslash, the first quote ends it (a bounded find, not a copy of the
            # body). A long one (a big constant's hex) is not also searched for line breaks
            # here: string_value refuses them where its value is read, and hex with one does
            # not decode, so it is scanned twice rather than five times.
            find = text.find
            start = pos + 1
            if end > 0 and find("\\", start, end) < 0:
                if end - pos > _LONG_STRING:
                    self._pos = end + 1
                    return LongString(text, pos, end + 1)
                if find("\n", start, end) < 0 and find("\v", start, end) < 0 and \
                        find("\f", start, end) < 0:
                    self._pos = end + 1
                    return Token("string", text[pos:end + 1], pos)
        m = self._token_re.match(text, pos)
        if m is None:
            raise self._lex_error(pos)
        group = m.lastgroup
        kind = text[pos] if group == "prefixed" else _KIND[group]
        self._pos = m.end()
        return Token(kind, m.group(), pos)

    def _lex_error(self, pos: int) -> ParseError:
        text = self.text
        c = text[pos]
        if c == '"' or (c == "@" and text.startswith('"', pos + 1)):
            return self._string_error(pos + (c == "@"))
        if c in "%#!^@":
            return self.error_at(pos, f"expected a name after '{c}'")
        return self.error_at(pos, f"unexpected character {c!r}")

    def _string_error(self, start: int) -> ParseError:
        text = self.text
        i = start + 1
        while i < len(text):
            c = text[i]
            if c in "\n\v\f":
                break
            if c == "\\":
                nxt = text[i + 1:i + 3]
                if nxt[:1] in _SIMPLE_ESCAPES:
                    i += 2
                    continue
                if len(nxt) == 2 and all(h in "0123456789abcdefABCDEF" for h in nxt):
                    i += 3
                    continue
                return self.error_at(i, "unknown escape in string literal")
            i += 1
        return self.error_at(i if i < len(text) else start, "expected '\"' in string literal")

    # -- reading --------------------------------------------------------------------------

    def peek(self, k: int = 0) -> Token:
        """The token ``k`` places ahead, not consumed."""
        ahead = self._ahead
        if ahead and not k:
            return ahead[0]
        while len(ahead) <= k:
            ahead.append(self._lex())
        return ahead[k]

    def next(self) -> Token:
        """The next token, consumed."""
        if self._ahead:
            return self._ahead.pop(0)
        return self._lex()

    def at(self, text: str, k: int = 0) -> bool:
        """Whether the token ``k`` ahead is the punctuation or keyword ``text``."""
        tok = self.peek(k)
        return tok.text == text and tok.kind in ("punct", "bare")

    def accept(self, text: str) -> bool:
        """Consume the punctuation or keyword ``text`` if it comes next."""
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str) -> Token:
        """Consume the punctuation or keyword ``text``; anything else is an error."""
        tok = self.peek()
        if tok.text != text or tok.kind not in ("punct", "bare"):
            raise self.expected(f"'{text}'")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        """Consume a token of ``kind``; ``what`` names it in the error otherwise."""
        if self.peek().kind != kind:
            raise self.expected(what)
        return self.next()

    def expect_end(self) -> None:
        """The text must end here."""
        if self.peek().kind != "eof":
            raise self.expected("end of input")

    def comma_list(self, read, close: str, open: str | None = None) -> list:
        """``read()`` items separated by commas up to ``close`` (consumed); ``open``, if given,
        is consumed first. An empty list is allowed."""
        if open is not None:
            self.expect(open)
        items = []
        if self.accept(close):
            return items
        while True:
            items.append(read())
            if self.accept(close):
                return items
            if not self.at(","):
                raise self.expected(f"',' or '{close}'")
            self.next()

    def string_value(self, tok: Token) -> str:
        """The decoded value of string token ``tok`` (or of a quoted ``@"name"``)."""
        text = tok.text[1:] if tok.kind == "@" else tok.text
        if "\n" in text or "\v" in text or "\f" in text:
            raise self._string_error(tok.pos + (tok.kind == "@"))
        return decode_string(text)

    def string(self, what: str = "a string") -> str:
        """Consume a string token and give its decoded value."""
        return self.string_value(self.expect_kind("string", what))

    def integer(self, what: str = "an integer") -> int:
        """Consume an integer literal, with an optional leading ``-`` (decimal or hex)."""
        neg = self.accept("-")
        tok = self.peek()
        if tok.kind != "int":
            raise self.expected(what)
        self.next()
        v = int(tok.text, 0) if tok.text.startswith("0x") else int(tok.text)
        return -v if neg else v

    def dimension_list(self) -> tuple:
        """After ``tensor<``: the static dimensions ``2x3x`` of a ranked shape, read from the
        characters (``0x3xf32`` is the dimensions 0 and 3, not a hex number), leaving the
        stream at the element type. ``?`` and ``*`` are errors: only static shapes exist here.
        """
        _, skip_re, digits_re = _patterns()
        text = self.text
        pos = self.peek().pos
        self._ahead.clear()
        dims = []
        while True:
            pos = skip_re.match(text, pos).end()
            m = digits_re.match(text, pos)
            if m is None:
                if text.startswith("?", pos):
                    raise self.error_at(pos, "dynamic dimensions ('?') are not supported: "
                                             "tensor types here are static")
                if text.startswith("*", pos) and not dims:
                    raise self.error_at(pos, "unranked tensor types are not supported")
                break
            after = skip_re.match(text, m.end()).end()
            if not text.startswith("x", after):
                self._pos = m.start()
                raise self.expected("'x' in dimension list")
            try:
                dims.append(int(m.group()))
            except ValueError:  # (more digits than Python's int() reads: sys.int_info)
                raise self.error_at(m.start(), "invalid dimension") from None
            pos = after + 1
        self._pos = pos
        return tuple(dims)

    def mark(self) -> tuple:
        """Where the stream stands, for ``reset``: to read a stretch again as another kind
        once a later token has told which (``dense<..> : tensor<2xindex>``)."""
        return self._pos, tuple(self._ahead)

    def reset(self, mark: tuple) -> None:
        """Back to where ``mark`` was taken."""
        self._pos = mark[0]
        self._ahead[:] = mark[1]

    def make(self, tok: Token, factory, *args, **kwargs):
        """``factory(*args, **kwargs)``; the ValueError or TypeError of its validation (a value
        that parses but cannot be built, e.g. an i8 of 300) is a ParseError at ``tok``."""
        try:
            return factory(*args, **kwargs)
        except (ValueError, TypeError) as e:
            if isinstance(e, ParseError):
                raise
            raise self.error(str(e), tok) from None

    # -- errors ---------------------------------------------------------------------------

    def line_column(self, pos: int) -> tuple:
        """The 1-based line and column of offset ``pos``."""
        text = self.text
        line = text.count("\n", 0, pos) + 1
        return line, pos - (text.rfind("\n", 0, pos) + 1) + 1

    def error_at(self, pos: int, message: str, **kw) -> ParseError:
        line, column = self.line_column(pos)
        text = self.text
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        if end < 0:
            end = len(text)
        # A window of a long line (a constant's hex is one line of megabytes).
        lo, hi = max(start, pos - 60), min(end, pos + 60)
        shown = ("..." if lo > start else "") + text[lo:hi] + ("..." if hi < end else "")
        caret = pos - lo + 1 + (3 if lo > start else 0)
        return ParseError(message, line, column, self.source, **kw, source_line=shown,
                          caret=caret)

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        """A ParseError at ``tok`` (default: the next token)."""
        return self.error_at((tok or self.peek()).pos, message)

    def expected(self, what: str, tok: Token | None = None) -> ParseError:
        """``expected <what>, found <token>`` at ``tok`` (default: the next token)."""
        tok = tok or self.peek()
        found = tok.describe()
        return self.error_at(tok.pos, f"expected {what}, found {found}", expected=what,
                             found=found)
