"""Collectives: all_reduce, all_gather, all_to_all, reduce_scatter, collective_permute,
collective_broadcast, cross-replica-sum, replica_id, partition_id.

Replica groups are a rectangular 2-D ``dense<...> : tensor<GxNxi64>``: G groups of N replica
ids (global device ids with ``use_global_device_ids``), -1 padding short groups; an empty list
means "all replicas in one group". With a channel_handle XLA reads the ids across partitions
as well (collective_permute's pairs become partition ids). Result shapes that depend on the
group size are inferred when the groups are given, and must be passed as ``result_types``
otherwise.
"""

from __future__ import annotations

from .. import op_forms as pf

import numpy as np

from ..attributes import Attribute
from ..dense import DenseElementsAttr
from ..dtypes import i64, ui32
from ..mhlo_attributes import ChannelHandle
from ..types import TensorType, tensor
from ..ir import Value
from . import convert
from ..combining import region_types
from .control_flow import check_region, region_returns
from .args import integer, results, small_array, value_list
from .spec import AttrSpec, OpSpec, builder_method, fail, region_arg, register, tensor_operand

__all__ = ["replica_groups", "channel_handle", "source_target_pairs"]


def _types(ts) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def _pairs_2d(v, what, width=None) -> DenseElementsAttr:
    if isinstance(v, DenseElementsAttr):
        if v.type.rank != 2 or v.type.element_type is not i64:
            raise ValueError(f"{what} must be a 2-D i64 dense attribute, got {v.type}")
        return v
    if isinstance(v, (str, bytes, Attribute)) or not hasattr(v, "__iter__"):
        raise TypeError(f"{what} must be a list of lists of integers, got "
                        f"{type(v).__name__} {v!r:.60}")
    rows = []
    for r in v:
        if isinstance(r, (str, bytes, Attribute)) or not hasattr(r, "__iter__"):
            raise TypeError(f"{what} must be a list of lists of integers, got the entry "
                            f"{type(r).__name__} {r!r:.60}")
        rows.append(list(r))
    n = len(rows[0]) if rows else (width or 0)
    for r in rows:
        if len(r) != n:
            raise ValueError(f"{what} rows must all have the same length (pad short groups with "
                             f"-1), got {[len(r) for r in rows]}")
        for x in r:
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise ValueError(f"{what} entries must be integers, got {x!r}")
    if width is not None and rows and n != width:
        raise ValueError(f"{what} must be pairs [source, target], got rows of {n}")
    arr = np.asarray(rows, dtype=np.int64).reshape(len(rows), n)
    return DenseElementsAttr.from_array(arr, tensor(arr.shape, i64))


def replica_groups(v) -> DenseElementsAttr:
    """``[[0, 1], [2, 3]]`` (or a dense attribute) as MHLO's 2-D i64 replica groups."""
    return _pairs_2d(v, "replica_groups")


def source_target_pairs(v) -> DenseElementsAttr:
    """``[[0, 1], [1, 0]]`` as collective_permute's Nx2 i64 source-target pairs."""
    return _pairs_2d(v, "source_target_pairs", 2)


def channel_handle(v) -> ChannelHandle:
    """A ChannelHandle from itself, an int (handle, type 1: device to device), a pair
    ``(handle, type)`` or a dict."""
    if isinstance(v, dict):
        v = ChannelHandle(**v)
    elif isinstance(v, (tuple, list)):
        v = ChannelHandle(*v)
    elif not isinstance(v, ChannelHandle):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"expected a ChannelHandle, an int or (handle, type), got "
                            f"{type(v).__name__} {v!r:.60}")
        v = ChannelHandle(int(v), 1)
    # MLIR reads both as i64; the type is 0 (invalid), 1 (device to device), 2 (device to
    # host) or 3 (host to device).
    for name, x in (("handle", v.handle), ("type", v.type)):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"channel {name} must be an integer, got {type(x).__name__} "
                            f"{x!r:.60}")
    if not -2**63 <= v.handle < 2**63:
        raise ValueError(f"channel handle {v.handle} does not fit in i64")
    if not 0 <= v.type <= 3:
        raise ValueError(f"channel type must be 0-3 (1: device to device, 2: device to host, "
                         f"3: host to device), got {v.type}")
    return v


