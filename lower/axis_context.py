"""Axis contexts: what collective rules need to know about the devices a module runs on.

Mirrors JAX's (``jax._src.sharding_impls``) three contexts, read by the collective rules from
``ctx.module_context.axis_context``:

- ``ReplicaAxisContext(axis_env)``: pmap-style. The program runs once per *replica*; named
  axes (``AxisEnv.names``/``sizes``) are laid out row-major over the replica ids, and
  collectives use replica groups of replica ids.
- ``SPMDAxisContext(mesh, manual_axes)``: inside a manually partitioned region (shard_map) of
  an SPMD program. The device mesh's axes are the named axes; collectives carry a fresh channel
  handle and ``use_global_device_ids`` (their groups name partition ids), and ``axis_index``
  reads ``partition_id``. When only some mesh axes are manual (the others left to XLA's
  partitioner), the groups still list devices of the whole mesh, as jax's do.
- ``ShardingContext(num_devices)``: an SPMD program that XLA's partitioner partitions (jit with
  shardings). There are no named axes; collectives inside need a manual region (the
  ``shard_map`` rule enters one, under an SPMDAxisContext).

``PartitionSpec``/``spec_to_hlo_sharding`` turn jax-style partition specs over a mesh into
XLA's sharding text (``{devices=[4,1,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}``).

A mesh is anything with ``axis_names`` and ``shape`` (an ordered mapping from axis name to
size), like ``jax.sharding.Mesh``; ``Mesh`` below is a small stand-in.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import math
from typing import Any, NamedTuple, Sequence

import numpy as np

__all__ = ["AxisEnv", "Mesh", "PartitionSpec", "P", "spec_shard_shape", "spec_to_hlo_sharding",
           "ReplicaAxisContext", "SPMDAxisContext", "ShardingContext", "axis_env_of", "is_spmd",
           "axis_groups", "replica_groups", "replica_groups_array", "manual_sharding",
           "mesh_device_ids", "manual_axes_of"]


class AxisEnv(NamedTuple):
    """``nreps`` devices; named axes of the given sizes, the first one the slowest varying.
    ``nreps`` may be a multiple of the axes' product (trailing, unnamed devices)."""
    nreps: int
    names: tuple
    sizes: tuple


class Mesh:
    """A device mesh: an array of device ids with one name per axis (``jax.sharding.Mesh``'s
    shape, without devices)."""

    def __init__(self, devices, axis_names: Sequence):
        self.devices = np.asarray(devices)
        self.axis_names = tuple(axis_names)
        if self.devices.ndim != len(self.axis_names):
            raise ValueError(f"a mesh of rank {self.devices.ndim} needs as many axis names, "
                             f"got {self.axis_names}")

    @classmethod
    def create(cls, shape: dict) -> "Mesh":
        """A mesh of devices ``0..n-1`` in row-major order: ``Mesh.create({"x": 2, "y": 4})``."""
        sizes = tuple(shape.values())
        return cls(np.arange(math.prod(sizes)).reshape(sizes), tuple(shape))

    @property
    def shape(self) -> collections.OrderedDict:
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    def __repr__(self):
        return f"Mesh({dict(self.shape)})"


@dataclasses.dataclass(frozen=True)
class ReplicaAxisContext:
    axis_env: AxisEnv


@dataclasses.dataclass(frozen=True)
class SPMDAxisContext:
    mesh: Any
    manual_axes: frozenset = frozenset()

    @property
    def axis_env(self) -> AxisEnv:
        # Every collective that reads this must also set use_global_device_ids (and a channel).
        return AxisEnv(nreps=int(math.prod(self.mesh.shape.values())),
                       names=tuple(self.mesh.axis_names),
                       sizes=tuple(self.mesh.shape.values()))

    def extend_manual(self, axes) -> "SPMDAxisContext":
        return SPMDAxisContext(self.mesh, self.manual_axes | frozenset(axes))


