"""What XLA:CPU cannot run is refused in Python, for Modules and text alike, before XLA sees
it: an all_to_all of 2-bit integers (it corrupts the process's heap: measured in a
subprocess here) and a domain inside a while loop (XLA's own error names no way out)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from verify.errors import CompileError


def _still_fails(r, ok_word):
    """The bypassed program's subprocess ``r`` failed as measured on jaxlib 0.10.2; with a
    jaxlib that no longer fails, skip (the refusal can then be lifted for that version)
    rather than fail: these tests show why a refusal exists, they do not pin XLA's bugs."""
    if r.returncode == 0 and ok_word in r.stdout:
        pytest.skip("this jaxlib no longer fails here: the refusal can be lifted for it")
    assert r.returncode != 0 and ok_word not in r.stdout, (r.returncode, r.stderr[-500:])


def _refused(m, pattern):
    """``m`` is refused in Python, as a Module and as text, with ``pattern`` in the message."""
    for source in (m, m.to_text()):
        with pytest.raises(CompileError, match=pattern) as e:
            verify.compile(source)
        assert e.value.jaxlib_message is None


def _all_to_all(et, two_results=True):
    m = hlo.Module("m")
    t = hlo.tensor((2, 4, 4), et)
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    y = b.all_to_all(x, 0, 0, 1, replica_groups=[[0]])
    b.return_(*((x, y) if two_results else (y,)))
    return m


@pytest.mark.parametrize("et", [hlo.i2, hlo.ui2])
def test_all_to_all_of_two_bit_integers_is_refused(et):
    m = _all_to_all(et)
    _refused(m, f"'all_to_all' of {et.name}: XLA:CPU corrupts")


def test_all_to_all_of_wider_integers_runs():
    for et in (hlo.i4, hlo.i8):
        x = (np.arange(32) % 3 - 1).astype(et.dtype).reshape(2, 4, 4)
        c = verify.compile(_all_to_all(et))
        for _ in range(50):
            got = c(x)
        np.testing.assert_array_equal(got[1].astype(np.int8), x.astype(np.int8))




def test_the_refused_all_to_all_does_corrupt_xla_cpus_heap():
    # The reason for the refusal, shown in a subprocess: the same program run through
    # jaxlib directly (the refusal bypassed) dies, or its results are wrong, within 300 runs.
    code = (
        "import numpy as np, mhlo_ir as hlo, verify, verify.api as api\n"
        "api._cpu_refusals = lambda m: None\n"
        "m = hlo.parse(open(0).read())\n"
        "c = verify.compile(m)\n"
        "x = (np.arange(32) % 2).astype(hlo.i2.dtype).reshape(2, 4, 4)\n"
        "for _ in range(300):\n"
        "    out = c(x)\n"
        "    if not np.array_equal(out[1].astype(np.int8), x.astype(np.int8)):\n"
        "        raise SystemExit('wrong result')\n"
        "print('survived')\n")
    r = subprocess.run([sys.executable, "-c", code], input=_all_to_all(hlo.i2).to_text(),
                       capture_output=True, text=True, timeout=120)
    _still_fails(r, "survived")


def _domain_in_loop():
    m = hlo.Module("m")
    t = hlo.tensor((4,), hlo.f16)
    f = m.add_function("main", [t], visibility="public")
    b = f.builder()
    (x,) = f.arguments

    def body(r, i, v):
        return [r.add(i, r.constant(np.int32(1))),
                r.domain(v, "{maximal device=0}", "{maximal device=0}")]
    out = b.while_([b.constant(np.int32(0)), x],
                   lambda r, i, v: r.compare(i, r.constant(np.int32(3)), "LT"), body)
    b.return_(out[1])
    return m


def test_a_domain_inside_a_while_loop_is_refused_and_elsewhere_runs():
    m = _domain_in_loop()
    _refused(m, "'domain' inside a while loop")
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((4,), hlo.f16)], visibility="public")
    b = f.builder()
    b.return_(b.domain(f.arguments[0], "{maximal device=0}", "{maximal device=0}"))
    x = np.arange(4, dtype=np.float16)
    np.testing.assert_array_equal(verify.run(m, x)[0], x)


