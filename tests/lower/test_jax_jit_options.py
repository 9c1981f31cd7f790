"""lower.jax.jit's options beyond shardings, static and donated arguments (``keep_unused``,
``backend``, ``device``, ``inline``, ``compiler_options``; ``abstracted_axes`` refused) and
its ``Lowered``'s jax API, each against jax.jit 0.10.2 itself."""

from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lower.jax as lj
import verify


def _outcome(call):
    """(result, None) or (None, (exception type, message))."""
    try:
        return call(), None
    except Exception as e:  # noqa: BLE001 (compared with jax.jit's)
        return None, (type(e), str(e))


def _main_args(text: str) -> list:
    """@main's parameters, each its type and aliasing ("tensor<3xf32> 0", "... donor"):
    jax's pretty StableHLO and ours read alike there."""
    line = next(ln for ln in text.splitlines() if "@main(" in ln)
    params = line.split("@main(", 1)[1].split(") ->", 1)[0]
    out = []
    for m in re.finditer(r"%arg\d+: (tensor<[^>]*>)( \{[^}]*\})?", params):
        alias = re.search(r"tf.aliasing_output = (\d+)", m.group(2) or "")
        donor = "jax.buffer_donor = true" in (m.group(2) or "")
        out.append(f"{m.group(1)} {alias.group(1) if alias else 'donor' if donor else '-'}")
    return out


def f_unused(x, y, z):
    dead = jnp.sin(y)  # noqa: F841 (an equation nothing uses: pruned with y)
    return x * 2 + z["b"]


X, Y = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
Z = {"a": np.int32(1), "b": np.float32(2.5)}


@pytest.mark.parametrize("keep_unused", [False, True])
def test_keep_unused_prunes_the_arguments_jax_jit_prunes(keep_unused):
    theirs = jax.jit(f_unused, keep_unused=keep_unused).lower(X, Y, Z)
    ours = lj.jit(f_unused, keep_unused=keep_unused).lower(X, Y, Z)
    assert _main_args(ours.as_text()) == _main_args(theirs.as_text())
    assert len(_main_args(ours.as_text())) == (4 if keep_unused else 2)
    assert ours.kept_var_idx == ((0, 1, 2, 3) if keep_unused else (0, 3))
    # (the dead sine goes with the pruning, as in jax, and stays without it)
    assert ("sine" in ours.as_text()) == ("sine" in theirs.as_text()) == keep_unused
    got = lj.jit(f_unused, keep_unused=keep_unused)(X, Y, Z)
    want = jax.jit(f_unused, keep_unused=keep_unused)(X, Y, Z)
    assert got.tobytes() == np.asarray(want).tobytes()
    # the donation mask stays one entry per flat argument, pruned or not
    donated = lj.jit(f_unused, keep_unused=keep_unused, donate_argnums=(1, 2)).lower(X, Y, Z)
    assert donated.donated == (False, True, True, True)
    assert len(donated.donated) == len(donated.in_avals)
    # lower.jax.lower prunes as jax.jit's lower does, keep_unused as it says
    low = lj.lower(f_unused, X, Y, Z, keep_unused=keep_unused)
    assert _main_args(low.as_text()) == _main_args(theirs.as_text())


@pytest.mark.parametrize("keep_unused", [False, True])
@pytest.mark.parametrize("donate", [(1,), (0, 1)])
def test_donated_unused_arguments_as_jax_jit(keep_unused, donate):
    def f(x, y):
        return x * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a donation neither can use: told at other times)
        theirs = jax.jit(f, donate_argnums=donate, keep_unused=keep_unused).lower(X, Y)
        ours = lj.jit(f, donate_argnums=donate, keep_unused=keep_unused).lower(X, Y)
    assert _main_args(ours.as_text()) == _main_args(theirs.as_text())
    if not keep_unused:  # (y pruned: its donation is dropped quietly, by both)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_array_equal(
                lj.jit(f, donate_argnums=donate)(X, Y),
                jax.jit(f, donate_argnums=donate)(jnp.asarray(X), jnp.asarray(Y)))


