"""How a front door turns its arguments into an op: the machinery ``Builder.create`` and the
chapters' typed builder methods share.

NOTE: it lives in the op package, not in ``mhlo_ir.builder``, so that each chapter can declare
its front doors next to its specs (``builder_method``) without importing the builder, which
imports every chapter. Two ways in:

- ``validate`` checks an op against its spec (operand count and kinds, attribute conversion,
  the spec's result-type rule) — what ``Builder.create`` runs for every op;
- ``memo`` builds a region-free op whose check depends only on a key of operand types and raw
  Python arguments, validating each key once (``MEMO``): the hot paths (constant,
  broadcast_in_dim, dot_general, ...) of programs that repeat a pattern per layer.
"""

from __future__ import annotations

from ..attributes import to_attribute
from ..errors import OpBuildError
from ..ir import _MANY, VALUE_CLASSES, Value, _new_single_result_op, make_operation
from ..op_attributes import OpAttributes, shared_attributes
from ..types import MAX_DIMENSION, TensorType, tensor
from ..location import checked_location
from .args import check_values, ints, tensor_of
from .spec import fail, lookup

__all__ = ["validate", "MEMO", "memo_get", "memo_put", "memo", "memo_miss", "no_make",
           "result_type",
           "shape_arg", "tensor_type"]


def _expand_operands(spec, operands: tuple) -> tuple:
    """Check the operand count against the spec; variadic groups come as lists."""
    names = spec.operands
    flat = []
    n_var = spec.n_variadic
    if n_var == 0:
        if len(operands) != len(names):
            fail(spec.name, f"takes {len(names)} operands ({', '.join(names)}), got "
                            f"{len(operands)}")
        for n, x in zip(names, operands):
            if x.__class__ not in VALUE_CLASSES and not isinstance(x, Value):
                fail(spec.name, f"operand {n} must be a Value, got {type(x).__name__} {x!r:.60}")
        return operands
    if len(operands) != len(names):
        if n_var == 1 and len(names) == 1:
            operands = (operands,)
        else:
            fail(spec.name, f"takes operand groups ({', '.join(names)}), got {len(operands)}")
    for n, x in zip(names, operands):
        if n.endswith("*"):
            flat.extend(check_values(spec.name, n[:-1], x))
        else:
            flat.extend(check_values(spec.name, n, (x,)))
    return tuple(flat)


def validate(name, operands, attributes, result_types, regions):
    """Check an op against its spec; returns (spec, operands, attributes, result types,
    regions) ready to construct, or raises OpBuildError."""
    spec = lookup(name)
    operands = _expand_operands(spec, tuple(operands))
    attrs = {}
    specs = spec.attributes
    if attributes:
        for k, v in attributes.items():
            if v is None:
                continue
            a = specs.get(k)
            try:
                attrs[k] = a.convert(v) if a is not None else to_attribute(v)
            except (TypeError, ValueError) as e:
                fail(spec.name, f"attribute {k}: {e}")
    regions = tuple(regions)
    n = len(operands)
    types = (operands[0].type, operands[1].type) if n == 2 else (operands[0].type,) \
        if n == 1 else tuple([v.type for v in operands])
    result_types = spec.validate(types, attrs, result_types, regions)
    if spec.operand_check is not None:
        spec.operand_check(spec.name, operands, attrs, result_types)
    # Read-only: builders share one attribute mapping among ops built from the same
    # arguments (see memo); Operation.set_attr copies before writing.
    return spec, operands, OpAttributes(attrs) if attrs else None, result_types, regions


# key -> (spec, attributes, *result types) of an op validated before; see memo. (Flat: a
# tuple of the result types inside would be one more object per entry for the cyclic GC.)
MEMO: dict = {}
# NOTE: front doors that inline memo's hit path look keys up with this bound method: CPython
# 3.11 compiles ``MEMO.get(key)`` on an imported name as an attribute load that makes a new
# bound method per call (it keeps its method-call shortcut for names not imported).
memo_get = MEMO.get


def memo(b, key, name, operands, location, make, *make_args) -> Value:
    """Build with Builder ``b`` a region-free op whose validation only depends on ``key``.

    ``key`` holds the operand types and the raw Python arguments; an op built again with
    the same key reuses the validated attributes and result types, so repeated patterns
    (every layer of a network) cost one dict lookup instead of a full check. On a miss,
    ``make(*make_args)`` gives (attributes, result types or None). ``make`` is a module
    function rather than a closure: a closure per call, and the cell variables it forces
    on the caller, cost more than the lookup.
    """
    for v in operands:
        if v.__class__ not in VALUE_CLASSES:
            check_values(name, "operand", operands)
    try:
        hit = MEMO.get(key)
    except TypeError:  # an unhashable argument: validate without remembering
        key, hit = None, None
    if hit is None:
        hit = memo_miss(key, name, operands, make, make_args)
    block = b.block
    loc = b.location if location is None else checked_location(location)
    if len(hit) == 3:  # one result
        n = len(operands)
        if n == 1 or n == 2:
            op = _new_single_result_op(hit[0], operands[0], operands[1] if n == 2 else None,
                                       hit[1], hit[2], loc, block)
        else:
            op = _new_single_result_op(hit[0], tuple(operands), _MANY, hit[1], hit[2], loc,
                                       block)
        block.operations.append(op)
        return op
    op = make_operation(hit[0], operands, hit[2:], hit[1], (), loc, block)
    block.operations.append(op)
    return op.results[0]


def memo_miss(key, name, operands, make, make_args) -> tuple:
    """Validate an op for ``memo`` and remember it under ``key`` (None: don't)."""
    try:
        attributes, result_types = make(*make_args)
    except (TypeError, ValueError) as e:
        if isinstance(e, OpBuildError):
            raise
        fail(name, str(e))
    spec, _, attrs, rts, _ = validate(name, operands, attributes, result_types, ())
    if attrs is not None:
        # The mapping of ops built alike at other shapes, where there is one: memoised
        # front doors make attributes of small raw arguments (dimensions, directions...),
        # which MEMO keeps alive anyway (not a big constant's data: _large_constant).
        attrs = shared_attributes(attrs)
    hit = (spec, attrs, *rts)
    if key is not None and spec.decided_by_types:
        memo_put(key, hit)
    return hit


def memo_put(key, hit) -> None:
    """Remember ``hit`` under ``key`` in the bounded MEMO."""
    if len(MEMO) > 16384:
        MEMO.clear()
    MEMO[key] = hit


# What memo's callers build on a miss: (attributes, result types or None). The ops' own
# ``make`` functions are in their chapters, next to their front doors.

def no_make():
    return None, None


def result_type(op, shape, element_type) -> TensorType:
    """``tensor(shape, element_type)`` for op ``op``'s result, failing in the op's name."""
    shape = ints(op, "shape", shape)  # "must be a list of integers" for iota(2, f32)
    try:
        return tensor(shape, element_type)
    except (TypeError, ValueError) as e:
        fail(op, f"result type: {e}")


def shape_arg(op, shape, t) -> tuple:
    """A result shape argument as a tuple of ints (bools and floats rejected, not hashed as
    ints into the memo), each a valid tensor dimension."""
    shape = ints(op, "shape", shape)
    for d in shape:
        if not 0 <= d <= MAX_DIMENSION:
            return result_type(op, shape, t.element_type).shape
    return shape


# The tensor type of Value ``x`` (``tensor_type(x, op)``), else an OpBuildError in op's name.
tensor_type = tensor_of