def _bypassed_fails(monkeypatch, attempt, words):
    """With the CPU refusals bypassed, ``attempt()`` fails in jaxlib with ``words`` (the
    failure the refusal spares), or the test skips: a newer jaxlib may no longer fail."""
    import verify.api as api
    monkeypatch.setattr(api, "_cpu_refusals", lambda m: None)
    try:
        attempt()
    except Exception as e:  # noqa: BLE001 - jaxlib's CompileError or runtime error
        assert words in str(e)
    else:
        pytest.skip("this jaxlib no longer fails here: the refusal can be lifted for it")


def test_xla_rejects_the_domain_in_a_loop_itself(monkeypatch):
    _bypassed_fails(monkeypatch, lambda: verify.compile(_domain_in_loop()),
                    "Unhandled opcode for elemental IR emission: domain")


def _collective_of(op_name, make, et=hlo.complex64):
    """``op_name`` (add across replica group [0]) of the value ``make(b, x, et)`` builds in a
    main taking a (1, 2, 1) tensor ``x`` of ``et``."""
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((1, 2, 1), et)], visibility="public")
    b = f.builder()
    q = make(b, f.arguments[0], et)
    summed = lambda r, x, y: r.add(x, y)  # noqa: E731
    if op_name == "all_reduce":
        y = b.all_reduce(q, summed, replica_groups=[[0]])
    else:
        y = b.reduce_scatter(q, 1, summed, replica_groups=[[0]])
    b.return_(y)
    return m


def _c(b, et):
    return b.constant(np.array([[[1 + 2j], [3 + 4j]]], et.dtype))


# Complex values of constants alone that XLA folds to a splat (seeds 6004042, 19007619).
_SPLATS = {
    "c / c": lambda b, x, et: b.divide(_c(b, et), _c(b, et)),
    "splat constant": lambda b, x, et: b.constant(np.full((1, 2, 1), 1 - 2j, et.dtype)),
    "broadcast scalar": lambda b, x, et: b.broadcast_in_dim(
        b.constant(np.asarray(3 + 1j, et.dtype)), (1, 2, 1), ()),
    "complex of broadcasts": lambda b, x, et: b.complex(*[b.broadcast_in_dim(
        b.constant(np.float32(v)), (1, 2, 1), ()) for v in (2.0, 5.0)]),
    # constant_like reads only its operand's shape: a constant, though made from an argument
    "complex of constant_like": lambda b, x, et: b.complex(
        b.chlo_constant_like(9.0, b.real(x)), b.chlo_constant_like(-1.5, b.real(x))),
    # a dot contracting an empty slice of the argument: zeros, whatever the argument holds
    # (seed 813005284: a dot_general of a 3x0x2 argument)
    "dot of an empty slice": lambda b, x, et: b.dot_general(
        b.slice(x, (0, 0, 0), (1, 2, 0)), b.constant(np.zeros((0,), et.dtype)), ([2], [0]),
        ([], [])),
}


@pytest.mark.parametrize("what", sorted(_SPLATS))
@pytest.mark.parametrize("op_name", ["all_reduce", "reduce_scatter"])
def test_a_complex_collective_of_constants_is_refused(op_name, what):
    _refused(_collective_of(op_name, _SPLATS[what]),
             f"'{op_name}' of a complex tensor computed from constants alone: XLA:CPU aborts")


@pytest.mark.parametrize("op_name", ["all_reduce", "reduce_scatter"])
def test_complex_collectives_that_depend_on_an_argument_run(op_name):
    x = np.array([[[1 + 1j], [2 - 1j]]], np.complex64)
    divided = _collective_of(op_name, lambda b, x, et: b.divide(_c(b, et), x))
    np.testing.assert_allclose(verify.run(divided, x)[0],
                               np.array([[[1 + 2j], [3 + 4j]]]) / x, rtol=1e-6)
    # a broadcast of an argument's element is a splat too, but not a constant: it compiles
    spread = _collective_of(op_name, lambda b, x, et: b.broadcast_in_dim(
        b.reshape(b.slice(x, (0, 0, 0), (1, 1, 1)), ()), (1, 2, 1), ()))
    np.testing.assert_array_equal(verify.run(spread, x)[0], np.full((1, 2, 1), 1 + 1j))


