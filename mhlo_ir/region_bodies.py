"""Checking a region body's Python callable against the region's block arguments.

A body of the wrong arity would otherwise fail inside Python's call machinery with
``<lambda>() takes 2 positional arguments``, naming neither the op nor the region; this says
which op, which region, and the lambda to write.
"""

from __future__ import annotations

import inspect
from inspect import CO_VARARGS
from types import FunctionType, MethodType

from .ir import VALUE_CLASSES
from .ops.spec import fail

__all__ = ["ARITY", "arity", "arity_error", "bad_results"]


# code object (or (code, number of defaults, names of keyword defaults) for functions with
# defaults) -> (fewest positional arguments, most or None, required keyword-only names):
# checking a region body's arity is a dict lookup per region (inspect.signature costs ~10 us).
_ARITY: dict = {}


def _bad_results(op, what, out):
    """Name the entry of a region body's results that is not a Value, if one is not."""
    for i, v in enumerate(out):
        if v.__class__ not in VALUE_CLASSES:
            fail(op, f"{what} returned {type(v).__name__} {v!r:.60} as result {i}, not a Value "
                     f"(build a constant for a fixed value: b.constant(...))")


def _arity(fn):
    """(fewest, most or None, required keyword-only names) positional arguments ``fn``
    takes; None when that cannot be known (a builtin)."""
    cls = fn.__class__
    shift = 0
    if cls is MethodType:
        fn, shift = fn.__func__, 1
        cls = fn.__class__
    if cls is FunctionType:
        code = fn.__code__
        defaults, kwdefaults = fn.__defaults__, fn.__kwdefaults__
        # Without defaults the code object alone is the key (Builder.region's fast lookup).
        key = (code, len(defaults) if defaults else 0,
               tuple(sorted(kwdefaults)) if kwdefaults else 0) \
            if defaults is not None or kwdefaults is not None else code
        hit = _ARITY.get(key)
        if hit is None:
            n_defaults = len(defaults) if defaults else 0
            n = code.co_argcount
            kwonly = code.co_varnames[n:n + code.co_kwonlyargcount]
            required = tuple(k for k in kwonly if not kwdefaults or k not in kwdefaults)
            hit = (n - n_defaults, None if code.co_flags & CO_VARARGS else n, required)
            if len(_ARITY) > 4096:
                _ARITY.clear()
            _ARITY[key] = hit
        if shift:
            hit = (max(hit[0] - 1, 0), None if hit[1] is None else hit[1] - 1, hit[2])
        return hit
    if not callable(fn):
        return (0, -1, ())  # never satisfied: _arity_error explains
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    lo, hi, required = 0, 0, []
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            if hi is not None:
                hi += 1
            if p.default is p.empty:
                lo += 1
        elif p.kind is p.VAR_POSITIONAL:
            hi = None
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            required.append(p.name)
    return lo, hi, tuple(required)


def _arity_error(op, what, body, arity, arg_names, n):
    names = list(arg_names) if arg_names is not None else (
        ["x"] if n == 1 else [f"x{i}" for i in range(n)])
    lam = f"lambda {', '.join(['b', *names])}: ..."
    lo, hi, required = arity
    if hi == -1:
        fail(op, f"{what} must be a function of the builder and the region's arguments "
                 f"({', '.join(['builder', *names])}), got {type(body).__name__} "
                 f"{body!r:.40}: write {lam}")
    if required:
        fail(op, f"{what} has required keyword-only arguments ({', '.join(required)}), but "
                 f"regions pass arguments by position (builder, {', '.join(names)}): write "
                 f"{lam}")
    takes = (f"{lo}" if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}")
    plural = "" if takes == "1" else "s"
    fail(op, f"{what} takes {takes} argument{plural} but the region has {n + 1} "
             f"({', '.join(['builder', *names])}): write {lam}")


ARITY, arity, arity_error, bad_results = _ARITY, _arity, _arity_error, _bad_results