@dataclasses.dataclass(frozen=True)
class ShardingContext:
    num_devices: int
    device_assignment: tuple | None = None

    @property
    def axis_env(self) -> AxisEnv:
        return AxisEnv(nreps=1, names=(), sizes=())


def is_spmd(axis_context) -> bool:
    """Whether collectives address partitions (channel + global device ids), not replicas."""
    return type(axis_context).__name__ in ("SPMDAxisContext", "ShardingContext")


def manual_axes_of(axis_context) -> frozenset:
    """The mesh axes already partitioned by hand (inside shard_map); empty outside."""
    return frozenset(getattr(axis_context, "manual_axes", None) or ())


def partly_manual(axis_context) -> frozenset:
    """The manual axes of a shard_map region manual over some of its mesh's axes only (the
    others left to XLA's partitioner); empty outside shard_map and where every axis is
    manual. XLA's GSPMD partitioner wants values made there marked as a manual subgroup."""
    manual = manual_axes_of(axis_context)
    if manual and manual != frozenset(axis_context.mesh.axis_names):
        return manual
    return frozenset()


def axis_env_of(ctx, primitive: str = "collective") -> AxisEnv:
    """The axis environment of a rule context (or a module context), with a clear error when
    the module was lowered without an axis context."""
    mctx = getattr(ctx, "module_context", ctx)
    axis_context = getattr(mctx, "axis_context", None)
    if axis_context is None:
        raise ValueError(
            f"'{primitive}' names mesh axes, but the module is lowered without an axis "
            "context: give the ModuleContext a ReplicaAxisContext (replicas) or an "
            "SPMDAxisContext (manual partitions) from lower.axis_context")
    return axis_context.axis_env


def _axis_position(axis_env: AxisEnv, name) -> int:
    try:
        return list(axis_env.names).index(name)
    except ValueError:
        raise NameError(f"unbound axis name: {name!r} (the axis environment names "
                        f"{list(axis_env.names)})") from None


def axis_groups(axis_env: AxisEnv, name) -> tuple:
    """The device groups that vary along the named axes (one group per combination of the
    other axes), each listing the devices in the order of the named axes' indices."""
    names = name if isinstance(name, (tuple, list)) else (name,)
    mesh_axes = tuple(_axis_position(axis_env, n) for n in names)
    trailing, ragged = divmod(axis_env.nreps, math.prod(axis_env.sizes))
    if ragged:
        raise ValueError(f"{axis_env.nreps} devices are not a multiple of the axis sizes "
                         f"{axis_env.sizes}")
    spec = tuple(axis_env.sizes) + (trailing,)
    ids = np.arange(math.prod(spec)).reshape(spec)
    moved = np.moveaxis(ids, mesh_axes, np.arange(len(mesh_axes)))
    groups = moved.reshape(math.prod(spec[a] for a in mesh_axes), -1)
    return tuple(tuple(int(x) for x in g) for g in groups.T)


def replica_groups(axis_env: AxisEnv, axis_name, axis_index_groups=None) -> list:
    """Groups for a collective over ``axis_name``; ``axis_index_groups`` (lists of indices
    along the axis) split each group further."""
    groups = axis_groups(axis_env, axis_name)
    if axis_index_groups is not None:
        groups = tuple(tuple(g[i] for i in idx) for g in groups for idx in axis_index_groups)
    return [list(g) for g in groups]


def replica_groups_array(groups) -> np.ndarray:
    """Groups as MHLO's rectangular i64 array; shorter groups are padded with -1."""
    cols = list(itertools.zip_longest(*groups, fillvalue=-1))
    return np.ascontiguousarray(np.array(cols, dtype=np.int64).reshape(len(cols), -1).T)


class PartitionSpec(tuple):
    """How each dimension of an array is split over mesh axes (``jax.sharding.PartitionSpec``):
    one entry per dimension, None (not split), an axis name, or a tuple of names."""

    def __new__(cls, *entries):
        return super().__new__(cls, entries)

    def __repr__(self):
        return f"PartitionSpec{tuple.__repr__(self)}"


