"""The printer: modules to MLIR text, in the generic op form, as MLIR itself prints it.

Without locations our output is byte for byte what MLIR's printer gives for the same module in
generic form (``get_asm(print_generic_op_form=True)``), except that large dense constants are
in lowercase hex; the test suite checks this against the MLIR bindings inside jaxlib. That
includes MLIR's numbering of SSA values: one counter for results and one for block arguments
across the whole module, with regions numbered last-in first-out (so the last function gets
``%arg0``).

Speed matters here (a program has one line per op): type strings are cached on the types,
op-name strings per spec, and SSA names are assigned before the ops print, into a dict keyed by
value (``mhlo_ir.ssa_names``, where a one-function module is named in one C-level pass).

Exactness comes first: the text depends on the module alone, never on what was printed
before or in another thread. SSA names and every text keyed by something mutable belong to
one print; the texts kept across prints are keyed only by interned types, op specs and the
identity of immutable objects the cache itself holds (so an id is never reused while cached):
attributes, and the ``OpAttributes`` mappings builders make. A mapping of any other class
assigned to ``op.attributes`` is rendered afresh on every print. Regions are printed with an
explicit stack, so nesting depth is limited by memory, not by Python's recursion limit.
"""

from __future__ import annotations

from .attributes import Attribute, UnitAttr
from .combining import CombiningRegion
from .dense import HEX_THRESHOLD, DenseElementsAttr
from .dialect import MHLO, Dialect
from .errors import IRError
from .location import Location, UnknownLoc
from .ir import _MANY, FUNCTION_PROPERTIES, SINGLE_RESULT_CLASSES, GeneralOperation, \
    SingleResultOp, SingleResultRegionOp
from .op_attributes import OpAttributes
from .print_caches import arg_heads as _arg_heads, bare, shared_caches, signature_key
from .pretty_forms import custom_form
from . import pretty_lines, print_combining, ssa_names
from .text import quote, symbol_name
from .types import FunctionType, TensorType, function_type_text

__all__ = ["print_module", "print_function_type"]


class _Locations:
    """Renders locations inline (``loc("f.py":1:2)``) or through ``#locN`` aliases."""

    __slots__ = ("aliases", "table", "cache")

    def __init__(self, aliases: bool):
        self.aliases = aliases
        self.table: dict = {}
        self.cache: dict = {}

    def line_end(self, location: Location) -> str:
        """``suffix(location)`` and the line's newline."""
        self.suffix(location)
        return self.cache[id(location)][2]

    def suffix(self, location: Location) -> str:
        if location is None or location.__class__ is UnknownLoc:
            self.cache[id(location)] = (location, "", "\n")
            return ""
        # Keyed by identity first (hashing an attrs location runs Python code); equal
        # locations that are distinct objects still share one alias through ``table``.
        hit = self.cache.get(id(location))
        if hit is not None and hit[0] is location:
            return hit[1]
        if not isinstance(location, Location):
            raise IRError(f"a location is {type(location).__name__} {location!r:.60}, not a "
                          "Location (hlo.NameLoc(...), hlo.FileLineColLoc(...)); "
                          "Module.verify() names the op or function holding it")
        text = location.render()
        if self.aliases:
            name = self.table.get(text)
            if name is None:
                name = self.table[text] = f"#loc{len(self.table)}"
            out = f" loc({name})"
        else:
            out = f" loc({text})"
        self.cache[id(location)] = (location, out, out + "\n")
        return out

    def trailer(self) -> list:
        return [f"{name} = loc({text})" for text, name in self.table.items()]


