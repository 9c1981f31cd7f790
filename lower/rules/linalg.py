"""Rules for linear algebra primitives: dot_general, cholesky, triangular_solve, fft,
``symmetric_product`` (``alpha * a @ a^T + beta * c``), ``cholesky_update`` (Givens
rotations, unrolled as jax's ``lower_fun`` rule unrolls them) and ``ragged_dot_general``
(jax's decomposition, ``_ragged_dot_general_impl``, into masks and one dot_general)."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo

from .. import lax as L
from ..semantics import full_like, jax_convert_hlo
from ..mlir import lower_fun, register_lowering

_PRECISIONS = {None: None, "DEFAULT": "DEFAULT", "HIGH": "HIGH", "HIGHEST": "HIGHEST"}


def _precision_config(precision):
    """jax's precision param: None, one Precision, or a pair -> two mhlo precisions. A dot
    algorithm (a preset, or one set by ``jax.default_matmul_precision``) is no precision:
    None, as jax's ``_full_precision`` makes it DEFAULT for convolutions (dot_general takes
    its algorithm before asking this)."""
    if precision is None or _is_algorithm(precision):
        return None
    pair = precision if isinstance(precision, (tuple, list)) else (precision, precision)
    names = [getattr(p, "name", p) for p in pair]
    if all(n is None for n in names):
        return None
    return [n or "DEFAULT" for n in names]


# The dot algorithm presets XLA:CPU computes (jax.jit refuses the others on CPU; XLA:CPU
# ignores the algorithm attribute, so there a preset is its conversions).
_CPU_PRESETS = frozenset({"DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64",
                          "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"})
# jax's presets as dot algorithms: (lhs, rhs, accumulation, primitive operations); the
# ANY_F8 ones take the operands' own 8-bit types and accumulate in f32.
_PRESET_ALGORITHMS = {
    "F16_F16_F16": ("f16", "f16", "f16", 1), "F16_F16_F32": ("f16", "f16", "f32", 1),
    "BF16_BF16_BF16": ("bf16", "bf16", "bf16", 1), "BF16_BF16_F32": ("bf16", "bf16", "f32", 1),
    "BF16_BF16_F32_X3": ("bf16", "bf16", "f32", 3), "BF16_BF16_F32_X6": ("bf16", "bf16", "f32", 6),
    "BF16_BF16_F32_X9": ("bf16", "bf16", "f32", 9), "TF32_TF32_F32": ("tf32", "tf32", "f32", 1),
    "TF32_TF32_F32_X3": ("tf32", "tf32", "f32", 3), "F32_F32_F32": ("f32", "f32", "f32", 1),
    "F64_F64_F64": ("f64", "f64", "f64", 1)}


def _is_algorithm(precision) -> bool:
    return type(precision).__name__ in ("DotAlgorithm", "DotAlgorithmPreset")


def _type_name(dtype) -> str:
    from mhlo_ir.dtypes import from_numpy
    return from_numpy(np.dtype(dtype)).name


def _algorithm_attr(precision, lhs_dtype, rhs_dtype):
    """The DotAlgorithm jax's ``_convert_to_hlo_attr`` makes of ``precision`` (None for
    DEFAULT)."""
    name = getattr(precision, "name", None)
    if type(precision).__name__ == "DotAlgorithm":
        return hlo.DotAlgorithm(
            _type_name(precision.lhs_precision_type), _type_name(precision.rhs_precision_type),
            _type_name(precision.accumulation_type), precision.lhs_component_count,
            precision.rhs_component_count, precision.num_primitive_operations,
            bool(precision.allow_imprecise_accumulation))
    if name == "DEFAULT":
        return None
    if name.startswith("ANY_F8_ANY_F8"):
        return hlo.DotAlgorithm(_type_name(lhs_dtype), _type_name(rhs_dtype), "f32",
                                allow_imprecise_accumulation=name.endswith("F32_FAST_ACCUM"))
    lhs, rhs, acc, n = _PRESET_ALGORITHMS[name]
    return hlo.DotAlgorithm(lhs, rhs, acc, num_primitive_operations=n)


def _dot_with_algorithm(ctx, lhs, rhs, dims, precision):
    """dot_general with a jax dot algorithm (``precision=lax.DotAlgorithmPreset.X``), as
    jax's rule lowers it: the operands converted to the algorithm's input types, the product
    in its accumulation type (then converted to the result's), the algorithm attribute on
    the op (on CPU only the presets XLA:CPU computes, as jax.jit checks)."""
    import sys

    from ..semantics import convert_hlo
    if ctx.module_context.platform == "cpu" and not (
            type(precision).__name__ == "DotAlgorithmPreset" and precision.name in _CPU_PRESETS):
        raise ValueError(f"The precision '{precision}' is not supported by dot_general on "
                         "CPU (as in jax.jit)")
    compute = getattr(sys.modules.get("jax._src.lax.lax"), "get_algorithm_compute_types", None)
    if compute is None:  # pragma: no cover - a jax without it has no presets either
        raise NotImplementedError(f"'dot_general' with the dot algorithm {precision}")
    lhs_aval, rhs_aval = ctx.avals_in[:2]
    out_dtype = np.dtype(ctx.avals_out[0].dtype)
    lhs_dt, rhs_dt, acc_dt = compute(precision, lhs_aval.dtype, rhs_aval.dtype, out_dtype)
    b = ctx.builder
    if lhs_dt is not None and np.dtype(lhs_dt) != np.dtype(lhs_aval.dtype):
        lhs = convert_hlo(b, lhs, np.dtype(lhs_dt))
    if rhs_dt is not None and np.dtype(rhs_dt) != np.dtype(rhs_aval.dtype):
        rhs = convert_hlo(b, rhs, np.dtype(rhs_dt))
    acc = out_dtype if acc_dt is None else np.dtype(acc_dt)
    if lhs.type.element_type is not rhs.type.element_type:
        # (operands of two types the algorithm keeps: both in the accumulation type, as
        # the path without an algorithm makes mixed operands)
        lhs, rhs = convert_hlo(b, lhs, acc), convert_hlo(b, rhs, acc)
    (lc, rc), (lb, rb) = dims
    out = b.dot_general(lhs, rhs, (lc, rc), (lb, rb), precision_config=["DEFAULT", "DEFAULT"],
                        result_element_type=None if acc == lhs.type.dtype else acc,
                        algorithm=_algorithm_attr(precision, lhs.type.dtype, rhs.type.dtype))
    return [out if acc == out_dtype else convert_hlo(b, out, out_dtype)]


def _dot_general(ctx, lhs, rhs, *, dimension_numbers, precision=None,
                 preferred_element_type=None, out_sharding=None, **_):
    if _is_algorithm(precision):
        return _dot_with_algorithm(ctx, lhs, rhs, dimension_numbers, precision)
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = np.dtype(ctx.avals_out[0].dtype)
    if lhs.type.element_type is not rhs.type.element_type and \
            not _keeps_mixed(ctx.module_context.platform, lhs.type.element_type,
                             rhs.type.element_type):
        b = ctx.builder
        lhs, rhs = jax_convert_hlo(b, lhs, out_dtype), jax_convert_hlo(b, rhs, out_dtype)
    mixed = lhs.type.element_type is not rhs.type.element_type
    result = None if not mixed and out_dtype == lhs.type.dtype else out_dtype
    # (jax writes the precisions always, DEFAULT where none is asked for)
    return [ctx.builder.dot_general(lhs, rhs, (lc, rc), (lb, rb),
                                   precision_config=_precision_config(precision) or
                                   ["DEFAULT", "DEFAULT"], result_element_type=result)]


_FP8 = frozenset({"f8E4M3FN", "f8E5M2", "f8E5M2FNUZ", "f8E4M3FNUZ", "f8E3M4", "f8E4M3",
                  "f8E8M0FNU"})


def _keeps_mixed(platform, lhs_et, rhs_et) -> bool:
    """Whether jax's rule (``_handle_dot_precision``) leaves operands of two element types
    as they are: on TPU when both are floats or integers, elsewhere when both are 8-bit
    floats; otherwise both are converted to the result's type, which XLA's backends
    compute (each fails on some other pairs its type system accepts)."""
    if platform == "tpu":
        return all(et.kind in ("float", "sint", "uint") for et in (lhs_et, rhs_et))
    return lhs_et.name in _FP8 and rhs_et.name in _FP8


register_lowering("dot_general", _dot_general)


def _cholesky(ctx, x, **_):
    return [ctx.builder.cholesky(x, lower=True)]


register_lowering("cholesky", _cholesky)


def _triangular_solve(ctx, a, rhs, *, left_side, lower, transpose_a, conjugate_a,
                      unit_diagonal):
    b = ctx.builder
    if conjugate_a and not transpose_a:
        a = b.chlo_conj(a)
    mode = "NO_TRANSPOSE" if not transpose_a else ("ADJOINT" if conjugate_a else "TRANSPOSE")
    return [b.triangular_solve(a, rhs, left_side=left_side, lower=lower,
                               unit_diagonal=unit_diagonal, transpose_a=mode)]


register_lowering("triangular_solve", _triangular_solve)

_FFT_TYPES = {0: "FFT", 1: "IFFT", 2: "RFFT", 3: "IRFFT"}


def _fft(ctx, x, *, fft_type, fft_lengths):
    name = getattr(fft_type, "name", None) or _FFT_TYPES[int(fft_type)]
    return [ctx.builder.fft(x, name, fft_lengths)]


register_lowering("fft", _fft)


# -- symmetric_product, cholesky_update ---------------------------------------------------------

def _scaled(b, factor, x):
    return b.multiply(full_like(b, factor, x.type), x)


def _symmetric_product(ctx, a, c, *, alpha, beta):
    b = ctx.builder
    nd = len(a.type.shape)
    batch = tuple(range(nd - 2))
    aat = b.dot_general(a, a, ((nd - 1,), (nd - 1,)), (batch, batch),
                        precision_config=_precision_config("HIGHEST"))
    return [b.add(_scaled(b, alpha, aat), _scaled(b, beta, c))]


register_lowering("symmetric_product", _symmetric_product)


def _cholesky_update(ctx, r, z):
    """Row k of R and z rotate by the Givens rotation zeroing z[k] against R[k, k]; a zero
    z[k] is the identity rotation (jax's cond, here a select)."""
    b = ctx.builder
    n = r.type.shape[0]
    rows = [b.reshape(b.slice(r, [k, 0], [k + 1, n]), (n,)) for k in range(n)]

    def at(v, k):
        return b.reshape(b.slice(v, [k], [k + 1]), ())

    def const(v, like):
        return full_like(b, v, like.type)

    for k in range(n):
        x, y = at(rows[k], k), at(z, k)
        ax, ay = b.abs(x), b.abs(y)
        den = b.select(b.compare(ax, ay, "GT", "FLOAT"), ax, ay)
        xs, ys = b.divide(x, den), b.divide(y, den)
        rh = b.divide(const(1, x), b.sqrt(b.add(b.multiply(xs, xs), b.multiply(ys, ys))))
        zero = b.compare(y, const(0, y), "EQ", "FLOAT")
        c = b.select(zero, const(1, x), b.multiply(xs, rh))
        s = b.select(zero, const(0, x), b.negate(b.multiply(ys, rh)))
        cv, sv = (b.broadcast_in_dim(v, (n,), ()) for v in (c, s))
        row = rows[k]
        rows[k] = b.subtract(b.multiply(cv, row), b.multiply(sv, z))
        z = b.add(b.multiply(cv, z), b.multiply(sv, row))
    return [b.concatenate([b.reshape(row, (1, n)) for row in rows], 0)]


register_lowering("cholesky_update", _cholesky_update)


# -- ragged dot ----------------------------------------------------------------------------------

def _ragged_to_dense(x, gs, dim: int, axes):
    """``(g, *x.shape)``: slice j of x keeps the entries whose index along ``dim`` lies in
    group j (``gs`` is ``(*prefix, g)``: its sizes vary along x's dimensions ``axes``)."""
    shape = (gs.shape[-1], *x.shape)
    ends = L.cumsum(gs, axis=gs.ndim - 1)
    starts = L.sub(ends, gs)  # the exclusive sums
    order = sorted(range(len(axes)), key=lambda j: axes[j])
    perm = (gs.ndim - 1, *order)
    dims = (0, *sorted(a + 1 for a in axes))
    starts, ends = (L.broadcast_in_dim(L.transpose(v, perm), shape, dims) for v in (starts, ends))
    idx = L.iota(x, gs.dtype, shape, dim + 1)
    mask = L.and_(L.le(starts, idx), L.lt(idx, ends))
    return L.where(mask, L.broadcast_in_dim(x, shape, range(1, len(shape))), 0)


def _ragged_dot_general(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision=None,
                        preferred_element_type=None, group_offset=None, out_sharding=None):
    """jax's decomposition: the ragged operand expanded to one dense slice per group (zeros
    outside it), then one dot_general contracting or batching the group dimension."""
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported (nor "
                                  "by jax)")
    rd = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = rd.dot_dimension_numbers
    lc, rc, lb, rb = map(list, (lc, rc, lb, rb))
    (ragged,) = rd.lhs_ragged_dimensions

    def dot(x, y, dn):
        return L.dot_general(x, y, dn, precision=precision,
                             preferred_element_type=preferred_element_type)

    def incr(ds):
        return [d + 1 for d in ds]

    if ragged in lb:
        return dot(lhs, rhs, ((lc, rc), (lb, rb)))
    noncontract = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    contracting = ragged in lc
    prefix = lb + (lc[:lc.index(ragged)] if contracting else
                   noncontract[:noncontract.index(ragged)])
    gs = group_sizes
    if gs.ndim == 1:
        gs = L.broadcast_in_dim(gs, (*[lhs.shape[i] for i in prefix], gs.shape[0]),
                                (len(prefix),))
    dense = _ragged_to_dense(lhs, gs, ragged, prefix)
    if not contracting:
        (group,) = rd.rhs_group_dimensions
        return dot(dense, rhs, ((incr(lc) + [0], rc + [group]), (incr(lb), rb)))
    rhs_ragged = rc[lc.index(ragged)]
    rhs_dense = _ragged_to_dense(rhs, gs, rhs_ragged, rb + rc[:rc.index(rhs_ragged)])
    return dot(dense, rhs_dense, ((incr(lc), incr(rc)), ([0] + incr(lb), [0] + incr(rb))))


register_lowering("ragged_dot_general", lower_fun(_ragged_dot_general, multiple_results=False))
