"""The Python callables of a program's host-callback ops, checked and wrapped for jaxlib.

jaxlib calls ``host_callbacks[index]`` with read-only numpy arrays (``None`` for a token) and
takes back whatever it returns on trust: an index past the list's end, a callable that
returns fewer values than the op has results, or compiling without the list crash the
process; an array of the wrong dtype or shape is copied as raw bytes (garbage, or a write past
the buffer). So before compiling, every callback op's index is checked against the list and
the op's signature, and each callable is wrapped to check what it returns against the op's
declared result types. A callable that raises, or returns the wrong thing, fails the run with
``CallbackError`` naming the callback, raised from the callable's own exception.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from . import arguments
from .errors import ArgumentError, CallbackError, CompileError

__all__ = ["Bound", "bind", "mentions_callbacks"]

_TARGET_WORDS = ("python_cpu_callback", "python_gpu_callback")


def mentions_callbacks(text: str) -> bool:
    return any(w in text for w in _TARGET_WORDS)


class Bound:
    """The wrapped callables of one executable (``callables``, in index order), and the
    errors they raised, oldest first, until a run reports them (``take_error``).

    ``running`` serializes the executable's runs: the callables run on XLA's threads, so an
    error cannot be told apart by the thread that raised it, and two concurrent runs would
    see each other's."""

    def __init__(self) -> None:
        self.callables: list = []
        self._errors: deque = deque()
        self._lock = threading.Lock()
        self.running = threading.Lock()
        # The Bounds whose callables the current run was started from, and this one: what
        # its callables' threads count as calling back (set under ``running``).
        self.chain: tuple = (self,)

    def begin_run(self) -> None:
        """Record, under ``running``, which callables the thread starting this run is inside
        of: XLA calls this run's callables on threads of its own, where a run of any of them
        (A's callback runs B, whose callback runs A) must be refused as on this thread."""
        self.chain = (*getattr(_CALLING, "bounds", ()), self)

    def record(self, error: BaseException) -> None:
        with self._lock:
            self._errors.append(error)

    def take_error(self) -> BaseException | None:
        with self._lock:
            return self._errors.popleft() if self._errors else None

    def clear(self) -> None:
        with self._lock:
            self._errors.clear()

    def calling_back(self) -> bool:
        """Whether one of these callables is running on this thread: a run asked for now
        comes from inside a run of the same executable, which would wait on ``running``
        forever (XLA calls back on its own thread: a reentrant lock would not help)."""
        return self in getattr(_CALLING, "bounds", ())


# Per thread, the Bounds whose callables are running on it (innermost last).
_CALLING = threading.local()


def _ops_of(read, text: str):
    """The callback ops ``(function, op, index)`` and the module's own callables (None when
    it has none: text never has). ``read`` is the Module, or the text as our parser read it
    (None: it could not)."""
    from mhlo_ir.ops.host_callbacks import callback_ops
    if not mentions_callbacks(text):
        return [], None
    if read is None:
        raise CompileError("the text has host-callback ops, whose callables verify checks "
                           "against the ops' types before jaxlib sees them (jaxlib crashes "
                           "on a mismatch), but mhlo_ir's parser cannot read it",
                           from_jaxlib=False)
    return callback_ops(read), list(read.host_callbacks) or None


def _signature(op) -> tuple:
    return (tuple(v.type for v in op.operands), tuple(r.type for r in op.results))


def bind(read, text: str, host_callbacks, platform: str,
         num_partitions: int = 1) -> Bound | None:
    """The checked, wrapped callables for compiling ``module_or_text`` on ``platform``, or
    None when it has no callback ops (and none were given). ``read`` is the Module, or the
    text as our parser read it (None where it cannot). ``host_callbacks`` overrides the
    module's own list (a text's only source of callables). Raises CompileError, in Python,
    for what jaxlib would crash on."""
    from mhlo_ir.errors import IRError
    from mhlo_ir.ops.host_callbacks import (HostCallback, PARTITIONED_TARGETS, TARGETS,
                                            check_call)
    from mhlo_ir.xla_cpu import holders
    ops, own = _ops_of(read, text)
    given = own if host_callbacks is None else list(host_callbacks)
    if not ops:
        return None
    if given is None or not given:
        raise CompileError(f"@{ops[0][0].name}: the program calls host callback index "
                           f"{ops[0][2]}, but no host callbacks were given (pass "
                           "host_callbacks=[...]; jaxlib would crash the process)",
                           from_jaxlib=False)
    kind = "cpu" if platform == "cpu" else "gpu"
    wanted = {TARGETS[kind], PARTITIONED_TARGETS[kind]}
    by_index: dict = {}
    for fn, op, index in ops:
        target = op.attributes["call_target_name"].value
        if target not in wanted:
            raise CompileError(f"@{fn.name}: a host callback op targets {target!r}, which "
                               f"{platform} does not have (it calls back through "
                               f"{TARGETS[kind]!r}): build it with platform={platform!r}",
                               from_jaxlib=False)
        if index >= len(given):
            raise CompileError(f"@{fn.name}: a host callback op has index {index}, but only "
                               f"{len(given)} host callbacks were given (jaxlib would crash "
                               "the process)", from_jaxlib=False)
        if num_partitions > 1 and op.attributes.get("mhlo.sharding") is None and (
                op.attributes.get("has_side_effect") is not None
                and op.attributes["has_side_effect"].value):
            raise CompileError(f"@{fn.name}: host callback index {index} has a side effect "
                               f"and no mhlo.sharding, which XLA's SPMD partitioner requires "
                               "of side-effecting ops: set '{maximal device=0}' to call it "
                               "once, '{manual}' inside a manual region, or a tiled sharding "
                               "for a partitioned callback", from_jaxlib=False)
        try:  # (text is read unchecked: what a built op is held to, said here)
            check_call("custom_call", [v.type for v in op.operands], op.attributes,
                       [r.type for r in op.results])
        except IRError as e:
            raise CompileError(f"@{fn.name}: {e}", from_jaxlib=False) from None
        combining = next((h for h in holders(op) if h in _COMBINING), None)
        if combining is not None:
            raise CompileError(f"@{fn.name}: host callback index {index} is inside a "
                               f"'{combining}' body, which XLA emits as a combiner: the "
                               "compile aborts the process (Check failed: operand_maps.size() "
                               "== 1); call it on the operands before the op, or after",
                               from_jaxlib=False)
        sig = _signature(op)
        seen = by_index.setdefault(index, (fn, sig))
        if seen[1] != sig:
            raise CompileError(f"host callback index {index} is called with two signatures "
                               f"(@{seen[0].name}: {_show(seen[1])}; @{fn.name}: "
                               f"{_show(sig)}); give each op its own index", from_jaxlib=False)
    entries = [HostCallback.of(g) for g in given]
    bound = Bound()
    bound.callables = [_wrap(bound, i, entries[i], by_index[i][1]) if i in by_index
                       else _unused(entries[i]) for i in range(len(entries))]
    return bound


