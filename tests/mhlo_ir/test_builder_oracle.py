"""Every Builder function against MLIR itself: the text we print (without locations) must be a
fixed point of MLIR's generic printer (tests/oracle.py), and jaxlib must accept the module.

Cases are small modules registered in ``CASES``; the op table is covered by walking the ops of
every case, so an op added to ``mhlo_ir.OP_TABLE`` without an oracle case fails
``test_every_op_in_the_table_has_an_oracle_case``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.ops.elementwise import BINARY, UNARY
from tests.oracle import assert_fixed_point, mlir_generic

T = hlo.tensor

# One representative element type per kind an elementwise family may accept.
KIND_TYPES = {
    "bool": (hlo.i1,),
    "sint": (hlo.i8, hlo.i32, hlo.i64),
    "uint": (hlo.ui16, hlo.ui64),
    "float": (hlo.f16, hlo.bf16, hlo.f32, hlo.f64),
    "complex": (hlo.complex64, hlo.complex128),
}


def new_module(arg_types=(), name="m", **fn_kwargs):
    m = hlo.Module(name)
    fn_kwargs.setdefault("visibility", "public")
    f = m.add_function("main", list(arg_types), **fn_kwargs)
    return m, f, f.builder()


def check_both(m) -> str:
    """Fixed point of MLIR's generic print, and accepted by jaxlib's parser and verifier."""
    text = assert_fixed_point(m)
    verify.check(m)
    return text


def walk_ops(module):
    stack = [fn.body for fn in module.functions]
    while stack:
        region = stack.pop()
        for block in region.blocks:
            for op in block.operations:
                yield op
                stack.extend(op.regions)


CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# -- elementwise families, generated from the op table's dicts ------------------------------------

def _types_for(kinds, one_per_kind=False):
    return [t for k in ("bool", "sint", "uint", "float", "complex") if k in kinds
            for t in KIND_TYPES[k][-1 if one_per_kind else 0:]]


def _unary_module(name, kinds=None, one_per_kind=False):
    kinds = UNARY[name][0] if kinds is None else kinds
    types = [T((2, 3), et) for et in _types_for(kinds, one_per_kind)]
    m, f, b = new_module(types)
    b.return_(*[getattr(b, hlo.builder._method_name(name))(x) for x in f.arguments])
    return m


def _binary_module(name, one_per_kind=False):
    kinds, rule = BINARY[name]
    ets = _types_for(kinds, one_per_kind)
    if name == "complex":
        ets = [hlo.f32, hlo.f64]
    types = [T((3,), et) for et in ets]
    m, f, b = new_module(types + types)
    n = len(types)
    meth = getattr(b, hlo.builder._method_name(name))
    b.return_(*[meth(x, y) for x, y in zip(f.arguments[:n], f.arguments[n:])])
    return m


for _n in UNARY:
    CASES[f"unary_{_n}"] = (lambda n: lambda: _unary_module(n))(_n)
for _n in BINARY:
    CASES[f"binary_{_n}"] = (lambda n: lambda: _binary_module(n))(_n)
# cbrt without complex operands, which XLA rejects (see XLA_REJECTS).
CASES["unary_cbrt_float_only"] = lambda: _unary_module("cbrt", {"float"})

# Cases the builder (and MLIR's verifier) accept but XLA does not compile.
XLA_REJECTS: dict = {}
# Cases that call custom-call targets no XLA backend registers: compile-only by design.
UNKNOWN_TARGETS = {"custom_calls", "generic_create_path"}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_result_types(name):
    """Hand-derived result types: abs/real/imag of complex give the component type,
    is_finite gives i1, everything else keeps the operand type."""
    kinds, _ = UNARY[name]
    m, f, b = new_module([T((2,), et) for et in _types_for(kinds)])
    for x in f.arguments:
        r = getattr(b, hlo.builder._method_name(name))(x)
        et = x.type.element_type
        if name == "is_finite":
            want = hlo.i1
        elif name in ("abs", "real", "imag") and et.kind == "complex":
            want = et.component
        else:
            want = et
        assert r.type == T((2,), want)


# -- compare, select, clamp, convert -----------------------------------------------------------

@case
def compare_directions_and_types():
    # Distinct operands: XLA folds compare(x, x) before its verifier would look at it.
    m, f, b = new_module([T((4,), hlo.f32), T((4,), hlo.i32), T((4,), hlo.ui8)] * 2)
    x, i, u, x2, i2, u2 = f.arguments
    outs = []
    for d in ("EQ", "NE", "GE", "GT", "LE", "LT"):
        outs.append(b.compare(x, x2, d))
        outs.append(b.compare(i, i2, d.lower()))
    outs += [b.compare(x, x2, "LT", "FLOAT"), b.compare(x, x2, "EQ", "TOTALORDER"),
             b.compare(i, i2, "GT", "SIGNED"), b.compare(u, u2, "GT", "UNSIGNED"),
             b.compare(i, i2, "LT", "NOTYPE")]
    b.return_(*outs)
    return m


@case
def select_clamp():
    m, f, b = new_module([T((2, 2), hlo.i1), T((2, 2), hlo.f32), T((), hlo.i1)])
    p, x, s = f.arguments
    lo = b.constant(np.float32(-1))
    hi = b.constant(np.full((2, 2), 2, np.float32))
    b.return_(b.select(p, x, x), b.select(s, x, x), b.clamp(lo, x, hi), b.clamp(lo, x, lo))
    return m


@case
def convert_between_types():
    m, f, b = new_module([T((3,), hlo.f32), T((3,), hlo.i32)])
    x, i = f.arguments
    outs = [b.convert(x, et) for et in (hlo.i1, hlo.i8, hlo.ui32, hlo.bf16, hlo.f16, hlo.f64,
                                       hlo.complex64, hlo.f8E4M3FN)]
    outs += [b.convert(i, et) for et in (hlo.i1, hlo.i64, hlo.ui8, hlo.f32)]
    outs.append(b.convert(x, np.int16))  # numpy dtypes work as element types too
    b.return_(*outs)
    return m


# -- constants ---------------------------------------------------------------------------------

@case
def constants_of_python_values():
    m, f, b = new_module()
    b.return_(b.constant(1.5), b.constant(3), b.constant(True), b.constant([1, 2, 3]),
              b.constant([[1.0, 2.0]], np.float64), b.constant(2, hlo.ui8),
              b.constant(np.zeros((0, 3), np.float32)), b.constant(np.int64(-7)))
    return m


def _special_values(et):
    dt = et.dtype
    if et.kind == "bool":
        return np.array([True, False, True, True], dt)
    if et.kind in ("sint", "uint"):
        lo = -(1 << (et.bits - 1)) if et.kind == "sint" else 0
        hi = (1 << (et.bits - 1)) - 1 if et.kind == "sint" else (1 << et.bits) - 1
        return np.array([lo, hi, 0, 1, hi // 3, lo // 3], dt)
    if et.kind == "complex":
        return np.array([1 + 2j, -0.5j, np.inf, complex(np.nan, 1), 1e-30, 3.25], dt)
    finfo = ml_dtypes.finfo(dt)
    vals = [0.1, -2.5, float(finfo.max), float(finfo.tiny), float(finfo.smallest_subnormal),
            1.0, -0.0, np.inf, -np.inf, np.nan, 1 / 3]
    with np.errstate(all="ignore"):
        return np.array(vals, np.float64).astype(dt)


@pytest.mark.parametrize("et", hlo.ALL_ELEMENT_TYPES, ids=lambda e: e.name)
def test_constants_every_element_type(et):
    """Non-splat, splat, scalar and hex (above the threshold) constants of each type, including
    extreme, subnormal, signed-zero, infinite and NaN values where the type has them."""
    vals = _special_values(et)
    big = np.resize(vals, (11, 11))
    m, f, b = new_module()
    b.return_(b.constant(vals), b.constant(np.full((2, 3), vals[1], et.dtype)),
              b.constant(vals.reshape(-1)[:1].reshape(())), b.constant(big))
    check_both(m)


# -- data movement -----------------------------------------------------------------------------

@case
def data_movement():
    m, f, b = new_module([T((2, 3), hlo.f32), T((1, 3), hlo.f32)])
    x, y = f.arguments
    outs = [
        b.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
        b.broadcast_in_dim(y, (2, 3), (0, 1)),
        b.broadcast_in_dim(b.constant(np.float32(1)), (2,), ()),
        b.reshape(x, (3, 2)), b.reshape(x, (6,)), b.reshape(y, (3,)),
        b.transpose(x, (1, 0)),
        b.slice(x, (0, 1), (2, 3)), b.slice(x, (0, 0), (2, 3), (2, 2)),
        b.concatenate([x, y], 0), b.concatenate([x, x, x], 1),
        b.iota((4,), hlo.i32), b.iota((2, 3), hlo.f32, 1), b.iota((5,), hlo.ui8),
    ]
    b.return_(*outs)
    return m


# -- linear algebra ----------------------------------------------------------------------------

@case
def dot_general_variants():
    m, f, b = new_module([T((2, 3), hlo.f32), T((3, 4), hlo.f32), T((5, 2, 3), hlo.bf16),
                          T((5, 3, 4), hlo.bf16), T((3,), hlo.i8)])
    a, c, ba, bb, v = f.arguments
    outs = [
        b.dot_general(a, c, ((1,), (0,))),
        b.dot_general(a, c, ((1,), (0,)), precision_config=["DEFAULT", "HIGHEST"]),
        b.dot_general(ba, bb, ((2,), (1,)), ((0,), (0,))),
        b.dot_general(ba, bb, ((2,), (1,)), ((0,), (0,)), result_element_type=hlo.f32,
                      precision_config=("HIGH", "HIGH")),
        b.dot_general(v, v, ((0,), (0,)), result_element_type=hlo.i32),
        b.dot_general(a, c),  # outer product: no contraction
    ]
    b.return_(*outs)
    return m


# -- reductions and control flow ---------------------------------------------------------------

@case
def reduce_one_and_several_inputs():
    m, f, b = new_module([T((2, 3), hlo.f32), T((2, 3), hlo.i32)])
    x, i = f.arguments
    s = b.reduce(x, b.constant(np.float32(0)), [1], lambda bb, a, e: bb.add(a, e))
    mx = b.reduce(x, b.constant(np.float32(-np.inf)), [0, 1], lambda bb, a, e: bb.maximum(a, e))

    def argmax(bb, av, ai, ev, ei):
        gt = bb.compare(ev, av, "GT")
        return bb.select(gt, ev, av), bb.select(gt, ei, ai)

    v, k = b.reduce([x, i], [b.constant(np.float32(-np.inf)), b.constant(np.int32(0))], [0],
                    argmax)
    b.return_(s, mx, v, k)
    return m


@case
def while_loop():
    m, f, b = new_module([T((), hlo.i32), T((2,), hlo.f32)])
    n, x = f.arguments

    def cond(bb, i, acc):
        return bb.compare(i, n, "LT")

    def body(bb, i, acc):
        return bb.add(i, bb.constant(np.int32(1))), bb.add(acc, acc)

    i, acc = b.while_([b.constant(np.int32(0)), x], cond, body)
    b.return_(i, acc)
    return m


@case
def if_and_case():
    m, f, b = new_module([T((), hlo.i1), T((), hlo.i32), T((2,), hlo.f32)])
    p, k, x = f.arguments
    r1 = b.if_(p, lambda bb: bb.negate(x), lambda bb: bb.abs(x))
    r2, r3 = b.if_(p, lambda bb: (x, bb.constant(np.int32(1))),
                   lambda bb: (bb.exponential(x), bb.constant(np.int32(2))))
    r4 = b.case(k, [lambda bb: x, lambda bb: bb.negate(x), lambda bb: bb.sine(x)])
    r5 = b.case(k, [lambda bb: bb.constant(np.float32(7))])
    b.return_(r1, r2, r3, r4, r5)
    return m


@case
def tuples_and_tokens():
    m, f, b = new_module([T((2,), hlo.f32), T((), hlo.i32)])
    x, i = f.arguments
    t = b.tuple([x, i])
    nested = b.tuple([t, x])
    e0 = b.get_tuple_element(t, 0)
    e1 = b.get_tuple_element(t, 1)
    inner = b.get_tuple_element(nested, 0)
    tok = b.create_token()
    tok2 = b.after_all(tok, b.create_token())
    tok3 = b.after_all(tok2)
    b.return_(e0, e1, b.get_tuple_element(inner, 1), tok3)
    return m


@case
def custom_calls():
    m, f, b = new_module([T((2,), hlo.f32), T((3,), hlo.i32)])
    x, i = f.arguments
    a = b.custom_call("my_target", [x], T((2,), hlo.f32))
    c = b.custom_call("t2", [x, i], [T((2,), hlo.f32)], backend_config="opaque \"cfg\"\n",
                         has_side_effect=True, api_version=2)
    d, e = b.custom_call("t4", [x], [T((2,), hlo.f32), T((), hlo.i32)],
                         backend_config={"alpha": 1.5, "name": "x", "n": 3, "flag": True},
                         api_version=4)
    g = b.custom_call("alias", [x, i], [T((2,), hlo.f32)],
                         output_operand_aliases=[dict(output_tuple_indices=(),
                                                      operand_index=0, operand_tuple_indices=())],
                         has_side_effect=False)
    b.custom_call("no_results", [x], [], has_side_effect=True, api_version=3)
    b.return_(a, c, d, e, g)
    return m


@case
def call_private_function():
    m = hlo.Module("calls")
    helper = m.add_function("helper", [T((2,), hlo.f32), T((2,), hlo.f32)],
                            visibility="private")
    hb = helper.builder()
    u, v = helper.arguments
    hb.return_(hb.multiply(u, v), hb.add(u, v))
    main = m.add_function("main", [T((2,), hlo.f32)], visibility="public")
    b = main.builder()
    (x,) = main.arguments
    p, s = b.call(helper, [x, x])
    (q, _) = b.call("helper", [p, s], [T((2,), hlo.f32), T((2,), hlo.f32)])
    b.return_(q)
    return m


@case
def module_and_function_attributes():
    m = hlo.Module("attrs", attributes={
        "mhlo.num_partitions": hlo.i32_attr(1), "mhlo.num_replicas": hlo.i32_attr(1),
        "mhlo.frontend_attributes": {"k": "v"}, "a.flag": hlo.UnitAttr()})
    f = m.add_function(
        "main", [T((2,), hlo.f32), T((2,), hlo.f32), T((), hlo.i32)], visibility="public",
        arg_attrs=[{"mhlo.sharding": "{replicated}", "tf.aliasing_output": hlo.i32_attr(0)},
                   {}, {"jax.arg_info": "n", "mhlo.layout_mode": "default"}],
        attributes={"my.attr": 3, "my.f": 2.5, "my.s": "text", "my.b": False})
    f.set_result_attr(0, "jax.result_info", "out")
    f.set_result_attr(1, "mhlo.sharding", "{maximal device=0}")
    b = f.builder()
    x, y, _ = f.arguments
    b.return_(b.add(x, y), y)
    g = m.add_function("nested_fn", [], visibility="private")
    g.builder().return_()
    h = m.add_function("no_visibility", [T((), hlo.f32)])
    hb = h.builder()
    hb.return_(h.arguments[0])
    return m


@case
def generic_create_path():
    """``b.create`` by neutral and prefixed names, with Python-valued attributes converted by
    the op table and with explicit result types."""
    m, f, b = new_module([T((2, 3), hlo.f32), T((2, 3), hlo.f32)])
    x, y = f.arguments
    a = b.create("add", (x, y)).result
    c = b.create("mhlo.compare", (a, y), {"comparison_direction": "LT",
                                           "compare_type": "FLOAT"}).result
    s = b.create("select", (c, a, y), result_types=[T((2, 3), hlo.f32)]).result
    t = b.create("transpose", (s,), {"permutation": [1, 0]}).result
    i = b.create("iota", (), {"iota_dimension": 1}, [T((2, 3), hlo.i32)]).result
    sl = b.create("slice", (t,), {"start_indices": [0, 0], "limit_indices": [3, 2],
                                  "strides": [2, 1]}).result
    cat = b.create("concatenate", ([x, y],), {"dimension": 0}).result
    init = b.create("constant", (), {"value": np.float32(0)}).result
    region = b.region([T((), hlo.f32)] * 2, lambda bb, p, q: bb.add(p, q))
    r = b.create("reduce", ([x], [init]), {"dimensions": [0]}, regions=[region]).result
    d = b.create("dot_general", (x, y), {"dot_dimension_numbers": dict(
        lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[1])}).result
    cc = b.create("custom_call", ([x],), {"call_target_name": "foo", "api_version": 2,
                                          "backend_config": "cfg"}, [T((2, 3), hlo.f32)]).result
    b.create("func.return", ([a, c, t, i, sl, cat, r, d, cc],))
    f.result_types = tuple(v.type for v in (a, c, t, i, sl, cat, r, d, cc))
    return m


@pytest.mark.parametrize("name", sorted(CASES))
def test_oracle_fixed_point(name):
    """Our text is exactly MLIR's generic re-print of it."""
    assert_fixed_point(CASES[name]())