_i64 = convert.i64


_GROUP_ATTRS = {
    "replica_groups": AttrSpec(replica_groups, True),
    "channel_handle": AttrSpec(channel_handle),
}
_GLOBAL = {"use_global_device_ids": AttrSpec(convert.unit)}


# Ops whose groups may differ in size, the short ones padded with -1 (MLIR's verifier refuses
# -1 in the others: "Invalid replica id -1"; collective_broadcast: "must be positive").
_PADDED = frozenset({"all_reduce", "cross-replica-sum"})
# Ops whose groups need not cover every id from 0 up (elsewhere jaxlib: "replica id #1 not
# seen in replica groups").
_GAPS_ALLOWED = frozenset({"collective_broadcast", "cross-replica-sum"})


def _groups(op, attributes) -> np.ndarray:
    """The replica groups as a 2-d array, checked as jaxlib and XLA check them."""
    g = attributes["replica_groups"]
    if g.type.rank != 2:
        fail(op, f"replica_groups must be a rank-2 tensor, got {g.type}")
    arr = small_array(op, "replica_groups", g)
    if arr.size == 0:
        if arr.shape[0]:
            fail(op, f"replica_groups has {arr.shape[0]} empty group(s); XLA refuses an empty "
                     "group: leave replica_groups empty ([]) for one group of all replicas")
        return arr
    padded = op in _PADDED
    seen = set()
    for i, row in enumerate(arr.tolist()):
        if padded and all(x == -1 for x in row):
            fail(op, f"replica_groups group {i} is all padding ({row}); XLA refuses an empty "
                     "group")
        for x in row:
            if x == -1 and padded:
                continue
            if x < 0:
                fail(op, f"replica_groups has a negative id {x}" +
                     (" (only -1 may pad a group)" if padded else
                      f" ('{op}' groups all have one size, so none is padded with -1)"))
            if x in seen:
                fail(op, f"replica_groups names replica {x} more than once")
            seen.add(x)
    if op not in _GAPS_ALLOWED:
        for k in range(max(seen) + 1):
            if k not in seen:
                fail(op, f"replica_groups leaves out replica id {k}: the groups must cover "
                         f"every id from 0 to {max(seen)}")
    return arr


def _group_size(op, attributes):
    """Participants per group, or None when the groups are empty (all replicas)."""
    arr = _groups(op, attributes)
    if arr.size == 0:
        return None
    return int(arr.shape[1])


def _check_common(op, attributes):
    groups = _groups(op, attributes)
    if "use_global_device_ids" in attributes:
        ch = attributes.get("channel_handle")
        if ch is None or ch.handle <= 0:
            fail(op, "use_global_device_ids needs a channel_handle with a positive handle")
        if groups.size == 0:
            fail(op, "use_global_device_ids needs replica_groups naming the devices, got none")


def _same_element_type(op, types):
    ts = [tensor_operand(op, f"operands[{i}]", t) for i, t in enumerate(types)]
    if not ts:
        fail(op, "needs at least one operand")
    for i, t in enumerate(ts[1:], 1):
        if t.element_type is not ts[0].element_type:
            fail(op, f"operands must share one element type: operands[{i}] is {t}, operands[0] "
                     f"is {ts[0]}")
    return ts


def _dim_attr(op, attributes, name, rank, what="operand"):
    d = attributes[name].value
    if not 0 <= d < rank:
        fail(op, f"{name} {d} is out of range for an {what} of rank {rank}")
    return d


# -- all_reduce -------------------------------------------------------------------------------

def _promotable(src, dst) -> bool:
    if src is dst:
        return True
    return (src.kind == dst.kind and src.kind in ("sint", "uint", "float")
            and dst.bits >= src.bits)


