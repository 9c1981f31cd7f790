"""What constant operands hold (mhlo_ir/ops/held.py): the same checks whichever way the op is
made — a builder method, ``create``, parsed text, an edit after building — judged against
jaxlib's own verdict on hand-written text (its verifier, with none of our checks before it).
"""

from __future__ import annotations

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir import ModuleVerificationError, OpBuildError, f32, tensor as T
from mhlo_ir.parser import IllFormedOpError, parse
from verify.api import _jaxlib_parse_and_verify

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _text(body: str, result: str) -> str:
    return f"""module {{
  func.func public @main(%x: tensor<2x3xf32>) -> {result} {{
    {body}
  }}
}}
"""


_ZERO = '%z = "mhlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>'


def _shape(name, values):
    n = len(values)
    return (f'%{name} = "mhlo.constant"() {{value = dense<{list(values)}> : tensor<{n}xi64>}} : '
            f'() -> tensor<{n}xi64>')


# (op, text with the constant contradicting the result type, the same text with a constant
# that fits, what our error says, what jaxlib says of the contradiction)
CASES = {
    "dynamic_reshape": (
        lambda held: f"""{_shape("s", held)}
    %r = "mhlo.dynamic_reshape"(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<3x2xf32>
    return %r : tensor<3x2xf32>""", [2, 3], [3, 2], "tensor<3x2xf32>",
        r"operand output_shape holds \[2, 3\], but the result type is tensor<3x2xf32>",
        "incompatible with return type"),
    "dynamic_broadcast_in_dim": (
        lambda held: f"""{_shape("s", held)}
    %r = "mhlo.dynamic_broadcast_in_dim"(%x, %s) {{broadcast_dimensions = dense<[1, 2]> : \
tensor<2xi64>}} : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<4x2x3xf32>
    return %r : tensor<4x2x3xf32>""", [5, 2, 3], [4, 2, 3], "tensor<4x2x3xf32>",
        r"operand output_dimensions holds \[5, 2, 3\], but the result type is tensor<4x2x3xf32>",
        "incompatible with return type"),
    "rng": (
        lambda held: f"""{_ZERO}
    {_shape("s", held)}
    %r = "mhlo.rng"(%z, %z, %s) {{rng_distribution = #mhlo.rng_distribution<UNIFORM>}} : \
(tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<2x3xf32>
    return %r : tensor<2x3xf32>""", [3, 2], [2, 3], "tensor<2x3xf32>",
        r"operand shape holds \[3, 2\], but the result type is tensor<2x3xf32>",
        "incompatible with return type"),
    "dynamic_pad": (
        lambda held: f"""{_ZERO}
    {_shape("lo", held)}
    {_shape("hi", [0, 0])}
    {_shape("in", [0, 0])}
    %r = "mhlo.dynamic_pad"(%x, %z, %lo, %hi, %in) : (tensor<2x3xf32>, tensor<f32>, \
tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x3xf32>
    return %r : tensor<3x3xf32>""", [0, 1], [1, 0], "tensor<3x3xf32>",
        r"make shape \[2, 4\] of tensor<2x3xf32>, but the result type is tensor<3x3xf32>",
        "expected output dimension"),
    "dynamic_gather": (
        lambda held: f"""{_shape("i", [0, 0])}
    {_shape("s", held)}
    %r = "mhlo.dynamic_gather"(%x, %i, %s) {{dimension_numbers = #mhlo.gather<offset_dims = \
[0, 1], start_index_map = [0, 1], index_vector_dim = 0>}} : (tensor<2x3xf32>, tensor<2xi64>, \
tensor<2xi64>) -> tensor<2x2xf32>
    return %r : tensor<2x2xf32>""", [1, 2], [2, 2], "tensor<2x2xf32>",
        r"the slice sizes held, \[1, 2\], make result tensor<1x2xf32>, not tensor<2x2xf32>",
        "incompatible with return type"),
    "dynamic_conv": (
        lambda held: f"""%y = "mhlo.reshape"(%x) : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
    %k = "mhlo.constant"() {{value = dense<1.0> : tensor<1x3x1xf32>}} : () -> tensor<1x3x1xf32>
    %p = "mhlo.constant"() {{value = dense<[{held}]> : tensor<1x2xi64>}} : () -> tensor<1x2xi64>
    %r = "mhlo.dynamic_conv"(%y, %k, %p) {{batch_group_count = 1 : i64, dimension_numbers = \
#mhlo.conv<[b, 0, f]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64}} : \
(tensor<1x2x3xf32>, tensor<1x3x1xf32>, tensor<1x2xi64>) -> tensor<1x3x1xf32>
    return %r : tensor<1x3x1xf32>""", [1, 1], [1, 0], "tensor<1x3x1xf32>",
        r"the padding held \(\[\[1, 1\]\]\) makes the result tensor<1x4x1xf32>, but the "
        r"result type is tensor<1x3x1xf32>", "incompatible with return type"),
    "dynamic_iota": (  # (jaxlib takes the contradiction and runs the result type's shape)
        lambda held: f"""{_shape("s", held)}
    %r = "mhlo.dynamic_iota"(%s) {{iota_dimension = 0 : i64}} : (tensor<1xi64>) -> tensor<4xi32>
    return %r : tensor<4xi32>""", [5], [4], "tensor<4xi32>",
        r"operand output_shape holds \[5\], but the result type is tensor<4xi32>", None),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_parsed_text_is_judged_as_jaxlib_judges_it(op):
    make, bad, good, result, ours, theirs = CASES[op]
    if theirs is None:  # jaxlib takes it (tests/mhlo_ir/test_build_checks_vs_jaxlib.py runs it)
        _jaxlib_parse_and_verify(_text(make(bad), result))
    else:
        with pytest.raises(Exception, match=theirs):
            _jaxlib_parse_and_verify(_text(make(bad), result))
    # Refused where the op is read, at its line and column (as the builder refuses it).
    text = _text(make(bad), result)
    with pytest.raises(IllFormedOpError, match=f"'{op}'.*{ours}") as caught:
        parse(text)
    line = text.splitlines()[caught.value.line - 1]
    assert line[caught.value.column - 1:].startswith(f'"mhlo.{op}"'), (caught.value.line, line)
    # The fitting constant: both accept it, and the program runs to what XLA's static twin of
    # the op gives (checked against numpy for the reshape, the one with a numpy twin).
    _jaxlib_parse_and_verify(_text(make(good), result))
    module = parse(_text(make(good), result))
    if op == "dynamic_reshape":
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        (y,) = verify.run(module, x)
        np.testing.assert_array_equal(np.asarray(y), x.reshape(3, 2))


def _built(op, held):
    """The op made by ``create`` (which runs the op's checks on its operands too)."""
    m = hlo.Module("held")
    f = m.add_function("main", [T((2, 3), f32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    ints = b.constant(np.array(held, np.int64))
    if op == "dynamic_reshape":
        return m, b, ints, lambda: b.create("dynamic_reshape", (x, ints), None, [T((3, 2), f32)])
    zero = b.constant(np.float32(0))
    return m, b, ints, lambda: b.create("rng", (zero, zero, ints), {"rng_distribution": "UNIFORM"},
                                        [T((2, 3), f32)])


@pytest.mark.parametrize("op,bad,good", [("dynamic_reshape", [2, 3], [3, 2]),
                                         ("rng", [3, 2], [2, 3])])
def test_create_and_edits_are_judged_too(op, bad, good):
    _, _, _, make = _built(op, bad)
    with pytest.raises(OpBuildError, match=rf"'{op}' operand .* holds \[{bad[0]}, {bad[1]}\]"):
        make()
    m, b, ints, make = _built(op, good)
    b.return_(make().results[0])
    m.verify()
    ints.set_attr("value", np.array(bad, np.int64))  # an edit after building
    with pytest.raises(ModuleVerificationError, match=rf"op '{op}'.*holds \[{bad[0]}, "):
        m.verify()
    with pytest.raises(ModuleVerificationError):
        verify.check(m)  # (before jaxlib sees it)


def test_ops_alike_by_types_are_each_judged_by_what_they_hold():
    """The verifier takes ops alike in kind, types and attributes as judged once; two
    dynamic_reshapes alike by types but holding different shapes are not alike."""
    m = hlo.Module("alike")
    f = m.add_function("main", [T((2, 3), f32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    first = b.constant(np.array([3, 2], np.int64))
    second = b.constant(np.array([3, 2], np.int64))
    y = b.dynamic_reshape(x, first, T((3, 2), f32))
    z = b.dynamic_reshape(x, second, T((3, 2), f32))
    b.return_(y, z)
    m.verify()
    second.set_attr("value", np.array([6, 1], np.int64))
    with pytest.raises(ModuleVerificationError, match=r"holds \[6, 1\]"):
        m.verify()
    with pytest.raises(IllFormedOpError, match=r"^7:10: .*holds \[6, 1\]"):
        parse(m.to_text())  # (at the second, though its line reads as the first's)


def test_the_ops_whose_checks_read_their_operands():
    """The table's ops whose checks read operand Values: those whose shape, padding, bound or
    size operands jaxlib reads when constant (here), and copy (a prefetching copy copies a
    block argument: tests/mhlo_ir/test_build_checks_vs_jaxlib.py)."""
    from mhlo_ir.ops.spec import REGISTRY
    reading = sorted(name for name, spec in REGISTRY.items() if spec.operand_check is not None)
    assert reading == ["copy", "dynamic_broadcast_in_dim", "dynamic_conv", "dynamic_gather",
                       "dynamic_iota", "dynamic_pad", "dynamic_reshape", "real_dynamic_slice",
                       "rng", "set_dimension_size"]


@pytest.mark.parametrize("op", sorted(CASES))
@pytest.mark.parametrize("form", ["generic", "custom"])
def test_a_line_read_before_does_not_skip_the_check_of_what_its_operands_hold(op, form):
    """The parser remembers lines it has read and checked; the same line over a constant
    holding another shape must be checked again, whatever was read before (the tables are
    the process's): refused at its place, with verify off too."""
    make, bad, good, result, ours, _ = CASES[op]

    def text(held):
        t = _text(make(held), result)
        return t if form == "generic" else hlo.parse(t, verify=False, check_ops=False).to_text(
            pretty=True, dialect=hlo.STABLEHLO, locations=False)
    good_text, bad_text = text(good), text(bad)
    for _ in range(2):
        hlo.parse(good_text)
        for kw in ({}, {"verify": False}):
            with pytest.raises(IllFormedOpError, match=f"'{op}'.*{ours}"):
                hlo.parse(bad_text, **kw)