@pytest.mark.parametrize("name", sorted(CASES))
def test_oracle_jaxlib_accepts(name):
    """jaxlib parses and verifies the module."""
    verify.check(CASES[name]())


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=verify.CompileError,
                                            reason=XLA_REJECTS[n]))
    if n in XLA_REJECTS else n for n in sorted(set(CASES) - UNKNOWN_TARGETS)])
def test_oracle_xla_compiles(name):
    """What the builder accepts, XLA compiles (the stronger check: it runs XLA's own shape
    inference and HLO verifier, which ``verify.check`` does not). Compiling costs ~25 ms per
    op, so elementwise families compile with one element type per kind they accept."""
    kind, _, op = name.partition("_")
    if kind == "unary" and op in UNARY:
        m = _unary_module(op, one_per_kind=True)
    elif kind == "binary" and op in BINARY:
        m = _binary_module(op, one_per_kind=True)
    else:
        m = CASES[name]()
    verify.compile(m)


def test_custom_call_cases_fail_only_on_the_unknown_target():
    for name in UNKNOWN_TARGETS:
        with pytest.raises(verify.CompileError, match="custom call"):
            verify.compile(CASES[name]())


def test_compare_type_must_match_the_element_kind():
    """XLA rejects a compare_type that does not fit the element kind at compile time; the
    builder rejects it at build time, and accepts (and XLA compiles) the ones that fit."""
    m, f, b = new_module([T((2,), hlo.i32), T((2,), hlo.i32)])
    x, y = f.arguments  # two operands: compare(x, x) is folded away before XLA's verifier
    with pytest.raises(hlo.OpBuildError, match="compare_type UNSIGNED does not fit i32"):
        b.compare(x, y, "LT", "UNSIGNED")
    b.return_(b.compare(x, y, "LT", "SIGNED"))
    verify.compile(m)


