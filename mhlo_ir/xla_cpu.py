"""Valid programs XLA:CPU (jaxlib 0.10.2) fails on, as predicates over ops: ``verify``
refuses them before XLA sees them, and ``mhlo_ir.strategies`` does not generate them. Each is
a finding of docs/findings.md, measured in a subprocess (most take the process down).

Kept here, in the core package, because both of those use them and neither may import the
other (verify needs no hypothesis; mhlo_ir never imports verify).
"""

from __future__ import annotations

from .ir import BlockArgument, defining_ops, producers, walk

__all__ = ["custom_call_target", "holders", "narrowing_signed_convert", "bitwise_crashes",
           "bitwise_crash",
           "widening_sub_byte_bitwise",
           "complex_of_constants", "two_bit_collective", "TWO_BIT_COLLECTIVES",
           "narrow_channel_collective", "empty_channel_gather", "static_slice_to_dynamic",
           "topk_of_rank_over_two", "topk_call_problem", "unsupported_collective_body",
           "collective_ops",
           "two_bit_concatenate", "float_stochastic_convert",
           "fft_into_all_gather", "fusion_of_aliased_arguments", "aliasing_call",
           "chained_rank_changing_bitcasts", "complex_abs_of_iota", "complex_iota",
           "in_loop", "inlined_callee", "domain_in_loop", "boolean_clamp_in_loop",
           "default_rng_state",
           "scalar_select_and_scatter", "ordered_complex_compare_holder", "narrow_rng",
           "scalar_scatter", "dynamic_result",
           "aliased_size_mismatch", "widening_sub_byte_dot", "reinterpreting_bitcast",
           "fusion_kind_problem", "looped_copying_fusion", "async_computation_problem",
           "sub_byte_bitcast_of_constants"]


_BITWISE = frozenset({"and", "or", "chlo.broadcast_and", "chlo.broadcast_or"})
_SHAPE_ONLY = ("broadcast_in_dim", "reshape")


def _name(op):
    return getattr(getattr(op, "spec", None), "name", None)


def _convert_under(value):
    """``(value, its convert op)`` where ``value``, seen through reshapes and broadcasts
    (which XLA fuses with what they move), is made by a ``convert``; else ``(value, None)``."""
    op = getattr(value, "owner", None)
    while _name(op) in _SHAPE_ONLY:
        value = op.operands[0]
        op = getattr(value, "owner", None)
    return value, (op if _name(op) == "convert" else None)


def narrowing_signed_convert(value) -> bool:
    """Whether ``value`` is a ``convert`` from a signed integer type to a narrower one (i32
    to i8, i64 to i32...), seen through reshapes and broadcasts (which XLA fuses with it)."""
    value, op = _convert_under(value)
    if op is None:
        return False
    src, dst = op.operands[0].type.element_type, value.type.element_type
    return src.kind == "sint" and dst.kind == "sint" and src.bits > dst.bits


def bitwise_crashes(name: str, operands) -> bool:
    """Whether op ``name`` (``and``/``or``, or chlo's broadcasting forms) of ``operands`` is
    what XLA:CPU segfaults compiling: more than one element, an operand a narrowing signed
    convert (``jax.jit(lambda a, c: a.astype(jnp.int8) | c)`` on int32 ``a`` segfaults
    too)."""
    return name in _BITWISE and any(v.type.num_elements > 1 for v in operands) and any(
        narrowing_signed_convert(v) for v in operands)


def bitwise_crash(op) -> bool:
    """``bitwise_crashes`` of a built op."""
    return bitwise_crashes(op.spec.name, op.operands)


def _widened_sub_byte_unsigned(value):
    """The source of ``value`` if it is a ``convert`` (seen through broadcasts and reshapes)
    from ui2/ui4 to a type wider than 8 bits, else None."""
    value, op = _convert_under(value)
    if op is None:
        return None
    src = op.operands[0]
    st, dt = src.type.element_type, value.type.element_type
    return src if st.kind == "uint" and st.bits < 8 and dt.bits > 8 else None


