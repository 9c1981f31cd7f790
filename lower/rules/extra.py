"""Rules for the remaining simple primitives of jax 0.10: chlo elementwise functions,
complex helpers, identities, split/tile, cholesky, triangular_solve, fft
(reduce_window_* are in windows.py)."""

from __future__ import annotations

import numpy as np

from mhlo_ir.builder import as_results

from ..mlir import register_lowering
from .elementwise import broadcast_operands

# jax primitive -> Builder method, same operands (chlo functions XLA can compile)
_DIRECT = {
    "acos": "chlo_acos", "acosh": "chlo_acosh", "asin": "chlo_asin", "asinh": "chlo_asinh",
    "atan": "chlo_atan", "atanh": "chlo_atanh", "cosh": "chlo_cosh", "sinh": "chlo_sinh",
    "bessel_i1e": "chlo_bessel_i1e", "erfc": "chlo_erfc", "polygamma": "chlo_polygamma",
    "zeta": "chlo_zeta", "mulhi": "mulhi", "complex": "complex",
}


def _direct(method):
    def rule(ctx, *args, **_):
        if len(args) > 1 and any(a.type.shape != args[0].type.shape for a in args):
            args = broadcast_operands(ctx, args)
        return [getattr(ctx.builder, method)(*args)]
    return rule


for _prim, _method in _DIRECT.items():
    register_lowering(_prim, _direct(_method))


def _identity(ctx, x, **_):
    return [x]


for _prim in ("stop_gradient", "copy"):
    register_lowering(_prim, _identity)


def _conj(ctx, x, *, input_dtype=None):
    """conj of a complex value; a real input (input_dtype real) becomes complex, as in JAX."""
    b = ctx.builder
    if x.type.element_type.kind != "complex":
        x = b.convert(x, np.dtype(ctx.avals_out[0].dtype))
    return [b.chlo_conj(x)]


register_lowering("conj", _conj)
register_lowering("square", lambda ctx, x, **_: [ctx.builder.multiply(x, x)])
register_lowering("add_any", lambda ctx, x, y, **_: [ctx.builder.add(x, y)])
register_lowering("optimization_barrier",
                  lambda ctx, *xs, **_: list(as_results(ctx.builder.optimization_barrier(*xs))))


def _split(ctx, x, *, sizes, axis):
    b = ctx.builder
    shape = x.type.shape
    outs, start = [], 0
    for n in sizes:
        lo = [0] * len(shape)
        hi = list(shape)
        lo[axis], hi[axis] = start, start + int(n)
        outs.append(b.slice(x, lo, hi))
        start += int(n)
    return outs


register_lowering("split", _split)


def _tile(ctx, x, *, reps):
    """tile: broadcast into an interleaved (rep, size) shape, then merge the pairs."""
    b = ctx.builder
    shape = x.type.shape
    reps = tuple(int(r) for r in reps)
    reps = (1,) * (len(shape) - len(reps)) + reps
    if len(reps) > len(shape):
        x = b.reshape(x, (1,) * (len(reps) - len(shape)) + shape)
        shape = x.type.shape
    wide = [d for r, s in zip(reps, shape) for d in (r, s)]
    y = b.broadcast_in_dim(x, wide, [2 * i + 1 for i in range(len(shape))])
    return [b.reshape(y, [r * s for r, s in zip(reps, shape)])]


register_lowering("tile", _tile)


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
