"""The thin layer over jaxlib's C++ runtime: clients, putting numpy arrays on devices, reading
results back. Works with jaxlib alone (no ``import jax``).

``import jax`` normally attaches Python methods to jaxlib's classes; without it, putting an
array on a device needs two small stand-ins, an aval-like object and a sharding that can name
its HLO sharding. Both are defined here.

jaxlib is imported only here (and through ``require``), on first use: ``import verify`` works
without it, and everything that needs it raises ``JaxlibMissing``, one line saying what to
install, instead of the import machinery's traceback.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from typing import TYPE_CHECKING

import numpy as np

from .errors import JaxlibMissing, PlatformUnavailable

if TYPE_CHECKING:
    from types import ModuleType

    from jaxlib.xla_client import ArrayImpl, Client, Device

PLATFORMS = ("cpu", "cuda", "rocm")
_ALIASES = {"gpu": "cuda"}


def require(module: str) -> ModuleType:
    """Import ``module`` from jaxlib (``jaxlib.cpu._lapack``, ``jaxlib.mlir.ir``...), raising
    JaxlibMissing when jaxlib itself cannot be imported."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if (e.name or "").split(".")[0] == "jaxlib" or "jaxlib" in str(e):
            raise JaxlibMissing(str(e)) from None
        raise


@functools.lru_cache(maxsize=None)
def xla() -> tuple:
    """``(xla_client, _xla)`` imported on first use, so ``import verify`` stays cheap."""
    # XLA logs INFO lines (client creation) to stderr; they are not errors. Users who want
    # them set TF_CPP_MIN_LOG_LEVEL=0 themselves.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    xc = require("jaxlib.xla_client")
    return xc, xc._xla


_lock = threading.Lock()
_clients: dict = {}
_failed: dict = {}  # (platform, num_devices) -> why no client could be made (it won't change)


class _NoClient(Exception):
    """A platform's client cannot be made (the reason is the message)."""


def normalize(platform: str) -> str:
    """The canonical platform name (``gpu`` is ``cuda``); ValueError for an unknown one.
    ``tpu`` is not one of ``PLATFORMS``: it compiles for a topology without chips
    (``verify.tpu``) or runs on the chips attached to a TPU VM (``tpu_attached``)."""
    p = _ALIASES.get(platform, platform)
    if p not in PLATFORMS and p != "tpu":
        raise ValueError(f"unknown platform {platform!r}; expected one of 'cpu', 'cuda' "
                         "(or 'gpu'), 'rocm', or 'tpu' (the attached TPU, or compile-only with "
                         "a topology)")
    return p


def client(platform: str = "cpu", num_devices: int | None = None) -> Client:
    """One PJRT client per (platform, device count) per process, created on first use.

    PlatformUnavailable (naming the platforms that do work) when there is no such device
    or plugin here; JaxlibMissing without jaxlib.
    """
    platform = normalize(platform)
    if platform == "tpu":
        if not tpu_attached():
            raise PlatformUnavailable("tpu", "no TPU is attached to this machine: "
                                      "verify.compile(module, platform='tpu', "
                                      "topology='v5e:2x2') compiles without one, and nothing "
                                      "runs", available_platforms())
        try:
            return _cached_client("tpu", None)
        except _NoClient as e:
            raise PlatformUnavailable("tpu", str(e), available_platforms()) from None
    try:
        return _cached_client(platform, num_devices)
    except _NoClient as e:
        raise PlatformUnavailable(platform, str(e), available_platforms()) from None


def _cached_client(platform, num_devices):
    key = (platform, num_devices)
    with _lock:
        c = _clients.get(key)
        if c is not None:
            return c
        if key in _failed:
            raise _NoClient(_failed[key])
        try:
            c = _clients[key] = _make_client(platform, num_devices)
        except _NoClient as e:
            _failed[key] = str(e)
            raise
        return c


def available_platforms() -> list:
    """The platforms a client can be made for here (tries each once per process)."""
    xla()  # without jaxlib, none: say so rather than answer []
    out = []
    for p in PLATFORMS:
        try:
            _cached_client(p, None)
        except _NoClient:
            continue
        out.append(p)
    return out


