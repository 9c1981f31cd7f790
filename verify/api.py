"""check, compile and run: MHLO modules (ours, or text) through jaxlib, numpy in and out."""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from . import _jaxlib, arguments, lapack
from .compiled import Compiled
# (named here too: tests stand in for _cpu_refusals through this module)
from .refusals import (_check_counts, _cpu_refusals, _device_count_refusals,
                       _partitioned_refusals, _python_problem, _tiled_results_refusal,
                       _tpu_partitioned_refusals, _tpu_refusals, _whole_sharding_refusal)
from .errors import (ArgumentError, CompileError, JaxlibMissing,
                     PlatformUnavailable, VerificationError)

__all__ = ["check", "compile", "run", "Executable", "to_text", "source_name", "dequantized"]


def to_text(module_or_text) -> str:
    """The MLIR text of a module; mhlo_ir Modules are verified in Python first, so their
    mistakes are reported by the Python verifier (which names the op and operand) before
    jaxlib is even imported."""
    if isinstance(module_or_text, (str, bytes)):
        return module_or_text if isinstance(module_or_text, str) else _decoded(module_or_text)
    if not hasattr(module_or_text, "to_text"):
        raise TypeError(f"expected an mhlo_ir Module or MLIR text, got "
                        f"{type(module_or_text).__name__}")
    verify = getattr(module_or_text, "verify", None)
    if verify is not None:
        verify()
    return module_or_text.to_text()


def _decoded(data: bytes) -> str:
    if data.startswith(b"ML\xefR"):  # (MLIR bytecode: what serialize_portable writes)
        raise TypeError("these bytes are MLIR bytecode (a portable artifact): read them with "
                        "verify.deserialize_portable(data), which gives the text")
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise TypeError(f"MLIR text must be UTF-8: {e}") from None


# The module's name, in the pretty form and in the generic one.
_MODULE_NAME = re.compile(r'^\s*(?:module\s+@([\w$.\-]+)|"builtin\.module"\(\) <\{[^\n]*?'
                          r'sym_name = "([^"]*)")', re.M)


def source_name(module_or_text, filename: str | None = None) -> str:
    """The name errors give the text: ``filename`` if the caller has one (the CLI passes the
    file's path), else ``<mhlo_ir module @name>`` for a Module (its printed text), else
    ``<mlir text>`` (with ``@name`` when the text names its module)."""
    if filename is not None:
        return str(filename)
    if isinstance(module_or_text, (str, bytes)):
        text = module_or_text if isinstance(module_or_text, str) else _decoded(module_or_text)
        m = _MODULE_NAME.search(text[:10000])
        return f"<mlir text @{m.group(1) or m.group(2)}>" if m else "<mlir text>"
    name = getattr(module_or_text, "name", None)
    return f"<mhlo_ir module @{name}>" if name else "<mhlo_ir module>"



# Shardy's constructs in text (a mesh, an sdy attribute), not the letters in a string
_SHARDY = re.compile(r"^\s*sdy\.mesh\b|#sdy\.", re.M)

def _read(text: str):
    """The text as mhlo_ir's parser reads it (ops as written, unchecked), or None where it
    cannot (a custom form it does not know). Read once per check or compile: the Python-side
    checks of text all look at this module."""
    from mhlo_ir.parser import parse
    from mhlo_ir.syntax import ParseError
    try:
        return parse(text, verify=False, check_ops=False)
    except ParseError as e:
        if e.message.startswith("text after the module") and \
                re.match(r"\s*(builtin\.)?module\b|\s*\"builtin\.module\"",
                         text.splitlines()[e.line - 1][e.column - 1:]):
            raise VerificationError(
                f"the text holds more than one module (another starts at line {e.line}): "
                "jaxlib reads them as one module holding both, with no @main of its own, "
                "which it verifies but cannot compile (\"MLIR module must have a main "
                "function\"); check and run each module by itself (a file each, or text "
                "split at '// -----' lines, which mhlo_ir.parse_modules reads)", text,
                from_jaxlib=False) from None
        return None


def _jaxlib_parse_and_verify(text: str):
    """What ``check`` asks of jaxlib: the module as an XlaComputation (None for a module
    without ``main``, which only the conversion to StableHLO can check); raises jaxlib's own
    error."""
    _, X = _jaxlib.xla()
    try:
        return _jaxlib.on_big_stack(X.mlir.mlir_module_to_xla_computation, text)
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
        if "requires module with `main`" not in str(e):
            raise
        _jaxlib.on_big_stack(X.mlir.mhlo_to_stablehlo, text)
        return None


