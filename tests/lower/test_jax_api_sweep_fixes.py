"""What a sweep of jax's public numerical API through lower.jax.jit against jax.jit (~8,900
comparisons, bit for bit) found apart; each is compared with jax.jit here, bit for bit."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

import lower.jax as lj

RNG = np.random.default_rng(11)


def _bits_equal(ours, theirs):
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.view(np.uint8), theirs.view(np.uint8))


def _same(f, *args):
    _bits_equal(lj.jit(f)(*args), jax.jit(f)(*args))


def test_a_complex_cube_multiplies_as_jax_does():
    z = (RNG.standard_normal(64) + 1j * RNG.standard_normal(64)).astype(np.complex64)
    _same(lambda v: v ** 3, z)
    _same(lambda v: lax.integer_pow(v, 3), z)


def test_conj_of_a_real_array_has_a_positive_zero_imaginary_part():
    _same(lax.conj, np.array([1.5, -2.0], np.float32))
    _same(lax.conj, np.array([1.5, -2.0], np.float64).astype(np.float32))


@pytest.mark.parametrize("dtype, fill", [(np.uint32, -1), (np.int8, 300), (np.int32, np.nan),
                                         (np.int32, 1e10), (np.uint8, 2.5)])
def test_a_gather_fill_the_dtype_cannot_hold_is_cast_as_jax_casts_it(dtype, fill):
    x = np.arange(3, dtype=dtype)
    _same(lambda v, i: v.at[i].get(mode="fill", fill_value=fill), x, np.array([0, 7]))


def test_an_inverse_real_fft_of_nothing():
    _same(jnp.fft.irfft, np.zeros((0,), np.complex64))


@pytest.mark.parametrize("preset", ["F32_F32_F32", "BF16_BF16_F32", "BF16_BF16_F32_X3",
                                    "F16_F16_F16", "DEFAULT"])
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_dot_algorithm_presets_compute_as_jax_jit_on_cpu(preset, dtype):
    a = RNG.standard_normal((3, 4)).astype(dtype)
    _same(lambda x: lax.dot(x, x.T, precision=getattr(lax.DotAlgorithmPreset, preset)), a)


def test_attention_on_bf16_uses_a_dot_algorithm_and_runs():
    q = RNG.standard_normal((1, 4, 1, 5)).astype(ml_dtypes.bfloat16)
    _same(lambda v: jax.nn.dot_product_attention(v, v, v), q)


def test_presets_xla_cpu_does_not_compute_are_refused_as_jax_refuses_them():
    a = np.ones((2, 2), np.float32)
    f = lambda x: lax.dot(x, x, precision=lax.DotAlgorithmPreset.TF32_TF32_F32)  # noqa: E731
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        jax.jit(f)(a)
    with pytest.raises(ValueError, match="not supported by dot_general on CPU"):
        lj.jit(f)(a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3)])
def test_cholesky_and_triangular_solves_are_lapacks_on_cpu_as_in_jax_jit(dtype, shape):
    """jax.jit calls LAPACK's potrf and trsm on CPU; XLA's own expansions of cholesky and
    triangular_solve differ from them by an ulp or a few: inv, solve, cholesky, the scipy
    solves were off by that much."""
    a = RNG.standard_normal(shape) + (1j * RNG.standard_normal(shape) if dtype == np.complex64
                                      else 0)
    spd = (a @ np.swapaxes(a.conj(), -1, -2) + 3 * np.eye(shape[-1])).astype(dtype)
    b = RNG.standard_normal(shape[:-1] + (2,)).astype(dtype)
    with jax.enable_x64(dtype == np.float64):
        _same(jnp.linalg.cholesky, spd)
        _same(jnp.linalg.inv, spd)
        _same(jnp.linalg.solve, spd, b)
        _same(lambda x, y: jax.scipy.linalg.solve_triangular(x, y, lower=True, trans="C"),
              spd, b)
    # not positive definite: NaN, as jax.jit's rule makes it
    _same(jnp.linalg.cholesky, -spd.astype(np.complex64 if dtype == np.complex64
                                           else np.float32))


@pytest.mark.parametrize("preset", ["BF16_BF16_F32", "BF16_BF16_F32_X9", "TF32_TF32_F32",
                                    "F16_F16_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"])
def test_a_dot_algorithm_is_the_attribute_jax_writes(preset):
    """For platforms that heed it (and on CPU, which ignores it): the algorithm attribute as
    jax's text has it, read from our StableHLO print."""
    import re
    x = (np.ones((2, 3), ml_dtypes.float8_e4m3fn) if "F8" in preset else
         np.ones((2, 3), np.float32))

    def f(v):
        return lax.dot(v, v.T, precision=getattr(lax.DotAlgorithmPreset, preset),
                       preferred_element_type=jnp.float32)
    ours = lj.lower(f, x, platform="tpu").module.to_text(dialect="stablehlo", pretty=True)
    theirs = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text()
    algorithm = re.compile(r"algorithm = <[^>]*>")
    assert algorithm.findall(ours) == algorithm.findall(theirs) != []


