"""Host callbacks: a program op that calls a Python function on the host while it runs.

XLA:CPU and XLA:GPU call back into Python through FFI custom calls
(``xla_ffi_python_cpu_callback``, ``xla_ffi_python_gpu_callback``, and the ``_partitioned_``
variants that run once per device on its shard). The op names its callable only by an
``index = N : ui64`` in its backend_config: the N-th entry of the list handed to jaxlib's
compile. That list belongs to the module (``Module.host_callbacks``), so the text stays a
pure function of the module and ``verify.compile`` hands the same list to jaxlib.

jaxlib trusts the list entirely: an index out of range, a callable that returns too few
values, or arrays of the wrong shape crash the process or write garbage. So the builder
numbers the callbacks itself, and ``verify`` checks what the callables return against the
op's declared types before handing it back to XLA.
"""

from __future__ import annotations

from typing import Callable, Sequence

import attrs as _attrs

from ..attributes import DictionaryAttr, IntegerAttr
from ..dtypes import ui64
from ..ir import Value
from ..types import TensorType, TokenType
from .args import results, type_list, value_list
from .control_flow import Results
from .spec import builder_method, fail

__all__ = ["HostCallback", "TARGETS", "PARTITIONED_TARGETS", "PLATFORMS",
           "is_callback_target", "callback_index", "callback_ops"]

# Per platform, the custom-call target jaxlib registers for Python callbacks.
TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "gpu": "xla_ffi_python_gpu_callback"}
PARTITIONED_TARGETS = {"cpu": "xla_ffi_partitioned_python_cpu_callback",
                       "gpu": "xla_ffi_partitioned_python_gpu_callback"}
_ALL_TARGETS = frozenset(TARGETS.values()) | frozenset(PARTITIONED_TARGETS.values())
# Platform names -> the target kind ("cpu" or "gpu") whose callback target they use.
PLATFORMS = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu", "rocm": "gpu"}


@_attrs.frozen
class HostCallback:
    """One Python callable of a module, as its callback ops' ``index`` names it. ``name`` is
    what errors call it (the function's ``__name__`` by default)."""

    function: Callable = _attrs.field()
    name: str = _attrs.field()

    @function.validator
    def _callable(self, attribute, value):
        if not callable(value):
            raise TypeError(f"a host callback must be callable, got {type(value).__name__} "
                            f"{value!r:.60}")

    @classmethod
    def of(cls, function, name: str | None = None) -> "HostCallback":
        """``function`` named ``name``, or by its ``__name__`` (its type's name if it has
        none); a HostCallback is returned as it is."""
        if isinstance(function, cls):
            return function
        if name is None:
            name = getattr(function, "__name__", None) or type(function).__name__
        return cls(function, name)


def is_callback_target(name: str) -> bool:
    return name in _ALL_TARGETS


# JAX's StableHLO spelling of a typed-FFI call: api_version 1 (left out), an empty or absent
# backend_config, and the configuration in this discardable attribute; XLA's conversion to
# MHLO makes it api_version 4 with that dictionary as backend_config.
FFI_CONFIG = "mhlo.backend_config"


def ffi_config(attributes) -> tuple:
    """``(api_version, backend_config, the attribute's name)`` as XLA reads a custom_call's:
    JAX's spelling (``FFI_CONFIG``) read as api_version 4 with that configuration."""
    jax_config = attributes.get(FFI_CONFIG)
    if jax_config is not None:
        return 4, jax_config, FFI_CONFIG
    api = attributes.get("api_version")
    return (1 if api is None else api.value), attributes.get("backend_config"), \
        "backend_config"


def callback_index(op) -> int | None:
    """The ``index`` of a callback custom_call (None for any other op)."""
    attrs = op.attributes
    if op.spec.name != "custom_call" or attrs is None:
        return None
    target = attrs.get("call_target_name")
    if target is None or target.value not in _ALL_TARGETS:
        return None
    cfg = ffi_config(attrs)[1]
    index = dict(cfg.items).get("index") if isinstance(cfg, DictionaryAttr) else None
    return index.value if isinstance(index, IntegerAttr) else None


def callback_ops(module) -> list:
    """``(function, op, index)`` for every callback op of ``module``, in program order."""
    from ..ir import walk
    out = []
    for fn, op in walk(module):
        if op.spec.name == "custom_call":
            i = callback_index(op)
            if i is not None:
                out.append((fn, op, i))
    return out


