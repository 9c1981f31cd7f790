"""jax 0.10's less common primitives (lower/rules/passthrough.py, calls.py, custom_calls.py,
sorting.py's approx_top_k, linalg.py's symmetric_product, cholesky_update and ragged dot),
lowered from jax's own jaxprs (``jax.make_jaxpr``) and run against ``jax.jit`` of the same
program.

Each compile costs seconds, so programs gather several primitives.
"""

from __future__ import annotations

import numpy as np
import pytest

import verify
from lower import lax, lower_jaxpr_to_module
from tests.lower.harness import check, ops
from tests.oracle import assert_fixed_point

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

F32 = np.float32


def names(closed) -> set:
    return {e.primitive.name for e in closed.eqns}


def lower_jax(f, *args, **kw):
    """jax's jaxpr of ``f``, lowered by us and checked against MLIR's reader."""
    closed = jax.make_jaxpr(f, **kw)(*args)
    m = lower_jaxpr_to_module("jit_f", closed).module
    assert_fixed_point(m)
    return closed, m


def against_jit(f, *args, rtol=None):
    """Run our lowering of jax's jaxpr; compare with jax.jit (exactly, or to ``rtol``)."""
    closed, m = lower_jax(f, *args)
    outs = verify.run(m, *args)
    want = [np.asarray(w) for w in jax.tree_util.tree_leaves(jax.jit(f)(*args))]
    if rtol is None:
        check(outs, want)
    else:
        assert [(o.shape, o.dtype) for o in outs] == [(w.shape, w.dtype) for w in want]
        for o, w in zip(outs, want):
            np.testing.assert_allclose(o, w, rtol=rtol, atol=rtol)
    return closed, m


def test_identities_zeros_and_shapes():
    from jax._src import core as jcore
    from jax._src.lax import lax as jl
    from jax._src.state import primitives as sp
    from jax.experimental.layout import Layout, with_layout_constraint

    x = np.arange(6, dtype=F32).reshape(2, 3)
    seen = []

    def f(x):
        y = jax.device_put(x) * 2
        jlax.dce_sink(y)
        jlax.dce_sink(x, prevent_mlir_dce=True)
        jax.debug.inspect_array_sharding(x, callback=seen.append)
        z = with_layout_constraint(jl.tie_p.bind(x, y + 1), Layout(major_to_minor=(0, 1)))
        st = jl.stack_p.bind(x, z, axis=1)                      # (2, 2, 3)
        parts = jl.unstack_p.bind(st, axis=2)                   # 3 x (2, 2)
        return (z, st, *parts, sp.broadcast_to(x[:1], (4, 2, 3)),
                jlax.empty((2, 2), jnp.int32),
                jl.empty2(np.dtype(np.float32), memory_space=jcore.typeof(x).memory_space))

    closed, m = against_jit(f, x)
    assert {"device_put", "dce_sink", "inspect_sharding", "tie", "layout_constraint", "stack",
            "unstack", "broadcast_to", "empty", "empty2"} <= names(closed)
    (sink,) = ops(m, "custom_call")  # only the dce_sink that must survive MLIR's DCE
    assert sink.attributes["call_target_name"].value == "dce_sink"


def test_reshard_is_the_operand_on_one_device():
    from jax.sharding import AxisType, PartitionSpec
    x = np.arange(4, dtype=F32)
    mesh = jax.make_mesh((1,), ("x",), axis_types=(AxisType.Explicit,))
    with jax.sharding.set_mesh(mesh):
        closed, _ = against_jit(lambda x: jax.sharding.reshard(x, PartitionSpec("x")) + 1, x)
    assert "reshard" in names(closed)


