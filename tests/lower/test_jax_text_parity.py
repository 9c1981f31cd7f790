"""Our module text against jax.jit's own (``jax.jit(f).trace(*args).lower().as_text()``)
where they used to differ: conj's ops, qr's triangle mask under x64, the module's name and
main's ``jax.result_info`` attributes and argument locations. Both texts are read by mhlo_ir's
parser and compared whole (``harness.normalized``: SSA names renumbered, locations and
module attributes left out), and where numbers come out, ours (through ``verify``) against
jax's."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import mhlo_ir
import verify
from tests.lower.harness import normalized
from tests.lower.random_matrices import rand

jax = pytest.importorskip("jax")
lj = pytest.importorskip("lower.jax")
from jax import lax  # noqa: E402
from jax._src import config as jax_config  # noqa: E402

f32, f64, c64, c128 = np.float32, np.float64, np.complex64, np.complex128


def jax_text(f, *args, platform="cpu", debug_info=False) -> str:
    """jax.jit's text of ``f`` (Shardy off: its sdy attributes are not ours to read)."""
    with jax_config.use_shardy_partitioner(False):
        return jax.jit(f).trace(*args).lower(lowering_platforms=(platform,)).as_text(
            debug_info=debug_info)


def assert_same_module(f, *args, platform="cpu", names=False):
    ours = lj.lower(f, *args, platform=platform).module.to_text()
    assert normalized(ours, names=names) == normalized(jax_text(f, *args, platform=platform),
                                                       names=names)
    return ours


def assert_same_numbers(f, *args):
    """Our program, run by verify, against jax.jit's results: bit for bit (the sign of a
    zero included)."""
    ours = verify.run(lj.lower(f, *args).module, *args)
    theirs = jax.tree_util.tree_leaves(jax.jit(f)(*args))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        t = np.asarray(t)
        assert o.dtype == t.dtype and o.shape == t.shape
        assert o.tobytes() == t.tobytes(), (o, t)


# -- conj: real, imag, negate, complex (jax's lax._conj_impl through lower_fun) ---------------

CONJ_INPUT = np.array([[1.5 - 2j, -0.0 + 0j, 3 + 0j], [np.inf - 1j, complex(np.nan, 2), 0j]])


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("dtype", [c64, c128, f32, f64])
@pytest.mark.parametrize("shape", [(2, 3), ()])
def test_conj_is_jaxs_ops_and_numbers(x64, dtype, shape):
    x = CONJ_INPUT if np.dtype(dtype).kind == "c" else CONJ_INPUT.real
    x = np.asarray(x.reshape(-1)[:int(np.prod(shape))].reshape(shape), dtype)
    with jax.enable_x64(x64):
        if not x64:  # (jax's argument without x64: its 32-bit kin)
            x = np.asarray(jax.numpy.asarray(x))
        text = assert_same_module(lax.conj, x)
        assert "chlo" not in text and '"mhlo.complex"' in text
        assert ('"mhlo.negate"' in text) == (x.dtype.kind == "c")
        assert_same_numbers(lax.conj, x)


@pytest.mark.parametrize("platform", ["cpu", "cuda", "rocm"])
@pytest.mark.parametrize("f", [jax.numpy.linalg.cholesky, jax.numpy.linalg.eigh],
                         ids=["cholesky", "eigh"])
def test_conj_inside_a_decomposition_wrapper_is_jaxs(f, platform):
    """jnp's cholesky and eigh symmetrize their input with conj: the whole program is jax's."""
    a = rand((2, 3, 3), c64)
    a = a @ np.conj(np.swapaxes(a, -1, -2)) + 3 * np.eye(3, dtype=c64)
    assert '"mhlo.imag"' in assert_same_module(f, a, platform=platform)


_A = rand((2, 4, 4), f32)
_SPD = _A @ np.swapaxes(_A, -1, -2) + 4 * np.eye(4, dtype=f32)
CPU_DECOMPOSITIONS = {
    "cholesky": (jax.numpy.linalg.cholesky, _SPD),
    "cholesky_unbatched": (jax.numpy.linalg.cholesky, _SPD[0]),
    "eigh": (jax.numpy.linalg.eigh, _SPD),
    "svd": (jax.numpy.linalg.svd, _A),
    "svd_c64": (jax.numpy.linalg.svd, rand((2, 4, 4), c64)),
    "eig": (jax.numpy.linalg.eig, _A),
    "schur": (jax.scipy.linalg.schur, _A[0]),
    "hessenberg": (lax.linalg.hessenberg, _A),
}