def test_a_donated_array_whose_buffer_a_result_takes_is_deleted_as_jax_jit():
    def step(x, y):
        return x * 2, y.sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (y's donation is unusable: both say so)
        for jit in (jax.jit, lj.jit):
            x, y = jnp.asarray(X), jnp.asarray(Y)
            out = jit(step, donate_argnums=(0, 1))(x, y)
            np.testing.assert_array_equal(out[0], X * 2)
            # x's buffer went to the first result; y's could go nowhere and stays
            assert (x.is_deleted(), y.is_deleted()) == (True, False), jit
    got = lj.jit(step, donate_argnums=0)(X, Y)  # (numpy arguments are left alone)
    np.testing.assert_array_equal(X * 2, got[0])


def test_when_jax_jit_deletes_a_donated_array_so_does_ours():
    def bad(v):
        raise ValueError("boom")

    def failing(x):
        return x + 1, jax.pure_callback(bad, jax.ShapeDtypeStruct((3,), jnp.float32), x)

    def outcomes(jit):
        got = []
        x, y = jnp.ones(3), jnp.ones(3)
        jit(lambda a, b: a + b, donate_argnums=-1)(x, y)  # (negative: no donation)
        got.append((x.is_deleted(), y.is_deleted()))
        x = jnp.ones(3)
        with jax.debug_nans(True):  # (jax.jit donates nothing then)
            jit(lambda a: a + 1, donate_argnums=0)(x)
        got.append(x.is_deleted())
        x = jnp.ones(3)
        jax.vmap(jit(lambda a: a + 1, donate_argnums=0))(x)
        got.append(x.is_deleted())
        x = jnp.ones(3)
        with pytest.raises(Exception):
            jax.block_until_ready(jit(failing, donate_argnums=0)(x))
        got.append(x.is_deleted())  # (donated when dispatched, before the run fails)
        return got

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert outcomes(lj.jit) == outcomes(jax.jit) == [(False, False), False, True, True]


@pytest.mark.parametrize("fn, x", [
    (lambda a: a.reshape(2, 3) * 2, np.ones(6, np.float32)),
    (lambda a: a.astype(np.int32), np.ones(3, np.float32)),
    (lambda a: a.astype(np.float32), np.ones(4, jnp.bfloat16)),
    (lambda a: a.T * 2, np.ones((2, 3), np.float32))],
    ids=["reshape", "astype-same-bytes", "astype-wider", "transpose"])
def test_a_donation_of_another_shape_is_a_buffer_donor_as_jax_jit(fn, x):
    """A donated input with no output of its type but one of as many elements is a
    jax.buffer_donor (no warning), and deleted where XLA reuses it (not bf16 into f32)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = lj.jit(fn, donate_argnums=0).lower(x)
    assert _main_args(ours.as_text()) == \
        _main_args(jax.jit(fn, donate_argnums=0).lower(x).as_text())
    deleted = []
    for jit in (jax.jit, lj.jit):
        a = jnp.asarray(x)
        out = jit(fn, donate_argnums=0)(a)
        np.testing.assert_array_equal(np.asarray(out), np.asarray(fn(np.asarray(x))))
        deleted.append(a.is_deleted())
    assert deleted[0] == deleted[1]


def test_unused_keyword_and_static_arguments_are_pruned_as_jax_jit():
    def f(x, n, *, y, w):
        return x * n + w
    kwargs = {"y": np.float32(1), "w": np.float32(3)}
    theirs = jax.jit(f, static_argnums=1).lower(X, 2, **kwargs)
    ours = lj.jit(f, static_argnums=1).lower(X, 2, **kwargs)
    assert _main_args(ours.as_text()) == _main_args(theirs.as_text())
    assert ours.in_tree == theirs.in_tree
    got = lj.jit(f, static_argnums=1)(X, 2, **kwargs)
    assert got.tobytes() == np.asarray(jax.jit(f, static_argnums=1)(X, 2, **kwargs)).tobytes()


def _warned(call):
    """(outcome, [(category, message, file)] of the warnings ``call`` gave)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = _outcome(call)
    return out, [(w.category, str(w.message), w.filename) for w in seen]


@pytest.mark.parametrize("which", ["backend", "device"])
def test_backend_and_device_run_there_deprecated_as_in_jax(which):
    value = "cpu" if which == "backend" else jax.devices("cpu")[0]

    def f(x):
        return jnp.cos(x) * 3
    (theirs, _), their_warnings = _warned(lambda: jax.jit(f, **{which: value}))
    (ours, _), our_warnings = _warned(lambda: lj.jit(f, **{which: value}))
    assert our_warnings == their_warnings  # (the same words, pointing at this file)
    assert our_warnings[0][0] is DeprecationWarning and our_warnings[0][2] == __file__
    assert ours.platform == "cpu"
    assert ours(X).tobytes() == np.asarray(theirs(X)).tobytes()
    # (the decorator's warning points at the decoration, in both)
    (_, w1), (_, w2) = (_warned(lambda: lj.jit(**{which: value})(f)),
                        _warned(lambda: jax.jit(**{which: value})(f)))
    assert w1 == w2


SINGLE_DEVICE = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])