@pytest.mark.parametrize("what", ["c / c", "splat constant", "complex of constant_like",
                                  "dot of an empty slice"])
def test_xla_cpu_aborts_on_the_refused_complex_collective(what):
    code = ("import mhlo_ir as hlo, verify, verify.api as api\n"
            "api._cpu_refusals = lambda m: None\n"
            "verify.compile(hlo.parse(open(0).read()))\n"
            "print('compiled')\n")
    r = subprocess.run([sys.executable, "-c", code],
                       input=_collective_of("all_reduce", _SPLATS[what]).to_text(),
                       capture_output=True, text=True, timeout=120)
    _still_fails(r, "compiled")
    assert "buffer != nullptr" in r.stderr


def _bitwise_of_narrowed(op_name, src=hlo.i32, dst=hlo.i8, n=4):
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((n,), src), hlo.tensor((n,), dst)],
                       visibility="public")
    b = f.builder()
    a, c = f.arguments
    method = getattr(b, op_name + "_" if op_name in ("and", "or") else op_name)
    b.return_(method(b.convert(a, dst), c))
    return m


@pytest.mark.parametrize("op_name", ["and", "or"])
def test_and_or_of_a_narrowing_signed_convert_is_refused(op_name):
    m = _bitwise_of_narrowed(op_name)
    _refused(m, f"'{op_name}' of a convert narrowing a signed integer: XLA:CPU segfaults")
    # What the message advises computes the same: the bitwise op in i32, converted after.
    a = np.array([1, 300, -5, 7], np.int32)
    c = np.array([2, 4, 8, -16], np.int8)
    w = hlo.Module("w")
    f = w.add_function("main", [hlo.tensor((4,), hlo.i32), hlo.tensor((4,), hlo.i8)],
                       visibility="public")
    b = f.builder()
    x, y = f.arguments
    b.return_(b.convert(getattr(b, op_name + "_")(x, b.convert(y, hlo.i32)), hlo.i8))
    want = getattr(np, "bitwise_" + op_name)(a.astype(np.int8), c)
    np.testing.assert_array_equal(verify.run(w, a, c)[0], want)


def test_the_refused_bitwise_pattern_through_reshapes_and_chlo_is_refused_too():
    """XLA fuses reshapes and broadcasts with the convert, and chlo's broadcasting and/or
    becomes the same op: both segfaulted (a review, bypassing the refusal)."""
    for kind in ("reshape", "chlo"):
        m = hlo.Module("m")
        f = m.add_function("main", [hlo.tensor((4,), hlo.i32), hlo.tensor((4,), hlo.i8)],
                           visibility="public")
        b = f.builder()
        a, c = f.arguments
        x = b.convert(a, hlo.i8)
        if kind == "reshape":
            x = b.reshape(b.reshape(x, (2, 2)), (4,))
            name = "or"
            b.return_(b.or_(x, c))
        else:
            name = "chlo.broadcast_and"
            b.return_(b.create("chlo.broadcast_and", (x, c)).results[0])
        _refused(m, f"'{name}' of a convert narrowing a signed integer: XLA:CPU segfaults")


def test_the_neighbours_of_the_refused_pattern_run():
    a = np.array([1, 300, -5, 7], np.int32)
    for m, args in [(_bitwise_of_narrowed("or", n=1), (a[:1], np.array([2], np.int8))),
                    (_bitwise_of_narrowed("or", hlo.i32, hlo.ui8),
                     (a, np.array([2, 4, 8, 16], np.uint8))),
                    (_bitwise_of_narrowed("xor"), (a, np.array([2, 4, 8, 16], np.int8)))]:
        got = verify.run(m, *args)[0]
        assert got.shape == args[1].shape


def test_xla_cpu_segfaults_on_the_refused_bitwise_op():
    code = ("import mhlo_ir as hlo, verify, verify.api as api, numpy as np\n"
            "api._cpu_refusals = lambda m: None\n"
            "m = hlo.parse(open(0).read())\n"
            "verify.run(m, np.array([1, 300, -5, 7], np.int32), np.arange(4, dtype=np.int8))\n"
            "print('ran')\n")
    r = subprocess.run([sys.executable, "-c", code], input=_bitwise_of_narrowed("or").to_text(),
                       capture_output=True, text=True, timeout=120)
    _still_fails(r, "ran")


