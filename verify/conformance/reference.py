"""The reference side: jaxlib alone on a corpus module, transformed with MLIR's bindings.

The same transformation as ours (``verify.conformance.program``), done on jaxlib's own AST so
that nothing of mhlo_ir takes part: the values of ``@inputs`` come from jaxlib running
``@inputs``; ``@main`` takes them as arguments instead of calling it; the check ops are
removed and ``@main`` returns each checked value and its expected value (a ``*_const`` check's
constant becomes a ``stablehlo.constant``). Quantized programs, which the bindings cannot
parse, are read through a portable artifact and go through StableHLO's quantization lowering
first, as its reference interpreter does (``verify.quantized``). The program is compiled and
run with the worker's one CPU client.
"""

from __future__ import annotations

import re

import numpy as np

from .. import _jaxlib, quantized
from ..errors import VerificationError
from . import mlir
from .checks import check_of
from .outcome import ModuleOutcome, Unsupported, judge_outputs

__all__ = ["run_module", "transform"]


def _name(op) -> str:
    ir, _ = mlir.context()
    return ir.StringAttr(op.attributes["sym_name"]).value


def _functions(module) -> dict:
    return {_name(op): op for op in module.body.operations if op.operation.name == "func.func"}


def entry_function(functions: dict):
    """``@main``, or the one function of a module that has a single one (the quantized
    tests name theirs after the case); None when there is neither."""
    if "main" in functions:
        return functions["main"]
    if len(functions) == 1:
        return next(iter(functions.values()))
    return None


def _callee(op) -> str | None:
    ir, _ = mlir.context()
    if op.operation.name != "func.call":
        return None
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value


def check_kind(op) -> str | None:
    """The check an op asserts (``expect_close``...), or None for other ops."""
    ir, _ = mlir.context()
    name = op.operation.name
    if name == "stablehlo.custom_call":
        target = ir.StringAttr(op.attributes["call_target_name"]).value
        return target[len("check."):] if target.startswith("check.") else None
    if name.startswith("check."):
        return name[len("check."):]
    return None


def _number(op, name):
    """Attribute ``name`` of ``op`` as a Python number (a FloatAttr's or IntegerAttr's
    value), None when absent, its text when it is neither (``check_of`` refuses that, as
    our side does)."""
    ir, _ = mlir.context()
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    for kind in (ir.FloatAttr, ir.IntegerAttr):
        try:
            return kind(attr).value
        except ValueError:  # (not of that kind)
            continue
    return str(attr)


# The value attribute in the generic print of a ``*_const`` check op.
_VALUE = re.compile(r"\bvalue = (dense<.*?> : tensor<[^ ]*?>)(?=[,}])")


# A check custom call in StableHLO's custom form, without attributes.
_CHECK_CALL = re.compile(r"(stablehlo\.custom_call @check\.[\w.]+\([^)]*\)) :")


def _side_effecting_checks(text: str) -> str:
    """``text`` with its check custom calls marked ``has_side_effect``: the portable artifact
    that reads quantized text drops ops whose results nothing uses, and a check whose verdict
    @main does not return is such an op."""
    return _CHECK_CALL.sub(r"\1 {has_side_effect = true} :", text)


def _constant_before(op):
    """A ``stablehlo.constant`` of ``op``'s ``value``, inserted before ``op``; its result.

    NOTE: the bindings cannot hand a complex dense attribute to Python (reading
    ``op.attributes["value"]`` raises "Can't cast unknown element type"), so the constant is
    made from the attribute's text, which MLIR prints and parses without that cast."""
    ir, _ = mlir.context()
    m = _VALUE.search(op.operation.get_asm(print_generic_op_form=True))
    if m is None:
        raise Unsupported(f"cannot read the value of {op.operation.name}")
    t = op.operands[0].type
    const = ir.Operation.parse(f'"stablehlo.constant"() <{{value = {m.group(1)}}}> : () -> {t}')
    ir.InsertionPoint(op).insert(const)
    return const.results[0]