class _Printer:
    __slots__ = ("dialect", "names", "headers", "out", "locs", "hex_threshold", "op_names",
                 "attr_cache", "sigs", "attr_parts", "pretty", "fast", "vn", "own_fast",
                 "own_parts", "form_keys", "flat", "plain")

    def __init__(self, dialect: Dialect, locations, hex_threshold: int, pretty: bool = False,
                 flat: bool = True):
        self.pretty = pretty
        self.dialect = dialect
        self.names: dict = {}
        self.headers: dict = {}
        self.out: list = []
        self.locs = None if not locations else _Locations(locations == "alias")
        self.hex_threshold = hex_threshold
        (self.op_names, self.attr_cache, self.sigs, self.fast,
         self.attr_parts, self.plain) = shared_caches(dialect, hex_threshold)
        # Line parts of ops whose attribute mapping is not an OpAttributes (so may change
        # between prints): kept for this print only.
        self.own_fast: dict = {}
        self.own_parts: dict = {}
        self.vn = ()
        self.form_keys = _NO_KEYS  # attributes the custom form being printed spells
        # The block ssa_names.number named ahead; None: not numbered yet; False: numbered (or
        # to be numbered) the full way.
        self.flat = None if flat else False

    # -- pieces ---------------------------------------------------------------------------

    def type_text(self, t) -> str:
        return t._text if t.__class__ is TensorType else t.render(self.dialect)

    def attr_text(self, a) -> str:
        if a.__class__ is DenseElementsAttr and a.prints_hex(self.hex_threshold):
            return a.render(self.dialect, self.hex_threshold)
        # Keyed by identity, never by equality: FloatAttr(0.0) == FloatAttr(-0.0), and so are
        # arrays and dictionaries holding them. The entry holds the attribute, so its id is
        # not reused while cached.
        cache = self.attr_cache
        hit = cache.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1]
        if a.__class__ is DenseElementsAttr:
            text = a.render(self.dialect, self.hex_threshold)
        else:
            text = a.render(self.dialect)
        cache[id(a)] = (a, text)
        return text

    def named(self, items) -> str:
        parts = []
        for k, v in (sorted(items) if len(items) > 1 else items):
            if not isinstance(v, Attribute):
                raise IRError(f"attribute {k} is {type(v).__name__} {v!r:.60}, not an "
                              "Attribute: set attributes with op.set_attr(name, value), which "
                              "converts Python values (Module.verify() names the op)")
            key = k if bare(k) else quote(k)
            parts.append(key if v.__class__ is UnitAttr else f"{key} = {self.attr_text(v)}")
        return ", ".join(parts)

    def loc(self, location) -> str:
        return "" if self.locs is None else self.locs.suffix(location)

    # -- structure --------------------------------------------------------------------------

    def op_name(self, spec) -> str:
        """``"mhlo.add"``: the op's name in this print's dialect, quoted (an unknown op's may
        hold any character), kept in the shared ``op_names``."""
        name = self.op_names.get(spec)
        if name is None:
            name = self.op_names[spec] = quote(spec.full_name(self.dialect))
        return name

    def fast_parts(self, op):
        """(' = "name"(', ') <{props}> {attrs} : signature', the same with a newline) for one
        op, or False when a big constant needs the piecewise path or the op's spec checks
        each op against the dialect. Keyed by the attribute dict's identity, which stays
        unique while the entry lives: the attribute-parts entry made for the dict holds it."""
        if op.spec.needs_dialect_check(op):
            return False  # the general path runs it on each op
        name = self.op_name(op.spec)
        props = extra = ""
        if op.attributes:
            props, extra = self.kept_attribute_parts(op.spec, op.attributes)
            if props is None:
                return False
        tail = f"){props}{extra}" + self.signature(op.operands, (op,))
        # (Strings alone, which leave the tuple untracked by the cyclic GC: the mapping whose
        # id keys the parts is kept alive by the entry attribute_parts made for it, which
        # shared_caches only ever clears with this one.)
        return (f" = {name}(", tail, tail + "\n")

    def bare_parts(self, op):
        """('"name"(', ') : signature', the same with a newline) of a result-less op
        without attributes or regions."""
        tail = ")" + self.signature(op.operands, ())
        return (f"{self.op_name(op.spec)}(", tail, tail + "\n")

    def signature(self, operands, results) -> str:
        """`` : (operand types) -> result types``, cached per distinct type combination
        under ``signature_key``."""
        key = signature_key(operands, results)
        sig = self.sigs.get(key)
        if sig is None:
            tt = self.type_text
            if len(results) == 1:
                outs = tt(results[0].type)
            else:
                outs = "(" + ", ".join([tt(r.type) for r in results]) + ")"
            sig = self.sigs[key] = \
                f" : ({', '.join([tt(v.type) for v in operands])}) -> {outs}"
        return sig

    def label(self, block, indent: str) -> str:
        """``^bb0(%arg3: tensor<f32>, ...):``, a line. Where no argument has a location to
        print, the label of the module's first block (``%arg0``...: every small generated
        program's entry) is kept with the shared signatures, keyed by all it prints (indent,
        names, types); later blocks' names are unique to their module, so keeping them would
        only fill the shared caches."""
        args = block.arguments
        if not args:
            return f"{indent[:-2]}^bb0:\n"
        names, tt = self.names, self.type_text
        plain = self.locs is None or all([a.location.__class__ is UnknownLoc for a in args])
        key = None
        types = tuple([a.type for a in args])
        flat = self.flat is block  # (named %arg0, %arg1... in order: number named them ahead)
        if plain and names[args[0]] == "%arg0":
            key = ("^bb0", indent, len(args) if flat else tuple([names[a] for a in args]),
                   *types)
            text = self.sigs.get(key)
            if text is not None:
                return text
        if plain:
            n = len(args)
            # "%arg0: " t0 ", %arg1: " t1...: the pieces interleaved by slice assignments
            # (a join of "name: type" items made one by one cost 90 ns an argument more).
            pieces = [indent[:-2] + "^bb0("] * (2 * n + 1)
            pieces[1:2 * n:2] = _arg_heads(n)[:n] if flat else \
                [names[args[0]] + ": ", *[", " + names[a] + ": " for a in args[1:]]]
            pieces[2:2 * n + 1:2] = [t._text if t.__class__ is TensorType else tt(t)
                                     for t in types]
            pieces.append("):\n")
            text = "".join(pieces)
        else:
            loc = self.loc
            text = f"{indent[:-2]}^bb0(" + ", ".join(
                [f"{names[a]}: {tt(a.type)}{loc(a.location)}" for a in args]) + "):\n"
        if key is not None:
            self.sigs[key] = text
        return text

    def block(self, block, indent: str, label: bool, top: bool = False):
        """Print ``block``: a generator that yields ``(region, indent)`` for each nested
        region, which ``drive`` prints before resuming it (no recursion). ``top``: a block of
        a function's body (where custom forms spell func ops without ``func.``)."""
        out = self.out
        names = self.names
        if label:
            out.append(self.label(block, indent))
        headers = self.headers
        op_names = self.op_names
        dialect = self.dialect
        locs = self.locs
        sigs = self.sigs
        signature = self.signature
        pretty = self.pretty
        shared_fast = self.fast
        own_fast = self.own_fast
        frozen = OpAttributes
        loc_cache = locs.cache if locs is not None else None
        SRO = SingleResultOp  # (region-free: one with regions is a SingleResultRegionOp)
        SRRO = SingleResultRegionOp
        GOP = GeneralOperation
        append = out.append
        extend = out.extend
        many = _MANY
        same: dict = {}  # op spec -> (type, parts) of its last same-typed binary op
        same_pretty: dict = {}  # the same for custom-form templates
        same_key = None  # the key of the last same-typed binary op looked up (see below)
        plain = self.plain
        for op in block.operations:
            if op.__class__ is SRO and (not pretty or plain[op.spec]):
                # The common case: one cached (' = "mhlo.add"(', ') <{...}> : (...) -> ...')
                # pair per op kind, attribute dict (builders share them) and signature. Keys
                # of different shapes cannot collide (an id is an int, a tuple of operand
                # types is neither an int nor a type). The operands are read from the op's
                # slots (see SingleResultOp).
                attrs = op.attributes
                b = op._b
                parts = None
                fast = shared_fast if attrs is None or attrs.__class__ is frozen else own_fast
                if b is None:
                    a = op._a
                    key = (op.spec, a.type, op.type, id(attrs)) if attrs else \
                        (op.spec, a.type, op.type)
                elif b is many:
                    a = op._a  # the operand tuple: none, or more than two (select, clamp...)
                    if a:
                        types = tuple([v.type for v in a])
                        key = (op.spec, op.type, types, id(attrs)) if attrs else \
                            (op.spec, op.type, types)
                    else:
                        a = None
                        key = (op.spec, op.type, id(attrs)) if attrs else (op.spec, op.type)
                else:
                    a = op._a
                    t = op.type
                    if attrs or a.type is not t or b.type is not t:
                        key = (op.spec, a.type, b.type, t, id(attrs)) if attrs else \
                            (op.spec, a.type, b.type, t)
                    else:
                        # Same-typed binary ops (most of a program): the kind's last parts,
                        # found without building a key.
                        hit = same.get(op.spec)
                        if hit is not None and hit[0] is t:
                            parts = hit[1]
                        else:
                            key = (op.spec, t, t, t)
                            parts = fast.get(key)
                            if parts is None:
                                parts = fast[key] = self.fast_parts(op)
                            same[op.spec] = (t, parts)
                if parts is None:
                    parts = fast.get(key)
                    if parts is None:
                        parts = fast[key] = self.fast_parts(op)
                if parts is not False:
                    # A line's pieces go to ``out`` as they are (one join copies them): an
                    # f-string per line made a string object per op, whose allocation (fresh
                    # memory at 100,000 ops) cost more than the join's copy.
                    if b is None:
                        extend((indent, names[op], parts[0], names[a]))
                    elif a is None:
                        extend((indent, names[op], parts[0]))
                    elif b is many:
                        extend((indent, names[op], parts[0], ", ".join([names[v] for v in a])))
                    else:
                        extend((indent, names[op], parts[0], names[a], ", ", names[b]))
                    if locs is None:
                        append(parts[2])
                    else:  # _Locations.line_end, its cache hit inlined: the location's text
                        loc = op.location  # is a piece of its own (long, for JAX's chains)
                        hit = loc_cache.get(id(loc))
                        extend((parts[1], hit[2] if hit is not None and hit[0] is loc
                                else locs.line_end(loc)))
                    continue
            elif op.__class__ is GOP and not op._results and not op.regions and \
                    not op.attributes and not pretty and op.spec.dialect_check is None and (
                    self.flat is not block or op is block.operations[-1]):
                # A terminator (func.return, a region's return; a result-less op without
                # attributes): the parts around its operands' names, kept per op kind and
                # operand types (the None in the key: never a type, as in the keys above).
                operands = op.operands
                key = (op.spec, None, tuple([v.type for v in operands]))
                parts = shared_fast.get(key)
                if parts is None:
                    parts = shared_fast[key] = self.bare_parts(op)
                tail = parts[2] if locs is None else f"{parts[1]}{locs.suffix(op.location)}\n"
                append(f"{indent}{parts[0]}{', '.join([names[v] for v in operands])}{tail}")
                continue
            elif pretty and (op.__class__ is SRO or op.__class__ is SRRO and op.regions and len(
                    op.regions) == 1 and (recipe := print_combining.recipe(op)) is not None):
                # The custom form's line from its template (see pretty_lines), kept per op
                # kind, operand and result types and attribute dict (and, for a reduce that
                # ``applies`` its body, that body's recipe); the second entry of a key (_ONE,
                # _PAIR, _MANY_P, _REGION) tells these keys from the generic path's.
                attrs = op.attributes
                a = op._a
                b = op._b
                t = op.type
                if op.regions:
                    types = tuple([v.type for v in op.operands])
                    key = (op.spec, _REGION, types, t, id(attrs), recipe) if attrs else \
                        (op.spec, _REGION, types, t, recipe)
                elif b is None:
                    key = (op.spec, _ONE, a.type, t, id(attrs)) if attrs else \
                        (op.spec, _ONE, a.type, t)
                elif b is many:
                    types = tuple([v.type for v in a]) if a else ()  # (constants: none)
                    key = (op.spec, _MANY_P, types, t, id(attrs)) if attrs else \
                        (op.spec, _MANY_P, types, t)
                elif attrs or a.type is not t or b.type is not t:
                    key = (op.spec, _PAIR, a.type, b.type, t, id(attrs)) if attrs else \
                        (op.spec, _PAIR, a.type, b.type, t)
                else:  # same-typed binary ops: the kind's last template, as on the generic path
                    hit = same_pretty.get(op.spec)
                    if hit is not None and hit[0] is t:  # (a two-operand template's texts)
                        lits = hit[1]
                        if locs is None:
                            tail = "\n"
                        else:  # _Locations.line_end, its cache hit inlined
                            loc = op.location
                            hit = loc_cache.get(id(loc))
                            tail = hit[2] if hit is not None and hit[0] is loc else \
                                locs.line_end(loc)
                        extend((indent, names[op], " = ", lits[0], names[a], lits[1],
                                names[b], lits[2], tail))
                        continue
                    key = same_key = (op.spec, _PAIR, t, t, t)
                if key is not None:
                    fast = shared_fast if attrs is None or attrs.__class__ is frozen else own_fast
                    parts = fast.get(key)
                    if parts is None:
                        parts = pretty_lines.template(self, op)
                        if parts is not None:
                            fast[key] = parts
                    if parts and key is same_key and parts[0] == 2:
                        same_pretty[op.spec] = (t, parts[1])
                if parts:
                    shape, lits = parts[0], parts[1]
                    if locs is None:
                        tail = "\n"
                    else:  # _Locations.line_end, its cache hit inlined (as on the generic path)
                        loc = op.location
                        hit = loc_cache.get(id(loc))
                        tail = hit[2] if hit is not None and hit[0] is loc else \
                            locs.line_end(loc)
                    if shape == 0:
                        extend((indent, names[op], " = ", lits[0], tail))
                    elif shape == 1 and b is None:
                        extend((indent, names[op], " = ", lits[0], names[a], lits[1], tail))
                    elif shape == 2 and b is not many:
                        extend((indent, names[op], " = ", lits[0], names[a], lits[1],
                                names[b], lits[2], tail))
                    else:
                        operands = op.operands
                        line = [indent, names[op], " = ", lits[0]]
                        for i, lit in zip(parts[2], lits[1:]):
                            line.append(names[operands[i]])
                            line.append(lit)
                        line.append(tail)
                        append("".join(line))
                    continue
            elif pretty and op.__class__ is GOP and not op._results and not op.regions and \
                    not op.attributes and op.spec.dialect_check is None:
                line = pretty_lines.terminator_line(self, op, indent, top)
                if line is not None:  # (return %3 : tensor<f32>, from a kept template)
                    append(line)
                    continue
            spec = op.spec
            respelled = None
            if spec.dialect_check is not None:  # a form of the op some dialect lacks
                respelled = spec.dialect_check(op, dialect)  # (or spells otherwise)
            if pretty and spec.pretty:
                parts = self.pretty_op(op, indent, top, respelled)
                if parts is not None:
                    for part in parts:
                        if part.__class__ is str:
                            out.append(part)
                        elif part[0] == "nl":
                            out.append("\n" + indent)
                        else:
                            out.append("{\n")  # ("region", i[, labelled entry block])
                            yield op.regions[part[1]], indent + "  ", len(part) > 2
                            out.append(indent + "}")
                    continue
            if self.flat is block and op.__class__ is not SRO and (
                    op.regions or op.results or op is not block.operations[-1]):
                ssa_names.unflatten(self, block, op)  # (not for the terminator: nothing follows it)
            if op.__class__ is SRRO and not pretty and op.regions and len(op.regions) == 1:
                text = print_combining.line(self, op, indent)  # (a reduction, mostly)
                if text is not None:
                    append(text)
                    continue
            name = op_names.get(spec) or self.op_name(spec)
            operands = op.operands
            if op.__class__ in SINGLE_RESULT_CLASSES:
                r = op
                results = (op,)
                head = f"{indent}{names[r]} = "
                n = len(operands)
                if n == 2:
                    a, b = operands
                    sig = sigs.get((a.type, b.type, None, r.type)) or \
                        signature(operands, results)  # (signature_key's key)
                    args = f"{names[a]}, {names[b]}"
                elif n == 1:
                    a = operands[0]
                    sig = sigs.get((a.type, None, r.type)) or signature(operands, results)
                    args = names[a]
                else:
                    sig = signature(operands, results)
                    args = ", ".join([names[v] for v in operands])
            else:
                results = op.results
                if len(results) == 1:
                    head = f"{indent}{names[results[0]]} = "
                else:
                    head = indent + headers[op] if results else indent
                sig = signature(operands, results)
                args = ", ".join([names[v] for v in operands])
            attrs = op.attributes if respelled is None else respelled
            loc = "" if locs is None else locs.suffix(op.location)
            if attrs:
                props, extra = self.kept_attribute_parts(spec, attrs)
                if props is None:
                    # A big constant: emit its hex as its own piece (see named_pieces).
                    out.append(f"{head}{name}({args}) <{{")
                    self.named_pieces([(k, v) for k, v in attrs.items() if k in spec.attributes])
                    out.append("}>")
                else:
                    out.append(f"{head}{name}({args}){props}")
            else:
                extra = ""
                if not op.regions:
                    out.append(f"{head}{name}({args}){sig}{loc}\n")
                    continue
                out.append(f"{head}{name}({args})")
            if op.regions:
                out.append(" ({\n")
                inner = indent + "  "
                for i, region in enumerate(op.regions):
                    if i:
                        out.append(f"{indent}}}, {{\n")
                    yield region, inner
                out.append(f"{indent}}}){extra}{sig}{loc}\n")
            else:
                out.append(f"{extra}{sig}{loc}\n")

    def kept_attribute_parts(self, spec, attrs):
        """``attribute_parts``, kept per op kind (which names are properties depends on it)
        and mapping."""
        hit = (self.attr_parts if attrs.__class__ is OpAttributes else self.own_parts).get(
            (spec, id(attrs)))
        if hit is not None and hit[0] is attrs:
            return hit[1], hit[2]
        return self.attribute_parts(spec, attrs)

    def attribute_parts(self, spec, attrs):
        """`` <{props}>`` and `` {discardable}`` texts of an op's attribute dict, cached by
        the op kind and the dict's identity (builders share one dict among ops built the same
        way; the kind decides which names are properties). ``props``
        is None when a big constant must be printed in pieces instead."""
        owned = spec.attributes
        p = []
        d = []
        threshold = self.hex_threshold
        big = False
        for item in attrs.items():
            if item[0] in owned:
                p.append(item)
                v = item[1]
                if v.__class__ is DenseElementsAttr and v.prints_hex(threshold):
                    big = True
            else:
                d.append(item)
        extra = f" {{{self.named(d)}}}" if d else ""
        if big:
            return None, extra
        props = f" <{{{self.named(p)}}}>" if p else ""
        cache = self.attr_parts if attrs.__class__ is OpAttributes else self.own_parts
        cache[(spec, id(attrs))] = (attrs, props, extra)
        return props, extra

    def named_pieces(self, items) -> None:
        """Like ``named`` but appends to the output, letting big constants' hex stay one piece
        (no copy of a multi-megabyte string into a line)."""
        out = self.out
        threshold = self.hex_threshold
        for i, (k, v) in enumerate(sorted(items)):
            key = k if bare(k) else quote(k)
            sep = ", " if i else ""
            if v.__class__ is DenseElementsAttr and v.prints_hex(threshold):
                out.append(f"{sep}{key} = ")
                out.extend(v.hex_pieces())
            elif v.__class__ is UnitAttr:
                out.append(sep + key)
            else:
                out.append(f"{sep}{key} = {self.attr_text(v)}")

    def pretty_op(self, op, indent: str, top: bool = False, attributes=None):
        """The pieces of ``op``'s line in its custom form (``OpSpec.pretty``, a
        ``mhlo_ir.pretty_forms.Form``): strings, ``("nl",)`` for a new line at this indent and
        ``("region", i)`` for a region printed in braces; None where the op has no custom
        form in this dialect. ``attributes``: printed instead of the op's (its spec's
        ``dialect_check`` gave them)."""
        d = self.dialect
        form = custom_form(op.spec, d)
        if form is None:
            return None
        results = op.results
        if len(results) == 1:
            head = f"{indent}{self.names[results[0]]} = "
        else:
            head = indent + self.headers[op] if results else indent
        parts = [head, pretty_lines.keyword(op.spec, d, top)]
        parts.extend(form.render(self, op if attributes is None else _Respelled(op, attributes)))
        parts.append(f"{self.loc(op.location)}\n")
        return parts

    def region_args(self, op) -> tuple:
        """The arguments of ``op``'s first region (which custom forms like while's name)."""
        blocks = op.regions[0].blocks if op.regions else ()
        return tuple(blocks[0].arguments) if blocks else ()

    def region(self, region, indent: str, entry_label: bool = True):
        """A generator printing ``region``'s blocks (see ``block``); without
        ``entry_label`` the first block's label is left out (a custom form names its
        arguments). A one-block region (MHLO's are) is its block's generator itself."""
        if region.__class__ is CombiningRegion and region in self.names:
            print_combining.made(self, region)  # (named as a recipe: now its block's)
        blocks = region.blocks
        if len(blocks) == 1:
            block = blocks[0]
            return self.block(block, indent, bool(entry_label and block.arguments))
        return self.blocks(blocks, indent, entry_label)

    def blocks(self, blocks, indent: str, entry_label: bool):
        for i, block in enumerate(blocks):
            yield from self.block(block, indent,
                                  label=bool(i or (entry_label and block.arguments)))

    def drive(self, printing) -> None:
        """Run a ``region``/``block`` generator, printing each nested region it asks for
        from an explicit stack: a 10,000-deep nest of regions prints without recursion."""
        stack = [printing]
        push, pop, region = stack.append, stack.pop, self.region
        while stack:
            nested = next(stack[-1], None)
            if nested is None:
                pop()
            else:
                push(region(*nested))

    def function_pretty(self, fn) -> None:
        self.out.append(pretty_lines.function_head(self, fn))
        for i, block in enumerate(fn.body.blocks):
            self.drive(self.block(block, "    ", label=bool(i), top=True))
        self.out.append(f"  }}{self.loc(fn.location)}\n")

    def function(self, fn) -> None:
        if fn.result_types is None:
            fn.type  # (IRError: "function @f has no return yet, so no result types")
        if self.pretty:
            return self.function_pretty(fn)
        if fn.arg_attrs or fn.res_attrs or fn.attributes:
            head = self.function_head(fn)
        else:
            # The header of a function without attribute dicts depends only on its name,
            # visibility and (interned) types: kept with the signatures (generated programs
            # print thousands of small modules, each with one such function).
            key = ("func.func", fn.name, fn.visibility, fn.arg_types, fn.result_types)
            head = self.sigs.get(key)
            if head is None:
                head = self.sigs[key] = self.function_head(fn)
        self.out.append(head)
        self.drive(self.region(fn.body, "    "))
        attrs = fn.attributes
        if attrs and not FUNCTION_PROPERTIES.isdisjoint(attrs):  # (in the head, as MLIR's)
            attrs = {k: v for k, v in attrs.items() if k not in FUNCTION_PROPERTIES}
        if attrs or self.locs is not None:
            extra = f" {{{self.named(attrs.items())}}}" if attrs else ""
            self.out.append(f"  }}){extra} : () -> (){self.loc(fn.location)}\n")
        else:
            self.out.append("  }) : () -> ()\n")

    def function_head(self, fn) -> str:
        """``  "func.func"() <{function_type = ..., sym_name = ...}> ({``, a line."""
        # Keyed by the (interned) argument and result types, and spelled without making a
        # FunctionType: making one to render it was a sixth of printing a small module.
        key = ("func", fn.arg_types, fn.result_types)
        ftext = self.sigs.get(key)
        if ftext is None:
            ftext = self.sigs[key] = function_type_text(fn.arg_types, fn.result_types,
                                                        self.dialect)
        arg_attrs = fn.arg_attrs and any(fn.arg_attrs)
        res_attrs = fn.res_attrs and any(fn.res_attrs)
        if not (arg_attrs or res_attrs or fn.visibility is not None or fn.attributes and
                not FUNCTION_PROPERTIES.isdisjoint(fn.attributes)):
            return (f'  "func.func"() <{{function_type = {ftext}, '
                    f'sym_name = {quote(fn.name)}}}> ({{\n')
        props = []
        if arg_attrs:
            props.append(("arg_attrs", "[" + ", ".join(
                "{" + self.named(a.items()) + "}" for a in fn.arg_attrs) + "]"))
        props.append(("function_type", ftext))
        if res_attrs:
            res = list(fn.res_attrs) + [{}] * (len(fn.result_types) - len(fn.res_attrs))
            props.append(("res_attrs", "[" + ", ".join(
                "{" + self.named(a.items()) + "}" for a in res) + "]"))
        props.append(("sym_name", quote(fn.name)))
        if fn.visibility is not None:
            props.append(("sym_visibility", quote(fn.visibility)))
        if fn.attributes and not FUNCTION_PROPERTIES.isdisjoint(fn.attributes):
            props += [(k, v) for k, v in fn.attributes.items() if k in FUNCTION_PROPERTIES]
            props.sort(key=lambda kv: kv[0])
        body = ", ".join(self.named([(k, v)]) if isinstance(v, Attribute) else f"{k} = {v}"
                         for k, v in props)
        return f'  "func.func"() <{{{body}}}> ({{\n'

    def module(self, module) -> str:
        if self.pretty:
            ssa_names.number_pretty(self, module)
        else:
            ssa_names.number(self, module)
        out = self.out
        if self.pretty:
            name = f" @{symbol_name(module.name)}" if module.name is not None else ""
            extra = (f" attributes {{{self.named(module.attributes.items())}}}"
                     if module.attributes else "")
            out.append(f"module{name}{extra} {{\n")
            for fn in module.functions:
                self.function(fn)
            out.append(f"}}{self.loc(module.location)}\n")
        else:
            key = ("builtin.module", module.name)
            head = self.sigs.get(key)
            if head is None:
                props = f" <{{sym_name = {quote(module.name)}}}>" \
                    if module.name is not None else ""
                head = self.sigs[key] = f'"builtin.module"(){props} ({{\n'
            out.append(head)
            if not module.functions:
                out.append("^bb0:\n")  # (MLIR's print of an empty block, which it requires)
            for fn in module.functions:
                self.function(fn)
            if module.attributes or self.locs is not None:
                extra = f" {{{self.named(module.attributes.items())}}}" \
                    if module.attributes else ""
                out.append(f"}}){extra} : () -> (){self.loc(module.location)}\n")
            else:
                out.append("}) : () -> ()\n")
        if self.locs is not None and self.locs.aliases:
            out.extend(line + "\n" for line in self.locs.trailer())
        return "".join(out)


