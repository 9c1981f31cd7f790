"""A sweep of lower.jax.jit against jax.jit itself: small functions over Python scalars of each
type, numpy and jax arrays, pytrees (dicts, namedtuples, None leaves), static, keyword, default
and donated arguments, zero-size arrays, constants and no arguments, with x64 off and on, and
calls jax.jit refuses. Results must match bit for bit, with the same pytree structure, dtypes and
shapes; refusals the same exception type and message. (One known difference: results are numpy
arrays, which carry no weak type: jax.jit's are jax Arrays, weakly typed where a Python scalar
made them.)"""

from __future__ import annotations

import collections
import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj

Pt = collections.namedtuple("Pt", "x y")
F32 = np.arange(6, dtype=np.float32).reshape(2, 3)
I32 = np.arange(4, dtype=np.int32)


def _defaults(x, y=2.0, *, z=3):
    return x * y + z


class _Scaled:
    def __init__(self):
        self.w = 2.0

    def f(self, x):
        return x * self.w


def _calls(*calls):
    """Each call as (args, kwargs)."""
    return [c if isinstance(c, tuple) and len(c) == 2 and isinstance(c[1], dict) else (c, {})
            for c in calls]


# name: (function, jit options, calls as (args, kwargs))
CASES = {
    "python_float": (lambda x: x * 2, {}, _calls((1.0,), (-0.0,), (1e-45,), (1e300,))),
    "python_int": (lambda x: x * 2, {}, _calls((3,), (2**31 - 1,), (-2**31,))),
    "python_bool": (lambda x: x & True, {}, _calls((True,))),
    "python_complex": (lambda x: x * 2, {}, _calls((1 + 2j,))),
    "numpy_scalars": (lambda x: x + 1, {}, _calls((np.float32(1.5),), (np.int8(127),),
                                                  (np.uint8(255),), (np.bool_(True),))),
    "small_floats": (lambda x: x / 3, {}, _calls((np.ones(3, np.float16),),
                                                 (jnp.ones(3, jnp.bfloat16),))),
    "wide_types": (lambda x: x * 2, {}, _calls((np.arange(3, dtype=np.float64),),
                                              (np.arange(3, dtype=np.int64),),
                                              (np.arange(3, dtype=np.uint64),),
                                              (np.ones(2, np.complex128),))),
    "wrapping_numpy_ints": (lambda x: x, {}, _calls((np.int64(2**40),), (np.array([2**40]),))),
    "mixed_weak": (lambda x, y: x + y, {}, _calls((1.0, np.float16(2)), (np.uint8(3), -1),
                                                  (np.uint32(3), 2**32 - 1))),
    "no_arguments": (lambda: jnp.arange(3), {}, _calls(())),
    "constant_only": (lambda x: 7, {}, _calls((1.0,))),
    "python_constants": (lambda: (2.5, 1, True), {}, _calls(())),
    "jnp_constants": (lambda x: (jnp.float32(1), jnp.int32(2), jnp.array(3.0)), {},
                      _calls((1,))),
    "returns_none": (lambda x: None, {}, _calls((1.0,))),
    "none_leaves": (lambda x: (x, None, {"a": None, "b": x + 1}), {}, _calls((F32,))),
    "none_argument": (lambda x, y: x if y is None else y, {}, _calls((F32, None))),
    "dicts": (lambda d: {"s": d["a"] + d["b"], "z": d["a"] * 0}, {},
              _calls(({"b": F32, "a": F32},))),
    "namedtuples": (lambda p: Pt(p.y, p.x * 2), {}, _calls((Pt(F32, 1.0),))),
    "lists": (lambda xs: [xs[0] + xs[1], xs], {}, _calls(([1.0, 2],))),
    "empty_containers": (lambda d, x: ((), [], {}, x), {}, _calls(({}, 1.0))),
    "zero_size": (lambda x: (x * 2 + 1, x.sum(0), x.max(initial=-1.0)), {},
                  _calls((np.zeros((0, 3), np.float32),))),
    "identity": (lambda x: (x, x), {}, _calls((F32,), (2.0,), (jnp.ones(3),))),
    "nan_bits": (lambda x: x + 0, {}, _calls((np.array([np.nan, -np.nan], np.float32),))),
    "casts": (lambda x: (x.astype(jnp.int8), x.astype(jnp.uint32), x.astype(jnp.float16),
                         x.astype(bool)), {},
              _calls((np.array([-1.5, 300, 0.5], np.float32),))),
    "defaults_and_keywords": (_defaults, {}, _calls((1.0,), (1.0, 4.0), ((1.0,), {"z": 5}),
                                                    ((1.0,), {"y": 1}), ((), {"x": 1.0}))),
    "keyword_for_positional": (lambda x, y: x - y, {}, _calls(((), {"y": 1.0, "x": 3}))),
    "varargs": (lambda *a: sum(a), {}, _calls((1, 2, 3), ())),
    "varkw": (lambda **k: k, {}, _calls(((), {"a": 1, "b": 2.0}))),
    "static_number": (lambda x, n: x * n, {"static_argnums": 1},
                      _calls((F32, 3), (F32, 3.0), ((F32,), {"n": 2}), (1, 2**40))),
    "static_negative": (lambda x, n: x * n, {"static_argnums": -1}, _calls((F32, 2))),
    "static_name": (_defaults, {"static_argnames": "z"}, _calls(((F32,), {"z": 4}))),
    "static_strings_and_none": (lambda x, m=None: x if m is None else x + len(m),
                                {"static_argnums": 1, "static_argnames": "m"},
                                _calls((F32, "ab"), ((F32,), {"m": "abc"}), (F32,))),
    "static_self": (_Scaled.f, {"static_argnums": 0}, _calls((_Scaled(), 1.0))),
    "partial": (functools.partial(lambda a, x: a * x, 3.0), {}, _calls((F32,))),
    "closures": (lambda x: (x + F32, x + jnp.arange(3.0)), {}, _calls((1,))),
    "donated": (lambda x, y: x + y, {"donate_argnums": 0},
                _calls((np.ones(3, np.float32), np.ones(3, np.float32)), (1.0, 2.0))),
    "donated_by_name": (_defaults, {"donate_argnames": "x"},
                        _calls((np.ones(3, np.float32),))),
    "control_flow": (lambda p, x: (jax.lax.cond(p, lambda v: v + 1, lambda v: v - 1, x),
                                   jax.lax.fori_loop(0, 5, lambda i, c: c + i, 0),
                                   jax.lax.scan(lambda c, v: (c + v, c), 0.0, x)), {},
                     _calls((True, F32[0]), (np.bool_(False), I32.astype(np.float32)))),
    "nested_jit": (lambda x: jax.jit(lambda y: y * 2)(x) + 1, {}, _calls((1.0,), (F32,))),
    "retrace": (lambda x: (x.sum(), x > 1), {}, _calls((np.ones(2, np.float32),),
                                                       (np.ones(3, np.int32),), (2,))),
    "float0": (jax.grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True), {},
               _calls((1.0, 2))),
    "typed_keys": (lambda k: (jax.random.split(k), jax.random.normal(k, (2,))), {},
                   _calls((jax.random.key(0),))),
    "raw_keys": (lambda k: jax.random.normal(k, (3,)), {}, _calls((jax.random.PRNGKey(0),))),
    # refused calls
    "arity": (lambda x, y: x, {}, _calls((1, 2, 3), (1,), ((1,), {"q": 2}),
                                         ((1,), {"x": 2}))),
    "non_arrays": (lambda x: x, {}, _calls(("a",), (object(),), ({"k": "s"},))),
    "overflowing_python_ints": (lambda x: x, {}, _calls((2**31,), (-2**31 - 1,), (2**63,),
                                                        ([1, 2**40],))),
    "unhashable_statics": (lambda x, n: x, {"static_argnums": 1},
                           _calls((F32, [1, 2]), (F32, {"a": 1}), ((F32,), {"n": [3]}))),
    "trace_errors": (lambda x, y: (x + y) if x.ndim else (1 if x > 0 else 2), {},
                     _calls((np.ones(2), np.ones(3)), (1.0, 1.0))),
}