def _reducer(op, region, element_type):
    """The element type a scalar reduction region computes in (checked against the operand's)."""
    recipe = region_types(region)  # (a recipe's block is not made to read its types)
    if recipe is not None:
        args = recipe[0]
    else:
        if len(region.blocks) != 1:
            fail(op, f"computation must have exactly one block, got {len(region.blocks)}")
        args = region.blocks[0].arg_types
    if len(args) != 2 or args[0] != args[1] or not isinstance(args[0], TensorType) \
            or args[0].rank != 0:
        fail(op, f"computation must take two scalars of one type, got {_types(args)}")
    et = args[0].element_type
    if not _promotable(element_type, et):
        fail(op, f"computation takes {args[0]}, which operands of element type "
                 f"{element_type.name} cannot be promoted to")
    check_region(op, "computation", region, args, (args[0],))
    return et


def _all_reduce(op, types, attributes):
    _check_common(op, attributes)
    return tuple(_same_element_type(op, types))


def _all_reduce_check(op, types, attributes, results, regions):
    ts = _all_reduce(op, types, attributes)
    et = _reducer(op, regions[0], ts[0].element_type)
    want = tuple(tensor(t.shape, et) for t in ts)
    if tuple(results) != want:
        fail(op, f"results {_types(results)} differ from the expected {_types(want)}")


register(OpSpec("all_reduce", ("operands*",), {**_GROUP_ATTRS, **_GLOBAL}, regions=1,
                infer=_all_reduce, check=_all_reduce_check,
                doc="Reduces each operand elementwise across the replicas of each group.",
                closed_regions=True, quantized="not_yet"))


def _scalar_region(b, x, body, op="all_reduce", what="operands[0]"):
    t = getattr(x, "type", None)
    if not isinstance(t, TensorType):
        fail(op, f"operand must be a tensor Value, got {x!r:.60}")
    s = region_arg(op, what, t)
    return b.region((s, s), body, op=op, arg_names=("lhs", "rhs"))


@builder_method
def all_reduce(b, operands, body, replica_groups=(), *, channel_handle=None,
               use_global_device_ids=False, location=None) -> Value | tuple:
    """Reduce ``operands`` (a value or a list of values of one element type) across replicas;
    ``body(b, lhs, rhs) -> scalar`` combines two scalars. Returns a Value for one operand,
    else a tuple."""
    xs = value_list("all_reduce", "operands", operands)
    if not xs:
        fail("all_reduce", "needs at least one operand")
    region = _scalar_region(b, xs[0], body)
    et = region_returns("all_reduce", "computation", region)
    rts = None
    if len(et) == 1 and isinstance(et[0], TensorType):
        rts = [tensor(x.type.shape, et[0].element_type) if isinstance(x.type, TensorType)
               else x.type for x in xs]
    res = b.create("all_reduce", (xs,), {
        "replica_groups": replica_groups, "channel_handle": channel_handle,
        "use_global_device_ids": True if use_global_device_ids else None},
        rts, regions=(region,), location=location)
    return results(res)


# -- all_gather -------------------------------------------------------------------------------

def _gathered(op, types, attributes, k):
    ts = _same_element_type(op, types)
    out = []
    for t in ts:
        d = _dim_attr(op, attributes, "all_gather_dim", t.rank)
        shape = list(t.shape)
        shape[d] *= k
        out.append(tensor(shape, t.element_type))
    return tuple(out)


def _nonzero_gather_dim(op, types, attributes):
    # MHLO's verifier (jaxlib) refuses it: "dimension size of operand at 'all_gather_dim'
    # cannot be zero".
    for i, t in enumerate(types):
        if isinstance(t, TensorType):
            d = _dim_attr(op, attributes, "all_gather_dim", t.rank)
            if t.shape[d] == 0:
                fail(op, f"operand {i} {t} has size 0 at all_gather_dim {d}; MHLO requires a "
                         f"non-zero size there")


def _all_gather(op, types, attributes):
    _check_common(op, attributes)
    _nonzero_gather_dim(op, types, attributes)
    k = _group_size(op, attributes)
    if k is None:
        fail(op, "cannot infer its result types with empty replica_groups (the group size is "
                 "the number of replicas): pass result_types")
    return _gathered(op, types, attributes, k)