class _Respelled:
    """An op seen with other attributes (what its dialect spells), for a custom form's
    pieces, which read ``op.attributes``; everything else is the op's."""

    __slots__ = ("_op", "attributes")

    def __init__(self, op, attributes):
        self._op, self.attributes = op, attributes

    def __getattr__(self, name):
        return getattr(self._op, name)


_NO_KEYS = frozenset()
# The second entry of the custom-form fast path's keys (see block): never a type, an int, a
# tuple or None, so never equal to what a generic-path key holds there.
_ONE, _PAIR, _MANY_P, _REGION = object(), object(), object(), object()


def print_function_type(ft: FunctionType, dialect: Dialect = MHLO) -> str:
    return ft.render(dialect)


def print_module(module, *, dialect: Dialect = MHLO, locations=True,
                 hex_threshold: int = HEX_THRESHOLD, pretty: bool = False) -> str:
    """Print ``module`` as MLIR text in generic op form, or, with ``pretty=True``, as MLIR's
    default print gives it: ``module``/``func.func`` and every op whose spec has a custom
    form (``OpSpec.pretty``) in that form, SSA values named as MLIR names them there.

    ``locations``: True prints each known location inline (``loc("f.py":3:7)``), ``"alias"``
    through ``#locN`` aliases listed at the end, False not at all (unknown locations are never
    printed, so jaxlib's messages then point at line:column of this text).
    ``hex_threshold``: non-splat constants with more elements than this print as hex.
    ``dialect``: ``mhlo_ir.dialect.MHLO`` or ``STABLEHLO`` (or their names).
    """
    if dialect.__class__ is not Dialect:
        dialect = _dialect_named(dialect)
    try:
        return _Printer(dialect, locations, hex_threshold, pretty).module(module)
    except (ssa_names.Renumber, KeyError):
        pass
    # A hand-edited block the one-pass naming does not cover (see ssa_names.number): printed
    # again, numbered the full way first.
    try:
        return _Printer(dialect, locations, hex_threshold, pretty, flat=False).module(module)
    except KeyError as e:
        # A value no block of this module defines (an edit used another module's): the
        # verifier names the op and operand.
        module.verify()
        raise IRError(f"cannot print the module: it uses {e.args[0]!r:.80}, which the "
                      "printer found no name for (and Module.verify no fault with)") from e


def _dialect_named(name) -> Dialect:
    from .dialect import BY_PREFIX
    d = BY_PREFIX.get(name) if isinstance(name, str) else None
    if d is None:
        raise TypeError(f"dialect must be mhlo_ir.dialect.MHLO or STABLEHLO (or 'mhlo', "
                        f"'stablehlo'), got {type(name).__name__} {name!r:.40}")
    return d
