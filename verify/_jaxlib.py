"""The thin layer over jaxlib's C++ runtime: clients, putting numpy arrays on devices, reading
results back. Works with jaxlib alone (no ``import jax``).

``import jax`` normally attaches Python methods to jaxlib's classes; without it, putting an
array on a device needs two small stand-ins, an aval-like object and a sharding that can name
its HLO sharding. Both are defined here.
"""

from __future__ import annotations

import functools
import os
import threading

import numpy as np


@functools.lru_cache(maxsize=None)
def xla():
    """``(xla_client, _xla)`` imported on first use, so ``import verify`` stays cheap."""
    # XLA logs INFO lines (client creation) to stderr; they are not errors. Users who want
    # them set TF_CPP_MIN_LOG_LEVEL=0 themselves.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    from jaxlib import xla_client as xc
    return xc, xc._xla


_lock = threading.Lock()
_clients: dict = {}


def client(platform: str = "cpu", num_devices: int | None = None):
    """One PJRT client per (platform, device count) per process, created on first use."""
    platform = {"gpu": "cuda"}.get(platform, platform)
    key = (platform, num_devices)
    with _lock:
        c = _clients.get(key)
        if c is None:
            c = _clients[key] = _make_client(platform, num_devices)
        return c


def _make_client(platform, num_devices):
    xc, X = xla()
    if platform == "cpu":
        if num_devices is None:
            return X.get_tfrt_cpu_client(asynchronous=False)
        return X.get_tfrt_cpu_client(asynchronous=False, num_devices=num_devices)
    if platform in ("cuda", "rocm"):
        return _gpu_client(platform)
    raise ValueError(f"unknown platform {platform!r}; expected 'cpu', 'cuda' (or 'gpu'), 'rocm'")


def _gpu_client(platform):
    """A GPU client: through jax when it is installed (it initialises the plugin), else by
    loading the CUDA PJRT plugin that ships as the ``jax_plugins`` package."""
    try:
        import jax  # noqa: F401  (initialises the GPU plugin)
        devs = jax.devices(platform)
        return devs[0].client
    except ImportError:
        pass
    except RuntimeError as e:
        raise RuntimeError(f"no {platform} devices: {e}") from None
    xc, X = xla()
    import importlib
    for mod in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
        try:
            plugin = importlib.import_module(mod)
        except ImportError:
            continue
        xc.load_pjrt_plugin_dynamically(platform, plugin._get_library_path())
        xc.initialize_pjrt_plugin(platform)
        return xc.make_c_api_client(platform)
    raise RuntimeError(f"no {platform} PJRT plugin is installed (pip install jax[cuda13])")


def has_platform(platform: str) -> bool:
    """Whether a client for ``platform`` can be made here (used to skip GPU tests)."""
    try:
        return bool(client(platform).devices())
    except Exception:
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


def put(array: np.ndarray, device):
    """Copy a numpy array onto ``device`` and return the device array."""
    xc, X = xla()
    SingleDevice, _ = _sharding_classes()
    array = np.ascontiguousarray(array)
    return X.batched_device_put(
        _Aval(array.shape, array.dtype), SingleDevice(device), [array], [device],
        committed=True, force_copy=True,
        host_buffer_semantics=X.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
        enable_x64=True)


def assemble(shape, dtype, shards, devices, hlo_sharding):
    """One global array from per-device shards (for SPMD programs)."""
    xc, X = xla()
    _, GSPMD = _sharding_classes()
    sharding = GSPMD(X.DeviceList(tuple(devices)), hlo_sharding)
    sharding._hlo = hlo_sharding
    return X.ArrayImpl(_Aval(shape, dtype), sharding, list(shards), True, _skip_checks=True)


def to_numpy(device_array) -> np.ndarray:
    """A device array's contents as a fresh numpy array (CPU results are views: copy)."""
    return np.array(device_array._single_device_array_to_np_array_did_copy()[0], copy=True)
