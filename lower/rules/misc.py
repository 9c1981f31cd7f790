"""Rules for jax 0.10's remaining odd primitives, as jax lowers them on CPU:

- value identities: ``device_put`` (each operand; one module runs on one set of devices, and
  a copy is XLA's business), ``tie`` (its second operand), ``reshard`` and
  ``layout_constraint`` (shardings live in types and layouts do not change values);
  ``inspect_sharding`` and ``dce_sink`` (unless ``prevent_mlir_dce``) emit nothing (the
  inspection callback, which jax has XLA's partitioner call with the chosen sharding, is
  not called);
- ``empty`` / ``empty2``: zeros of the result aval (jax's CPU rule; ``AllocateBuffer`` is for
  TPU and GPU);
- ``broadcast_to`` / ``stack`` / ``unstack``: broadcast, concatenation of reshapes, slices;
- bodies lowered inline: ``custom_vmap_call`` (``call``), ``linear_call`` (``callee``),
  ``custom_partitioning`` (``call``, on one device or fully manual, as jax does) and
  ``custom_linear_solve`` (``jaxprs.solve`` on its constants and the right-hand side);
  ``call`` (the core call primitive) becomes a call of a private function;
- ``composite``: an ``mhlo.composite`` whose decomposition is the lowered ``jaxpr``;
- ``ffi_call``: a ``custom_call`` with the params' attributes as an API 4 backend_config;
- ``shape_assertion``: jax's side-effecting ``custom_call @shape_assertion``;
- ``unreachable``: raises at lowering, as jax's rule does;
- ``approx_top_k``: jax's CPU fallback computes exact top-k: a sort along the reduction
  dimension with the indices carried along, then the leading slice;
- ``symmetric_product`` (``alpha * a @ a^T + beta * c``) and ``cholesky_update`` (Givens
  rotations, unrolled as jax's ``lower_fun`` rule unrolls them);
- ``to_edtype`` / ``from_edtype``: identities (an extended dtype's value is its physical
  representation);
- ``stage``: its operand;
- ``scaled_dot``: ``composite "xla.scaled_dot"`` decomposing to jax's bfloat16 product;
- ``ragged_dot_general``: jax's decomposition (``_ragged_dot_general_impl``) into masks and
  one dot_general.
"""

from __future__ import annotations

import attrs
import numpy as np

from mhlo_ir import (ArrayAttr, Attribute, BoolAttr, DenseElementsAttr, DictionaryAttr,
                     FloatAttr, IntegerAttr, OutputOperandAlias, StringAttr)
from mhlo_ir.builder import as_results
from mhlo_ir.dtypes import from_numpy

from .. import lax as L
from ..axis_context import ShardingContext, SPMDAxisContext
from ..core import ClosedJaxpr
from ..helpers import full_like, lower_closed
from ..mlir import (aval_to_ir_type, call_lowering, lower_fun, lower_jaxpr_to_fun,
                    register_lowering)
from .decompositions import IndexLayout
from .linalg import _precision_config


def _inline(ctx, closed, args) -> list:
    outs, tokens = lower_closed(ctx.body_context(), ctx.builder, closed, ctx.tokens_in, args)
    ctx.set_tokens_out(tokens)
    return outs


def _closed(jaxpr):
    return jaxpr if hasattr(jaxpr, "consts") else ClosedJaxpr(jaxpr, [])


# -- identities and no-ops --------------------------------------------------------------------

register_lowering("device_put", lambda ctx, *xs, **_: list(xs))
register_lowering("tie", lambda ctx, x, y: [y])
register_lowering("reshard", lambda ctx, x, **_: [x])
register_lowering("layout_constraint", lambda ctx, x, **_: [x])
register_lowering("inspect_sharding", lambda ctx, x, **_: [])
# jax.experimental.multihost_utils: a process's local array viewed as (part of) the global
# one and back; one program's values do not change.
register_lowering("host_local_array_to_global_array", lambda ctx, x, **_: [x])
register_lowering("global_array_to_host_local_array", lambda ctx, x, **_: [x])


def _dce_sink(ctx, x, *, prevent_mlir_dce=False):
    """Nothing, unless MLIR's dead-code elimination must keep ``x``: then jax's
    side-effecting FFI call that uses it."""
    if prevent_mlir_dce:
        ctx.builder.custom_call("dce_sink", [x], [], api_version=4, has_side_effect=True,
                                backend_config=DictionaryAttr({}))
    return []


