"""A second executor: StableHLO's reference interpreter inside jaxlib, for comparing with XLA.

    outs = verify.interpret(module, x, y)     # numpy in, list of numpy out, no XLA compile

The program reaches the interpreter as StableHLO. Modules of HLO ops only go straight through
jaxlib's ``mhlo_to_stablehlo``: the interpreter then checks our text's meaning independently of
XLA. Modules with ops StableHLO lacks (chlo's decomposed functions, mhlo-only ops) go through
XLA's own conversion to HLO and back (``mlir_module_to_xla_computation`` then
``xla_computation_to_mlir_module``): the interpreter runs what XLA was given, before any of its
optimisations, because the bindings carry no chlo legalization pass of their own.

Ops it lacks that other ops compute exactly (copy, domain, fusion, create_token, broadcast,
dot, mulhi, topk, scan, and on one device the collectives and replica/partition ids) are first
written with those ops (``mhlo_ir.decompose``): XLA runs the originals, the interpreter
their definition.

The interpreter lacks some ops and takes its process down on them (LLVM ERROR "Unsupported
op", an abort), and dies of SIGFPE on integer division by zero: ``UNSUPPORTED`` lists the ops
measured to do so, which ``interpret`` looks for in the converted program and refuses up
front with ``InterpreterUnsupported``; ``aborting_op`` does the same for ops it has but
aborts on in some forms (32-bit FFTs, batched triangular solves, empty contractions,
convolutions with features before batch), read from the converted program with mhlo_ir's
parser.
Anything else that might crash should run in a worker process (``verify.fuzz`` does).
Inputs go in, and results come out, as text of dense attributes that mhlo_ir prints and
parses, so every element type survives the trip (the bindings' buffer protocol handles only
some).
"""

from __future__ import annotations

import re

import numpy as np
from mhlo_ir.errors import OpBuildError

from . import _jaxlib
from .api import to_text
from .errors import VerificationError

__all__ = ["interpret", "InterpreterUnsupported", "InterpreterError", "UNSUPPORTED", "route_of",
           "aborting_op", "ABORTING_OP_NAMES"]


class InterpreterUnsupported(Exception):
    """The interpreter cannot run the program (it would abort the process on it)."""


class InterpreterError(Exception):
    """The interpreter refused the program or its inputs (its diagnostics are on stderr)."""


# Ops the interpreter of jaxlib 0.10.2 aborts on, by the name it sees them under (after the
# route's conversion), with its own words; measured by running every generator rule alone
# (docs/findings.md). ``interpret`` looks for them in the converted program first.
_DECOMPOSABLE = ("unsupported at the moment (it decomposes into supported ops: "
                 "openxla/stablehlo#1571)")
_PARALLEL = "only supported when run via interpreter.run_parallel (collectives and device ids)"
_UNSUPPORTED_OP = "Unsupported op"
UNSUPPORTED: dict = {
    **{f"stablehlo.{n}": _DECOMPOSABLE for n in (
        "batch_norm_grad", "batch_norm_inference", "batch_norm_training", "broadcast",
        "cholesky", "create_token", "cross-replica-sum", "dot", "einsum", "rng",
        "rng_bit_generator", "torch_index_select")},
    **{f"stablehlo.{n}": _PARALLEL for n in (
        "all_gather", "all_reduce", "all_to_all", "collective_broadcast",
        "collective_permute", "infeed", "outfeed", "partition_id", "recv", "reduce_scatter",
        "replica_id", "send")},  # (send and recv: a segfault; the others an abort)
    **{f"stablehlo.{n}": _UNSUPPORTED_OP for n in (
        "custom_call", "real_dynamic_slice", "set_dimension_size")},
    **{f"mhlo.{n}": _UNSUPPORTED_OP + " (an MHLO op that reaches it through XLA's HLO)"
       for n in ("copy", "domain", "erf", "fusion", "scan", "stochastic_convert", "topk",
                 "xla.rng_get_and_update_state")},
}


