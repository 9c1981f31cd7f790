"""Printer behaviour beyond single ops: MLIR's SSA numbering across functions and nested
regions, the pretty option, hex thresholds, and location modes — each checked against MLIR."""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
from mhlo_ir.ops.elementwise import BINARY, UNARY
from tests.oracle import assert_fixed_point, mlir_generic, normalize_hex

F = hlo.tensor((2,), hlo.f32)
S = hlo.tensor((), hlo.f32)


def nested_module() -> hlo.Module:
    """Several functions, each with nested regions, constants and calls: exercises MLIR's
    module-wide, last-region-first value numbering."""
    m = hlo.Module("nested", attributes={"mhlo.num_partitions": hlo.i32_attr(1)})
    helper = m.add_function("helper", [F, F], visibility="private")
    hb = helper.builder()
    hb.return_(hb.multiply(*helper.arguments))
    main = m.add_function("main", [F, S], visibility="public")
    b = main.builder()
    x, s = main.arguments
    y = b.call(helper, [x, x])
    zero = b.constant(np.float32(0))

    def body(r, acc, i):
        inner = r.while_([acc, i], lambda q, a, j: q.compare(j, j, "LT"),
                         lambda q, a, j: (q.add(a, a), j))
        return r.add(inner[0], acc), i

    w = b.while_([y, s], lambda r, a, i: r.compare(i, zero, "LT"), body)
    red = b.reduce(w[0], zero, [0], lambda r, a, e: r.maximum(a, e))
    branch = b.case(b.constant(np.int32(1)),
                    [lambda r: r.negate(red), lambda r: red, lambda r: r.add(red, red)])
    b.return_(w[0], branch)
    third = m.add_function("third", [S])
    tb = third.builder()
    tb.return_(tb.reduce(tb.broadcast_in_dim(third.arguments[0], (3,), []), third.arguments[0],
                         [0], lambda r, a, e: r.add(a, e)))
    return m


def test_numbering_matches_mlir_across_functions_and_regions():
    assert_fixed_point(nested_module())


def test_pretty_form_reads_back_as_the_same_module():
    m = nested_module()
    main = m.lookup("main")
    main.set_arg_attr(0, "mhlo.sharding", "{replicated}")
    main.set_result_attr(1, "jax.result_info", "out[1]")
    pretty = m.to_text(pretty=True, locations=False)
    assert pretty.startswith("module @nested attributes")
    assert "mhlo.add %" in pretty and "return " in pretty
    assert mlir_generic(pretty) == normalize_hex(m.to_text(locations=False))


@pytest.mark.parametrize("et", [hlo.f32, hlo.i32, hlo.i1, hlo.complex64])
def test_pretty_elementwise_ops_read_back(et):
    """Every same-typed elementwise op printed in custom form parses to the same op."""
    m = hlo.Module()
    t = hlo.tensor((2,), et)
    f = m.add_function("main", [t, t])
    b = f.builder()
    x, y = f.arguments
    outs = []
    for name, (kinds, _) in UNARY.items():
        if et.kind in kinds:
            outs.append(getattr(b, name + ("_" if name == "not" else ""))(x))
    for name, (kinds, _) in BINARY.items():
        if et.kind in kinds and name != "complex":
            outs.append(getattr(b, name + ("_" if name in ("and", "or") else ""))(x, y))
    outs.append(b.constant(np.arange(200).astype(et.dtype)))
    b.return_(*outs)
    assert mlir_generic(m.to_text(pretty=True)) == normalize_hex(m.to_text(locations=False))


def test_hex_threshold_option():
    m = hlo.Module()
    f = m.add_function("main", [])
    b = f.builder()
    b.return_(b.constant(np.arange(5, dtype=np.int8)))
    assert "dense<[0, 1, 2, 3, 4]>" in m.to_text()
    text = m.to_text(hex_threshold=2)
    assert 'dense<"0x0001020304">' in text
    assert mlir_generic(text) == mlir_generic(m.to_text())


