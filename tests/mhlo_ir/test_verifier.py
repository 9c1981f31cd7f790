"""Module.verify(): the whole-module checks that single-op build checks cannot make.

Each broken module is made by building a valid one and then doing what the builder allows but
the IR forbids (using a value in the wrong place, editing lists and types after building).
Each message must name the function, the op and what is wrong. A valid module must pass, and
then jaxlib must accept it too, so the Python checks are not stricter than MLIR.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import ModuleVerificationError, f32, i32, tensor

F2 = tensor((2,), f32)
I2 = tensor((2,), i32)



def first(r):
    """The value of a single-result builder call (a Value, or a one-element tuple)."""
    return r[0] if isinstance(r, tuple) else r

def E(*parts):
    return ".*".join(re.escape(p) for p in parts)


def module(n_args=1, name="main", result_types=None):
    m = hlo.Module("v")
    f = m.add_function(name, [F2] * n_args, result_types, visibility="public")
    return m, f, f.builder()


def test_valid_module_passes_python_and_jaxlib():
    m = hlo.Module("ok")
    g = m.add_function("double", [F2])
    gb = g.builder()
    gb.return_(gb.add(g.arguments[0], g.arguments[0]))
    f = m.add_function("main", [F2], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    y = first(b.call(g, [x]))
    s = b.reduce(y, b.constant(np.float32(0)), [0], lambda bb, a, e: bb.add(a, e))
    # A region may use values of the enclosing block defined before its op.
    w = first(b.while_([s], lambda bb, v: bb.compare(v, bb.constant(np.float32(10)), "LT"),
                    lambda bb, v: bb.add(v, s)))
    z = first(b.if_(b.compare(w, s, "GE"), lambda bb: bb.negate(y), lambda bb: y))
    b.return_(z, w)
    assert m.verify() is m
    assert verify.check(m) == m.to_text()
    (out_z, out_w) = verify.run(m, np.array([1, 2], np.float32))
    np.testing.assert_array_equal(out_z, [-2, -4])
    assert out_w == 12  # s = 2 + 4 = 6; one step: 6 + 6


def test_value_from_another_function():
    m = hlo.Module("v")
    g = m.add_function("g", [F2])
    g.builder().return_(g.arguments[0])
    f = m.add_function("main", [F2], visibility="public")
    b = f.builder()
    b.return_(b.add(f.arguments[0], g.arguments[0]))  # g's argument leaks into main
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'add'", "operand 1 (tensor<2xf32>)",
                               "used outside the function that defines it",
                               "argument 0 of @g")):
        m.verify()


def test_value_from_inside_a_region_used_outside():
    m, f, b = module()
    inner = []

    def body(bb, a, e):
        inner.append(bb.add(a, e))
        return inner[-1]

    b.reduce(f.arguments[0], b.constant(np.float32(0)), [0], body)
    b.return_(inner[0])  # a region's value escapes into the function body
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'func.return'", "operand 0 (tensor<f32>)",
                               "outside the region that defines it")):
        m.verify()


def test_region_argument_used_outside():
    m, f, b = module()
    args = []

    def body(bb, a, e):
        args.append(a)
        return bb.add(a, e)

    b.reduce(f.arguments[0], b.constant(np.float32(0)), [0], body)
    b.return_(b.negate(args[0]))
    with pytest.raises(ModuleVerificationError, match=E("op 'negate'", "operand 0 (tensor<f32>)",
                                                        "outside the region")):
        m.verify()


def test_region_uses_value_defined_after_its_op():
    m, f, b = module()
    (x,) = f.arguments
    later = []
    b.reduce(x, b.constant(np.float32(0)), [0],
             lambda bb, a, e: bb.add(a, e))
    later.append(b.negate(x))
    # Rebuild the reduce's body so that it uses `later[0]`, defined after the reduce.
    red = b.block.operations[1]
    region = b.region([tensor((), f32)] * 2,
                      lambda bb, a, e: bb.add(a, bb.reduce(later[0], a, [0],
                                                           lambda b2, p, q: b2.add(p, q))))
    red.regions = (region,)
    b.return_(later[0])
    with pytest.raises(ModuleVerificationError, match=E("in @main, op 'reduce'",
                                                        "operand 0 (tensor<2xf32>)",
                                                        "before its definition")):
        m.verify()


def test_use_before_definition():
    m, f, b = module()
    (x,) = f.arguments
    y = b.add(x, x)
    z = b.multiply(y, y)
    b.return_(z)
    ops = b.block.operations
    ops[0], ops[1] = ops[1], ops[0]  # multiply now comes before the add that defines y
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'multiply'", "operand 0 (tensor<2xf32>)",
                               "used before its definition")):
        m.verify()


def test_function_without_return():
    m, f, b = module()
    b.add(f.arguments[0], f.arguments[0])
    with pytest.raises(ModuleVerificationError, match=E("function @main has no return")):
        m.verify()


def test_block_not_ending_with_terminator():
    m, f, b = module(result_types=[F2])
    b.add(f.arguments[0], f.arguments[0])
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'add'", "does not end with a return")):
        m.verify()


def test_empty_body():
    m, f, b = module(result_types=[F2])
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main", "block has no terminator", "empty")):
        m.verify()


def test_region_with_no_blocks():
    m, f, b = module()
    b.return_(f.arguments[0])
    f.body.blocks.clear()
    with pytest.raises(ModuleVerificationError, match=E("in @main", "region has no blocks")):
        m.verify()


def test_terminator_not_last():
    m, f, b = module()
    (x,) = f.arguments
    b.add(x, x)
    b.return_(x)
    ops = f.entry_block.operations
    ops.append(ops.pop(0))  # the add moved after the return, by hand: the builder refuses
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'func.return'", "terminator must be the last op")):
        m.verify()


def test_func_return_inside_a_region():
    m, f, b = module()
    (x,) = f.arguments

    def body(bb, a, e):  # ends its region with func.return instead of return
        bb.create("func.return", ([bb.add(a, e)],))

    s = b.reduce(x, b.constant(np.float32(0)), [0], body)
    b.return_(s)
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'func.return'",
                               "expected 'return' to end this region")):
        m.verify()


def test_region_return_at_function_level_returns_from_the_function():
    # (jaxlib reads and runs it, and jax writes it: tests/mhlo_ir/test_parser.py) with the
    # function's result types, checked as func.return's
    m, f, b = module(result_types=[F2])
    b.create("return", ([f.arguments[0]],))
    m.verify()
    f.result_types = (I2,)
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'return'", "returns (tensor<2xf32>)",
                               "@main is declared to return (tensor<2xi32>)")):
        m.verify()


def test_return_types_differ_from_function_type():
    m, f, b = module()
    b.return_(f.arguments[0])
    f.result_types = (I2,)
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'func.return'", "returns (tensor<2xf32>)",
                               "@main is declared to return (tensor<2xi32>)")):
        m.verify()


def test_return_count_differs_from_function_type():
    m, f, b = module()
    b.return_(f.arguments[0])
    f.result_types = (F2, F2)
    with pytest.raises(ModuleVerificationError,
                       match=E("returns (tensor<2xf32>)",
                               "declared to return (tensor<2xf32>, tensor<2xf32>)")):
        m.verify()


def test_call_to_unknown_function():
    m, f, b = module()
    y = first(b.call("missing", [f.arguments[0]], [F2]))
    b.return_(y)
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'func.call'", "calls @missing",
                               "not defined")):
        m.verify()


def test_call_argument_types():
    m, f, b = module()
    g = m.add_function("g", [I2])
    g.builder().return_(g.arguments[0])
    y = first(b.call("g", [f.arguments[0]], [I2]))  # by name: the builder cannot check
    b.return_(y)
    with pytest.raises(ModuleVerificationError,
                       match=E("op 'func.call'", "passes (tensor<2xf32>) to @g",
                               "takes (tensor<2xi32>)")):
        m.verify()


def test_call_argument_types_changed_after_building():
    m, f, b = module()
    g = m.add_function("g", [F2])
    g.builder().return_(g.arguments[0])
    y = first(b.call(g, [f.arguments[0]]))
    b.return_(y)
    m.verify()
    g.arg_types = (I2,)  # the body's block arguments stay f32: the signature now lies
    with pytest.raises(ModuleVerificationError,
                       match=E("function @g: the entry block takes (tensor<2xf32>)",
                               "arg_types are (tensor<2xi32>)")):
        m.verify()


def test_call_result_types():
    m, f, b = module()
    g = m.add_function("g", [F2])
    g.builder().return_(g.arguments[0])
    y = first(b.call("g", [f.arguments[0]], [I2]))
    b.return_(y)
    with pytest.raises(ModuleVerificationError,
                       match=E("op 'func.call'", "expects (tensor<2xi32>) from @g",
                               "returns (tensor<2xf32>)")):
        m.verify()


def test_duplicate_symbol_names():
    m, f, b = module()
    b.return_(f.arguments[0])
    g = m.add_function("main", [F2])  # uniquified to main_0 ...
    g.builder().return_(g.arguments[0])
    assert g.name == "main_0"
    g.name = "main"  # ... then renamed by hand
    with pytest.raises(ModuleVerificationError, match=E("symbol @main is defined twice")):
        m.verify()


def test_op_operands_edited_after_building():
    m, f, b = module(2)
    x, x2 = f.arguments
    xi = b.convert(x, i32)
    y = b.add(x, x2)
    b.return_(y)
    m.verify()
    y.owner.operands = (x, xi)
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'add'", "same element type",
                               "tensor<2xf32>", "tensor<2xi32>")):
        m.verify()


def test_op_result_type_edited_after_building():
    m, f, b = module()
    (x,) = f.arguments
    y = b.add(x, x)
    b.return_(y)
    y.type = I2  # inconsistent with its operands; the return is retyped consistently
    f.result_types = (I2,)
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'add'", "result types (tensor<2xi32>)",
                               "differ from the inferred (tensor<2xf32>)")):
        m.verify()


def test_op_attribute_edited_after_building():
    m, f, b = module()
    (x,) = f.arguments
    t = b.transpose(b.reshape(x, (1, 2)), [1, 0])
    b.return_(b.reshape(t, (2,)))
    m.verify()
    t.owner.set_attr("permutation", hlo.dense_i64([0, 0]))
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'transpose'", "permutation [0, 0]",
                               "not a permutation of 0..1")):
        m.verify()


def test_region_edited_after_building():
    m, f, b = module()
    (x,) = f.arguments
    w = first(b.while_([x], lambda bb, v: bb.constant(np.bool_(False)), lambda bb, v: v))
    b.return_(w)
    m.verify()
    cond = w.owner.regions[0].blocks[0]
    cond.operations[-1].operands = (cond.arguments[0],)  # cond now returns a tensor<2xf32>
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'while'", "cond returns (tensor<2xf32>)",
                               "expected (tensor<i1>)")):
        m.verify()


def test_constant_value_edited_after_building():
    m, f, b = module()
    c = b.constant(np.ones(2, np.float32))
    b.return_(c)
    with pytest.raises(hlo.OpBuildError, match=E("'constant' attribute value")):
        c.owner.set_attr("value", hlo.i32_attr(1))  # set_attr converts as the builder does
    c.owner.attributes = {"value": hlo.i32_attr(1)}  # ... but a mapping can be assigned
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'constant'", "attribute value is IntegerAttr",
                               "1 : i32", "which 'constant' cannot take")):
        m.verify()


def test_message_names_the_location():
    m, f, b = module()
    (x,) = f.arguments
    y = b.add(x, x)
    with b.at_location("model.py", 12, 3):
        z = b.multiply(y, y)
    b.return_(z)
    ops = b.block.operations
    ops[0], ops[1] = ops[1], ops[0]
    with pytest.raises(ModuleVerificationError,
                       match=E("op 'multiply' (location", "model.py", ":12:3")):
        m.verify()


def test_first_error_in_later_function():
    m = hlo.Module("v")
    a = m.add_function("a", [F2])
    a.builder().return_(a.arguments[0])
    c = m.add_function("c", [F2])
    cb = c.builder()
    cb.return_(cb.negate(a.arguments[0]))
    with pytest.raises(ModuleVerificationError, match=E("in @c, op 'negate'")):
        m.verify()


def test_custom_call_to_unknown_computation():
    m, f, b = module()
    (x,) = f.arguments
    y = first(b.custom_call("foo", [x], [F2], called_computations=[hlo.SymbolRefAttr("nope")]))
    b.return_(y)
    # Never hand this to jaxlib here: mlir_module_to_xla_computation crashes the process.
    with pytest.raises(ModuleVerificationError, match=E("@nope")):
        m.verify()


def test_closed_regions_may_use_outer_constants():
    """A constant defined outside a closed region may be used in it (MLIR verifies it, XLA
    copies it in, jaxlib's artifact reader writes it): sort, reduce and map run with numpy's
    numbers; an argument used there is still refused (below)."""
    t = hlo.tensor((4,), hlo.f32)
    m = hlo.Module("c")
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    x, = f.arguments
    one, two = b.constant(np.float32(1)), b.constant(np.float32(2.5))
    s = b.sort(x, lambda r, p, q: r.compare(r.add(p, one), q, "LT"), dimension=0,
               is_stable=True)
    mx = b.reduce(x, b.constant(np.float32(-np.inf)), (0,),
                  lambda r, p, q: r.maximum(r.maximum(p, q), two))
    mp = b.map([x], lambda r, p: r.multiply(p, two))
    b.return_(s, mx, mp)
    m.verify()
    assert hlo.parse(m.to_text()).to_text() == m.to_text()
    v = np.array([3, 1, 2, 0], np.float32)
    got = verify.run(m, v)
    assert got[0].tolist() == [1, 0, 3, 2]
    assert got[1].tolist() == 3.0 and got[2].tolist() == (v * 2.5).tolist()


def test_closed_regions_may_not_capture_outer_values():
    """jaxlib rejects a sort comparator or reduction body using an outer value; verify says
    so first (while/if bodies may capture)."""
    t, s = hlo.tensor((3,), hlo.f32), hlo.tensor((), hlo.f32)
    m = hlo.Module("t")
    f = m.add_function("main", [t, s], visibility="public")
    b = f.builder()
    x, y = f.arguments
    b.return_(b.sort(x, lambda r, p, q: r.compare(r.add(p, y), q, "LT"), dimension=0))
    with pytest.raises(hlo.ModuleVerificationError,
                       match=r"captured from outside the region of 'sort'"):
        m.verify()
    m2 = hlo.Module("ok")
    f2 = m2.add_function("main", [s, s], visibility="public")
    b2 = f2.builder()
    u, w = f2.arguments
    b2.return_(first(b2.if_(b2.compare(u, w, "LT"), lambda r: r.add(u, w), lambda r: w)))
    m2.verify()
    import verify
    verify.check(m2)


def test_multi_block_function_is_rejected():
    from mhlo_ir.ir import Block
    t = hlo.tensor((2,), hlo.f32)
    m = hlo.Module("e")
    f = m.add_function("main", [t])
    f.builder().return_(f.arguments[0])
    blk = Block([t])
    f.body.blocks.append(blk)
    blk.parent = f.body
    hlo.Builder(blk, f).return_(blk.arguments[0])
    with pytest.raises(hlo.ModuleVerificationError, match="has 2 blocks"):
        m.verify()


# -- ops alike are judged once per verification ---------------------------------------------
# Module.verify runs an op's rules once per (kind, operand types, attribute mapping, result
# types) for region-free ops holding a builder's read-only OpAttributes (or none). Each edit
# that changes what the rules see must still be judged.

def test_an_edited_op_among_ops_alike_is_judged_on_its_own():
    m, f, b = module(2)
    x, x2 = f.arguments
    ts = [b.transpose(b.reshape(v, (1, 2)), [1, 0]) for v in (x, x2, x)]
    assert ts[0].owner.attributes is ts[2].owner.attributes  # one shared mapping
    b.return_(b.add(b.reshape(ts[0], (2,)), b.reshape(ts[2], (2,))))
    m.verify()
    ts[2].owner.operands = (x,)  # rank 1 now: the shared permutation [1, 0] no longer fits
    with pytest.raises(ModuleVerificationError, match=E("in @main, op 'transpose'")):
        m.verify()


def test_a_shared_mapping_naming_a_function_is_followed_in_each_function():
    # Both custom_calls hold one mapping naming @h: the one inside @h (verified after @main's)
    # makes @h recursive, which only following every op that holds the mapping can see.
    m = hlo.Module("shared")
    f = m.add_function("main", [F2], visibility="public")
    b = f.builder()
    outer = first(b.custom_call("foo", [f.arguments[0]], [F2],
                                called_computations=[hlo.SymbolRefAttr("h")]))
    b.return_(outer)
    h = m.add_function("h", [F2], [F2])
    hb = h.builder()
    inner = first(hb.custom_call("foo", [h.arguments[0]], [F2]))
    hb.return_(inner)
    m.verify()
    inner.owner.attributes = outer.owner.attributes
    with pytest.raises(ModuleVerificationError, match=E("(@h -> @h)")):
        m.verify()


def test_an_unhashable_type_edited_in_is_named_as_such():
    m, f, b = module()
    (x,) = f.arguments
    y = b.negate(x)
    b.return_(b.negate(y))
    y.type = [y.type]
    with pytest.raises(ModuleVerificationError,
                       match=E("in @main, op 'negate'", "result type 0 must be a Type, got [")):
        m.verify()


def test_reductions_alike_are_judged_alike_and_an_edited_one_afresh():
    """The rules of ops whose one region is a combining block run once per kind, types,
    attributes and region recipe in a verification: an edit to one reduction's body (its
    inner op's type, its kind) is judged on its own."""
    def module():
        m = hlo.Module("m")
        f = m.add_function("main", [tensor((4, 3), f32)])
        b = f.builder()
        x, = f.arguments
        zero = b.constant(np.float32(0))
        outs = [b.reduce(x, zero, [1], "add") for _ in range(3)]
        b.return_(*outs)
        return m, outs
    m, outs = module()
    m.verify()
    # The last reduce's body made a comparison (still one op of the two arguments, so a
    # combining block, returning i1): its rules refuse it, after two alike passed.
    block = outs[2].regions[0].blocks[0]
    inner, ret = block.operations
    block.operations.clear()
    cmp = hlo.Builder(block).compare(*block.arguments, "LT")
    block.operations.append(hlo.ir.make_operation(ret.spec, (cmp,), (), None, (),
                                                  hlo.UNKNOWN, block))
    from mhlo_ir.combining import combining_recipe
    assert combining_recipe(outs[2]) is not None
    with pytest.raises(ModuleVerificationError, match="'reduce'.*tensor<i1>"):
        m.verify()
    # A body of another kind (subtract: not what the others hold) passes on its own merits.
    m, outs = module()
    inner = outs[1].regions[0].blocks[0].operations[0]
    inner.spec = hlo.ops.REGISTRY["subtract"]
    m.verify()
    got, _, _ = verify.run(m, np.arange(12, dtype=np.float32).reshape(4, 3))
    np.testing.assert_array_equal(got, np.arange(12, dtype=np.float32).reshape(4, 3).sum(1))


def _alike_module():
    m = hlo.Module("m")
    f = m.add_function("main", [tensor((4, 3), f32)])
    b = f.builder()
    x, = f.arguments
    ys = [b.add(x, x) for _ in range(3)]
    b.return_(ys[-1])
    return m, f, ys


def _faults():
    """Edits to the last of three alike adds, each a fault only that op has."""
    def location(m, f, ys):
        ys[2].location = "here"

    def twice(m, f, ys):
        f.entry_block.operations.insert(3, ys[1])

    def unhashable_type(m, f, ys):
        ys[2].type = [tensor((4, 3), f32)]

    def result_type(m, f, ys):
        ys[2].type = tensor((4, 3), i32)

    def foreign_operand(m, f, ys):
        other, g, zs = _alike_module()
        ys[2].operands = (zs[0], ys[1])

    def location_kind(m, f, ys):
        class Odd(hlo.NameLoc):
            pass
        ys[2].location = Odd("odd")

    def type_that_will_not_hash(m, f, ys):
        class BadHash:
            def __hash__(self):
                raise ValueError("no hash")

            def __repr__(self):
                return "BadHash"
        ys[2].type = BadHash()

    def spec_equal_to_another(m, f, ys):
        # An OpSpec equal (and hashing equal) to add's but named func.call: not add's.
        import attrs
        from mhlo_ir.ops.spec import OpSpec
        add = ys[2].spec
        Equal = type("Equal", (OpSpec,), {"__eq__": lambda s, o: o is add or o is s,
                                          "__hash__": lambda s: hash(add)})
        ys[2].spec = Equal(**{**{a.name: getattr(add, a.name) for a in attrs.fields(OpSpec)
                                 if a.init},
                              "name": "func.call"})
    # (no "regions" fault: a region-free single-result op's regions cannot be assigned)
    return [location, twice, unhashable_type, result_type, foreign_operand, location_kind,
            type_that_will_not_hash, spec_equal_to_another]


@pytest.mark.parametrize("fault", _faults(), ids=lambda f: f.__name__)
def test_ops_alike_to_one_that_passed_still_fail_on_their_own(fault, monkeypatch):
    """Region-free single-result ops alike to one that passed every check skip the checks
    that see only their kind, types and attributes: what is their own (location, place,
    operands, result type) still fails them, with the message the full checks give."""
    from mhlo_ir import verifier
    messages = []
    for alike in (True, False):
        if not alike:
            monkeypatch.setattr(verifier, "_LOCATION_CLASSES", frozenset())
        m, f, ys = _alike_module()
        m.verify()  # (the three alike pass)
        fault(m, f, ys)
        try:
            m.verify()
            messages.append(None)
        except Exception as e:  # noqa: BLE001 - whatever the full checks do, alike
            messages.append(f"{type(e).__name__}: {e}")
    assert messages[0] == messages[1]
    assert (messages[0] is None) == (fault.__name__ == "location_kind"), messages


@pytest.mark.parametrize("ops_checked", [False, True])
def test_a_value_whose_type_was_deleted_is_named_as_such(ops_checked):
    # (edits no builder makes: a type slot emptied) a message, never an AttributeError
    from mhlo_ir.verifier import verify_module
    m, f, b = module()
    (x,) = f.arguments
    y = b.add(x, x)
    b.return_(b.add(y, y))
    del y.type
    with pytest.raises(ModuleVerificationError, match=r"op 'add'.*(result types \(<no type>\)|"
                                                      r"operand 0's type is NoneType)"):
        verify_module(m, ops_checked=ops_checked)
    m, f, b = module()
    (x,) = f.arguments
    b.return_(b.add(x, x))
    del x.type
    with pytest.raises(ModuleVerificationError, match="block argument 0 .*not a BlockArgument "
                                                      "with a Type"):
        verify_module(m, ops_checked=ops_checked)


@pytest.mark.parametrize("ops_checked", [False, True])
def test_an_op_given_calls_spec_without_a_callee_is_refused(ops_checked):
    # ops_checked (the parser's mode) promises each op passed its rules; an op edited into a
    # call afterwards still gets a message, not a KeyError from the call checks.
    from mhlo_ir.ops import REGISTRY
    from mhlo_ir.verifier import verify_module
    m, f, b = module()
    (x,) = f.arguments
    y = b.add(x, x)
    b.return_(y)
    y.spec = REGISTRY["func.call"]
    with pytest.raises(ModuleVerificationError, match="op 'func.call'.*callee"):
        verify_module(m, ops_checked=ops_checked)
