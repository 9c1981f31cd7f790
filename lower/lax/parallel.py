"""Collectives over named axes (jax.lax's psum, pmax, pmin, all_gather, all_to_all, ppermute,
psum_scatter, pbroadcast, ragged_all_to_all, axis_index), and shard_map, for programs that run
on several devices.

The axis names are resolved when the program is lowered, from the module's axis context
(lower.axis_context). Tracing has no axis environment, so where a result's shape depends on an
axis size (all_gather, all_to_all) pass ``axis_size``; ``axis_index`` has no operand, so it is
given a traced value ``like`` to find the trace by.
"""

from __future__ import annotations

import numpy as np

from ..axis_context import P, spec_shard_shape
from ..core import Jaxpr, ShapedArray
from ..tracing import (Tracer, builder_of, bind, convert_element_type, make_jaxpr, primitive,
                       reshape)

__all__ = ["psum", "pmax", "pmin", "pmean", "all_gather", "all_to_all", "ppermute",
           "pshuffle", "axis_index", "shard_map", "psum_scatter", "pbroadcast", "pvary",
           "psum_invariant", "all_gather_invariant", "ragged_all_to_all"]


def _names(axis_name) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _groups(axis_index_groups):
    """``axis_index_groups`` as a tuple of tuples (a hashable param), checked to partition
    the axis indices: the lowering turns each group into a replica group, and XLA wants every
    device in exactly one."""
    if axis_index_groups is None:
        return None
    groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
    flat = sorted(i for g in groups for i in g)
    if flat != list(range(len(flat))):
        raise ValueError("axis_index_groups must cover all indices exactly once")
    return groups


def _reducer(name: str):
    def op(x, axis_name, *, axis_index_groups=None):
        axes = _names(axis_name)
        if axis_index_groups is not None and any(isinstance(a, int) for a in axes):
            raise ValueError("axis_index_groups only supported for reductions over named axes")
        many = isinstance(x, (list, tuple))
        xs = list(x) if many else [x]
        if name == "psum":  # booleans are summed as integers, as in JAX
            xs = [convert_element_type(v, np.int32) if v.dtype == np.bool_ else v for v in xs]
        pos = [a for a in axes if isinstance(a, int)]
        for v in xs:   # as jax: a negative axis is no alias here, the rule reduces it as given
            if any(not 0 <= a < v.ndim for a in pos):
                raise ValueError(f"reduction axes {tuple(pos)} contains out-of-bounds indices "
                                 f"for {v.aval.str_short()}.")
        avals = [ShapedArray([d for i, d in enumerate(v.shape) if i not in pos], v.dtype)
                 for v in xs]
        outs = bind(name, xs, avals, multiple_results=True, axes=axes,
                    axis_index_groups=_groups(axis_index_groups))
        return type(x)(outs) if many else outs[0]
    op.__name__ = name
    return op


psum, pmax, pmin = (_reducer(n) for n in ("psum", "pmax", "pmin"))


def pmean(x, axis_name, *, axis_size, axis_index_groups=None):
    """psum divided by the number of participants (``axis_size``: the group size)."""
    return psum(x, axis_name, axis_index_groups=axis_index_groups) / float(axis_size)


def _gathered(x, axis_size, axis, tiled):
    """(the gather dimension, the gathered aval)."""
    axis = axis % (x.ndim + (0 if tiled else 1))
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return axis, x.aval.update(shape=shape)


def all_gather(x, axis_name, *, axis_size, axis=0, tiled=False, axis_index_groups=None):
    """Gather ``x`` from every device along the axis: a new dimension ``axis`` of size
    ``axis_size`` (the group size), or, when ``tiled``, dimension ``axis`` grown that much."""
    axis, aval = _gathered(x, axis_size, axis, tiled)
    return bind("all_gather", [x], [aval], all_gather_dimension=axis, axis_name=axis_name,
                axis_index_groups=_groups(axis_index_groups), axis_size=int(axis_size),
                tiled=bool(tiled))


def all_gather_invariant(x, axis_name, *, axis_size, axis=0, tiled=False):
    """all_gather whose result jax types as the same on every device of the axis (no
    ``axis_index_groups``); lowered the same way."""
    axis, aval = _gathered(x, axis_size, axis, tiled)
    return bind("all_gather_invariant", [x], [aval], all_gather_dimension=axis,
                axis_name=_names(axis_name), axis_size=int(axis_size), tiled=bool(tiled))


