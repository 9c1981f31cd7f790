"""Which parameter layouts ``Executable`` can run: jaxlib's copy to a device lays an array out
in the device's default layout for its shape, and a program compiled to read a parameter in
another (``mhlo.layout_mode = "{0,1}"`` on CPU, whose default is row-major) would read the
bytes in its own order: its numbers would be those of the transposed array (results come back
right). Such a program is refused before it runs. A TPU's defaults are tiled and often not
row-major (``{0,1:T(2,128)}`` for an 8x2 f32): those are what the copy writes, and run."""

from __future__ import annotations

import re

from .errors import ArgumentError

__all__ = ["check_parameter_layouts"]


def check_parameter_layouts(exe) -> None:
    """ArgumentError for the first parameter of ``exe`` (a ``verify.Executable``) whose
    compiled layout is neither the device's default for its (shard) shape nor, where jaxlib
    cannot say that default, row-major."""
    try:
        layouts = exe.loaded.get_parameter_layouts()
    except Exception:  # noqa: BLE001 - jaxlib's: a token parameter has no layout
        return  # (and is refused as an argument before any run)
    shapes = exe.shard_shapes() if layouts and exe.num_partitions > 1 else \
        [p[0] if p is not None else None for p in exe.parameters]
    for i, layout in enumerate(layouts):
        if _default_layout(exe, i, shapes) == str(layout):
            continue
        text = str(layout)
        order = re.match(r"\{([\d,\s]*)", text)
        dims = [int(d) for d in order.group(1).split(",") if d.strip()] if order else []
        shape = shapes[i] if i < len(shapes) and shapes[i] is not None else None
        # (dimensions of size 1 do not move an element: {0,1} of a 1x3 array is row-major)
        moving = [d for d in dims if shape is None or d >= len(shape) or shape[d] != 1]
        if moving != sorted(moving, reverse=True):
            raise ArgumentError(
                f"argument {i}: the program takes it in layout {layout} (its "
                "mhlo.layout_mode), which run() cannot pass: jaxlib's copy to the device "
                "writes arrays in the device's default layout, which the program would read "
                "in its own order (it compiles as it is; leave the argument's layout "
                "default to run it)")
        tile = re.search(r":[^}]*?T\(([\d,]+)\)", text)
        if tile and shape is not None and _padded(shape, dims, tile.group(1)) != \
                _count(shape):
            raise ArgumentError(
                f"argument {i}: the program takes it in the tiled layout {layout} (its "
                "mhlo.layout_mode), whose tiles pad it: jaxlib's copy to the device writes "
                "the array untiled, and the run would fail on the buffer's size (leave the "
                "argument's layout default to run it)")


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _padded(shape, minor_to_major, tile_text: str) -> int:
    """Elements of ``shape`` laid out in tiles ``tile_text`` ("2,128": the minor-most
    dimensions in the layout's order, each rounded up to its tile)."""
    tile = [int(t) for t in tile_text.split(",")]
    padded = list(shape)
    physical = list(reversed(minor_to_major))  # major to minor
    for d, t in zip(physical[-len(tile):], tile[-len(physical):] if physical else ()):
        padded[d] = -(-padded[d] // t) * t
    return _count(padded)


def _default_layout(exe, i: int, shapes) -> str | None:
    """The text of the device's default layout of parameter ``i``'s (shard) shape, or None
    where jaxlib cannot say (then the row-major test decides)."""
    p = exe.parameters[i] if i < len(exe.parameters) else None
    if p is None or i >= len(shapes) or shapes[i] is None:
        return None
    try:
        return str(exe.client.get_default_layout(p[1], tuple(shapes[i]), exe.devices[0]))
    except Exception:  # noqa: BLE001 - jaxlib's error types
        return None