def _located_error(module_or_text, text: str, exc: Exception, cls,
                   filename: str) -> VerificationError:
    err = cls(str(exc), text, filename=filename)
    if err.line is None and err.location is not None and \
            not isinstance(module_or_text, (str, bytes)):
        # The error points at the op's own location, which the text did not show inline (or
        # not at all): print without locations and ask again, to find the op's line there.
        plain = module_or_text.to_text(locations=False)
        try:
            _jaxlib_parse_and_verify(plain)
        except Exception as e2:  # noqa: BLE001
            again = cls(str(e2), plain, filename=filename)
            if again.line is not None:
                err.point_at(plain, again.line, again.column)
                if err.op_name is None:
                    err._find_op_name()
    return err


def check(module_or_text, *, filename: str | None = None) -> str:
    """Parse and verify with jaxlib; return the text it verified (a quantized program's
    lowering: see ``dequantized``), or raise VerificationError.

    Converts to HLO, which runs MLIR's parser and verifier and then XLA's shape checks (which
    catch, e.g., element types XLA does not support for an op). A module without ``main``
    cannot become HLO; it is checked by the MHLO-to-StableHLO conversion instead, which runs
    the parser and verifier only. Errors name the text ``filename`` (default: see
    ``source_name``) and show the offending line.
    """
    return _check(dequantized(module_or_text), filename)[0]


def dequantized(module_or_text) -> object:
    """``module_or_text`` with its quantized types lowered to integer and float math
    (``mhlo_ir.quant_lowering``, StableHLO's own lowering), a Module then; unchanged when it
    has none. jaxlib 0.10.2's MLIR does not register the quant dialect (it cannot read
    ``!quant.uniform`` at all) and XLA cannot translate ``uniform_quantize``, so a quantized
    program reaches jaxlib only this way. Text that mentions ``!quant.`` is read with
    mhlo_ir's parser; text it cannot read goes to jaxlib as it is, to be judged there. What
    cannot be lowered is a VerificationError naming the op."""
    from mhlo_ir.errors import IRError
    from mhlo_ir.quant_lowering import has_quantized, lower_quantized
    from mhlo_ir.syntax import ParseError
    module = module_or_text
    if not isinstance(module_or_text, (str, bytes)) and \
            not hasattr(module_or_text, "functions"):
        return module_or_text  # (not a module: to_text says what it is)
    if isinstance(module_or_text, (str, bytes)):
        text = module_or_text if isinstance(module_or_text, str) else _decoded(module_or_text)
        if "!quant." not in text:
            return module_or_text
        from mhlo_ir.parser import parse
        try:
            module = parse(text)
        except (ParseError, IRError):
            return module_or_text  # not ours to read (jaxlib says what it makes of it)
    if not has_quantized(module):
        return module_or_text
    try:
        return lower_quantized(module)
    except IRError as e:
        raise VerificationError(f"quantized program: {e}", to_text(module),
                                from_jaxlib=False) from None


def _check(module_or_text, filename: str | None):
    """``check``'s work: ``(text, computation, read)``, the computation (see
    ``_jaxlib_parse_and_verify``) kept so that compiling need not convert the text again, and
    ``read``, the module the Python-side checks look at: the Module itself, or the text as
    our parser reads it (``_read``; None where it cannot)."""
    text = to_text(module_or_text)
    read = module_or_text
    if isinstance(module_or_text, (str, bytes)):  # a Module passed Module.verify already
        read = _read(text)
        problem = _python_problem(text, read)
        if problem is not None:
            raise VerificationError(problem, text, from_jaxlib=False)
    if read is not None:
        problem = _conversion_problem(read)
        if problem is not None:
            raise VerificationError(problem, text, from_jaxlib=False)
    try:
        computation = _jaxlib_parse_and_verify(text)
    except JaxlibMissing:
        raise
    except Exception as e:  # noqa: BLE001
        raise _located_error(module_or_text, text, e, VerificationError,
                             source_name(module_or_text, filename)) from None
    return text, computation, read


