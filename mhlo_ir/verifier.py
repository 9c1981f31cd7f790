"""Whole-module checks in pure Python, run before any text reaches jaxlib.

Builders already check each op as it is made; this pass catches what only the whole module
shows: values used outside the region that defines them (or before their definition), blocks
without terminators, terminators that are not last, returns that disagree with the function
type, calls to missing functions or with the wrong types, and ops edited after building.
"""

from __future__ import annotations

from .attributes import ArrayAttr, DictionaryAttr, SymbolRefAttr
from .errors import ModuleVerificationError, OpBuildError
from .ir import Function, Module

__all__ = ["verify_module"]


def _where(fn: Function, op) -> str:
    loc = op.location.render() if op.location is not None else "unknown"
    return f"in @{fn.name}, op '{op.spec.name}' (location {loc})"


def verify_module(module: Module) -> None:
    """Raise ModuleVerificationError describing the first problem found."""
    seen_names = set()
    for fn in module.functions:
        if fn.name in seen_names:
            raise ModuleVerificationError(f"symbol @{fn.name} is defined twice")
        seen_names.add(fn.name)
    for fn in module.functions:
        if fn.result_types is None:
            raise ModuleVerificationError(f"function @{fn.name} has no return")
        if fn.res_attrs is not None and len(fn.res_attrs) > len(fn.result_types):
            raise ModuleVerificationError(
                f"function @{fn.name} has result attributes for {len(fn.res_attrs)} results but "
                f"returns {len(fn.result_types)}")
        _verify_region(module, fn, fn.body, set(), top=True)


def _verify_region(module, fn, region, visible: set, top: bool, closed_by=None) -> None:
    if not region.blocks:
        raise ModuleVerificationError(f"in @{fn.name}: a region has no blocks")
    if top and len(region.blocks) != 1:
        raise ModuleVerificationError(
            f"function @{fn.name} has {len(region.blocks)} blocks; functions here take exactly "
            "one (there are no branch ops)")
    for block in region.blocks:
        scope = set(visible)
        scope.update(block.arguments)
        ops = block.operations
        if not ops:
            raise ModuleVerificationError(
                f"in @{fn.name}: a block has no terminator (it is empty)")
        for i, op in enumerate(ops):
            spec = op.spec
            for j, v in enumerate(op.operands):
                if v not in scope:
                    if closed_by is not None and v in closed_by[1]:
                        raise ModuleVerificationError(
                            f"{_where(fn, op)}: operand {j} ({v.type}) is captured from outside "
                            f"the region of '{closed_by[0].spec.name}', whose regions may use "
                            "only their own arguments (pass the value in, or broadcast it)")
                    raise ModuleVerificationError(
                        f"{_where(fn, op)}: operand {j} ({v.type}) is used before its definition "
                        "or outside the region that defines it")
            last = i == len(ops) - 1
            if spec.terminator and not last:
                raise ModuleVerificationError(
                    f"{_where(fn, op)}: a terminator must be the last op of its block")
            if last and not spec.terminator:
                raise ModuleVerificationError(
                    f"{_where(fn, op)}: the block does not end with a return")
            if spec.terminator:
                expected = "func.return" if top else "return"
                if spec.name != expected:
                    raise ModuleVerificationError(
                        f"{_where(fn, op)}: expected '{expected}' to end this "
                        f"{'function' if top else 'region'}")
                if top:
                    got = tuple(v.type for v in op.operands)
                    if got != fn.result_types:
                        raise ModuleVerificationError(
                            f"{_where(fn, op)}: returns ({', '.join(map(str, got))}) but "
                            f"@{fn.name} is declared to return "
                            f"({', '.join(map(str, fn.result_types))})")
            types = tuple(v.type for v in op.operands)
            attrs = op.attributes or {}
            results = tuple(r.type for r in op.results)
            try:
                spec.result_types(types, attrs, results, op.regions)
            except OpBuildError as e:
                raise ModuleVerificationError(f"in @{fn.name}: {e}") from None
            if spec.name == "func.call":
                _verify_call(module, fn, op)
            elif op.attributes:
                _verify_symbols(module, fn, op)
            for r in op.regions:
                if len(r.blocks) != 1:
                    raise ModuleVerificationError(
                        f"{_where(fn, op)}: a region has {len(r.blocks)} blocks; MHLO regions "
                        "take exactly one")
                if spec.closed_regions:
                    _verify_region(module, fn, r, set(), top=False, closed_by=(op, scope))
                else:
                    _verify_region(module, fn, r, scope, top=False)
            scope.update(op.results)


def _symbol_refs(attr):
    if isinstance(attr, SymbolRefAttr):
        yield attr
    elif isinstance(attr, ArrayAttr):
        for a in attr.elements:
            yield from _symbol_refs(a)
    elif isinstance(attr, DictionaryAttr):
        for _, a in attr.items:
            yield from _symbol_refs(a)


def _verify_symbols(module, fn, op) -> None:
    """Every symbol an op refers to (custom_call's called_computations...) must exist: jaxlib
    does not always diagnose a dangling one (0.10.2 crashes on some)."""
    for name, attr in op.attributes.items():
        for ref in _symbol_refs(attr):
            if module.lookup(ref.name) is None:
                raise ModuleVerificationError(
                    f"{_where(fn, op)}: attribute {name} refers to @{ref.name}, which is not "
                    "defined in the module")


def _verify_call(module, fn, op) -> None:
    name = op.attributes["callee"].name
    callee = module.lookup(name)
    if callee is None:
        raise ModuleVerificationError(f"{_where(fn, op)}: calls @{name}, which is not defined")
    args = tuple(v.type for v in op.operands)
    if args != callee.arg_types:
        raise ModuleVerificationError(
            f"{_where(fn, op)}: passes ({', '.join(map(str, args))}) to @{name}, which takes "
            f"({', '.join(map(str, callee.arg_types))})")
    results = tuple(r.type for r in op.results)
    if callee.result_types is not None and results != callee.result_types:
        raise ModuleVerificationError(
            f"{_where(fn, op)}: expects ({', '.join(map(str, results))}) from @{name}, which "
            f"returns ({', '.join(map(str, callee.result_types))})")