def _all_gather_check(op, types, attributes, results, regions):
    _check_common(op, attributes)
    _nonzero_gather_dim(op, types, attributes)
    k = _group_size(op, attributes)
    if k is not None:
        want = _gathered(op, types, attributes, k)
        if tuple(results) != want:
            fail(op, f"results {_types(results)} differ from the inferred {_types(want)} "
                     f"(all_gather_dim multiplied by the group size {k})")
        return
    ts = _same_element_type(op, types)
    if len(results) != len(ts):
        fail(op, f"has {len(ts)} operands but {len(results)} results")
    for i, (t, r) in enumerate(zip(ts, results)):
        d = _dim_attr(op, attributes, "all_gather_dim", t.rank)
        ok = (isinstance(r, TensorType) and r.element_type is t.element_type
              and r.rank == t.rank and all(a == b for j, (a, b) in enumerate(
                  zip(t.shape, r.shape)) if j != d)
              and (r.shape[d] % t.shape[d] == 0 and r.shape[d] >= t.shape[d]
                   if t.shape[d] else r.shape[d] == 0))  # (a group has one member or more)
        if not ok:
            fail(op, f"result {i} {r} is not operand {t} gathered along dimension {d}")


register(OpSpec("all_gather", ("operands*",),
                {"all_gather_dim": AttrSpec(_i64, True), **_GROUP_ATTRS, **_GLOBAL},
                infer=_all_gather, check=_all_gather_check,
                doc="Concatenates each replica's operand along all_gather_dim, in group order.",
                quantized="storage"))


@builder_method
def all_gather(b, operands, all_gather_dim, replica_groups=(), *, channel_handle=None,
               use_global_device_ids=False, result_types=None, location=None) -> Value | tuple:
    """Gather ``operands`` (a value or a list) from every replica of each group along
    ``all_gather_dim``. With empty ``replica_groups`` pass ``result_types``. Returns a Value
    for one operand, else a tuple."""
    xs = value_list("all_gather", "operands", operands)
    res = b.create("all_gather", (xs,), {
        "all_gather_dim": integer("all_gather", "all_gather_dim", all_gather_dim),
        "replica_groups": replica_groups,
        "channel_handle": channel_handle,
        "use_global_device_ids": True if use_global_device_ids else None},
        result_types, location=location)
    return results(res)


# -- all_to_all -------------------------------------------------------------------------------

def _all_to_all(op, types, attributes):
    _check_common(op, attributes)
    ts = _same_element_type(op, types)
    for i, t in enumerate(ts[1:], 1):
        if t.shape != ts[0].shape:
            fail(op, f"operands must share one shape: operand[{i}] is {t}, operand[0] is "
                     f"{ts[0]}")
    names = ("split_dimension", "concat_dimension", "split_count")
    given = [n for n in names if n in attributes]
    if given and len(given) != 3:
        fail(op, f"split_dimension, concat_dimension and split_count go together; got only "
                 f"{', '.join(given)}")
    if not given:
        # Tuple form: operand j goes to replica j of the group, result i comes from replica i.
        if len(ts) < 2:
            # jaxlib 0.10.2 crashes the process (SIGSEGV) on a one-operand tuple form.
            fail(op, "without split_dimension, concat_dimension and split_count it needs at "
                     f"least 2 operands (one per replica), got {len(ts)}")
        k = _group_size(op, attributes)
        if k is not None and k != len(ts):
            fail(op, f"without split_dimension it needs one operand per replica of a group "
                     f"({k}), got {len(ts)}")
        return tuple(ts)
    if len(ts) != 1:
        fail(op, f"with split_dimension it takes exactly one operand, got {len(ts)} (several "
                 "operands are the tuple form: leave the split attributes unset)")
    count = attributes["split_count"].value
    if count <= 0:
        fail(op, f"split_count must be positive, got {count}")
    k = _group_size(op, attributes)
    if k is None:
        # jaxlib 0.10.2's verifier divides by the group count: SIGFPE on no groups.
        fail(op, "replica_groups must name the groups (e.g. [[0, 1]]) when split_count is "
                 "given, got none")
    if k != count:
        fail(op, f"split_count {count} differs from the group size {k} of replica_groups")
    out = []
    for i, t in enumerate(ts):
        sd = _dim_attr(op, attributes, "split_dimension", t.rank)
        cd = _dim_attr(op, attributes, "concat_dimension", t.rank)
        if t.shape[sd] % count:
            fail(op, f"operands[{i}] dimension {sd} (size {t.shape[sd]}) is not divisible by "
                     f"split_count {count}")
        shape = list(t.shape)
        shape[sd] //= count
        shape[cd] *= count
        out.append(tensor(shape, t.element_type))
    return tuple(out)


