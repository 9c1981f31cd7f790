"""Jaxprs as text, in the layout ``jax.make_jaxpr`` prints, so the two can be read side by side:

    { lambda ; a:f32[8,64] b:f32[64,64]. let
        c:f32[8,64] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b
        d:f32[8,64] = max c 0.0:f32[]
      in (d,) }

Variables are named a, b, ..., z, ba, bb, ... in order of first appearance, and sub-jaxprs in
params go on with the names (as JAX 0.10 does); params print sorted by name, and those that
are jaxprs print nested. A jaxpr whose one-line form fits in 80 columns prints on one line,
as JAX's does. What JAX's layout does beyond that (wrapping long variable or param lists,
one-line nested jaxprs, primitives' own param printers) is not reproduced.
Works on anything jaxpr-shaped (duck-typed, like the lowering).
"""

from __future__ import annotations

import itertools
import string

import numpy as np

__all__ = ["pp_jaxpr", "aval_str"]

_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
          "uint16": "u16", "uint32": "u32", "uint64": "u64", "complex64": "c64",
          "complex128": "c128", "bool": "bool", "int4": "i4", "uint4": "u4"}


def aval_str(aval) -> str:
    """``f32[8,64]``; ``Tok`` for a token."""
    dtype = getattr(aval, "dtype", None)
    if dtype is None:
        return "Tok"
    name = getattr(dtype, "name", str(dtype))
    return f"{_SHORT.get(name, name)}[{','.join(map(str, aval.shape))}]"


def _names():
    letters = string.ascii_lowercase
    yield from letters
    for n in itertools.count(2):
        for combo in itertools.product(letters[1:], *[letters] * (n - 1)):
            yield "".join(combo)


class _Namer:
    """Names variables in order of first appearance."""

    def __init__(self):
        self.names: dict = {}
        self.fresh = _names()

    def __call__(self, v, binder: bool = False) -> str:
        if hasattr(v, "val"):  # a literal
            val = v.val
            val = val.item() if isinstance(val, (np.ndarray, np.generic)) and \
                np.ndim(val) == 0 else val
            return f"{val}:{aval_str(v.aval)}"
        if type(v).__name__ == "DropVar":
            return f"_:{aval_str(v.aval)}" if binder else "_"
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = next(self.fresh)
        return f"{name}:{aval_str(v.aval)}" if binder else name


def _param(value, indent: str, name: _Namer) -> str:
    if hasattr(value, "jaxpr") and hasattr(value, "consts"):  # a closed jaxpr
        return _pp(value.jaxpr, indent, name)
    if hasattr(value, "eqns") and hasattr(value, "invars"):  # an open jaxpr
        return _pp(value, indent, name)
    if isinstance(value, (tuple, list)) and value and all(
            hasattr(v, "eqns") or hasattr(v, "jaxpr") for v in value):
        inner = indent + "  "
        return "(\n" + "".join(f"{inner}{_param(v, inner, name)}\n" for v in value) + \
            f"{indent})"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    return repr(value) if isinstance(value, str) else str(value)


def pp_jaxpr(jaxpr, indent: str = "") -> str:
    """``jaxpr`` (open or closed) as text in JAX's layout; ``indent`` prefixes every line but
    the first (for nesting)."""
    return _pp(getattr(jaxpr, "jaxpr", jaxpr), indent, _Namer())


def _pp(jaxpr, indent: str, name: _Namer) -> str:
    consts = " ".join(name(v, True) for v in jaxpr.constvars)
    ins = " ".join(name(v, True) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {ins}. let"
    body = indent + "    "
    eqns = []
    for e in jaxpr.eqns:
        outs = " ".join(name(v, True) for v in e.outvars)
        params = " ".join(f"{k}={_param(v, body + '  ', name)}"
                          for k, v in sorted(e.params.items(), key=lambda kv: kv[0]))
        args = " ".join(name(v) for v in e.invars)
        prim = e.primitive.name + (f"[{params}]" if params else "")
        eqns.append(f"{outs} = {prim}{' ' if args else ''}{args}")
    outs = ", ".join(name(v) for v in jaxpr.outvars)
    tail = f"in ({outs}{',' if len(jaxpr.outvars) == 1 else ''}) }}"
    if not indent:  # JAX's layout: the whole jaxpr on one line when it fits in 80 columns
        flat = f"{head} {'; '.join(eqns)} {tail}"
        if len(flat) <= 80 and "\n" not in flat:
            return flat
    return "\n".join([head, *[body + e for e in eqns], f"{indent}  {tail}"])