X64 = ["python_float", "python_int", "python_complex", "wide_types", "mixed_weak",
       "overflowing_python_ints", "defaults_and_keywords", "casts", "static_number"]

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _outcome(call):
    try:
        return "ok", call()
    except Exception as e:  # noqa: BLE001 (compared with jax.jit's)
        return "error", (type(e), _ADDRESS.sub("", str(e)))


def _bits(leaf):
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return ("key", str(leaf.dtype), np.asarray(jax.random.key_data(leaf)).tobytes())
    a = np.asarray(leaf)
    return a.dtype, a.shape, a.tobytes()


def _compare(fn, options, calls):
    theirs, ours = _outcome(lambda: jax.jit(fn, **options)), _outcome(lambda: lj.jit(fn,
                                                                                    **options))
    assert ours[0] == theirs[0] and (ours[0] == "ok" or ours == theirs), (ours, theirs)
    if ours[0] != "ok":
        return
    for args, kwargs in calls:
        want = _outcome(lambda: theirs[1](*args, **kwargs))
        got = _outcome(lambda: ours[1](*args, **kwargs))
        assert got[0] == want[0], (args, kwargs, got, want)
        if want[0] != "ok":
            assert got[1] == want[1], (args, kwargs)
            continue
        got_leaves, got_tree = jax.tree_util.tree_flatten(got[1])
        want_leaves, want_tree = jax.tree_util.tree_flatten(want[1])
        assert got_tree == want_tree, (args, kwargs)
        assert [_bits(g) for g in got_leaves] == [_bits(w) for w in want_leaves], (args, kwargs)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_lower_jax_jit_matches_jax_jit(name):
    _compare(*CASES[name])


