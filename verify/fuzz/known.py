"""Which known finding (``docs/findings.md``) a disagreement is an instance of, so that a
campaign's report separates new disagreements from ones already triaged.

Unlike the comparison rules of ``verify.differential``, these do not excuse anything: a
program matching one is still a disagreement, counted under ``known`` with the finding's
name. Each matcher is narrow: it reads ops (with their operand and result element types) and
the kind of difference, and names a finding only when the op pattern the finding is about
computes a differing result: the ops upstream of the differing results (through operands,
the bodies of the ops among them, and the functions they call; ``upstream_ops``), not every
op of the program (an unrelated op elsewhere once labelled about a third of all programs'
differences known). Anything else stays new.
"""

from __future__ import annotations

import attrs

from mhlo_ir.dtypes import ALL_ELEMENT_TYPES

__all__ = ["KnownFinding", "KNOWN", "known_finding", "op_signatures", "upstream_ops"]

_ROUNDING = frozenset({"floor", "ceil", "round_nearest_even", "round_nearest_afz"})
# Float types whose encoding is not IEEE-like (no infinities, unsigned zero or NaN-only
# exponents): reduce_precision's rounding to them is not defined by the spec (finding 10).
_NON_IEEE = frozenset({"f8E4M3FN", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ", "f8E8M0FNU",
                       "f4E2M1FN"})
_SUB_BYTE_SIGNED = frozenset({"i2", "i4"})
_FLOATS = frozenset(et.name for et in ALL_ELEMENT_TYPES if et.kind == "float")
_NARROW_FLOATS = frozenset(et.name for et in ALL_ELEMENT_TYPES
                           if et.kind == "float" and et.bits <= 8)
_NARROW_FLOATS_16 = frozenset(et.name for et in ALL_ELEMENT_TYPES
                              if et.kind == "float" and et.bits <= 16)
_FNUZ = frozenset({"f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ"})
_FOUR_BIT_INTS = frozenset({"i4", "ui4"})
# Float types XLA computes in a wider one (bf16 in f32; 8- and 4-bit floats in f16).
_EXCESS_FLOATS = frozenset(et.name for et in ALL_ELEMENT_TYPES
                           if et.kind == "float" and (et.bits <= 8 or et.name == "bf16"))
_LOOPS = frozenset({"while", "scan"})
_COMPLEX = frozenset({"complex<f32>", "complex<f64>"})
_WIDE_OR_COMPLEX = _COMPLEX | {"f64"}


@attrs.frozen
class KnownFinding:
    name: str
    entry: int          # its number in docs/findings.md
    summary: str
    kinds: frozenset    # the difference kinds it shows as ("integer", "float", "nan")
    match: object       # the signatures of the ops upstream of the differences -> bool


def _int(t) -> bool:
    return t.startswith(("i", "ui")) and t != "i1"


def _has(sigs, names, pred=lambda ts: True) -> bool:
    return any(name in names and pred(types) for name, types in sigs)


def _abs_of_square(sigs):
    return _has(sigs, {"multiply"}, lambda ts: any(map(_int, ts))) and \
        _has(sigs, {"abs"}, lambda ts: any(map(_int, ts)))