def widening_sub_byte_bitwise(name: str, operands) -> bool:
    """Whether op ``name`` (``and``/``or``, or chlo's broadcasting forms) of ``operands`` is
    what XLA:CPU's fusion compiler fails on ("Failed to translate module to LLVM IR": it
    emits ``trunc i8 to i16``): both operands converts of one unsigned sub-byte type (ui2,
    ui4) to a type wider than 8 bits, not both of arguments (ui4 to ui8, i4, and xor
    compile)."""
    if name not in _BITWISE or len(operands) != 2:
        return False
    srcs = [_widened_sub_byte_unsigned(v) for v in operands]
    if any(s is None for s in srcs) or srcs[0].type.element_type is not \
            srcs[1].type.element_type:
        return False
    return any(s.__class__ is not BlockArgument for s in srcs)


# Ops XLA's algebraic simplifier looks through when it judges a value non-negative (an iota,
# and data movement of one); a select is non-negative where both its choices are.
_KEEPS_SIGN = frozenset({"broadcast_in_dim", "reshape", "transpose", "slice", "reverse",
                         "copy", "select"})


def _from_iota(value, depth: int = 0) -> bool:
    op = getattr(value, "owner", None)
    name = _name(op)
    if name == "iota":
        return True
    if name not in _KEEPS_SIGN or depth > 16:
        return False
    if name == "select":
        return all(_from_iota(v, depth + 1) for v in op.operands[1:])
    return _from_iota(op.operands[0], depth + 1)


def complex_abs_of_iota(op) -> bool:
    """An ``abs`` of a complex value computed from an ``iota`` by data movement: XLA's
    algebraic simplifier rewrites ``abs(x)`` as ``x`` for an ``x`` it knows non-negative,
    which for complex ``x`` leaves a complex value where the f32 result was ("Check failed:
    ShapeUtil::Compatible(abs (f32[2,3]) vs iota (c64[2,3]))"): the compile aborts the
    process. Measured aborting: the iota itself, a broadcast, a transpose, a select of two;
    measured compiling: a sum or product of iotas, a convert of a real iota."""
    return op.spec.name == "abs" and len(op.operands) == 1 and complex_iota(op.operands[0])


def complex_iota(value) -> bool:
    """Whether ``value`` is complex and computed from an ``iota`` by data movement (what
    ``complex_abs_of_iota`` refuses an abs of)."""
    et = getattr(value.type, "element_type", None)
    return et is not None and et.is_complex and _from_iota(value)


def complex_of_constants(value) -> bool:
    """Whether ``value`` is a complex tensor of more than one element computed from
    constants alone: an ``all_reduce`` or ``reduce_scatter`` of it aborts XLA:CPU's compile
    ("Check failed: buffer != nullptr", shape.h) when XLA folds it to a splat (every element
    equal: a splat constant, a broadcast scalar, ``c / c``...). Which values XLA folds, and
    to what, is its choice (non-splat constants and iotas compile), so every such value is
    taken as one that may crash; one element, real types, and values that depend on an
    argument compile. Values of no elements count as constants (seed 813005284: a complex
    dot_general contracting an empty dimension of an argument is zeros, folded to a splat)."""
    t = value.type
    et = getattr(t, "element_type", None)
    return (et is not None and et.is_complex and t.num_elements > 1
            and defining_ops(value, empty_is_constant=True) is not None)


# The collectives that move 2-bit integers by memory copies XLA:CPU gets wrong: each run of
# one corrupts the heap (the process dies later, in free()); measured 300 runs each in a
# subprocess, 4- and 8-bit integers survive.
TWO_BIT_COLLECTIVES = ("all_to_all", "collective_permute", "all_gather")


def two_bit_collective(op):
    """An ``all_to_all``, ``collective_permute`` or ``all_gather`` of i2 or ui2: the first
    such operand's element type, or None."""
    if op.spec.name not in TWO_BIT_COLLECTIVES:
        return None
    return _first_element_type(op, _two_bit_integer)


