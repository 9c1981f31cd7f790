"""What XLA reads from a function's argument and result attributes, checked in Python
before jaxlib sees it (measured with jaxlib 0.10.2; docs/findings.md): an ``mhlo.sharding``
that fits its value, ``tf.aliasing_output`` naming a result of a tensor argument, no result
named twice, ``mhlo.layout_mode`` and ``mhlo.memory_kind`` values XLA can read. The verifier
asks it of every function (``Module.verify``); all but the sharding and an alias's result
index are the entry function's alone (``main``): jaxlib ignores them on any other, where
jax itself writes layout modes of its private functions."""

from __future__ import annotations

import re

from .attributes import ArrayAttr, BoolAttr, DenseArrayAttr
from .sharding_text import sharding_problem
from .types import TensorType

__all__ = ["MEMORY_KINDS", "entry_problem", "alias_problem", "layout_mode_problem",
           "module_attribute_problem",
           "shared_alias"]

# Every memory kind a PJRT client names (device memory, and host memory pinned for the
# device or not); a backend may take fewer of them. XLA:CPU takes all three and refuses
# others ("Unknown memory kind host").
MEMORY_KINDS = ("device", "pinned_host", "unpinned_host")

# An XLA layout as its ParseLayout reads it: ``{minor_to_major}``, then maybe a colon and
# attributes (``T(8,128)`` tiles, ``E(4)`` an element size, ``S(1)`` a memory space...), each
# capital letters and parenthesized lists. Which attributes a backend takes is its own
# (XLA:CPU takes E, and T on a result but not on an argument), so only their form is checked.
_LAYOUT = re.compile(r"\s*\{\s*(\d+(?:\s*,\s*\d+)*)?\s*"
                     r"(?::\s*(?:[A-Z#]+(?:\([^()]*\))+\s*)*)?\}\s*")


def _string(attr):
    v = getattr(attr, "value", None)
    return v if isinstance(v, str) else None


def layout_mode_problem(value: str, t) -> str | None:
    """Why XLA cannot read ``value`` as the ``mhlo.layout_mode`` of a value of type ``t``, or
    None: "default", "auto", or a layout whose minor_to_major orders ``t``'s dimensions
    ("Error parsing user-specified layout mode", "layout minor_to_major field contains 1
    elements, but shape has 2 dimensions" otherwise, on every backend)."""
    if value in ("default", "auto"):
        return None
    m = _LAYOUT.fullmatch(value)
    if m is None:
        return ("is neither \"default\", \"auto\" nor an XLA layout such as \"{1,0}\" "
                "(minor-to-major dimensions, in braces)")
    order = [int(d) for d in m.group(1).split(",")] if m.group(1) else []
    if isinstance(t, TensorType) and sorted(order) != list(range(t.rank)):
        return (f"lists dimensions {order}, expected an order of {list(range(t.rank))} "
                f"(the dimensions of {t})")
    return None


# Module attributes jaxlib's conversion to HLO reads in a form it does not check (measured on
# 0.10.2): a malformed mhlo.input_output_alias, or layouts of another count than @main's
# arguments or results, segfault it; the others fail it. Taken in the forms XLA's own
# conversion back from HLO writes them; for anything else, what to write instead.
_MODULE_READ = {
    "mhlo.input_output_alias": "alias an argument with a result through @main's argument "
                               "attribute tf.aliasing_output (Function.set_arg_attr)",
    "mhlo.cross_program_prefetches": "mark the prefetched argument with a copy's "
                                     "cross_program_prefetch_index",
    "mhlo.xla_entry_computation_parameter_layouts": "give @main's arguments mhlo.layout_mode",
    "mhlo.xla_entry_computation_result_layout": "give @main's results mhlo.layout_mode",
    "mhlo.xla_entry_computation_parameter_tiles": "give @main's arguments mhlo.layout_mode",
    "mhlo.xla_entry_computation_result_tiles": "give @main's results mhlo.layout_mode",
}


def module_attribute_problem(name: str, attr, module) -> str | None:
    """Why module attribute ``name`` = ``attr`` of ``module`` is not taken, or None: of
    ``_MODULE_READ``, the empty list, and the aliases and layouts as XLA writes them (one
    dense layout per @main argument or result; aliases of an argument number and a result
    index in range, ``may_alias``/``must_alias``)."""
    instead = _MODULE_READ.get(name)
    if instead is None or (isinstance(attr, ArrayAttr) and not attr.elements):
        return None
    from .dense import DenseElementsAttr
    from .ops.custom_call import IndexLayout  # (the op table's: imported when needed)
    main = module.lookup("main")
    why = None
    if main is None or not isinstance(attr, ArrayAttr):
        why = "not a list" if main is not None else "the module has no @main"
    elif name == "mhlo.input_output_alias":
        why = _alias_entries_problem(attr.elements, len(main.arg_types),
                                     len(main.result_types or ()))
    elif name.startswith("mhlo.xla_entry_computation_"):
        params = "parameter" in name
        n = len(main.arg_types) if params else len(main.result_types or ())
        what = "argument" if params else "result"
        if name.endswith("_tiles"):  # (XLA writes [[], ...]: no tiles, one list per value)
            if len(attr.elements) != n or any(not isinstance(e, ArrayAttr) or e.elements
                                              for e in attr.elements):
                why = f"not one empty list per @main {what} ({n})"
        elif len(attr.elements) != n or not all(
                isinstance(e, (IndexLayout, DenseElementsAttr)) for e in attr.elements):
            why = f"not one dense layout per @main {what} ({n})"
    else:
        why = "not empty"
    if why is None:
        return None
    return (f"module attribute {name}: {why}; jaxlib's conversion to HLO reads it unchecked "
            f"(a malformed {name} crashes or fails it): {instead}")


