"""MLIR text into a Module: the op-level grammar over the readers of types, attributes and
locations (each kind parses itself next to its render; ``mhlo_ir.syntax`` is the lexer).

    m = mhlo_ir.parse(text)            # a Module; Module.verify() has run on it
    ms = mhlo_ir.parse_modules(text)   # files of several modules split by "// -----"
    m = mhlo_ir.parse_file(path)

What it reads: the generic form of any op (``%0 = "mhlo.add"(%a, %b) <{...}> ({...}) {...} :
(T, T) -> T loc(...)``), ``builtin.module`` and ``func.func`` in both their generic and custom
forms, and the custom forms of ``mhlo_ir.pretty_forms`` (those the printer writes with
``pretty=True``). An op the table does not know keeps what the text says and prints back the
same (``mhlo_ir.opaque``). Locations inline or through ``#loc`` aliases defined anywhere at the
top level.

Ops are made directly, not through the builder, but each known op is checked as it is read by
the same ``OpSpec.validate`` the builder runs, and the whole module by ``Module.verify``, so a
parsed module is one the builder could have made; mistakes are ``ParseError``s at the op's line
and column. Attributes an op owns go through its spec's converters, so ``dense<[1, 0]> :
tensor<2xi64>`` and ``array<i64: 1, 0>`` become the same dialect-neutral value and the module
prints in either dialect.

Values are scoped as MLIR scopes them: a region sees the values of the regions around it
(except where its op isolates it: functions), names defined inside a region end with it, and a
name defined twice in one scope is an error.
"""

from __future__ import annotations

import re

from .attributes import Attribute, DictionaryAttr, StringAttr, TypeAttr, UnitAttr, \
    read_attribute
from .dialect import BY_PREFIX, MHLO, STABLEHLO
from .errors import IRError, ModuleVerificationError
from .ir import FUNCTION_PROPERTIES, FUNCTION_RESERVED, Block, Function, Module, Region
from .location import UNKNOWN, read_location
from .parse_aliases import Aliases
from .parse_make import IllFormedOpError, make_op, spec_of
from .parse_heads import (empty_tail, function_head, module_head, pretty_function_head,
                          pretty_module_head)
from .parse_lines import REGION_HEAD, LineCache, label_line, location_line, one_line
from .parse_regions import combining_op, region_head, region_tail, remember_combining
from .parse_templates import remember, starts_op
from .parse_scope import Scope
from .syntax import ParseError, TokenStream, nested_too_deeply
from .text import check_attr_name
from .types import FunctionType, read_type

__all__ = ["parse", "parse_modules", "parse_file", "ParseError", "IllFormedOpError"]


# Op-name prefixes that name the HLO dialects (ops spelled through them are in the table by
# their neutral name) and the dialect whose attribute spellings each implies.
_SPLIT = re.compile(r"^// -----[^\n]*$", re.M)


def parse(text: str, *, source: str | None = None, verify: bool = True,
          check_ops: bool = True) -> Module:
    """The module spelled by ``text``: a ``builtin.module`` (either form), or ops and
    functions at top level, which MLIR wraps in an unnamed module. ``source`` names the text
    in error messages (``file:line:col``). With ``verify`` (the default) ``Module.verify``
    runs on the result. Raises ``ParseError`` (a ValueError) for text that does not parse or
    describes an ill-formed op; ``ModuleVerificationError`` for what only the whole module
    shows. ``check_ops=False`` (with ``verify=False``) reads ill-formed ops as written,
    checking only what the text itself must say (types of uses, names, structure)."""
    parser = _Parser(text, source, check_ops)
    try:
        module = parser.module()
    except RecursionError:
        raise nested_too_deeply(parser.ts) from None
    finally:
        # its line cache points back at it: left as it is, every parse would leave cyclic
        # garbage behind for the collector
        parser.lines = parser.aliases = None
    if verify:
        from .verifier import verify_module
        # Each op was validated as it was read, each use resolved in scope.
        try:
            verify_module(module, ops_checked=check_ops, parsed=True)
        except ModuleVerificationError as e:
            from .parse_places import placed
            raise placed(text, source, check_ops, module, e) or e from None
    return module