def narrow_channel_collective(op):
    """An ``all_to_all``, ``collective_permute`` or ``all_gather`` of elements narrower than
    a byte (i2, ui2, i4, ui4, f4E2M1FN; not i1) with a ``channel_handle``: XLA:CPU then runs
    the collective (on one device too) and corrupts its heap ("free(): invalid next size",
    "unaligned tcache chunk detected", a segfault) within 300 runs of a 3x3x4 tensor, on
    one replica or two, for every channel type. Without a channel, 4-bit values survive
    (2-bit ones do not: ``two_bit_collective``); 8-bit integers and floats survive.
    The first such operand's element type, or None."""
    if op.spec.name not in TWO_BIT_COLLECTIVES or not op.attributes or \
            op.attributes.get("channel_handle") is None:
        return None
    return _first_element_type(op, lambda et: et.is_sub_byte)


def _two_bit_integer(et) -> bool:
    return et.bits == 2 and et.is_integer


def _first_element_type(op, test):
    """The element type of ``op``'s first tensor operand whose type passes ``test``, or
    None."""
    for v in op.operands:
        et = getattr(v.type, "element_type", None)
        if et is not None and test(et):
            return et
    return None


def custom_call_target(op):
    """The ``call_target_name`` of a ``custom_call``, or None for any other op."""
    if op.spec.name != "custom_call" or not op.attributes:
        return None
    return getattr(op.attributes.get("call_target_name"), "value", None)


def static_slice_to_dynamic(op):
    """A ``custom_call`` to ``SliceToDynamic`` with a result of rank 1 or more, which
    mhlo_ir's types make static: XLA:CPU's compile aborts the process ("Check failed:
    dynamic_dims.size() == shape_.dimensions().size()" without size operands, "Check
    failed: shape_.is_dynamic()" with them; loop_emitter.cc). Rank 0 compiles; the well-
    formed call (data and one i32 size per dimension, a bounded dynamic result, which only
    text can write) fails cleanly ("Custom call target PadToStatic is not implemented").
    The first such result's type, or None."""
    if custom_call_target(op) != "SliceToDynamic":
        return None
    return next((r.type for r in op.results if getattr(r.type, "rank", 0) >= 1), None)


def topk_of_rank_over_two(op):
    """A ``custom_call`` to ``TopK`` of an operand of rank 3 or more: XLA's TopK takes
    ``[n]`` or ``[batch, n]`` (what its TopkRewriter makes), and XLA:CPU reads a higher
    rank as if only its first dimension were the batch: the other rows come back garbage
    (2x1x2, 1x3x4, 2x3x4, 2x2x2x3 measured wrong, with and without a side effect; 1x1x2
    right), and with ``has_side_effect`` an operand with a zero batch dimension (0x1x2,
    1x0x2, 0x2x2) segfaults the run. Ranks 1 and 2 run right, empty ones too. The first
    such operand's type, or None."""
    if custom_call_target(op) != "TopK":
        return None
    return next((v.type for v in op.operands if getattr(v.type, "rank", 0) >= 3), None)


def topk_call_problem(op) -> str | None:
    """What is wrong, for XLA:CPU, with a ``custom_call`` to ``TopK`` of rank 1 or 2, or
    None: it takes an f32 operand ``[n]`` or ``[batch, n]`` and gives a tuple of values
    (f32) and indices (32-bit integers) both ``[k]`` or ``[batch, k]``, k <= n (measured on
    jaxlib 0.10.2: one result aborts the compile, k > n segfaults the run, another batch or
    i64 indices run and give garbage, another operand type fails compiling)."""
    if custom_call_target(op) != "TopK" or not op.operands:
        return None
    t = op.operands[0].type
    if getattr(t, "rank", 0) not in (1, 2):
        return None  # (rank 0 is the op's checks'; rank 3 and more: topk_of_rank_over_two)
    if len(op.operands) != 1:
        return f"it takes one operand, not {len(op.operands)}"
    if t.element_type.name != "f32":
        return f"its operand is {t}, not of f32"
    results = [r.type for r in op.results]
    if len(results) != 2:
        return (f"it gives {len(results)} result{'s' if len(results) != 1 else ''}, not two "
                "(values and indices)")
    values, indices = results
    if getattr(values, "element_type", None) is not t.element_type or \
            getattr(indices, "element_type", None) is None or \
            indices.element_type.name not in ("i32", "ui32"):
        return f"its results are {values} and {indices}, not f32 values and i32 indices"
    if values.shape != indices.shape or len(values.shape) != t.rank or \
            values.shape[:-1] != t.shape[:-1] or values.shape[-1] > t.shape[-1]:
        want = ", ".join([*map(str, t.shape[:-1]), "k"])
        return (f"its results {values} and {indices} are not both [{want}] for a k of at "
                f"most {t.shape[-1]}")
    return None


