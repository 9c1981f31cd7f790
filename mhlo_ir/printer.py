"""The printer: modules to MLIR text, in the generic op form, as MLIR itself prints it.

Without locations our output is byte for byte what MLIR's printer gives for the same module in
generic form (``get_asm(print_generic_op_form=True)``), except that large dense constants are
in lowercase hex; the test suite checks this against the MLIR bindings inside jaxlib. That
includes MLIR's numbering of SSA values: one counter for results and one for block arguments
across the whole module, with regions numbered last-in first-out (so the last function gets
``%arg0``).

Speed matters here (a program has one line per op): type strings are cached on the types,
op-name strings per spec, and SSA names are assigned in one pre-pass into a dict keyed by value.
"""

from __future__ import annotations

from .attributes import UnitAttr, render_named
from .dense import HEX_THRESHOLD, DenseElementsAttr
from .dialect import MHLO, Dialect
from .location import Location, UnknownLoc
from .text import quote
from .types import FunctionType, TensorType

__all__ = ["print_module", "print_function_type"]


class _Locations:
    """Renders locations inline (``loc("f.py":1:2)``) or through ``#locN`` aliases."""

    __slots__ = ("aliases", "table", "cache")

    def __init__(self, aliases: bool):
        self.aliases = aliases
        self.table: dict = {}
        self.cache: dict = {}

    def suffix(self, location: Location) -> str:
        if location is None or location.__class__ is UnknownLoc:
            return ""
        try:
            return self.cache[location]
        except KeyError:
            pass
        text = location.render()
        if self.aliases:
            name = self.table.get(text)
            if name is None:
                name = self.table[text] = f"#loc{len(self.table)}"
            out = f" loc({name})"
        else:
            out = f" loc({text})"
        self.cache[location] = out
        return out

    def trailer(self) -> list:
        return [f"{name} = loc({text})" for text, name in self.table.items()]