def aborting_op(op) -> str | None:
    """Why the interpreter of jaxlib 0.10.2 aborts on ``op``, an op it has (docs/findings.md,
    "The interpreter"; each measured alone in a subprocess), or None.

    - ``fft`` in 32-bit precision (f32 or complex<f32> operand, any fft_type): "LLVM ERROR:
      Semantics mismatch between provided type and complex value" (its FFT builds
      constants from C++ doubles, which f32 elements cannot hold);
    - ``fft`` IRFFT whose last length is 1: "Could not infer SliceOp's return type";
    - batched ``triangular_solve`` (rank > 2) without ``unit_diagonal``: "Incompatible
      index and shape found while flattening index" (it reads the diagonal at ``{i, i}``);
    - ``dot_general`` contracting a zero-size dimension into a non-empty result: the same
      words;
    - ``convolution`` (and ``dynamic_conv``) whose output feature dimension comes before
      its batch dimension:
      "Incompatible index and shape found while flattening index" — it walks the result's
      non-spatial dimensions in the result's order but indexes with them as (batch,
      feature), so only equal sizes survive (and then read right). With feature or batch
      groups, each group's convolution has ``features / groups`` features: that is the size
      compared.
    """
    name = op.spec.name
    if name == "fft":
        et = op.operands[0].type.element_type
        if (et.component if et.kind == "complex" else et).name == "f32":
            return ("it aborts on every fft in 32-bit precision (LLVM ERROR: Semantics "
                    "mismatch between provided type and complex value)")
        lengths = op.attributes["fft_length"].ints
        if op.attributes["fft_type"].value == "IRFFT" and lengths[-1:] == (1,):
            return ("it aborts on an IRFFT whose last fft_length is 1 (LLVM ERROR: Could not "
                    "infer SliceOp's return type)")
    elif name == "triangular_solve":
        if op.operands[0].type.rank > 2 and not _flag(op, "unit_diagonal"):
            return ("it aborts on a batched triangular_solve whose diagonal is not unit "
                    "(LLVM ERROR: Incompatible index and shape found while flattening index): "
                    "it reads the diagonal at a rank-2 index, without the batch dimensions")
    elif name == "dot_general":
        dn = op.attributes["dot_dimension_numbers"]
        lhs = op.operands[0].type.shape
        if op.results[0].type.num_elements and any(
                lhs[d] == 0 for d in dn.lhs_contracting_dimensions):
            return ("it aborts on a dot_general that contracts an empty dimension into a "
                    "non-empty result (LLVM ERROR: Incompatible index and shape found while "
                    "flattening index); the result is all zeros")
    elif name in ("convolution", "dynamic_conv"):
        dn = op.attributes["dimension_numbers"]
        b, f = dn.output_batch_dimension, dn.output_feature_dimension
        if f < b:
            shape = op.results[0].type.shape
            groups = 1
            for k in ("feature_group_count", "batch_group_count"):
                g = op.attributes.get(k)
                groups *= 1 if g is None else g.value
            if shape[f] // groups != shape[b]:
                return ("it aborts on a convolution whose output feature dimension comes "
                        "before its batch dimension, unless the features of one group number "
                        "as many as the batch (LLVM ERROR: Incompatible index and shape found "
                        "while flattening index)")
    return None


# The ops ``aborting_op`` judges: text that names none of them needs no reading.
ABORTING_OP_NAMES = frozenset({"fft", "triangular_solve", "dot_general", "convolution",
                               "dynamic_conv"})


def _flag(op, name) -> bool:
    a = op.attributes.get(name) if op.attributes else None
    return bool(getattr(a, "value", False))


def _refuse_aborting_ops(module) -> None:
    from mhlo_ir.ir import walk
    for fn, op in walk(module):
        why = aborting_op(op)
        if why is not None:
            # (the complex-parts wrapper renames the program's own main)
            name = "main" if fn.name == _RENAMED_MAIN else fn.name
            raise InterpreterUnsupported(f"@{name}: '{op.spec.name}': the StableHLO "
                                         f"interpreter of jaxlib 0.10.2: {why}")


_OP_NAME = re.compile(r"\b(?:stablehlo|mhlo|chlo)\.[A-Za-z_][A-Za-z0-9_.\-]*")