def _widened_bitwise(op="and", src="ui4", dst="ui16", computed=(True, True)):
    """``op`` of two converts from ``src`` to ``dst``; ``computed``: whether each convert's
    source is an add (else the argument itself)."""
    m = hlo.Module("m")
    st = hlo.tensor((2,), hlo.element_type(src))
    f = m.add_function("main", [st, st], visibility="public")
    b = f.builder()
    ins = [b.add(a, a) if c else a for a, c in zip(f.arguments, computed)]
    x, y = (b.convert(v, hlo.element_type(dst)) for v in ins)
    b.return_(b.create(op, (x, y)).results[0])
    return m


def test_and_or_of_widened_sub_byte_unsigned_converts_is_refused():
    for op in ("and", "or"):
        _refused(_widened_bitwise(op), "fusion compiler fails on it")


def test_the_refused_bitwise_op_does_fail_in_xla(monkeypatch):
    _bypassed_fails(monkeypatch, lambda: verify.compile(_widened_bitwise()),
                    "Failed to translate module to LLVM IR")


def test_its_neighbours_compile_and_run():
    # xor, a narrower target, a signed source, and converts of the arguments themselves
    u4 = np.array([3, 5], hlo.element_type("ui4").dtype)
    i4 = np.array([3, 5], hlo.element_type("i4").dtype)
    cases = [(_widened_bitwise("xor"), u4, [0, 0]),           # 6^6, 10^10
             (_widened_bitwise(dst="ui8"), u4, [6, 10]),      # (3+3) & (3+3) ...
             (_widened_bitwise(src="i4", dst="i16"), i4, [6, -6]),  # 5+5 wraps to -6 in i4
             (_widened_bitwise(computed=(False, False)), u4, [3, 5])]
    for m, x, want in cases:
        (got,) = verify.run(m, x, x)
        np.testing.assert_array_equal(got.astype(np.int64), want)


def _collective(kind, et):
    t = f"tensor<3x3x4x{et.name}>"  # (12 elements survive 300 runs; 36 do not)
    body = {"collective_permute": f'"mhlo.collective_permute"(%x) <{{source_target_pairs = '
                                  f'dense<0> : tensor<1x2xi64>}}> : ({t}) -> {t}',
            "all_gather": f'"mhlo.all_gather"(%x) <{{all_gather_dim = 0 : i64, replica_groups '
                          f'= dense<0> : tensor<1x1xi64>}}> : ({t}) -> {t}'}[kind]
    return hlo.parse(f"module @m {{\n  func.func public @main(%x: {t}) -> {t} {{\n"
                     f"    %0 = {body}\n    return %0 : {t}\n  }}\n}}\n")


@pytest.mark.parametrize("kind", ["collective_permute", "all_gather"])
def test_other_two_bit_collectives_are_refused_and_wider_ones_run(kind):
    for et in (hlo.i2, hlo.ui2):
        _refused(_collective(kind, et), f"'{kind}' of {et.name}: XLA:CPU corrupts")
    x = (np.arange(36) % 2).astype(hlo.ui4.dtype).reshape(3, 3, 4)
    np.testing.assert_array_equal(verify.run(_collective(kind, hlo.ui4), x)[0], x)


@pytest.mark.parametrize("kind", ["collective_permute", "all_gather"])
def test_the_refused_two_bit_collectives_do_corrupt_the_heap(kind):
    code = (
        "import numpy as np, mhlo_ir as hlo, verify, verify.api as api\n"
        "api._cpu_refusals = lambda m: None\n"
        "c = verify.compile(hlo.parse(open(0).read()))\n"
        "x = (np.arange(36) % 2).astype(hlo.ui2.dtype).reshape(3, 3, 4)\n"
        "for _ in range(300):\n"
        "    if not np.array_equal(c(x)[0].astype(np.int8), x.astype(np.int8)):\n"
        "        raise SystemExit('wrong result')\n"
        "print('survived')\n")
    r = subprocess.run([sys.executable, "-c", code], input=_collective(kind, hlo.ui2).to_text(),
                       capture_output=True, text=True, timeout=120)
    _still_fails(r, "survived")


