"""``call_exported``: run a ``jax.export`` artifact inside the program.

The artifact's StableHLO text (``Exported.mlir_module()``) is read by mhlo_ir's parser into
our AST and merged into the module being lowered (``mhlo_ir.merge_modules``: its ``main``
becomes ``call_exported_<name>``, other functions renamed where they clash), then called as
jax's rule calls it: the platform index first when the artifact serves several platforms,
one token per ordered effect, the arguments the export kept (``module_kept_var_idx``),
converted where the caller's avals are more refined. One artifact is merged once per module,
however often it is called.

An artifact exported with Shardy (jax's default partitioner) for one device is read without
its Shardy annotations (``_without_shardy``). Refused with the reason: shape-polymorphic
artifacts (our avals are static), artifacts for other platforms, for a different number of
devices, and Shardy artifacts for several.
"""

from __future__ import annotations

import re

import numpy as np

from mhlo_ir.builder import as_results
from mhlo_ir.merge import merge_modules
from mhlo_ir.parser import parse

from ..mlir import aval_to_ir_type, register_lowering
from ..tokens import TokenSet
from .random import physical_aval



# ``%3 = sdy.sharding_constraint %2 <@mesh, [{}, {}]> : tensor<2x3xf32> loc(#loc4)``
_CONSTRAINT = re.compile(r"^(\s*)(%[\w#:.$-]+) = sdy\.sharding_constraint (%[\w#.$-]+) <.*> : "
                         r"(\S+)( loc\(.*\))?$")
_SDY_ATTRIBUTE = re.compile(r"sdy\.[\w.]+ = #sdy\.")
# Shardy's constructs (a mesh, an sdy attribute, an sdy op), not the letters in a string or
# a file name
_SHARDY = re.compile(r"^\s*sdy\.mesh\b|#sdy\.|=\s*sdy\.\w", re.M)


def _without_shardy(text: str, exported) -> str:
    """An artifact exported with Shardy (jax's default partitioner) on one device, without
    its Shardy annotations, which name no device it could be split over: the mesh
    declarations go, sharding constraints become identities (a reshape to the same type),
    and ``sdy.*`` attributes (op sharding rules, argument shardings) are left out. Our
    parser reads GSPMD's ``mhlo.sharding`` only: an artifact for several devices is
    refused."""
    if exported.nr_devices != 1:
        raise NotImplementedError(
            f"call_exported: {exported.fun_name} was exported with Shardy shardings for "
            f"{exported.nr_devices} devices; this lowering reads GSPMD shardings (export it "
            "with jax.config.update('jax_use_shardy_partitioner', False))")
    lines = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("sdy.mesh "):
            continue
        m = _CONSTRAINT.match(line)
        if m is not None:
            indent, result, operand, t, loc = m.groups()
            line = f"{indent}{result} = stablehlo.reshape {operand} : ({t}) -> {t}{loc or ''}"
        while True:
            a = _SDY_ATTRIBUTE.search(line)
            if a is None:
                break
            end = _attribute_end(line, a.end())
            start = a.start()
            if line[end:end + 2] == ", ":  # (the entry and its separator)
                end += 2
            elif line[max(0, start - 2):start] == ", ":
                start -= 2
            line = line[:start] + line[end:]
        if _SHARDY.search(line):
            raise NotImplementedError(
                f"call_exported: {exported.fun_name} uses Shardy ({stripped[:80]}...), which "
                "this lowering does not read (export it with "
                "jax.config.update('jax_use_shardy_partitioner', False))")
        lines.append(line)
    return "\n".join(lines)


def _attribute_end(line: str, i: int) -> int:
    """Where the ``#sdy.name<...>`` attribute whose name ends before ``i`` ends: after its
    balanced angle brackets (``->`` inside is an arrow, not a bracket; strings skipped)."""
    while i < len(line) and (line[i].isalnum() or line[i] in "_."):
        i += 1
    depth = 0
    while i < len(line):
        c = line[i]
        if c == '"':
            i += 1
            while i < len(line) and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
        elif c == "<":
            depth += 1
        elif c == ">" and line[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _merged(ctx, exported) -> str:
    mctx = ctx.module_context
    key = ("call_exported", id(exported))
    hit = mctx.cached_primitive_lowerings.get(key)
    if hit is not None and hit[0] is exported:
        return hit[1]
    shapes = [a.shape for a in (*exported.in_avals, *exported.out_avals)]
    if any(not isinstance(d, (int, np.integer)) for shape in shapes for d in shape):
        raise NotImplementedError(f"call_exported: {exported.fun_name} was exported with "
                                  "symbolic shapes; this lowering takes static shapes only")
    text = exported.mlir_module()
    if _SHARDY.search(text):
        text = _without_shardy(text, exported)
    module = parse(text, source=f"<exported {exported.fun_name}>")
    name = merge_modules(mctx.module, module, f"call_exported_{exported.fun_name}")
    mctx.cached_primitive_lowerings[key] = (exported, name)  # keeps exported alive
    return name


def _call_exported(ctx, *args, exported):
    platform = ctx.module_context.platform
    if platform not in exported.platforms:
        raise ValueError(f"call_exported: {exported.fun_name} was exported for "
                         f"{list(exported.platforms)}, not for {platform!r}")
    axis = ctx.module_context.axis_context
    mesh = getattr(axis, "mesh", None)
    devices = mesh.size if mesh is not None else (getattr(axis, "num_devices", 1) or 1)
    if exported.nr_devices not in (1, devices):
        raise ValueError(f"call_exported: {exported.fun_name} was exported for "
                         f"{exported.nr_devices} devices and is called on {devices}")
    b = ctx.builder
    callee = ctx.module_context.module.lookup(_merged(ctx, exported))
    operands = []
    if len(exported.platforms) > 1:
        index = np.int32(exported.platforms.index(platform))
        operands.append(b.constant(np.asarray(index, callee.arg_types[0].dtype)))
    effects = list(exported.ordered_effects)
    operands += [ctx.tokens_in.get(e) for e in effects]
    kept = set(exported.module_kept_var_idx)
    for i, (x, aval) in enumerate(zip(args, exported.in_avals)):
        if i not in kept:
            continue
        want = aval_to_ir_type(physical_aval(aval))
        operands.append(x if x.type == want else b.convert(x, want.element_type))
    outs = list(as_results(b.call(callee, operands)))
    if effects:
        ctx.set_tokens_out(ctx.tokens_in.update_tokens(TokenSet(zip(effects, outs))))
        outs = outs[len(effects):]
    results = []
    for y, aval in zip(outs, ctx.avals_out):
        want = aval_to_ir_type(physical_aval(aval))
        results.append(y if y.type == want else b.convert(y, want.element_type))
    return results


register_lowering("call_exported", _call_exported)