def _conversion_problem(module) -> str | None:
    """Valid programs jaxlib's conversion to HLO rejects with a message about its own
    rewrite rather than the program (``mhlo_ir.jaxlib_conversion``; measured on 0.10.2)."""
    from mhlo_ir import jaxlib_conversion
    from mhlo_ir.ir import walk
    main = module.lookup("main")
    if main is not None and main.visibility == "private":
        public = [f.name for f in module.functions if f.visibility in (None, "public")]
        return ("@main is private, yet jaxlib's conversion to HLO takes @main as the entry "
                "whatever its visibility (a private function is a helper by MLIR's rules)"
                + (f", not the public @{public[0]}" if public else "") +
                ": make @main public, or rename the helper")
    if main is None:  # (jaxlib converts only a module with @main to HLO; see check)
        return None
    select = False
    for fn, op in walk(module):
        select = select or op.spec.name == "chlo.broadcast_select"
        if (name := jaxlib_conversion.unfoldable_bounds(op)) is not None:
            return (f"@{fn.name}: '{name}' with bounds computed from a function argument: "
                    "jaxlib's conversion to HLO translates it only where its bounds fold to "
                    f"constants (\"'{name}' op can't be translated to XLA HLO\"); pass the "
                    "bounds (a dynamic_gather's slice sizes, a dynamic_conv's padding) as "
                    "constants (XLA's static shapes need them), or use slice/pad/gather/"
                    "convolution, dynamic_slice for a start computed at run time")
        if (start := jaxlib_conversion.unsigned_constant_start(op)) is not None:
            x, et = start
            return (f"@{fn.name}: 'dynamic_slice' of constant start indices, one {x} of "
                    f"{et.name}: jaxlib's conversion to HLO makes it a slice, reading the "
                    f"start as signed ({x - (1 << et.bits)}) and clamping that, so the slice "
                    "is not the one the spec clamps to; give the starts a signed type")
        if jaxlib_conversion.empty_scatter_of_constants(op):
            return (f"@{fn.name}: a 'scatter' of no updates whose operand, indices and updates "
                    "are all constants: jaxlib's conversion to HLO segfaults the process "
                    "folding it; the result is the operand: use it instead")
        if (et := jaxlib_conversion.narrow_negative_padding(op)) is not None:
            return (f"@{fn.name}: 'dynamic_conv' with a negative padding of {et.name}: jaxlib's "
                    "conversion to HLO zero-extends the padding to i64 (-1 reads as "
                    f"{2 ** et.bits - 1}, and the convolution it folds to has another shape); "
                    "give the padding as i64")
        if jaxlib_conversion.stochastic_convert_layouts_differ(op):
            return (f"@{fn.name}: a stochastic_convert whose operand or random bits come "
                    "through a transpose (or an einsum): jaxlib's conversion to HLO gives a "
                    "transpose's result a permuted layout and its verifier then compares the "
                    "two operands with their layouts (\"Stochastic convert operand shape does "
                    "not match random tensor shape\"); transpose the stochastic_convert's "
                    "result instead")
    if select and jaxlib_conversion.closed_region_constant_in(module):
        return ("a chlo.broadcast_select beside a constant inside a closed region (a reduction "
                "body, comparator or map body): jaxlib's chlo legalization moves every "
                "region's constants out into the function, and its export to HLO then rejects "
                "the closed region (\"requires all operands to be defined in the parent "
                "region for export\"); use mhlo.select where the operands' shapes agree, or "
                "broadcast_in_dim the operands and use mhlo.select")
    return None


def _signature(computation) -> list:
    shape = computation.program_shape()
    # Token and tuple parameters have no dimensions (asking XLA for them aborts the process);
    # they are recorded as None and refused by run().
    return [(tuple(p.dimensions()), np.dtype(p.numpy_dtype())) if p.is_array() else None
            for p in shape.parameter_shapes()]


# An infeed or outfeed op in a program's text (either dialect, generic or custom form).
_FEED = re.compile(r"\b(?:mhlo|stablehlo)\.(infeed|outfeed)\b")


