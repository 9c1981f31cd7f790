"""A small, dependency-free jaxpr core: what the lowering consumes.

The names and fields follow JAX's (``ShapedArray``, ``Var``, ``Literal``, ``JaxprEqn``,
``Jaxpr``, ``ClosedJaxpr``, primitive names and params as in jax 0.10) so that real JAX jaxprs,
which have the same shape, can be lowered by the same code: the lowering only reads attributes
(duck typing) and never checks these classes.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

__all__ = ["ShapedArray", "AbstractToken", "abstract_token", "Var", "Literal", "DropVar",
           "JaxprEqn", "Jaxpr", "ClosedJaxpr", "Primitive", "SourceInfo", "Frame",
           "NameStack", "Effect", "OrderedEffect", "new_jaxpr_eqn"]


class ShapedArray:
    """An abstract array: shape, numpy dtype, and whether its dtype is weak (a Python
    scalar's, which yields to the other operand's in promotion)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: Sequence[int], dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self) -> "ShapedArray":
        return self.update(weak_type=False) if self.weak_type else self

    def __eq__(self, other):
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self) -> str:
        return f"{self.dtype.name}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        return f"ShapedArray({self.str_short()}{', weak_type=True' if self.weak_type else ''})"


class AbstractToken:
    """The abstract value of an effect token."""

    def __repr__(self):
        return "AbstractToken()"

    def str_short(self) -> str:
        return "Tok"


abstract_token = AbstractToken()

_var_ids = itertools.count()


class Var:
    """A variable of a jaxpr. Compared by identity."""

    __slots__ = ("aval", "count", "suffix")

    def __init__(self, aval, suffix: str = ""):
        self.aval = aval
        self.count = next(_var_ids)
        self.suffix = suffix

    def __repr__(self):
        return f"Var({self.count}:{self.aval.str_short()})"


class DropVar(Var):
    """An output nobody reads."""

    def __repr__(self):
        return "_"


class Literal:
    """A constant operand written inline in an equation."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val!r})"


class Effect:
    """A side effect of an equation. Ordered effects are threaded as tokens."""


class OrderedEffect(Effect):
    """An effect whose occurrences must stay in program order (e.g. printing)."""

    def __init__(self, name: str = "ordered"):
        self.name = name

    def __repr__(self):
        return f"OrderedEffect({self.name!r})"


class Frame:
    """One frame of user code: where an equation came from."""

    __slots__ = ("file_name", "function_name", "start_line", "start_column")

    def __init__(self, file_name, function_name, start_line, start_column=0):
        self.file_name = file_name
        self.function_name = function_name
        self.start_line = start_line
        self.start_column = start_column


class NameStack:
    """Names of the transformations and scopes an equation is nested in (``jit(f)/scope``)."""

    __slots__ = ("stack",)

    def __init__(self, stack: tuple = ()):
        self.stack = tuple(stack)

    def extend(self, name) -> "NameStack":
        return NameStack(self.stack + ((name,) if isinstance(name, str) else tuple(name)))

    def __add__(self, other: "NameStack") -> "NameStack":
        return NameStack(self.stack + other.stack)

    def __str__(self):
        # Entries are names, or JAX's Scope/Transform entries when a JAX name stack was
        # appended: those render themselves as JAX does (a transform wraps the scope inside
        # it: ``jvp(f)``).
        parts: list = []
        for entry in reversed(self.stack):
            if isinstance(entry, str):
                parts.append(entry)
            else:
                entry.wrap(parts)
        return "/".join(reversed(parts))

    def __len__(self):
        return len(self.stack)


class SourceInfo:
    """Where an equation came from: a user frame (or None) and its name stack."""

    __slots__ = ("frame", "name_stack")

    def __init__(self, frame: Frame | None = None, name_stack: NameStack = NameStack()):
        self.frame = frame
        self.name_stack = name_stack

    def replace(self, name_stack=None) -> "SourceInfo":
        return SourceInfo(self.frame, self.name_stack if name_stack is None else name_stack)


class Primitive:
    """A named operation; ``multiple_results`` says whether it returns a list."""

    def __init__(self, name: str, multiple_results: bool = False):
        self.name = name
        self.multiple_results = multiple_results

    def __repr__(self):
        return self.name


class JaxprEqn:
    """``outvars = primitive[params](invars)``."""

    __slots__ = ("invars", "outvars", "primitive", "params", "effects", "source_info")

    def __init__(self, invars, outvars, primitive, params, effects=frozenset(),
                 source_info: SourceInfo | None = None):
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.primitive = primitive
        self.params = dict(params)
        self.effects = frozenset(effects)
        self.source_info = source_info or SourceInfo()

    def __repr__(self):
        return f"{self.outvars} = {self.primitive.name}[{self.params}] {self.invars}"


new_jaxpr_eqn = JaxprEqn


class Jaxpr:
    """A first-order program: constant variables, inputs, equations and outputs."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "effects")

    def __init__(self, constvars, invars, outvars, eqns, effects=frozenset()):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.effects = frozenset(effects)

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __repr__(self):
        from .pretty import pp_jaxpr  # lazy: pretty printing is not needed to lower
        return pp_jaxpr(self)


class ClosedJaxpr:
    """A jaxpr with values for its constant variables."""

    __slots__ = ("jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        self.jaxpr = jaxpr
        self.consts = list(consts)

    @property
    def in_avals(self):
        return self.jaxpr.in_avals

    @property
    def out_avals(self):
        return self.jaxpr.out_avals

    @property
    def effects(self):
        return self.jaxpr.effects

    @property
    def eqns(self):
        return self.jaxpr.eqns

    def __repr__(self):
        return repr(self.jaxpr)