# The bodies XLA:CPU's all-reduce runs (XLA's MatchReductionComputation): one of these ops of
# the body's two arguments, in either order; and, or of i1 too (measured: i1 add and
# maximum run as well).
_REDUCTION_OPS = frozenset({"add", "multiply", "minimum", "maximum"})
_BOOLEAN_REDUCTION_OPS = _REDUCTION_OPS | {"and", "or"}


def collective_ops(et) -> frozenset:
    """The ops XLA:CPU's all_reduce and reduce_scatter compute as a body on elements of
    ``et`` (the generator's collective combiners are among them)."""
    return _BOOLEAN_REDUCTION_OPS if et.kind == "bool" else _REDUCTION_OPS


def unsupported_collective_body(op) -> bool:
    """An ``all_reduce`` or ``reduce_scatter`` whose body is not one add, multiply, minimum
    or maximum (and, or of i1) of its two arguments, returned: XLA:CPU fails compiling it
    ("Unsupported reduction computation"), and for bf16 values aborts the process (its
    AllReducePromotion widens the body op by op: "Invalid binary instruction opcode")."""
    if op.spec.name not in ("all_reduce", "reduce_scatter") or len(op.regions) != 1:
        return False
    blocks = op.regions[0].blocks
    if len(blocks) != 1 or len(blocks[0].operations) != 2 or len(blocks[0].arguments) != 2:
        return True
    (inner, ret), (x, y) = blocks[0].operations, blocks[0].arguments
    if inner.spec.name not in collective_ops(x.type.element_type):
        return True
    operands = inner.operands
    return len(operands) != 2 or not (operands[0] is x and operands[1] is y or
                                      operands[0] is y and operands[1] is x) or \
        len(inner.results) != 1 or tuple(ret.operands) != tuple(inner.results)


def two_bit_concatenate(op):
    """A ``concatenate`` of i2 or ui2 values, whose compile XLA:CPU aborts ("Check failed:
    bit_offset != nullptr" in ir_array.cc; 4-bit and i1 values compile): the element type,
    or None."""
    if op.spec.name != "concatenate":
        return None
    return _first_element_type(op, _two_bit_integer)


def float_stochastic_convert(op):
    """A ``stochastic_convert`` to a float type, which XLA:CPU does not compile
    ("Unsupported stochastic convert: from F32 to BF16"; to integers it does): the result
    type, or None."""
    if op.spec.name != "stochastic_convert":
        return None
    t = op.results[0].type
    return t if t.element_type.is_float else None


_GATHERING = {"all_gather": "all_gather_dim", "reduce_scatter": "scatter_dimension"}


def fft_into_all_gather(op) -> bool:
    """An ``all_gather`` (or ``reduce_scatter``) along a dimension other than 0 of a value
    computed through an ``fft``: XLA:CPU's layout assignment then gives the FFT a result
    layout its runtime refuses ("RET_CHECK failure (fft_thunk.cc) LayoutUtil::
    IsMonotonicWithDim0Major"), when the program runs."""
    key = _GATHERING.get(op.spec.name)
    if key is None:
        return False
    dim = op.attributes.get(key) if op.attributes else None
    if dim is None or dim.value == 0:
        return False
    return any(p.spec.name == "fft" for v in op.operands for p in producers(v))


def empty_channel_gather(op) -> bool:
    """An ``all_gather`` or ``reduce_scatter`` with a ``channel_handle`` of an operand with
    no elements, along a dimension other than 0: XLA:CPU's compile dies of SIGFPE (an
    integer division by zero; measured with every channel type, with and without
    ``use_global_device_ids``, for 0x3 along 1, 2x3x0 along 1, 2x0x3 along 2, i1, i8, i32
    and f32). Along dimension 0, without a channel, and all_reduce, all_to_all and
    collective_permute of the same operands compile and run."""
    attr = _GATHERING.get(op.spec.name)
    if attr is None or not op.attributes or op.attributes.get("channel_handle") is None:
        return False
    dim = getattr(op.attributes.get(attr), "value", 0)
    return bool(dim) and any(getattr(v.type, "num_elements", 1) == 0 for v in op.operands)