class Executable(Compiled):
    """A compiled program that runs here: call it with numpy arrays to get a list of numpy
    arrays (``run_sharded`` for several devices). What XLA made of it (optimized HLO, cost,
    memory, serialized bytes) is ``Compiled``'s."""

    def __init__(self, loaded, client, devices, params, text, num_replicas=1,
                 num_partitions=1, computation=None, platform="cpu", callbacks=None) -> None:
        super().__init__(loaded, platform, devices, params, text, num_replicas,
                         num_partitions, computation)
        self.client = client
        self._callbacks = callbacks  # verify.host_callbacks.Bound, or None
        self._token_results = None  # (the results that are tokens, once asked)
        self._layouts_checked = False  # (every parameter's layout row-major, once asked)
        # (an infeed or outfeed op of the program; str's search first: a big constant's text
        # is megabytes, which it scans many times faster than the regex)
        self._feed = _FEED.search(text) if "infeed" in text or "outfeed" in text else None

    def _execute(self, bufs) -> list:
        """Run on device buffers; per result, the per-device numpy arrays. A host callback's
        failure is raised as its CallbackError (from the callable's own exception)."""
        if self._feed is not None:
            raise RuntimeError(f"the program has an {self._feed.group(1)}, whose queue "
                               "jaxlib's Python API cannot fill or drain: running it would "
                               "wait on the queue forever (compiling it is fine)")
        self._check_results()
        self._check_parameter_layouts()
        bound = self._callbacks
        if bound is None:
            return self._execute_raw(bufs)
        if bound.calling_back():
            raise RuntimeError("a host callback of this executable ran the executable "
                               "again: its runs are serialized (their callbacks' errors are "
                               "told apart by run), so the nested run would wait for the "
                               "outer one forever; compile the module again (verify.compile) "
                               "and run that executable from the callback")
        with bound.running:
            bound.begin_run()
            bound.clear()
            try:
                return self._execute_raw(bufs)
            except Exception as e:  # noqa: BLE001 - jaxlib's runtime error type
                err = bound.take_error()  # a CallbackError, raised by the callable's wrapper
                if err is None or err is e:
                    raise
        err.__suppress_context__ = True  # jaxlib's message repeats the callable's traceback
        raise err

    def _execute_raw(self, bufs) -> list:
        res = _jaxlib.on_big_stack(self.loaded.execute_sharded, bufs)
        return [[_jaxlib.to_numpy(s) for s in result]
                for result in res.disassemble_into_single_device_arrays()]

    def serialize(self) -> bytes:
        if self._callbacks is not None:
            raise ArgumentError("this executable calls host callbacks, Python callables of "
                                "this process: its bytes could not be run without them (jax "
                                "refuses the same)")
        return super().serialize()

    @property
    def loaded(self):
        """jaxlib's LoadedExecutable."""
        return self._compiled

    @property
    def runnable(self) -> bool:
        return True

    def check_arguments(self, arrays) -> list:
        """The arguments as arrays of the parameters' shapes and dtypes (Python scalars and
        non-native byte orders converted), or ArgumentError naming the argument."""
        if len(arrays) != len(self.parameters):
            raise ArgumentError(f"the program takes {len(self.parameters)} arguments, got "
                                f"{len(arrays)}")
        out = []
        for i, (x, param) in enumerate(zip(arrays, self.parameters)):
            if param is None:
                raise ArgumentError(f"argument {i}: the parameter is a token or a tuple, which "
                                    "run() cannot pass; give @main array parameters only")
            out.append(arguments.convert(x, *param, f"argument {i}"))
        return out

    def __call__(self, *arrays) -> list:
        arrays = self.check_arguments(arrays)
        if len(self.devices) != 1:
            raise ArgumentError("this executable spans several devices: use run_sharded")
        dev = self.devices[0]
        bufs = [_jaxlib.put(a, dev) for a in arrays]
        return [o[0] for o in self._execute(bufs)]

    def run_sharded(self, per_device_args: Sequence[Sequence[np.ndarray]]) -> list:
        """Run on every device: ``per_device_args[d]`` are device d's arguments (its shard of
        each parameter). Returns, per result, the list of per-device numpy arrays."""
        self._check_one_process()
        return self._run(self.devices, per_device_args)

    def _check_one_process(self) -> None:
        if self.local_devices() != self.devices:
            raise ArgumentError("this executable spans several processes: each runs it "
                                "with run_local, feeding its own devices")

    def run_global(self, *arrays) -> list:
        """Run on every device with whole arrays: each is split by the sharding XLA compiled
        its parameter with, and each result is put back together from its shards by its
        own (``verify.global_arrays``). A replicated program gets the whole arrays on every
        replica and returns replica 0's results. One device: the same as calling it."""
        self._check_one_process()
        arrays = self.check_arguments(arrays)
        if len(self.devices) == 1:
            return self(*arrays)
        from . import global_arrays as ga
        xc, _ = _jaxlib.xla()
        n = len(self.devices)
        if self.num_partitions == 1:
            results = self._run(self.devices, [arrays] * n)
            return [per_device[0] for per_device in results]
        # Devices are numbered replica-major (r * partitions + p); shardings name partitions.
        parts = self.num_partitions
        in_sh = [xc.HloSharding.from_proto(p) for p in self.loaded.get_parameter_shardings()]
        out_sh = [xc.HloSharding.from_proto(p) for p in self.loaded.get_output_shardings()]
        shard_shapes = self.shard_shapes()
        per_device: list = [[] for _ in range(n)]
        for i, (a, sh, shard_shape) in enumerate(zip(arrays, in_sh, shard_shapes)):
            try:
                layout = ga.layout_of(sh, a.shape, parts)
            except ArgumentError as e:
                raise ArgumentError(f"argument {i}: {e}") from None
            pieces = ga.split(a, layout, shard_shape)
            for d in range(n):
                per_device[d].append(pieces[d % parts])
        results = self._run(self.devices, per_device)
        if len(out_sh) == 1 and len(results) > 1 and out_sh[0].tuple_elements():
            out_sh = list(out_sh[0].tuple_elements())
        if len(out_sh) == 1 and len(results) > 1:
            out_sh = out_sh * len(results)
        # Replica 0's partitions hold the results.
        return [ga.assemble(shards[:parts], ga.layout_of(sh, shape, parts), shards[0].dtype)
                for shards, sh, shape in zip(results, out_sh, self._result_shapes())]

    def _result_parts(self) -> list:
        if self._computation is None:
            self.input_hlo()  # converts the text once and keeps the computation
        shape = self._computation.program_shape().result_shape()
        return shape.tuple_shapes() if shape.is_tuple() else [shape]

    def _check_results(self) -> None:
        """Results are read back as arrays: a token result is refused before the program
        runs (jaxlib converts it only after, failing then)."""
        tokens = self._token_results
        if tokens is None:
            tokens = self._token_results = [i for i, p in enumerate(self._result_parts())
                                            if not p.is_array()]
        if tokens:
            raise ArgumentError(f"@main returns a token (result {tokens[0]}), which cannot be "
                                "read back as an array: return arrays only to run it (it "
                                "compiles as it is)")

    def _check_parameter_layouts(self) -> None:
        """Refuse, once, a parameter laid out otherwise than jaxlib's copy writes
        (``verify.layouts``)."""
        if not self._layouts_checked:
            from .layouts import check_parameter_layouts
            check_parameter_layouts(self)
            self._layouts_checked = True

    def _result_shapes(self) -> list:
        self._check_results()  # (asking XLA for a token's dimensions aborts the process)
        return [tuple(p.dimensions()) for p in self._result_parts()]

    def local_devices(self) -> list:
        """The devices of this process among those the program runs on, in their order (all
        of them but in a multi-process group: ``verify.distributed``)."""
        mine = set(self.client.local_devices())
        return [d for d in self.devices if d in mine]

    def run_local(self, per_local_device_args: Sequence[Sequence[np.ndarray]]) -> list:
        """In a multi-process group (``compile(..., distributed=ctx)``), run with this
        process's devices only: ``per_local_device_args[k]`` are the arguments of
        ``local_devices()[k]``, every process calls it at the same point, and each gets, per
        result, the list of its own devices' arrays."""
        mine = self.local_devices()
        if not mine:
            raise ArgumentError(
                f"this process holds none of the program's {len(self.devices)} devices "
                f"(ids {[d.id for d in self.devices][:8]}): a program over fewer devices than "
                "the group has runs on the processes holding its devices only (the first "
                "ones); call run_local there, or compile for every process's devices")
        return self._run(mine, per_local_device_args)

    def _run(self, devices, per_device_args) -> list:
        n = len(devices)
        if len(per_device_args) != n:
            raise ArgumentError(f"expected arguments for {n} devices, got {len(per_device_args)}")
        xc, _ = _jaxlib.xla()
        shard_shapes = self.shard_shapes()
        nparams = len(self.parameters)
        converted: list = [[] for _ in range(n)]
        for d, args in enumerate(per_device_args):
            if len(args) != nparams:
                raise ArgumentError(f"device {d}: the program takes {nparams} arguments, got "
                                    f"{len(args)}")
            for p, (x, (_, dtype), shape) in enumerate(zip(args, self.parameters,
                                                            shard_shapes)):
                # A wrong-sized shard is not diagnosed by jaxlib: it can crash the process.
                converted[d].append(arguments.convert(x, shape, dtype,
                                                      f"device {d}, argument {p} (a shard)"))
        args = []
        for p in range(nparams):
            shards = [np.ascontiguousarray(converted[d][p]) for d in range(n)]
            bufs = [_jaxlib.put(s, dev) for s, dev in zip(shards, devices)]
            # One array over every device of the program; a process holds only its shards.
            args.append(_jaxlib.assemble(shards[0].shape, shards[0].dtype, bufs, self.devices,
                                         xc.HloSharding.replicate()))
        return self._execute(args)