def _refuse_unsupported_text(text: str) -> set:
    """Refuses the ops of ``UNSUPPORTED`` that ``text`` names; returns the op names it
    names (dialect-neutral: ``fft`` for ``stablehlo.fft``)."""
    names = set(_OP_NAME.findall(text))
    for name in sorted(names):
        why = UNSUPPORTED.get(name.rstrip("."))
        if why is not None:
            raise InterpreterUnsupported(f"the StableHLO interpreter aborts on {name}: {why}")
    return {n.split(".", 1)[1] for n in names}


def _single_device(module) -> bool:
    """Whether ``module`` runs on one replica and one partition (its ``mhlo.num_replicas``
    and ``mhlo.num_partitions``, where it has them), as ``verify.run`` runs it."""
    attrs = module.attributes or {}
    return all(getattr(attrs.get(k), "value", 1) == 1
               for k in ("mhlo.num_replicas", "mhlo.num_partitions"))


def route_of(module) -> str:
    """``"direct"`` (mhlo_to_stablehlo) when every op has a StableHLO twin, else ``"hlo"``
    (through XLA's HLO)."""
    from mhlo_ir.ir import walk
    for _, op in walk(module):
        if not op.spec.dialects & {"stablehlo", "func"}:
            return "hlo"
    return "direct"


def _stablehlo_only(module) -> None:
    """InterpreterUnsupported unless every op of quantized ``module`` is StableHLO's: such a
    program reaches the interpreter as StableHLO text through a portable artifact, which
    neither XLA's HLO route nor jaxlib's chlo legalization (chlo.erf has none) can help."""
    from mhlo_ir.ir import walk
    for fn, op in walk(module):
        if not op.spec.dialects & {"stablehlo", "func"}:
            raise InterpreterUnsupported(
                f"@{fn.name}: '{op.spec.name}' in a quantized program: quantized programs "
                "reach the interpreter as StableHLO text (verify.quantized), which has no "
                f"'{op.spec.name}'")


def _stablehlo(text: str, route: str):
    _, X = _jaxlib.xla()
    if route == "direct":
        return _jaxlib.on_big_stack(X.mlir.mhlo_to_stablehlo, text)
    computation = _jaxlib.on_big_stack(X.mlir.mlir_module_to_xla_computation, text)
    return X.mlir.xla_computation_to_mlir_module(computation)


def _decompose_converted(ir, parsed, converted: str, single: bool) -> tuple:
    """XLA's conversion back from HLO writes some ops ``mhlo_ir.decompose`` replaced
    (an operand-less after_all comes back as create_token, a dot_general as dot): the
    converted program, as the bindings and as text, with those written out again."""
    from mhlo_ir.decompose import decompose, decomposable, rules
    from mhlo_ir.dialect import STABLEHLO
    names = rules(single)
    if not any(n.split(".", 1)[1] in names for n in set(_OP_NAME.findall(converted))):
        return parsed, converted
    read = _read_text(converted)
    if read is None or not decomposable(read, single_device=single):
        return parsed, converted
    try:
        text = decompose(read, single_device=single).to_text(dialect=STABLEHLO)
    except OpBuildError:  # an mhlo op XLA's conversion kept (add_dependency) has no
        return parsed, converted  # StableHLO spelling: the interpreter judges it as it is
    parsed = ir.Module.parse(text)
    return parsed, str(parsed)


def _read_text(text):
    """Text as our parser reads it, for the Python-side refusals (None where it cannot)."""
    import mhlo_ir
    try:
        return mhlo_ir.parse(text if isinstance(text, str) else text.decode())
    except Exception:  # noqa: BLE001 - jaxlib judges what we cannot read
        return None


def _is_complex(t) -> bool:
    et = getattr(t, "element_type", None)
    return et is not None and et.kind == "complex"


_RENAMED_MAIN = "interpreted_main"