@pytest.mark.parametrize("name", sorted(CPU_DECOMPOSITIONS))
def test_cpu_decompositions_are_jaxs_programs(name):
    """The LAPACK calls and jax's ops around them (info compared with a broadcast zero, a
    failed member's results replaced by NaN through ``batch + (1, ...)`` flags), op for op.
    (lu's pivots-to-permutation loop is ours, not jax's, and is left out.)"""
    f, x = CPU_DECOMPOSITIONS[name]
    assert_same_module(f, x)


# -- qr: the triangle mask in lax._tri's integer type (int64 under x64) ------------------------

QR_CASES = {
    "reduced_f32": (jax.numpy.linalg.qr, (4, 3), f32),
    "wide_c64": (jax.numpy.linalg.qr, (3, 5), c64),
    "reduced_f64": (jax.numpy.linalg.qr, (4, 3), f64),
    "r_only_batched_c128": (lambda a: jax.numpy.linalg.qr(a, mode="r"), (2, 4, 4), c128),
    # (the two below reuse the zero of a pad or of the pivots for the mask's select, where
    # jax writes the constant again: our literals are one constant per value and block,
    # jax's one per Python object)
    "complete_batched_f32": (lambda a: jax.numpy.linalg.qr(a, mode="complete"), (2, 4, 3),
                             f32),
    "pivoting_f64": (lambda a: jax.lax.linalg.qr(a, pivoting=True), (4, 3), f64),
}
_REUSES_A_ZERO = {"complete_batched_f32", "pivoting_f64"}
_MASK_OPS = re.compile(r'"mhlo\.(iota|add|compare)"[^\n]*-> tensor<[\dx]+x(\w+)>')


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("name", sorted(QR_CASES))
def test_qr_is_jaxs_program_with_and_without_x64(x64, name):
    f, shape, dtype = QR_CASES[name]
    if not x64 and dtype in (f64, c128):
        pytest.skip("a 64-bit type needs x64")
    a = rand(shape, dtype)
    with jax.enable_x64(x64):
        if name in _REUSES_A_ZERO:
            ours = normalized(lj.lower(f, a).module.to_text())
            theirs = normalized(jax_text(f, a))
            assert _MASK_OPS.findall(ours) == _MASK_OPS.findall(theirs)
        else:
            ours = assert_same_module(f, a)
        # the mask: two iotas, an add of -1 and a compare, in int64 under x64
        mask = [t for op, t in _MASK_OPS.findall(ours) if op != "compare"]
        assert mask == ["i64" if x64 else "i32"] * 3
        assert_same_numbers(f, a)


@pytest.mark.parametrize("platform", ["tpu", "cuda"])
def test_qr_under_x64_for_other_platforms_has_jaxs_mask(platform):
    a = rand((2, 4, 3), f64)
    with jax.enable_x64(True):
        ours = normalized(lj.lower(jax.numpy.linalg.qr, a, platform=platform).module.to_text())
        theirs = normalized(jax_text(jax.numpy.linalg.qr, a, platform=platform))
    assert _MASK_OPS.findall(ours) == _MASK_OPS.findall(theirs) != []
    if platform == "cuda":
        assert ours == theirs


# -- the module's name: jit(fun_name(f)), sanitized, trailing underscores dropped ---------------

def _outer():
    def inner(x):  # (its __qualname__ is "_outer.<locals>.inner": jax names it by __name__)
        return x * 2
    return inner


def _trailing_(x):
    return x + 1


class _Callable:
    def __call__(self, x):
        return x - 1


def _renamed(x):
    return -x


_renamed.__name__ = "a b<c>.d-e__"

NAMED = {
    "lambda": lambda x: x * 3,
    "nested": _outer(),
    "trailing_underscore": _trailing_,
    "partial_of_lambda": functools.partial(lambda a, x: a * x, 2.0),
    "partial_of_partial": functools.partial(functools.partial(_trailing_)),
    "callable_object": _Callable(),
    "odd_characters": _renamed,
    "jnp_function": jax.numpy.sin,
}


def module_name(text: str) -> str:
    """The module's symbol as a pretty text writes it (quoted where it has odd characters)."""
    return re.match(r'(#loc\d* = [^\n]*\n)*module @("[^"]*"|[\w.$-]+)', text).group(2)