KNOWN = (
    KnownFinding("xla_abs_square_fold", 1, "XLA folds abs(multiply(x, x)) to x*x on "
                 "wrapping integers", frozenset({"integer"}), _abs_of_square),
    # (wrong integers may be converted to floats before they are returned, and wrong floats
    # to integers: a finding's kinds are every kind it has been seen to show as)
    KnownFinding("xla_int_power", 2, "XLA's integer power with a large exponent is wrong",
                 frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"power", "chlo.broadcast_power"},
                                   lambda ts: any(map(_int, ts)))),
    KnownFinding("xla_popcnt_sub_byte", 3, "XLA's popcnt of signed sub-byte integers counts "
                 "the sign extension", frozenset({"integer"}),
                 lambda sigs: _has(sigs, {"popcnt"}, lambda ts: bool(_SUB_BYTE_SIGNED & set(ts)))),
    KnownFinding("xla_scatter_empty_index", 4, "XLA's scatter with empty index vectors drops "
                 "every update", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"scatter:empty_index"})),
    KnownFinding("xla_f4e2m1fn_max_to_int", 5, "XLA converts f4E2M1FN's largest value to the "
                 "integer maximum", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"convert"}, lambda ts: "f4E2M1FN" in ts and
                                   any(map(_int, ts)))),
    KnownFinding("interpreter_f8e3m4_rounding", 6, "the interpreter's rounding ops on f8E3M4 "
                 "give NaN", frozenset({"nan", "float", "integer"}),
                 lambda sigs: _has(sigs, _ROUNDING, lambda ts: "f8E3M4" in ts)),
    KnownFinding("nan_sign_through_bitcast", 11, "NaN signs differ (unspecified), and "
                 "bitcast_convert of a float shows them", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"bitcast_convert"},
                                   lambda ts: bool(ts) and ts[0] in _FLOATS)),
    KnownFinding("complex_product_overflow", 12, "a complex product that overflows: NaN "
                 "on one executor, an infinity on the other", frozenset({"nan"}),
                 lambda sigs: _has(sigs, {"multiply", "dot", "dot_general"},
                                   lambda ts: bool(_COMPLEX & set(ts)))),
    KnownFinding("interpreter_narrow_logistic", 13, "the interpreter's logistic on 8-bit "
                 "floats is not correctly rounded", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"logistic"},
                                   lambda ts: bool(_NARROW_FLOATS & set(ts)))),
    KnownFinding("interpreter_total_order_negative_nan", 14, "the interpreter's total order "
                 "puts NaNs with the sign bit set last, not first", frozenset(
                     {"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"compare:totalorder", "topk", "chlo.top_k"},
                                   lambda ts: bool(_FLOATS & set(ts)))),
    KnownFinding("interpreter_e8m0_nan_to_inf", 15, "the interpreter converts "
                 "f8E8M0FNU's NaN (0xFF) to infinity", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"convert"},
                                   lambda ts: bool(ts) and ts[0] == "f8E8M0FNU" and
                                   ts[-1] != "f8E8M0FNU")),
    KnownFinding("interpreter_odd_irfft", 16, "the interpreter's IRFFT of an odd length "
                 "is wrong", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"fft:irfft_odd"})),
    KnownFinding("xla_sub_byte_shift_right_logical_splat", 19, "XLA's shift_right_logical "
                 "of a broadcast scalar on signed sub-byte integers shifts in sign bits",
                 frozenset({"integer"}),
                 lambda sigs: _has(sigs, {"shift_right_logical",
                                          "chlo.broadcast_shift_right_logical"},
                                   lambda ts: bool(_SUB_BYTE_SIGNED & set(ts)))),
    KnownFinding("interpreter_scatter_in_place", 20, "the interpreter's scatter updates "
                 "its operand in place: the operand's other users see the updates",
                 frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"scatter:shared_operand"})),
    KnownFinding("fft_direct_dft", 18, "an FFT of infinities or of values of very different "
                 "sizes: the interpreter's direct DFT (rounded twiddles) against XLA's FFT",
                 frozenset({"float", "nan", "integer"}), lambda sigs: _has(sigs, {"fft"})),
    KnownFinding("triangular_solve_non_finite", 17, "triangular_solve through infinite "
                 "entries: NaN on one executor, an infinity on the other", frozenset({"nan"}),
                 lambda sigs: _has(sigs, {"triangular_solve"})),
    KnownFinding("xla_complex_minmax_real_part", 22, "XLA's maximum/minimum of complex "
                 "numbers compare the real parts only", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"maximum", "minimum", "chlo.broadcast_maximum",
                                          "chlo.broadcast_minimum"},
                                   lambda ts: bool(_COMPLEX & set(ts)))),
    KnownFinding("xla_convolution_skips_padding", 23, "XLA's convolution leaves padding out "
                 "of its sums: 0 x NaN or 0 x inf there is not NaN", frozenset({"nan", "float"}),
                 lambda sigs: _has(sigs, {"convolution:padded"},
                                   lambda ts: bool((_FLOATS | _COMPLEX) & set(ts)))),
    KnownFinding("xla_grouped_convolution_mixes_groups", 33, "XLA's convolution with "
                 "feature groups of f64 or complex values: a NaN or an infinity of one group "
                 "makes every group's result NaN", frozenset({"nan", "float", "integer"}),
                 lambda sigs: _has(sigs, {"convolution:feature_groups"},
                                   lambda ts: bool(_WIDE_OR_COMPLEX & set(ts)))),
    KnownFinding("xla_folded_integer_convolution", 24, "XLA's constant folding of an integer "
                 "convolution saturates where its compiled code wraps",
                 frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"convolution:constant"},
                                   lambda ts: any(map(_int, ts)))),
    KnownFinding("xla_mulhi_4_bit", 25, "XLA's mulhi of 4-bit integers gives the product's "
                 "bits above bit 8", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"mulhi", "chlo.mulhi"},
                                   lambda ts: bool({"i4", "ui4"} & set(ts)))),
    KnownFinding("xla_i2_maximum_of_minus_one", 26, "XLA folds the maximum of i2 values and "
                 "a broadcast -1 to -1", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"maximum", "chlo.broadcast_maximum"},
                                   lambda ts: "i2" in ts)),
    KnownFinding("xla_i2_compare_with_minimum", 30, "XLA compares i2 values with a splat "
                 "of -2 (its minimum) as if it were +2", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"compare:i2_minimum"})),
    KnownFinding("xla_i2_select_and_scatter", 27, "XLA's padded select_and_scatter of i2 "
                 "stores a negative constant source sign-extended over its neighbours",
                 frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"select_and_scatter"}, lambda ts: "i2" in ts)),
    # after finding 27, which names the i2 programs that also have padding
    KnownFinding("xla_padded_select_and_scatter_ties", 31, "XLA's padded select_and_scatter "
                 "breaks ties between window elements in another order than the window's",
                 frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"select_and_scatter:padded"})),
    KnownFinding("xla_reduce_scatter_min_max_drops_nan", 32, "XLA's reduce_scatter with a "
                 "minimum or maximum body turns NaN into the body's identity (+-inf)",
                 frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"reduce_scatter:min_max"},
                                   lambda ts: bool(_FLOATS & set(ts)))),
    KnownFinding("interpreter_complex_zero_to_the_zero", 34, "the interpreter's complex "
                 "power gives NaN for 0^0 (1 on XLA, in numpy and in Python)",
                 frozenset({"nan"}),
                 lambda sigs: _has(sigs, {"power", "chlo.broadcast_power"},
                                   lambda ts: bool(_COMPLEX & set(ts)))),
    KnownFinding("zeta_subnormal_tolerance", 35, "chlo's zeta (and polygamma, made of it) "
                 "compares with a multiple of the smallest subnormal, which XLA:CPU flushes "
                 "to zero", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"chlo.zeta", "chlo.broadcast_zeta", "chlo.polygamma",
                                          "chlo.broadcast_polygamma"},
                                   lambda ts: bool(_FLOATS & set(ts)))),
    KnownFinding("complex_atan2_inaccurate", 36, "complex atan2 through log: both "
                 "executors err by about an ulp of 1 in the imaginary part, and XLA's is NaN "
                 "where the squares of the operands are subnormal", frozenset({"float", "nan"}),
                 lambda sigs: _has(sigs, {"atan2", "chlo.broadcast_atan2"},
                                   lambda ts: bool(_COMPLEX & set(ts)))),
    KnownFinding("xla_folded_clz_of_negative", 28, "XLA's constant folding of "
                 "count_leading_zeros of a negative signed integer narrower than 64 bits "
                 "counts in 64 bits and subtracts", frozenset({"integer", "float", "nan"}),
                 lambda sigs: _has(sigs, {"count_leading_zeros:constant"},
                                   lambda ts: any(t.startswith("i") and t not in ("i1", "i64")
                                                  for t in ts))),
    KnownFinding("xla_fnuz_negative_underflow_in_loop", 41, "XLA:CPU's loop bodies round "
                 "a negative value that underflows an FNUZ float8 type to 0x80 (NaN), not 0",
                 frozenset({"nan", "float", "integer"}),
                 lambda sigs: _has(sigs, {"while:fnuz_body"})),
    KnownFinding("narrow_float_dot_accumulation", 42, "a dot of 8- or 16-bit floats: XLA "
                 "accumulates in f32 and rounds once, the interpreter rounds every partial "
                 "sum (an overflow there is inf or NaN)", frozenset({"nan", "float"}),
                 lambda sigs: _has(sigs, {"dot", "dot_general"},
                                   lambda ts: bool(_NARROW_FLOATS_16 & set(ts)))),
    KnownFinding("xla_four_bit_int_excess_precision", 43, "XLA computes 4-bit integer "
                 "arithmetic wider and drops its wrap when a convert widens the result",
                 frozenset({"integer"}),
                 lambda sigs: _has(sigs, {"convert:widens_computed"},
                                   lambda ts: ts[0] in _FOUR_BIT_INTS)),
    KnownFinding("xla_narrow_float_excess_precision", 44, "XLA computes bf16, 8- and 4-bit "
                 "floats in a wider type and skips their rounding when a convert widens the "
                 "result", frozenset({"float", "nan", "integer"}),
                 lambda sigs: _has(sigs, {"convert:widens_computed"},
                                   lambda ts: ts[0] in _EXCESS_FLOATS)),
    KnownFinding("reduce_precision_non_ieee", 10, "reduce_precision on non-IEEE float types, "
                 "and on narrow ones the format's subnormals (to be ruled)",
                 frozenset({"nan", "float", "integer"}),
                 lambda sigs: _has(sigs, {"reduce_precision"},
                                   lambda ts: bool((_NON_IEEE | _NARROW_FLOATS_16) & set(ts)))),
)


