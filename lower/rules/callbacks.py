"""Rules for JAX's host callbacks, as the seed's ``emit_python_callback`` lowers them: each
becomes a ``Builder.host_callback`` (an FFI custom call naming a Python callable of the
module), which ``verify.compile`` hands to jaxlib. No jax runtime is involved: the callables
get numpy arrays.

- ``pure_callback``: no side effect; results feed later ops. XLA may drop a call whose
  results are unused, as it may under ``jax.jit``.
- ``io_callback``: a side effect; ``ordered=True`` threads the ``OrderedIOEffect`` token,
  so calls happen in program order, through loops and calls.
- ``debug_callback``: a side effect without results; ordered when its effect is.
- ``debug_print``: ``debug_callback`` of a formatter doing what ``jax.debug.print`` does
  (``str.format`` under the numpy print options it was given, or the words joined by
  spaces; a logging record when it asked for one).

Under XLA's SPMD partitioner (``ShardingContext``) the call runs once, on device 0 (or the
``SingleDeviceSharding``'s device), with the whole value: ``{maximal device=N}``. Inside a
fully manual ``shard_map`` it runs on every device with its shard: ``{manual}``.
``partitioned=True`` debug callbacks run once per device on their shards.
"""

from __future__ import annotations

import copy
import logging
import sys

import numpy as np

from mhlo_ir.builder import as_results
from mhlo_ir.ops.host_callbacks import PLATFORMS, HostCallback

from ..axis_context import ShardingContext, SPMDAxisContext
from ..jax_state import x64
from ..mlir import aval_to_ir_type, register_lowering
from ..tokens import TokenSet, _is_ordered

def _name(callback) -> str:
    inner = getattr(callback, "callback_func", None)  # jax's _FlatCallback
    return HostCallback.of(inner if inner is not None else callback).name


def _sharding(ctx, sharding=None) -> str | None:
    axis = ctx.module_context.axis_context
    if isinstance(axis, SPMDAxisContext):
        if set(axis.manual_axes) != set(axis.mesh.axis_names):
            raise NotImplementedError(
                f"'{ctx.primitive.name}': host callbacks inside shard_map need every mesh "
                "axis manual (no partly automatic sharding), as in jax")
        if sharding is not None:
            raise NotImplementedError(f"'{ctx.primitive.name}': a callback inside shard_map "
                                      "cannot name a sharding, as in jax")
        return "{manual}"
    if isinstance(axis, ShardingContext):
        device = 0
        if sharding is not None:
            devices = getattr(sharding, "device_set", None)
            if not devices or len(devices) != 1:
                raise NotImplementedError(f"'{ctx.primitive.name}' takes a single-device "
                                          f"sharding, got {sharding!r:.80}")
            device = next(iter(devices)).id
            order = axis.device_assignment  # (the program's devices, as jax numbers them)
            if order is not None:
                if device not in order:
                    raise ValueError(f"'{ctx.primitive.name}': its sharding names device "
                                     f"{device}, not one of the program's {list(order)}")
                device = order.index(device)
            elif device >= axis.num_devices:
                raise ValueError(f"'{ctx.primitive.name}': its sharding names device {device}, "
                                 f"but the program runs on devices 0..{axis.num_devices - 1}")
        return f"{{maximal device={device}}}"
    return None


def _emit(ctx, fn, name, args, *, token=None, has_side_effect, partitioned=False,
          sharding=None):
    """The callback op; returns ``(results, token_out)``."""
    platform = ctx.module_context.platform
    if platform not in PLATFORMS:
        raise NotImplementedError(
            f"'{ctx.primitive.name}': host callbacks on {platform} go through send/recv host "
            "transfers, which this lowering does not build (CPU and GPU only)")
    types = [aval_to_ir_type(a) for a in ctx.avals_out]
    out = ctx.builder.host_callback(fn, list(args), types, token=token,
                                    has_side_effect=has_side_effect,
                                    platform=platform, partitioned=partitioned,
                                    name=name)
    if sharding is not None:
        op = out if not as_results(out) else as_results(out)[0].owner
        op.set_attr("mhlo.sharding", sharding)
    values = list(as_results(out))
    if token is not None:
        return values[1:], values[0]
    return values, None


_NARROW = {np.dtype(np.float64): np.float32, np.dtype(np.int64): np.int32,
           np.dtype(np.uint64): np.uint32, np.dtype(np.complex128): np.complex64}


def _call_as_jax(fn, args):
    """``fn(*args)`` as jax calls a callback: the numpy arrays XLA hands over put on jax's
    first CPU device, that device jax's default during the call."""
    jax = sys.modules.get("jax")
    if jax is None:  # (jax's callback primitives come from a jax that is loaded)
        return fn(*args)
    cpu = jax.local_devices(backend="cpu")[0]
    args = jax.device_put(args, cpu)
    with jax.default_device(cpu):
        return fn(*args)


class JaxResults:
    """A jax callback's results as jax takes them (``dtypes.canonicalize_value`` of each):
    with x64 off, 64-bit arrays and Python numbers become their 32-bit kin, so a callback
    returning ``np.sin(x) * n`` (float64 by numpy's promotion) is accepted where jax accepts
    it. The declared shapes and dtypes are then checked by verify."""

    def __init__(self, callback, x64: bool):
        self.callback, self.x64 = callback, x64
        self.__name__ = _name(callback)

    def __call__(self, *args):
        out = _call_as_jax(self.callback, args)
        if self.x64:
            return out
        return tuple(a.astype(_NARROW[a.dtype]) if a.dtype in _NARROW else a
                     for a in map(np.asarray, out))


