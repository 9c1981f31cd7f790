"""Ops with a Python-built region applied over windows, elements or a scanned dimension:
reduce_window, select_and_scatter, map and scan."""

from __future__ import annotations

from .. import op_forms as pf
from ..attributes import Attribute, DenseArrayAttr
from ..dense import i64_array, index
from ..index_array import index_ints
from ..dtypes import i1, i32
from ..types import TensorType, tensor
from ..ir import Operation, Value
from . import convert
from .control_flow import check_region, inputs_and_inits, region_returns
from .convolution import _padding, window_output_size
from .linalg import _bool
from .args import arg_names, check_values, integer, pairs, results, value_list
from .spec import (MHLO_ONLY, AttrSpec, OpSpec, builder_method, fail, region_arg, register,
                   tensor_operand)



_i64 = convert.i64


def _types(ts) -> str:
    return "(" + ", ".join(map(str, ts)) + ")"


def _list(op, attributes, name, rank, default):
    a = attributes.get(name)
    if a is None:
        return (default,) * rank
    vals = index_ints(a)
    if not vals and name != "window_dimensions":
        return (default,) * rank  # (jaxlib reads an empty list as the default's)
    if len(vals) != rank:
        fail(op, f"{name} has {len(vals)} entries, expected {rank} (the rank of the inputs)")
    for i, v in enumerate(vals):
        if v <= 0:
            fail(op, f"{name}[{i}] = {v} must be positive")
    return vals


def _window_shape(op, x, attributes, *, dilations=True):
    """The shape of the grid of windows over ``x`` (reduce_window's result shape)."""
    rank = x.rank
    dims = _list(op, attributes, "window_dimensions", rank, 1)
    strides = _list(op, attributes, "window_strides", rank, 1)
    base = _list(op, attributes, "base_dilations", rank, 1) if dilations else (1,) * rank
    wdil = _list(op, attributes, "window_dilations", rank, 1) if dilations else (1,) * rank
    pad = attributes.get("padding")
    if pad is None:
        pads = ((0, 0),) * rank
    else:
        if pad.type.shape != (rank, 2):
            fail(op, f"padding must have shape [{rank}, 2] (one [low, high] pair per "
                     f"dimension), got {list(pad.type.shape)}")
        pads = tuple((int(lo), int(hi)) for lo, hi in pad.to_array())
    return tuple(window_output_size(n, w, s, lo, hi, b, d, op, i)
                 for i, (n, w, s, (lo, hi), b, d) in
                 enumerate(zip(x.shape, dims, strides, pads, base, wdil)))


# -- reduce_window -----------------------------------------------------------------------------

def _reduce_window(op, types, attributes):
    inputs, inits = inputs_and_inits(op, types)
    first = inputs[0]
    for i, t in enumerate(inputs):
        if t.shape != first.shape:
            fail(op, f"operand inputs[{i}] has shape {list(t.shape)}, expected "
                     f"{list(first.shape)}")
        if inits[i].rank != 0:
            fail(op, f"operand init_values[{i}] must be a scalar tensor, got {inits[i]}")
    if "window_dimensions" not in attributes:
        fail(op, "requires attribute window_dimensions")
    shape = _window_shape(op, first, attributes)
    return tuple(tensor(shape, t.element_type) for t in inits)