def transform(text: str):
    """``(program, inputs_program, checks)``: the transformed module's text, the text of a
    module whose ``@main`` is ``@inputs`` (None without one), and its ``Check``s
    in the order ``@main`` returns them (actual, expected per check). Raises Unsupported
    for what the conformance run cannot judge, ir.MLIRError for text MLIR refuses."""
    ir, ctx = mlir.context()
    func = _jaxlib.require("jaxlib.mlir.dialects.func")
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError:
            if "!quant." not in text:
                raise
            # the bindings cannot read quantized types; jaxlib's C++ can (verify.quantized)
            module = quantized.read_quantized(_side_effecting_checks(text), ctx)
        functions = _functions(module)
        main = entry_function(functions)
        if main is None:
            raise Unsupported("no @main (and more than one function) to run")
        block = main.regions[0].blocks[0]
        inputs_calls = [op for op in block.operations if _callee(op) == "inputs"]
        arg_types = list(ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
                         .inputs)
        for call in inputs_calls:
            for r in call.results:
                arg = block.add_argument(r.type, ir.Location.unknown())
                arg_types.append(r.type)
                r.replace_all_uses_with(arg)
            call.operation.erase()
        if inputs_calls and "arg_attrs" in main.attributes:
            del main.attributes["arg_attrs"]
        checks, returned, judged = [], [], []
        for op in list(block.operations):
            kind = check_kind(op)
            if kind is None:
                continue
            try:
                check = check_of(kind, op.operation.name != "stablehlo.custom_call",
                                 lambda name: _number(op, name))
            except ValueError as e:
                raise Unsupported(str(e)) from None
            if kind.endswith("_const"):
                expected = _constant_before(op)
                actual = op.operands[0]
            else:
                if len(op.operands) != 2:
                    raise Unsupported(f"check.{kind} with {len(op.operands)} operands")
                actual, expected = op.operands[0], op.operands[1]
            for r in op.results:
                # main's return is replaced below by the checked values (the quantized tests
                # return check.eq's verdict); any other use would compute with it
                if any(u.owner.name != "func.return" for u in r.uses):
                    raise Unsupported(f"the result of check.{kind} is used")
            checks.append(check)
            returned += [actual, expected]
            judged.append(op)
        if not checks:
            raise Unsupported("no check ops: nothing to judge")
        ret = list(block.operations)[-1]
        with ir.InsertionPoint(ret):
            func.ReturnOp(returned)
        ret.operation.erase()
        for op in judged:  # after the return that may have used a verdict (MLIR erases an
            op.operation.erase()  # op with live uses into a crash)
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(arg_types, [v.type for v in returned]))
        if "res_attrs" in main.attributes:
            del main.attributes["res_attrs"]
        main.attributes["sym_name"] = ir.StringAttr.get("main")
        if "sym_visibility" in main.attributes:
            del main.attributes["sym_visibility"]
        if "!quant." in text:
            quantized.lower_in_place(module)
        program = module.operation.get_asm()
        inputs_program = None
        if inputs_calls:
            inputs_program = _inputs_module(text)
    return program, inputs_program, checks


def _constant_inputs(inputs_program: str):
    """The values ``@inputs`` returns, read from its constants through the bindings' buffer
    protocol, or None when it computes anything or returns an element type the protocol
    cannot give numpy (bf16, i4, complex, float8...): then jaxlib runs it."""
    ir, ctx = mlir.context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(inputs_program)
        (fn,) = _functions(module).values()
        ops = list(fn.regions[0].blocks[0].operations)
        values = {}
        for op in ops[:-1]:
            if op.operation.name != "stablehlo.constant":
                return None
            try:
                attr = ir.DenseElementsAttr(op.attributes["value"])
                array = np.array(attr)
            except (TypeError, ValueError):
                return None
            t = ir.RankedTensorType(op.result.type)
            if array.dtype == object or array.shape != tuple(t.shape):
                return None
            values[op.result] = array
        out = []
        for v in ops[-1].operands:
            if v not in values:
                return None
            out.append(values[v])
        return out