def _all_to_all_dialect(op, dialect) -> None:
    if dialect.name == "stablehlo" and "split_dimension" not in (op.attributes or {}):
        fail("all_to_all", "in its tuple form (several operands, no split_dimension) has no "
                           "stablehlo form: StableHLO's all_to_all needs split_dimension, "
                           "concat_dimension and split_count (jaxlib's conversion fails on "
                           "it too); give them, or print the module as mhlo")


register(OpSpec("all_to_all", ("operand*",), {
    "split_dimension": AttrSpec(_i64), "concat_dimension": AttrSpec(_i64),
    "split_count": AttrSpec(_i64), **_GROUP_ATTRS}, infer=_all_to_all,
    dialect_check=_all_to_all_dialect,
    doc="Splits each operand along split_dimension, sends piece j to replica j of the group, "
        "and concatenates what it receives along concat_dimension.", quantized="storage"))


def _opt_int(what, v):
    return None if v is None else integer("all_to_all", what, v)


@builder_method
def all_to_all(b, operands, split_dimension=None, concat_dimension=None, split_count=None,
               replica_groups=(), *, channel_handle=None, location=None) -> Value | tuple:
    """All-to-all: one operand split along ``split_dimension`` into ``split_count`` pieces
    (piece j to replica j, received pieces concatenated along ``concat_dimension``); or, with
    a list of operands and no split attributes, operand j to replica j. Returns a Value for
    one operand, else a tuple."""
    xs = value_list("all_to_all", "operands", operands)
    res = b.create("all_to_all", (xs,), {
        "split_dimension": _opt_int("split_dimension", split_dimension),
        "concat_dimension": _opt_int("concat_dimension", concat_dimension),
        "split_count": _opt_int("split_count", split_count), "replica_groups": replica_groups,
        "channel_handle": channel_handle}, location=location)
    return results(res)


# -- reduce_scatter ---------------------------------------------------------------------------

def _scattered(op, types, attributes, k):
    t = tensor_operand(op, "operand", types[0])
    d = _dim_attr(op, attributes, "scatter_dimension", t.rank)
    if t.shape[d] == 0:
        # MHLO's verifier (jaxlib): "result dimension size at scatter_dimension cannot be zero"
        fail(op, f"operand {t} has size 0 at scatter_dimension {d}; MHLO requires a non-zero "
                 f"size there")
    if t.shape[d] % k:
        fail(op, f"operand dimension {d} (size {t.shape[d]}) is not divisible by the group "
                 f"size {k}")
    shape = list(t.shape)
    shape[d] //= k
    return t, d, shape


def _reduce_scatter(op, types, attributes):
    _check_common(op, attributes)
    k = _group_size(op, attributes)
    if k is None:
        fail(op, "cannot infer its result type with empty replica_groups (the group size is "
                 "the number of replicas): pass result_types")
    t, _, shape = _scattered(op, types, attributes, k)
    return (tensor(shape, t.element_type),)


def _reduce_scatter_check(op, types, attributes, results, regions):
    _check_common(op, attributes)
    t = tensor_operand(op, "operand", types[0])
    et = _reducer(op, regions[0], t.element_type)
    r = results[0] if len(results) == 1 else None
    if not isinstance(r, TensorType) or r.element_type is not et or r.rank != t.rank:
        fail(op, f"result must be one tensor of rank {t.rank} and element type {et.name}, got "
                 f"{_types(results)}")
    k = _group_size(op, attributes)
    if k is not None:
        _, _, shape = _scattered(op, types, attributes, k)
        if r.shape != tuple(shape):
            fail(op, f"result {r} should have shape {list(shape)} (scatter_dimension divided by "
                     f"the group size {k})")
    else:
        d = _dim_attr(op, attributes, "scatter_dimension", t.rank)
        if any(a != b for j, (a, b) in enumerate(zip(t.shape, r.shape)) if j != d) or \
                (r.shape[d] == 0 if t.shape[d] else False) or \
                (r.shape[d] and t.shape[d] % r.shape[d]):
            fail(op, f"result {r} is not operand {t} scattered along dimension {d}")