def _pure_callback(ctx, *args, callback, sharding, result_avals, vmap_method=None, **_):
    if not ctx.avals_out:
        # Pure and without results: dead code, which XLA drops from jax's program (the call
        # never runs); a result-less callback op must be a side effect, so none is made.
        return []
    sh = _sharding(ctx, sharding)
    outs, _ = _emit(ctx, JaxResults(callback, x64(default=True)), _name(callback), args,
                    has_side_effect=False, sharding=sh)
    return outs


register_lowering("pure_callback", _pure_callback)


def _effect_of(ctx):
    """The equation's ordered effect, whose token this call takes and gives back."""
    for effect in ctx.tokens_in.effects():
        return effect
    raise ValueError(f"'{ctx.primitive.name}' is ordered but the equation carries no "
                     "ordered effect's token")


def _ordered_call(ctx, fn, name, args, sharding):
    effect = _effect_of(ctx)
    outs, token = _emit(ctx, fn, name, args, token=ctx.tokens_in.get(effect),
                        has_side_effect=True, sharding=sharding)
    ctx.set_tokens_out(ctx.tokens_in.update_tokens(TokenSet([(effect, token)])))
    return outs


def _io_callback(ctx, *args, callback, sharding, result_avals, ordered, **_):
    sh = _sharding(ctx, sharding)
    fn = JaxResults(callback, x64(default=True))
    if ordered:
        return _ordered_call(ctx, fn, _name(callback), args, sh)
    outs, _ = _emit(ctx, fn, _name(callback), args, has_side_effect=True, sharding=sh)
    return outs


register_lowering("io_callback", _io_callback)


def _debug_sharding(ctx, partitioned: bool) -> str | None:
    """As jax's debug_callback_lowering: maximal on device 0 under the partitioner, manual
    inside a fully manual shard_map, whether or not the call is partitioned."""
    axis = ctx.module_context.axis_context
    if isinstance(axis, SPMDAxisContext) and set(axis.manual_axes) != set(axis.mesh.axis_names):
        raise NotImplementedError(f"'{ctx.primitive.name}' inside a partly manual shard_map "
                                  "(jax gathers and runs it on one device) is not lowered")
    return _sharding(ctx)


def _debug_callback(ctx, *args, callback, effect, partitioned, **_):
    def call(*arrays):
        _call_as_jax(callback, arrays)
        return ()
    name = _name(callback)
    call.__name__ = name
    sh = _debug_sharding(ctx, partitioned)
    if _is_ordered(effect):
        if partitioned:
            raise NotImplementedError(f"'{ctx.primitive.name}': an ordered callback cannot "
                                      "be partitioned")
        return _ordered_call(ctx, call, name, args, sh)
    _emit(ctx, call, name, args, has_side_effect=True, partitioned=partitioned, sharding=sh)
    return []


register_lowering("debug_callback", _debug_callback)


class DebugPrinter:
    """``jax.debug.print``'s formatter for one call site: the flat arguments put back in the
    call's tree (static arguments in their places), then ``fmt.format`` under the numpy print
    options given (or the words joined by spaces, when ``fmt`` has no placeholders), written
    to stdout or handed to the logging record's logger."""

    __name__ = "debug_print"

    def __init__(self, fmt, in_tree, static_args, np_printoptions, has_placeholders,
                 logging_record):
        self.fmt, self.in_tree = fmt, in_tree
        self.static_args = dict(static_args)
        self.np_printoptions = dict(np_printoptions)
        self.has_placeholders, self.logging_record = has_placeholders, logging_record

    def __call__(self, *dyn_args):
        _call_as_jax(self._print, dyn_args)
        return ()

    def _print(self, *dyn_args):
        n = len(self.static_args) + len(dyn_args)
        it = iter(dyn_args)
        flat = [self.static_args[i] if i in self.static_args else next(it) for i in range(n)]
        args, kwargs = self.in_tree.unflatten(flat)
        if self.has_placeholders:
            with np.printoptions(**self.np_printoptions):
                msg = self.fmt.format(*args, **kwargs)
        else:
            msg = " ".join((self.fmt, *(str(a) for a in args)))
        if self.logging_record is not None:
            record = copy.copy(self.logging_record)
            record.msg = msg
            logging.getLogger(record.name).handle(record)
        else:
            sys.stdout.write(msg + "\n")


def _debug_print(ctx, *args, fmt, ordered, partitioned, in_tree, static_args, np_printoptions,
                 has_placeholders, logging_record, **_):
    printer = DebugPrinter(fmt, in_tree, static_args, np_printoptions, has_placeholders,
                           logging_record)
    sh = _debug_sharding(ctx, partitioned)
    if ordered:
        return _ordered_call(ctx, printer, "debug_print", args, sh)
    _emit(ctx, printer, "debug_print", args, has_side_effect=True, partitioned=partitioned,
          sharding=sh)
    return []


register_lowering("debug_print", _debug_print)


def _spsolve(ctx, data, indices, indptr, b, *, tol, reorder):
    """jax.experimental.sparse's ``spsolve`` on CPU: as jax's rule, a host callback solving
    the CSR system with scipy (``tol`` and ``reorder`` are cuSOLVER's, unused there)."""
    if ctx.module_context.platform != "cpu":
        raise NotImplementedError(f"'spsolve' on {ctx.module_context.platform}: a cuSOLVER "
                                  "call there, not lowered here (CPU: a host callback)")

    def solve(data, indices, indptr, b):
        import scipy.sparse
        import scipy.sparse.linalg
        a = scipy.sparse.csr_matrix((data, indices, indptr), shape=(b.size, b.size))
        return (scipy.sparse.linalg.spsolve(a, b).astype(b.dtype),)
    outs, _ = _emit(ctx, solve, "spsolve", [data, indices, indptr, b], has_side_effect=False)
    return outs


register_lowering("spsolve", _spsolve, platform="cpu")
