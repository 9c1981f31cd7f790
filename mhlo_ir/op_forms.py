"""The custom forms of the op table's ops, by name: what each chapter's specs put in
``OpSpec.pretty``. The pieces they are made of, and how a form prints and reads, are in
``mhlo_ir.pretty_forms``; this module only spells MLIR's assembly formats with them.
"""

from __future__ import annotations

from .attributes import FALSE, TRUE, ArrayAttr, DictionaryAttr, IntegerAttr
from .dtypes import i32
from .result_accuracy import DEFAULT_ACCURACY
from .pretty_forms import (ARROW, COMPLEX, FUNCTIONAL, OPERAND_TYPES, RESULTS, SAME, SELECT,
                           TUPLE, AlgorithmBody, Attr, AttrDict, ConvWindow, Dims, DotDims, Enum,
                           EnumList, ExpMantissa, Form, Int, Operands, Optional, PairwiseOrNone,
                           Reduce, Returned, Scan, SliceRanges, String, Symbol, ValueAttr, While,
                           scan_arg_names)


def _form(*pieces, **kw) -> Form:
    return Form(pieces, **kw)


# ``%r = name %a, %b : T`` (or ``: (A, B) -> R`` when the types differ).
ELEMENTWISE = _form(" ", Operands(), AttrDict(), " : ", SAME)
# The same for the transcendental functions: their default result_accuracy is left out.
ACCURATE = _form(" ", Operands(), AttrDict(elide=(("result_accuracy", DEFAULT_ACCURACY),)),
                 " : ", SAME)
# ``%r = name %a, %b : (A, B) -> R``.
FUNCTIONAL_FORM = _form(" ", Operands(), AttrDict(), " : ", FUNCTIONAL)
# chlo's ``%r = chlo.erf %a : A -> R`` (and ``%a, %b : A, B -> R``).
CHLO_UNARY = _form(" ", Operands(), AttrDict(), " : ", ARROW)
# ``%t = mhlo.create_token : !mhlo.token`` (ops without operands).
NULLARY = _form(AttrDict(), " : ", RESULTS)
# ``mhlo.return %a, %b : A, B`` (bare when there are none).
RETURN = _form(Returned(attrs_first=True))
HLO_RETURN = _form(Returned(space=True))


def _constant_names(op, dialect) -> tuple:
    # StableHLO's ConstantOp::getAsmResultNames: %c for integers (and i1), %cst otherwise.
    if dialect.name != "stablehlo":
        return ()
    et = op.results[0].type.element_type
    return ("c",) if et.is_integer or et.is_bool else ("cst",)


_SHLO = frozenset({"stablehlo"})
CONSTANT = _form(AttrDict(), " ", ValueAttr(), result_names=_constant_names)
CHLO_CONSTANT = _form(AttrDict(), " ", ValueAttr())
SELECT_FORM = _form(" ", Operands(), AttrDict(), " : ", SELECT)
COMPLEX_FORM = _form(" ", Operands(), AttrDict(), " : ", COMPLEX)
COMPARE = _form(" ", Enum("comparison_direction"), ", ", Operands(),
                Optional("compare_type", (", ", Enum("compare_type"))), AttrDict(), " : ",
                FUNCTIONAL)
REDUCE_PRECISION = _form(" ", Operands(), ", format = ", ExpMantissa(), AttrDict(), " : ",
                         SAME)
VARIADIC_NULLARY = _form(" ", Operands(), AttrDict(), " : ", RESULTS)  # after_all
TUPLE_FORM = _form(" ", Operands(), AttrDict(), " : ", TUPLE)
GET_TUPLE_ELEMENT = _form(" ", Operands(), "[", Int("index"), "]", AttrDict(), " : ",
                          FUNCTIONAL)
# (MLIR leaves out the attributes at their defaults: api 1, no side effect, no aliases or
# called computations)
CUSTOM_CALL = _form(" ", Symbol("call_target_name"), Operands(parens=True), AttrDict(elide=(
    ("api_version", IntegerAttr(1, i32)), ("has_side_effect", FALSE),
    ("output_operand_aliases", ArrayAttr(())), ("called_computations", ArrayAttr(())))),
    " : ", FUNCTIONAL)
CALL = _form(" ", Attr("callee"), Operands(parens=True), AttrDict(), " : ", FUNCTIONAL)
# (version 0 is its default, which MLIR leaves out)
COMPOSITE = _form(" ", Attr("name"), " ", Operands(),
                  AttrDict(elide=(("version", IntegerAttr(0, i32)),
                                  ("composite_attributes", DictionaryAttr({})))),
                  " : ", FUNCTIONAL)
TOPK = _form("(", Operands(), ", k = ", Int("k"),
             Optional("largest", (", largest = ", Attr("largest")), TRUE), ")", AttrDict(), " : ",
             ARROW, result_names=("values", "indices"))