def _spells_stablehlo(text: str) -> bool:
    """Whether the text's ops are spelled through StableHLO: decided by its first op spelled
    through either dialect (``stablehlo.add`` or ``mhlo.add`` starting a line after
    indentation, after ``= ``, or quoted); ``mhlo.num_partitions``-like attribute names do
    not count. Found with str.find, and it stops at that first op: a regex search through a
    big constant's hex is slow, and so is a scan of all of it."""
    find = text.find
    at = find("hlo.")
    while at >= 0:
        if text.startswith("stablehlo.", at - 6):
            start, stable = at - 6, True
        elif text.startswith("mhlo.", at - 1):
            start, stable = at - 1, False
        else:
            at = find("hlo.", at + 4)
            continue
        before = text[max(start - 2, 0):start]
        if before.endswith('"') or before == "= " or \
                not text[text.rfind("\n", 0, start) + 1:start].strip(" \t"):
            return stable
        at = find("hlo.", at + 4)
    return False


def parse_modules(text: str, *, source: str | None = None, verify: bool = True) -> list:
    """The modules of a file split by ``// -----`` lines (MLIR's ``--split-input-file``),
    in order; line numbers in errors count from the top of the whole file."""
    out = []
    start = 0
    for m in list(_SPLIT.finditer(text)) + [None]:
        end = len(text) if m is None else m.start()
        # Blank out what precedes this piece (keeping newlines) so positions stay the file's.
        head = text[:start]
        piece = re.sub(r"[^\n]", " ", head) + text[start:end]
        if piece.strip():
            out.append(parse(piece, source=source, verify=verify))
        if m is not None:
            start = m.end()
    return out