def _alias_entries_problem(entries, n_args: int, n_results: int) -> str | None:
    """What is wrong with ``mhlo.input_output_alias`` entries, or None: each
    ``{alias = {kind = "may_alias", parameter_index = array<i64>, parameter_number = 0 :
    i64}, output_index = array<i64: 0>}`` with numbers in range."""
    for i, e in enumerate(entries):
        d = dict(getattr(e, "items", None) or ())
        alias = dict(getattr(d.get("alias"), "items", None) or ())
        kind = getattr(alias.get("kind"), "value", None)
        number = getattr(alias.get("parameter_number"), "value", None)
        index = alias.get("parameter_index")
        out = d.get("output_index")
        arrays = isinstance(index, DenseArrayAttr) and isinstance(out, DenseArrayAttr)
        if set(d) != {"alias", "output_index"} or \
                set(alias) != {"kind", "parameter_index", "parameter_number"} or \
                kind not in ("may_alias", "must_alias") or number.__class__ is not int or \
                not arrays:
            return (f"entry {i} is not {{alias = {{kind = \"may_alias\", parameter_index = "
                    "array<i64>, parameter_number = N : i64}, output_index = array<i64: K>}")
        if not 0 <= number < n_args:
            return f"entry {i} names argument {number}, but @main takes {n_args}"
        if out.values and not 0 <= out.values[0] < max(n_results, 1):
            return f"entry {i} names result {out.values[0]}, but @main returns {n_results}"
    return None


def _replication_problem(attr, t) -> str | None:
    """``mhlo.parameter_replication``: one bool per leaf buffer of the argument (a tensor's
    one; jaxlib: "arg 0 has 1 leaf_buffers, but parameter_replication expects 2")."""
    leaves = _leaf_count(t)
    if not isinstance(attr, ArrayAttr) or not all(isinstance(e, BoolAttr) for e in attr.elements):
        return (f"mhlo.parameter_replication must be a list of bools (one per leaf buffer of "
                f"{t}: {leaves}), got {attr}")
    if len(attr.elements) != leaves:
        return (f"mhlo.parameter_replication lists {len(attr.elements)} bools, but {t} has "
                f"{leaves} leaf buffer{'s' if leaves != 1 else ''}")
    return None


def _leaf_count(t) -> int:
    elements = getattr(t, "types", None)
    return 1 if elements is None else sum(_leaf_count(e) for e in elements)


def entry_problem(attrs, t, entry: bool = True) -> str | None:
    """Why the attributes ``attrs`` of an argument or result of type ``t`` are not what XLA
    can read, or None; outside the ``entry`` function, the sharding's fit only."""
    sharding = attrs.get("mhlo.sharding")
    if sharding is not None and (why := sharding_problem(sharding, t)) is not None:
        return why
    if not entry:
        return None
    replication = attrs.get("mhlo.parameter_replication")
    if replication is not None and not (isinstance(replication, ArrayAttr) and
                                        not replication.elements) and \
            (why := _replication_problem(replication, t)) is not None:
        return why  # ([]: not set, as jaxlib takes it)
    layout = attrs.get("mhlo.layout_mode")
    if layout is not None:
        value = _string(layout)
        why = "is not a string" if value is None else layout_mode_problem(value, t)
        if why is not None:
            return f"mhlo.layout_mode {value if value is not None else layout!r} {why}"
    kind = attrs.get("mhlo.memory_kind")
    if kind is not None and _string(kind) not in MEMORY_KINDS:
        value = _string(kind)
        return (f"mhlo.memory_kind {kind if value is None else value!r} is not a memory kind; XLA "
                f"knows {', '.join(MEMORY_KINDS)} (a backend may take fewer)")
    return None


def alias_problem(i: int, attrs, args, results, entry: bool = True) -> str | None:
    """Why argument ``i``'s ``tf.aliasing_output`` (in ``attrs``) names no result XLA can
    alias with it, or None: a result index in range, and in the ``entry`` function no
    jax.buffer_donor beside it and a tensor on both sides (XLA aliases arrays: "RET_CHECK
    failure ... param_subshape.IsArray()" for a token)."""
    alias = attrs.get("tf.aliasing_output")
    if alias is None:
        return None
    k = getattr(alias, "value", None)
    if k.__class__ is not int or not 0 <= k < len(results):
        return (f"tf.aliasing_output {k!r} names no result (the function returns "
                f"{len(results)}: 0 to {len(results) - 1})")
    if not entry:
        return None
    if getattr(attrs.get("jax.buffer_donor"), "value", False) is True:
        return (f"tf.aliasing_output {k} and jax.buffer_donor both given: jaxlib takes an "
                "argument aliased to a result for no other donation (\"already aliased with "
                "one output\"); keep one")
    if not isinstance(args[i], TensorType) or not isinstance(results[k], TensorType):
        return (f"tf.aliasing_output {k} aliases {args[i]} with result {k}, {results[k]}: "
                "XLA aliases tensors only")
    return None


def shared_alias(arg_attrs) -> str | None:
    """Two arguments aliased to one result (jaxlib: "output index {} is already aliased with
    param 0"), said, or None."""
    seen = {}
    for i, attrs in enumerate(arg_attrs or ()):
        k = getattr((attrs or {}).get("tf.aliasing_output"), "value", None)
        if k is None:
            continue
        if k in seen:
            return (f"arguments {seen[k]} and {i} are both aliased (tf.aliasing_output) to "
                    f"result {k}; a result can reuse one argument's buffer")
        seen[k] = i
    return None

