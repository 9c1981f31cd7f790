"""Checks of what constant operands hold (``OpSpec.operand_check``).

A few ops take a shape, paddings or bounds as a tensor operand. Types cannot judge such an
op, but jaxlib reads the operand when a ``constant`` op makes it (folding the op into its
static twin) and rejects values that contradict the result type, or, for some, accepts them
and runs a program of no defined meaning. These checks read the same constants, so the
mistake is a Python error naming the op, whether the op came from a builder method, from
``create`` or from parsed text (Module.verify runs them on every such op).
"""

from __future__ import annotations

from ..dense import LIST_LIMIT
from .spec import fail

__all__ = ["constant_ints", "holds_result_shape", "dynamic_pad_held", "real_dynamic_slice_held",
           "dimension_size_held"]


def constant_ints(v, op=None, what: str = "") -> tuple | None:
    """The integers held by the ``constant`` op whose result ``v`` is (None for any other
    value): what jaxlib reads of a shape operand when it is a constant, checking them
    against the result type the op was given. jaxlib reads an unsigned constant as signed
    (ui8 200 as -56: "output shape [-56] is incompatible"): with ``op``, a value with the top
    bit set is an error naming the op and operand ``what``."""
    spec = getattr(v, "spec", None)
    if spec is None or spec.name != "constant" or not v.attributes:
        return None
    value = v.attributes.get("value")
    try:
        if value.type.num_elements > LIST_LIMIT:  # (a splat: no shape holds that many sizes)
            return None
        held = tuple(int(x) for x in value.to_array().reshape(-1))
    except (AttributeError, TypeError, ValueError):
        return None
    et = value.type.element_type
    if op is not None and et.kind == "uint" and any(x >= 1 << (et.bits - 1) for x in held):
        x = max(held)
        fail(op, f"operand {what} holds {x} as {et.name}, which jaxlib reads as signed "
                 f"({x - (1 << et.bits)}): give it a signed type, or a wider one")
    return held


def holds_result_shape(index: int, what: str):
    """An ``operand_check``: operand ``index`` (``what``), when a constant, must hold the result
    type's shape (jaxlib reads it: "output shape [3, 2] is incompatible with return type")."""
    def check(op, operands, attributes, results):
        held = constant_ints(operands[index], op, what)
        rt = results[0]
        if held is not None and held != rt.shape:
            fail(op, f"operand {what} holds {list(held)}, but the result type is {rt}: give "
                     "the result type that shape")
    return check


def dynamic_pad_held(op, operands, attributes, results):
    """Constant paddings must make the result type's shape (jaxlib folds them: "expected
    output dimension at index 0 to equal 3"), interior ones >= 0."""
    x, rt = operands[0].type, results[0]
    pads = [constant_ints(v, op, what) for v, what in zip(
        operands[2:], ("edge_padding_low", "edge_padding_high", "interior_padding"))]
    if any(p is None for p in pads):
        return
    if any(i < 0 for i in pads[2]):
        fail(op, f"interior_padding holds {list(pads[2])}: it must be >= 0")
    want = tuple(n + lo + hi + max(n - 1, 0) * i for n, lo, hi, i in zip(x.shape, *pads))
    if want != rt.shape:
        fail(op, f"the paddings held (low {list(pads[0])}, high {list(pads[1])}, interior "
                 f"{list(pads[2])}) make shape {list(want)} of {x}, but the result type is "
                 f"{rt}")


def real_dynamic_slice_held(op, operands, attributes, results):
    """Constant bounds must lie within the operand and make the result type's shape: jaxlib
    accepts other bounds and runs the program (measured on 0.10.2), to no meaning the
    spec gives."""
    x, rt = operands[0].type, results[0]
    bounds = [constant_ints(v, op, what) for v, what in zip(
        operands[1:], ("start_indices", "limit_indices", "strides"))]
    if any(c is None for c in bounds):
        return
    want = []
    for d, (n, lo, hi, step) in enumerate(zip(x.shape, *bounds)):
        if not 0 <= lo <= hi <= n or step < 1:
            fail(op, f"dimension {d} of {x}: start {lo}, limit {hi}, stride {step}: need "
                     f"0 <= start <= limit <= {n} and stride >= 1")
        want.append(-(-(hi - lo) // step))
    if tuple(want) != rt.shape:
        fail(op, f"the bounds held make shape {want} of {x}, but the result type is {rt}")


def dimension_size_held(op, operands, attributes, results):
    """A constant size must lie within the dimension's static size, its bound (XLA:CPU
    returns a garbage shape for a larger one, and segfaults on -1 or 10**6: measured on
    0.10.2)."""
    held = constant_ints(operands[1], op, "size")
    if held is None:
        return
    x = operands[0].type
    d = attributes["dimension"].value
    if 0 <= d < x.rank and not 0 <= held[0] <= x.shape[d]:
        fail(op, f"operand size holds {held[0]}, outside [0, {x.shape[d]}] (dimension {d} of "
                 f"{x} bounds it)")