def _fft_gathered(dim):
    t = "tensor<3x4xcomplex<f32>>"
    return hlo.parse(f"""module @m {{
  func.func public @main(%y: {t}) -> {t} {{
    %0 = "mhlo.fft"(%y) <{{fft_length = dense<4> : tensor<1xi64>,
        fft_type = #mhlo<fft_type FFT>}}> : ({t}) -> {t}
    %1 = mhlo.add %0, %0 : {t}
    %2 = "mhlo.all_gather"(%1) <{{all_gather_dim = {dim} : i64,
        replica_groups = dense<0> : tensor<1x1xi64>}}> : ({t}) -> {t}
    return %2 : {t}
  }}
}}""")


def test_a_reduce_scatter_of_an_fft_along_a_minor_dimension_is_refused(monkeypatch):
    t = "tensor<3x4xcomplex<f32>>"

    def program(dim):
        return hlo.parse(f"""module @m {{
  func.func public @main(%y: {t}) -> {t} {{
    %0 = "mhlo.fft"(%y) <{{fft_length = dense<4> : tensor<1xi64>,
        fft_type = #mhlo<fft_type FFT>}}> : ({t}) -> {t}
    %1 = "mhlo.reduce_scatter"(%0) <{{replica_groups = dense<0> : tensor<1x1xi64>,
        scatter_dimension = {dim} : i64}}> ({{
    ^bb0(%a: tensor<complex<f32>>, %b: tensor<complex<f32>>):
      %s = mhlo.add %a, %b : tensor<complex<f32>>
      mhlo.return %s : tensor<complex<f32>>
    }}) : ({t}) -> {t}
    return %1 : {t}
  }}
}}""")
    _refused(program(1), "'reduce_scatter' along a dimension other than 0")
    y = (np.arange(12) + 1j).astype(np.complex64).reshape(3, 4)
    np.testing.assert_allclose(verify.run(program(0), y)[0], np.fft.fft(y), rtol=1e-5,
                               atol=1e-4)
    _bypassed_fails(monkeypatch, lambda: verify.run(program(1), y), "IsMonotonicWithDim0Major")


def test_an_all_gather_of_an_fft_along_a_minor_dimension_is_refused(monkeypatch):
    _refused(_fft_gathered(1), "'all_gather' along a dimension other than 0")
    y = (np.arange(12) + 1j).astype(np.complex64).reshape(3, 4)
    np.testing.assert_allclose(verify.run(_fft_gathered(0), y)[0], 2 * np.fft.fft(y),
                               rtol=1e-5, atol=1e-4)
    _bypassed_fails(monkeypatch, lambda: verify.run(_fft_gathered(1), y),
                    "IsMonotonicWithDim0Major")


def _fusion_called(kind, same):
    """``main`` calls (``func.call`` or ``composite``) a function whose fusion multiplies its
    two arguments, with ``x + x`` twice (``same``) or with ``x + x`` and ``y``. (With an
    argument of ``main`` twice, XLA survives.)"""
    call = ("%1 = call @f1(%s, {b}) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>"
            if kind == "call" else
            '%1 = mhlo.composite "my.op" %s, {b} {{decomposition = @f1}} : (tensor<3xi32>, '
            "tensor<3xi32>) -> tensor<3xi32>").format(b="%s" if same else "%y")
    return hlo.parse(f"""module @m {{
  func.func public @main(%x: tensor<3xi32>, %y: tensor<3xi32>) -> tensor<3xi32> {{
    %s = mhlo.add %x, %x : tensor<3xi32>
    {call}
    return %1 : tensor<3xi32>
  }}
  func.func private @f1(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {{
    %0 = "mhlo.fusion"(%a, %b) <{{fusion_kind = #mhlo<fusion_kind kLoop>}}> ({{
    ^bb0(%p: tensor<3xi32>, %q: tensor<3xi32>):
      %m = mhlo.multiply %p, %q : tensor<3xi32>
      mhlo.return %m : tensor<3xi32>
    }}) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    return %0 : tensor<3xi32>
  }}
}}""")


