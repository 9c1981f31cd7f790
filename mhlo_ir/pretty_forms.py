"""Reading MLIR's custom op forms: ``%0 = mhlo.add %a, %b : T``, ``mhlo.constant dense<..>``,
``return %x : T``, ``call @f(%x) : (T) -> T``.

The printer writes an op in its custom form, with ``pretty=True``, when its spec's ``pretty``
field names one (``OpSpec.pretty``); this module reads each of those forms back, keyed by the
same field, so printer and parser cannot disagree about which ops have which form. Ops without a
custom form here must be written generically (``"mhlo.reduce"(...) ...``), which every op has.
"""

from __future__ import annotations

from .types import FunctionType

__all__ = ["read_pretty"]

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
    spec, _ = p.spec_of(name, {}, 0)
    form = _FORMS.get(spec.pretty if spec.chapter != "opaque" else "")
    if name == "func.call":
        form = _call
    if form is None:
        raise ts.error(f"'{name}' has no custom form this parser reads: write it in the "
                       f"generic form (\"{name}\"(...) ... : (...) -> ...)", tok)
    return form(p, name, tok, block)


def _elementwise(p, name, tok, block):
    """``%r = name %a, %b : T`` (all of one type) or ``... : (A, B) -> R``."""
    ts = p.ts
    operands = [p.value()]
    while ts.accept(","):
        operands.append(p.value())
    ts.expect(":")
    ttok = ts.peek()
    t = p.type()
    if isinstance(t, FunctionType):
        if len(t.inputs) != len(operands):
            raise ts.error(f"'{name}' has {len(operands)} operands but its type lists "
                           f"{len(t.inputs)}", ttok)
        ins, results = t.inputs, t.results
    else:
        ins, results = (t,) * len(operands), (t,)
    for i, (v, want) in enumerate(zip(operands, ins)):
        if v.type != want:
            raise ts.error(f"'{name}' operand {i} has type {v.type} but the text says "
                           f"{want}", ttok)
    loc = p.trailing_location()
    return p.make(name, operands, {}, {}, (), results, loc, tok, block)


def _constant(p, name, tok, block):
    """``%r = name dense<...> : T`` (the attribute carries the result type)."""
    ts = p.ts
    attrs = p.attr_dict() if ts.at("{") else {}
    atok = ts.peek()
    value = p.attribute()
    t = getattr(value, "type", None)
    if t is None:
        raise ts.error(f"'{name}' needs a typed value (dense<...> : tensor<...>)", atok)
    loc = p.trailing_location()
    return p.make(name, [], {"value": value}, attrs, (), (t,), loc, tok, block)


def _return(p, name, tok, block):
    """``return %a, %b : A, B`` or a bare ``return``."""
    ts = p.ts
    operands = []
    if ts.peek().kind == "%":
        operands.append(p.value())
        while ts.accept(","):
            operands.append(p.value())
        ts.expect(":")
        ttok = ts.peek()
        types = [p.type()]
        while ts.accept(","):
            types.append(p.type())
        if len(types) != len(operands):
            raise ts.error(f"'{name}' has {len(operands)} operands but {len(types)} types",
                           ttok)
        for i, (v, want) in enumerate(zip(operands, types)):
            if v.type != want:
                raise ts.error(f"'{name}' operand {i} has type {v.type} but the text says "
                               f"{want}", ttok)
    loc = p.trailing_location()
    return p.make(name, operands, {}, {}, (), (), loc, tok, block)


def _call(p, name, tok, block):
    """``call @f(%a, %b) : (A, B) -> R``."""
    from .attributes import SymbolRefAttr
    ts = p.ts
    callee = p.symbol()
    operands = p.operands()
    attrs = p.attr_dict() if ts.at("{") else {}
    ts.expect(":")
    ttok = ts.peek()
    t = p.type()
    if not isinstance(t, FunctionType) or len(t.inputs) != len(operands):
        raise ts.expected(f"the type of the call, ({len(operands)} operand types) -> results",
                          ttok)
    loc = p.trailing_location()
    return p.make(name, operands, {"callee": SymbolRefAttr(callee)}, attrs, (), t.results,
                  loc, tok, block)


_FORMS = {"elementwise": _elementwise, "constant": _constant, "return": _return}
