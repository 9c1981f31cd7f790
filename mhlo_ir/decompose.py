"""Ops written with other ops that compute the same: for consumers that lack the originals.

``decompose(module)`` returns a new module in which each op with a rule below is replaced by
ops StableHLO has and its reference interpreter runs, computing exactly what the op computes
(no approximation: the same values, bit for bit):

- ``copy``, ``domain`` and ``add_dependency`` (identities on values when run: the last
  orders effects, which a program run op after op keeps in order) by their operand;
  ``fusion`` by its body, inlined;
- ``create_token`` by ``after_all()`` of no tokens; ``broadcast`` by ``broadcast_in_dim``;
  ``dot`` by ``dot_general`` contracting the lhs's last dimension with the rhs's first;
- ``mulhi`` (and ``chlo.mulhi``) of integers up to 32 bits by the product in the type twice
  as wide, shifted right;
- ``topk`` of floats and integers by a stable sort of the values with their indices, in total
  order, sliced to the first k (XLA's own topk gives the same bits, ties and NaNs included);
- ``scan`` by a while loop that slices the inputs at each trip's index, runs the body inline
  and writes the output slices into place.

Not here because they would not be exact: ``erf`` (a polynomial, XLA's own), the batch norms
(XLA's expansion rounds otherwise than the spec's formula).

With ``single_device=True`` (a program run on one replica and one partition, as
``verify.run`` and ``verify.interpret`` run it) the collectives, whose only participant is
then the device itself, become what they compute there: ``replica_id`` and ``partition_id``
the constant 0; ``all_reduce``, ``cross-replica-sum``, ``all_gather``, ``reduce_scatter`` and
``all_to_all`` their operands; ``collective_permute`` its operand when it sends device 0 to
itself, else zeros. A collective whose groups name another device is left as it is.

The StableHLO interpreter inside jaxlib has none of these ops (it aborts on them); programs
holding them could not be compared with XLA before (``verify.interpret`` decomposes first).
XLA runs the original ops, so a fault of XLA's in them still shows as a difference.
"""

from __future__ import annotations

import numpy as np

from .ir import BlockArgument, Module, OpResult, walk
from .quant import QuantizedType
from .rewrite import Rewriter, rewrite_module

__all__ = ["decompose", "decomposable", "rules", "RULES", "SINGLE_DEVICE_RULES"]


def _local(v, block) -> bool:
    """Whether value ``v`` is defined in ``block`` (an argument of it or a result of one of
    its ops)."""
    if v.__class__ is BlockArgument:
        return v.owner is block
    owner = v.owner if v.__class__ is OpResult else v
    return owner.parent is block


def _identity(r, b, op, x):
    """``x`` itself, except where a closed region (a map, reduce or sort body...) would then
    use a value from outside it, which XLA's export refuses ("requires all operands to be
    defined in the parent region"): there the op is kept."""
    if r.closed and not all(_local(v, b.block) for v in x):
        return None
    return x


def _fusion(r, b, op, x):
    """The fused computation's ops, rebuilt in place of the fusion on its operands."""
    block = op.regions[0].blocks[0]
    passed = {a: v for a, v in zip(block.arguments, x)}
    if r.closed and not all(_local(passed[v], b.block) for v in block.operations[-1].operands
                            if v in passed):
        return None
    return tuple(r.inline(b, block, x))


def _create_token(r, b, op, x):
    return (b.after_all(),)


def _broadcast(r, b, op, x):
    sizes = tuple(op.attr("broadcast_sizes").to_array().tolist())
    rank = x[0].type.rank
    return (b.broadcast_in_dim(x[0], sizes + x[0].type.shape,
                               tuple(range(len(sizes), len(sizes) + rank))),)


def _dot(r, b, op, x):
    """``dot_general`` contracting the lhs's last dimension with the rhs's first. A quantized
    dot is kept: ``dot_general`` forbids the rhs zero points ``dot`` may have (StableHLO's
    C15), and the quantization lowering takes ``dot`` as it is."""
    lhs, rhs = x
    if any(v.type.element_type.__class__ is QuantizedType
           for v in (lhs, rhs, op.results[0])):
        return None
    et = op.results[0].type.element_type
    return (b.dot_general(lhs, rhs, ((lhs.type.rank - 1,), (0,)),
                          precision_config=op.attr("precision_config"),
                          result_element_type=None if et is lhs.type.element_type else et),)