@pytest.mark.parametrize("kind", ["call", "composite"])
def test_a_call_handing_one_value_to_two_fusion_operands_is_refused(kind):
    _refused(_fusion_called(kind, True), "passes one value to two arguments")
    x, y = np.arange(3, dtype=np.int32), np.array([2, 3, 4], np.int32)
    np.testing.assert_array_equal(verify.run(_fusion_called(kind, False), x, y)[0], 2 * x * y)


def test_the_refused_call_does_abort_xla():
    code = ("import numpy as np, mhlo_ir as hlo, verify, verify.api as api\n"
            "api._cpu_refusals = lambda m: None\n"
            "x = np.arange(3, dtype=np.int32)\n"
            "print(verify.run(hlo.parse(open(0).read()), x, x))\n"
            "print('survived')\n")
    r = subprocess.run([sys.executable, "-c", code],
                       input=_fusion_called("composite", True).to_text(),
                       capture_output=True, text=True, timeout=120)
    _still_fails(r, "survived")


def _bitcasts(*types):
    """``main`` bitcasts ``x + x`` (of the first type) through each next type in turn."""
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.parse_type(types[0])], visibility="public")
    b = f.builder()
    v = b.add(f.arguments[0], f.arguments[0])
    for t in types[1:]:
        v = b.bitcast_convert(v, hlo.parse_type(t).element_type)
    b.return_(v)
    return m


def test_chained_rank_changing_bitcasts_are_refused(monkeypatch):
    narrowing = _bitcasts("tensor<3xf64>", "tensor<3x2xui32>", "tensor<3x2x4xui8>")
    _refused(narrowing, "changes the rank, of a value another one changed")
    _refused(_bitcasts("tensor<3x2x4xui8>", "tensor<3x2xui32>", "tensor<3xf64>"),
             "changes the rank")
    _refused(_bitcasts("tensor<3xf64>", "tensor<3x2xui32>", "tensor<3x2xf32>",
                       "tensor<3x2x2xui16>"), "changes the rank")
    # narrowing then widening back, or one step, compile and keep the bits
    x = np.array([1.5, -2.0, 3.25])
    for m, want in ((_bitcasts("tensor<3xf64>", "tensor<3x2xui32>", "tensor<3xui64>"),
                     (2 * x).view(np.uint64)),
                    (_bitcasts("tensor<3xf64>", "tensor<3x8xui8>"),
                     (2 * x).view(np.uint8).reshape(3, 8))):
        np.testing.assert_array_equal(verify.run(m, x)[0], want)
    _bypassed_fails(monkeypatch, lambda: verify.compile(narrowing),
                    "Expected instruction to have shape equal to")


def _in_scan(make):
    """A scan over the rows of a (2, 3) i1 argument whose body is ``make(r, row, carry)``."""
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.i1)], visibility="public")
    b = f.builder()
    b.return_(*b.scan(f.arguments[0], b.constant(np.bool_(True)), 0,
                      lambda r, row, c: [make(r, row, c), c]))
    return m


def _clamp_in_while():
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((3,), hlo.i1), hlo.tensor((), hlo.i1)],
                       visibility="public")
    b = f.builder()
    x, lo = f.arguments
    out = b.while_([b.constant(np.int32(0)), x],
                   lambda r, i, y: r.compare(i, r.constant(np.int32(2)), "LT"),
                   lambda r, i, y: [r.add(i, r.constant(np.int32(1))), r.clamp(lo, y, lo)])
    b.return_(out[1])
    return m


