"""Ops with regions and terminators: reduce, while, if, case, return, func.call, func.return.

Region rules check the region's block signature and what its terminator returns, so a Python
function that builds a body with the wrong types fails at build time with the region named.
"""

from __future__ import annotations

from .. import op_forms as pf

from ..attributes import SymbolRefAttr
from ..dense import i64_array
from ..dtypes import i1, i32
from ..types import tensor
from . import convert
from .data_movement import ints
from typing import Callable, Sequence, Union

from ..ir import (VALUE_CLASSES, Function, Operation, Region, Value,
                  make_operation)
from ..combining import CombiningRegion, combines, region_types
from ..location import checked_location
from .construct import memo_get, memo_put
from .args import arg_names, check_values, results, tensor_of, value_list
from .args import ints as int_list
from .spec import (FUNC, REGISTRY, AttrSpec, OpSpec, builder_method, fail, region_arg,
                   register, tensor_operand)

# What builder methods return: a Value for one result, a tuple for several, the Operation
# for none (see Builder).
Results = Union[Value, tuple, Operation]


def _types(ts) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def region_returns(op, what, region) -> tuple:
    """The types a single-block region's terminator returns."""
    recipe = region_types(region)
    if recipe is not None:
        return recipe[1]
    if len(region.blocks) != 1:
        fail(op, f"{what} must have exactly one block, got {len(region.blocks)}")
    block = region.blocks[0]
    term = block.operations[-1] if block.operations else None
    if term is None or not term.spec.terminator:
        fail(op, f"{what} does not end with a return")
    return tuple(v.type for v in term.operands)


def check_region(op, what, region, arg_types, result_types) -> None:
    recipe = region_types(region)  # (a recipe's block is not made to read its types)
    if recipe is not None:
        got_args = recipe[0]
    else:
        block = region.blocks[0] if len(region.blocks) == 1 else None
        if block is None:
            fail(op, f"{what} must have exactly one block, got {len(region.blocks)}")
        got_args = block.arg_types
    if arg_types is not None and got_args != tuple(arg_types):
        fail(op, f"{what} takes arguments {_types(got_args)}, expected {_types(arg_types)}")
    got = region_returns(op, what, region)
    if got != tuple(result_types):
        fail(op, f"{what} returns {_types(got)}, expected {_types(result_types)}")


def inputs_and_inits(op, types) -> tuple:
    """Split the operands of a reduction-like op (reduce, reduce_window) into its input and
    init-value tensors, which must come in equal numbers."""
    n = len(types) // 2
    if len(types) % 2 or n == 0:
        fail(op, f"needs as many init values as inputs (and at least one), got {len(types)} "
                 "operands")
    inputs = [tensor_operand(op, f"inputs[{i}]", t) for i, t in enumerate(types[:n])]
    inits = [tensor_operand(op, f"init_values[{i}]", t) for i, t in enumerate(types[n:])]
    return inputs, inits


def _reduce(op, types, attributes):
    inputs, inits = inputs_and_inits(op, types)
    dims = ints(attributes["dimensions"])
    first = inputs[0]
    for i, t in enumerate(inputs):
        if t.shape != first.shape:
            fail(op, f"operand inputs[{i}] has shape {list(t.shape)}, expected "
                     f"{list(first.shape)}")
        if inits[i].rank != 0 or inits[i].element_type is not t.element_type:
            fail(op, f"operand init_values[{i}] must be tensor<{t.element_type.name}>, got "
                     f"{inits[i]}")
    if len(set(dims)) != len(dims):
        fail(op, f"dimensions {list(dims)} has repeated entries")
    for d in dims:
        if not 0 <= d < first.rank:
            fail(op, f"dimension {d} is out of range for inputs of rank {first.rank}")
    shape = [s for i, s in enumerate(first.shape) if i not in dims]
    return tuple(tensor(shape, t.element_type) for t in inputs)


def _reduce_check(op, types, attributes, results, regions):
    expected = _reduce(op, types, attributes)
    if tuple(results) != expected:
        fail(op, f"results {_types(results)} differ from the inferred {_types(expected)}")
    n = len(types) // 2
    inits = types[n:]
    check_region(op, "body", regions[0], inits + inits, inits)


register(OpSpec("reduce", ("inputs*", "init_values*"),
                {"dimensions": AttrSpec(i64_array, True)},
                regions=1, infer=_reduce, check=_reduce_check,
                closed_regions=True, pretty=pf.REDUCE, quantized="not_yet"))


def _while(op, types, attributes):
    return tuple(types)


def _while_check(op, types, attributes, results, regions):
    if tuple(results) != tuple(types):
        fail(op, f"results {_types(results)} must equal the operand types {_types(types)}")
    check_region(op, "cond", regions[0], types, (tensor((), i1),))
    check_region(op, "body", regions[1], types, types)


register(OpSpec("while", ("operand*",), regions=2, infer=_while, check=_while_check,
                pretty=pf.WHILE, quantized="carrier", no_tuples=True))


