"""Shared by the parse tests: an exact comparison key, MLIR (jaxlib's bindings) as the
independent reader and printer of attribute, type and location text, and the parser with its
fast paths off (every piece read token by token) as the oracle of those paths."""

from __future__ import annotations

import re

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import parse_lines
from mhlo_ir import parser as parser_module
from mhlo_ir import types as types_module
from mhlo_ir.location import parse_location, parse_location_aliases
from tests.oracle import _context

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _float_bits(v, et) -> int:
    return int(np.asarray(v, dtype=et.dtype).reshape(1).view(_UINT[et.dtype.itemsize])[0])


def exact(x):
    """A key equal for two attributes, types or locations only if they are the same value
    bit for bit: floats by their bits in their own type (0.0 vs -0.0, each NaN payload), dense
    elements by their raw bytes, containers element by element. Independent of the classes'
    own ``==``, which this checks too."""
    if isinstance(x, hlo.FloatAttr):
        return ("FloatAttr", x.type.name, _float_bits(x.value, x.type))
    if isinstance(x, hlo.DenseArrayAttr):
        et = x.type
        vals = tuple(_float_bits(v, et) if et.is_float else (bool(v) if et.is_bool else int(v))
                     for v in x.values)
        return ("DenseArrayAttr", et.name, vals)
    if isinstance(x, hlo.DenseElementsAttr):
        return ("DenseElementsAttr", x.type, x.data, x.splat)
    if isinstance(x, hlo.IntegerAttr):
        return ("IntegerAttr", x.type.name, int(x.value), type(x.value))
    if isinstance(x, hlo.ArrayAttr):
        return ("ArrayAttr", tuple(exact(e) for e in x.elements))
    if isinstance(x, hlo.DictionaryAttr):
        return ("DictionaryAttr", tuple((k, exact(v)) for k, v in x.items))
    if isinstance(x, hlo.BoolAttr):
        return ("BoolAttr", bool(x.value))
    return (type(x).__name__, x)


def assert_exact(got, want):
    assert exact(got) == exact(want), f"\n got: {got!r}\nwant: {want!r}"


_HEAD = '"builtin.module"() ({\n^bb0:\n}) '
_TAIL = " : () -> ()\n"


def mlir_dictionary(texts: dict) -> str:
    """MLIR's print of the dictionary ``{name = text, ...}`` (names need a dialect prefix, as
    on a module): MLIR parses each attribute text and prints them sorted, in its own way."""
    body = ", ".join(f"{k} = {v}" for k, v in texts.items())
    ir, ctx = _context()
    with ctx, ir.Location.unknown():
        out = ir.Module.parse(f"module attributes {{{body}}} {{}}").operation.get_asm(
            print_generic_op_form=True)
    assert out.startswith(_HEAD) and out.endswith(_TAIL), out
    return out[len(_HEAD):-len(_TAIL)]


def mlir_locations(texts: list) -> list:
    """Each location text (what goes inside ``loc(...)``) put on an op, read by MLIR and
    printed back by it (through ``#loc`` aliases), then read with our parser."""
    ops = "".join(f"  module {{}} loc({t})\n" for t in texts)
    ir, ctx = _context()
    with ctx, ir.Location.unknown():
        out = ir.Module.parse(f"module {{\n{ops}}}").operation.get_asm(
            enable_debug_info=True, print_generic_op_form=True)
    aliases = parse_location_aliases(out)
    found = [line[len("  }) : () -> () "):] for line in out.splitlines()
             if line.startswith("  }) : () -> () loc(")]
    assert len(found) == len(texts), out
    return [parse_location(f, aliases) for f in found]


_NEVER = re.compile(r"(?!)")


def outcome(text: str, **options) -> str:
    """``hlo.parse(text, **options)`` printed with its locations, or its error's class and
    message."""
    try:
        return hlo.parse(text, **options).to_text(locations=True)
    except (hlo.ParseError, hlo.ModuleVerificationError) as e:
        return f"{type(e).__name__} {e}"


def tokens_only(text: str, **options) -> str:
    """``outcome(text)`` with every line, label, type, module and function head and tail read
    token by token (mhlo_ir.parse_lines, parse_templates, parse_heads, parse_regions, the
    trailing locations read whole and the types' whole-text readers off)."""
    names = [(parse_lines, "known_line", lambda *args: None),
             (parse_lines, "GENERIC_LINE", _NEVER), (parse_lines, "PRETTY_LINE", _NEVER),
             (parse_lines, "VOID_LINE", _NEVER),
             (parse_lines, "template_line", lambda *args: None),
             (parser_module, "remember", lambda *args: None),
             (parser_module, "label_line", lambda *args: None),
             (parser_module, "module_head", lambda *args: None),
             (parser_module, "function_head", lambda *args: None),
             (parser_module, "pretty_function_head", lambda *args: None),
             (parser_module, "pretty_module_head", lambda *args: None),
             (parser_module, "empty_tail", lambda *args: False),
             (parser_module, "location_line", lambda *args: None),
             (parser_module, "region_head", lambda *args: None),
             (parser_module, "region_tail", lambda *args: None),
             (parser_module, "combining_op", lambda *args: None),
             (parser_module, "remember_combining", lambda *args: None),
             (types_module, "_FUNCTION_TEXT", _NEVER), (types_module, "_TENSOR_TEXT", _NEVER)]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in names]
    for owner, name, off in names:
        setattr(owner, name, off)
    try:
        return outcome(text, **options)
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def generated_texts(seeds, variants):
    """``(seed, options, text)``: generated programs over the whole op table, printed with each
    of ``variants`` (``to_text`` options); those whose dialect lacks one of their ops are left
    out."""
    from mhlo_ir import strategies as hst
    options = hst.default_options(12)
    for seed in seeds:
        m = hst.generate_seeded(seed, options).module
        for kw in variants:
            try:
                text = m.to_text(**kw)
            except hlo.OpBuildError:  # an op the dialect lacks
                continue
            yield seed, kw, text