def fusion_of_aliased_arguments(callee, args) -> bool:
    """Whether calling function ``callee`` with ``args`` (a ``func.call`` or a composite's
    decomposition) hands one value to two operands of a ``fusion`` over its arguments: once
    XLA inlines the call, the fusion takes that value twice, and its compile aborts
    ("Check failed: instruction_count() == post_order.size()"), as it does for a fusion
    built that way (which the builder refuses). Measured with a computed value passed
    twice; an argument of ``main`` passed twice survives, but counts here too (the value
    may reach the call through other calls' arguments)."""
    from .ir import walk
    params = {id(a): i for i, a in enumerate(callee.arguments)}
    for _, op in walk(callee):
        if op.spec.name != "fusion":
            continue
        seen = set()
        for v in op.operands:
            i = params.get(id(v))
            if i is None or i >= len(args):
                continue
            if id(args[i]) in seen:
                return True
            seen.add(id(args[i]))
    return False


def inlined_callee(op, module):
    """The function of ``module`` a ``func.call`` calls, or a ``composite`` decomposes into
    (XLA inlines both), else None."""
    key = {"func.call": "callee", "composite": "decomposition"}.get(op.spec.name)
    ref = (op.attributes or {}).get(key) if key is not None else None
    return module.lookup(ref.name) if ref is not None and hasattr(module, "lookup") else None


def aliasing_call(op, module) -> bool:
    """``fusion_of_aliased_arguments`` of a built ``func.call`` or ``composite``."""
    callee = inlined_callee(op, module)
    return callee is not None and fusion_of_aliased_arguments(callee, list(op.operands))


def _rank_change(op) -> int:
    return op.results[0].type.rank - op.operands[0].type.rank


def chained_rank_changing_bitcasts(op) -> bool:
    """A ``bitcast_convert`` that adds (or drops) a dimension, of a value that another one
    added (or dropped) the same way, maybe through bitcasts of equal width: XLA's
    simplifier folds the pair into one bitcast with the two dimensions merged, which its
    verifier then rejects ("Expected instruction to have shape equal to u8[3,8], actual
    shape is u8[3,2,4]"; the widening pair: "Last dimension of input shape=4 is not equal
    to ratio of bit-widths=8"). Narrowing then widening compiles."""
    if op.spec.name != "bitcast_convert":
        return False
    delta = _rank_change(op)
    if delta == 0:
        return False
    v = op.operands[0]
    while True:
        producer = getattr(v, "owner", None)
        if getattr(getattr(producer, "spec", None), "name", None) != "bitcast_convert":
            return False
        d = _rank_change(producer)
        if d:
            return d == delta
        v = producer.operands[0]


def holders(op):
    """The names of the ops whose regions hold ``op``, innermost first."""
    node = op.parent  # block -> region -> op holding it, up to the function's body
    while node is not None:
        holder = getattr(node, "parent", None)
        name = _name(holder)
        if name is not None:
            yield name
        node = holder


def in_loop(op) -> bool:
    """Whether ``op`` is inside a ``while`` or ``scan`` body, however deep (XLA emits loop
    bodies with its elemental IR emitter, which lacks some ops the fusion emitters have)."""
    return any(h in ("while", "scan") for h in holders(op))


def ordered_complex_compare_holder(op):
    """A ``compare`` of complex values by LT, LE, GT or GE inside a ``sort`` comparator or a
    ``scan`` body, however deep: XLA:CPU emits those regions with its elemental IR emitter,
    which orders no complex values ("UNIMPLEMENTED: complex comparison 'LT'"). EQ and NE
    there, and the ordered compares in the entry function and in map, reduce, reduce_window,
    select_and_scatter, scatter, while, if and case regions compile. The holder's name
    (``"sort"``, ``"scan"``), or None."""
    if op.spec.name != "compare" or not op.operands[0].type.element_type.is_complex:
        return None
    direction = op.attributes.get("comparison_direction") if op.attributes else None
    if getattr(direction, "value", None) not in ("LT", "LE", "GT", "GE"):
        return None
    return next((h for h in holders(op) if h in ("sort", "scan")), None)


