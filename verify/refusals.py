"""Programs jaxlib would crash on or refuse obscurely, refused in Python before compiling
(measured on jaxlib 0.10.2; docs/findings.md): what ``verify.compile`` asks of every program
for its platform, and of several replicas with partitions; and what ``verify.check`` asks of
text before jaxlib reads it (``_python_problem``: what jaxlib crashes on instead of
reporting)."""

from __future__ import annotations

import re

from .errors import CompileError


def _check_counts(num_replicas, num_partitions) -> None:
    """Replica and partition counts are positive ints (jaxlib takes -1 for a count and
    compiles for the wrong devices)."""
    for what, n in (("num_replicas", num_replicas), ("num_partitions", num_partitions)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{what} must be a positive int, got {n!r}")


def _tiled_results_refusal(module, propagate: bool = False) -> None:
    """jaxlib 0.10.2 aborts the process compiling a program of several replicas *and*
    partitions whose @main result is annotated with a tiled sharding ("Check failed:
    TotalNumTiles() == devices": the tiles count partitions, the devices replicas times
    partitions), or left for the partitioner to give one (``propagate``: compile's
    ``propagate_result_shardings`` with a result not annotated). ``module``: the Module, or
    text as our parser read it (None: unread)."""
    if propagate:
        raise CompileError("propagate_result_shardings in a program of several replicas and "
                           "partitions: XLA's partitioner may give a result a tiled sharding, "
                           "on which jaxlib aborts the process (Check failed: TotalNumTiles() "
                           "== devices); annotate the results instead, or use one replica",
                           from_jaxlib=False)
    if module is None:
        return
    main = module.lookup("main")
    for i, attrs in enumerate((main.res_attrs or ()) if main is not None else ()):
        sharding = (attrs or {}).get("mhlo.sharding")
        value = getattr(sharding, "value", "")
        if "devices=[" in value:
            raise CompileError(f"@main result {i} is annotated {value}, a tiled sharding, in a "
                               "program of several replicas and partitions: jaxlib aborts "
                               "the process compiling it (Check failed: TotalNumTiles() == "
                               "devices); leave the result unannotated or replicated, or use "
                               "one replica", from_jaxlib=False)


# A whole {unreduced} sharding (alone, or an element of a tuple's; not a tiled sharding's
# last_tile_dims={unreduced}, which XLA takes).
_UNREDUCED = re.compile(r"(?:^|[{,])\s*\{unreduced\}")
_MANUAL = re.compile(r"(?:^|[{,])\s*\{manual\}")


def _tpu_partitioned_refusals(module) -> None:
    """A partitioned TPU program of complex128 values and a tiled sharding: XLA:TPU aborts
    the process ("windowing_util.cc: Check failed: desc->window_bounds.size() == rank";
    measured with the argument tiled [4,1], [1,4], [2,1], rank 1; replicated or unsharded
    compile). Refused for any tiled sharding in such a program, since the partitioner
    spreads one to the values it reaches."""
    from mhlo_ir import complex128 as c128
    from mhlo_ir.ir import walk
    if module is None or isinstance(module, (str, bytes)):
        return
    values = any(_element(t) is c128 for fn in module.functions
                 for t in (*fn.arg_types, *(fn.result_types or ())))
    values = values or any(_element(r.type) is c128 for _, op in walk(module)
                           for r in op.results)
    if values and "devices=[" in _shardings_text(module):
        raise CompileError("a partitioned program of complex128 values with a tiled sharding: "
                           "XLA:TPU aborts the process partitioning it (Check failed: "
                           "window_bounds.size() == rank); keep complex128 values replicated, "
                           "or split them into real and imaginary parts", from_jaxlib=False)


def _shardings_text(module) -> str:
    """Every mhlo.sharding string of ``module`` (arguments, results, ops), joined."""
    from mhlo_ir.ir import walk
    found = []
    for fn in module.functions:
        for attrs in (*(fn.arg_attrs or ()), *(fn.res_attrs or ())):
            found.append(getattr((attrs or {}).get("mhlo.sharding"), "value", ""))
    for _, op in walk(module):
        found.append(getattr((op.attributes or {}).get("mhlo.sharding"), "value", ""))
    return " ".join(found)


def _whole_sharding_refusal(module, propagate: bool) -> None:
    """jaxlib 0.10.2 aborts the process partitioning a program whose @main arguments and
    results mix ``{manual}`` with other shardings (Check failed: !IsManualLeaf(); all manual
    compiles), whose result is ``{unreduced}``,
    or whose argument is while a result is left to the partitioner (``propagate``; Check
    failed: IsTiledLeaf()). ``module``: the Module, or text as our parser read it (None:
    unread)."""
    main = module.lookup("main") if module is not None else None
    if main is None:
        return
    boundary = [getattr((attrs or {}).get("mhlo.sharding"), "value", "")
                for n, dicts in ((len(main.arg_types), main.arg_attrs),
                                 (len(main.result_types or ()), main.res_attrs))
                for attrs in (list(dicts or ()) + [None] * n)[:n]]
    mixed = any(_MANUAL.search(v) for v in boundary) and \
        not all(v.strip() == "{manual}" for v in boundary)
    for what, dicts in (("result", main.res_attrs), ("argument", main.arg_attrs)):
        for i, attrs in enumerate(dicts or ()):
            value = getattr((attrs or {}).get("mhlo.sharding"), "value", "")
            if mixed and _MANUAL.search(value):
                raise CompileError(
                    f"@main {what} {i} is annotated {value} in a partitioned program whose "
                    "other arguments or results are not all manual: XLA aborts the process "
                    "partitioning it (Check failed: !IsManualLeaf()); make every argument "
                    "and result {manual}, or enter the manual region inside (a custom_call "
                    "@Sharding to {manual}, as shard_map writes it)", from_jaxlib=False)
            if _UNREDUCED.search(value) and (what == "result" or propagate):
                raise CompileError(
                    f"@main {what} {i} is annotated {value} in a partitioned program"
                    + (" whose results are left to the partitioner" if what == "argument"
                       else "") + ": jaxlib aborts the process partitioning it (Check failed: "
                    "IsTiledLeaf()); annotate it replicated, or with a tiled sharding whose "
                    "last_tile_dims={unreduced}", from_jaxlib=False)


# A collective XLA's partitioner added on 2-bit integers, in the optimized HLO's text
# (``%all-gather = u2[6,4]{1,0:E(2)} all-gather(...)``, or an async ``-start``).
_TWO_BIT_COLLECTIVE = re.compile(r"=\s*\(?[su]2\[[^\n=]*?\s(all-gather|all-to-all|"
                                 r"collective-permute)(?:-start)?\(")


def _device_count_refusals(module, num_replicas: int, num_partitions: int) -> None:
    """Collectives whose replica groups or permute pairs name another number of devices
    than the program is compiled for (``mhlo_ir.ops.collectives.device_count_problem``):
    XLA's HLO verifier refuses them with a RET_CHECK, or, for one device, runs them as if
    the absent devices were not named."""
    from mhlo_ir.ir import walk
    from mhlo_ir.ops.collectives import device_count_problem
    counts = f"num_replicas={num_replicas}, num_partitions={num_partitions}"
    for fn, op in walk(module):
        why = device_count_problem(op, num_replicas, num_partitions)
        if why is not None:
            raise CompileError(f"@{fn.name}: {why} ({counts}): compile with the counts the "
                               "program was written for, or give the groups for these",
                               from_jaxlib=False)


def _partitioned_refusals(exe) -> None:
    """What XLA:CPU gets wrong in a program its SPMD partitioner made (``exe`` compiled):
    a collective of 2-bit integers it inserted, which ``_cpu_refusals`` cannot see in the
    program (its results are garbage, or the heap is corrupted, as for a written one)."""
    m = _TWO_BIT_COLLECTIVE.search(exe.optimized_hlo())
    if m is not None:
        raise CompileError(f"XLA's partitioner moves a 2-bit integer value between devices "
                           f"(an {m.group(1)} of i2/ui2 in the optimized program), which "
                           "XLA:CPU gets wrong (garbage results, or a corrupted heap); convert "
                           "such values to i8 where their sharding changes, or keep them "
                           "replicated", from_jaxlib=False)


def _cpu_refusals(module, partitioned: bool = False) -> None:
    """What XLA:CPU cannot run, said in Python (measured on jaxlib 0.10.2): send, recv and
    collective_broadcast, host transfers included ("HLO opcode `send` is not supported by
    XLA:CPU ThunkEmitter"), an all_reduce or reduce_scatter whose body is not one add,
    multiply, minimum or maximum (and, or of i1; of bf16 the compile aborts), a TopK custom
    call of rank 1 or 2 not of XLA's shapes (f32 values and i32 indices of [batch, k <= n]:
    aborts, segfaults, garbage), a concatenate of 2-bit integers (aborts), a
    stochastic_convert to a float type,
    and the programs of ``mhlo_ir.xla_cpu`` (docs/findings.md): a domain or a clamp of i1
    inside a while or scan body,
    an all_to_all, collective_permute or all_gather of 2-bit integers (it corrupts the
    heap), an all_gather of an fft's result along a minor dimension (the run fails), an
    all_reduce or reduce_scatter of a complex value of constants alone (the compile aborts),
    and/or of a narrowing signed convert (it segfaults) or of two converts widening ui2/ui4
    (the compile fails), an abs of a complex iota (the compile aborts), an all_to_all,
    collective_permute or all_gather of sub-byte values with a channel (the heap), a
    SliceToDynamic custom call with a static result (the compile aborts), a TopK custom
    call of rank 3 or more (wrong results; empty with a side effect, it segfaults), a DEFAULT
    rng_bit_generator of a state other than 2 or 3 ui64 words (the compile fails, naming no
    op), a dot of a 4-bit operand and another element type (the compile fails), a
    select_and_scatter of a rank-0 operand (the compile aborts), an rng of integers narrower
    than 32 bits or floats narrower than 16 (the compile aborts), a scatter of a batch of
    updates into a rank-0 operand (the compile fails), an ordered compare of
    complex values in a sort comparator or scan body (the compile fails), an argument
    aliased to a result of another size in bytes (the compile fails), a bitcast to another
    type (the compile fails), a fusion of another kind than kLoop or with no results (kOutput
    of a dot and an add aborts), an async_start of anything but one all_reduce, all_gather or
    collective_permute (reduce_scatter aborts)."""
    from mhlo_ir import xla_cpu
    from mhlo_ir.ir import walk
    if (sizes := xla_cpu.aliased_size_mismatch(module)) is not None:
        i, k, a, r = sizes
        main = module.lookup("main")
        raise CompileError(f"@main: argument {i} ({main.arg_types[i]}, {a} bytes) is aliased "
                           f"(tf.aliasing_output) to result {k} ({main.result_types[k]}, {r} "
                           "bytes): XLA:CPU aliases buffers of one size only; alias a result "
                           "of the argument's size, or drop the attribute", from_jaxlib=False)
    if (dynamic := xla_cpu.dynamic_result(module)) is not None:
        i, t = dynamic
        raise CompileError(f"@main result {i} ({t}) is a value set_dimension_size gave a "
                           "runtime size: XLA returns an array of that size, not of the "
                           "result type (tensor<2x3xf32> of size 1 comes back 2x1), so it is "
                           "refused here; reduce over the dimension (reductions skip the "
                           "elements past the size) or slice it to a static size",
                           from_jaxlib=False)
    for fn, op in walk(module):
        name = op.spec.name
        if name in ("send", "recv"):
            host = " (a host transfer)" if _is_host_transfer(op) else ""
            why = (f"'{name}'{host} has no XLA:CPU implementation (XLA:GPU and XLA:TPU have "
                   "one); on CPU a program reaches the host through Builder.host_callback")
        elif name == "collective_broadcast":
            why = ("'collective_broadcast' has no XLA:CPU implementation (\"HLO opcode "
                   "collective-broadcast is not supported by XLA:CPU ThunkEmitter\"); on CPU "
                   "a collective_permute from the source to each other device does the same")
        elif xla_cpu.unsupported_collective_body(op):
            why = (f"'{name}' with a body other than one add, multiply, minimum or maximum "
                   "(and, or of i1) of its two arguments: XLA:CPU's collectives compute those "
                   "alone (\"Unsupported reduction computation\"; of bf16 values the compile "
                   "aborts the process); reduce with one of them, or all_gather the values "
                   "and reduce them with 'reduce'")
        elif (et := xla_cpu.two_bit_concatenate(op)) is not None:
            why = (f"'concatenate' of {et.name}: XLA:CPU aborts the process compiling it "
                   "(\"Check failed: bit_offset != nullptr\"); convert to i8 around it")
        elif (t := xla_cpu.float_stochastic_convert(op)) is not None:
            why = (f"'stochastic_convert' to {t}: XLA:CPU rounds floats stochastically to "
                   "integers only (\"Unsupported stochastic convert\"); use 'convert' (round "
                   "to nearest even) for float types")
        elif xla_cpu.domain_in_loop(op):
            why = ("'domain' inside a while loop (or scan): XLA:CPU cannot compile it "
                   "(\"Unhandled opcode for elemental IR emission: domain\"); a domain only "
                   "marks a sharding boundary for XLA's partitioner, so leave it out of loop "
                   "bodies")
        elif xla_cpu.boolean_clamp_in_loop(op):
            why = ("'clamp' of i1 values inside a while loop (or scan): XLA:CPU cannot "
                   "compile it (\"Clamp unimplemented for PRED\"); for booleans clamp(lo, x, "
                   "hi) is and(or(x, lo), hi): write that")
        elif xla_cpu.bitwise_crash(op):
            why = (f"'{name}' of a convert narrowing a signed integer: XLA:CPU segfaults "
                   "compiling it (jax.jit of `a.astype(jnp.int8) | c` does too), so it is "
                   "refused here; do the bitwise op in the wider type and convert after (the "
                   "low bits are the same)")
        elif xla_cpu.widening_sub_byte_bitwise(name, op.operands):
            et = next(v.type.element_type for v in op.operands)
            why = (f"'{name}' of two converts from a 2- or 4-bit unsigned type to {et.name}: "
                   "XLA:CPU's fusion compiler fails on it (\"Failed to translate module to "
                   "LLVM IR\"); do the bitwise op in the narrow type and convert its result")
        elif name in ("all_reduce", "reduce_scatter") and any(
                xla_cpu.complex_of_constants(v) for v in op.operands):
            why = (f"'{name}' of a complex tensor computed from constants alone: XLA:CPU "
                   "aborts the process compiling it when it folds the value to a splat "
                   "(\"Check failed: buffer != nullptr\" in shape.h; a splat constant, a "
                   "broadcast scalar or c / c), and which values it folds is its choice, so "
                   "every such operand is refused here; reduce a value that depends on an "
                   "argument, or compute the collective's result (the combiner applied "
                   "across the group) in numpy and use that constant instead")
        elif xla_cpu.complex_abs_of_iota(op):
            why = ("'abs' of a complex value computed from an iota: XLA's simplifier takes it "
                   "for abs of a non-negative value, rewrites it as the complex value itself, "
                   "and its compile aborts the process (\"Check failed: ShapeUtil::Compatible"
                   "\"); make the iota real and convert it to complex, or compute the abs "
                   "(the iota's real values) directly")
        elif (et := xla_cpu.two_bit_collective(op)) is not None:
            why = (f"'{name}' of {et.name}: XLA:CPU corrupts its heap running it (the "
                   "process dies later, in free()), so it is refused here; convert to i8 "
                   "around it")
        elif not partitioned and (et := xla_cpu.narrow_channel_collective(op)) is not None:
            # (in a program of partitions, one replica, XLA's SPMD pipeline widens them to 8
            # bits: jax's shard_map collectives of int4 run, 200 runs measured)
            why = (f"'{name}' of {et.name} with a channel_handle: XLA:CPU corrupts its heap "
                   "running it (the process dies later, in free(), or segfaults), so it is "
                   "refused here; leave the channel_handle out, or convert to an 8-bit type "
                   "around it")
        elif xla_cpu.empty_channel_gather(op):
            why = (f"'{name}' with a channel_handle of an empty operand "
                   f"({op.operands[0].type}) along a dimension other than 0: XLA:CPU's "
                   "compile dies of SIGFPE (a division by zero), so it is refused here; "
                   "leave the channel_handle out (the result is empty either way)")
        elif (t := xla_cpu.static_slice_to_dynamic(op)) is not None:
            why = ("'custom_call' to SliceToDynamic with a static result of rank "
                   f"{t.rank}: XLA:CPU aborts the process compiling it "
                   "(\"Check failed\" in loop_emitter.cc: the target makes a dynamic shape, "
                   "which XLA:CPU cannot run either: \"PadToStatic is not implemented\"); "
                   "slice the value with 'slice' or 'dynamic_slice' instead")
        elif (bad := householder_call_problem(op)) is not None:
            why = (f"'custom_call' to ProductOfElementaryHouseholderReflectors {bad}: XLA:CPU "
                   "segfaults compiling it, or in some runs fails a RET_CHECK of its QR "
                   "expander (measured with one f32[8,128] operand and result); "
                   "it takes (a [..., m, n], taus [..., k]) and gives a's type, as JAX's "
                   "householder_product calls it")
        elif (t := xla_cpu.topk_of_rank_over_two(op)) is not None:
            why = (f"'custom_call' to TopK of a rank-{t.rank} operand ({t}): XLA's TopK takes "
                   "[n] or [batch, n], and "
                   "XLA:CPU reads more dimensions as garbage (wrong values past the first "
                   "row) or, for an empty operand with has_side_effect, segfaults; reshape "
                   "the operand to [batch, n] and the results back, or use 'topk'")
        elif (why := xla_cpu.topk_call_problem(op)) is not None:
            why = (f"'custom_call' to TopK: {why}: XLA:CPU's TopK takes an f32 [n] or [batch, "
                   "n] operand and gives f32 values and i32 indices, both [k] or [batch, k] "
                   "with k <= n (otherwise its compile aborts, its run segfaults or returns "
                   "garbage); use 'topk' (or chlo.top_k) for other types")
        elif xla_cpu.aliasing_call(op, module):
            why = (f"'{name}' passes one value to two arguments that a fusion in the callee "
                   "takes: once XLA inlines the call the fusion takes that value twice, and "
                   "its compile aborts the process (\"Check failed: instruction_count() == "
                   "post_order.size()\"); pass distinct values, or give the fusion one "
                   "operand")
        elif (t := xla_cpu.default_rng_state(op)) is not None:
            why = (f"'rng_bit_generator' DEFAULT with initial_state {t}: XLA:CPU's default "
                   "algorithm is PHILOX, which takes tensor<2xui64> or tensor<3xui64> and "
                   "fails compiling any other state (XLA:TPU's takes 2 words of a 32- or "
                   "64-bit integer type); give it a ui64 state (bitcast_convert 4 x ui32 "
                   "reshaped to 2x2), or ask for PHILOX or THREE_FRY")
        elif xla_cpu.chained_rank_changing_bitcasts(op):
            why = ("a 'bitcast_convert' that changes the rank, of a value another one changed "
                   "the same way: XLA's simplifier merges the two into one bitcast with the "
                   "new dimensions folded together, which its verifier then rejects; bitcast "
                   "in one step to the final element type, or reshape in between")
        elif (ets := xla_cpu.widening_sub_byte_dot(op)) is not None:
            lhs, rhs, res = (et.name for et in ets)
            why = (f"'{name}' of {lhs} x {rhs} into {res}: XLA:CPU widens the 4-bit operand "
                   "keeping its 4-bit layout, which its verifier refuses (\"custom element "
                   "sizes on non-sub-byte types\"); convert the operands to the result's type "
                   "first (exact for integers), or keep operands and result one 4-bit type")
        elif xla_cpu.scalar_select_and_scatter(op):
            why = ("'select_and_scatter' of a rank-0 operand: XLA:CPU's expander of it "
                   "aborts the process compiling it (\"Check failed: param_instructions_"
                   "[param_no] == nullptr\"); with one element the window holds it alone, so "
                   "the result is scatter(init_value, source): compute that directly, or "
                   "reshape the operand and source to tensor<1x...> with a window of [1]")
        elif (et := xla_cpu.sub_byte_bitcast_of_constants(op)) is not None:
            why = (f"'bitcast_convert' of constants to {et.name}: XLA:CPU folds it wrongly "
                   "(it keeps each source element's low bits and zeros after them: ui8 "
                   "[0x21, 0x43] to ui4 gives [[1, 3], [0, 0]]); write the constant in "
                   f"{et.name} directly, or bitcast a value computed from an argument")
        elif xla_cpu.reinterpreting_bitcast(op):
            why = (f"'bitcast' of {op.operands[0].type} to {op.results[0].type}: XLA:CPU's "
                   "layout assignment rejects a bitcast to another type (\"Unexpected bitcast "
                   "operation seen during layout assignment\"): XLA makes such bitcasts "
                   "itself once it has chosen layouts; use 'bitcast_convert' for another "
                   "element type and 'reshape' for another shape")
        elif (kind := xla_cpu.fusion_kind_problem(op)) is not None:
            why = (f"'fusion' {kind}: XLA:CPU compiles fusions of kind kLoop with results "
                   "(kOutput: \"Dot fusion supports only `add` root instruction\", and with "
                   "that root the compile aborts the process; kInput: \"Unsupported fusion "
                   "kind\"; kCustom needs a backend config; a fusion without results fails "
                   "its verifier); make it kLoop, or inline its body")
        elif xla_cpu.looped_copying_fusion(op, module):
            what = "" if name == "fusion" else ", of a function holding a fusion"
            why = (f"'{name}' in a while loop{what}, whose body copies a value it "
                   "computes: XLA:CPU's compile aborts the "
                   "process on it (\"Check failed: has_layout()\", shape.h); drop the copy (a "
                   "fusion's values need none), or move the fusion out of the loop")
        elif (problem := xla_cpu.async_computation_problem(op, module)) is not None:
            why = (f"'async_start' of a function XLA cannot run asynchronously: {problem}; "
                   "XLA takes an async_start/async_done pair around one all_reduce, "
                   "all_gather or collective_permute of the function's arguments (its async "
                   "collectives: reduce_scatter aborts the process, all_to_all and other ops "
                   "fail its verifier); call the function with func.call instead")
        elif (et := xla_cpu.narrow_rng(op)) is not None:
            why = (f"'rng' of {et.name}: XLA:CPU aborts the process compiling an rng of an "
                   "integer type narrower than 32 bits or a float type narrower than 16 "
                   "(\"Check failed: primitive_type == F16 || primitive_type == BF16\"); "
                   "draw i32 (or f32) and convert the result")
        elif xla_cpu.scalar_scatter(op):
            why = (f"'scatter' of a batch of updates ({op.operands[-1].type}) into a rank-0 "
                   "operand: XLA:CPU's compile fails after its scatter simplifier (\"Expected "
                   "instruction to have shape equal to ...\"); every update lands on the one "
                   "element, so reduce the updates with the update computation and combine "
                   "that with the operand, or reshape the operand to tensor<1x...>")
        elif (holder := xla_cpu.ordered_complex_compare_holder(op)) is not None:
            d = op.attributes["comparison_direction"].value
            why = (f"'compare' {d} of complex values in a '{holder}' "
                   f"{'comparator' if holder == 'sort' else 'body'}: XLA:CPU cannot compile it "
                   f"(\"UNIMPLEMENTED: complex comparison '{d}'\"; EQ and NE it can); order "
                   "by the parts instead, e.g. compare the real parts, and the imaginary parts "
                   "where those are equal")
        elif xla_cpu.fft_into_all_gather(op):
            why = (f"'{name}' along a dimension other than 0 of a value computed by an "
                   "fft: XLA:CPU gives the fft a result layout its runtime then refuses "
                   "(\"IsMonotonicWithDim0Major\" in fft_thunk.cc); gather or scatter along "
                   "dimension 0 and transpose, or apply it to the fft's input")
        else:
            continue
        raise CompileError(f"@{fn.name}: {why}", from_jaxlib=False)


def _tpu_refusals(module) -> None:
    """What a TPU compile refuses in Python, before libtpu sees it:

    - ops jaxlib's conversion to StableHLO cannot convert: the TPU's PJRT plugin takes
      StableHLO, so they fail at that boundary ("failed to legalize operation");
    - programs on which XLA:TPU aborts the whole process instead of reporting an error
      (``_tpu_abort``: the op cases that aborted with libtpu 0.0.42, refused a little more
      widely than measured, since a wrong guess here costs a process).
    Text is handed on as it is (jaxlib's and XLA's errors then say what is wrong)."""
    if isinstance(module, (str, bytes)):
        return
    from mhlo_ir.dialect import STABLEHLO
    from mhlo_ir.errors import IRError
    from mhlo_ir.ir import walk
    from mhlo_ir.jaxlib_conversion import stablehlo_import_problem
    from mhlo_ir.ops.spec import NO_CONVERSION, _no_form
    for fn, op in walk(module):
        spec = op.spec
        try:
            if spec.name in NO_CONVERSION and spec.namespace == "hlo" and not (
                    spec.name == "bitcast" and op.operands[0].type == op.results[0].type):
                raise IRError(_no_form(spec, "stablehlo"))
            if (why := stablehlo_import_problem(op)) is not None:
                raise IRError(why)
            if spec.dialect_check is not None:
                spec.dialect_check(op, STABLEHLO)
        except IRError as e:
            raise CompileError(f"XLA:TPU takes StableHLO (through its PJRT plugin), and {e}",
                               from_jaxlib=False) from None
        why = _tpu_abort(op)
        if why is not None:
            raise CompileError(f"@{fn.name}: '{spec.name}' {why}: XLA:TPU aborts the process "
                               "on it (libtpu 0.0.42) rather than reporting an error, so it "
                               "is refused here", from_jaxlib=False)


def _element(t):
    return getattr(t, "element_type", None)


# Ops of complex128 values XLA:TPU's 64-bit emulation aborts on (libtpu 0.0.42, v5e; "Check
# failed: operand->shape().IsTuple()" for the elementwise ones), each measured in a compile
# of its own; measured to compile: add, subtract, multiply, negate, exponential, log,
# log_plus_one, sqrt, real, compare, dot, reduce, sort, chlo's cosh, sinh, asin, acos, atan,
# asinh, acosh, atanh, square, conj.
_TPU_C128_ABORTS = frozenset({
    "iota", "cholesky", "scatter", "triangular_solve", "abs", "divide", "power", "atan2",
    "tanh", "sine", "cosine", "tan", "exponential_minus_one", "rsqrt", "logistic",
    "chlo.tan"})


def _tpu_abort(op) -> str | None:
    """Why XLA:TPU would abort on ``op``, or None."""
    from mhlo_ir import complex128 as c128
    name = op.spec.name
    if name == "convert":
        src, dst = _element(op.operands[0].type), _element(op.results[0].type)
        if (dst is c128) != (src is c128) and (dst is c128 or dst.is_complex):
            return (f"converts {src.name} to {dst.name} (its 64-bit emulation has no such "
                    "conversion: \"Unsupported CVT X{64|128} expansion\")")
        return None
    if name in _TPU_C128_ABORTS and any(
            _element(v.type) is c128 for v in (*op.operands, *op.results)):
        return (f"of complex128 (its 64-bit emulation failed a check on the complex128 "
                f"{name} measured)")
    if name in ("recv", "send") and not _is_host_transfer(op):
        return (f"between devices (a device-to-device {name} fails its host-transfer "
                "check)")
    two_bit = next((t for t in (*(v.type for v in op.operands),
                                *(r.type for r in op.results))
                    if getattr(_element(t), "name", None) in ("i2", "ui2")), None)
    if two_bit is not None and not _two_bit_kept(op):
        return (f"of {two_bit} (XLA:TPU computes on 2-bit integers in convolutions alone; at "
                "other shapes it aborts, \"Check failed: params.span_buffer != nullptr\", "
                "segfaults or refuses: compute in i8)")
    from mhlo_ir import xla_cpu
    target = xla_cpu.custom_call_target(op)
    if target in _TPU_INTERNAL_TARGETS:
        return (f"calls XLA's internal target {target} (libtpu aborts on a call not of the "
                "shapes its own passes make)")
    if (bad := householder_call_problem(op)) is not None:
        return f"calls ProductOfElementaryHouseholderReflectors {bad}"
    if target is not None:
        if (t := xla_cpu.static_slice_to_dynamic(op)) is not None:
            return f"calls SliceToDynamic with the static result {t}"
        if (why := xla_cpu.topk_call_problem(op) or (
                xla_cpu.topk_of_rank_over_two(op) and "its operand's rank is over two")):
            return f"calls TopK wrongly: {why}"
    return None


# XLA-internal custom call targets libtpu aborts on when called by hand (measured with an
# f32[8,128] operand and result, libtpu 0.0.42); nothing here writes them.
_TPU_INTERNAL_TARGETS = frozenset({"X64Combine", "PartialReduce"})


def householder_call_problem(op) -> str | None:
    """What is wrong with a ``custom_call`` to ProductOfElementaryHouseholderReflectors (XLA's
    expander target, which JAX's TPU lowering of householder_product calls and our
    decompositions write), or None: XLA:CPU segfaults and libtpu aborts on a call not of
    its form, (a of [..., m, n], taus of [..., k], k <= min(m, n)) -> a's type."""
    from mhlo_ir import xla_cpu
    if xla_cpu.custom_call_target(op) != "ProductOfElementaryHouseholderReflectors":
        return None
    if len(op.operands) != 2 or len(op.results) != 1:
        return f"of {len(op.operands)} operands and {len(op.results)} results, not 2 and 1"
    a, taus = (v.type for v in op.operands)
    shape_a, shape_t = getattr(a, "shape", None), getattr(taus, "shape", None)
    if shape_a is None or shape_t is None or len(shape_a) < 2 or \
            tuple(shape_t[:-1]) != tuple(shape_a[:-2]) or len(shape_t) != len(shape_a) - 1 \
            or shape_t[-1] > min(shape_a[-2:]) or op.results[0].type != a:
        return f"of {a} and {taus} giving {op.results[0].type}"
    return None


def _two_bit_kept(op) -> bool:
    """Ops of 2-bit values XLA:TPU compiled in the review's sweep: constants, reshapes,
    converts between 2-bit and 8- to 32-bit types."""
    name = op.spec.name
    if name in ("constant", "reshape", "func.return", "return"):
        return True
    if name == "convert":
        other = [_element(t) for t in (op.operands[0].type, op.results[0].type)]
        return all(e.name in ("i2", "ui2") or (e.bits <= 32 and not e.is_complex)
                   for e in other)
    return False


def _is_host_transfer(op) -> bool:
    a = op.attributes.get("is_host_transfer") if op.attributes else None
    return bool(getattr(a, "value", False))


# Ops an ill-formed instance of which kills jaxlib 0.10.2's process instead of being reported
# (all_to_all without replica groups: SIGFPE; its one-operand tuple form: SIGSEGV; chlo's
# broadcasting ops with a negative broadcast dimension, dynamic_iota and dynamic_pad of a
# result whose rank their operands contradict: SIGSEGV; cross-replica-sum with flat replica
# groups: an LLVM error): text holding one is checked by our rules for it first (a fuzz of
# ~38,000 mutants found them). An einsum whose subscripts do not fit its operands' ranks
# aborts too: ``_einsum_rank_problem`` (our einsum rule takes no ellipsis or broadcast of
# size-1 dimensions, which XLA's does: the rule as a whole is not asked of text).
_CRASHING_OPS = frozenset({"all_to_all", "dynamic_iota", "dynamic_pad",
                           "cross-replica-sum"})
_CRASHING_PREFIXES = ("chlo.broadcast_",)


def _einsum_rank_problem(op) -> str | None:
    """An einsum without an ellipsis whose subscripts are not as many as its operands'
    dimensions (XLA aborts the process on it)."""
    config = getattr((op.attributes or {}).get("einsum_config"), "value", None)
    if not isinstance(config, str) or "..." in config or "->" not in config:
        return None
    inputs = config.split("->")[0].split(",")
    for i, (subs, v) in enumerate(zip(inputs, op.operands)):
        rank = getattr(v.type, "rank", None)
        subs = subs.strip()
        if rank is not None and len(subs) != rank:
            return (f"'einsum' einsum_config {config!r} gives {len(subs)} subscripts for "
                    f"operand {i} of rank {rank} ({v.type})")
    return None


def _python_problem(text: str, module) -> str | None:
    """What jaxlib 0.10.2 would crash the process on instead of reporting, in text: a call
    cycle, a reference to a function the text does not define (callee, called_computations,
    decomposition), an ill-formed op of ``_CRASHING_OPS``, a module attribute its conversion
    reads unchecked, a custom_call to one of XLA's annotations of one value with other
    operands or results. The text is read with mhlo_ir's
    parser (ops as written) and checked for just those; everything else is jaxlib's to judge,
    with its own diagnostics. Text the parser cannot read yet (a custom form it does not
    know) gets a textual scan for dangling function references instead."""
    from mhlo_ir.errors import OpBuildError
    from mhlo_ir.ir import walk
    from mhlo_ir.ops.custom_call import annotation_problem
    from mhlo_ir.signature_attrs import module_attribute_problem
    from mhlo_ir.verifier import call_problem
    if module is not None:
        problem = call_problem(module)
        if problem is not None:
            return f"{problem} (jaxlib crashes on this instead of reporting it)"
        for name, attr in (module.attributes or {}).items():
            problem = module_attribute_problem(name, attr, module)
            if problem is not None:
                return problem
        for fn, op in walk(module):
            spec = op.spec
            if spec.name == "custom_call":
                target = getattr((op.attributes or {}).get("call_target_name"), "value", None)
                problem = annotation_problem(target, [v.type for v in op.operands],
                                             [r.type for r in op.results])
                if problem is not None:
                    return f"in @{fn.name}: 'custom_call' {problem}"
                continue
            if spec.name == "einsum":
                problem = _einsum_rank_problem(op)
                if problem is not None:
                    return f"in @{fn.name}: {problem} (jaxlib crashes on this instead of " \
                           "reporting it)"
                continue
            if spec.name not in _CRASHING_OPS and not spec.name.startswith(_CRASHING_PREFIXES):
                continue
            try:
                spec.validate(tuple(v.type for v in op.operands), op.attributes,
                              tuple(r.type for r in op.results), op.regions)
            except OpBuildError as e:
                return f"in @{fn.name}: {e} (jaxlib crashes on this instead of reporting it)"
            except Exception:  # noqa: BLE001, S112 - attributes as written that its rules
                continue  # cannot read: jaxlib judges them
        return None
    if "called_computations" not in text and "callee" not in text and \
            "decomposition" not in text:
        return None
    defined = {a or b or c for a, b, c in _DEFINED.findall(text)}
    for refs in _REF_LIST.findall(text):
        for quoted, bare in _SYMBOL.findall(refs):
            name = quoted or bare
            if name not in defined:
                return (f"the text refers to @{name}, which it does not define (jaxlib "
                        "crashes on such a reference instead of reporting it)")
    return None


_REF_LIST = re.compile(r"\b(?:called_computations|callee|decomposition)\s*=\s*(\[[^\]]*\]|@\S+)")
_SYMBOL = re.compile(r'@(?:"((?:[^"\\]|\\.)*)"|([\w$.\-]+))')
_DEFINED = re.compile(r'sym_name = "((?:[^"\\]|\\.)*)"|func\.func\s+(?:\w+\s+)?@(?:"((?:[^"\\]|'
                      r'\\.)*)"|([\w$.\-]+))')