register_lowering("dce_sink", _dce_sink)


def _zeros(ctx, **_):
    return [full_like(ctx.builder, 0, aval_to_ir_type(ctx.avals_out[0]))]


register_lowering("empty", _zeros)
register_lowering("empty2", _zeros)


# -- shapes -------------------------------------------------------------------------------------

def _broadcast_to(ctx, x, *, shape):
    """numpy broadcasting: trailing dimensions align, size-1 dimensions expand."""
    rank = len(x.type.shape)
    return [ctx.builder.broadcast_in_dim(x, tuple(shape), range(len(shape) - rank, len(shape)))]


register_lowering("broadcast_to", _broadcast_to)


def _stack(ctx, *xs, axis):
    b = ctx.builder
    out_shape = ctx.avals_out[0].shape
    piece = out_shape[:axis] + (1,) + out_shape[axis + 1:]
    return [b.concatenate([b.reshape(x, piece) for x in xs], axis)]


def _unstack(ctx, x, *, axis):
    b = ctx.builder
    shape = list(x.type.shape)
    outs = []
    for i, aval in enumerate(ctx.avals_out):
        start = [0] * len(shape)
        limit = list(shape)
        start[axis], limit[axis] = i, i + 1
        outs.append(b.reshape(b.slice(x, start, limit), aval.shape))
    return outs


register_lowering("stack", _stack)
register_lowering("unstack", _unstack)


# -- bodies ----------------------------------------------------------------------------------

def _call(ctx, *args, call_jaxpr, **_):
    return call_lowering(ctx, "core_call", _closed(call_jaxpr), *args)


register_lowering("call", _call)
register_lowering("custom_vmap_call", lambda ctx, *args, call, **_: _inline(ctx, call, args))
register_lowering("linear_call", lambda ctx, *args, callee, **_: _inline(ctx, callee, args))


def _custom_partitioning(ctx, *args, call, **_):
    """The body inline where nothing is left to partition: one device, or inside a region
    manual over every mesh axis (jax's rule does the same). Across several devices XLA's
    partitioner would call back into the Python ``partition`` rule, which a serialized
    module cannot."""
    ac = ctx.module_context.axis_context
    devices = 1
    if isinstance(ac, SPMDAxisContext):
        if set(ac.manual_axes) != set(ac.mesh.axis_names):
            devices = int(np.size(ac.mesh.devices))
    elif isinstance(ac, ShardingContext):
        devices = ac.num_devices
    if devices > 1:
        raise NotImplementedError(
            f"custom_partitioning over {devices} devices needs XLA to call the Python "
            "partition rule back; lower it on one device or inside a fully manual shard_map")
    return _inline(ctx, call, args)


register_lowering("custom_partitioning", _custom_partitioning)


def _custom_linear_solve(ctx, *args, const_lengths, jaxprs):
    """Operands are the matvec, vecmat, solve and transpose_solve constants, then b."""
    start = const_lengths.matvec + const_lengths.vecmat
    consts = args[start:start + const_lengths.solve]
    b = args[sum(const_lengths):]
    return _inline(ctx, jaxprs.solve, [*consts, *b])


register_lowering("custom_linear_solve", _custom_linear_solve)


@attrs.frozen
class ElementTypeAttr(Attribute):
    """An element type as an attribute (``d = f32``): how jax writes a dtype parameter."""

    element_type: object

    def render(self, dialect=None) -> str:
        return self.element_type.name


def attribute(v):
    """A parameter value as jax's ``ir_attribute`` writes it: numpy scalars keep their type,
    Python ints are i64, floats f64, arrays dense, dtypes types."""
    if isinstance(v, (bool, np.bool_)):
        return BoolAttr(bool(v))
    if hasattr(v, "val") and isinstance(getattr(v, "val"), np.ndarray):  # HashableArray
        v = v.val
    if isinstance(v, np.ndarray) and v.ndim:
        return DenseElementsAttr.from_array(v)
    if isinstance(v, (np.generic, np.ndarray)):
        et = from_numpy(v.dtype)
        if et.kind == "float":
            return FloatAttr(float(v), et)
        return IntegerAttr(int(v), et)
    if isinstance(v, int):
        return IntegerAttr(v, from_numpy(np.dtype(np.int64)))
    if isinstance(v, float):
        return FloatAttr(v, from_numpy(np.dtype(np.float64)))
    if isinstance(v, str):
        return StringAttr(v)
    if isinstance(v, np.dtype):
        return ElementTypeAttr(from_numpy(v))
    if isinstance(v, (list, tuple)):
        return ArrayAttr([attribute(x) for x in v])
    d = getattr(v, "_d", v)  # FrozenDict
    if isinstance(d, dict):
        return DictionaryAttr({k: attribute(x) for k, x in d.items()})
    raise TypeError(f"cannot write {type(v).__name__} {v!r} as an attribute")