@pytest.mark.parametrize("name", sorted(NAMED))
def test_module_name_is_jaxs(name):
    f, x = NAMED[name], np.arange(3, dtype=f32)
    want = module_name(jax_text(f, x))
    assert module_name(lj.lower(f, x).as_text()) == want
    # (through lower.jax.jit too, and with a keyword argument: the same name)
    assert module_name(lj.jit(f).lower(x).as_text()) == want
    if name not in ("callable_object", "jnp_function"):  # (these take no keyword x)
        assert module_name(lj.jit(f).lower(x=x).as_text()) == want
    # the locations' name stacks: "jit(<lambda>)/mul", unsanitized, as jax's
    stacks = re.compile(r'"(jit\([^"]*)/\w+"')
    assert set(stacks.findall(lj.lower(f, x).as_text(debug_info=True))) == \
        set(stacks.findall(jax_text(f, x, debug_info=True))) != set()
    assert_same_numbers(f, x)


def test_module_names_of_some_functions_as_jax_writes_them():
    """The rule spelled out (jax's pxla.lower_sharding_computation and
    mlir.lower_jaxpr_to_module): every character but letters, digits, "_", "." and "-"
    becomes "_", then trailing underscores go."""
    x = np.ones(2, f32)
    assert [module_name(lj.lower(NAMED[k], x).as_text()) for k in
            ("lambda", "nested", "trailing_underscore", "callable_object",
             "odd_characters")] == ["jit__lambda", "jit_inner", "jit__trailing",
                                    "jit__unnamed_function", '"jit_a_b_c_.d-e"']


def test_a_jitted_function_is_named_as_jax_jits():
    f = _Callable()
    assert lj.jit(f).__name__ == jax.jit(f).__name__ == "<unnamed function>"
    x = np.ones(2, f32)
    assert module_name(lj.lower(lj.jit(f), x).as_text()) == "jit__unnamed_function"


_MODULE_HEAD = re.compile(r"(#loc\d* = [^\n]*\n)*(module @[^\n]*)\{\n")


def test_module_attributes_are_jaxs():
    """jax.jit writes mhlo.num_partitions and mhlo.num_replicas on every module (1 and 1 on
    one device), and so does lower.jax: the module line, name and attributes, is jax's."""
    x = np.arange(8, dtype=f32)

    def f(x):
        return x * 2
    got = lj.jit(f).lower(x).as_text()
    assert _MODULE_HEAD.match(got).group(2) == _MODULE_HEAD.match(jax_text(f, x)).group(2)
    assert "mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32" in got


# -- main's jax.result_info attributes and argument locations -----------------------------------

def _pytree_in_out(params, x):
    return {"y": params["w"] * x + params["b"], "aux": (x.sum(), [x])}


def _one_unused(x, unused, y):
    return x * y


def _ordered_print(x):
    jax.debug.print("{}", x, ordered=True)
    return {"twice": x * 2}


X3 = np.arange(3, dtype=f32)
PARAMS = {"w": np.full(3, 2, f32), "b": np.ones(3, f32)}
PATHS = {  # (function, args, keyword arguments, jit options)
    "pytree_in_out": (_pytree_in_out, (PARAMS, X3), {}, {}),
    "single_result": (jax.numpy.sin, (X3,), {}, {}),
    "no_result": (lambda x: (), (X3,), {}, {}),
    "none_in_result": (lambda x: [x, None, (x * 2,)], (X3,), {}, {}),
    "unused_pruned": (_one_unused, (X3, X3, X3), {}, {}),
    "unused_kept": (_one_unused, (X3, X3, X3), {}, {"keep_unused": True}),
    "keyword_argument": (_pytree_in_out, (PARAMS,), {"x": X3}, {}),
    "static_argnums": (lambda x, k, y: (x * k, y), (X3, 3, X3), {}, {"static_argnums": 1}),
}


def _lowered_pair(name, debug_info=False):
    f, args, kwargs, options = PATHS[name]
    ours = lj.jit(f, **options).lower(*args, **kwargs).as_text(debug_info=debug_info)
    with jax_config.use_shardy_partitioner(False):
        theirs = jax.jit(f, **options).trace(*args, **kwargs).lower().as_text(
            debug_info=debug_info)
    return ours, theirs


@pytest.mark.parametrize("name", sorted(PATHS))
def test_main_has_jaxs_result_info_and_argument_names(name):
    ours, theirs = _lowered_pair(name)
    assert normalized(ours, names=True) == normalized(theirs, names=True)
    assert ("jax.result_info" in ours) == (name != "no_result")
    ours, theirs = _lowered_pair(name, debug_info=True)
    assert _argument_locations(ours) == _argument_locations(theirs)
    f, args, kwargs, options = PATHS[name]
    _same_results(lj.jit(f, **options)(*args, **kwargs), jax.jit(f, **options)(*args, **kwargs))