def _complex_as_parts(module, arg_types, result_types, arrays):
    """The bindings cannot pass complex attributes to or from the interpreter (a TypeError,
    or an abort when results are converted): ``main`` becomes a wrapper that takes and
    returns each complex tensor as its real and imaginary parts, joined by ``complex`` and
    split by ``real`` and ``imag`` around a call of the original ``main`` (renamed). Returns
    the text, the inputs, and which results to join again."""
    import mhlo_ir as hlo
    text = module.to_text(pretty=True)
    if text.count("@main(") != 1:
        raise InterpreterUnsupported("complex values in a module that refers to @main")
    m = hlo.parse(text.replace("@main(", f"@{_RENAMED_MAIN}(", 1))
    inner = m.lookup(_RENAMED_MAIN)
    types, parts = [], []
    for t, a in zip(arg_types, arrays):
        if _is_complex(t):
            part = hlo.tensor(t.shape, t.element_type.component)
            types += [part, part]
            a = np.asarray(a)
            parts += [np.array(a.real), np.array(a.imag)]  # (0-d stays 0-d)
        else:
            types.append(t)
            parts.append(a)
    main = m.add_function("main", types, visibility="public")
    b = main.builder()
    args, i = [], 0
    for t in arg_types:
        if _is_complex(t):
            args.append(b.complex(main.arguments[i], main.arguments[i + 1]))
            i += 2
        else:
            args.append(main.arguments[i])
            i += 1
    out = b.call(inner, args)
    outs = []
    for v, t in zip(out if isinstance(out, tuple) else (out,), result_types):
        outs += [b.real(v), b.imag(v)] if _is_complex(t) else [v]
    b.return_(*outs)
    return m, parts, [_is_complex(t) for t in result_types]


def _join(results, joined, result_types):
    out, i = [], 0
    for is_complex, t in zip(joined, result_types):
        if is_complex:
            z = np.empty(results[i].shape, t.element_type.dtype)
            z.real, z.imag = results[i], results[i + 1]  # (no arithmetic: inf stays inf)
            out.append(z)
            i += 2
        else:
            out.append(results[i])
            i += 1
    return out


def _check_results(main) -> None:
    """InterpreterUnsupported for a token or tuple result of ``main``: the interpreter
    returns tensors only, and aborts the process on anything else ("InterpreterValue is not a
    Tensor")."""
    for i, t in enumerate(main.result_types or ()):
        if getattr(t, "shape", None) is None:
            raise InterpreterUnsupported(f"@main result {i} is {t}: the interpreter returns "
                                         "tensors only (it aborts: \"InterpreterValue is not "
                                         "a Tensor\"); return arrays")


def _checked_arguments(module, arrays) -> list:
    """The arguments as arrays of ``main``'s parameter types (Python scalars converted), or
    ArgumentError naming the argument, as ``verify.run`` checks them: the interpreter only
    fails, saying why on stderr. Text is read by our parser for its signature (unread: not
    checked)."""
    from mhlo_ir.ir import Module
    from mhlo_ir.quant import QuantizedType
    from .arguments import convert
    from .errors import ArgumentError
    if not isinstance(module, Module):
        from .api import _read
        module = _read(to_text(module))
    main = module.lookup("main") if module is not None else None
    if main is None:
        if module is not None:  # (read, and no @main: the interpreter would run another)
            raise InterpreterError("the module has no function named @main, which the "
                                   "interpreter runs (as XLA does)")
        return list(arrays)
    _check_results(main)
    types = main.arg_types
    if len(arrays) != len(types):
        raise ArgumentError(f"the program takes {len(types)} arguments, got {len(arrays)}")
    out = []
    for i, (t, a) in enumerate(zip(types, arrays)):
        shape, et = getattr(t, "shape", None), getattr(t, "element_type", None)
        if shape is None or et is None or et.__class__ is QuantizedType or \
                not all(isinstance(d, int) for d in shape):
            if shape is None:
                raise ArgumentError(f"argument {i}: the parameter is {t}, which the "
                                    "interpreter cannot be given; give @main array "
                                    "parameters only")
            out.append(a)  # (quantized storage, or a dynamic shape: the interpreter's)
            continue
        out.append(convert(a, tuple(shape), et.dtype, f"argument {i}"))
    return out