P = PartitionSpec


def _spec_axes(entry) -> tuple:
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)


def spec_shard_shape(mesh, spec, shape) -> tuple:
    """The per-device shape of an array of ``shape`` split by ``spec`` over ``mesh``."""
    sizes = mesh.shape
    out = []
    for d, n in enumerate(shape):
        k = math.prod(sizes[a] for a in _spec_axes(spec[d])) if d < len(spec) else 1
        if n % k:
            raise ValueError(f"dimension {d} of size {n} does not split evenly over "
                             f"{_spec_axes(spec[d])} ({k} ways)")
        out.append(n // k)
    return tuple(out)


def mesh_device_ids(mesh) -> np.ndarray:
    """The mesh's devices as the integer ids XLA's shardings and replica groups name: the
    ``devices`` of an integer mesh (lower.axis_context.Mesh), else their positions in the mesh
    (jax's meshes hold Device objects; an AbstractMesh has none), as jax numbers them."""
    try:
        devices = np.asarray(mesh.devices)
    except (AttributeError, ValueError):  # jax's AbstractMesh raises ValueError
        devices = None
    if devices is not None and devices.dtype.kind in "iu":
        return devices
    return np.arange(math.prod(mesh.shape.values())).reshape(tuple(mesh.shape.values()))


def spec_to_hlo_sharding(mesh, spec, ndim: int, manual_axes=()) -> str:
    """XLA's sharding text for ``spec`` over ``mesh`` (``{devices=[2,1,4]... last_tile_dim_
    replicate}`` when some mesh axes are not used: the array is replicated over them).

    ``manual_axes`` are mesh axes already partitioned by hand (inside a shard_map): they
    become a manual subgroup (``last_tile_dims={manual, replicated}``), as jax's shardings of
    a mesh whose axes are partly Manual; ``spec`` may not use them."""
    sizes = mesh.shape
    names = list(mesh.axis_names)
    manual_axes = frozenset(manual_axes)
    dims, order = [], []
    for d in range(ndim):
        axes = _spec_axes(spec[d]) if d < len(spec) else ()
        for a in axes:
            if a not in sizes:
                raise NameError(f"unbound axis name: {a!r} (the mesh has {names})")
            if a in manual_axes:
                raise ValueError(f"mesh axis {a!r} is already manual here: a spec inside a "
                                 "shard_map over it cannot split an array along it")
        dims.append(math.prod(sizes[a] for a in axes))
        order += [names.index(a) for a in axes]
    manual = [i for i, n in enumerate(names) if n in manual_axes and i not in order]
    unused = [i for i in range(len(names)) if i not in order and i not in manual]
    n_manual = math.prod(sizes[names[i]] for i in manual)
    replicated = math.prod(sizes[names[i]] for i in unused)
    if n_manual == 1:  # manual axes of size 1 split nothing
        unused, manual = sorted(unused + manual), []
    elif math.prod(dims) == 1 and replicated == 1:
        return "{manual}"
    if math.prod(dims) == 1 and not manual:
        return "{replicated}"
    ids = np.transpose(mesh_device_ids(mesh), order + manual + unused).reshape(-1)
    tile = dims + ([n_manual] if manual else []) + ([replicated] if replicated > 1 else [])
    text = f"{{devices=[{','.join(map(str, tile))}]{','.join(str(int(i)) for i in ids)}"
    if manual:
        return text + (" last_tile_dims={manual, replicated}}" if replicated > 1
                       else " last_tile_dims={manual}}")
    return text + (" last_tile_dim_replicate}" if replicated > 1 else "}")


def manual_sharding(mesh, manual_axes, ndim: int) -> str:
    """The sharding of a value inside a shard_map that is manual over ``manual_axes``:
    ``{manual}`` when every mesh axis is manual, else a manual subgroup replicated over the
    other axes (jax's ``manual_proto``)."""
    return spec_to_hlo_sharding(mesh, PartitionSpec(), ndim, manual_axes)