def test_a_boolean_clamp_in_a_loop_body_is_refused_and_elsewhere_runs():
    _refused(_clamp_in_while(), "'clamp' of i1 values inside a while loop")
    _refused(_in_scan(lambda r, row, c: r.clamp(c, row, c)), "'clamp' of i1 values")
    _refused(_in_scan(lambda r, row, c: r.domain(row, "{maximal device=0}",
                                                 "{maximal device=0}")), "'domain' inside")
    # at the top level it runs, and the advice (and(or(x, lo), hi)) computes the same
    m = hlo.Module("m")
    t, s = hlo.tensor((4,), hlo.i1), hlo.tensor((), hlo.i1)
    f = m.add_function("main", [t, s, s], visibility="public")
    b = f.builder()
    x, lo, hi = f.arguments
    b.return_(b.clamp(lo, x, hi), b.and_(b.or_(x, b.broadcast_in_dim(lo, (4,), ())),
                                        b.broadcast_in_dim(hi, (4,), ())))
    xs = np.array([False, True, False, True])
    for bounds in ((False, True), (True, True), (False, False)):
        got, advice = verify.run(m, xs, np.bool_(bounds[0]), np.bool_(bounds[1]))
        np.testing.assert_array_equal(got, advice)
        np.testing.assert_array_equal(got, np.minimum(np.maximum(xs, bounds[0]), bounds[1]))


def test_xla_rejects_the_boolean_clamp_in_a_loop_itself(monkeypatch):
    _bypassed_fails(monkeypatch, lambda: verify.compile(_clamp_in_while()),
                    "Clamp unimplemented for PRED")
    _bypassed_fails(monkeypatch, lambda: verify.compile(
        _in_scan(lambda r, row, c: r.clamp(c, row, c))), "Clamp unimplemented for PRED")


def _abs_of_complex_iota(through=None):
    m = hlo.Module("a")
    f = m.add_function("main", [], visibility="public")
    b = f.builder()
    c = hlo.complex64
    if through == "broadcast":
        v = b.broadcast_in_dim(b.iota((3,), c, 0), (2, 3), [1])
    elif through == "sum":
        i = b.iota((2, 3), c, 0)
        v = b.add(i, i)
    elif through == "real":
        v = b.convert(b.iota((2, 3), hlo.f32, 0), c)
    else:
        v = b.iota((2, 3), c, 0)
    b.return_(b.abs(v))
    return m


def test_abs_of_a_complex_iota_is_refused_and_its_neighbours_run():
    for through in (None, "broadcast"):
        _refused(_abs_of_complex_iota(through), "'abs' of a complex value computed from an "
                                                "iota")
    want = np.repeat(np.arange(2, dtype=np.float32)[:, None], 3, 1)
    np.testing.assert_array_equal(verify.run(_abs_of_complex_iota("sum"))[0], 2 * want)
    np.testing.assert_array_equal(verify.run(_abs_of_complex_iota("real"))[0], want)


def test_xla_cpu_aborts_on_the_abs_of_a_complex_iota():
    code = ("import mhlo_ir as hlo, verify, verify.api as api\n"
            "api._cpu_refusals = lambda m: None\n"
            "verify.run(hlo.parse(open(0).read()))\n"
            "print('ran')\n")
    r = subprocess.run([sys.executable, "-c", code], input=_abs_of_complex_iota().to_text(),
                       capture_output=True, text=True, timeout=120)
    _still_fails(r, "ran")


def _default_rng(et):
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((2,), et)], visibility="public")
    b = f.builder()
    b.return_(*b.rng_bit_generator(f.arguments[0], (3,), hlo.ui32, "DEFAULT"))
    return m


@pytest.mark.parametrize("et", [hlo.i64, hlo.ui32, hlo.i32])
def test_a_default_rng_of_a_state_only_xla_tpu_takes_is_refused(et, monkeypatch):
    """DEFAULT is the backend's algorithm: XLA:TPU's takes these 2-word states (the builder
    keeps them: tests/mhlo_ir/ops/test_random_errors.py), XLA:CPU's is PHILOX on ui64."""
    m = _default_rng(et)
    _refused(m, rf"'rng_bit_generator' DEFAULT with initial_state tensor<2x{et.name}>: "
                "XLA:CPU's default algorithm is PHILOX")
    _bypassed_fails(monkeypatch, lambda: verify.compile(m),
                    "shift-right-logical with different element types")


def test_a_default_rng_of_ui64_words_runs():
    key = np.array([1, 2], np.uint64)
    state, bits = verify.run(_default_rng(hlo.ui64), key)
    assert bits.shape == (3,) and bits.dtype == np.uint32 and not np.array_equal(state, key)