def parse_file(path, *, verify: bool = True):
    """The module in file ``path`` (a list of modules if the file is split by
    ``// -----``), with the path in error messages."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    source = str(path)
    if _SPLIT.search(text):
        return parse_modules(text, source=source, verify=verify)
    return parse(text, source=source, verify=verify)


class _Parser:
    __slots__ = ("ts", "aliases", "scope", "dialect", "check_ops", "lines", "positions")

    def __init__(self, text: str, source, check_ops: bool = True):
        self.check_ops = check_ops
        self.lines = LineCache(self)
        self.ts = TokenStream(text, source)
        self.aliases = Aliases(text, source)
        self.scope = Scope()
        self.dialect = STABLEHLO if _spells_stablehlo(text) else MHLO
        self.positions = None  # (id(op) -> where it starts, when asked: parse_places)

    # -- top level --------------------------------------------------------------------------

    def _skip_alias_definition(self) -> bool:
        ts = self.ts
        tok = ts.peek()
        if tok.kind == "#" and ts.at("=", 1):
            ts.next()
            ts.next()
            if ts.accept("loc"):
                ts.expect("(")
                read_location(ts, self.aliases)
                ts.expect(")")
                return True
            raise ts.error(f"only location aliases can be defined here; {tok.text} is "
                           "another kind of alias (attribute and type aliases are not "
                           "supported)", tok)
        return False

    def module(self) -> Module:
        ts = self.ts
        module = None
        loose = None  # functions at top level, outside any module
        while True:
            if self._skip_alias_definition():
                continue
            tok = ts.peek()
            if tok.kind == "eof":
                break
            if module is not None:
                raise ts.error("text after the module: one module per parse (split several "
                               "with '// -----' and use parse_modules)", tok)
            if (tok.kind == "bare" and tok.text in ("module", "builtin.module")) or \
                    (tok.kind == "string" and ts.string_value(tok) == "builtin.module"):
                if loose is not None:
                    raise ts.error("a module after top-level functions", tok)
                module = self.module_op()
                continue
            if loose is None:
                loose = Module(None)
            self.function_op(loose)
        if module is None:
            module = loose if loose is not None else Module(None)
        return module

    def module_op(self) -> Module:
        """``module @name attributes {...} {...}`` or ``"builtin.module"() <{sym_name =
        "name"}> ({...}) {...} : () -> ()``."""
        ts = self.ts
        tok = ts.next()
        if tok.kind == "string":  # generic
            head = module_head(ts)
            if head is not None:
                name, ts._pos = head
                module = self._new_module(name, None, tok)
            else:
                props, name = self._generic_head(tok, "builtin.module")
                for k in props:
                    if k != "sym_name":
                        raise ts.error(f"'builtin.module' has no property {k!r}", tok)
                module = self._new_module(name, None, tok)
                ts.expect("(")
            self.module_body(module, generic=True)
            if not empty_tail(ts):
                ts.expect(")")
                attrs = self.attr_dict() if ts.at("{") else {}
                self._set_module_attrs(module, attrs, tok)
                self._empty_signature("builtin.module")
        else:
            head = pretty_module_head(self.lines, ts)
            if head is not None:
                name, attrs, ts._pos = head
            else:
                name = None
                if ts.peek().kind == "@":
                    name = self.symbol()
                attrs = {}
                if ts.accept("attributes"):
                    attrs = self.attr_dict()
            module = self._new_module(name, None, tok)
            self._set_module_attrs(module, attrs, tok)
            self.module_body(module)
        module.location = self.trailing_location()
        return module

    def _new_module(self, name, attrs, tok) -> Module:
        try:
            return Module(name)
        except (TypeError, ValueError, IRError) as e:
            raise self.ts.error(str(e), tok) from None

    def _set_module_attrs(self, module, attrs, tok) -> None:
        for k, v in attrs.items():
            try:
                module.set_attr(k, v)
            except (TypeError, ValueError, IRError) as e:
                raise self.ts.error(str(e), tok) from None

    def module_body(self, module, generic: bool = False) -> None:
        """The module's one block: ``{ func.func ... }``. Its label may open it (``^bb0:``,
        MLIR's print of an empty module); in the generic form an empty region, with no block
        at all, is refused as MLIR refuses it."""
        ts = self.ts
        ts.expect("{")
        tok = ts.peek()
        if tok.kind == "^":
            ts.next()
            if not ts.at(":"):
                raise ts.error("a module's block takes no arguments", ts.peek())
            ts.next()
        elif generic and ts.at("}"):
            raise ts.error("'builtin.module' needs one block in its region (MLIR: \"region "
                           "with 1 blocks\"): an empty module's is written ^bb0:", tok)
        while not ts.accept("}"):
            tok = ts.peek()
            if tok.kind == "^":
                raise ts.error("a module's body is one block; block labels are not "
                               "allowed here", tok)
            self.function_op(module)

    # -- functions --------------------------------------------------------------------------

    def function_op(self, module) -> None:
        ts = self.ts
        tok = ts.peek()
        if tok.kind == "bare" and tok.text == "func.func":
            ts.next()
            fn = self.function_pretty(tok)
        elif tok.kind == "string" and ts.string_value(tok) == "func.func":
            ts.next()
            fn = self.function_generic(tok)
        elif tok.kind in ("bare", "string", "%"):
            raise ts.error("only func.func ops may appear in a module here, found "
                           f"{tok.describe()}", tok)
        else:
            raise ts.expected("'func.func' or the end of the module", tok)
        try:
            module.insert(fn, exact=True)
        except IRError as e:
            raise ts.error(str(e), tok) from None

    def function_generic(self, tok) -> Function:
        ts = self.ts
        head = function_head(self.lines, ts)
        if head is not None:
            name, ftype, visibility, ts._pos = head
            arg_attrs = res_attrs = None
            own = None
        else:
            props, name = self._generic_head(tok, "func.func")
            if name is None:
                raise ts.error("'func.func' needs a sym_name property", tok)
            ftype = props.get("function_type")
            if not isinstance(ftype, TypeAttr) or not isinstance(ftype.type, FunctionType):
                raise ts.error(f"function @{name} needs a function_type property holding a "
                               "function type", tok)
            ftype = ftype.type
            visibility = self._string_prop(props, "sym_visibility", "func.func", tok)
            arg_attrs = self._attr_dicts(props.get("arg_attrs"), "arg_attrs", tok)
            res_attrs = self._attr_dicts(props.get("res_attrs"), "res_attrs", tok)
            own = {}  # (func.func's properties a Function keeps among its attributes)
            for k, v in props.items():
                if k in FUNCTION_PROPERTIES:
                    own[k] = v
                elif k not in FUNCTION_RESERVED:
                    raise ts.error(f"'func.func' has no property {k!r}", tok)
            ts.expect("(")
            ts.expect("{")
        arg_types = ftype.inputs
        label = ts.peek()
        if label.kind == "^":
            args = self.block_label()
        elif arg_types:
            raise ts.expected(f"the entry block's label with the {len(arg_types)} arguments "
                              f"of @{name}")
        else:
            args = []
        types = tuple(t for _, t, _, _ in args)
        if types != tuple(arg_types):
            raise ts.error(f"function @{name}: the entry block takes "
                           f"({', '.join(map(str, types))}) but function_type says "
                           f"({', '.join(map(str, arg_types))})", label)
        fn = self._new_function(name, arg_types, ftype.results, visibility, arg_attrs,
                                res_attrs, [loc for _, _, loc, _ in args], tok)
        self.function_body(fn, [(n, p) for n, _, _, p in args], "}")
        if own:
            fn.attributes.update(own)
        if not empty_tail(ts):
            ts.expect(")")
            attrs = self.attr_dict() if ts.at("{") else {}
            self._set_function_attrs(fn, attrs, tok)
            self._empty_signature("func.func")
        fn.location = self.trailing_location()
        return fn

    def function_pretty(self, tok) -> Function:
        """``func.func [visibility] @name(%a: T {attrs} loc(..), ...) [-> results]
        [attributes {...}] {body}``."""
        ts = self.ts
        head = pretty_function_head(self.lines, ts)
        if head is not None:  # (read whole, through its "{")
            *head, ts._pos = head
            attrs = None
        else:
            head, attrs = self._pretty_signature()
        visibility, name, args, arg_attrs, results, res_attrs = head
        fn = self._new_function(name, [a[1] for a in args], results, visibility, arg_attrs,
                                res_attrs, [a[2] for a in args], tok)
        if attrs is not None:
            self._set_function_attrs(fn, attrs, tok)
            ts.expect("{")
        self.function_body(fn, [(a[0], a[3]) for a in args], "}")
        fn.location = self.trailing_location()
        return fn

    def _pretty_signature(self) -> tuple:
        """What ``parse_heads.pretty_function_head`` gives, read token by token up to the
        body's ``{``, and the function's attributes (``attributes {...}``)."""
        ts = self.ts
        visibility = None
        if ts.peek().kind == "bare" and ts.peek().text in ("public", "private", "nested"):
            visibility = ts.next().text
        name_tok = ts.peek()
        name = self.symbol()
        args = []

        def argument():
            if ts.peek().kind != "%" and not ts.at(")"):
                mark = ts.mark()
                try:  # a type there: a declaration (`func.func private @f(tensor<2xf32>)`)
                    self.type()
                except ParseError:
                    ts.reset(mark)
                else:
                    raise ts.error("function declarations (a signature without a body) are "
                                   "not read: every function here has a body (XLA compiles "
                                   "no external function)", name_tok)
            vtok = ts.expect_kind("%", "an argument name (%arg0)")
            ts.expect(":")
            t = self.type()
            attrs = self.attr_dict() if ts.at("{") else None
            loc = self.trailing_location()
            args.append((vtok.text, t, loc, vtok, attrs))

        ts.comma_list(argument, ")", open="(")
        results, res_attrs = [], []
        if ts.accept("->"):
            if ts.at("("):
                def result():
                    results.append(self.type())
                    res_attrs.append(self.attr_dict() if ts.at("{") else {})
                ts.comma_list(result, ")", open="(")
            else:
                results.append(self.type())
                res_attrs.append({})
        attrs = {}
        if ts.accept("attributes"):
            attrs = self.attr_dict()
        arg_attrs = [a[4] or {} for a in args]
        return (visibility, name, args, arg_attrs if any(arg_attrs) else None, results,
                res_attrs if any(res_attrs) else None), attrs

    def _new_function(self, name, arg_types, result_types, visibility, arg_attrs, res_attrs,
                      arg_locations, tok) -> Function:
        try:
            return Function(name, arg_types, result_types, visibility=visibility,
                            arg_attrs=arg_attrs, res_attrs=res_attrs,
                            arg_locations=arg_locations)
        except (TypeError, ValueError, IRError) as e:
            raise self.ts.error(str(e), tok) from None

    def _set_function_attrs(self, fn, attrs, tok) -> None:
        for k, v in attrs.items():
            try:
                check_attr_name(k, "function attribute name", reserved=FUNCTION_RESERVED)
            except (TypeError, ValueError) as e:
                raise self.ts.error(f"function @{fn.name}: {e}", tok) from None
            fn.attributes[k] = v

    def _attr_dicts(self, attr, what, tok):
        if attr is None:
            return None
        elements = getattr(attr, "elements", None)
        if elements is None or not all(isinstance(d, DictionaryAttr) for d in elements):
            raise self.ts.error(f"'func.func' {what} must be an array of dictionaries", tok)
        return [dict(d.items) for d in elements]

    def function_body(self, fn, arg_names, close: str) -> None:
        """The ops of ``fn``'s body up to ``close``, its arguments named ``arg_names``."""
        scope = self.scope
        saved = scope.frames
        scope.frames = [{}]
        try:
            frame = scope.frames[0]
            for (name, tok), value in zip(arg_names, fn.arguments):
                self._define(frame, name, value, tok)
            block = fn.entry_block
            self.block_ops(block, close)
        finally:
            scope.frames = saved

    # -- regions and blocks -----------------------------------------------------------------

    def block_label(self) -> list:
        """``^bb0(%a: T loc(..), ...):`` as [(name, type, location, token)]."""
        ts = self.ts
        ahead = ts._ahead
        if len(ahead) == 1 and ahead[0].kind == "^":  # (peeked by the caller)
            fast = label_line(self.lines, ts.text, ahead[0].pos)
            if fast is not None:
                ahead.clear()
                ts._pos = fast[1]
                return fast[0]
        ts.expect_kind("^", "a block label")
        args = []
        if ts.at("("):
            def argument():
                vtok = ts.expect_kind("%", "a block argument (%arg0)")
                ts.expect(":")
                t = self.type()
                args.append((vtok.text, t, self.trailing_location(), vtok))
            ts.comma_list(argument, ")", open="(")
        ts.expect(":")
        return args

    def region(self) -> Region:
        """``{ [^bb0(...):] ops [^bb1...] }`` of an op: its values end with it."""
        ts = self.ts
        ts.expect("{")
        frames = self.scope.frames
        self.scope.open()
        try:
            blocks = []
            if ts.accept("}"):
                return Region([])
            while True:
                args = self.block_label() if ts.peek().kind == "^" else []
                block = Block([t for _, t, _, _ in args], [loc for _, _, loc, _ in args])
                for (name, _, _, tok), value in zip(args, block.arguments):
                    self._define(frames[-1], name, value, tok)
                blocks.append(block)
                self.block_ops(block, "}", stop_at_label=True)
                if ts.accept("}"):
                    return Region(blocks)
        finally:
            self.scope.close()

    def block_ops(self, block, close: str, stop_at_label: bool = False) -> None:
        """Ops into ``block`` up to ``close`` (consumed) or, with ``stop_at_label``, the next
        block label (not consumed)."""
        ts = self.ts
        text = ts.text
        ahead = ts._ahead
        lines = self.lines
        fast = None  # (where it started, op) of an op a line path just read
        while True:
            if len(ahead) < 2:
                # One-line ops read whole (mhlo_ir.parse_lines); anything else, or a line whose
                # pieces do not parse whole, is read token by token below. An op read token
                # by token peeks at the next one's first token (for a trailing location):
                # the line is then read from that token.
                start = ahead[0].pos if ahead else ts._pos
                try:
                    line = one_line(lines, text, start, block)
                except ParseError:
                    # An op its rules refuse: the token reader says so too, unless it meets
                    # another error first (a location on the next line that does not read).
                    line = None
                if line is REGION_HEAD:
                    line = combining_op(lines, text, start, block)
                if line is not None:
                    block.operations.append(line[0])
                    if self.positions is not None:
                        self.positions[id(line[0])] = start
                    ahead.clear()
                    ts._pos = line[1]
                    fast = (start, line[0])
                    continue
            tok = ts.peek()
            if tok.kind == "punct" and tok.text == close:
                if not stop_at_label:
                    ts.next()
                return
            if tok.kind == "^":
                if stop_at_label:
                    return
                raise ts.error("functions here have one block; a second block label is not "
                               "allowed (there are no branch ops)", tok)
            if tok.kind == "eof":
                raise ts.expected(f"'{close}' closing the region")
            if fast is not None and not starts_op(text, tok):
                # What follows the op a line path read starts no op: the token reader may
                # read it as the op's own (its location on the next line, a form's type list
                # going on with ", T", an attribute dictionary), so it is read again, token
                # by token.
                self._unread(block, fast[1])
                ahead.clear()
                ts._pos = fast[0]
                tok = ts.peek()
            fast = None
            self.operation(block)
            op = block.operations[-1]
            if self.positions is not None:
                self.positions[id(op)] = tok.pos
            end = ahead[0].pos if ahead else ts._pos
            remember(lines, text, tok.pos, op, end)
            if op.regions:
                remember_combining(lines, text, tok.pos, op, end)

    def _unread(self, block, op) -> None:
        """Take back ``op``, the last of ``block`` and of the names the innermost scope
        defines."""
        block.operations.pop()
        frame = self.scope.frames[-1]
        n = len(op.results)
        n += n > 1  # a group of several binds %r, %r#0, %r#1... (parse_templates._names)
        for name in list(frame)[len(frame) - n:]:
            del frame[name]

    # -- operations -------------------------------------------------------------------------

    def operation(self, block) -> None:
        ts = self.ts
        results = []
        start = ts.peek()
        if start.kind == "%":
            def result():
                rtok = ts.expect_kind("%", "a result name")
                n = 1
                if ts.accept(":"):
                    n = ts.integer("the number of results")
                    if n < 1:
                        raise ts.error("a result group holds at least one value", rtok)
                results.append((rtok, n))
            while True:
                result()
                if not ts.accept(","):
                    break
            ts.expect("=")
        tok = ts.peek()
        outer = self.dialect
        try:
            if tok.kind == "string":
                ts.next()
                name = ts.string_value(tok)
                self.dialect = BY_PREFIX.get(name.partition(".")[0], outer)
                op = self.generic_op(name, tok, block)
            elif tok.kind == "bare":
                from .pretty_forms import read_pretty
                self.dialect = BY_PREFIX.get(tok.text.partition(".")[0], outer)
                op = read_pretty(self, tok, block)
            else:
                raise ts.expected("an operation (\"dialect.name\"(...) or a custom form)",
                                  tok)
        finally:
            self.dialect = outer
        self._bind_results(op, results, tok)
        block.operations.append(op)

    def _bind_results(self, op, results, tok) -> None:
        values = op.results
        want = sum(n for _, n in results)
        if want != len(values):
            raise self.ts.error(f"'{op.spec.name}' has {len(values)} results but the text "
                                f"names {want}", tok)
        frame = self.scope.frames[-1]
        i = 0
        for rtok, n in results:
            if n == 1:
                self._define(frame, rtok.text, values[i], rtok)
            else:
                group = values[i:i + n]
                self._define(frame, rtok.text, group[0], rtok)
                for k, v in enumerate(group):
                    self._define(frame, f"{rtok.text}#{k}", v, rtok)
            i += n

    def _define(self, frame, name, value, tok) -> None:
        if name in frame:
            raise self.ts.error(f"redefinition of SSA value {name}", tok)
        frame[name] = value

    def value(self):
        """A use: ``%name`` or ``%name#index``."""
        ts = self.ts
        tok = ts.expect_kind("%", "an SSA value (%name)")
        name = tok.text
        nxt = ts.peek()
        base = name
        if nxt.kind == "#" and nxt.pos == tok.pos + len(name) and nxt.text[1:].isdigit():
            ts.next()
            name = f"{name}{nxt.text}"
        v = self.scope.lookup(name)
        if v is None:
            if nxt.text == "#0" and name != base:  # %r#0 of a one-result %r: %r, as in MLIR
                v = self.scope.lookup(base)
                if v is not None:
                    return v
            raise ts.error(f"use of undefined value {name}", tok)
        return v

    def operands(self) -> list:
        return self.ts.comma_list(self.value, ")", open="(")

    def generic_op(self, name: str, tok, block):
        ts = self.ts
        if not name or "\0" in name:  # (as MLIR refuses them)
            raise ts.error("empty operation name is invalid" if not name else
                           "null character not allowed in operation name", tok)
        head = region_head(self.lines, ts)  # (an op with regions: its head line read whole)
        regions = []
        if head is not None:
            operands, props = head
        else:
            operands = self.operands()
            if ts.at("["):
                raise ts.error(f"'{name}': successor blocks are not supported (there are no "
                               "branch ops here)", ts.peek())
            props = self.properties()
        if head is not None or (ts.at("(") and ts.at("{", 1)):
            if head is None:
                ts.next()
            while True:
                regions.append(self.region())
                if ts.accept(")"):
                    break
                ts.expect(",")
            tail = region_tail(self.lines, ts)
            if tail is not None and len(tail[0].inputs) == len(operands) and all(
                    [v.type == t for v, t in zip(operands, tail[0].inputs)]):
                ts._pos = tail[2]
                return self.make(name, operands, props, {}, tuple(regions),
                                 tail[0].results, tail[1], tok, block)
        attrs = self.attr_dict() if ts.at("{") else {}
        ts.expect(":")
        sig_tok = ts.peek()
        ftype = self.type()
        if not isinstance(ftype, FunctionType):
            raise ts.expected("the op's function type ((operand types) -> result types)",
                              sig_tok)
        if len(ftype.inputs) != len(operands):
            raise ts.error(f"'{name}' has {len(operands)} operands but its type lists "
                           f"{len(ftype.inputs)}", sig_tok)
        for i, (v, t) in enumerate(zip(operands, ftype.inputs)):
            if v.type != t:
                raise ts.error(f"'{name}' operand {i} has type {v.type} but its type "
                               f"says {t}", sig_tok)
        location = self.trailing_location()
        return self.make(name, operands, props, attrs, tuple(regions), ftype.results,
                         location, tok, block)

    spec_of = spec_of
    make = make_op

    # -- pieces -----------------------------------------------------------------------------

    def properties(self) -> dict:
        """``<{name = attr, ...}>`` if present, else {}."""
        ts = self.ts
        if not ts.at("<"):
            return {}
        ts.next()
        d = self.attr_dict()
        ts.expect(">")
        return d

    def attr_dict(self) -> dict:
        """``{name = attr, flag, ...}`` as a dict (a name alone is a unit attribute)."""
        ts = self.ts
        out: dict = {}

        def entry():
            tok = ts.peek()
            if tok.kind == "bare":
                key = ts.next().text
            elif tok.kind == "string":
                key = ts.string_value(ts.next())
            else:
                raise ts.expected("an attribute name", tok)
            if key in out:
                raise ts.error(f"attribute {key!r} is given twice", tok)
            if ts.accept("="):
                out[key] = self.attribute()
            else:
                out[key] = UnitAttr()

        ts.comma_list(entry, "}", open="{")
        return out

    def attribute(self) -> Attribute:
        return read_attribute(self.ts, self.dialect)

    def type(self):
        return read_type(self.ts, self.dialect)

    def symbol(self) -> str:
        ts = self.ts
        tok = ts.expect_kind("@", "a symbol name (@name)")
        text = tok.text
        if text.startswith('@"'):
            return ts.string_value(tok)
        return text[1:]

    def trailing_location(self):
        ts = self.ts
        if ts.at("loc") and ts.at("(", 1):
            loc = location_line(self.lines, ts)  # (the rest of the line, read whole)
            if loc is not None:
                return loc
            return self.tokens_location()
        return UNKNOWN

    def tokens_location(self):
        """``loc(...)``, next in the text, read token by token."""
        ts = self.ts
        if ts.at("loc") and ts.at("(", 1):
            ts.next()
            ts.next()
            loc = read_location(ts, self.aliases)
            ts.expect(")")
            return loc
        return UNKNOWN

    def _generic_head(self, tok, op) -> tuple:
        """``() <{...}>`` after a module's or function's generic name: its properties and
        their sym_name (None if it has none)."""
        ts = self.ts
        ts.expect("(")
        ts.expect(")")
        props = self.properties()
        return props, self._string_prop(props, "sym_name", op, tok)

    def _string_prop(self, props, key, op, tok):
        v = props.get(key)
        if v is None:
            return None
        if not isinstance(v, StringAttr):
            raise self.ts.error(f"'{op}' property {key} must be a string", tok)
        return v.value

    def _empty_signature(self, op) -> None:
        ts = self.ts
        ts.expect(":")
        tok = ts.peek()
        t = self.type()
        if not isinstance(t, FunctionType) or t.inputs or t.results:
            raise ts.expected(f"'() -> ()' as the type of '{op}'", tok)
