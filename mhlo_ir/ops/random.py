"""Random numbers: rng (uniform or normal), rng_bit_generator, and XLA's rng state."""

from __future__ import annotations

from .. import op_forms as pf

import numpy as np

from ..dtypes import ui64
from ..mhlo_attributes import rng_algorithm, rng_distribution
from ..types import TensorType, tensor
from ..ir import Value
from . import convert
from .args import integer, shape as shape_arg
from .held import holds_result_shape
from .spec import MHLO_ONLY, AttrSpec, OpSpec, builder_method, fail, register, tensor_operand


def _rng_check(op, types, attributes, results, regions):
    a = tensor_operand(op, "a", types[0])
    b = tensor_operand(op, "b", types[1])
    shape = tensor_operand(op, "shape", types[2])
    r = results[0] if len(results) == 1 else None
    if not isinstance(r, TensorType):
        fail(op, f"needs one tensor result, got {results}")
    dist = attributes["rng_distribution"].value
    kinds = ("float",) if dist == "NORMAL" else ("float", "sint", "uint", "bool")
    for n, t in (("a", a), ("b", b)):
        if t.rank != 0 or t.element_type is not r.element_type:
            fail(op, f"operand {n} must be tensor<{r.element_type.name}> (a scalar of the result's "
                     f"element type), got {t}")
    if r.element_type.kind not in kinds:
        fail(op, f"{dist} needs a result with {' or '.join(kinds)} elements, got {r}")
    if shape.rank != 1 or shape.element_type.kind not in ("sint", "uint"):
        fail(op, f"operand shape must be a 1-D integer tensor, got {shape}")
    if shape.shape[0] != r.rank:
        fail(op, f"operand shape has {shape.shape[0]} entries but the result {r} has rank "
                 f"{r.rank}")


register(OpSpec("rng", ("a", "b", "shape"),
                {"rng_distribution": AttrSpec(rng_distribution, True)}, check=_rng_check,
                operand_check=holds_result_shape(2, "shape"),
                doc="UNIFORM in [a, b) or NORMAL with mean a and standard deviation b",
                pretty=pf.RNG))


@builder_method
def rng(b, lo, hi, shape, distribution="UNIFORM", *, location=None) -> Value:
    """Random tensor of ``shape`` (a tuple of ints): UNIFORM in [lo, hi), or NORMAL with mean
    ``lo`` and standard deviation ``hi``. ``lo`` and ``hi`` are scalar Values."""
    shape = shape_arg("rng", "shape", shape)
    et = getattr(getattr(lo, "type", None), "element_type", None)
    if et is None:
        fail("rng", f"operand a must be a scalar tensor Value, got {lo!r:.60}")
    try:
        result = tensor(shape, et)
    except ValueError as e:
        fail("rng", f"shape: {e}")
    dims = b.constant(np.asarray(shape, dtype=np.int64).reshape(len(shape)))
    return b.create("rng", (lo, hi, dims), {"rng_distribution": distribution},
                    (result,), location=location).results[0]


def _rbg_check(op, types, attributes, results, regions):
    state = tensor_operand(op, "initial_state", types[0])
    if len(results) != 2:
        fail(op, f"has 2 results (output_state, output), got {len(results)}")
    if results[0] != state:
        fail(op, f"result output_state must have the type of initial_state {state}, got "
                 f"{results[0]}")
    out = results[1]
    if not isinstance(out, TensorType) or out.element_type.kind not in ("sint", "uint", "float"):
        fail(op, f"result output must be an integer or float tensor, got {out}")
    if out.element_type.kind != "uint":
        # StableHLO allows them, but XLA (jaxlib 0.10.2, CPU) silently generates unsigned
        # integers of the same width instead: the program's results have another dtype
        # than its signature says, and ops using them fail XLA's verifier.
        u = f"ui{out.element_type.bits}"
        fail(op, f"result output {out} must have unsigned integer elements: XLA generates "
                 f"{u} bits for any other element type, whatever the result type says; ask "
                 f"for {u} and bitcast_convert or convert the bits")
    if state.rank != 1 or state.element_type.kind not in ("sint", "uint"):
        fail(op, f"operand initial_state must be a 1-D integer tensor, got {state}")
    # What XLA compiles, measured on jaxlib 0.10.2 for XLA:CPU and XLA:TPU (libtpu, v5e): each
    # other state passes jaxlib's verifier and fails in XLA's rng expander, naming no op.
    # THREE_FRY and PHILOX take unsigned 64-bit words only, as StableHLO's spec says. DEFAULT
    # is the backend's own algorithm: XLA:CPU's is PHILOX (2 or 3 ui64 words;
    # xla_cpu.default_rng_state refuses the rest there), XLA:TPU's takes 2 words of any 32-
    # or 64-bit integer type; no backend takes what is refused here.
    alg = attributes["rng_algorithm"].value
    n, et = state.shape[0], state.element_type
    if alg == "DEFAULT":
        if not (n == 2 and et.bits >= 32 or n == 3 and et is ui64):
            fail(op, f"DEFAULT needs an initial_state of 2 words of a 32- or 64-bit integer "
                     f"type or 3 ui64 words, got {state}: XLA fails on any other (XLA:CPU's "
                     f"default is PHILOX, on tensor<2xui64> or tensor<3xui64>; XLA:TPU's "
                     f"takes 2 words)")
        return
    need = (2,) if alg == "THREE_FRY" else (2, 3)
    if et is not ui64 or n not in need:
        fail(op, f"{alg} needs initial_state "
                 f"{' or '.join(f'tensor<{k}xui64>' for k in need)}, got {state}: XLA "
                 f"computes it on unsigned 64-bit words and fails on any other state (JAX's "
                 f"4 x ui32 keys are 2 ui64 words: reshape to 2x2 and bitcast_convert)")


register(OpSpec("rng_bit_generator", ("initial_state",),
                {"rng_algorithm": AttrSpec(rng_algorithm, True)}, check=_rbg_check,
                doc="deterministic random bits from a state; returns the "
                                      "next state and the bits", pretty=pf.RNG_BIT_GENERATOR))


@builder_method
def rng_bit_generator(b, initial_state, shape, element_type, algorithm="DEFAULT", *,
                      location=None) -> tuple:
    """Returns (output_state, random bits of ``shape`` and ``element_type``)."""
    try:
        out = tensor(shape, element_type)
    except (TypeError, ValueError) as e:
        fail("rng_bit_generator", f"result type: {e}")
    return b.create("rng_bit_generator", (initial_state,), {"rng_algorithm": algorithm},
                    (initial_state.type, out), location=location).results


_i64 = convert.i64


register(OpSpec("xla.rng_get_and_update_state", (), {"delta": AttrSpec(_i64, True)},
                infer=lambda op, t, a: (tensor((2,), ui64),), dialects=MHLO_ONLY,
                pretty=pf.ATTRS_ONLY,
                doc="XLA's global rng state before adding delta (internal to XLA's rng "
                    "lowering)"))


@builder_method
def rng_get_and_update_state(b, delta: int, *, location=None) -> Value:
    delta = integer("xla.rng_get_and_update_state", "delta", delta)
    return b.create("xla.rng_get_and_update_state", (), {"delta": delta},
                    location=location).results[0]