def _complex_sort(direction, holder="sort"):
    """A sort of a complex vector (or a scan over its elements) by ``compare direction``."""
    m = hlo.Module("s")
    f = m.add_function("main", [hlo.tensor((3,), hlo.complex64)], visibility="public")
    b = f.builder()
    x = f.arguments[0]
    if holder == "sort":  # (nested in an and: the compare need not be the comparator's root)
        b.return_(b.sort(x, lambda r, p, q: r.and_(r.compare(p, q, direction),
                                                    r.constant(np.bool_(True)))))
    else:
        b.return_(b.scan(x, [], 0, lambda r, e: [r.compare(e, e, direction)]))
    return m


@pytest.mark.parametrize("holder", ["sort", "scan"])
@pytest.mark.parametrize("direction", ["LT", "GE"])
def test_an_ordered_complex_compare_in_a_comparator_or_scan_body_is_refused(direction,
                                                                              holder):
    _refused(_complex_sort(direction, holder), f"'compare' {direction} of complex values in "
                                               f"a '{holder}' .*: XLA:CPU cannot compile it")


def test_xla_rejects_the_ordered_complex_compare_in_a_comparator_itself(monkeypatch):
    for holder in ("sort", "scan"):
        _bypassed_fails(monkeypatch, lambda: verify.compile(_complex_sort("LT", holder)),
                        "UNIMPLEMENTED: complex comparison 'LT'")


def test_complex_equality_in_a_comparator_and_ordered_compares_elsewhere_run():
    x = np.array([1 + 2j, 3 - 1j, 0.5 + 0j], np.complex64)
    for holder in ("sort", "scan"):
        verify.run(_complex_sort("NE", holder), x)
    m = hlo.Module("m")
    f = m.add_function("main", [hlo.tensor((3,), hlo.complex64)], visibility="public")
    b = f.builder()
    y = f.arguments[0]
    b.return_(b.compare(y, y, "LT"),
              b.map([y], lambda r, e: r.compare(e, r.add(e, e), "LT")),
              b.reduce(y, b.constant(np.complex64(0)), [0],
                       lambda r, a, e: r.select(r.compare(a, e, "GT"), a, e)))
    verify.run(m, x)


def _dot(lt, rt, res):
    lt, rt, res = (hlo.element_type(n) for n in (lt, rt, res))
    m = hlo.Module("dot")
    f = m.add_function("main", [hlo.tensor((2, 3), lt), hlo.tensor((3, 2), rt)],
                       visibility="public")
    b = f.builder()
    kw = {} if lt == rt == res else {"result_element_type": res}
    b.return_(b.dot_general(*f.arguments, contracting_dimensions=((1,), (0,)), **kw))
    return m


@pytest.mark.parametrize("types", [("i4", "i4", "i32"), ("i4", "i8", "i32"),
                                   ("ui4", "ui4", "ui8"), ("f4E2M1FN", "f32", "f32")])
def test_a_dot_widening_a_four_bit_operand_is_refused(types):
    _refused(_dot(*types), rf"'dot_general' of {types[0]} x {types[1]} into {types[2]}.*"
                           "convert the operands")


def test_xla_cpu_rejects_the_widening_dot_itself(monkeypatch):
    _bypassed_fails(monkeypatch, lambda: verify.compile(_dot("i4", "i8", "i32")),
                    "custom element sizes on non-sub-byte types")


@pytest.mark.parametrize("et, a, c, lo", [
    ("i4", [[1, -2, 3], [-8, 5, 7]], [[1, 0], [2, 1], [3, -1]], -8),
    ("ui4", [[1, 2, 3], [4, 5, 15]], [[1, 0], [2, 1], [3, 9]], 0)])
def test_four_bit_dots_of_one_type_run_as_numpy_wraps(et, a, c, lo):
    """i4 x i4 -> i4 (and ui4) compile and give the product wrapped into 4 bits."""
    a, c = np.array(a), np.array(c)
    dtype = hlo.element_type(et).dtype
    (got,) = verify.run(_dot(et, et, et), a.astype(dtype), c.astype(dtype))
    np.testing.assert_array_equal(got.astype(np.int64), (a @ c - lo) % 16 + lo)