def test_bodies_inline_and_call():
    from jax._src.custom_batching import custom_vmap

    a = np.array([[2, 1], [1, 3]], F32)
    b = np.array([1, 2], F32)

    @custom_vmap
    def double(v):
        return v * 2
    double.def_vmap(lambda size, batched, v: (v * 2, batched[0]))

    def f(a, b):
        # matvec and solve close over a traced matrix (constants of the primitive)
        x = jlax.custom_linear_solve(lambda v: a @ v, b,
                                     lambda mv, r: jnp.linalg.solve(a, r))
        y = jax.custom_derivatives.linear_call(lambda c, v: c * v, lambda c, v: c * v, a[0], b)
        s = jlax.composite(lambda v, *, k: v * k, name="my.scale")(b, k=np.float32(3))
        return x, y, double(b), s

    closed, m = against_jit(f, a, b, rtol=1e-6)
    assert {"custom_linear_solve", "linear_call", "custom_vmap_call", "composite"} <= names(closed)
    (comp,) = ops(m, "composite")
    assert comp.attributes["name"].value == "my.scale"
    assert comp.attributes["decomposition"].name == "my.scale"  # jax names it so too
    assert "k = 3.000000e+00 : f32" in m.to_text()


def test_call_lowers_its_jaxpr_to_a_private_function():
    inner = lax.make_jaxpr(lambda v: [v * 2, v + 1])(np.ones(3, F32))

    def f(x):
        return lax.bind("call", [x], inner.out_avals, multiple_results=True,
                        call_jaxpr=inner.jaxpr)

    x = np.arange(3, dtype=F32)
    m = lower_jaxpr_to_module("call", lax.make_jaxpr(f)(x)).module
    assert_fixed_point(m)
    assert len(ops(m, "func.call")) == 1 and len(m.functions) == 2
    check(verify.run(m, x), [x * 2, x + 1])


def test_approx_top_k_is_exact_top_k():
    x = np.random.RandomState(0).permutation(3 * 256).reshape(3, 256).astype(F32)

    def f(x):
        return (jlax.approx_max_k(x, 5, aggregate_to_topk=False),
                jlax.approx_min_k(x, 2, reduction_dimension=0, recall_target=0.5),
                jlax.approx_max_k(x[:, :8], 3))

    closed, _ = against_jit(f, x)
    assert "approx_top_k" in names(closed)
    # Ties (bf16 rounds these apart values together) leave jax's index order unspecified;
    # the values agree.
    xb = x.astype(jnp.bfloat16)
    def top4(v):
        return jlax.approx_max_k(v, 4)
    _, m = lower_jax(top4, xb)
    vals, idx = verify.run(m, xb)
    np.testing.assert_array_equal(vals, np.asarray(jax.jit(top4)(xb)[0]))
    np.testing.assert_array_equal(np.take_along_axis(xb, idx, 1), vals)


@pytest.mark.parametrize("platform", ["cpu", "tpu"])
def test_approx_top_k_is_jaxs_custom_call_op_for_op(platform):
    """The ApproxTopK custom call jax writes for the platform (``is_fallback`` but on TPU,
    where XLA runs the approximate algorithm): its operands' and results' types, its
    backend_config dictionary and its comparator, read from jax's own text."""
    import mhlo_ir as hlo
    x = np.random.RandomState(2).standard_normal((4, 64)).astype(F32)

    def f(x):
        return jlax.approx_max_k(x, 3, recall_target=0.9), jlax.approx_min_k(x, 1, 0)

    def calls(m):
        out = []
        for op in m.functions[[fn.name for fn in m.functions].index("main")].entry_block \
                .operations:
            if op.spec.name == "custom_call":
                comparator = m.lookup(op.attr("called_computations").elements[0].name)
                out.append(([v.type for v in op.operands], [r.type for r in op.results],
                            op.attr("mhlo.backend_config"), comparator.arg_types,
                            [o.spec.name for o in comparator.entry_block.operations][:-1],
                            comparator.entry_block.operations[0].attr("comparison_direction")))
        return out
    closed = jax.make_jaxpr(f)(x)
    ours = lower_jaxpr_to_module("jit_f", closed, platform=platform).module
    theirs = hlo.parse(jax.jit(f).trace(x).lower(lowering_platforms=(platform,)).as_text())
    assert calls(ours) == calls(theirs) and len(calls(ours)) == 2
    assert ("is_fallback" in ours.to_text()) == (platform == "cpu")