def psum_scatter(x, axis_name, *, axis_size, scatter_dimension=0, axis_index_groups=None,
                 tiled=False):
    """psum, of which device i of the group keeps block i of ``scatter_dimension``: that
    dimension divided by ``axis_size`` (the group size) when ``tiled``, else it must equal
    ``axis_size`` and is dropped. Binds jax's ``reduce_scatter``."""
    d = scatter_dimension % x.ndim
    n = x.shape[d]
    shape = list(x.shape)
    if tiled:
        if n % axis_size:
            raise ValueError(f"psum_scatter: dimension {d} of size {n} is not divisible by "
                             f"the axis size {axis_size}")
        shape[d] = n // axis_size
    else:
        if n != axis_size:
            raise ValueError(f"psum_scatter: dimension {d} of size {n} must equal the axis "
                             f"size {axis_size} (or pass tiled=True)")
        del shape[d]
    return bind("reduce_scatter", [x], [x.aval.update(shape=shape)], axis_name=_names(axis_name),
                scatter_dimension=d, axis_index_groups=_groups(axis_index_groups),
                axis_size=int(axis_size), tiled=bool(tiled))


def pbroadcast(x, axis_name, source):
    """Every device of the axis gets the value of the device at index ``source``."""
    return bind("pbroadcast", [x], [x.aval], axis_name=axis_name, source=int(source))


def pvary(x, axis_name):
    """Mark ``x`` as varying over the axes (jax's type bookkeeping; no operation)."""
    return bind("pvary", [x], [x.aval], axes=_names(axis_name))


def psum_invariant(x, axis_name):
    """psum whose result jax types as invariant over the axes (what jax.lax.psum binds when
    it checks varying types)."""
    return bind("psum_invariant", [x], [x.aval], axes=_names(axis_name))


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      axis_name, *, axis_index_groups=None):
    """For each peer j of the group, send ``operand[input_offsets[j]:][:send_sizes[j]]``
    (along dimension 0) to j, which writes it at ``output_offsets[j]`` of its copy of
    ``output`` (offsets in the receiver's output); ``recv_sizes[j]`` is what comes from j."""
    ints = (input_offsets, send_sizes, output_offsets, recv_sizes)
    for v in ints:
        if v.ndim != 1 or v.dtype.kind not in "iu":
            raise ValueError("ragged_all_to_all: offsets and sizes must be 1-D integer arrays, "
                             f"got {v.aval}")
    if operand.shape[1:] != output.shape[1:] or operand.dtype != output.dtype:
        raise ValueError(f"ragged_all_to_all: operand {operand.aval} and output {output.aval} "
                         "must agree in dtype and in every dimension but the first")
    return bind("ragged_all_to_all", [operand, output, *ints], [output.aval.strip_weak_type()],
                axis_name=_names(axis_name), axis_index_groups=_groups(axis_index_groups))


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_size, axis_index_groups=None,
               tiled=False):
    """Split ``split_axis`` in ``axis_size`` pieces, send piece i to device i of the group, and
    concatenate the received pieces along ``concat_axis`` (a new axis unless ``tiled``)."""
    groups = _groups(axis_index_groups)
    if tiled:
        if x.shape[split_axis] % axis_size:
            raise ValueError(f"all_to_all: split_axis size {x.shape[split_axis]} is not "
                             f"divisible by the axis size {axis_size}")
    else:
        if x.shape[split_axis] != axis_size:
            raise ValueError(f"all_to_all requires x.shape[split_axis] == axis size, got "
                             f"{x.shape[split_axis]} and {axis_size}")
        if split_axis < concat_axis:
            concat_axis += 1
            x = reshape(x, x.shape[:concat_axis] + (1,) + x.shape[concat_axis:])
        elif concat_axis < split_axis:
            x = reshape(x, x.shape[:concat_axis] + (1,) + x.shape[concat_axis:])
            split_axis += 1
    shape = list(x.shape)
    shape[split_axis] //= axis_size
    shape[concat_axis] *= axis_size
    out = bind("all_to_all", [x], [x.aval.update(shape=shape)], split_axis=split_axis,
               concat_axis=concat_axis, axis_name=axis_name, axis_index_groups=groups,
               tiled=bool(tiled))
    if not tiled and split_axis != concat_axis:
        out = reshape(out, out.shape[:split_axis] + out.shape[split_axis + 1:])
    return out