def _argument_locations(text: str) -> list:
    return [str(a.location) for a in mhlo_ir.parse(text).functions[0].arguments]


def _same_results(ours, theirs):
    o, ot = jax.tree_util.tree_flatten(ours)
    t, tt = jax.tree_util.tree_flatten(theirs)
    assert ot == tt
    for a, b in zip(o, t):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_argument_names_are_pytree_paths():
    ours, _ = _lowered_pair("pytree_in_out", debug_info=True)
    assert _argument_locations(ours) == [str(mhlo_ir.NameLoc(n))
                                         for n in ("params['b']", "params['w']", "x")]
    ours, _ = _lowered_pair("pytree_in_out")
    assert re.findall(r'jax\.result_info = "([^"]*)"', ours) == \
        ["result['aux'][0]", "result['aux'][1][0]", "result['y']"]


def test_with_ordered_effects_the_names_follow_the_token_results():
    """jax's main takes and returns a real token there (ours a dummy tensor<0xi1> result,
    made in main): the names go on the results after the tokens, in both."""
    x = X3
    ours = lj.jit(_ordered_print).lower(x).as_text()
    theirs = jax.jit(_ordered_print).trace(x).lower().as_text()
    names = re.compile(r'jax\.result_info = "([^"]*)"')
    assert names.findall(ours) == names.findall(theirs) == ["result['twice']"]
    signature = ours.split("@main(", 1)[1].split("{\n", 1)[0]
    assert re.search(r'-> \(tensor<0xi1>, tensor<3xf32> \{jax\.result_info', signature)


def test_a_bare_jaxpr_has_no_names_unless_given():
    """lower_jaxpr_to_module of a ClosedJaxpr knows no pytree: as jax's own
    mlir.lower_jaxpr_to_module without arg_names/result_names, main has neither; given,
    both, as jax writes them."""
    from lower import lower_jaxpr_to_module
    closed = jax.make_jaxpr(_one_unused)(X3, X3, X3)
    bare = lower_jaxpr_to_module("jit_f", closed).module
    assert "jax.result_info" not in bare.to_text()
    assert all(a.location == mhlo_ir.UNKNOWN for a in bare.functions[0].arguments)
    named = lower_jaxpr_to_module("jit_f", closed, arg_names=("x", "", "y"),
                                  result_names=("result",)).module
    assert 'res_attrs = [{jax.result_info = "result"}]' in named.to_text()
    assert _argument_locations(named.to_text()) == \
        [str(mhlo_ir.NameLoc("x")), str(mhlo_ir.UNKNOWN), str(mhlo_ir.NameLoc("y"))]
    np.testing.assert_array_equal(verify.run(named, X3, X3, X3)[0], X3 * X3)


# -- dot_general: jax's mixed operand types per platform, its precisions always written -------

def _ones(shape, dtype):
    return (np.arange(np.prod(shape)).reshape(shape) % 3).astype(dtype)


_DOTS = {
    "f32": (lambda a, b: a @ b, f32, f32),
    "f32 highest": (lambda a, b: jax.numpy.dot(a, b, precision="highest"), f32, f32),
    "bf16 x f32": (lambda a, b: a @ b, jax.numpy.bfloat16, f32),
    "i8 x f32": (lambda a, b: a @ b, np.int8, f32),
    "c64 x f32": (lambda a, b: a @ b, c64, f32),
    "bool x bool": (lambda a, b: a @ b, np.bool_, np.bool_),
    "i8 x i8 -> i32": (lambda a, b: lax.dot(a, b, preferred_element_type=np.int32),
                       np.int8, np.int8),
    "f8 e4m3 x e5m2 -> f32": (lambda a, b: lax.dot(a, b, preferred_element_type=f32),
                              jax.numpy.float8_e4m3fn, jax.numpy.float8_e5m2),
}


@pytest.mark.parametrize("platform", ["cpu", "cuda", "tpu"])
@pytest.mark.parametrize("name", sorted(_DOTS))
def test_dot_general_is_jaxs_program_on_each_platform(name, platform):
    """Operands of two types stay so where jax's rule keeps them (8-bit floats off TPU,
    floats and integers on TPU), else both are converted to the result's type (identity
    converts included, as jax writes them); the precisions are written, DEFAULT ones too."""
    f, lt, rt = _DOTS[name]
    a, b = _ones((2, 3), lt), _ones((3, 4), rt)
    assert_same_module(f, a, b, platform=platform)
    if platform == "cpu":
        assert_same_numbers(f, a, b)