def test_symmetric_product_and_cholesky_update():
    rng = np.random.RandomState(1)
    a = rng.randn(2, 3, 4).astype(F32)
    c = rng.randn(2, 3, 3).astype(F32)
    c = c + np.swapaxes(c, 1, 2)
    spd = np.array([[4, 2, 1], [2, 5, 3], [1, 3, 6]], F32)
    r = np.linalg.cholesky(spd).T.astype(F32)
    z = np.array([1, -2, 0], F32)  # a zero entry takes the identity rotation

    def f(a, c, r, z):
        return (jlax.linalg.symmetric_product(a, c, alpha=2.0, beta=-0.5),
                jlax.linalg.cholesky_update(r, z))

    closed, m = against_jit(f, a, c, r, z, rtol=2e-6)
    assert {"symmetric_product", "cholesky_update"} <= names(closed)
    got = verify.run(m, a, c, r, z)[1]
    np.testing.assert_allclose(got.T @ got, spd + np.outer(z, z), rtol=1e-5, atol=1e-5)


def test_ffi_call_runs_a_jaxlib_target():
    a = np.array([[4, 2, 1], [2, 5, 3], [1, 3, 6]], F32)
    out_types = (jax.ShapeDtypeStruct((3, 3), F32), jax.ShapeDtypeStruct((), np.int32))

    def f(a):
        return jax.ffi.ffi_call("lapack_spotrf_ffi", out_types, input_layouts=[(0, 1)],
                                output_layouts=[(0, 1), ()],
                                input_output_aliases={0: 0})(a, uplo=np.uint8(ord("L")))

    closed, m = against_jit(f, a)
    assert "ffi_call" in names(closed)
    (cc,) = ops(m, "custom_call")
    text = m.to_text()
    assert "uplo = 76 : ui8" in text and "api_version = 4" in text
    assert cc.attributes["call_target_name"].value == "lapack_spotrf_ffi"


def test_ffi_call_attribute_kinds():
    def f(x):
        return jax.ffi.ffi_call("some_target", jax.ShapeDtypeStruct(x.shape, x.dtype),
                                has_side_effect=True)(
            x, i=1, f=1.5, s="name", b=True, n=np.int16(-2), arr=np.arange(3, dtype=np.int32),
            d=np.dtype(np.float32))

    _, m = lower_jax(f, np.ones(2, F32))
    text = m.to_text()
    for attr in ("i = 1 : i64", "f = 1.500000e+00 : f64", 's = "name"', "b = true",
                 "n = -2 : i16", "arr = dense<[0, 1, 2]> : tensor<3xi32>", "d = f32",
                 "has_side_effect = true"):
        assert attr in text, attr


def test_shape_assertion_and_unreachable():
    from jax._src import core as jcore
    from jax._src.custom_derivatives import unreachable_p
    from jax._src.export.shape_poly import shape_assertion_p

    def f(x):
        shape_assertion_p.bind(jnp.bool_(True), jnp.int32(3), error_message="bad {0}")
        return x

    _, m = lower_jax(f, np.ones(2, F32))
    (cc,) = ops(m, "custom_call")
    assert cc.attributes["call_target_name"].value == "shape_assertion"
    assert 'error_message = "bad {0}"' in m.to_text()

    def g(x):
        return unreachable_p.bind(x, out_avals=(jcore.ShapedArray((2,), F32),),
                                  exc_type=ValueError, message="never here")
    with pytest.raises(ValueError, match="never here"):
        lower_jax(g, np.ones(2, F32))


def test_ragged_dot_general_modes():
    from jax._src.lax.lax import RaggedDotDimensionNumbers as Dn

    rng = np.random.RandomState(0)
    args = (rng.randn(4, 5).astype(F32), rng.randn(3, 5, 2).astype(F32),
            np.array([1, 0, 3], np.int32),                        # ragged rows, rhs groups
            rng.randn(2, 4).astype(F32), rng.randn(4, 3).astype(F32),
            np.array([1, 3], np.int32),                           # ragged contraction
            rng.randn(2, 4, 5).astype(F32), rng.randn(2, 3, 5, 2).astype(F32),
            np.array([[1, 0, 3], [2, 2, 0]], np.int32))           # per-batch group sizes
    contracting = Dn(dot_dimension_numbers=(([1], [0]), ([], [])), lhs_ragged_dimensions=[1],
                     rhs_group_dimensions=[])
    batched = Dn(dot_dimension_numbers=(([2], [2]), ([0], [0])), lhs_ragged_dimensions=[1],
                 rhs_group_dimensions=[1])

    def f(lhs, rhs, gs, lc, rc, gsc, lb, rb, gsb):
        return (jlax.ragged_dot(lhs, rhs, gs),
                jlax.ragged_dot_general(lc, rc, gsc, contracting),
                jlax.ragged_dot_general(lb, rb, gsb, batched))

    closed, _ = against_jit(f, *args, rtol=1e-6)
    assert "ragged_dot_general" in names(closed)