def _composite(ctx, *args, name, attributes, version, jaxpr):
    """``attributes`` are (name, leaves, treedef) triples; None values are left out."""
    fn = lower_jaxpr_to_fun(ctx.body_context(), name, jaxpr)
    attrs = {}
    for key, leaves, treedef in attributes:
        v = treedef.unflatten(leaves)
        if v is not None:
            attrs[key] = attribute(v)
    return list(as_results(ctx.builder.composite(
        name, args, fn, composite_attributes=DictionaryAttr(attrs), version=version)))


register_lowering("composite", _composite)


# -- custom calls -------------------------------------------------------------------------------

def _layouts(avals, given):
    if given is None:
        given = [None] * len(avals)
    return [IndexLayout(range(len(a.shape) - 1, -1, -1) if lay is None else lay)
            for a, lay in zip(avals, given)]


def _ffi_call(ctx, *args, target_name, has_side_effect=False, input_layouts=None,
              output_layouts=None, input_output_aliases=(), custom_call_api_version=4,
              legacy_backend_config=None, attributes=(), **_):
    """A ``custom_call`` to ``target_name``; API 4 takes the attributes as a dictionary,
    older APIs the legacy string."""
    multi = len(ctx.avals_out) > 1
    aliases = [OutputOperandAlias(output_tuple_indices=(o,) if multi else (),
                                  operand_index=i, operand_tuple_indices=())
               for i, o in input_output_aliases]
    if custom_call_api_version == 4:
        config = DictionaryAttr({k: attribute(v) for k, v in attributes})
    else:
        config = legacy_backend_config or ""
    outs = ctx.builder.custom_call(
        target_name, list(args), [aval_to_ir_type(a) for a in ctx.avals_out],
        api_version=custom_call_api_version, backend_config=config,
        has_side_effect=has_side_effect or None,
        operand_layouts=_layouts(ctx.avals_in, input_layouts),
        result_layouts=_layouts(ctx.avals_out, output_layouts),
        output_operand_aliases=aliases or None)
    return list(as_results(outs))


register_lowering("ffi_call", _ffi_call)


def _shape_assertion(ctx, assert_what, *error_inputs, error_message):
    ctx.builder.custom_call("shape_assertion", [assert_what, *error_inputs], [],
                            has_side_effect=True, error_message=StringAttr(error_message))
    return []


register_lowering("shape_assertion", _shape_assertion)


def _unreachable(ctx, *_args, out_avals, exc_type, message):
    raise exc_type(message)


register_lowering("unreachable", _unreachable)


# -- top-k -------------------------------------------------------------------------------------