def domain_in_loop(op) -> bool:
    """A ``domain`` inside a while or scan body (XLA:CPU: "Unhandled opcode for elemental IR
    emission: domain"; in the entry function and in if branches it compiles)."""
    return op.spec.name == "domain" and in_loop(op)


def default_rng_state(op):
    """A ``rng_bit_generator`` with the DEFAULT algorithm of a state other than
    ``tensor<2xui64>`` or ``tensor<3xui64>``: XLA:CPU expands DEFAULT as PHILOX, over
    unsigned 64-bit words, and fails compiling any other state ("Binary op shift-right-logical
    with different element types: s32[] and u64[]"), though XLA:TPU takes 2 words of 32- or
    64-bit integers (which the builder therefore allows). The state's type, or None."""
    if op.spec.name != "rng_bit_generator" or \
            getattr(op.attributes.get("rng_algorithm"), "value", None) != "DEFAULT":
        return None
    t = op.operands[0].type
    ok = getattr(t, "shape", None) in ((2,), (3,)) and t.element_type.name == "ui64"
    return None if ok else t


def boolean_clamp_in_loop(op) -> bool:
    """A ``clamp`` of i1 values inside a while or scan body (XLA:CPU: "Clamp unimplemented
    for PRED"; in the entry function, branches and reduction or map bodies it compiles)."""
    return op.spec.name == "clamp" and op.results[0].type.element_type.name == "i1" and \
        in_loop(op)


def narrow_rng(op):
    """The element type of an ``rng`` XLA:CPU aborts the process compiling, or None: an
    integer type of fewer than 32 bits or a float type of fewer than 16 (its RngExpander:
    "Check failed: primitive_type == F16 || primitive_type == BF16", rng_expander.cc:58;
    i1, i4, i8, ui8, i16, ui16, f8E4M3FN, f4E2M1FN measured; f16 and bf16 run)."""
    if op.spec.name != "rng":
        return None
    et = op.operands[0].type.element_type
    if et.kind in ("sint", "uint", "bool") and et.bits < 32 or et.kind == "float" and \
            et.bits < 16:
        return et
    return None


def scalar_scatter(op) -> bool:
    """A ``scatter`` into a rank-0 operand of a batch of updates (empty index vectors):
    XLA:CPU's compile fails after its scatter simplifier ("INTERNAL: ... Expected instruction
    to have shape equal to f32[3], actual shape is f32[]")."""
    return op.spec.name == "scatter" and op.operands[0].type.rank == 0 and \
        op.operands[-1].type.rank > 0


def dynamic_result(module):
    """``(result index, type)`` of the first ``@main`` result that a ``set_dimension_size``
    made, directly or through ops of its shape (which carry the dynamic size on), or None:
    XLA then hands back an array of the runtime size, not of the result type (a 2x1 array
    for tensor<2x3xf32>; measured on 0.10.2)."""
    main = module.lookup("main") if hasattr(module, "lookup") else None
    if main is None or not main.body.blocks or not main.body.blocks[0].operations:
        return None
    ret = main.body.blocks[0].operations[-1]
    for i, v in enumerate(ret.operands):
        stack, seen = [v], set()
        while stack:
            w = stack.pop()
            op = getattr(w, "owner", None)
            if w.__class__ is BlockArgument or op is None or id(op) in seen:
                continue
            seen.add(id(op))
            if op.spec.name == "set_dimension_size":
                return i, v.type
            shape = getattr(w.type, "shape", None)
            stack.extend(u for u in op.operands if getattr(u.type, "shape", 0) == shape)
    return None


def scalar_select_and_scatter(op) -> bool:
    """A ``select_and_scatter`` of a rank-0 operand: XLA:CPU's SelectAndScatterExpander
    builds its loop over the operand's dimensions, with none of them two of its parameters
    get one number, and the compile aborts the process ("Check failed: param_instructions_
    [param_no] == nullptr", hlo_computation.cc:191). Rank 1 and more compile, windows of ones
    and size-1 operands too."""
    return op.spec.name == "select_and_scatter" and op.operands[0].type.rank == 0