class _Printer:
    __slots__ = ("dialect", "names", "headers", "out", "locs", "hex_threshold", "op_names",
                 "attr_cache")

    def __init__(self, dialect: Dialect, locations, hex_threshold: int):
        self.dialect = dialect
        self.names: dict = {}
        self.headers: dict = {}
        self.out: list = []
        self.locs = None if not locations else _Locations(locations == "alias")
        self.hex_threshold = hex_threshold
        self.op_names: dict = {}
        self.attr_cache: dict = {}

    # -- SSA numbering, as MLIR's SSANameState does it -----------------------------------------

    def number(self, module) -> None:
        names, headers = self.names, self.headers
        next_value = next_arg = 0
        stack = [fn.body for fn in module.functions]
        pop, push = stack.pop, stack.append
        while stack:
            region = pop()
            nested = []
            for block in region.blocks:
                for a in block.arguments:
                    names[a] = f"%arg{next_arg}"
                    next_arg += 1
                for op in block.operations:
                    results = op.results
                    if results:
                        if len(results) == 1:
                            names[results[0]] = f"%{next_value}"
                        else:
                            for i, r in enumerate(results):
                                names[r] = f"%{next_value}#{i}"
                            headers[op] = f"%{next_value}:{len(results)} = "
                        next_value += 1
                    if op.regions:
                        nested.extend(op.regions)
            for r in nested:
                push(r)

    # -- pieces ---------------------------------------------------------------------------

    def type_text(self, t) -> str:
        return t._text if t.__class__ is TensorType else t.render(self.dialect)

    def attr_text(self, a) -> str:
        if a.__class__ is DenseElementsAttr:
            return a.render(self.dialect, self.hex_threshold)
        try:
            return self.attr_cache[a]
        except KeyError:
            text = self.attr_cache[a] = a.render(self.dialect)
            return text
        except TypeError:  # unhashable payload; render directly
            return a.render(self.dialect)

    def named(self, items) -> str:
        parts = []
        for k, v in sorted(items):
            key = k if _bare(k) else quote(k)
            parts.append(key if v.__class__ is UnitAttr else f"{key} = {self.attr_text(v)}")
        return ", ".join(parts)

    def loc(self, location) -> str:
        return "" if self.locs is None else self.locs.suffix(location)

    # -- structure --------------------------------------------------------------------------

    def block(self, block, indent: str, label: bool) -> None:
        out = self.out
        if label:
            names, tt = self.names, self.type_text
            args = ", ".join(f"{names[a]}: {tt(a.type)}{self.loc(a.location)}"
                             for a in block.arguments)
            out.append(f"{indent[:-2]}^bb0({args}):" if args else f"{indent[:-2]}^bb0:")
        names = self.names
        headers = self.headers
        op_names = self.op_names
        dialect = self.dialect
        locs = self.locs
        for op in block.operations:
            spec = op.spec
            name = op_names.get(spec)
            if name is None:
                name = op_names[spec] = f'"{spec.full_name(dialect)}"'
            results = op.results
            if not results:
                head = indent
                rtypes = "()"
            elif len(results) == 1:
                r = results[0]
                head = f"{indent}{names[r]} = "
                t = r.type
                rtypes = t._text if t.__class__ is TensorType else t.render(dialect)
            else:
                head = indent + headers[op]
                rtypes = "(" + ", ".join(self.type_text(r.type) for r in results) + ")"
            operands = op.operands
            if operands:
                args = ", ".join([names[v] for v in operands])
                itypes = ", ".join([v.type._text if v.type.__class__ is TensorType
                                    else self.type_text(v.type) for v in operands])
            else:
                args = itypes = ""
            attrs = op.attributes
            props = extra = ""
            if attrs:
                owned = spec.attributes
                p = [(k, v) for k, v in attrs.items() if k in owned]
                d = [(k, v) for k, v in attrs.items() if k not in owned]
                if p:
                    props = f" <{{{self.named(p)}}}>"
                if d:
                    extra = f" {{{self.named(d)}}}"
            loc = "" if locs is None else locs.suffix(op.location)
            if op.regions:
                out.append(f'{head}{name}({args}){props} ({{')
                inner = indent + "  "
                for i, region in enumerate(op.regions):
                    if i:
                        out.append(f"{indent}}}, {{")
                    self.region(region, inner)
                out.append(f"{indent}}}){extra} : ({itypes}) -> {rtypes}{loc}")
            else:
                out.append(f"{head}{name}({args}){props}{extra} : ({itypes}) -> {rtypes}{loc}")

    def region(self, region, indent: str) -> None:
        for i, block in enumerate(region.blocks):
            self.block(block, indent, label=bool(i or block.arguments))

    def function(self, fn) -> None:
        d = self.dialect
        props = []
        if fn.arg_attrs and any(fn.arg_attrs):
            props.append(("arg_attrs", "[" + ", ".join(
                "{" + self.named(a.items()) + "}" for a in fn.arg_attrs) + "]"))
        props.append(("function_type", print_function_type(fn.type, d)))
        if fn.res_attrs and any(fn.res_attrs):
            res = list(fn.res_attrs) + [{}] * (len(fn.result_types) - len(fn.res_attrs))
            props.append(("res_attrs", "[" + ", ".join(
                "{" + self.named(a.items()) + "}" for a in res) + "]"))
        props.append(("sym_name", quote(fn.name)))
        if fn.visibility is not None:
            props.append(("sym_visibility", quote(fn.visibility)))
        body = ", ".join(f"{k} = {v}" for k, v in props)
        self.out.append(f'  "func.func"() <{{{body}}}> ({{')
        self.region(fn.body, "    ")
        extra = f" {{{self.named(fn.attributes.items())}}}" if fn.attributes else ""
        self.out.append(f"  }}){extra} : () -> (){self.loc(fn.location)}")

    def module(self, module) -> str:
        self.number(module)
        out = self.out
        props = f" <{{sym_name = {quote(module.name)}}}>" if module.name is not None else ""
        out.append(f'"builtin.module"(){props} ({{')
        for fn in module.functions:
            self.function(fn)
        extra = f" {{{self.named(module.attributes.items())}}}" if module.attributes else ""
        out.append(f"}}){extra} : () -> (){self.loc(module.location)}")
        if self.locs is not None and self.locs.aliases:
            out.extend(self.locs.trailer())
        out.append("")
        return "\n".join(out)


def _bare(k, _cache={}) -> bool:
    try:
        return _cache[k]
    except KeyError:
        from .text import is_bare_identifier
        _cache[k] = r = is_bare_identifier(k)
        return r


def print_function_type(ft: FunctionType, dialect: Dialect = MHLO) -> str:
    return ft.render(dialect)


def print_module(module, *, dialect: Dialect = MHLO, locations=True,
                 hex_threshold: int = HEX_THRESHOLD) -> str:
    """Print ``module`` as MLIR text in generic op form.

    ``locations``: True prints each known location inline (``loc("f.py":3:7)``), ``"alias"``
    through ``#locN`` aliases listed at the end, False not at all (unknown locations are never
    printed, so jaxlib's messages then point at line:column of this text).
    ``hex_threshold``: non-splat constants with more elements than this print as hex.
    """
    return _Printer(dialect, locations, hex_threshold).module(module)
