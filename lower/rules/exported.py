"""``call_exported``: run a ``jax.export`` artifact inside the program.

The artifact's StableHLO text (``Exported.mlir_module()``) is read by mhlo_ir's parser into
our AST and merged into the module being lowered (``mhlo_ir.merge_modules``: its ``main``
becomes ``call_exported_<name>``, other functions renamed where they clash), then called as
jax's rule calls it: the platform index first when the artifact serves several platforms,
one token per ordered effect, the arguments the export kept (``module_kept_var_idx``),
converted where the caller's avals are more refined. One artifact is merged once per module,
however often it is called.

Refused with the reason: shape-polymorphic artifacts (our avals are static), artifacts for
other platforms, and artifacts for a different number of devices.
"""

from __future__ import annotations

import numpy as np

from mhlo_ir.builder import as_results
from mhlo_ir.merge import merge_modules
from mhlo_ir.parser import parse

from ..mlir import aval_to_ir_type, register_lowering
from ..tokens import TokenSet
from .random import physical_aval



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
    module = parse(exported.mlir_module(), source=f"<exported {exported.fun_name}>")
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