def interpret(module, *arrays) -> list:
    """Run ``module``'s ``main`` on ``arrays`` in StableHLO's reference interpreter; returns
    numpy arrays. ``module`` is an mhlo_ir Module, or text (read by our parser where it can,
    and then routed as the Module would be; routed directly otherwise)."""
    from mhlo_ir.dense import DenseElementsAttr
    from mhlo_ir.ir import Module
    from mhlo_ir.quant_lowering import has_quantized
    from mhlo_ir.decompose import decompose, decomposable
    from mhlo_ir import parse_attribute
    from .bindings import context
    stablehlo = _jaxlib.require("jaxlib.mlir.dialects.stablehlo")
    if not isinstance(module, Module):
        # Text our parser reads (and verifies) goes the Module's way: complex values, ops the
        # interpreter lacks, quantized types need it; other text goes directly
        from mhlo_ir import ModuleVerificationError, ParseError, parse
        try:
            module = parse(to_text(module))
        except (ParseError, ModuleVerificationError):
            pass
    arrays = _checked_arguments(module, arrays)
    joined = None
    single = True
    if isinstance(module, Module):
        single = _single_device(module)
        quantized = has_quantized(module)
        if not quantized and decomposable(module, single_device=single):
            # ops it lacks, written with ops it has (exactly: mhlo_ir.decompose); XLA, run
            # on the original, is compared with their definition
            module = decompose(module, single_device=single)
        route = route_of(module)
        main = module.lookup("main")
        if main is not None and any(map(_is_complex, main.arg_types + main.result_types)):
            result_types = main.result_types
            module, arrays, joined = _complex_as_parts(module, main.arg_types, result_types,
                                                       arrays)
        if quantized:
            # the bindings cannot parse quantized types: read through a portable artifact
            # and lowered by StableHLO's own pass (verify.quantized), as StableHLO text
            _stablehlo_only(module)
            route = "quantized"
    else:
        route = "direct"
    ir, ctx = context()
    with ctx:
        try:
            if route == "quantized":
                from mhlo_ir.dialect import STABLEHLO
                from .quantized import lower_in_place, read_quantized
                parsed = read_quantized(module.to_text(dialect=STABLEHLO), ctx)
                # StableHLO's own lowering, run here rather than by the interpreter, whose
                # pipeline around it aborts on some (i4, narrowed) types: docs/findings.md
                lower_in_place(parsed, chlo=True)
            else:
                parsed = ir.Module.parse(_stablehlo(to_text(module), route))
        except VerificationError:
            raise
        except Exception as e:  # noqa: BLE001 - the bindings' MLIRError
            if "but decomposition has" in str(e):
                # XLA's HLO -> StableHLO conversion writes a composite of several results
                # whose decomposition returns one value twice with one result
                raise InterpreterUnsupported("XLA's conversion back from HLO writes an "
                                             "invalid composite (docs/findings.md)") from None
            if "mhlo.unknown" in str(e):
                # XLA's HLO -> StableHLO conversion writes ops it cannot express (mulhi) as
                # an op that does not exist
                raise InterpreterUnsupported("XLA's conversion of the program back from HLO "
                                             "writes an op as mhlo.unknown") from None
            raise InterpreterError(f"the route's StableHLO does not parse: {e}") from None
        converted = str(parsed)
        if route == "hlo":
            parsed, converted = _decompose_converted(ir, parsed, converted, single)
        named = _refuse_unsupported_text(converted)
        # What the interpreter is given: the Module itself where mhlo_to_stablehlo converted
        # it op for op; else the converted text as our parser reads it, since XLA's HLO
        # may have made the ops (an einsum becomes a dot_general) — read only when it names
        # an op aborting_op judges (reading took 44% of interpreting generated programs).
        if route in ("direct", "quantized") and isinstance(module, Module):
            read = module
        else:
            read = _read_text(converted) if named & ABORTING_OP_NAMES else None
        if read is not None:
            _refuse_aborting_ops(read)
        inputs = []
        for a in arrays:
            attr = DenseElementsAttr.from_array(np.asarray(a))
            inputs.append(ir.Attribute.parse(attr.render()))
        try:
            results = stablehlo.eval_module(parsed, inputs)
        except ValueError as e:
            raise InterpreterError(str(e)) from None
        out = [parse_attribute(str(r)).to_array() for r in results]
    return out if joined is None else _join(out, joined, result_types)