@pytest.mark.parametrize("preset", ["DEFAULT", "BF16_BF16_F32"])
def test_a_dot_algorithm_over_operands_of_two_types(preset):
    a, b = np.ones((2, 5), ml_dtypes.bfloat16), np.ones((5,), np.float32)
    _same(lambda x, y: lax.dot(x, y, precision=getattr(lax.DotAlgorithmPreset, preset)), a, b)


@pytest.mark.parametrize("dtype", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2,
                                   ml_dtypes.float8_e3m4])
def test_special_functions_of_8_bit_floats_compute_as_jax_does(dtype):
    """bessel_i0e in f32, the igamma family in the 8-bit type itself (jax upcasts bf16 and
    f16 only); they were refused (float8's numpy kind is 'V') or computed in f32."""
    a = np.array([0.5, 1, 2, 3], dtype)
    x = np.array([1, 2, 0.5, 3], dtype)
    for f in (lambda p, q: lax.bessel_i0e(q), lax.igamma, lax.igammac, lax.igamma_grad_a,
              lax.random_gamma_grad):
        _same(f, a, x)


def test_complex_to_bool_takes_the_real_part_as_jax_does():
    z = np.array([1 + 0j, 0 + 1j, -0.0 + 1j, complex(0, np.nan), 0j, 2j + 3], np.complex64)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)  # (jax's, tracing)
        _same(lambda v: v.astype(bool), z)


_X300 = np.arange(300, dtype=np.float32)
_POINT = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))


@pytest.mark.parametrize("indices", [np.array([50, 100, 255, 0], np.uint8),
                                     np.array([50, 100, 127, -1], np.int8),
                                     np.array([200, 250, 5], np.uint8)])
def test_a_fill_gather_with_narrow_indices_into_a_longer_axis_keeps_valid_ones(indices):
    """The bound 299 cast to uint8 wrapped to 43 and masked valid indices as out of bounds
    (fill): jax converts the indices to int32 before masking (lax.gather and jnp.take)."""
    _same(lambda x, i: lax.gather(x, i[:, None], _POINT, (1,), fill_value=-1.0,
                                  mode=lax.GatherScatterMode.FILL_OR_DROP), _X300, indices)
    _same(lambda x, i: jnp.take(x, i, mode="fill", fill_value=-1), _X300, indices)


@pytest.mark.parametrize("dtype, starts", [(np.uint8, [200, 250]), (np.int8, [100, 20])])
def test_a_clip_scatter_with_narrow_indices_clamps_to_the_right_bound(dtype, starts):
    """vmapped dynamic_update_slice is a CLIP scatter with the user's index type: the clamp
    bound 297 wrapped in uint8 to 41 and every update landed there (jax bounds it by the
    type's largest value first); lax.scatter_add likewise."""
    rows = np.zeros((2, 300), np.float32)
    _same(jax.vmap(lambda r, j: lax.dynamic_update_slice(r, jnp.ones(3, jnp.float32), (j,))),
          rows, np.array(starts, dtype))
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    _same(lambda x, i: lax.scatter_add(x, i[:, None], jnp.ones(2, jnp.float32), dn,
                                       mode=lax.GatherScatterMode.CLIP),
          _X300, np.array(starts, dtype))


def test_an_x64_fill_gather_narrows_wide_indices_to_int32_as_jax_does():
    """Under x64 jax converts a fill gather's int64 indices to int32 before gathering and
    masking (its dimensions fit int32), so 2**32 + 1 wraps to 1 and reads element 1: copied,
    not chosen (ours filled it)."""
    try:
        jax.config.update("jax_enable_x64", True)
        _same(lambda x, i: lax.gather(x, i[:, None], _POINT, (1,), fill_value=-1.0,
                                      mode=lax.GatherScatterMode.FILL_OR_DROP),
              np.arange(10, dtype=np.float32), np.array([2**32 + 1, 3, 2**40, -1], np.int64))
    finally:
        jax.config.update("jax_enable_x64", False)


# -- a review of 2026-12-07 (ninth session): edge shapes and donation ------------------------

@pytest.mark.parametrize("name", ["inv", "vmap_index", "take_along_axis", "take_along_rows",
                                  "searchsorted"])
def test_gathers_over_an_empty_batch_run_as_jax_jit_runs_them(name):
    f, args = {
        "inv": (jnp.linalg.inv, (np.zeros((0, 3, 3), np.float32),)),
        "vmap_index": (jax.vmap(lambda x, i: x[i]), (np.zeros((0, 3), np.float32),
                                                     np.zeros((0,), np.int32))),
        "take_along_axis": (lambda a, i: jnp.take_along_axis(a, i, axis=-1),
                            (np.zeros((0, 5), np.float32), np.zeros((0, 2), np.int32))),
        "take_along_rows": (lambda a, i: jnp.take_along_axis(a, i, axis=0),
                            (np.zeros((3, 0), np.float32), np.zeros((2, 0), np.int32))),
        "searchsorted": (jax.vmap(jnp.searchsorted), (np.zeros((0, 4), np.float32),
                                                      np.zeros((0, 2), np.float32))),
    }[name]
    got, want = lj.jit(f)(*args), jax.jit(f)(*args)
    assert got.shape == want.shape and got.dtype == want.dtype