def _if_check(op, types, attributes, results, regions):
    pred = tensor_operand(op, "pred", types[0])
    if pred.shape != () or pred.element_type is not i1:
        fail(op, f"operand pred must be tensor<i1>, got {pred}")
    check_region(op, "true_branch", regions[0], (), results)
    check_region(op, "false_branch", regions[1], (), results)


register(OpSpec("if", ("pred",), regions=2, check=_if_check, quantized="carrier", no_tuples=True))


def _case_check(op, types, attributes, results, regions):
    index = tensor_operand(op, "index", types[0])
    if index.shape != () or index.element_type is not i32:
        fail(op, f"operand index must be tensor<i32>, got {index}")
    if not regions:
        fail(op, "needs at least one branch")
    for i, r in enumerate(regions):
        check_region(op, f"branches[{i}]", r, (), results)


register(OpSpec("case", ("index",), regions=1, variadic_regions=True, check=_case_check,
                quantized="carrier", no_tuples=True))

register(OpSpec("return", ("results*",), terminator=True, infer=lambda op, t, a: (),
                pretty=pf.HLO_RETURN, quantized="carrier"))
register(OpSpec("func.return", ("operands*",), namespace="func", dialects=FUNC, terminator=True,
                infer=lambda op, t, a: (), pretty=pf.RETURN, quantized="carrier"))


def _call_check(op, types, attributes, results, regions):
    callee = attributes["callee"]
    if not isinstance(callee, SymbolRefAttr):
        fail(op, f"attribute callee must be a symbol reference, got {callee!r}")


register(OpSpec("func.call", ("operands*",), {"callee": AttrSpec(convert.symbol, True),
                                              "no_inline": AttrSpec(convert.unit),
                                              "arg_attrs": AttrSpec(convert.dictionaries),
                                              "res_attrs": AttrSpec(convert.dictionaries)},
                namespace="func", dialects=FUNC, check=_call_check, pretty=pf.CALL,
                quantized="carrier"))

__all__ = ["check_region", "region_returns", "inputs_and_inits", "combining_region"]

_ACC_X = ("acc", "x")  # a one-input reduction's region arguments, as errors name them
_RETURN = REGISTRY["return"]


def combining_region(b, op: str, name: str, scalar) -> Region:
    """The region ``^bb0(%acc, %x): return name(%acc, %x)`` over ``scalar`` (a rank-0
    tensor type), as its recipe (``mhlo_ir.combining.CombiningRegion``), with no Builder or
    body call: what most reductions hold. ``name``
    must be a binary elementwise op taking ``scalar`` operands (what it returns is for the op
    holding the region to check, as with a function body); the ops get ``b``'s location.
    """
    key = ("combining region", name, scalar)
    hit = memo_get(key)
    if hit is None:
        spec = REGISTRY.get(name)
        if spec is None or not combines(spec):
            fail(op, f"body {name!r} is not a binary elementwise op (add, multiply, maximum, "
                     f"minimum, and, or, xor...); pass a function (b, acc, x) -> value")
        hit = (spec, spec.validate((scalar, scalar), None, None, ())[0])
        memo_put(key, hit)
    return CombiningRegion(hit[0], scalar, hit[1], b.location)  # (its block made if read)


# -- builder methods ---------------------------------------------------------------------

@builder_method
def reduce(b, inputs, init_values, dimensions, body: Callable | str, *,
           location=None) -> Value | tuple:
    """Reduce ``inputs`` (a Value or a list) over ``dimensions``; ``body(b, *accs,
    *elems)`` combines scalars. Returns a Value for one input, else a tuple.

    With one input, ``body`` may instead name a binary elementwise op (``"add"``,
    ``"maximum"``, ``"and"``...): the body is then ``op(acc, x)``, built directly (see
    ``Builder.region``).
    """
    if body.__class__ is str and inputs.__class__ in VALUE_CLASSES and \
            init_values.__class__ in VALUE_CLASSES:
        # One input and a body named by its op (every reduce_sum/max... JAX lowers): the
        # op's checks, and its region's, depend on the types, dimensions and name alone.
        cls = dimensions.__class__
        dims = dimensions if cls is tuple else tuple(dimensions) if cls is list else None
        if dims is not None:
            for d in dims:
                if d.__class__ is not int:  # (checked before keying: True equals 1)
                    dims = None
                    break
        if dims is not None:
            key = ("reduce named", inputs.type, init_values.type, dims, body)
            hit = memo_get(key)
            if hit is None:
                op = _reduce_general(b, inputs, init_values, dims, body, location)
                memo_put(key, (op.spec, op.attributes, op.type, init_values.type))
                return op
            spec, attrs, rt, scalar = hit
            block = b.block
            op = make_operation(spec, (inputs, init_values), (rt,), attrs,
                                (combining_region(b, "reduce", body, scalar),),
                                b.location if location is None
                                else checked_location(location), block)
            block.operations.append(op)
            return op
    return _reduce_general(b, inputs, init_values, dimensions, body, location)


