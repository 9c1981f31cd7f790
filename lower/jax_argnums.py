"""Static and donated arguments as ``jax.jit`` reads them: numbers and names normalized and
checked against ``fn``'s signature (in jax.jit's words where it refuses them), the one
read through the other, and the given arguments split into static and dynamic ones."""

from __future__ import annotations

import operator

__all__ = ["split", "normalize_argnums", "check_hashable", "other_way", "read_argnums",
           "read_argnames", "given", "validate"]


def split(args, static_argnums):
    statics = {i: args[i] for i in static_argnums}
    dynamic = [a for i, a in enumerate(args) if i not in statics]
    return statics, dynamic


def normalize_argnums(argnums, n: int, what: str) -> tuple:
    out = []
    for i in read_argnums(argnums):
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise ValueError(f"{what} {i} is out of range for {n} positional arguments")
        out.append(j)
    return tuple(sorted(set(out)))


def check_hashable(statics) -> None:
    """jax.jit's refusal of a static argument it cannot hash."""
    for v in statics:
        try:
            hash(v)
        except TypeError as e:
            raise ValueError(
                "Non-hashable static arguments are not supported. An error occurred while "
                f"trying to hash an object of type {type(v)}, {v}. The error was:\n"
                f"{type(e).__name__}: {e}\n") from None


def other_way(fn, argnums, argnames) -> tuple:
    """(the positions of the parameters ``argnames`` names, the names of those ``argnums``
    numbers), through ``fn``'s signature: ((), ()) where it has none."""
    import inspect
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return (), ()
    either = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in either]
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    named = tuple(i for i, p in enumerate(positional) if p.name in argnames)
    numbered = tuple(positional[i].name for i in nums if 0 <= i < len(positional) and
                     positional[i].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return named, numbered


def read_argnums(nums) -> tuple:
    """Argument numbers as jax.jit reads them: None (none), an index or a sequence of them."""
    if nums is None:
        return ()
    try:
        return (operator.index(nums),)
    except TypeError:
        return tuple(map(operator.index, nums))


def read_argnames(names) -> tuple:
    """Argument names as jax.jit reads them: None (none), a string or a sequence of them."""
    if names is None:
        return ()
    if isinstance(names, str):
        return (names,)
    names = tuple(names)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"argument is not a string: {name}")
    return names


def given(nums, n: int) -> tuple:
    """The argument numbers ``nums`` among ``n`` given, non-negative (others: none)."""
    return tuple(sorted({i + n if i < 0 else i for i in nums if -n <= i < n}))


def validate(fn, static_argnums, static_argnames, donate_argnums, donate_argnames) -> None:
    """jax.jit's checks of argument numbers and names against ``fn``'s signature (none where
    it has none): a number past its positional parameters (any, given ``*args``), a name it
    does not take (any, given ``**kwargs``) or takes by position only. (A parameter both
    static and donated, by name or number: ``Jitted.__init__``, through the names.)"""
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    kind = inspect.Parameter
    positional = sum(p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)
                     for p in params)
    var_args = any(p.kind is kind.VAR_POSITIONAL for p in params)
    for what, nums in (("static_argnums", static_argnums), ("donate_argnums", donate_argnums)):
        if nums and not var_args and (-min(nums) > positional or max(nums) >= positional):
            raise ValueError(f"Jitted function has {what}={nums}, but only accepts "
                             f"{positional} positional arguments.")
    takes = {p.name for p in params if p.kind in (kind.POSITIONAL_OR_KEYWORD,
                                                   kind.KEYWORD_ONLY)}
    by_position = {p.name for p in params if p.kind in (kind.POSITIONAL_ONLY,
                                                         kind.VAR_POSITIONAL)}
    var_kwargs = any(p.kind is kind.VAR_KEYWORD for p in params)
    for what, names in (("static_argnames", static_argnames),
                        ("donate_argnames", donate_argnames)):
        if by_position & set(names):
            raise ValueError(f"Jitted function has invalid argnames {by_position & set(names)}"
                             f" in {what}. These are positional-only")
        if not var_kwargs and set(names) - takes:
            raise ValueError(f"Jitted function has invalid argnames {set(names) - takes} in "
                             f"{what}. Function does not take these args.")