_DOTS = frozenset({"dot_general", "dot"})


def widening_sub_byte_dot(op):
    """``(operand element type, the other's, result element type)`` of a ``dot_general`` or
    ``dot`` with a 4-bit operand whose element types are not all one: XLA:CPU (and GPU)
    widen such an operand with a convert that keeps its 4-bit layout, which the HLO
    verifier then refuses ("does not support custom element sizes on non-sub-byte types");
    i4 x i4 -> i4 (and ui4) compiles and runs right. Else None. (2-bit dots fail in any
    form, "unsupported operand type S2 in op dot": ``strategies.table.REFUSED``.)"""
    if _name(op) not in _DOTS:
        return None
    lhs, rhs = (v.type.element_type for v in op.operands[:2])
    result = op.results[0].type.element_type
    if (lhs.bits == 4 or rhs.bits == 4) and not lhs == rhs == result and \
            "quant" not in (lhs.kind, rhs.kind, result.kind):  # (quantized: as lowered)
        return lhs, rhs, result
    return None


def aliased_size_mismatch(module):
    """``(argument, result, their sizes in bytes)`` for the first argument of ``module``'s
    @main aliased (``tf.aliasing_output``) to a result stored in another number of bytes, or
    None: XLA:CPU refuses it compiling ("Expected aliased input 0 at index {} and output at
    index {} to have the same size"); equal sizes compile whatever the shapes and element
    types (f32[2] with i32[2], f32[4] with f32[2,2], i4[4] with i8[2]). Backends that pad
    to tiles (TPU) compare padded sizes, so this is XLA:CPU's (and GPU's) rule only."""
    main = module.lookup("main")
    if main is None or not main.arg_attrs or main.result_types is None:
        return None
    for i, attrs in enumerate(main.arg_attrs):
        k = getattr((attrs or {}).get("tf.aliasing_output"), "value", None)
        if k.__class__ is not int or not 0 <= k < len(main.result_types):
            continue
        a, r = main.arg_types[i], main.result_types[k]
        if getattr(a, "element_type", None) is None or getattr(r, "element_type", None) is None:
            continue
        if _byte_size(a) != _byte_size(r):
            return i, k, _byte_size(a), _byte_size(r)
    return None


def _byte_size(t) -> int:
    """The bytes XLA:CPU stores a tensor of type ``t`` in: sub-byte elements packed (i4[3]
    in 2 bytes), i1 one byte each."""
    et = t.element_type
    bits = 8 if et.is_bool else et.bits
    return (t.num_elements * bits + 7) // 8


def reinterpreting_bitcast(op) -> bool:
    """An ``mhlo.bitcast`` to another type than its operand's: XLA:CPU's layout assignment
    rejects it ("Unexpected bitcast operation seen during layout assignment"; to another
    rank: "layout minor_to_major field contains 1 elements, but shape has 2 dimensions").
    XLA makes such bitcasts itself once layouts are assigned; a program gets only the
    identity through."""
    return op.spec.name == "bitcast" and op.operands[0].type != op.results[0].type


def _copying_fusion(op) -> bool:
    """A ``fusion`` whose body copies a value the body computes (not one of its arguments)
    and uses the copy."""
    if op.spec.name != "fusion" or not op.regions:
        return False
    for block in op.regions[0].blocks:
        args = set(map(id, block.arguments))
        used = {id(v) for inner in block.operations for v in inner.operands}
        for inner in block.operations:
            if inner.spec.name == "copy" and id(inner.operands[0]) not in args and \
                    id(inner.results[0]) in used:  # (a copy nothing uses compiles)
                return True
    return False


def _reaches_copying_fusion(fn, module, seen) -> bool:
    """Whether function ``fn`` holds a copying fusion, or calls (however deep) one that
    does."""
    if id(fn) in seen:
        return False
    seen.add(id(fn))
    for _, op in walk(fn):
        if _copying_fusion(op):
            return True
        callee = inlined_callee(op, module)
        if callee is not None and _reaches_copying_fusion(callee, module, seen):
            return True
    return False