def _reduce_window_check(op, types, attributes, results, regions):
    expected = _reduce_window(op, types, attributes)
    if tuple(results) != expected:
        fail(op, f"results {_types(results)} differ from the inferred {_types(expected)}")
    inits = types[len(types) // 2:]
    check_region(op, "body", regions[0], inits + inits, inits)
    for i, t in enumerate(types[:len(types) // 2]):
        if t.element_type is not inits[i].element_type:
            fail(op, f"operand inputs[{i}] has element type {t.element_type}, but "
                     f"init_values[{i}] is {inits[i]}")
    _check_cropping_window(op, types, attributes, results, regions[0])


# The bodies XLA's algebraic simplifier turns a reduce_window of a window of ones into
# (measured: multiply, and, or, xor, subtract, and bodies of more ops compile).
_ELEMENTWISE_BODIES = frozenset({"add", "maximum", "minimum"})


def _check_cropping_window(op, types, attributes, results, region) -> None:
    """A reduce_window of one input whose window is all ones (size, stride and dilations 1
    in every dimension), whose padding crops (some entry negative, none positive) and whose
    body is add, maximum or minimum of its two arguments: XLA's algebraic simplifier (a pass
    of every backend) rewrites it as that op of the init and the whole input, ignoring the
    padding, and the compile aborts the process ("Check failed: ShapeUtil::Compatible
    reduce-window (f32[3]) vs add (f32[4])"). Measured on XLA:CPU: positive padding
    anywhere, a window, stride or dilation of 2, an empty result, two inputs and other
    bodies compile; docs/findings.md."""
    if len(types) != 2 or not results or results[0].num_elements == 0:
        return
    rank = types[0].rank
    for name in ("window_dimensions", "window_strides", "base_dilations", "window_dilations"):
        if any(v != 1 for v in _list(op, attributes, name, rank, 1)):
            return
    pad = attributes.get("padding")
    pads = [] if pad is None else [int(v) for v in pad.to_array().reshape(-1)]
    if not pads or max(pads) > 0 or min(pads) >= 0:
        return
    block = region.blocks[0]
    if len(block.operations) != 2:
        return
    inner = block.operations[0]
    used = {id(v) for v in inner.operands}  # (both block arguments, once each)
    if inner.spec.name not in _ELEMENTWISE_BODIES or \
            used != {id(v) for v in block.arguments} or len(inner.operands) != 2:
        return
    name = inner.spec.name
    fail(op, f"a window of ones with padding {[pads[i:i + 2] for i in range(0, len(pads), 2)]} "
             f"that only crops, and a '{name}' body: XLA's algebraic simplifier (every "
             f"backend) rewrites it as {name}(init, input) over the whole input, ignoring the "
             "padding, and aborts the process (Check failed: ShapeUtil::Compatible); slice "
             f"the input to {list(results[0].shape)} and apply '{name}' with the init instead")


_WINDOW_ATTRS = {"window_dimensions": AttrSpec(i64_array, True),
                 "window_strides": AttrSpec(i64_array),
                 "base_dilations": AttrSpec(i64_array),
                 "window_dilations": AttrSpec(i64_array),
                 "padding": AttrSpec(_padding)}

register(OpSpec("reduce_window", ("inputs*", "init_values*"), _WINDOW_ATTRS, regions=1,
                infer=_reduce_window, check=_reduce_window_check,
                doc="reduces every window of the inputs with a region (pooling)",
                closed_regions=True, quantized="not_yet"))


@builder_method
def reduce_window(b, inputs, init_values, window_dimensions, body, *, window_strides=None,
                  base_dilations=None, window_dilations=None, padding=None,
                  location=None) -> Value | tuple:
    """Reduce each window; ``body(b, *accs, *elems)`` combines scalars. ``padding`` is a list of
    ``(low, high)`` pairs. Returns a Value for one input, else a tuple."""
    inputs = value_list("reduce_window", "inputs", inputs)
    inits = value_list("reduce_window", "init_values", init_values)
    padding = pairs("reduce_window", "padding", padding)
    scalar = [region_arg("reduce_window", f"init_values[{i}]", getattr(v, "type", None))
              for i, v in enumerate(inits)]
    region = b.region(scalar + scalar, body, op="reduce_window",
                      arg_names=arg_names(len(inits), "acc", "x"))
    attrs = {"window_dimensions": window_dimensions, "window_strides": window_strides,
             "base_dilations": base_dilations, "window_dilations": window_dilations,
             "padding": padding}
    op = b.create("reduce_window", (inputs, inits), attrs, regions=(region,), location=location)
    return results(op)


# -- select_and_scatter ----------------------------------------------------------------------

def _select_and_scatter(op, types, attributes):
    x = tensor_operand(op, "operand", types[0])
    src = tensor_operand(op, "source", types[1])
    init = tensor_operand(op, "init_value", types[2])
    et = x.element_type
    if src.element_type is not et:
        fail(op, f"operand source must have the operand's element type {et.name}, got {src}")
    if init.rank != 0 or init.element_type is not et:
        fail(op, f"operand init_value must be tensor<{et.name}> (the operand's element "
                 f"type), got {init}")
    if x.rank and attributes.get("window_dimensions") is None:
        # (jaxlib reads a missing one as empty, not as ones)
        fail(op, f"requires attribute window_dimensions: one size per dimension of the "
                 f"operand {x}")
    grid = _window_shape(op, x, attributes, dilations=False)
    if src.shape != grid:
        fail(op, f"operand source must have the shape of the window grid {list(grid)}, got "
                 f"{src}")
    return (x,)


def _select_and_scatter_check(op, types, attributes, results, regions):
    expected = _select_and_scatter(op, types, attributes)
    if tuple(results) != expected:
        fail(op, f"results {_types(results)} differ from the inferred {_types(expected)}")
    s = region_arg(op, "operand", types[0])
    check_region(op, "select", regions[0], (s, s), (tensor((), i1),))
    init = types[2]
    check_region(op, "scatter", regions[1], (init, init), (init,))


register(OpSpec("select_and_scatter", ("operand", "source", "init_value"),
                {"window_dimensions": AttrSpec(i64_array), "window_strides": AttrSpec(i64_array),
                 "padding": AttrSpec(_padding)},
                regions=2, infer=_select_and_scatter, check=_select_and_scatter_check,
                doc="scatters source into the element each window's select picks (pooling "
                    "gradients)",
                closed_regions=True, quantized="not_yet"))


@builder_method
def select_and_scatter(b, operand, source, init_value, select, scatter, *,
                       window_dimensions=None, window_strides=None, padding=None,
                       location=None) -> Value:
    """``select(b, a, b) -> i1`` keeps ``a`` when true; ``scatter(b, acc, x)`` combines."""
    s = region_arg("select_and_scatter", "operand", getattr(operand, "type", None))
    init = tensor_operand("select_and_scatter", "init_value", getattr(init_value, "type", None))
    regions = (b.region((s, s), select, op="select_and_scatter", what="select",
                        arg_names=("lhs", "rhs")),
               b.region((init, init), scatter, op="select_and_scatter", what="scatter",
                        arg_names=("acc", "x")))
    attrs = {"window_dimensions": window_dimensions, "window_strides": window_strides,
             "padding": pairs("select_and_scatter", "padding", padding)}
    return b.create("select_and_scatter", (operand, source, init_value), attrs,
                    regions=regions, location=location).results[0]


# -- map -------------------------------------------------------------------------------------

def _map_check(op, types, attributes, results, regions):
    if not types:
        fail(op, "needs at least one input")
    ts = [tensor_operand(op, f"inputs[{i}]", t) for i, t in enumerate(types)]
    for i, t in enumerate(ts):
        if t.shape != ts[0].shape:
            fail(op, f"operand inputs[{i}] has shape {list(t.shape)}, expected "
                     f"{list(ts[0].shape)}")
    dims = index_ints(attributes["dimensions"])
    if dims != tuple(range(ts[0].rank)):
        fail(op, f"dimensions must be {list(range(ts[0].rank))} (all dimensions, in order), got "
                 f"{list(dims)}")
    out = region_returns(op, "computation", regions[0])
    if len(out) != 1 or not isinstance(out[0], TensorType) or out[0].rank != 0:
        fail(op, f"computation must return one scalar tensor, got {_types(out)}")
    args = [region_arg(op, f"inputs[{i}]", t) for i, t in enumerate(ts)]
    check_region(op, "computation", regions[0], args, out)
    r = results[0] if len(results) == 1 else None
    if r != tensor(ts[0].shape, out[0].element_type):
        fail(op, f"result must be {tensor(ts[0].shape, out[0].element_type)}, got "
                 f"{_types(results)}")


register(OpSpec("map", ("inputs*",), {"dimensions": AttrSpec(i64_array, True)}, regions=1,
                check=_map_check,
                doc="applies a scalar region to every element of the inputs",
                closed_regions=True, quantized="not_yet"))


def _map(b, inputs, body, *, dimensions=None, location=None) -> Value:
    """``body(b, *scalars) -> scalar`` applied elementwise; the result element type is what
    the body returns."""
    inputs = check_values("map", "inputs", value_list("map", "inputs", inputs))
    if not inputs:
        fail("map", "needs at least one input")
    region = b.region([region_arg("map", f"inputs[{i}]", v.type)
                       for i, v in enumerate(inputs)], body, op="map",
                      arg_names=arg_names(len(inputs), "x"))
    out = region_returns("map", "computation", region)
    if len(out) != 1 or not isinstance(out[0], TensorType):
        fail("map", f"computation must return one scalar tensor, got {_types(out)}")
    shape = inputs[0].type.shape
    dims = tuple(range(len(shape))) if dimensions is None else tuple(dimensions)
    return b.create("map", (inputs,), {"dimensions": dims},
                    (tensor(shape, out[0].element_type),), regions=(region,),
                    location=location).results[0]


# Named ``map`` on the Builder; not here, where it would shadow the builtin.
_map.__name__ = "map"
builder_method(_map)


# -- scan ------------------------------------------------------------------------------------

def _segments(v):
    """Operand or result group sizes: MLIR wants ``array<i32: ..>``."""
    if isinstance(v, DenseArrayAttr):
        if v.type is not i32:
            raise TypeError(f"expected group sizes as array<i32>, got array<{v.type.name}>")
        return v
    if isinstance(v, (str, bytes, Attribute)) or not hasattr(v, "__iter__"):
        raise TypeError(f"expected a list of group sizes, got {type(v).__name__} {v!r:.60}")
    return DenseArrayAttr(tuple(index(x) for x in v), i32)


def _drop(shape, d):
    return shape[:d] + shape[d + 1:]


def _check_slices(op, slices, dimension: int) -> None:
    """Each output slice takes the scanned dimension at ``dimension``: it needs that many
    dimensions before it (XLA crashes the process on a shorter one)."""
    for i, t in enumerate(slices):
        rank = getattr(t, "rank", None)
        if rank is None or rank < dimension:
            fail(op, f"body output {i} is {t}: the outputs are stacked along dimension "
                     f"{dimension}, so each slice needs rank >= {dimension}")


def _scan_check(op, types, attributes, results, regions):
    seg = attributes.get("operandSegmentSizes")
    rseg = attributes.get("resultSegmentSizes")
    if seg is None or rseg is None or len(seg.values) != 2 or len(rseg.values) != 2:
        fail(op, "needs operandSegmentSizes and resultSegmentSizes of 2 entries each")
    n_in, n_init = seg.values
    n_out, n_carry = rseg.values
    if n_in + n_init != len(types) or n_out + n_carry != len(results):
        fail(op, f"segment sizes {list(seg.values)} / {list(rseg.values)} do not match "
                 f"{len(types)} operands and {len(results)} results")
    if n_carry != n_init:
        fail(op, f"has {n_init} inits but {n_carry} carry results")
    inputs = [tensor_operand(op, f"inputs[{i}]", t) for i, t in enumerate(types[:n_in])]
    inits = tuple(types[n_in:])
    d = attributes["dimension"].value
    size = attributes.get("scan_dim_size")
    length = None if size is None else size.value
    for i, t in enumerate(inputs):
        if not 0 <= d < t.rank:
            fail(op, f"dimension {d} is out of range for inputs[{i}] {t}")
        if length is None:
            length = t.shape[d]
        elif t.shape[d] != length:
            fail(op, f"inputs[{i}] has {t.shape[d]} entries along dimension {d}, expected "
                     f"{length}")
    if length is None:
        fail(op, "needs scan_dim_size when it has no inputs")
    slices = tuple(region_arg(op, f"inputs[{i}]", t, _drop(t.shape, d))
                   for i, t in enumerate(inputs))
    got = region_returns(op, "body", regions[0])
    if len(got) != n_out + n_carry:
        fail(op, f"body returns {len(got)} values, expected {n_out} outputs and {n_carry} "
                 "carries")
    check_region(op, "body", regions[0], slices + inits, got[:n_out] + inits)
    _check_slices(op, got[:n_out], d)
    outs = tuple(tensor(t.shape[:d] + (length,) + t.shape[d:], t.element_type)
                 for t in got[:n_out])
    if tuple(results) != outs + inits:
        fail(op, f"results {_types(results)} differ from the expected {_types(outs + inits)}")


register(OpSpec("scan", ("inputs*", "inits*"),
                {"dimension": AttrSpec(_i64, True), "scan_dim_size": AttrSpec(_i64),
                 "is_reverse": AttrSpec(_bool), "is_associative": AttrSpec(_bool),
                 "operandSegmentSizes": AttrSpec(_segments, True),
                 "resultSegmentSizes": AttrSpec(_segments, True)},
                regions=1, check=_scan_check, dialects=MHLO_ONLY, pretty=pf.SCAN,
                doc="runs a region along one dimension, threading carries; outputs are stacked"))


@builder_method
def scan(b, inputs, inits, dimension, body, *, is_reverse=None, is_associative=None,
         scan_dim_size=None, location=None) -> Value | tuple | Operation:
    """``body(b, *input_slices, *carries) -> (*output_slices, *new_carries)``.

    Returns the outputs (the slices stacked along ``dimension``) followed by the carries, as
    every builder method returns results: a Value when there is one, else a flat tuple."""
    inputs = check_values("scan", "inputs", value_list("scan", "inputs", inputs))
    inits = check_values("scan", "inits", value_list("scan", "inits", inits))
    dimension = integer("scan", "dimension", dimension)
    slices = []
    for i, v in enumerate(inputs):
        t = tensor_operand("scan", f"inputs[{i}]", v.type)
        if not 0 <= dimension < t.rank:
            fail("scan", f"dimension {dimension} is out of range for input {t}")
        slices.append(region_arg("scan", f"inputs[{i}]", t, _drop(t.shape, dimension)))
    names = arg_names(len(inputs), "x") + arg_names(len(inits), "carry")
    region = b.region(slices + [v.type for v in inits], body, op="scan", arg_names=names)
    got = region_returns("scan", "body", region)
    n_out = len(got) - len(inits)
    if n_out < 0:
        fail("scan", f"body returns {len(got)} values, fewer than the {len(inits)} carries")
    length = scan_dim_size if scan_dim_size is not None else (
        inputs[0].type.shape[dimension] if inputs else None)
    if length is None:
        fail("scan", "needs scan_dim_size when it has no inputs")
    _check_slices("scan", got[:n_out], dimension)
    outs = [tensor(t.shape[:dimension] + (length,) + t.shape[dimension:], t.element_type)
            for t in got[:n_out]]
    attrs = {"dimension": dimension, "scan_dim_size": scan_dim_size, "is_reverse": is_reverse,
             "is_associative": is_associative,
             "operandSegmentSizes": (len(inputs), len(inits)),
             "resultSegmentSizes": (n_out, len(inits))}
    return results(b.create("scan", (inputs, inits), attrs, outs + [v.type for v in inits],
                            regions=(region,), location=location))
