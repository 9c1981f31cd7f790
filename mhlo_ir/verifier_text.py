"""How the verifier's messages name things (``mhlo_ir.verifier``): an op by its name and
location, any object found where a value should be by its class and a short repr, attribute
texts shortened, and where each value of a module is defined (for "used outside the region
defining it" and such).

Every function here must not fail, whatever an edit put into the module: messages are made
from programs that are wrong.
"""

from __future__ import annotations

from .dialect import MHLO
from .errors import ModuleVerificationError
from .ir import Block, Function, Operation, Region
from .location import Location
from .ops.spec import OpSpec

__all__ = ["fail", "fail_at", "show", "text", "loc", "op_name", "types", "types_of", "where",
           "definitions"]


def fail(message: str):
    raise ModuleVerificationError(message)


def fail_at(op, message: str):
    """``fail`` about ``op``, which the error keeps (``.op``): the parser finds where in its
    text an op without a location was read."""
    e = ModuleVerificationError(message)
    e.op = op
    raise e


def show(x) -> str:
    """``x`` for a message: its class and a short repr (which must not fail either)."""
    try:
        r = repr(x)
    except Exception:  # noqa: BLE001 - any object may be found where a value should be
        r = "?"
    return f"{type(x).__name__} {r[:60]}"


def text(a) -> str:
    """An attribute's MLIR text, shortened, for a message."""
    try:
        t = a.render(MHLO)
    except Exception:  # noqa: BLE001
        return show(a)
    return t if len(t) <= 80 else t[:77] + "..."


def loc(x) -> str:
    loc = getattr(x, "location", None)
    if isinstance(loc, Location):
        try:
            return loc.render()
        except Exception:  # noqa: BLE001
            pass
    return "unknown"


def op_name(op) -> str:
    spec = getattr(op, "spec", None)
    return spec.name if isinstance(spec, OpSpec) else f"<{type(op).__name__}>"


def types(ts) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def types_of(values) -> str:
    """The values' types as ``types`` shows them, an edited value without one shown so."""
    return types(getattr(v, "type", "<no type>") for v in values)


def where(fn, op, frame=None) -> str:
    s = f"in @{fn.name}, op '{op_name(op)}' (location {loc(op)})"
    if frame is not None and frame.owner is not None:
        s += (f", in region {frame.region} of '{op_name(frame.owner)}' "
              f"(location {loc(frame.owner)})")
    return s


def definitions(module) -> dict:
    """Each value defined in ``module`` -> (function, block, where it is defined)."""
    index: dict = {}
    seen: set = set()
    for fn in module.functions:
        if not isinstance(fn, Function) or not isinstance(fn.body, Region):
            continue
        stack = [(b, None, 0) for b in reversed(fn.body.blocks)]
        while stack:
            block, owner, r = stack.pop()
            if not isinstance(block, Block) or block in seen:
                continue
            seen.add(block)
            ctx = (f" in region {r} of '{op_name(owner)}' (location {loc(owner)})"
                   if owner is not None else "")
            for i, a in enumerate(block.arguments):
                if owner is None:
                    index[a] = (fn, block, f"argument {i} of @{fn.name} (location {loc(a)})")
                else:
                    index[a] = (fn, block, f"argument {i} of region {r} of '{op_name(owner)}' "
                                           f"(location {loc(owner)}) in @{fn.name}")
            for op in block.operations:
                if not isinstance(op, Operation):
                    continue
                try:
                    results = op.results
                except Exception:  # noqa: BLE001
                    results = ()
                for k, res in enumerate(results):
                    index[res] = (fn, block, f"result {k} of '{op_name(op)}' (location "
                                             f"{loc(op)}){ctx} in @{fn.name}")
                regions = op.regions if isinstance(op.regions, (tuple, list)) else ()
                for k in range(len(regions) - 1, -1, -1):
                    blocks = getattr(regions[k], "blocks", ())
                    stack.extend((b, op, k) for b in reversed(blocks))
    return index