@pytest.mark.parametrize("name", X64)
def test_lower_jax_jit_matches_jax_jit_with_x64(name):
    try:
        jax.config.update("jax_enable_x64", True)
        _compare(*CASES[name])
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("options", [
    {"static_argnums": 3}, {"static_argnames": "q"}, {"static_argnums": 0, "donate_argnums": 0},
    {"static_argnums": "a"}, {"static_argnames": [1]}, {"donate_argnums": 1.5},
    {"static_argnums": None, "static_argnames": None, "donate_argnums": None,
     "donate_argnames": None},
])
def test_jit_options_are_checked_as_jax_jit_checks_them(options):
    _compare(lambda x: x, options, _calls((1.0,)))


@pytest.mark.parametrize("fn", [3, None, staticmethod(lambda x: x)])
def test_what_is_not_a_function_is_refused_as_jax_jit_refuses_it(fn):
    assert _outcome(lambda: lj.jit(fn)) == _outcome(lambda: jax.jit(fn))


def test_disable_jit_runs_the_function_as_is_as_jax_jit_does():
    calls = []

    def f(x, n=2):
        calls.append(type(x))
        return x * n if x > 0 else -x          # Python control flow on the value
    for jit in (jax.jit, lj.jit):
        with jax.disable_jit():
            assert jit(f, static_argnums=1)(3.0, 2) == 6.0
            assert jit(f)(np.float32(-1.0)) == np.float32(1.0)
            assert _outcome(lambda: jit(f)("a"))[1][0] is TypeError
    assert calls == [float, np.float32, str] * 2
    with pytest.raises(jax.errors.TracerBoolConversionError):
        lj.jit(f)(3.0)


def test_eval_shape_and_clear_cache_as_jax_jits():
    def f(x, n, *, scale=1.0):
        return {"y": x[:n] * scale, "i": jnp.argmax(x)}
    x = np.arange(5, dtype=np.float32)
    ours, theirs = lj.jit(f, static_argnums=1), jax.jit(f, static_argnums=1)
    assert ours.eval_shape(x, 3, scale=2.0) == theirs.eval_shape(x, 3, scale=2.0)
    ours(x, 3)
    ours(x, 2)
    assert ours.cache_size == 2
    ours.clear_cache()
    assert ours.cache_size == 0
    np.testing.assert_array_equal(ours(x, 3)["y"], theirs(x, 3)["y"])