def _approx_top_k(ctx, x, *, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
    """Exact: the (floating) operand sorted along the dimension (largest first for max-k),
    indices carried along, then the first ``out`` entries (``k``, or the aval's size when
    not aggregated). Ties keep the lower index first (a stable sort), as ``top_k`` does;
    jax's fallback leaves their order unspecified."""
    b = ctx.builder
    shape = x.type.shape
    dim = reduction_dimension % len(shape)
    idx = b.iota(shape, from_numpy(np.dtype(np.int32)), dim)
    direction = "GT" if is_max_k else "LT"
    vals, ids = b.sort([x, idx], lambda r, p, q, _i, _j: r.compare(p, q, direction, "FLOAT"),
                       dim, True)
    n = ctx.avals_out[0].shape[dim]
    limit = list(shape)
    limit[dim] = n
    start = [0] * len(shape)
    return [b.slice(vals, start, limit), b.slice(ids, start, limit)]


register_lowering("approx_top_k", _approx_top_k)


# -- linear algebra ------------------------------------------------------------------------------

def _scaled(b, factor, x):
    return b.multiply(full_like(b, factor, x.type), x)


def _symmetric_product(ctx, a, c, *, alpha, beta):
    b = ctx.builder
    nd = len(a.type.shape)
    batch = tuple(range(nd - 2))
    aat = b.dot_general(a, a, ((nd - 1,), (nd - 1,)), (batch, batch),
                        precision_config=_precision_config("HIGHEST"))
    return [b.add(_scaled(b, alpha, aat), _scaled(b, beta, c))]


register_lowering("symmetric_product", _symmetric_product)


def _cholesky_update(ctx, r, z):
    """Row k of R and z rotate by the Givens rotation zeroing z[k] against R[k, k]; a zero
    z[k] is the identity rotation (jax's cond, here a select)."""
    b = ctx.builder
    n = r.type.shape[0]
    rows = [b.reshape(b.slice(r, [k, 0], [k + 1, n]), (n,)) for k in range(n)]

    def at(v, k):
        return b.reshape(b.slice(v, [k], [k + 1]), ())

    def const(v, like):
        return full_like(b, v, like.type)

    for k in range(n):
        x, y = at(rows[k], k), at(z, k)
        ax, ay = b.abs(x), b.abs(y)
        den = b.select(b.compare(ax, ay, "GT", "FLOAT"), ax, ay)
        xs, ys = b.divide(x, den), b.divide(y, den)
        rh = b.divide(const(1, x), b.sqrt(b.add(b.multiply(xs, xs), b.multiply(ys, ys))))
        zero = b.compare(y, const(0, y), "EQ", "FLOAT")
        c = b.select(zero, const(1, x), b.multiply(xs, rh))
        s = b.select(zero, const(0, x), b.negate(b.multiply(ys, rh)))
        cv, sv = (b.broadcast_in_dim(v, (n,), ()) for v in (c, s))
        row = rows[k]
        rows[k] = b.subtract(b.multiply(cv, row), b.multiply(sv, z))
        z = b.add(b.multiply(cv, z), b.multiply(sv, row))
    return [b.concatenate([b.reshape(row, (1, n)) for row in rows], 0)]


register_lowering("cholesky_update", _cholesky_update)


# -- ragged dot ------------------------------------------------------------------------------

def _ragged_to_dense(x, gs, dim: int, axes):
    """``(g, *x.shape)``: slice j of x keeps the entries whose index along ``dim`` lies in
    group j (``gs`` is ``(*prefix, g)``: its sizes vary along x's dimensions ``axes``)."""
    shape = (gs.shape[-1], *x.shape)
    ends = L.cumsum(gs, axis=gs.ndim - 1)
    starts = L.sub(ends, gs)  # the exclusive sums
    order = sorted(range(len(axes)), key=lambda j: axes[j])
    perm = (gs.ndim - 1, *order)
    dims = (0, *sorted(a + 1 for a in axes))
    starts, ends = (L.broadcast_in_dim(L.transpose(v, perm), shape, dims) for v in (starts, ends))
    idx = L.iota(x, gs.dtype, shape, dim + 1)
    mask = L.and_(L.le(starts, idx), L.lt(idx, ends))
    return L.where(mask, L.broadcast_in_dim(x, shape, range(1, len(shape))), 0)


def _ragged_dot_general(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision=None,
                        preferred_element_type=None, group_offset=None, out_sharding=None):
    """jax's decomposition: the ragged operand expanded to one dense slice per group (zeros
    outside it), then one dot_general contracting or batching the group dimension."""
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported (nor "
                                  "by jax)")
    rd = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = rd.dot_dimension_numbers
    lc, rc, lb, rb = map(list, (lc, rc, lb, rb))
    (ragged,) = rd.lhs_ragged_dimensions

    def dot(x, y, dn):
        return L.dot_general(x, y, dn, precision=precision,
                             preferred_element_type=preferred_element_type)

    def incr(ds):
        return [d + 1 for d in ds]

    if ragged in lb:
        return dot(lhs, rhs, ((lc, rc), (lb, rb)))
    noncontract = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    contracting = ragged in lc
    prefix = lb + (lc[:lc.index(ragged)] if contracting else
                   noncontract[:noncontract.index(ragged)])
    gs = group_sizes
    if gs.ndim == 1:
        gs = L.broadcast_in_dim(gs, (*[lhs.shape[i] for i in prefix], gs.shape[0]),
                                (len(prefix),))
    dense = _ragged_to_dense(lhs, gs, ragged, prefix)
    if not contracting:
        (group,) = rd.rhs_group_dimensions
        return dot(dense, rhs, ((incr(lc) + [0], rc + [group]), (incr(lb), rb)))
    rhs_ragged = rc[lc.index(ragged)]
    rhs_dense = _ragged_to_dense(rhs, gs, rhs_ragged, rb + rc[:rc.index(rhs_ragged)])
    return dot(dense, rhs_dense, ((incr(lc), incr(rc)), ([0] + incr(lb), [0] + incr(rb))))


register_lowering("ragged_dot_general", lower_fun(_ragged_dot_general, multiple_results=False))


# -- extended dtypes ---------------------------------------------------------------------------

# An extended dtype's value is its physical representation already: converting to or from
# it changes the type JAX sees, not the value.
register_lowering("to_edtype", lambda ctx, x, **_: [x])
register_lowering("from_edtype", lambda ctx, x, **_: [x])


# -- stage, scaled_dot -------------------------------------------------------------------------

register_lowering("stage", lambda ctx, x: [x])


def _scale_broadcast(scale, operand_shape, contracting):
    """Each scale repeated over its block (subchannel) of a contracting dimension."""
    for i in contracting:
        if scale.shape[i] != operand_shape[i]:
            shape = list(scale.shape)
            shape.insert(i + 1, operand_shape[i] // scale.shape[i])
            scale = L.broadcast_in_dim(scale, shape, [d + (d > i) for d in range(scale.ndim)])
            shape[i] *= shape.pop(i + 1)
            scale = L.reshape(scale, shape)
    return scale


def _scaled_dot_impl(lhs, rhs, lhs_scale, rhs_scale, *, dimension_numbers,
                     preferred_element_type=None):
    """``(lhs * lhs_scale) @ (rhs * rhs_scale)`` in bfloat16, as jax's decomposition."""
    (lc, rc), _ = dimension_numbers
    bf16 = np.dtype("bfloat16")

    def scaled(x, s, contracting):
        s = _scale_broadcast(s, x.shape, contracting)
        return L.mul(L.convert_element_type(x, bf16), L.convert_element_type(s, bf16))
    return L.dot_general(scaled(lhs, lhs_scale, lc), scaled(rhs, rhs_scale, rc),
                         dimension_numbers, preferred_element_type=preferred_element_type)


def _scaled_dot(ctx, *args, dimension_numbers, preferred_element_type=None):
    """``composite "xla.scaled_dot"`` whose decomposition is jax's (XLA may substitute a
    native scaled dot; on CPU it calls the decomposition)."""
    params = dict(dimension_numbers=dimension_numbers,
                  preferred_element_type=preferred_element_type)
    fn = ctx.module_context.module.add_function(
        "xla.scaled_dot", [a.type for a in args], [aval_to_ir_type(ctx.avals_out[0])],
        visibility="private")
    fb = fn.builder()
    outs = lower_fun(_scaled_dot_impl)(ctx.replace(builder=fb), *fn.arguments, **params)
    fb.return_(*[v for out in outs for v in (out if isinstance(out, (list, tuple)) else [out])])
    attrs = {k: attribute(v) for k, v in params.items() if v is not None}
    return list(as_results(ctx.builder.composite(
        "xla.scaled_dot", args, fn, composite_attributes=DictionaryAttr(attrs), version=0)))


register_lowering("scaled_dot", _scaled_dot)


# -- shape polymorphism, where every shape is static ----------------------------------------

def _static_dim(ctx, value, what: str) -> list:
    try:
        n = int(value)
    except TypeError:
        raise NotImplementedError(f"'{ctx.primitive.name}': {what} {value!r} is symbolic; "
                                  "this lowering takes static shapes only") from None
    return [full_like(ctx.builder, n, aval_to_ir_type(ctx.avals_out[0]))]


register_lowering("dimension_size", lambda ctx, x, *, dimension: _static_dim(
    ctx, x.type.shape[dimension], f"dimension {dimension}"))
register_lowering("dim_as_value", lambda ctx, *, dim: _static_dim(ctx, dim, "the dimension"))


def _custom_lin(ctx, *args, **params):
    """jax's rule for ``custom_lin``: a custom_vjp function under forward-mode autodiff
    reaches lowering only through jvp, which custom_vjp does not support."""
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


register_lowering("custom_lin", _custom_lin)