# Ops whose body XLA emits as a combiner, where a callback aborts the compile (measured on
# jaxlib 0.10.2 for reduce, reduce_window and scatter; jax.jit aborts the same way).
_COMBINING = frozenset({"reduce", "reduce_window", "scatter"})


def _show(sig) -> str:
    ins, outs = sig
    return f"({', '.join(map(str, ins))}) -> ({', '.join(map(str, outs))})"


def _unused(entry):
    def never_called(*args):  # no op names this index; XLA never calls it
        raise CallbackError(f"host callback {entry.name!r} is called by no op")
    return never_called


def _wrap(bound: Bound, index: int, entry, sig):
    from mhlo_ir.types import TokenType
    ins, outs = sig
    token_in = bool(ins) and isinstance(ins[0], TokenType)
    token_out = bool(outs) and isinstance(outs[0], TokenType)
    value_types = outs[1:] if token_out else outs
    expected = [(tuple(t.shape), t.element_type.dtype, t) for t in value_types]
    fn, name = entry.function, entry.name
    where = f"host callback {name!r} (index {index})"

    def call(*args):
        saved = getattr(_CALLING, "bounds", ())
        _CALLING.bounds = bound.chain  # (this run's chain, whatever thread XLA called on)
        try:
            out = fn(*(args[1:] if token_in else args))
            values = _check_results(where, out, expected)
        except BaseException as e:  # noqa: BLE001 - every failure is the run's error
            if isinstance(e, CallbackError) and e.name is None:  # (what it returned)
                err = e
                err.name, err.index = name, index
            else:  # (a CallbackError of another program this callable ran is its cause)
                err = CallbackError(f"{where} raised {type(e).__name__}: {_said(e)}",
                                    name=name, index=index)
                err.__cause__ = e
            bound.record(err)
            raise err
        finally:
            _CALLING.bounds = saved
        return (None, *values) if token_out else tuple(values)
    call.__name__ = f"checked_{name}"
    return call


def _said(e: BaseException) -> str:
    """``str(e)``, or what stands for it where that raises too."""
    try:
        return str(e)
    except BaseException:  # noqa: BLE001 - an exception whose __str__ fails
        return f"<{type(e).__name__} whose message cannot be read>"


def _check_results(where: str, out, expected) -> list:
    n = len(expected)
    if out is None:
        out = ()
    elif not isinstance(out, (tuple, list)):
        if n != 1:
            raise CallbackError(f"{where} returned a single {type(out).__name__}, but the op "
                                f"declares {n} results: return a tuple of {n}")
        out = (out,)
    if len(out) != n:
        raise CallbackError(f"{where} returned {len(out)} values, but the op declares {n} "
                            f"result{'s' if n != 1 else ''}"
                            + (f" ({', '.join(str(t) for *_, t in expected)})" if n else ""))
    values = []
    for i, (v, (shape, dtype, t)) in enumerate(zip(out, expected)):
        values.append(_as_result(where, i, v, shape, dtype, t))
    return values


def _as_result(where, i, v, shape, dtype, t) -> np.ndarray:
    """One returned value as the op's result ``i`` takes it, by the rules ``run`` applies to
    arguments (``verify.arguments.convert``): arrays of exactly the declared dtype and shape,
    Python scalars for rank-0 results when the type holds them."""
    try:
        a = arguments.convert(v, shape, dtype, f"{where}: result {i}")
    except ArgumentError as e:
        raise CallbackError(f"{e} ({t})") from None
    return a if a.flags.c_contiguous else np.array(a, order="C")  # (ascontiguousarray: 1-D)
