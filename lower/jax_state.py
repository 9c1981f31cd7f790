"""What the lowering reads of a jax that is loaded, where jax's own lowering reads its
configuration or plugins while lowering (the jaxpr does not record it): the x64 flag (qr's
mask type, callbacks' result types), ``jax_use_magma``, the CUDA plugin's cuSOLVER version.
Never imports jax: without it, each reader's caller says what holds."""

from __future__ import annotations

import sys


def jax_attr(module: str, name: str):
    """``module.name`` of a loaded jax module (``"jax._src.config"``), else None."""
    return getattr(sys.modules.get(module), name, None)


def x64(default: bool) -> bool:
    """jax's ``jax_enable_x64`` now; ``default`` where jax is not loaded."""
    flag = jax_attr("jax._src.config", "enable_x64")
    return bool(flag.value) if flag is not None else default
