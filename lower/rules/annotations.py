"""Rules for primitives that annotate a program rather than compute, as jax 0.10 lowers them
on CPU:

- ``multiple_of`` and ``max_contiguous`` (Pallas's hints to its kernel compilers about a
  value, met in interpreted kernels): the value itself;
- ``check`` (checkify's): with ``debug=True`` (``checkify.debug_check``) nothing, as jax's
  rule (a debug check only acts once checkify discharges it); otherwise jax's refusal, a
  check that ``checkify.checkify`` did not functionalize;
- ``shard_alike``: each operand through a side-effecting ``Sharding`` custom call of one
  shard group (``{unknown shard_as N}``, jax's GSPMD lowering), so that XLA's partitioner
  gives both one sharding; ``N`` counts the module's groups from 0;
- ``xla_metadata_value`` (``set_xla_metadata(x, key=value)``): the value, its defining op
  given the keys as ``mhlo.frontend_attributes`` (string values; ones it has already win);
- ``xla_metadata_call`` (``scheduling_group``...): a call of the function, the call given
  the keys as ``mhlo.frontend_attributes``.
"""

from __future__ import annotations

import itertools

import mhlo_ir as hlo

from ..mlir import call_lowering, register_lowering

register_lowering("multiple_of", lambda ctx, x, **_: [x])
register_lowering("max_contiguous", lambda ctx, x, **_: [x])


def _check(ctx, *args, err_tree, debug):
    if debug:
        return []
    raise ValueError("Cannot abstractly evaluate a checkify.check which was not "
                     "functionalized. This probably means you tried to stage "
                     "(jit/scan/pmap/...) a `check` without functionalizing it through "
                     "`checkify.checkify`.")  # (jax's words)


register_lowering("check", _check)

_SHARD_GROUPS = object()  # the module's shard-group counter, in its context's cache


def _shard_alike(ctx, x, y):
    cache = ctx.module_context.cached_primitive_lowerings
    counter = cache.setdefault(_SHARD_GROUPS, itertools.count())
    sharding = f"{{unknown shard_as {next(counter)}}}"
    return [_grouped(ctx.builder, v, sharding) for v in (x, y)]


def _grouped(b, v, sharding):
    out = b.custom_call("Sharding", [v], [v.type], has_side_effect=True)
    out.set_attr("mhlo.sharding", sharding)
    return out


register_lowering("shard_alike", _shard_alike)


def _frontend_attributes(metadata) -> dict:
    """``metadata`` (key, value pairs) as frontend attribute strings, as jax writes them
    (booleans as ``true``/``false``)."""
    return {str(k): hlo.StringAttr(str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in metadata}


def _xla_metadata_value(ctx, x, *, xla_metadata_kvs):
    owner = x if isinstance(x, hlo.Operation) else getattr(x, "owner", None)
    merged = _frontend_attributes(xla_metadata_kvs)
    if merged and isinstance(owner, hlo.Operation):
        existing = (owner.attributes or {}).get("mhlo.frontend_attributes")
        if existing is not None:
            merged.update(dict(existing.items))
        owner.set_attr("mhlo.frontend_attributes", hlo.DictionaryAttr(merged))
    return [x]


register_lowering("xla_metadata_value", _xla_metadata_value)


def _xla_metadata_call(ctx, *args, jaxpr, **meta):
    for k, v in meta.items():
        if not isinstance(v, str):  # (jax's rule takes strings alone)
            raise NotImplementedError(f"mlir attr handler for {type(v)=}")
    block = ctx.builder.block
    n = len(block.operations)
    outs = call_lowering(ctx, "xla_metadata_call", jaxpr, *args)
    (call,) = [op for op in block.operations[n:] if op.spec.name == "func.call"]
    call.set_attr("mhlo.frontend_attributes",
                  hlo.DictionaryAttr(_frontend_attributes(meta.items())))
    return outs


register_lowering("xla_metadata_call", _xla_metadata_call)