# The integer type a product of two values of a type fits in, by type name.
_WIDER = {"i2": "i8", "i4": "i8", "i8": "i16", "i16": "i32", "i32": "i64",
          "ui2": "ui8", "ui4": "ui8", "ui8": "ui16", "ui16": "ui32", "ui32": "ui64"}


def _mulhi(r, b, op, x):
    """The high half of the double-width product, computed in a type that holds the whole
    product: ``convert(shift_right(wide(l) * wide(r), bits))`` (arithmetic for signed
    types, whose high half is then in range). 64-bit types have no wider type: kept."""
    from . import dtypes
    et = x[0].type.element_type
    wide = _WIDER.get(et.name)
    if wide is None:
        return None
    wt = dtypes.element_type(wide)
    lhs, rhs = (b.convert(v, wt) for v in x)
    shape = x[0].type.shape
    bits = b.broadcast_in_dim(b.constant(np.array(et.bits, wt.dtype)), shape, ())
    product = b.multiply(lhs, rhs)
    high = b.shift_right_arithmetic(product, bits) if et.kind == "sint" else \
        b.shift_right_logical(product, bits)
    return (b.convert(high, et),)


def _topk(r, b, op, x):
    """A stable sort of the values with their indices along the last dimension, largest (or
    smallest) first in total order, sliced to the first k: ties keep the lower index first,
    as XLA's TopK does."""
    from . import dtypes
    v = x[0]
    t = v.type
    k = op.attr("k").value
    largest = getattr(op.attr("largest"), "value", True)
    last = t.rank - 1
    kind = t.element_type.kind
    if kind not in ("float", "sint", "uint"):
        return None
    ct = "TOTALORDER" if kind == "float" else None
    direction = "GT" if largest else "LT"
    idx = b.iota(t.shape, dtypes.i32, last)
    vals, inds = b.sort([v, idx], lambda r, a, c, ia, ic: r.compare(a, c, direction, ct),
                        last, True)
    limit = t.shape[:-1] + (k,)
    return tuple(b.slice(y, (0,) * t.rank, limit) for y in (vals, inds))


def _with(shape, d, middle) -> tuple:
    """``shape`` with dimension ``d`` replaced by ``middle`` (``(1,)``, or ``()`` to drop
    it)."""
    return shape[:d] + middle + shape[d + 1:]


def _scan(r, b, op, x):
    """A while loop over the scanned dimension: each trip slices the inputs at its index
    (counted from the end when ``is_reverse``), runs the body (rebuilt inline) on the slices
    and the carries, and writes the output slices into their place in the stacked outputs,
    which start as zeros every trip overwrites."""
    n_in, n_init = op.attr("operandSegmentSizes").values
    n_out = op.attr("resultSegmentSizes").values[0]
    inputs, inits = x[:n_in], x[n_in:]
    d = op.attr("dimension").value
    out_types = [res.type for res in op.results[:n_out]]
    length = out_types[0].shape[d] if out_types else \
        (inputs[0].type.shape[d] if inputs else op.attr("scan_dim_size").value)
    reverse = bool(getattr(op.attr("is_reverse"), "value", False))
    block = op.regions[0].blocks[0]

    def zeros(t):
        return b.broadcast_in_dim(b.constant(np.zeros((), t.element_type.dtype)), t.shape, ())

    def starts(w, at, rank):
        zero = w.constant(np.int32(0))
        return [at if k == d else zero for k in range(rank)]

    def cond(w, i, *state):
        return w.compare(i, w.constant(np.int32(length)), "LT")

    def body(w, i, *state):
        carries, accs = state[:n_init], state[n_init:]
        at = w.subtract(w.constant(np.int32(length - 1)), i) if reverse else i
        pieces = [w.reshape(w.dynamic_slice(v, starts(w, at, v.type.rank),
                                            _with(v.type.shape, d, (1,))),
                            _with(v.type.shape, d, ()))
                  for v in inputs]
        got = r.inline(w, block, [*pieces, *carries])
        slices, new_carries = got[:n_out], got[n_out:]
        new_accs = [w.dynamic_update_slice(acc, w.reshape(s_, _with(acc.type.shape, d, (1,))),
                                           starts(w, at, acc.type.rank))
                    for acc, s_ in zip(accs, slices)]
        return [w.add(i, w.constant(np.int32(1))), *new_carries, *new_accs]

    state = [b.constant(np.int32(0)), *inits, *[zeros(t) for t in out_types]]
    out = b.while_(state, cond, body)
    out = out if isinstance(out, tuple) else (out,)
    carries, accs = out[1:1 + n_init], out[1 + n_init:]
    return (*accs, *carries)


