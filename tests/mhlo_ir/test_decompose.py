"""mhlo_ir.decompose: each rule computes what the op computes, bit for bit. The oracle is
XLA itself (the original program and its decomposition run alike), then the interpreter,
which can now run programs it could not (and agrees with XLA where XLA is right)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import mhlo_ir as hlo
import verify
from mhlo_ir import strategies as hst
from mhlo_ir.decompose import RULES, SINGLE_DEVICE_RULES, decompose, decomposable
from mhlo_ir.ir import walk

T = hlo.tensor


def _module(arg_types, body, attributes=None):
    m = hlo.Module("d", attributes=attributes)
    f = m.add_function("main", list(arg_types), visibility="public")
    b = f.builder()
    b.return_(*body(b, *f.arguments))
    return m


def _names(m) -> set:
    return {op.spec.name for _, op in walk(m)}


def _same_bits(xs, ys) -> bool:
    return all(x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
               for x, y in zip(xs, ys))


F = T((2, 3), hlo.f32)
_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal((2, 3)).astype(np.float32)

# (rule, program, inputs): one program per rule, each op alone or with what it needs.
CASES = [
    ("copy", lambda: _module([F], lambda b, x: [b.copy(x)]), [_X]),
    ("domain", lambda: _module([F], lambda b, x: [b.domain(
        x, "{maximal device=0}", "{maximal device=0}")]), [_X]),
    ("add_dependency", lambda: _module([F], lambda b, x: [b.add_dependency(
        x, b.create_token())]), [_X]),
    ("fusion", lambda: _module([F, F], lambda b, x, y: [b.fusion(
        [x, y], lambda r, p, q: r.multiply(r.add(p, q), q))]), [_X, -_X]),
    ("broadcast", lambda: _module([F], lambda b, x: [b.broadcast(x, [4, 1])]), [_X]),
    ("dot", lambda: _module([F, T((3,), hlo.f32)], lambda b, x, v: [
        b.dot(x, v), b.dot(v, b.transpose(x, [1, 0]))]), [_X, _X[0]]),
    ("replica_id", lambda: _module([], lambda b: [b.replica_id(), b.partition_id()]), []),
    ("all_reduce", lambda: _module([F], lambda b, x: [b.all_reduce(
        x, lambda r, p, q: r.add(p, q), [[0]])]), [_X]),
    ("cross-replica-sum", lambda: _module([F], lambda b, x: [b.cross_replica_sum(x, [[0]])]),
     [_X]),
    ("all_gather", lambda: _module([F], lambda b, x: [b.all_gather(x, 1, [[0]])]), [_X]),
    ("reduce_scatter", lambda: _module([F], lambda b, x: [b.reduce_scatter(
        x, 1, lambda r, p, q: r.add(p, q), [[0]])]), [_X]),
    ("all_to_all", lambda: _module([F], lambda b, x: [b.all_to_all(x, 1, 1, 1, [[0]])]),
     [_X]),
    ("collective_permute", lambda: _module([F], lambda b, x: [
        b.collective_permute(x, [[0, 0]]), b.collective_permute(x, [])]), [_X]),
    ("topk", lambda: _module([T((2, 6), hlo.f32)], lambda b, x: [
        *b.topk(x, 4), *b.topk(x, 3, largest=False)]),
     # (no NaN or -0.0 here: the interpreter's total order is wrong about them, finding 14;
     # the next test holds those to XLA's own topk)
     [np.array([[1, 3, -2, 0, 1, -np.inf], [2, 2, 5, np.inf, 0, -1]], np.float32)]),
    ("scan", lambda: _module([F], lambda b, x: list(b.scan(
        x, b.constant(np.float32(1)), 1, lambda r, col, c: [
            r.multiply(col, r.broadcast_in_dim(c, (2,), ())),
            r.add(c, r.reduce(col, r.constant(np.float32(0)), [0],
                              lambda q, p, e: q.add(p, e)))], is_reverse=True))), [_X]),
    ("create_token", lambda: _module([F], lambda b, x: [b.add_dependency(
        b.negate(x), b.after_all(b.create_token()))]), [_X]),
]


@pytest.mark.parametrize("name, program, inputs", CASES, ids=[c[0] for c in CASES])
def test_each_rule_computes_what_its_op_computes(name, program, inputs):
    m = program()
    assert name in _names(m)
    d = decompose(m, single_device=True)
    assert name not in _names(d)
    assert _same_bits(verify.run(m, *inputs), verify.run(d, *inputs))
    # ... and the interpreter, which aborts on the op itself, runs the program now
    assert _same_bits(verify.interpret(m, *inputs), verify.run(m, *inputs))
    # ... and MHLO-only ops become printable as StableHLO (which jaxlib reads and runs)
    stablehlo = d.to_text(dialect=hlo.STABLEHLO)
    assert _same_bits(verify.run(stablehlo, *inputs), verify.run(m, *inputs))


def test_every_rule_has_a_case():
    assert {c[0] for c in CASES} | {"partition_id", "mulhi", "chlo.mulhi"} == \
        set(RULES) | set(SINGLE_DEVICE_RULES)


@pytest.mark.parametrize("et", [hlo.f16, hlo.bf16, hlo.f8E5M2, hlo.i8, hlo.ui16])
@pytest.mark.parametrize("largest", [None, False])
def test_topk_is_a_stable_sort_in_total_order(et, largest):
    # Ties (equal values, 0.0 and -0.0, NaNs) keep the lower index first, NaN above inf and
    # -NaN below -inf, as XLA's own topk orders them: the same bits on every draw.
    t = T((3, 8), et)
    m = _module([t], lambda b, x: list(b.topk(x, 5, largest=largest)))
    d = decompose(m)
    rng = np.random.default_rng(et.bits)
    for _ in range(4):
        if et.is_float:
            x = rng.choice([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan], (3, 8))
            x = x.astype(et.dtype)
            x[1, 3] = -x[1, 3] if np.isnan(x[1, 3]) else x[1, 3]
        else:
            x = rng.integers(0, 3, (3, 8)).astype(et.dtype)
        assert _same_bits(verify.run(m, x), verify.run(d, x))


@pytest.mark.parametrize("et", ["i2", "i4", "i8", "i16", "i32", "ui2", "ui4", "ui8", "ui16",
                                "ui32"])
def test_mulhi_is_the_high_half_of_the_exact_product(et):
    # Against Python's integers; XLA's own mulhi of 4-bit and 2-bit types is not (finding
    # 25 in docs/findings.md), so XLA runs the decomposition here, not the original.
    et = hlo.dtypes.element_type(et)
    t = T((64,), et)
    lo, hi = (-(2 ** (et.bits - 1)), 2 ** (et.bits - 1) - 1) if et.kind == "sint" else \
        (0, 2 ** et.bits - 1)
    rng = np.random.default_rng(et.bits)
    a = rng.integers(lo, hi + 1, 64)
    c = rng.integers(lo, hi + 1, 64)
    a[:4], c[:4] = [lo, hi, lo, hi], [lo, lo, hi, hi]
    want = np.array([(int(p) * int(q)) >> et.bits for p, q in zip(a, c)]).astype(et.dtype)
    for op in ("mulhi", "chlo_mulhi"):
        m = _module([t, t], lambda b, x, y: [getattr(b, op)(x, y)])
        d = decompose(m)
        args = [a.astype(et.dtype), c.astype(et.dtype)]
        np.testing.assert_array_equal(verify.run(d, *args)[0], want)
        np.testing.assert_array_equal(verify.interpret(m, *args)[0], want)


def test_64_bit_mulhi_and_collectives_of_other_devices_are_kept():
    t = T((4,), hlo.i64)
    m = _module([t, t], lambda b, x, y: [b.mulhi(x, y)])
    assert "mulhi" in _names(decompose(m))
    m = _module([F], lambda b, x: [b.all_reduce(x, lambda r, p, q: r.add(p, q), [[0, 1]]),
                                   b.collective_permute(x, [[0, 1]])])
    assert {"all_reduce", "collective_permute"} <= _names(decompose(m, single_device=True))
    # without single_device no collective is touched
    m = _module([F], lambda b, x: [b.all_gather(x, 1, [[0]]), b.replica_id()])
    assert {"all_gather", "replica_id"} <= _names(decompose(m))
    assert not decomposable(m) and decomposable(m, single_device=True)


def test_an_identity_in_a_branch_is_written_out_even_when_it_returns_a_captured_value():
    # An if's branches may use values from outside (XLA's export passes them in), so
    # copy(y) as a branch's result becomes y there.
    def body(b, p, y):
        return [b.if_(p, lambda t: t.copy(y), lambda e: e.negate(y))]
    m = _module([T((), hlo.i1), F], body)
    d = decompose(m)
    assert "copy" not in _names(d)
    for p in (True, False):
        args = [np.bool_(p), _X]
        assert _same_bits(verify.run(m, *args), verify.run(d, *args))
        assert _same_bits(verify.interpret(m, *args), verify.run(m, *args))


def test_the_input_module_is_unchanged_and_inner_regions_are_rewritten():
    m = _module([F], lambda b, x: [b.reduce(b.copy(x), b.constant(np.float32(0)), [1],
                                            lambda r, p, q: r.add(r.copy(p), q))])
    before = m.to_text()
    d = decompose(m)
    assert m.to_text() == before
    assert "copy" not in _names(d)
    assert _same_bits(verify.run(m, _X), verify.run(d, _X))


def test_verify_interpret_decomposes_one_device_programs_only():
    m = _module([F], lambda b, x: [b.all_reduce(x, lambda r, p, q: r.add(p, q), [[0]])],
                attributes={"mhlo.num_replicas": hlo.i32_attr(2)})
    with pytest.raises(verify.InterpreterUnsupported, match="all_reduce"):
        verify.interpret(m, _X)


def _four_bit_mulhi(m) -> bool:
    return any(op.spec.name in ("mulhi", "chlo.mulhi") and
               op.results[0].type.element_type.name in ("i4", "ui4") for _, op in walk(m))


def _subnormal(a) -> bool:
    import ml_dtypes
    a = np.asarray(a)
    if a.dtype.kind == "c":
        return _subnormal(a.real) or _subnormal(a.imag)
    try:
        tiny = ml_dtypes.finfo(a.dtype).smallest_normal
    except (ValueError, TypeError):
        return False  # not a float type
    x = np.abs(a.astype(np.float64))
    return bool(((x > 0) & (x < float(tiny))).any())


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(hst.programs(max_ops=6))
def test_generated_programs_run_alike_once_decomposed(program):
    # XLA on the program and on its decomposition: the same bits (NaNs may differ in
    # payload, both being NaN).
    m, inputs = program
    if not decomposable(m, single_device=True) or _names(m) & {"rng", "rng_bit_generator"} \
            or any(map(_subnormal, inputs)) or _four_bit_mulhi(m):
        # (XLA:CPU flushes subnormals in some ops: removing a copy changes that; XLA's
        # 4-bit mulhi is wrong, finding 25, and its decomposition right)
        return
    a = verify.run(m, *inputs)
    c = verify.run(decompose(m, single_device=True), *inputs)
    for x, y in zip(a, c):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes() or np.array_equal(x, y, equal_nan=True)