def tpu_attached() -> bool:
    """Whether this machine has TPU chips (Cloud TPU VMs expose them as ``/dev/accel*`` or,
    v5e and newer, ``/dev/vfio/<n>``), without loading libtpu: starting a TPU runtime takes
    the chips and libtpu's process lock, which compile-only use must not."""
    import glob
    return bool(glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*"))


def _tpu_client():
    """The attached TPUs' client, through jax (``jax[tpu]`` on a TPU VM), which starts
    libtpu's runtime the way Cloud TPU expects."""
    try:
        import jax
    except ImportError:
        raise _NoClient("running on the attached TPU goes through jax: pip install "
                        "'jax[tpu]'") from None
    try:
        return jax.devices("tpu")[0].client
    except RuntimeError as e:
        raise _NoClient(f"jax: {e}") from None


def _make_client(platform, num_devices):
    xc, X = xla()
    if platform == "tpu":
        return _tpu_client()
    if platform == "cpu":
        if num_devices is None:
            return X.get_tfrt_cpu_client(asynchronous=False)
        return X.get_tfrt_cpu_client(asynchronous=False, num_devices=num_devices)
    return _gpu_client(platform)


_PLUGINS = {"cuda": ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12")}


def _gpu_client(platform):
    """A GPU client: through jax when it is installed (it initialises the plugin), else by
    loading the CUDA PJRT plugin that ships as the ``jax_plugins`` package."""
    try:
        import jax  # noqa: F401  (initialises the GPU plugin)
    except ImportError:
        pass
    else:
        try:
            return jax.devices(platform)[0].client
        except RuntimeError as e:
            raise _NoClient(f"jax: {e}") from None
    xc, X = xla()
    for mod in _PLUGINS.get(platform, ()):
        try:
            plugin = importlib.import_module(mod)
        except ImportError:
            continue
        try:
            xc.load_pjrt_plugin_dynamically(platform, plugin._get_library_path())
            xc.initialize_pjrt_plugin(platform)
            c = xc.make_c_api_client(platform)
        except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error types
            raise _NoClient(f"{mod}: {e}") from None
        if not c.devices():
            raise _NoClient(f"{mod} found no {platform} device")
        return c
    hint = "pip install 'jax[cuda13]'" if platform == "cuda" else "install jax with ROCm"
    raise _NoClient(f"no {platform} PJRT plugin is installed ({hint})")


def has_platform(platform: str) -> bool:
    """Whether a client for ``platform`` can be made here (used to skip GPU tests): False,
    not an error, for an unknown platform or without jaxlib, since the answer is then no."""
    try:
        return bool(client(platform).devices())
    except (PlatformUnavailable, JaxlibMissing, ValueError):
        return False


class _Aval:
    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = False


@functools.lru_cache(maxsize=None)
def _sharding_classes():
    xc, X = xla()

    class SingleDevice(X.SingleDeviceSharding):
        memory_kind = None

        def _to_xla_hlo_sharding(self, ndim):
            return xc.HloSharding.replicate()

    class GSPMD(X.GSPMDSharding):
        memory_kind = None

        def _to_xla_hlo_sharding(self, ndim):
            return self._hlo

    return SingleDevice, GSPMD


def put(array: np.ndarray, device: Device) -> ArrayImpl:
    """Copy a numpy array onto ``device`` and return the device array."""
    xc, X = xla()
    SingleDevice, _ = _sharding_classes()
    array = np.ascontiguousarray(array)
    return X.batched_device_put(
        _Aval(array.shape, array.dtype), SingleDevice(device), [array], [device],
        committed=True, force_copy=True,
        host_buffer_semantics=X.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
        enable_x64=True)


def assemble(shape, dtype, shards, devices, hlo_sharding) -> ArrayImpl:
    """One global array from per-device shards (for SPMD programs)."""
    xc, X = xla()
    _, GSPMD = _sharding_classes()
    sharding = GSPMD(X.DeviceList(tuple(devices)), hlo_sharding)
    sharding._hlo = hlo_sharding
    return X.ArrayImpl(_Aval(shape, dtype), sharding, list(shards), True, _skip_checks=True)


def to_numpy(device_array: ArrayImpl) -> np.ndarray:
    """A device array's contents as a fresh numpy array (CPU results are views: copy)."""
    return np.array(device_array._single_device_array_to_np_array_did_copy()[0], copy=True)


# HloPrintOptions for ``canonical_hlo``. Not XLA's own ``fingerprint()`` options: those write
# large constants as ``{...}`` (a setting Python cannot turn off), so programs differing only
# in a constant's values would print alike.
_CANONICAL = dict(canonicalize_instruction_names=True, canonicalize_computations=True,
                  print_ids=False, print_metadata=False, print_operand_names=False,
                  print_percent=False, print_program_shape=False, print_operand_shape=True,
                  print_large_constants=True, print_backend_config=True,
                  print_control_dependencies=True)


def canonical_hlo(computation) -> str:
    """An XlaComputation's HLO as text without the module's, computations' and instructions'
    names or metadata, but with everything that can change what XLA compiles: every constant
    in full (NaN payloads and signed zeros included), backend configs, control dependencies.
    Two computations with equal canonical texts compile to the same executable."""
    xc, X = xla()
    cls = next((m.HloPrintOptions for m in (X, xc) if hasattr(m, "HloPrintOptions")), None)
    if cls is None:
        cls = require("jaxlib._hlo").HloPrintOptions
    opts = cls()
    for k, v in _CANONICAL.items():
        setattr(opts, k, v)
    return computation.get_hlo_module().to_string(opts)


# jaxlib's MLIR and XLA passes recurse on the calling thread once per level of region
# nesting: a 1,000-deep nest of ifs overflows the main thread's 8 MiB stack and kills the
# process (SIGSEGV). Parsing, converting and compiling therefore run on a thread of their
# own with a stack this large (virtual memory: only the pages used are touched).
_BIG_STACK = 1 << 30


def on_big_stack(fn, *args) -> object:
    """``fn(*args)`` on a thread with a 1 GiB stack; its result, or its exception, re-raised
    here."""
    out: list = []

    def run():
        try:
            out.append((True, fn(*args)))
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            out.append((False, e))

    with _STACK_LOCK:  # stack_size is process-wide: set it just for this thread's creation
        old = threading.stack_size(_BIG_STACK)
        try:
            t = threading.Thread(target=run, name="jaxlib-big-stack", daemon=True)
            t.start()
        finally:
            threading.stack_size(old)
    t.join()
    ok, value = out[0]
    if ok:
        return value
    raise value

_STACK_LOCK = threading.Lock()