def _zero_id(r, b, op, x):
    return (b.constant(np.uint32(0)),)


def _same_types(r, b, op, x):
    """A collective of one participant: its operands, where its results have their types
    (and its groups name no device but 0)."""
    if not _one_device(op) or tuple(v.type for v in x) != tuple(t.type for t in op.results):
        return None
    return _identity(r, b, op, x)


def _permute(r, b, op, x):
    pairs = op.attr("source_target_pairs").to_array().reshape(-1, 2).tolist()
    if pairs == [[0, 0]]:
        return _identity(r, b, op, x)
    if not pairs:  # device 0 is nobody's target: it gets zeros
        t = op.results[0].type
        return (b.broadcast_in_dim(b.constant(np.zeros((), t.element_type.dtype)),
                                   t.shape, ()),)
    return None


# op name -> rule(rewriter, builder, op, new operands) -> new results (None: keep the op)
RULES = {"copy": _identity, "domain": _identity, "fusion": _fusion,
         "add_dependency": lambda r, b, op, x: _identity(r, b, op, x[:1]),
         "mulhi": _mulhi, "chlo.mulhi": _mulhi, "topk": _topk,
         "scan": _scan,
         "create_token": _create_token, "broadcast": _broadcast, "dot": _dot}
SINGLE_DEVICE_RULES = {"replica_id": _zero_id, "partition_id": _zero_id,
                       "all_reduce": _same_types, "cross-replica-sum": _same_types,
                       "all_gather": _same_types, "reduce_scatter": _same_types,
                       "all_to_all": _same_types, "collective_permute": _permute}


def _one_device(op) -> bool:
    """Whether every device ``op``'s replica groups name is device 0 (-1 pads groups)."""
    groups = op.attr("replica_groups")
    return groups is None or all(v in (0, -1) for v in groups.to_array().reshape(-1).tolist())


class _Decomposition(Rewriter):
    def __init__(self, rules) -> None:
        super().__init__()
        self.rules = rules

    def op(self, b, op) -> tuple:
        rule = self.rules.get(op.spec.name)
        if rule is not None:
            x = tuple(self.values[v] for v in op.operands)
            out = rule(self, b, op, x)
            if out is not None:
                return out
        return self.copy(b, op)


_ALL_RULES = {**RULES, **SINGLE_DEVICE_RULES}


def rules(single_device: bool = False) -> dict:
    """Op name -> rule of the decompositions that apply (the collectives' on one device)."""
    return _ALL_RULES if single_device else RULES


def identity_operand(op, *, single_device: bool = False):
    """The operand ``decompose`` makes ``op``'s result (a copy, a domain, an add_dependency's
    first operand; on one device a collective of one participant, a permute of device 0 to
    itself), or None: whose buffer the result is, once decomposed."""
    rule = rules(single_device).get(op.spec.name)
    if rule is _identity or rule is RULES["add_dependency"]:
        return op.operands[0]
    if len(op.operands) == 1 and (
            (rule is _same_types and _one_device(op)
             and op.operands[0].type == op.results[0].type)
            or (rule is _permute
                and op.attr("source_target_pairs").to_array().reshape(-1).tolist() == [0, 0])):
        return op.operands[0]
    return None


def decomposable(module, *, single_device: bool = False) -> bool:
    """Whether ``module`` holds an op ``decompose`` has a rule for."""
    names = rules(single_device)
    return any(op.spec.name in names for _, op in walk(module))


def decompose(module: Module, *, single_device: bool = False) -> Module:
    """A new module computing what ``module`` computes with the ops above written out (see
    the module docstring); the input is not changed."""
    return rewrite_module(module, _Decomposition, rules(single_device))