OPTIMIZATION_BARRIER = _form(AttrDict(), PairwiseOrNone())
TRACE = _form(" ", Operands(), ", ", String("tag"), AttrDict(), " : ", OPERAND_TYPES)
WHILE = _form(While(), arg_name="iterArg")
REDUCE = _form(Reduce())
SCAN = Form((Scan(),), dialects=frozenset({"mhlo"}), arg_name=scan_arg_names)
ATTRS_ONLY = _form(AttrDict())  # xla.rng_get_and_update_state {delta = 1 : i64}
CHLO_TOP_K = _form("(", Operands(), ", k = ", Int("k"), ")", AttrDict(), " : ", ARROW,
                   result_names=("values", "indices"))


def named_results(*names, stablehlo=()) -> Form:
    """Ops MLIR prints generically (or, in StableHLO, in the form ``stablehlo``) whose
    results it names."""
    return Form(stablehlo, dialects=_SHLO if stablehlo else frozenset(), result_names=names)


def _shlo(*pieces) -> Form:
    return Form(pieces, dialects=_SHLO)


# StableHLO's custom forms of ops MHLO prints generically.
IOTA = _shlo(" dim = ", Int("iota_dimension"), AttrDict(), " : ", RESULTS)
BROADCAST_IN_DIM = _shlo(" ", Operands(), ", dims = ", Dims("broadcast_dimensions"), AttrDict(),
                         " : ", FUNCTIONAL)
DYNAMIC_BROADCAST_IN_DIM = BROADCAST_IN_DIM
TRANSPOSE = _shlo(" ", Operands(), ", dims = ", Dims("permutation"), AttrDict(), " : ",
                  FUNCTIONAL)
REVERSE = _shlo(" ", Operands(), ", dims = ", Dims("dimensions"), AttrDict(), " : ", SAME)
BROADCAST = _shlo(" ", Operands(), ", sizes = ", Dims("broadcast_sizes"), AttrDict(), " : ",
                  FUNCTIONAL)
SLICE = _shlo(" ", Operands(), " ", SliceRanges(), AttrDict(), " : ", FUNCTIONAL)
DYNAMIC_SLICE = _shlo(" ", Operands(), ", sizes = ", Dims("slice_sizes"), AttrDict(), " : ",
                      FUNCTIONAL)
DIM_FORM = _shlo(" ", Operands(), ", dim = ", Int("dimension"), AttrDict(), " : ", FUNCTIONAL)
CONCATENATE = _shlo(" ", Operands(), ", dim = ", Int("dimension"), AttrDict(), " : ",
                    FUNCTIONAL)
DYNAMIC_IOTA = _shlo(" ", Operands(), ", dim = ", Int("iota_dimension"), AttrDict(), " : ",
                     FUNCTIONAL)
CHOLESKY = _shlo(" ", Operands(), Optional("lower", (", lower = ", Attr("lower")), FALSE),
                 AttrDict(), " : ", SAME)
EINSUM = _shlo(" ", Operands(), ", config = ", String("einsum_config"), AttrDict(), " : ",
               FUNCTIONAL)
PAD = _shlo(" ", Operands(), ", low = ", Dims("edge_padding_low"), ", high = ",
            Dims("edge_padding_high"), ", interior = ", Dims("interior_padding"), AttrDict(),
            " : ", FUNCTIONAL)
RNG = _shlo(" ", Operands(), ", distribution = ", Enum("rng_distribution"), AttrDict(), " : ",
            FUNCTIONAL)
RNG_BIT_GENERATOR = named_results(
    "output_state", "output",
    stablehlo=(" ", Operands(), ", algorithm = ", Enum("rng_algorithm"), AttrDict(), " : ",
               FUNCTIONAL))
BATCH_NORM_TRAINING = named_results("output", "batch_mean", "batch_var")
BATCH_NORM_GRAD = named_results("grad_operand", "grad_scale", "grad_offset")
FFT = _shlo(" ", Operands(), ", type = ", Enum("fft_type"), ", length = ", Dims("fft_length"),
            AttrDict(), " : ", FUNCTIONAL)
DOT = _shlo(" ", Operands(), Optional("precision_config", (", precision = ",
                                                           EnumList("precision_config"))),
            AttrDict(), " : ", FUNCTIONAL)
DOT_GENERAL = _shlo(" ", Operands(), ", ", DotDims(),
                    Optional("precision_config", (", precision = ", EnumList("precision_config"))),
                    Optional("algorithm", (", algorithm = ", AlgorithmBody())),
                    AttrDict(), " : ", FUNCTIONAL)
CONVOLUTION = _form(Operands(parens=True), " ", ConvWindow(), AttrDict(), " : ", FUNCTIONAL)
