"""Reproducers on disk: a program's text (``.mlir``) and its inputs (``.npz``), which keep
ml_dtypes element types (numpy's own ``savez`` writes them as opaque void bytes)."""

from __future__ import annotations

import numpy as np

__all__ = ["save_inputs", "load_inputs", "load"]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}


def save_inputs(path: str, arrays) -> None:
    """Each array's bits as unsigned words, with its element type's MHLO name beside it."""
    from mhlo_ir import dtypes
    out = {}
    for i, a in enumerate(arrays):
        a = np.asarray(a)
        et = dtypes.from_numpy(a.dtype)
        flat = np.ascontiguousarray(a).reshape(-1)
        words = flat.view(np.uint64).reshape(a.shape + (2,)) if a.dtype.itemsize == 16 else \
            flat.view(_UINT[a.dtype.itemsize]).reshape(a.shape)
        out[f"arg{i}"] = words
        out[f"arg{i}_type"] = np.array(et.name)
    np.savez(path, **out)


def load_inputs(path: str) -> list:
    from mhlo_ir import dtypes
    z = np.load(path)
    n = sum(1 for k in z.files if not k.endswith("_type"))
    out = []
    for i in range(n):
        et = dtypes.element_type(str(z[f"arg{i}_type"]))
        words = z[f"arg{i}"]
        shape = words.shape[:-1] if et.dtype.itemsize == 16 else words.shape
        out.append(np.ascontiguousarray(words).reshape(-1).view(et.dtype).reshape(shape))
    return out


def load(base: str):
    """``(module, inputs)`` of a reproducer saved as ``base.mlir`` and ``base.npz``."""
    import mhlo_ir
    return mhlo_ir.parse_file(base + ".mlir"), load_inputs(base + ".npz")