def compile(module_or_text, platform: str = "cpu", *, num_replicas: int = 1,
            num_partitions: int = 1, client=None, filename: str | None = None,
            topology: str | None = None, distributed=None,
            host_callbacks=None, propagate_result_shardings: bool = False,
            compiler_options: dict | None = None) -> Compiled:
    """Verify (in Python for an mhlo_ir Module, then in jaxlib) and compile for ``platform``
    ("cpu", "cuda"/"gpu", "rocm", or "tpu": the attached TPU, or a ``topology``).

    Several replicas or partitions compile for that many devices of the platform (on CPU the
    client is created with enough devices); partitions use XLA's SPMD partitioner. A platform
    with no device here raises PlatformUnavailable, which names the platforms there are.

    CPU, GPU and an attached TPU (a Cloud TPU VM with ``jax[tpu]``: its client comes from
    jax) give an ``Executable``, which runs. "tpu" with a ``topology`` compiles ahead of time
    through libtpu ("v5e:2x2", "v5e:2x4"...; see ``verify.tpu``) on this machine, with no TPU,
    and gives a ``Compiled``: everything XLA made (optimized HLO, cost, memory, per-shard
    shapes, serialized bytes) but nothing to run.

    ``distributed`` (a ``verify.distributed.Context``) compiles on CPU for the devices of
    every process in the group, in order (process 0's first); each process then runs its
    part with ``Executable.run_local``.

    ``propagate_result_shardings``: with several partitions, the results of ``main`` without
    an ``mhlo.sharding`` keep the sharding XLA's partitioner gives them (as jax.jit lets it),
    instead of being replicated (all-gathered) at the end; read them from the executable
    (``Executable.run_global`` does).

    Host callbacks (``Builder.host_callback``) are the module's ``host_callbacks``;
    ``host_callbacks=[f, g, ...]`` gives them instead (the only way for text, whose callback
    ops name them by index). Each op's index and signature is checked against its callable
    here, and what a callable returns is checked when it runs (``CallbackError``).

    ``compiler_options`` (``{"xla_cpu_enable_fast_math": True}``, ``{"xla_disable_hlo_passes":
    "algsimp"}``...) are XLA's options by name, given as jax.jit's ``compiler_options`` gives
    them: ``optimization_level``, ``memory_fitting_level``, ``exec_time_optimization_effort``
    and ``memory_fitting_effort`` set the build options, the rest override XLA's debug
    options. One XLA does not know, or a value of the wrong type, raises jaxlib's own error
    (jax's ``JaxRuntimeError``, "No such compile option"), as jax.jit's does.
    """
    platform = _jaxlib.normalize(platform)  # a misspelt platform fails before any work
    if topology is not None and platform != "tpu":
        raise ValueError(f"topology= is for platform='tpu', not {platform!r}")
    if platform == "tpu" and topology is None and client is None:
        client = _jaxlib.client("tpu")  # the attached TPU; PlatformUnavailable without one
    module_or_text = dequantized(module_or_text)
    _check_counts(num_replicas, num_partitions)
    text, computation, read = _check(module_or_text, filename)
    checked = read if read is not None else module_or_text  # (text as our parser reads it)
    _check_entry(checked)
    if read is None:
        depth = _text_nesting_depth(text)
        if depth > MAX_COMPILE_NESTING:
            raise CompileError(_TOO_DEEP.format(depth=f"about {depth}"), from_jaxlib=False)
    if platform == "cpu" and read is not None:
        if num_partitions > 1 and num_replicas == 1:  # (SPMD: see the refusal of 4-bit ones)
            _cpu_refusals(read, True)
        else:
            _cpu_refusals(read)  # text too, as our parser reads it
    # (results left for the partitioner to shard: None for text our parser cannot read)
    free = _unsharded_results(checked) if propagate_result_shardings else None
    free = free if free is not None and any(free) else None
    if num_replicas > 1 and num_partitions > 1 and topology is None:
        # (the abort is in building the loaded executable: a TPU topology's compile-only
        # executable compiles, and reads, as the review of 2026-12-07 measured)
        _tiled_results_refusal(read, free is not None)
    if num_partitions > 1:
        _whole_sharding_refusal(read, free is not None)
    xc, X = _jaxlib.xla()
    n = num_replicas * num_partitions
    if distributed is not None:
        if platform != "cpu" or client is not None:
            raise ValueError("distributed= compiles on the group's CPU client: leave "
                             "platform and client out")
        client = distributed.client
        if n > len(distributed.global_devices):
            raise ValueError(f"the group has {len(distributed.global_devices)} devices "
                             f"({distributed.num_processes} processes), the program needs {n}")
    opts = _options(xc, num_replicas, num_partitions,
                    [d.id for d in client.devices()[:n]] if distributed is not None else None)
    if _SHARDY.search(text):
        # jax's own text with Shardy's shardings (its default partitioner): XLA partitions
        # it with Shardy ("a custom call named 'xla.sdy.*'" under GSPMD)
        opts.executable_build_options.use_shardy_partitioner = True
    if free is not None and num_partitions > 1:
        opts.executable_build_options.allow_spmd_sharding_propagation_to_output = free
    overridden = _compiler_options(opts, compiler_options)
    if platform == "tpu":
        from .host_callbacks import mentions_callbacks
        if mentions_callbacks(text) or host_callbacks:
            raise CompileError("the program has host callbacks, which XLA:CPU and XLA:GPU "
                               "call through FFI custom calls; XLA:TPU calls back through "
                               "send/recv host transfers, which verify does not serve on "
                               "TPU", from_jaxlib=False)
        # what XLA:TPU aborts the process on, and non-StableHLO (text as our parser reads it)
        _tpu_refusals(checked)
        if num_partitions > 1:
            _tpu_partitioned_refusals(read)
    if read is not None:
        _device_count_refusals(read, num_replicas, num_partitions)
    if platform == "tpu" and topology is not None:
        from . import tpu
        try:
            compiled, devices = tpu.compile_text(text, topology, opts, n)
        except (ValueError, PlatformUnavailable, JaxlibMissing):
            raise  # the topology, the chips or libtpu: said plainly already
        except Exception as e:  # noqa: BLE001 - XLA:TPU's refusal, in its words
            if overridden and _option_error(e):
                raise
            raise _located_error(module_or_text, text, e, CompileError,
                                 source_name(module_or_text, filename)) from None
        return Compiled(compiled, "tpu", devices, _signature(computation), text,
                        num_replicas, num_partitions, computation, topology)
    from . import host_callbacks as hc
    bound = hc.bind(read, text, host_callbacks, platform, num_partitions)
    lapack.register_if_needed(text, platform)
    if client is None:
        client = _jaxlib.client(platform, None if (n == 1 or platform != "cpu") else max(n, 8))
    devices = client.devices()[:n]
    if len(devices) < n:
        raise ValueError(f"{platform} has {len(devices)} devices, the program needs {n}")
    try:
        if bound is None:
            loaded = _jaxlib.on_big_stack(client.compile_and_load, text,
                                          xc.DeviceList(tuple(devices)), opts)
        else:
            loaded = _jaxlib.on_big_stack(_compile_with_callbacks, client, text,
                                          xc.DeviceList(tuple(devices)), opts,
                                          bound.callables)
    except Exception as e:  # noqa: BLE001
        if overridden and _option_error(e):
            raise  # (a compiler option, not the program: jaxlib's error, as jax.jit's)
        raise _located_error(module_or_text, text, e, CompileError,
                             source_name(module_or_text, filename)) from None
    if computation is None:  # jaxlib compiled a text its conversion to HLO refused
        computation = _jaxlib.on_big_stack(X.mlir.mlir_module_to_xla_computation, text)
    exe = Executable(loaded, client, devices, _signature(computation), text, num_replicas,
                     num_partitions, computation, platform, bound)
    if platform == "cpu" and num_partitions > 1:
        _partitioned_refusals(exe)  # what XLA's partitioner added
    if distributed is not None:
        import hashlib
        program = f"{num_replicas}x{num_partitions}\n{exe.input_hlo(canonical=True)}"
        distributed.agree("program", hashlib.sha256(program.encode()).hexdigest())
    return exe