@pytest.mark.parametrize("fn", [jnp.fft.irfft, jnp.fft.irfftn, jnp.fft.hfft])
def test_an_inverse_real_fft_of_a_last_axis_of_one(fn):
    x = np.ones((2, 1), np.complex64)
    got, want = lj.jit(fn)(x), jax.jit(fn)(x)
    assert got.shape == want.shape == (2, 0) and got.dtype == want.dtype


@pytest.mark.parametrize("donate", [0, (0, 1), 1])
def test_one_array_donated_and_passed_again_is_refused_as_jax_jit_refuses_it(donate):
    y = jnp.arange(4.0)
    errors = []
    for jit in (jax.jit, lj.jit):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ("Some donated buffers were not usable")
            with pytest.raises(jax.errors.JaxRuntimeError) as e:
                jit(lambda a, b: a + b, donate_argnums=donate)(y, y)
        errors.append(str(e.value))
        assert not y.is_deleted()
    assert errors[1] == errors[0]
    # given twice, donated nowhere: it runs
    np.testing.assert_array_equal(lj.jit(lambda a, b: a + b)(y, y), [0, 2, 4, 6])


def test_lower_trace_and_calls_share_one_trace_per_signature_as_jax_jit():
    counts = []

    def make():
        def fn(x):
            counts.append(1)
            return x * 2
        return fn
    for jit in (jax.jit, lj.jit):
        counts.clear()
        j = jit(make())
        x = np.ones(3, np.float32)
        j.lower(x)
        j.lower(x)
        j.trace(x)
        j(x)
        j(x)
        first = len(counts)
        j(np.ones(4, np.float32))  # (another signature: traced again)
        assert (first, len(counts)) == (1, 2), jit


def _user_prng(mult, name):
    from jax.extend.random import define_prng_impl

    def seed(s):
        return jnp.stack([jnp.uint32(s), jnp.uint32(s) * jnp.uint32(mult)])

    def split(k, shape):
        return jnp.broadcast_to(k, (*shape, 2)) + jnp.uint32(mult)

    def random_bits(k, bit_width, shape):
        return jnp.broadcast_to(k[0] * jnp.uint32(mult) + k[1] + jnp.arange(
            shape[-1] if shape else 1, dtype=jnp.uint32), shape).astype(jnp.uint32)
    return define_prng_impl(key_shape=(2,), seed=seed, split=split,
                            fold_in=lambda k, d: k ^ jnp.uint32(d), random_bits=random_bits,
                            name=name)


def test_keys_of_two_prngs_printing_alike_are_two_signatures():
    # (both impls have jax's default tag: their key dtypes print key<?> but differ)
    a, b = _user_prng(3, "review_impl_a"), _user_prng(7, "review_impl_b")
    ka, kb = jax.random.key(5, impl=a), jax.random.key(5, impl=b)
    assert str(ka.dtype) == str(kb.dtype) and ka.dtype != kb.dtype

    def f(k):
        return jax.random.bits(k, (4,))
    g = lj.jit(f)
    for k in (ka, kb):
        np.testing.assert_array_equal(np.asarray(g(k)), np.asarray(jax.jit(f)(k)))
    assert g.cache_size == 2


def test_static_minus_zero_inside_dataclasses_and_frozensets_is_its_own_signature():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        offset: float

    def f(x, cfg):
        return x * (cfg.offset if isinstance(cfg, Cfg) else next(iter(cfg)))
    x = np.ones(2, np.float32)
    for zero, minus in ((Cfg(0.0), Cfg(-0.0)), (frozenset({0.0}), frozenset({-0.0}))):
        j = lj.jit(f, static_argnums=1)
        assert not np.signbit(j(x, zero)).any()
        assert np.signbit(j(x, minus)).all()  # (not the first one's program)


@pytest.mark.parametrize("f", [
    lambda a: lax.top_k(a, 2),
    lambda a: jnp.dot(a, a, preferred_element_type=jnp.int32),
], ids=["top_k", "dot_into_int32"])
def test_a_program_xla_refuses_raises_jax_s_runtime_error(f):
    # XLA:CPU refuses both for int4 operands (jax.jit: JaxRuntimeError, "custom element
    # sizes on non-sub-byte types"); a drop-in raises what jax.jit raises, verify's
    # CompileError as its cause.
    x = np.array([3, -8, 7], ml_dtypes.int4)
    with pytest.raises(jax.errors.JaxRuntimeError):
        jax.jit(f)(x)
    with pytest.raises(jax.errors.JaxRuntimeError) as e:
        lj.jit(f)(x)
    from verify.errors import CompileError
    assert isinstance(e.value.__cause__, CompileError)