def _inputs_module(text: str) -> str:
    """A module whose public ``@main`` is the original's ``@inputs``."""
    ir, _ = mlir.context()
    module = ir.Module.parse(text)
    for name, op in _functions(module).items():
        if name != "inputs":
            op.operation.erase()
    (inputs,) = _functions(module).values()
    inputs.attributes["sym_name"] = ir.StringAttr.get("main")
    if "sym_visibility" in inputs.attributes:
        del inputs.attributes["sym_visibility"]
    return module.operation.get_asm()


def _compile(text: str):
    xc, _ = _jaxlib.xla()
    client = _jaxlib.client("cpu")
    devices = client.devices()[:1]
    return _jaxlib.on_big_stack(client.compile_and_load, text, xc.DeviceList(tuple(devices)),
                                xc.CompileOptions()), devices[0]


def _execute(loaded, device, args) -> list:
    bufs = [_jaxlib.put(a, device) for a in args]
    res = _jaxlib.on_big_stack(loaded.execute_sharded, bufs)
    return [_jaxlib.to_numpy(o[0]) for o in res.disassemble_into_single_device_arrays()]


def _canonical_hlo(program: str) -> str:
    """The program's HLO in canonical form (``Executable.input_hlo(canonical=True)``'s)."""
    _, X = _jaxlib.xla()
    computation = _jaxlib.on_big_stack(X.mlir.mlir_module_to_xla_computation, program)
    return _jaxlib.canonical_hlo(computation)


def run_module(text: str, cache=None) -> ModuleOutcome:
    """Transform, compile, run and judge one module with jaxlib alone. With ``cache`` (a
    ``task.ExecutableCache`` ours filled), a program whose HLO is the very HLO ours compiled
    runs that executable instead of compiling it again."""
    ir, _ = mlir.context()
    try:
        program, inputs_program, checks = transform(text)
    except Unsupported as e:
        return ModuleOutcome("unsupported", str(e))
    except ir.MLIRError as e:
        return ModuleOutcome("parse_error", _first_line(mlir.error_text(e)))
    except VerificationError as e:  # StableHLO's C++ refused a quantized program
        return ModuleOutcome("parse_error", _first_line(e))
    except Exception as e:  # noqa: BLE001 - a pass or the bindings refused the program
        return ModuleOutcome("compile_error", f"{type(e).__name__}: {e}")
    args = []
    if inputs_program is not None:
        try:
            args = _constant_inputs(inputs_program)
            if args is None:
                loaded, device = _compile(inputs_program)
                args = _execute(loaded, device, [])
        except Exception as e:  # noqa: BLE001 - jaxlib's own runtime errors
            return ModuleOutcome("compile_error", f"running @inputs: {_first_line(e)}")
    shared = None
    if cache is not None and cache.by_hlo:
        try:
            shared = cache.by_hlo.get(_canonical_hlo(program))
        except Exception:  # noqa: BLE001 - compiling below reports what jaxlib refuses
            shared = None
    if shared is not None:
        cache.hits += 1
        loaded, device = shared.loaded, shared.devices[0]
    else:
        try:
            loaded, device = _compile(program)
        except Exception as e:  # noqa: BLE001
            return ModuleOutcome("compile_error", _first_line(e))
    try:
        outs = _execute(loaded, device, args)
    except Exception as e:  # noqa: BLE001
        return ModuleOutcome("exec_error", _first_line(e))
    return judge_outputs(outs, checks)


def _first_line(e) -> str:
    """An error (or its text) as one line, shortened."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and
             not ln.startswith("Failed to parse using StableHLO")]
    text = lines[0] if lines else type(e).__name__
    return text if len(text) <= 400 else text[:397] + "..."