def op_signatures(module, ops=None) -> list:
    """``(op name, element type names of its operands and results)`` for every op (or for
    ``ops`` alone, ops of ``module``), with
    scatters whose index vectors are empty marked ``scatter:empty_index``, those whose
    operand something else uses too ``scatter:shared_operand`` (and so is marked each op
    reading a buffer a scatter takes as its operand: what finding 20 changes), convolutions with
    padding (or lhs dilation) ``convolution:padded`` (and select_and_scatters
    ``select_and_scatter:padded``), those of constants alone ``convolution:constant`` (and
    ``count_leading_zeros:constant``), convolutions with feature groups
    ``convolution:feature_groups``, reduce_scatters combining with a minimum or a
    maximum ``reduce_scatter:min_max``, and converts widening a computed value
    ``convert:widens_computed``."""
    from mhlo_ir.decompose import identity_operand
    from mhlo_ir.ir import defining_ops, walk
    out = []
    uses: dict = {}
    scattered = _scattered_buffers(module)
    for _, op in walk(module):
        if identity_operand(op, single_device=True) is not None:
            continue  # (its result is its operand's buffer: the result's users count)
        for v in op.operands:
            v = _buffer_of(v)
            uses[id(v)] = uses.get(id(v), 0) + 1
    for op in (op for _, op in walk(module)) if ops is None else ops:
        types = []
        for v in (*op.operands, *op.results):
            et = getattr(v.type, "element_type", None)
            if et is not None:
                types.append(et.name)
        name = op.spec.name
        if name == "scatter" and _empty_index_vectors(op):
            out.append(("scatter:empty_index", tuple(types)))
        if name == "scatter" and any(uses.get(id(_buffer_of(v)), 0) > 1
                                     for v in op.operands[:len(op.operands) // 2]):
            out.append(("scatter:shared_operand", tuple(types)))
        elif name != "scatter" and identity_operand(op, single_device=True) is None and any(
                id(_buffer_of(v)) in scattered for v in op.operands):
            out.append(("scatter:shared_operand", tuple(types)))
        if name in ("compare", "chlo.broadcast_compare") and any(
                _i2_minimum_splat(v) for v in op.operands):
            out.append(("compare:i2_minimum", tuple(types)))
        if name in ("compare", "chlo.broadcast_compare") and _total_order(op):
            out.append(("compare:totalorder", tuple(types)))
        if name == "fft" and _odd_irfft(op):
            out.append(("fft:irfft_odd", tuple(types)))
        if name == "count_leading_zeros" and all(defining_ops(v) is not None
                                                 for v in op.operands):
            out.append(("count_leading_zeros:constant", tuple(types)))
        if name in _LOOPS and _region_types(op) & _FNUZ:
            out.append(("while:fnuz_body", tuple(types)))
        if name == "reduce_scatter" and _body_has(op, {"minimum", "maximum"}):
            out.append(("reduce_scatter:min_max", tuple(types)))
        if name == "convert" and _widens_computed(op):
            out.append(("convert:widens_computed", tuple(types)))
        if name == "select_and_scatter" and _padded(op):
            out.append(("select_and_scatter:padded", tuple(types)))
        if name == "convolution":
            if _padded(op):
                out.append(("convolution:padded", tuple(types)))
            if all(defining_ops(v) is not None for v in op.operands):
                out.append(("convolution:constant", tuple(types)))
            if _int_attribute(op, "feature_group_count") > 1:
                out.append(("convolution:feature_groups", tuple(types)))
        out.append((name, tuple(types)))
    return out


def _scattered_buffers(module) -> set:
    """The ids of the buffers (``_buffer_of``) the scatters of ``module`` take as operands."""
    from mhlo_ir.ir import walk
    return {id(_buffer_of(v)) for _, op in walk(module) if op.spec.name == "scatter"
            for v in op.operands[:len(op.operands) // 2]}


def _buffer_of(v):
    """The value whose buffer ``v`` is once ``mhlo_ir.decompose`` has made the ops that pass
    their operand on (a campaign's programs run on one device: its collectives too) that
    operand itself: to the interpreter, a scatter into such a result updates the operand."""
    from mhlo_ir.decompose import identity_operand
    for _ in range(64):
        op = getattr(v, "owner", None)
        w = None if getattr(op, "spec", None) is None else \
            identity_operand(op, single_device=True)
        if w is None:
            return v
        v = w
    return v


def _i2_minimum_splat(v) -> bool:
    """Whether ``v`` is i2's minimum (-2) everywhere: a splat constant of it, or a
    broadcast of one."""
    from mhlo_ir.ops.held import constant_ints
    op = getattr(v, "owner", None)
    while getattr(getattr(op, "spec", None), "name", None) == "broadcast_in_dim":
        v = op.operands[0]
        op = getattr(v, "owner", None)
    et = getattr(v.type, "element_type", None)
    if et is None or et.name != "i2":
        return False
    values = constant_ints(v)
    return bool(values) and all(x == -2 for x in values)


def _int_attribute(op, name) -> int:
    a = (op.attributes or {}).get(name)
    return int(getattr(a, "value", 1) if a is not None else 1)


def _body_has(op, names) -> bool:
    """Whether an op of ``op``'s regions is one of ``names``."""
    return any(inner.spec.name in names for region in op.regions or ()
               for block in region.blocks for inner in block.operations)


def _region_types(op) -> set:
    """The element type names of every op's operands and results in ``op``'s regions,
    nested ones too."""
    out = set()
    for region in op.regions or ():
        for block in region.blocks:
            for inner in block.operations:
                stack = [inner]
                while stack:
                    o = stack.pop()
                    for v in (*o.operands, *o.results):
                        et = getattr(v.type, "element_type", None)
                        if et is not None:
                            out.add(et.name)
                    stack.extend(x for r in o.regions or () for b in r.blocks
                                 for x in b.operations)
    return out


def _odd_irfft(op) -> bool:
    attrs = op.attributes or {}
    kind = getattr(attrs.get("fft_type"), "value", None)
    lengths = attrs.get("fft_length")
    ints = getattr(lengths, "ints", None)
    if ints is None and lengths is not None:
        ints = tuple(int(v) for v in lengths.to_array().reshape(-1))
    return kind == "IRFFT" and bool(ints) and ints[-1] % 2 == 1


def _padded(op) -> bool:
    """Whether a convolution's (or a select_and_scatter's) windows reach elements it adds:
    positive padding or lhs dilation."""
    attrs = op.attributes or {}
    for name, positive in (("padding", lambda v: v > 0), ("lhs_dilation", lambda v: v > 1)):
        a = attrs.get(name)
        if a is not None and any(positive(int(v)) for v in a.to_array().reshape(-1)):
            return True
    return False


def _total_order(op) -> bool:
    ct = op.attributes.get("compare_type") if op.attributes else None
    return getattr(ct, "value", None) == "TOTALORDER"


def _empty_index_vectors(op) -> bool:
    dn = op.attributes.get("scatter_dimension_numbers") if op.attributes else None
    indices = op.operands[len(op.operands) // 2] if op.operands else None
    shape = getattr(getattr(indices, "type", None), "shape", None)
    ivd = getattr(dn, "index_vector_dim", None)
    if shape is None or ivd is None:
        return False
    return ivd < len(shape) and shape[ivd] == 0


def _widens_computed(op) -> bool:
    """A convert to a wider type of the same kind of a value an op computed (not an
    argument or a constant as given): where XLA's excess precision shows (findings 43, 44)."""
    from mhlo_ir.ir import BlockArgument
    v = op.operands[0]
    src, dst = v.type.element_type, op.results[0].type.element_type
    if v.__class__ is BlockArgument or v.owner.spec.name in ("constant", "convert"):
        return False
    same_kind = (src.kind == dst.kind == "float") or (
        src.kind in ("sint", "uint") and dst.kind in ("sint", "uint"))
    return same_kind and dst.bits > src.bits


def known_finding(module, differences) -> str | None:
    """The name of the known finding an unexplained disagreement of ``module`` is an instance
    of (the first that matches the ops upstream of the differing results), or None: a new
    disagreement."""
    unexplained = [d for d in differences if d.explained_by is None]
    kinds = {d.kind for d in unexplained}
    if not kinds:
        return None
    sigs = op_signatures(module, upstream_ops(module, unexplained))
    main = module.lookup("main")
    ret = main.body.blocks[-1].operations[-1] if main is not None else None
    if ret is not None:  # (a returned argument a scatter takes as its operand: finding 20)
        scattered = _scattered_buffers(module)
        if any(0 <= d.index < len(ret.operands) and
               id(_buffer_of(ret.operands[d.index])) in scattered for d in unexplained):
            sigs.append(("scatter:shared_operand", ()))
    for finding in KNOWN:
        if kinds <= finding.kinds and finding.match(sigs):
            return finding.name
    return None


def upstream_ops(module, differences) -> list:
    """The ops that compute the results ``differences`` name (through @main's return), each
    once: their producers through operands, every op in the regions of those (a loop's
    body, a reduction's) and what those read from outside, and the ops of the functions they
    call (``func.call``, ``composite``), however deep."""
    from mhlo_ir.ir import BlockArgument
    from mhlo_ir.xla_cpu import inlined_callee
    main = module.lookup("main")
    ret = main.body.blocks[-1].operations[-1] if main is not None else None
    seen: set = set()
    ops: list = []
    stack: list = []

    def add(op):
        if id(op) not in seen:
            seen.add(id(op))
            ops.append(op)
            stack.append(op)

    for d in differences:
        if ret is not None and 0 <= d.index < len(ret.operands):
            v = ret.operands[d.index]
            if v.__class__ is not BlockArgument:
                add(v.owner)
    while stack:
        op = stack.pop()
        for v in op.operands:
            if v.__class__ is not BlockArgument:
                add(v.owner)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    add(inner)
        callee = inlined_callee(op, module)
        if callee is not None:
            for block in callee.body.blocks:
                for inner in block.operations:
                    add(inner)
    return ops