def _compile_with_callbacks(client, text, devices, opts, callables):
    """jaxlib takes ``host_callbacks`` only with a module parsed by its bindings."""
    from . import bindings
    ir, ctx = bindings.context()
    with ctx:
        module = ir.Module.parse(text)
        return client.compile_and_load(module, devices, opts, host_callbacks=callables)


def _options(xc, num_replicas: int, num_partitions: int, device_ids=None):
    """Compile options for ``num_replicas`` x ``num_partitions`` devices: ``device_ids`` (the
    devices' ids, which in a multi-process group are not 0..n-1), or 0..n-1."""
    opts = xc.CompileOptions()
    n = num_replicas * num_partitions
    if n > 1:
        opts.num_replicas = num_replicas
        opts.num_partitions = num_partitions
        ids = np.arange(n) if device_ids is None else np.asarray(device_ids)
        opts.device_assignment = xc.DeviceAssignment.create(
            ids.reshape(num_replicas, num_partitions))
        if num_partitions > 1:
            opts.executable_build_options.use_spmd_partitioning = True
    return opts


# Options jax.jit's compiler_options sets on the build options, not as XLA debug options.
_BUILD_OPTIONS = ("exec_time_optimization_effort", "memory_fitting_effort",
                  "optimization_level", "memory_fitting_level")