def check_call(op, types, attributes, results_) -> None:
    """What jaxlib requires of a callback custom_call but checks only by crashing or with a
    runtime message: api_version 4, a backend_config of exactly ``{index = N : ui64}``."""
    target = attributes["call_target_name"].value
    api, cfg, _ = ffi_config(attributes)  # (JAX's spelling: api 1 and mhlo.backend_config)
    if api != 4:
        fail(op, f"call_target_name {target!r} is an FFI target: api_version must be 4 (or "
                 f"the configuration in {FFI_CONFIG}, as JAX writes it), got {api} (jaxlib: "
                 "\"No registered implementation for untyped custom call\")")
    entries = dict(cfg.items) if isinstance(cfg, DictionaryAttr) else None
    if entries is None or set(entries) != {"index"}:
        fail(op, f"{target}: backend_config must be exactly {{index = N : ui64}} (the "
                 f"callback's place in the module's host_callbacks), got "
                 f"{'nothing' if cfg is None else cfg}")
    index = entries["index"]
    if not isinstance(index, IntegerAttr) or index.type is not ui64:
        fail(op, f"{target}: backend_config index must be a ui64 integer, got {index} "
                 "(jaxlib: \"Wrong scalar data type: expected U64\")")
    for what, ts in (("operand", types), ("result", results_)):
        for i, t in enumerate(ts):
            if isinstance(t, TokenType) and i:
                fail(op, f"{target}: only the first {what} may be a token, {what} {i} is one")
    for what, ts in (("operand", types), ("result", results_)):
        layouts = attributes.get(f"{what}_layouts")
        for i, (t, layout) in enumerate(zip(ts, getattr(layouts, "elements", None) or ())):
            got = [int(d) for d in getattr(layout, "dims", None) or ()]
            if isinstance(t, TensorType) and t.rank > 1 and got != _row_major(t):
                fail(op, f"{target}: {what} {i} has layout {got}, not row-major "
                         f"{_row_major(t)}: the callback's arrays are handed over row-major, "
                         "so its values would arrive (and go back) permuted")
    if "partitioned" in target and any(not isinstance(t, TokenType) for t in results_):
        fail(op, f"{target}: a partitioned callback runs once per device and cannot return "
                 "values (only a token)")


def _row_major(t) -> list:
    return list(range(t.rank - 1, -1, -1)) if isinstance(t, TensorType) else []


def _module_of(b):
    """The module ``b`` builds in: its enclosing function's."""
    module = getattr(b.enclosing, "module", None)
    if module is None:
        fail("custom_call", "a host callback is numbered in its module's host_callbacks: "
                            "build it in a function that is in a Module (module.add_function "
                            "or module.insert first)")
    return module


@builder_method
def host_callback(b, function: Callable, operands: Sequence[Value] = (), result_types=(), *,
                  token: Value | None = None, has_side_effect: bool | None = None,
                  platform: str = "cpu", partitioned: bool = False, name: str | None = None,
                  location=None) -> Results:
    """Call ``function`` on the host with the operands' values as numpy arrays; it returns
    one array per result type (a tuple, or a single array for one result, or None for
    none). The callable is added to the module's ``host_callbacks`` and the op names it by
    index; ``verify.compile`` hands the list to jaxlib and checks every returned array's
    shape and dtype before XLA uses it.

    ``token`` orders the call after earlier effects: the op then takes it first and returns a
    new token first (``(token, *results)``). ``has_side_effect`` defaults to True when there
    is a token or no result (XLA would remove a pure call with no results as dead code, so
    that combination is refused), False otherwise: a pure callback whose results nobody uses
    may be removed, and XLA may run it more or fewer times than written. ``partitioned``
    (CPU/GPU, no results) runs the callback once per device on the device's shard.
    ``platform`` picks the target: "cpu", or "gpu" ("cuda", "rocm")."""
    if not callable(function):
        fail("custom_call", f"a host callback must be callable, got "
                            f"{type(function).__name__} {function!r:.60}")
    if platform not in PLATFORMS:
        fail("custom_call", f"host callback platform must be one of {sorted(PLATFORMS)}, got "
                            f"{platform!r} (TPUs call back through send/recv host transfers)")
    kind = PLATFORMS[platform]
    target = (PARTITIONED_TARGETS if partitioned else TARGETS)[kind]
    operands = value_list("custom_call", "operands", operands)
    result_types = type_list("custom_call", "result_types", result_types)
    for i, v in enumerate(operands):
        if not isinstance(v, Value):
            fail("custom_call", f"{target}: operand {i} must be a Value, got "
                                f"{type(v).__name__} {v!r:.40}")
        if not isinstance(v.type, TensorType):
            fail("custom_call", f"{target}: operand {i} must be a tensor, got {v.type} (pass an "
                                "ordering token as token=)")
    for i, t in enumerate(result_types):
        if not isinstance(t, TensorType):
            fail("custom_call", f"{target}: result type {i} must be a tensor type, got {t}")
    if token is not None and not (isinstance(token, Value) and isinstance(token.type,
                                                                          TokenType)):
        fail("custom_call", f"{target}: token= must be a token Value, got "
                            f"{getattr(token, 'type', token)!r:.60}")
    if has_side_effect is None:
        has_side_effect = token is not None or not result_types
    if not has_side_effect and not result_types and token is None:
        fail("custom_call", f"{target}: a callback without results or a token must have "
                            "has_side_effect=True, or XLA removes it as dead code and never "
                            "calls it")
    if partitioned and result_types:
        fail("custom_call", f"{target}: a partitioned callback runs once per device and "
                            f"cannot return values, got {len(result_types)} result types")
    module = _module_of(b)
    index = module.add_host_callback(function, name=name)
    if token is not None:
        operands = [token, *operands]
        result_types = (token.type, *result_types)
    attrs = {"call_target_name": target, "api_version": 4,
             "backend_config": DictionaryAttr({"index": IntegerAttr(index, ui64)}),
             "has_side_effect": has_side_effect,
             # Row-major, as JAX writes them; XLA's partitioner requires them of partitioned
             # callbacks (it aborts the process otherwise: "Check failed:
             # layout_constrained()").
             "operand_layouts": [_row_major(v.type) for v in operands],
             "result_layouts": [_row_major(t) for t in result_types]}
    return results(b.create("custom_call", (operands,), attrs, result_types,
                            location=location))