def looped_copying_fusion(op, module) -> bool:
    """A ``fusion`` whose body copies a value it computes, inside a ``while`` (body or
    condition, however deep), or a call inside one to a function that holds such a fusion
    (XLA inlines it there): XLA:CPU's compile aborts the process ("Check failed:
    has_layout() f32[4]", shape.h). Outside loops, in ``case`` branches, or copying one of
    the fusion's arguments, it compiles (measured on 0.10.2)."""
    if op.spec.name not in ("fusion", "func.call", "composite") or not in_loop(op):
        return False
    if op.spec.name == "fusion":
        return _copying_fusion(op)
    callee = inlined_callee(op, module)
    return callee is not None and _reaches_copying_fusion(callee, module, set())


def fusion_kind_problem(op) -> str | None:
    """What XLA:CPU does with a ``fusion`` it cannot compile: one of another kind than kLoop
    (kOutput: "Dot fusion supports only `add` root instruction", and with that root the
    compile aborts the process in dot_op_emitter.cc; kInput: "Unsupported fusion kind";
    kCustom: "Fusion must have backend config"), or one with no results (its verifier: the
    parameters "must have users"). None for a fusion it compiles."""
    if op.spec.name != "fusion":
        return None
    kind = (op.attributes or {}).get("fusion_kind")
    kind = getattr(kind, "value", kind)
    if kind is not None and str(kind) != "kLoop":
        return f"of kind {kind}"
    if not op.results:
        return "with no results"
    return None


# The collectives XLA turns an async_start / async_done pair around into its own async pair
# (all-reduce-start...); measured on XLA:CPU with two replicas. all_to_all fails its verifier
# ("Expected instruction to have shape equal to f32[4], actual shape is (f32[4])"), and
# reduce_scatter aborts the process ("Check failed: buffer != nullptr").
_ASYNC_COLLECTIVES = frozenset({"all_reduce", "all_gather", "collective_permute"})


def async_computation_problem(op, module) -> str | None:
    """What is wrong, for XLA, with the function an ``async_start`` calls, or None: XLA takes
    a function of one instruction over its parameters ("Asynchronous computation expected to
    contain only the root and parameter instructions"), and of those XLA:CPU compiles one
    all_reduce, all_gather or collective_permute (any other op fails its verifier: "The
    async-done expects the shape of output to match the async shape")."""
    if op.spec.name != "async_start" or not op.attributes:
        return None
    ref = op.attributes.get("called_computation")
    callee = module.lookup(ref.name) if ref is not None else None
    if callee is None:
        return None
    ops = callee.entry_block.operations
    body = [o for o in ops if o.spec.name not in ("func.return", "return")]
    if len(body) != 1:
        return f"@{callee.name} holds {len(body)} ops (XLA takes one over its arguments)"
    inner = body[0]
    args = {id(a) for a in callee.arguments}
    if inner.spec.name not in _ASYNC_COLLECTIVES:
        return (f"@{callee.name} holds '{inner.spec.name}' (XLA:CPU compiles an async "
                "all_reduce, all_gather or collective_permute only)")
    if any(id(v) not in args for v in inner.operands):
        return f"@{callee.name}'s '{inner.spec.name}' takes values other than its arguments"
    return None


def sub_byte_bitcast_of_constants(op):
    """A ``bitcast_convert`` to a 2- or 4-bit element type from a wider one, of a value
    computed from constants alone: XLA:CPU's constant folding of it keeps the low bits of
    each source element and zeros after them (ui8 [0x21, 0x43] to ui4 gives [[1, 3], [0,
    0]], not [[1, 2], [3, 4]]; the HLO jaxlib makes is right, measured on 0.10.2). The
    result's element type, else None."""
    if op.spec.name != "bitcast_convert":
        return None
    x, r = op.operands[0].type, op.results[0].type
    et = getattr(r, "element_type", None)
    if et is None or not et.is_sub_byte or x.element_type.bits <= et.bits:
        return None
    return et if defining_ops(op.operands[0]) is not None else None