def _compiler_options(opts, options) -> bool:
    """Put XLA options by name on ``opts`` as jax's ``get_compile_options`` puts them;
    whether there were any."""
    if not options:
        return False
    if not hasattr(options, "items"):
        raise TypeError(f"compiler_options is a dict of XLA option names to values, got "
                        f"{type(options).__name__} {options!r}")
    options = dict(options)
    build = opts.executable_build_options
    for name in _BUILD_OPTIONS:
        if name in options:
            setattr(build, name, options.pop(name))
    opts.env_option_overrides = list(options.items())
    return True


def _option_error(e: Exception) -> bool:
    """Whether jaxlib refused a compile option (its name or its value), not the program."""
    message = str(e)
    return "No such compile option" in message or "While setting option" in message


def _unsharded_results(module) -> list | None:
    """For each result of ``main``, whether it has no ``mhlo.sharding`` (None: no module)."""
    main = getattr(module, "lookup", lambda name: None)("main")
    if main is None or main.result_types is None:
        return None
    attrs = list(main.res_attrs or ()) + [{}] * len(main.result_types)
    return [not (attrs[i] or {}).get("mhlo.sharding") for i in range(len(main.result_types))]


def _check_entry(module) -> None:
    """What XLA rejects only at compile time with an obscure message, said plainly first."""
    lookup = getattr(module, "lookup", None)
    if lookup is None:
        return
    main = lookup("main")
    if main is None:
        raise CompileError("the module has no function named @main, which XLA runs",
                           from_jaxlib=False)
    for i, t in enumerate(main.result_types or ()):
        if type(t).__name__ == "TupleType":
            raise CompileError(f"@main result {i} is a tuple ({t}); XLA cannot return tuples "
                               "from the entry function: return the elements instead",
                               from_jaxlib=False)
    depth = _nesting_depth(module)
    if depth > MAX_COMPILE_NESTING:
        raise CompileError(_TOO_DEEP.format(depth=depth), from_jaxlib=False)
    for fn in module.functions:
        for op in _walk(fn.body):
            if op.spec.name == "fusion" and len(op.results) > 1:
                # jaxlib 0.10.2 aborts the whole process here (shape.h: has_layout()).
                raise CompileError(f"@{fn.name}: a 'fusion' with {len(op.results)} results "
                                   "crashes XLA's compiler in jaxlib 0.10 (Check failed: "
                                   "has_layout()); split it into single-result fusions",
                                   from_jaxlib=False)