def _reduce_general(b, inputs, init_values, dimensions, body, location) -> Value | tuple:
    """``reduce``'s general path: any inputs and body."""
    if inputs.__class__ in VALUE_CLASSES and init_values.__class__ in VALUE_CLASSES:
        inputs, inits = [inputs], [init_values]  # one input: most reductions
    else:
        inputs = value_list("reduce", "inputs", inputs)
        inits = value_list("reduce", "init_values", init_values)
        if len(inits) != len(inputs):  # (before the body, whose arguments follow the inits)
            fail("reduce", f"takes one init value per input: {len(inputs)} inputs, "
                           f"{len(inits)} init_values")
    scalar = []
    for i, v in enumerate(inits):
        t = tensor_of(v, "reduce")
        scalar.append(t if t.shape == () else region_arg("reduce", f"init_values[{i}]", t))
    region = b.region(scalar + scalar, body, op="reduce",
                      arg_names=_ACC_X if len(inits) == 1 else arg_names(len(inits), "acc", "x"))
    dims = int_list("reduce", "dimensions", dimensions)
    # The op's checks but the region's depend only on the operand types and dimensions:
    # a reduction repeated over a program (every layer norm, every bias gradient) runs them
    # once; its body is checked each time.
    key = ("reduce", tuple([getattr(v, "type", None) for v in inputs]),
           tuple([v.type for v in inits]), dims)
    hit = memo_get(key)
    if hit is None:
        op = b.create("reduce", (inputs, inits), {"dimensions": dims}, regions=(region,),
                      location=location)
        memo_put(key, (op.spec, op.attributes, tuple(r.type for r in op.results)))
        return results(op)
    spec, attrs, rts = hit
    inits_t = key[2]
    # The region's arguments are the scalars made above: only what it returns is checked.
    recipe = region_types(region)
    if recipe is not None:
        returned = recipe[1]
    else:
        ops = region.blocks[0].operations if len(region.blocks) == 1 else None
        returned = tuple([v.type for v in ops[-1].operands]) \
            if ops and ops[-1].spec.terminator else None
    if returned != inits_t:
        check_region("reduce", "body", region, inits_t + inits_t, inits_t)
    block = b.block
    op = make_operation(spec, (*inputs, *inits), rts, attrs, (region,),
                        b.location if location is None else checked_location(location),
                        block)
    block.operations.append(op)
    return results(op)


@builder_method
def while_(b, operands: Sequence[Value] | Value, cond: Callable, body: Callable, *,
           location=None) -> Value | tuple:
    """``cond(b, *state) -> i1 scalar``; ``body(b, *state) -> new state``.

    ``operands`` is the initial state: a list of Values, or one Value for a state of
    one. Returns the final state: a Value for a state of one, else a tuple."""
    operands = check_values("while", "operand", value_list("while", "operands", operands))
    types = [v.type for v in operands]
    names = arg_names(len(types), "x")
    regions = (b.region(types, cond, op="while", what="cond", arg_names=names),
               b.region(types, body, op="while", what="body", arg_names=names))
    return results(b.create("while", (list(operands),), regions=regions,
                               location=location))


@builder_method
def if_(b, pred: Value, true_branch: Callable, false_branch: Callable, *,
        result_types=None, location=None) -> Results:
    """Branches are ``f(b) -> values``; result types come from the true branch's.
    Returns a Value for one result, a tuple for several, the Operation for none."""
    t = b.region((), true_branch, op="if", what="true_branch")
    f = b.region((), false_branch, op="if", what="false_branch")
    if result_types is None:
        result_types = region_returns("if", "true_branch", t)
    return results(b.create("if", (pred,), result_types=result_types, regions=(t, f),
                               location=location))


@builder_method
def case(b, index: Value, branches: Sequence[Callable], *, result_types=None,
         location=None) -> Results:
    """``branches[i](b) -> values`` runs when ``index == i`` (the last one otherwise).
    Returns a Value for one result, a tuple for several, the Operation for none."""
    if callable(branches) or not hasattr(branches, "__iter__"):
        fail("case", f"branches must be a list of functions (b) -> values, got "
                     f"{type(branches).__name__} {branches!r:.40}")
    regions = [b.region((), br, op="case", what=f"branches[{i}]")
               for i, br in enumerate(branches)]
    if not regions:
        fail("case", "needs at least one branch")
    if result_types is None:
        result_types = region_returns("case", "branches[0]", regions[0])
    return results(b.create("case", (index,), result_types=result_types,
                               regions=regions, location=location))


@builder_method
def call(b, callee: Function | str, args: Sequence[Value], result_types=None, *,
         location=None) -> Results:
    """``func.call`` of a Function (or a function name with explicit ``result_types``).
    Returns a Value for one result, a tuple for several, the Operation for none."""
    args = check_values("func.call", "operands", value_list("func.call", "args", args))
    if isinstance(callee, Function):
        if tuple(v.type for v in args) != callee.arg_types:
            expected = ", ".join(map(str, callee.arg_types))
            fail("func.call", f"arguments ({', '.join(str(v.type) for v in args)}) do not "
                              f"match @{callee.name}'s ({expected})")
        if result_types is None:
            result_types = callee.type.results
        callee = callee.name
    elif result_types is None:
        fail("func.call", f"calling @{callee} by name needs result_types")
    return results(b.create("func.call", (list(args),),
                               {"callee": SymbolRefAttr(callee)}, result_types,
                               location=location))
