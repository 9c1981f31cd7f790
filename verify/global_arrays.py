"""Global arrays over an SPMD program's devices: split by the shardings XLA compiled each
parameter with, put back together from each result's shards.

``Executable.run_sharded`` takes one list of arguments per device, which is what XLA runs;
``Executable.run_global`` takes whole arrays, as a JAX user holds them. Where each device's
piece comes from is read from the executable itself (``get_parameter_shardings`` /
``get_output_shardings``), so results whose sharding XLA chose by propagation are put back
correctly too. A tiled dimension that does not divide evenly is padded to the shard shape XLA
expects (ceil(size / tiles)), as XLA pads it, and cropped again on the way back.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .errors import ArgumentError

__all__ = ["Layout", "layout_of", "split", "assemble"]


class Layout:
    """Where one array lives on ``n`` devices: per device (in the executable's device order)
    the index ranges it holds, or ``None`` for a device that holds nothing of it."""

    def __init__(self, text: str, shape: tuple, pieces: list) -> None:
        self.text, self.shape, self.pieces = text, tuple(shape), pieces

    def __repr__(self) -> str:
        return f"<Layout {self.text} of {self.shape}>"


def layout_of(hlo_sharding, shape, n: int) -> Layout:
    """The Layout of an array of ``shape`` under a jaxlib ``HloSharding`` on ``n`` devices."""
    text = str(hlo_sharding)
    shape = tuple(shape)
    full = tuple((0, d) for d in shape)
    if hlo_sharding.is_replicated() or hlo_sharding.is_unknown():
        return Layout(text, shape, [full] * n)
    if hlo_sharding.is_maximal():
        # One device computes it; every device is handed the whole value (XLA ignores the
        # others' copies), and results are read from that device.
        (device,) = hlo_sharding.tile_assignment_devices()[:1]
        return Layout(text, shape, [full if d == device else None for d in range(n)])
    if hlo_sharding.is_manual() or any(
            "MANUAL" in str(t) for t in hlo_sharding.subgroup_types()):
        raise ArgumentError(f"an array with sharding {text} is manual (each device's own "
                            "value): pass per-device arrays with run_sharded")
    if not hlo_sharding.is_tiled():
        if "unreduced" in text:
            raise ArgumentError(f"an array with sharding {text} is unreduced (each device "
                                "holds a part of a sum): pass per-device arrays with "
                                "run_sharded")
        raise ArgumentError(f"sharding {text} is neither replicated, maximal nor tiled: "
                            "pass per-device arrays with run_sharded")
    dims = list(hlo_sharding.tile_assignment_dimensions())
    devices = list(hlo_sharding.tile_assignment_devices())
    rank = len(shape)
    if len(dims) < rank:
        raise ArgumentError(f"sharding {text} tiles {len(dims)} dimensions of an array of "
                            f"rank {rank}")
    # Tile dimensions past the data's are replicated (or subgroup) ones: devices along
    # them hold the same piece.
    pieces: list = [None] * n
    for flat, position in enumerate(itertools.product(*(range(k) for k in dims))):
        device = devices[flat]
        if device >= n:
            raise ArgumentError(f"sharding {text} names device {device}, but the program "
                                f"runs on {n}")
        ranges = []
        for d in range(rank):
            size = math.ceil(shape[d] / dims[d]) if shape[d] else 0
            lo = min(position[d] * size, shape[d])
            ranges.append((lo, min(lo + size, shape[d])))
        pieces[device] = tuple(ranges)
    return Layout(text, shape, pieces)


def split(array: np.ndarray, layout: Layout, shard_shape) -> list:
    """Per device, its piece of ``array`` (zero-padded to ``shard_shape`` where the tiling
    is uneven); a device holding nothing gets the whole array."""
    out = []
    for piece in layout.pieces:
        if piece is None:
            out.append(array)
            continue
        part = array[tuple(slice(lo, hi) for lo, hi in piece)]
        if part.shape != tuple(shard_shape):
            pad = [(0, s - p) for s, p in zip(shard_shape, part.shape)]
            part = np.pad(part, pad)
        out.append(np.ascontiguousarray(part) if part.ndim else part)
    return out


def assemble(shards: list, layout: Layout, dtype) -> np.ndarray:
    """The global array from each device's shard (cropped of padding). A piece several
    devices hold (replicated) is read from the first of them in device order, as a jax.Array
    reads it: their copies differ only where the program broke its promise of replication
    (a shard_map with check_vma=False), and then jax's answer is the first device's."""
    out = np.empty(layout.shape, dtype)
    filled = False
    seen = set()
    for piece, shard in zip(layout.pieces, shards):
        if piece is None:
            continue
        key = tuple(map(tuple, piece))
        if key in seen:
            continue
        seen.add(key)
        region = tuple(slice(lo, hi) for lo, hi in piece)
        crop = tuple(slice(0, hi - lo) for lo, hi in piece)
        out[region] = shard[crop]
        filled = True
    if not filled:
        raise ArgumentError(f"no device holds a piece of the result with sharding "
                            f"{layout.text}")
    return out