register(OpSpec("reduce_scatter", ("operand",),
                {"scatter_dimension": AttrSpec(_i64, True), **_GROUP_ATTRS, **_GLOBAL},
                regions=1, infer=_reduce_scatter, check=_reduce_scatter_check,
                doc="all_reduce, then replica j of each group keeps block j of "
                    "scatter_dimension.",
                closed_regions=True, quantized="not_yet"))


@builder_method
def reduce_scatter(b, operand, scatter_dimension, body, replica_groups=(), *,
                   channel_handle=None, use_global_device_ids=False, result_type=None,
                   location=None) -> Value:
    """Reduce ``operand`` across each group with ``body(b, lhs, rhs) -> scalar`` and keep this
    replica's block of ``scatter_dimension``."""
    scatter_dimension = integer("reduce_scatter", "scatter_dimension", scatter_dimension)
    region = _scalar_region(b, operand, body, "reduce_scatter", "operand")
    attrs = {"scatter_dimension": scatter_dimension, "replica_groups": replica_groups,
             "channel_handle": channel_handle,
             "use_global_device_ids": True if use_global_device_ids else None}
    if result_type is None:
        # The operand's type scattered by the group size, in the element type the region
        # computes in (left to the table's rule when that is not known yet).
        try:
            groups = _pairs_2d(replica_groups, "replica_groups")
        except (TypeError, ValueError):
            groups = None  # create() reports it
        ret = region_returns("reduce_scatter", "computation", region)
        t = getattr(operand, "type", None)
        d = scatter_dimension
        if (groups is not None and groups.type.num_elements and isinstance(t, TensorType)
                and len(ret) == 1 and isinstance(ret[0], TensorType)
                and isinstance(d, int) and 0 <= d < t.rank
                and t.shape[d] % groups.type.shape[1] == 0):
            shape = list(t.shape)
            shape[d] //= groups.type.shape[1]
            result_type = tensor(shape, ret[0].element_type)
    return b.create("reduce_scatter", (operand,), attrs,
                    None if result_type is None else (result_type,), regions=(region,),
                    location=location).results[0]


# -- collective_permute, collective_broadcast, cross-replica-sum ------------------------------

def _permute(op, types, attributes):
    t = tensor_operand(op, "operand", types[0])
    pairs = attributes["source_target_pairs"]
    if pairs.type.rank != 2 or pairs.type.shape[1] != 2:
        fail(op, f"source_target_pairs must be an Nx2 tensor, got {pairs.type}")
    arr = small_array(op, "source_target_pairs", pairs)
    for col, what in ((0, "sources"), (1, "targets")):
        xs = arr[:, col].tolist()
        if any(x < 0 for x in xs):
            fail(op, f"source_target_pairs has a negative id among the {what}: {xs}")
        if len(set(xs)) != len(xs):
            fail(op, f"source_target_pairs has duplicate {what}: {xs}")
    return (t,)


register(OpSpec("collective_permute", ("operand",), {
    "source_target_pairs": AttrSpec(source_target_pairs, True),
    "channel_handle": AttrSpec(channel_handle)}, infer=_permute,
    doc="Sends the operand from each source replica to its target; replicas that are no "
        "target get zeros.", quantized="storage"))


@builder_method
def collective_permute(b, operand, source_target_pairs, *, channel_handle=None,
                       location=None) -> Value:
    return b._one("collective_permute", (operand,), {
        "source_target_pairs": source_target_pairs, "channel_handle": channel_handle},
        location=location)


def _same(op, types, attributes):
    _check_common(op, attributes)
    return (tensor_operand(op, "operand", types[0]),)


register(OpSpec("collective_broadcast", ("operand",), dict(_GROUP_ATTRS), infer=_same,
                not_run="XLA:CPU cannot compile it: 'HLO opcode collective-broadcast is not "
                        "supported by XLA:CPU ThunkEmitter' (jaxlib 0.10)",
                doc="Every replica of a group gets the operand of the group's first replica.",
                quantized="storage"))