def test_location_modes_parse_to_the_same_locations():
    m = hlo.Module("locs", location=hlo.loc("mod.py", 1, 1))
    f = m.add_function("main", [F], location=hlo.NameLoc("fn"),
                       arg_locations=[hlo.loc("arg.py", 2, 3)])
    b = f.builder()
    with b.at_location("a.py", 3, 4):
        y = b.add(f.arguments[0], f.arguments[0])
        y = b.add(y, y)
    y = b.multiply(y, y, location=hlo.NameLoc("jit(f)/mul", hlo.loc("a.py", 5, 6)))
    b.return_(y)
    inline, alias = m.to_text(), m.to_text(locations="alias")
    assert 'loc("a.py":3:4)' in inline and "#loc0 = loc(" in alias
    from tests.oracle import parse
    a = parse(inline).operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
    b2 = parse(alias).operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
    assert a == b2
    assert '"jit(f)/mul"' in a and '"a.py":3:4' in a and '"arg.py":2:3' in a


def test_printing_is_repeatable_and_does_not_change_the_module():
    m = nested_module()
    assert m.to_text() == m.to_text()
    assert m.to_text(pretty=True) == m.to_text(pretty=True)


def test_texts_cached_across_prints_follow_attribute_changes_and_options():
    """The printer keeps attribute and line texts across prints (keyed by the attribute
    mapping's identity): later prints must still show set_attr changes, other attribute
    values on the same op kind and types, and the hex threshold of each print."""
    def module(dims, value):
        m = hlo.Module("m")
        t = hlo.tensor((2, 3), hlo.f32)
        f = m.add_function("main", [t])
        b = f.builder()
        (x,) = f.arguments
        y = b.transpose(x, dims)
        c = b.constant(np.asarray(value, np.float32))
        b.return_(y, c)
        return m, y

    m1, y1 = module([1, 0], [1.0, 2.0, 3.0])
    first = m1.to_text(locations=False)
    assert_fixed_point(m1)
    y1.set_attr("mhlo.sharding", "{replicated}")
    again = m1.to_text(locations=False)
    assert again != first and 'mhlo.sharding = "{replicated}"' in again
    assert_fixed_point(m1)
    m2, _ = module([0, 1], [4.0, 5.0, 6.0])  # same op kinds and types, other values
    second = m2.to_text(locations=False)
    assert "array<i64: 0, 1>" in second or "dense<[0, 1]>" in second
    assert_fixed_point(m2)
    hexed = m2.to_text(locations=False, hex_threshold=1)
    assert '"0x' in hexed.lower() and normalize_hex(hexed) != normalize_hex(second)
    assert m2.to_text(locations=False) == second


def test_an_op_the_output_dialect_lacks_is_refused_not_printed():
    """mhlo.copy has no StableHLO twin: printing it as stablehlo.copy would give text jaxlib
    rejects, so the printer says which dialects have it."""
    import mhlo_ir as _hlo
    m = _hlo.Module("m")
    f = m.add_function("main", [_hlo.tensor((2,), _hlo.f32)])
    b = f.builder()
    (x,) = f.arguments
    b.return_(b.create("copy", (x,)).results[0])
    assert '"mhlo.copy"' in m.to_text()
    with pytest.raises(_hlo.OpBuildError, match="'copy' has no stablehlo form"):
        m.to_text(dialect=_hlo.STABLEHLO)



def test_the_line_shapes_kept_across_prints_match_mlir():
    """Each kind of op line the printer keeps parts for (one, two and more operands, none,
    a terminator, a region's return), printed twice in one module and in a second print,
    against MLIR's print: the kept parts give what the general path gives."""
    def build():
        m = hlo.Module("lines")
        f = m.add_function("main", [F, F, F])
        b = f.builder()
        x, y, z = f.arguments
        s = b.select(b.compare(x, y, "GT"), x, y)
        c = b.clamp(x, s, z)
        cc = b.concatenate([x, y, z, c], 0)
        cc2 = b.concatenate([c, z, y, x], 0)
        t = b.tuple([x, y, z])
        r = b.reduce(cc, b.constant(np.float32(0)), [0], "add")
        r2 = b.reduce(cc2, b.constant(np.float32(0)), [0], "maximum")
        b.return_(b.add(b.select(b.compare(y, z, "LT"), y, z), s), t, r, r2)
        return m
    first = assert_fixed_point(build())
    assert assert_fixed_point(build()) == first
