"""Compile-only TPU: XLA:TPU, through libtpu, compiles programs for a TPU topology on this
machine, with no TPU attached, so users without one can see what the compiler makes of their
programs (the optimized HLO, cost and memory figures, the partitioner's collectives) and find
what it refuses before they rent one.

libtpu comes with the ``tpu`` extra (``pip install 'mhlo-ir[tpu]'``: JAX's ``jax[tpu]``
pins the libtpu built for its jaxlib). Loading it without a TPU needs ``TPU_SKIP_MDS_QUERY``
set first, or it queries a cloud metadata server for ~10 minutes; this module sets that (and
the worker-host variables libtpu warns about) unless the caller has. The compile-only client
takes a parsed module, not text: the MLIR bindings inside jaxlib parse it
(``verify.bindings``), as everywhere in verify/ that jaxlib demands a parsed module.

A topology is ``GENERATION:CHIPS`` as Cloud TPU names them: ``v5e:2x2`` (4 chips),
``v5e:2x4``, ``v6e:2x2``, ``v5p:2x2x1``, ``v4:2x2x1``, ``v3:2x2``, ``v2:2x2``,
``tpu7x:2x2x1``... (``TOPOLOGY_EXAMPLES``).
"""

from __future__ import annotations

import os
import re
import tempfile
import threading

from . import _jaxlib
from .errors import PlatformUnavailable

__all__ = ["devices", "compile_text", "TOPOLOGY_EXAMPLES", "INSTALL_HINT"]

INSTALL_HINT = "pip install 'mhlo-ir[tpu]'"

# Topologies that compile with jaxlib 0.10.2 and libtpu 0.0.42 (see docs and tests).
TOPOLOGY_EXAMPLES = ("v5e:2x2", "v5e:2x4", "v5e:4x4", "v6e:2x2", "v6e:8x8", "v5p:2x2x1",
                     "v5p:4x4x4", "v4:2x2x1", "v3:2x2", "v2:2x2", "tpu7x:2x2x1")
# The longest side of a v5e slice libtpu compiles for.
_V5E_SIDE = 16
_CHIPS = re.compile(r"[=_:]([0-9]+(?:x[0-9]+)*)(?:_twisted|_untwisted)?$")
_FORM = re.compile(r"^[A-Za-z0-9_ ]+[=_:][0-9]+(?:x[0-9]+)*(?:_twisted|_untwisted)?$")

_lock = threading.Lock()
_loaded: list = []         # [True] once the plugin is initialized in this process
_devices: dict = {}        # topology -> its compile-only devices


def _environment() -> None:
    # Without a TPU (and without jax, which sets these), libtpu asks a cloud metadata server
    # for the machine's TPU and hangs ~10 minutes, then warns about worker hostnames.
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
    # libtpu takes a machine-wide lock file (/tmp/libtpu_lockfile) so that one process owns
    # the TPU; compiling touches no TPU, and several processes may compile at once.
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    os.environ.setdefault("TPU_LOG_DIR", os.path.join(tempfile.gettempdir(), "mhlo_ir_tpu_logs"))


def _load_plugin() -> None:
    if _loaded:
        return
    try:
        import libtpu
    except ImportError:
        raise PlatformUnavailable(
            "tpu", f"libtpu is not installed: {INSTALL_HINT}",
            [p for p in _jaxlib.available_platforms()]) from None
    _environment()
    xc, _ = _jaxlib.xla()
    try:
        xc.load_pjrt_plugin_dynamically("tpu", libtpu.get_library_path())
        xc.initialize_pjrt_plugin("tpu")
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
        # jax, imported in this process, registers the plugin itself when libtpu is there.
        if "ALREADY_EXISTS" not in str(e):
            raise
    _loaded.append(True)


def _check_jax_left_libtpu_usable() -> None:
    """jax, when it initialises its backends in this process, loads libtpu too. If that
    failed on libtpu's lock file (another process holds /tmp/libtpu_lockfile and this one
    imported jax before verify could set ALLOW_MULTIPLE_LIBTPU_LOAD), libtpu is left half
    initialised and making a topology aborts the process: say so instead."""
    import sys
    bridge = sys.modules.get("jax._src.xla_bridge")
    errors = getattr(bridge, "_backend_errors", None) or {}
    why = str(errors.get("tpu", ""))
    if "lockfile" in why:
        raise PlatformUnavailable(
            "tpu", "jax initialised libtpu in this process and failed on its lock file, "
            "which another process holds; set ALLOW_MULTIPLE_LIBTPU_LOAD=1 before jax starts "
            f"(or compile for TPU before using jax) ({' '.join(why.split())})",
            _jaxlib.available_platforms())


def devices(topology: str) -> list:
    """The compile-only devices of ``topology`` (one per chip; their ``.client`` compiles).
    PlatformUnavailable without libtpu; ValueError, listing the accepted forms, for a
    topology libtpu does not know."""
    if not isinstance(topology, str) or not _FORM.match(topology):
        raise ValueError(f"topology {topology!r} is not of the form GENERATION:CHIPS; "
                         f"for example {', '.join(TOPOLOGY_EXAMPLES)}")
    chips = _CHIPS.search(topology)  # (what _FORM matched: the generation, then the chips)
    generation, sides = topology[:chips.start()], [int(x) for x in chips.group(1).split("x")]
    if generation.strip().lower() == "v5e" and max(sides) > _V5E_SIDE:
        # (libtpu takes the shape, lists its chips, and aborts the process at the first
        # compile: "Check failed: Topology()->chip_bounds().x <= 16")
        raise ValueError(f"topology {topology!r}: a v5e slice is at most {_V5E_SIDE} chips on "
                         f"a side (libtpu aborts the process compiling for a larger one); for "
                         f"example {', '.join(TOPOLOGY_EXAMPLES)}")
    with _lock:
        if topology in _devices:
            return _devices[topology]
        _load_plugin()
        _check_jax_left_libtpu_usable()
        xc, _ = _jaxlib.xla()
        try:
            devs = xc.make_tfrt_tpu_c_api_device_topology(topology)._make_compile_only_devices()
        except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
            why = " ".join(str(e).split()).removeprefix("INVALID_ARGUMENT: ")
            raise ValueError(f"libtpu does not accept topology {topology!r} ({why}); "
                             f"accepted forms: {', '.join(TOPOLOGY_EXAMPLES)}") from None
        _devices[topology] = devs
        return devs


def compile_text(text: str, topology: str, options, n: int):
    """Compile ``text`` (verified MLIR) with XLA ``options`` for the first ``n`` chips of
    ``topology``: ``(compiled, devices)``. Raises ValueError when the topology has fewer
    chips than the program needs; jaxlib's own error for what XLA:TPU refuses."""
    devs = devices(topology)
    if n > len(devs):
        raise ValueError(f"topology {topology} has {len(devs)} chips; the program needs {n} "
                         "(replicas x partitions): choose a larger topology")
    from . import bindings
    ir, ctx = bindings.context()
    xc, _ = _jaxlib.xla()
    client = devs[0].client

    def parse_and_compile():
        with ctx:
            module = ir.Module.parse(text)
            return client.compile(module, executable_devices=xc.DeviceList(tuple(devs[:n])),
                                  compile_options=options)
    return _jaxlib.on_big_stack(parse_and_compile), devs[:n]