@builder_method
def collective_broadcast(b, operand, replica_groups, *, channel_handle=None,
                         location=None) -> Value:
    return b._one("collective_broadcast", (operand,), {
        "replica_groups": replica_groups, "channel_handle": channel_handle}, location=location)


register(OpSpec("cross-replica-sum", ("operand",),
                {"replica_groups": AttrSpec(replica_groups, True)}, infer=_same,
                doc="all_reduce with addition (an old spelling)."))


@builder_method
def cross_replica_sum(b, operand, replica_groups, *, location=None) -> Value:
    return b._one("cross-replica-sum", (operand,), {"replica_groups": replica_groups},
                  location=location)


# -- replica_id, partition_id -----------------------------------------------------------------

_UI32 = tensor((), ui32)

register(OpSpec("replica_id", (), infer=lambda op, t, a: (_UI32,),
                doc="This replica's id as tensor<ui32>.", pretty=pf.NULLARY))
register(OpSpec("partition_id", (), infer=lambda op, t, a: (_UI32,),
                doc="This partition's id as tensor<ui32>.", pretty=pf.NULLARY))


@builder_method
def replica_id(b, *, location=None) -> Value:
    return b._one("replica_id", (), location=location)


@builder_method
def partition_id(b, *, location=None, **attributes) -> Value:
    """``partition_id``; under SPMD partitioning XLA needs it marked
    ``mhlo.sharding="{manual}"`` (pass it as a keyword)."""
    return b._one("partition_id", (), attributes or None, location=location)


# -- ids against the devices a program is compiled for ------------------------------------------

# Ops whose replica_groups XLA's HLO verifier counts against the program's devices.
_COUNTED = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                      "cross-replica-sum"})


def _id_space(op, num_replicas: int, num_partitions: int) -> tuple:
    """(what the op's ids number, how many there are), by XLA's collective group modes: no
    channel: replicas; a channel: partitions for ops without use_global_device_ids
    (all_to_all, collective_permute), else replicas, or every device (replicas x partitions)
    with use_global_device_ids."""
    attrs = op.attributes or {}
    ch = attrs.get("channel_handle")
    if ch is None or ch.handle <= 0:
        return "replica", num_replicas
    if op.spec.name in ("all_to_all", "collective_permute"):
        return "partition", num_partitions
    if "use_global_device_ids" in attrs:
        return "device", num_replicas * num_partitions
    return "replica", num_replicas


def device_count_problem(op, num_replicas: int, num_partitions: int) -> str | None:
    """What is wrong with a collective's ids for a program compiled for ``num_replicas`` x
    ``num_partitions`` devices, or None: non-empty replica_groups must name every id of the
    op's id space (XLA's HLO verifier: "In cross_replica mode, replica groups should contain
    2 replicas, but found 3"), and permute pairs only ids below its size ("Target 3 in the
    instruction's source-target pair must be < 2"). Where the space has one id XLA checks
    nothing and runs a group naming absent devices as if they were not named: refused too,
    since such a program means another count of devices."""
    name = op.spec.name
    if name not in _COUNTED and name != "collective_permute":
        return None
    what, size = _id_space(op, num_replicas, num_partitions)
    what = f"{size} {what}{'s' if size != 1 else ''}" + (
        " (replicas x partitions: use_global_device_ids)" if what == "device" else "")
    attrs = op.attributes or {}
    if name == "collective_permute":
        pairs = attrs.get("source_target_pairs")
        ids = pairs.to_array().reshape(-1).tolist() if pairs is not None else []
        if ids and max(ids) >= size:
            return (f"'collective_permute' source_target_pairs name id {max(ids)}, but its ids "
                    f"number the program's {what}")
        return None
    groups = attrs.get("replica_groups")
    ids = {x for x in groups.to_array().reshape(-1).tolist() if x >= 0} \
        if groups is not None else set()
    if ids and len(ids) != size:
        return (f"'{name}' replica_groups name {len(ids)} ids ({sorted(ids)[:8]}"
                f"{'...' if len(ids) > 8 else ''}), but the program runs on {what}: "
                "the groups must name each of them once")
    return None