def test_fixed_point_oracle_can_fail():
    """The oracle is not vacuous: a text that differs from MLIR's print (pretty form, extra
    space) is rejected."""
    m, f, b = new_module([T((2,), hlo.f32)])
    b.return_(b.add(*f.arguments * 2))
    text = check_both(m)
    with pytest.raises(AssertionError):
        assert_fixed_point(text.replace("mhlo.add\"(", "mhlo.add\"( "))
    assert mlir_generic(text) == text


# The foundation's core ops: every one has an oracle case here (all ops of the table also
# have per-op cases in tests/mhlo_ir/ops/, which run the same oracle).
CORE_OPS = {*UNARY, *BINARY, "compare", "select", "clamp", "convert", "constant", "iota",
            "broadcast_in_dim", "reshape", "transpose", "slice", "concatenate", "dot_general",
            "reduce", "while", "if", "case", "return", "func.return", "func.call", "tuple",
            "get_tuple_element", "create_token", "after_all", "custom_call"}


def test_every_core_op_has_an_oracle_case():
    covered = set()
    for build in CASES.values():
        covered.update(op.spec.name for op in walk_ops(build()))
    missing = sorted(CORE_OPS - covered)
    assert not missing, f"core ops without an oracle case: {missing}"


def test_every_builder_method_is_exercised():
    """Each elementwise op of the table has a Builder method with the reserved-word suffix."""
    for name in (*UNARY, *BINARY):
        meth = name + "_" if name in ("and", "or", "not") else name
        assert callable(getattr(hlo.Builder, meth)), name


def test_create_checks_explicit_result_types():
    m, f, b = new_module([T((2,), hlo.f32)])
    (x,) = f.arguments
    with pytest.raises(hlo.OpBuildError, match="'add'"):
        b.create("add", (x, x), result_types=[T((2,), hlo.f64)])
    with pytest.raises(hlo.OpBuildError, match="requires attribute comparison_direction"):
        b.create("compare", (x, x))
    with pytest.raises(KeyError):
        b.create("no_such_op", ())