def ppermute(x, axis_name, perm):
    """Send ``x`` from axis index ``src`` to ``dst`` for each pair; others receive zeros."""
    return bind("ppermute", [x], [x.aval], axis_name=_names(axis_name),
                perm=tuple((int(s), int(d)) for s, d in perm))


def pshuffle(x, axis_name, perm):
    """Device i receives the value of device ``perm[i]``."""
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"perm does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def axis_index(axis_name, like: Tracer):
    """This device's index (int32) along ``axis_name``; ``like`` is any traced value of the
    function (it locates the trace)."""
    return builder_of([like]).emit(primitive("axis_index"), [], [ShapedArray((), np.int32)],
                                   {"axis_name": axis_name})[0]


def shard_map(f, mesh, in_specs, out_specs, check_vma=False, axis_names=None):
    """``shard_map(f, mesh, in_specs, out_specs)(*xs)``: run ``f`` once per device of ``mesh``
    on its block of each argument (split by the PartitionSpecs ``in_specs``); the results'
    blocks are assembled by ``out_specs``. Inside ``f``, the collectives of this module work
    over the mesh axes (their sizes are ``mesh.shape[name]``).

    ``axis_names`` (default: every mesh axis) are the axes ``f`` is manual over; XLA's
    partitioner splits the arrays over the others as it sees fit (partial manual), and the
    specs may name only the manual axes."""
    manual = frozenset(mesh.axis_names if axis_names is None else axis_names)
    unknown = manual - frozenset(mesh.axis_names)
    if unknown:
        raise NameError(f"shard_map: axis_names {sorted(unknown)} are not axes of {mesh}")

    def check_specs(what, specs):
        for s in specs:
            for entry in s:
                for a in _axes(entry):
                    if a not in manual:
                        raise ValueError(f"shard_map: {what} {s} names mesh axis {a!r}, which "
                                         f"is not manual (axis_names={sorted(manual)})")

    def call(*xs):
        b = builder_of(xs)
        specs = tuple(in_specs)
        if len(specs) != len(xs):
            raise ValueError(f"shard_map: {len(xs)} arguments but {len(specs)} in_specs")
        inner = [ShapedArray(spec_shard_shape(mesh, s, x.shape), x.dtype)
                 for s, x in zip(specs, xs)]
        closed = make_jaxpr(f)(*inner)
        many = isinstance(out_specs, (list, tuple)) and not _is_spec(out_specs)
        outs_spec = tuple(out_specs) if many else (out_specs,)
        if len(outs_spec) != len(closed.jaxpr.outvars):
            raise ValueError(f"shard_map: f returns {len(closed.jaxpr.outvars)} values but "
                             f"out_specs has {len(outs_spec)}")
        check_specs("in_specs", specs)
        check_specs("out_specs", outs_spec)
        # constants of the body become replicated leading arguments (jax's jaxpr is open)
        consts = [b.const(np.asarray(c)) for c in closed.consts]
        jaxpr = Jaxpr([], list(closed.jaxpr.constvars) + list(closed.jaxpr.invars),
                      closed.jaxpr.outvars, closed.jaxpr.eqns)
        full_out = []
        for s, a in zip(outs_spec, closed.out_avals):
            k = [int(np.prod([mesh.shape[n] for n in _axes(s[d])])) if d < len(s) else 1
                 for d in range(len(a.shape))]
            full_out.append(ShapedArray([n * m for n, m in zip(a.shape, k)], a.dtype))
        outs = bind("shard_map", consts + list(xs), full_out, multiple_results=True,
                    jaxpr=jaxpr, mesh=mesh, in_specs=(P(),) * len(consts) + specs,
                    out_specs=outs_spec, check_vma=check_vma, newly_manual_axes=manual)
        return outs if many else outs[0]
    return call


def _is_spec(s) -> bool:
    return type(s).__name__ == "PartitionSpec"


def _axes(entry) -> tuple:
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)
