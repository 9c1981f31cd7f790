"""Pallas kernels in interpret mode through lower.jax.jit: the kernel's body run over its grid
as XLA ops, as jax.jit runs it, the numbers compared exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj

pl = pytest.importorskip("jax.experimental.pallas")

X = np.arange(32, dtype=np.float32).reshape(4, 8)
Y = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)


def _same(fn, *args):
    want, got = jax.jit(fn)(*args), lj.jit(fn)(*args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _elementwise(x, y):
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * 2 + y_ref[...]
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=True)(x, y)


def _tiled(x, y):
    """A grid of 2x2 blocks, each its own program (program_id picks a per-block offset)."""
    def kernel(x_ref, y_ref, o_ref):
        i, j = pl.program_id(0), pl.program_id(1)
        o_ref[...] = x_ref[...] - y_ref[...] + (i * 10 + j).astype(jnp.float32)
    spec = pl.BlockSpec((2, 4), lambda i, j: (i, j))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          grid=(2, 2), in_specs=[spec, spec], out_specs=spec,
                          interpret=True)(x, y)


def _row_sums(x, y):
    """An output block revisited along the grid's last axis: an accumulation."""
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        o_ref[...] += x_ref[...].sum(axis=1, keepdims=True)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4, 1), x.dtype), grid=(2,),
                          in_specs=[pl.BlockSpec((4, 4), lambda k: (0, k))],
                          out_specs=pl.BlockSpec((4, 1), lambda k: (0, 0)),
                          interpret=True)(x)


def _scoped(x, y):
    """A scratch Ref scoped inside the kernel (pl.run_scoped)."""
    def kernel(x_ref, y_ref, o_ref):
        def inner(s_ref):
            s_ref[...] = x_ref[...] * 3
            o_ref[...] = s_ref[...] + y_ref[...]
        pltpu = pytest.importorskip("jax.experimental.pallas.tpu")  # (a memory space)
        pl.run_scoped(inner, pltpu.VMEM(x_ref.shape, x_ref.dtype))
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=True)(x, y)


@pytest.mark.parametrize("fn", [_elementwise, _tiled, _row_sums, _scoped],
                         ids=["elementwise", "tiled-grid", "accumulate", "run-scoped"])
def test_interpreted_kernels_match_jax_jit(fn):
    _same(fn, X, Y)


def test_a_compiled_kernel_is_refused_clearly():
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    def f(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    with pytest.raises(ValueError, match="Only interpret mode is supported on CPU"):
        jax.jit(f).lower(X)
    with pytest.raises(ValueError, match="Only interpret mode is supported on CPU"):
        lj.lower(f, X, platform="cpu")
    with pytest.raises(NotImplementedError, match="pass interpret=True"):
        lj.lower(f, X, platform="tpu")


# -- kernel-language primitives jax's CPU rules lower as plain ops (the review of
# 2026-12-07: each was "no MHLO lowering rule") -------------------------------------------

def _kernel_call(kernel, out=None):
    return lambda x: pl.pallas_call(
        kernel, out_shape=out or jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)


def _hints(x_ref, o_ref):
    from jax.experimental.pallas import triton as plt
    rows = x_ref[pl.ds(pl.multiple_of(jnp.int32(0), 2), 2), :]
    o_ref[...] = jnp.concatenate([rows, rows]) * \
        plt.max_contiguous(jnp.arange(8), 8).astype(jnp.float32)


def _reciprocals(x_ref, o_ref):
    x = x_ref[...] + 1
    o_ref[...] = pl.reciprocal(x) + 10 * pl.reciprocal(x, approx=True)


def _rolls(x_ref, o_ref):
    from jax.experimental.pallas import tpu as pltpu
    x = x_ref[...]
    shift = (x_ref[0, 1] - 6).astype(jnp.int32)  # -5 at run time: rolled by 3 along 8
    o_ref[...] = pltpu.roll(x, 3, 1) + 100 * pltpu.roll(x, shift, 1) + \
        1000 * pltpu.roll(x, 1, 1, stride=2, stride_axis=0)


def _debug_check(x_ref, o_ref):
    pl.debug_check(x_ref[0, 0] >= 0, "negative")
    o_ref[...] = x_ref[...]


@pytest.mark.parametrize("kernel", [_hints, _reciprocals, _rolls, _debug_check],
                         ids=lambda k: k.__name__.strip("_"))
def test_kernel_language_primitives(kernel):
    _same(_kernel_call(kernel), X)


@pytest.mark.parametrize("dtype, shape", [(jnp.int32, (4, 8)), (jnp.int16, (8, 8)),
                                          (jnp.float32, (4, 8))])
def test_tpu_bitcast_packs_the_second_minor_dimension(dtype, shape):
    """f32 [4, 8] as i32 (same width), as i16 [8, 8] (unpacked), and i8 [16, 8] -> f32 [4, 8]
    (packed), jax's CPU rule's layout of the bits."""
    from jax.experimental.pallas import tpu as pltpu

    def kernel(x_ref, o_ref):
        o_ref[...] = pltpu.bitcast(x_ref[...], dtype)
    _same(_kernel_call(kernel, jax.ShapeDtypeStruct(shape, dtype)), X)
    if dtype == jnp.float32:
        packed = (np.arange(128) % 97).astype(np.int8).reshape(16, 8)

        def pack(x_ref, o_ref):
            o_ref[...] = pltpu.bitcast(x_ref[...], jnp.float32)
        _same(_kernel_call(pack, jax.ShapeDtypeStruct((4, 8), jnp.float32)), packed)


@pytest.mark.parametrize("equation, sizes", [("ab->ba", {}), ("a(bc)->bac", {"b": 2}),
                                             ("ab->(ba)", {})])
def test_tpu_einshape_in_a_kernel_and_outside(equation, sizes):
    """Pallas TPU's einshape: in a kernel (einshape_lo, jax's helper traced by jax) and
    outside one (a hijax primitive, call_hi_primitive, expanded as jax's lowering expands
    it)."""
    from jax.experimental.pallas import tpu as pltpu
    want = jax.eval_shape(lambda x: pltpu.einshape(equation, x, **sizes), X)

    def kernel(x_ref, o_ref):
        o_ref[...] = pltpu.einshape(equation, x_ref[...], **sizes)
    _same(_kernel_call(kernel, want), X)
    _same(lambda x: pltpu.einshape(equation, x, **sizes) * 2, X)


@pytest.mark.parametrize("shift, width", [(np.uint32(2**32 - 1), 5), (np.uint32(2**31 + 1), 5),
                                          (np.int8(-3), 200)])
def test_roll_reads_its_shift_as_int32(shift, width):
    """jnp.roll converts the shift to int32 first (a ui32 2**32-1 rolls by -1); an 8-bit shift
    on an axis longer than its type holds (the remainder's constant overflowed int8)."""
    from jax.experimental.pallas import tpu as pltpu
    x = np.arange(width, dtype=np.float32).reshape(1, width)

    def kernel(x_ref, s_ref, o_ref):
        o_ref[...] = pltpu.roll(x_ref[...], s_ref[0], 1)

    def f(x, s):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              interpret=True)(x, s)
    _same(f, x, np.array([shift]))