@pytest.mark.parametrize("options", [
    {"device": jax.devices("cpu")[0], "backend": "cpu"},
    {"device": jax.devices("cpu")[0], "in_shardings": SINGLE_DEVICE},
    {"backend": "cpu", "out_shardings": SINGLE_DEVICE},
])
def test_backend_and_device_refusals_as_jax_jit(options):
    (_, theirs), _ = _warned(lambda: jax.jit(jnp.sin, **options))
    (_, ours), _ = _warned(lambda: lj.jit(jnp.sin, **options))
    assert theirs is not None and ours == theirs


def test_unknown_backend_is_refused_when_called_as_in_jax_jit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs, ours = jax.jit(jnp.sin, backend="bogus"), lj.jit(jnp.sin, backend="bogus")
    for call in (lambda j: j(X), lambda j: j.lower(X)):
        assert _outcome(lambda: call(theirs))[1][0] is RuntimeError
        err = _outcome(lambda: call(ours))[1]
        assert err[0] is RuntimeError and err[1].startswith("Unknown backend bogus.")
    with pytest.raises(ValueError, match="name different platforms"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            lj.jit(jnp.sin, backend="cuda", platform="cpu")


@pytest.mark.skipif(verify.has_platform("cuda"),
                    reason="a GPU is here")
def test_backend_without_its_device_is_a_runtime_error_as_in_jax_jit():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs, ours = jax.jit(jnp.sin, backend="gpu"), lj.jit(jnp.sin, backend="gpu")
    assert _outcome(lambda: theirs(X))[1][0] is RuntimeError
    assert isinstance(_outcome(lambda: ours(X))[1], tuple)
    assert issubclass(_outcome(lambda: ours(X))[1][0], RuntimeError)


@pytest.mark.parametrize("inline", [False, True])
def test_inline_joins_the_outer_program_as_in_jax_jit(inline):
    def helper(x):
        return jnp.sin(x) * 2

    def outer(j):
        h = j(helper, inline=inline)
        return lambda x: h(x) + h(x + 1)
    theirs = jax.jit(outer(jax.jit)).lower(X).as_text()
    ours = lj.jit(outer(lj.jit)).lower(X).as_text()
    calls = re.compile(r"\bcall @\w+")
    assert len(calls.findall(ours)) == len(calls.findall(theirs)) == (0 if inline else 2)
    got = lj.jit(outer(lj.jit))(X)
    assert got.tobytes() == np.asarray(jax.jit(outer(jax.jit))(X)).tobytes()
    # (at the top, nothing to inline into: the same program)
    assert lj.jit(helper, inline=inline)(X).tobytes() == lj.jit(helper)(X).tobytes()


def f_fusable(x):
    return jnp.sin(x) + jnp.cos(x)


NO_PASSES = {"xla_disable_all_hlo_passes": True}


def test_compiler_options_reach_xla_as_jax_jit_hands_them():
    theirs = jax.jit(f_fusable, compiler_options=NO_PASSES).lower(X).compile().as_text()
    assert "fusion" in jax.jit(f_fusable).lower(X).compile().as_text()
    assert "fusion" not in theirs
    jitted = lj.jit(f_fusable, compiler_options=NO_PASSES)
    assert jitted(X).tobytes() == np.asarray(jax.jit(f_fusable, compiler_options=NO_PASSES)(
        X)).tobytes()
    (_, exe, _), = jitted._cache.values()
    assert "fusion" not in exe.optimized_hlo()
    assert "fusion" in lj.jit(f_fusable).lower(X).compile().optimized_hlo()
    # Lowered.compile takes them too, as jax's does
    low = lj.jit(f_fusable).lower(X)
    assert "fusion" not in low.compile(compiler_options=NO_PASSES).optimized_hlo()
    assert "fusion" not in jax.jit(f_fusable).lower(X).compile(
        compiler_options=NO_PASSES).as_text()
    # build options by name, as jax sets them
    assert lj.jit(f_fusable, compiler_options={"optimization_level": 0})(X).shape == (3,)


@pytest.mark.parametrize("options", [
    {"xla_no_such_option": 1},                    # an option XLA does not know
    {"xla_disable_hlo_passes": 3},                # a string option given a number
    {"xla_cpu_enable_fast_math": "maybe"},        # a bool option given a word
])
def test_bad_compiler_options_are_jaxlibs_error_as_in_jax_jit(options):
    theirs = _outcome(lambda: jax.jit(f_fusable, compiler_options=options)(X))[1]
    ours = _outcome(lambda: lj.jit(f_fusable, compiler_options=options)(X))[1]
    assert theirs[0] is jax.errors.JaxRuntimeError and ours == theirs


def test_compiler_options_on_a_nested_jit_are_refused_as_jax_refuses_them():
    def outer(j):
        h = j(jnp.sin, compiler_options=NO_PASSES)
        return lambda x: h(x) * 2
    theirs = _outcome(lambda: jax.jit(outer(jax.jit))(X))[1]
    ours = _outcome(lambda: lj.jit(outer(lj.jit))(X))[1]
    assert theirs[0] is ours[0] is ValueError
    assert ours[1].split(" and source info")[0] == theirs[1].split(" and source info")[0]
    assert "can only be passed to top-level `jax.jit`" in ours[1]


def test_compiler_options_not_a_dict_is_refused_up_front():
    # (jax.jit: AttributeError 'list' object has no attribute 'items', from its parsing)
    assert _outcome(lambda: jax.jit(jnp.sin, compiler_options=[("a", 1)]))[1][0] \
        is AttributeError
    with pytest.raises(TypeError, match="compiler_options is a dict"):
        lj.jit(jnp.sin, compiler_options=[("a", 1)])


def test_abstracted_axes_is_not_an_option_as_in_jax_jit():
    theirs = _outcome(lambda: jax.jit(jnp.sin, abstracted_axes=("n",)))[1]
    ours = _outcome(lambda: lj.jit(jnp.sin, abstracted_axes=("n",)))[1]
    assert ours == theirs == (TypeError,
                              "jit() got an unexpected keyword argument 'abstracted_axes'")


def test_lowered_has_jaxs_trees_out_info_text_and_cost():
    def f(x, n, y=1.0):
        return {"a": x * n, "b": (y, x.sum())}
    kwargs = {"y": np.float32(3)}
    theirs = jax.jit(f, static_argnums=1).lower(X, 2, **kwargs)
    ours = lj.jit(f, static_argnums=1).lower(X, 2, **kwargs)
    assert ours.in_tree == theirs.in_tree and ours.out_tree == theirs.out_tree
    assert ours.out_info == theirs.out_info
    assert lj.lower(f, X, 2, static_argnums=1).in_tree == \
        jax.jit(f, static_argnums=1).lower(X, 2).in_tree
    # text: StableHLO without locations by default, as jax's; ours in mhlo; XLA's HLO
    assert "stablehlo.multiply" in ours.as_text() and "loc(" not in ours.as_text()
    assert "loc(" in ours.as_text(debug_info=True)
    assert "mhlo.multiply" in ours.as_text("mhlo")
    assert ours.as_text("hlo").startswith("HloModule")
    with pytest.raises(ValueError, match="unknown dialect"):
        ours.as_text("tosa")
    # cost before optimizations: jaxlib's analysis, as jax's Lowered asks it
    assert ours.cost_analysis()["flops"] == theirs.cost_analysis()["flops"]
