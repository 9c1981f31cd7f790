"""jaxlib's LAPACK kernels as XLA CPU custom-call targets, registered on first need.

Modules lowered for CPU call LAPACK through typed-FFI custom calls (``lapack_sgeqrf_ffi``,
``tridiagonal_solve_perturbed_ffi``...). The kernels ship in jaxlib (``jaxlib.cpu._lapack``,
which takes LAPACK itself from scipy); ``import jax`` registers them, jaxlib alone does not,
and XLA then refuses the program ("No FFI handler registered for lapack_sgeqrf_ffi").
"""

from __future__ import annotations

import re
import threading

from . import _jaxlib

__all__ = ["needs_lapack", "register", "register_if_needed"]

# A custom call's target, in the generic form (call_target_name = "...") or the pretty one
# (custom_call @...).
_TARGET = re.compile(r'(?:call_target_name = "|custom_call @)'
                     r'(?:lapack_\w+|tridiagonal_solve_perturbed_ffi)')

_lock = threading.Lock()
_registered = False


def needs_lapack(text: str) -> bool:
    """Whether the module text calls one of jaxlib's LAPACK targets."""
    return _TARGET.search(text) is not None


def register() -> list:
    """Register every LAPACK target of jaxlib with XLA's CPU runtime (once per process; a
    no-op for targets jax registered already). Returns the target names."""
    global _registered
    xc, X = _jaxlib.xla()
    _lapack = _jaxlib.require("jaxlib.cpu._lapack")
    names = sorted(_lapack.registrations())
    with _lock:
        if _registered:
            return names
        # What xla_client.make_cpu_client does first: without a handler for the platform,
        # registrations are only queued (verify makes its clients without make_cpu_client).
        xc.register_custom_call_handler("cpu", X.register_custom_call_target)
        _lapack.initialize()  # loads the LAPACK routines (from scipy)
        for name, fn in _lapack.registrations().items():
            # api_version 1 is the typed FFI, the one the *_ffi targets use
            xc.register_custom_call_target(name, fn, "cpu", int(name.endswith("_ffi")))
            if name.endswith("_ffi"):
                # Shardable along leading batch dimensions (num_batch_dims), as jax declares.
                xc.register_custom_call_as_batch_partitionable(name)
        _registered = True
    return names


def register_if_needed(text: str, platform: str) -> None:
    """Register the LAPACK targets before compiling ``text`` for CPU if it calls one."""
    if platform == "cpu" and not _registered and needs_lapack(text):
        register()