# The deepest nest of regions verify.compile hands to XLA: 200 levels of ifs compile and run
# on CPU with jaxlib 0.10.2, 250 crash the process (SIGSEGV on one of XLA's own threads, which
# running jaxlib on a big-stack thread does not help). Parsing and converting handle deeper
# nests (verify.check runs them on a 1 GiB stack).
MAX_COMPILE_NESTING = 200


_TOO_DEEP = ("regions are nested {depth} deep; XLA's compiler overflows a thread's stack "
             f"somewhere past {MAX_COMPILE_NESTING} levels and kills the process (measured "
             "with jaxlib 0.10.2 on CPU): flatten the nest or move inner levels into called "
             "functions")


def _text_nesting_depth(text: str) -> int:
    """How deep the regions of a text our parser could not read nest, from its lines: a
    region opens at a line's end (``({``, ``}, {``) and closes at a line's start (``})``),
    in both of MLIR's forms; the module's and a function's bodies are the two outermost."""
    depth = deepest = 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("}"):
            depth -= 1
        if stripped.endswith("{"):
            depth += 1
            deepest = max(deepest, depth)
    return deepest - 2


def _nesting_depth(module) -> int:
    deepest = 0
    stack = [(fn.body, 0) for fn in module.functions]
    while stack:
        region, depth = stack.pop()
        deepest = max(deepest, depth)
        for block in region.blocks:
            for op in block.operations:
                for r in op.regions:
                    stack.append((r, depth + 1))
    return deepest


def _walk(region):
    """Every op under ``region``, from an explicit stack (nests may be deeper than Python's
    recursion limit)."""
    stack = [region]
    while stack:
        for block in stack.pop().blocks:
            for op in block.operations:
                yield op
                stack.extend(reversed(op.regions))


def run(module_or_text, *arrays, platform: str = "cpu", filename: str | None = None) -> list:
    """Compile and run on one device: numpy arrays (or Python scalars for rank-0 parameters)
    in, list of numpy arrays out."""
    return compile(module_or_text, platform, filename=filename)(*arrays)