# -- convert_element_type: jax's mlir.convert_hlo op for op -----------------------------------

_CONVERTS = {
    "weak scalar in where": (lambda a: jax.numpy.where(a > 0, a, 0.0), f32),
    "int floor division": (lambda a: a // 3, np.int32),
    "f32 to bool": (lambda a: a.astype(bool), f32),
    "i32 to bool": (lambda a: a.astype(bool), np.int32),
    "c64 to f32": (lambda a: lax.convert_element_type(a, f32), c64),
    "c64 to bool": (lambda a: lax.convert_element_type(a, bool), c64),
    "bool to bool": (lambda a: lax.convert_element_type(a > 0, bool), f32),
}


@pytest.mark.parametrize("name", sorted(_CONVERTS))
def test_conversions_are_jaxs_ops(name):
    """A convert even where only the weak type changes (f32 to f32), ``!= 0`` then a convert
    to bool, the real part of a complex first: as jax's rule writes them."""
    f, dtype = _CONVERTS[name]
    x = (np.arange(-3, 9).reshape(3, 4) * (1 + 1j if dtype == c64 else 1)).astype(dtype)
    assert_same_module(f, x)
    assert_same_numbers(f, x)


# -- sort: jax's comparator (keys canonicalized, compared in the total order) -----------------

SORTS = {
    "one key": lambda x: lax.sort(x),
    "two keys": lambda x: lax.sort((x, x[::-1]), num_keys=2),
    "key and payload, unstable": lambda x: lax.sort((x, x), num_keys=1, is_stable=False),
    "argsort": lambda x: jax.numpy.argsort(x),
}
SORT_INPUTS = {
    "f32": np.array([1, np.nan, -2, -0.0, 0.0, np.inf, -np.inf, np.nan, 1], f32),
    "c64": np.array([1 + 1j, complex(np.nan, 0), -0.0 + 0j, 0j, complex(1, np.nan), 1 - 1j]),
    "i8": np.array([3, -1, 0, 3, -128, 127], np.int8),
    "bool": np.array([True, False, True, False]),
    # (the FNUZ float8 types' NaN has the sign bit: it sorts first, as jax's does)
    **{t: np.array([1, np.nan, -2, 0, np.nan, 0.5], getattr(jax.numpy, t))
       for t in ("float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "bfloat16")},
}


@pytest.mark.parametrize("dtype", sorted(SORT_INPUTS))
@pytest.mark.parametrize("name", sorted(SORTS))
def test_sort_is_jaxs_comparator_op_for_op_and_its_order(name, dtype):
    x = SORT_INPUTS[dtype].astype(c64) if dtype == "c64" else SORT_INPUTS[dtype]
    f = SORTS[name]
    if name != "argsort":  # (argsort is a call of a private function in jax's text)
        assert_same_module(f, x)
    assert_same_numbers(f, x)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("with_nans", [False, True])
def test_approx_top_k_gives_tied_values_in_jaxs_order(dtype, with_nans):
    """jax's ApproxTopK custom call is, on CPU, an unstable sort of the values alone: ties
    (and NaNs) come back in that sort's order, which ours now follows (a stable sort gave
    tied values other indices)."""
    v = np.random.default_rng(0).integers(0, 3, 40).astype(getattr(jax.numpy, dtype))
    if with_nans:
        v[::7] = np.nan
    for f in (lambda v: lax.approx_min_k(v, 10), lambda v: lax.approx_max_k(v, 10)):
        assert_same_numbers(f, v)


@pytest.mark.parametrize("values", [[[1, 5, 5, 0], [2, 2, 0, 2]], [[3, np.nan, 3, 2]],
                                    [[0, -0.0, 0, 1]], [[np.nan, 1, np.nan, 0]]])
def test_approx_top_k_of_one_ties_and_nans_as_jax(values):
    """k=1 is a reduction in XLA:CPU's expansion of jax's ApproxTopK custom call: the last
    of tied values, and a NaN only where no value follows it; a sort and a slice written out
    (ours before) gave the first tie and let a NaN through. Now the custom call itself."""
    v = np.array(values, np.float32)
    for f in (lambda v: lax.approx_max_k(v, 1), lambda v: lax.approx_min_k(v, 1),
              lambda v: lax.approx_max_k(v, 1, reduction_dimension=0)):
        assert_same_numbers(f, v)