def test_extended_dtype_conversions_are_identities():
    from jax._src import dtypes

    pt = dtypes.primal_tangent_dtype(np.float32, np.float32)
    x = np.arange(3, dtype=F32)
    closed, _ = against_jit(
        lambda x: jlax.convert_element_type(jlax.convert_element_type(x, pt), F32) + 1, x)
    assert {"to_edtype", "from_edtype"} <= names(closed)


def test_scaled_dot_is_a_composite_of_jax_decomposition():
    rng = np.random.RandomState(0)
    f8, e8 = jnp.float8_e4m3fn, jnp.float8_e8m0fnu
    args = [np.asarray(jnp.asarray(rng.randn(2, 8), f8)),
            np.asarray(jnp.asarray(rng.randn(2, 8, 3), f8)),
            np.asarray(jnp.asarray(2.0 ** rng.randint(-2, 3, (2, 2)), e8)),       # per 4 of k
            np.asarray(jnp.asarray(2.0 ** rng.randint(-2, 3, (2, 2, 3)), e8))]
    dn = (((1,), (0,)), ((), ()))

    def f(a, b, sa, sb):
        return (jlax.scaled_dot(a, b[0], lhs_scale=sa, rhs_scale=sb[0], dimension_numbers=dn,
                                preferred_element_type=jnp.float32),
                jlax.scaled_dot(a, b[1], lhs_scale=sa, rhs_scale=sb[1], dimension_numbers=dn))

    closed, m = against_jit(f, *args)
    assert "scaled_dot" in names(closed)
    comps = ops(m, "composite")
    assert [c.attributes["name"].value for c in comps] == ["xla.scaled_dot"] * 2
    text = m.to_text()
    assert "dimension_numbers = [[[1], [0]], [[], []]], preferred_element_type = f32" in text


def test_stage_is_its_operand():
    x = np.arange(3, dtype=F32)
    m = lower_jaxpr_to_module("stage", lax.make_jaxpr(
        lambda v: lax.bind("stage", [v], [v.aval]) + 1)(x)).module
    check(verify.run(m, x), [x + 1])


def test_custom_partitioning_inlines_on_one_device():
    from jax.experimental.custom_partitioning import custom_partitioning

    @custom_partitioning
    def g(x):
        return jnp.sin(x) * 2
    g.def_partition(infer_sharding_from_operands=lambda *a: None, partition=lambda *a: None,
                    sharding_rule="i -> i")
    x = np.arange(4, dtype=F32)
    closed, _ = against_jit(g, x)
    assert "custom_partitioning" in names(closed)
    with pytest.raises(NotImplementedError, match="over 2 devices"):
        lower_jaxpr_to_module("cp", closed, num_partitions=2)


def test_dimension_size_and_dim_as_value_of_static_shapes():
    import jax
    from jax._src.export import shape_poly

    import verify
    from lower import lower_jaxpr_to_module
    x = np.zeros((3, 5), np.float32)
    closed = jax.make_jaxpr(lambda v: shape_poly.dimension_size_p.bind(v, dimension=1) * 10 +
                            shape_poly.dim_as_value_p.bind(dim=4))(x)
    (got,) = verify.run(lower_jaxpr_to_module("dims", closed).module, x)
    assert got.dtype == np.int32 and got == 54


def test_custom_lin_says_what_jax_says():
    import jax

    from lower import lower_jaxpr_to_module

    @jax.custom_vjp
    def f(v):
        return v * 2
    f.defvjp(lambda v: (v * 2, None), lambda _, g: (g * 2,))
    x = np.ones(2, np.float32)
    closed = jax.make_jaxpr(lambda v: jax.jvp(f, (v,), (v,)))(x)
    with pytest.raises(TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a "
                                        "custom_vjp function"):
        lower_jaxpr_to_module("lin", closed)
