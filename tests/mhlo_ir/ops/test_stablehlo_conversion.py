"""Proof of the StableHLO printer against jaxlib's own MHLO-to-StableHLO conversion.

For every per-op case: our StableHLO text (``to_text(dialect=STABLEHLO)``) is, byte for byte
after MLIR's generic re-print, what jaxlib's ``mhlo_to_stablehlo`` makes of our MHLO text; and
jaxlib compiles and runs both to the same bits. An op without a StableHLO form is an
OpBuildError naming the op and what to use instead, and what that error says about jaxlib's
conversion (a ``custom_call @mhlo.<op>``, or no conversion at all) is checked against jaxlib.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import pkgutil
import re
import sys
import tempfile

import numpy as np
import pytest

import mhlo_ir as hlo
import verify
from mhlo_ir.dialect import STABLEHLO
from mhlo_ir.ir import walk
from mhlo_ir.errors import OpBuildError
from mhlo_ir.ops.spec import INSTEAD_OF, MHLO_ONLY, STABLEHLO_NAMESAKE_DIFFERS, UNDECLARED
from tests import oracle
from tests.mhlo_ir import ops as ops_pkg
from tests.mhlo_ir.ops.cases import CASES, assert_close

for _m in pkgutil.iter_modules(ops_pkg.__path__):
    if _m.name.startswith("cases_"):
        importlib.import_module(f"{ops_pkg.__name__}.{_m.name}")

CASE_LIST = [c for cs in CASES.values() for c in cs]

# Cases where jaxlib's conversion is not a plain rename: DialectConversion folds an op before
# legalizing it, so jaxlib's output is a simplified program. Ours (the unfolded one) must
# differ, verify, and run to the same results.
FOLDED = {
    "tuple:mixed_round_trip": "get_tuple_element(tuple(x, ...)) folds to x",
    "tuple:nested": "get_tuple_element(tuple(x, ...)) folds to x",
    "get_tuple_element:each_index": "get_tuple_element(tuple(x, ...)) folds to x",
    "while:bool_and_complex_state_zero_trips": "a while whose condition is the constant "
                                               "false folds to its operands",
}

# Cases whose op StableHLO spells otherwise than jaxlib's conversion of our MHLO print: the
# AST holds the StableHLO spelling, which MHLO spells as XLA's conversion of it does; ours
# must differ from jaxlib's conversion, verify, and run the same, as FOLDED's.
SPELLED_OTHERWISE = {
    "custom_call:jax_ffi_spelling": "JAX's typed-FFI spelling (api 1, mhlo.backend_config) "
                                    "prints as api 4 in MHLO, which converts back as api 4",
}

# Cases whose StableHLO text we print although jaxlib cannot convert the MHLO (strict: the
# conversion must still fail, and MLIR must still reject our text).
# Cases of ops StableHLO has, in a form it lacks: refused by the op's dialect_check, and
# jaxlib's conversion fails on them too.
REFUSED_FORMS = {
    "all_to_all:i32_tuple_form": "StableHLO's all_to_all has no tuple form (split_dimension, "
                                 "concat_dimension and split_count are required)",
}

# Cases whose StableHLO text is jaxlib's conversion but which XLA's StableHLO import cannot
# translate, where its MHLO import folds the op first (strict: the run must still fail so).
NOT_IMPORTED = {
    "dynamic_conv:f32_constant_padding": "MHLO's import folds a constant padding into a "
                                         "convolution; StableHLO's has no dynamic_conv",
}


def refused(spec) -> bool:
    """Whether printing ``spec``'s op as StableHLO is an error."""
    return spec.namespace == "hlo" and (spec.dialects == MHLO_ONLY
                                        or spec.name in STABLEHLO_NAMESAKE_DIFFERS)


def _specs(module) -> set:
    return {op.spec for _, op in walk(module)}


def _with_stderr(fn, *args):
    """``fn(*args)`` with file descriptor 2 captured: jaxlib writes the diagnostics of a failed
    conversion ("failed to legalize operation 'mhlo.copy'") there, not into the exception.
    Returns (result, None) or (None, the exception's message and what it wrote)."""
    with tempfile.TemporaryFile() as f:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            return fn(*args), None
        except Exception as e:  # noqa: BLE001 - jaxlib raises its own runtime error type
            error = str(e)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return None, f"{error}\n{f.read().decode(errors='replace')}"


def jaxlib_stablehlo(mhlo_text: str) -> str:
    """jaxlib's conversion of ``mhlo_text``, in MLIR's generic print (raises on failure)."""
    from verify import _jaxlib
    oracle.skip_unless_readable(mhlo_text)
    _, X = _jaxlib.xla()
    return oracle.mlir_generic(X.mlir.mhlo_to_stablehlo(mhlo_text))


@functools.lru_cache(maxsize=None)
def conversion(case_id: str):
    """(the case's module, its inputs, jaxlib's StableHLO or None, jaxlib's error or None);
    built once per case, so both texts run on the same inputs."""
    m, inputs = {c.id: c for c in CASE_LIST}[case_id].build()
    theirs, error = _with_stderr(jaxlib_stablehlo, m.to_text(locations=False))
    return m, inputs, theirs, error


def _diff(ours, theirs) -> str:
    return "\n".join(difflib.unified_diff(ours.splitlines(), theirs.splitlines(), "ours",
                                          "jaxlib", lineterm=""))


# -- running both texts, many cases to a compile ----------------------------------------------
# XLA compiles one program of a few dozen cases in far less time than those cases one by one
# (compiling dominates this file). Each case's functions keep their bodies and get a prefix;
# a public @main calls every case's main. A batch that fails to compile falls back to its
# cases one by one, so a failure is still reported against its case.

BATCH = 24
_SYM_NAME = re.compile(r'sym_name = "([\w$.\-]+)"')
_SYM_REF = re.compile(r"@([\w$.\-]+)")
_HEAD = '"builtin.module"() <{sym_name = "case"}> ({'
_TAIL = "}) : () -> ()"


def _renamed_body(text: str, prefix: str) -> str | None:
    lines = text.splitlines()
    if lines[0] != _HEAD or lines[-1] != _TAIL:
        return None  # module attributes (replicas...): compiled on its own
    body = "\n".join(lines[1:-1])
    body = _SYM_NAME.sub(lambda m: f'sym_name = "{prefix}{m.group(1)}"', body)
    body = _SYM_REF.sub(lambda m: f"@{prefix}{m.group(1)}", body)
    return body.replace('sym_visibility = "public"', 'sym_visibility = "private"')


def _batched_text(entries, dialect) -> str | None:
    """One module running every ``(module, text)`` of ``entries``: its @main takes all their
    arguments and returns all their results."""
    bodies, ins, outs, calls, rets = [], [], [], [], []
    n_args = 0
    for i, (m, text) in enumerate(entries):
        body = _renamed_body(text, f"c{i}_")
        if body is None:
            return None
        bodies.append(body)
        ft = m.lookup("main").type
        a = [t.render(dialect) for t in ft.inputs]
        r = [t.render(dialect) for t in ft.results]
        names = [f"%arg{n_args + k}" for k in range(len(a))]
        n_args += len(a)
        ins += a
        outs += r
        head = "" if not r else (f"%r{i} = " if len(r) == 1 else f"%r{i}:{len(r)} = ")
        calls.append(f'    {head}"func.call"({", ".join(names)}) <{{callee = @c{i}_main}}> : '
                     f'({", ".join(a)}) -> ({", ".join(r)})')
        rets += [f"%r{i}"] if len(r) == 1 else [f"%r{i}#{k}" for k in range(len(r))]
    args = ", ".join(f"%arg{k}: {t}" for k, t in enumerate(ins))
    main = [f'  "func.func"() <{{function_type = ({", ".join(ins)}) -> ({", ".join(outs)}), '
            'sym_name = "main", sym_visibility = "public"}> ({', f"  ^bb0({args}):", *calls,
            f'    "func.return"({", ".join(rets)}) : ({", ".join(outs)}) -> ()', "  }) : () -> ()"]
    return "\n".join(['"builtin.module"() <{sym_name = "batch"}> ({', *main, *bodies, _TAIL])


def _run_texts(entries, inputs, dialect, client) -> list:
    """Each entry's outputs (a list of arrays) or the exception running it raised;
    ``inputs[i]`` are entry i's arguments."""
    text = _batched_text(entries, dialect) if len(entries) > 1 else None
    if text is not None:
        try:
            flat = verify.compile(text, client=client)(
                *[x for args in inputs for x in args])
        except Exception:  # noqa: BLE001 - one case spoils the batch: run them one by one
            pass
        else:
            out, k = [], 0
            for m, _ in entries:
                n = len(m.lookup("main").type.results)
                out.append(flat[k:k + n])
                k += n
            return out
    out = []
    for (_, t), args in zip(entries, inputs):
        try:
            out.append(verify.compile(t, client=client)(*args))
        except Exception as e:  # noqa: BLE001 - reported by the case's test
            out.append(e)
    return out


@pytest.fixture(scope="module")
def runs(cpu_client) -> dict:
    """case id -> (MHLO outputs, StableHLO outputs) for every case that executes and prints
    as StableHLO; outputs are lists of arrays or the exception raised."""
    todo = []
    for case in CASE_LIST:
        if case.reference is None or not _readable(case):
            continue
        m, inputs, _, _ = conversion(case.id)
        try:
            ours = m.to_text(locations=False, dialect=STABLEHLO)
        except OpBuildError:
            continue
        todo.append((case.id, m, inputs, ours))
    result = {}
    for start in range(0, len(todo), BATCH):
        chunk = todo[start:start + BATCH]
        per_dialect = []
        for dialect, pick in ((hlo.MHLO, lambda e: e[1].to_text(locations=False)),
                              (STABLEHLO, lambda e: e[3])):
            entries = [(e[1], pick(e)) for e in chunk]
            per_dialect.append(_run_texts(entries, [e[2] for e in chunk], dialect,
                                          cpu_client))
        for e, a, b in zip(chunk, *per_dialect):
            result[e[0]] = (a, b)
    return result


def _same_hlo(m, ours) -> bool:
    from verify import _jaxlib
    _, X = _jaxlib.xla()
    return (X.mlir.mlir_module_to_xla_computation(m.to_text(locations=False)).as_hlo_text()
            == X.mlir.mlir_module_to_xla_computation(ours).as_hlo_text())


def _compare_runs(case, m, ours, runs):
    """Bit-equal results, unless XLA makes different HLO of the two texts (its StableHLO
    import expands complex log, sqrt, ... into real arithmetic that MHLO's path leaves to
    the backend): then equal to a few ulps."""
    if case.reference is None:
        return
    mhlo_out, shlo_out = runs[case.id]
    if case.id in NOT_IMPORTED:
        assert isinstance(shlo_out, Exception) and "can't be translated to XLA HLO" in \
            str(shlo_out), f"{case.id}: XLA imports it from StableHLO now: remove it"
        shlo_out = mhlo_out
    for out in (mhlo_out, shlo_out):
        if isinstance(out, Exception):
            raise out
    assert len(mhlo_out) == len(shlo_out)
    exact = None
    for i, (a, b) in enumerate(zip(mhlo_out, shlo_out)):
        what = f"{case.id} result {i} (StableHLO vs MHLO)"
        try:
            assert_close(b, a, what=what)
        except AssertionError:
            if exact is None:
                exact = _same_hlo(m, ours)
            if exact or a.dtype.kind not in "fc":
                raise
            eps = float(np.finfo(a.dtype).eps)
            assert_close(b, a, rtol=16 * eps, atol=16 * eps, what=what + " (HLO differs)")


def _readable(case) -> bool:
    """Whether jaxlib can read the case's text to convert it (not quantized cases)."""
    return oracle.readable(case.build()[0].to_text(locations=False))


@pytest.mark.parametrize("case", CASE_LIST, ids=lambda c: c.id)
def test_stablehlo_is_jaxlibs_conversion(case, runs):
    oracle.skip_unless_readable(case.build()[0].to_text(locations=False))
    m, inputs, theirs, error = conversion(case.id)
    try:
        ours = m.to_text(locations=False, dialect=STABLEHLO)
    except OpBuildError as e:
        if case.id in REFUSED_FORMS:
            assert error is not None, f"{case.id}: jaxlib converts it now; print it"
            assert re.match(rf"'{re.escape(case.op)}' in its .* has no stablehlo form", str(e))
            return
        names = sorted(s.name for s in _specs(m) if refused(s))
        assert names, f"{case.id}: refused, but uses no op without a StableHLO form: {e}"
        assert re.match(rf"'({'|'.join(map(re.escape, names))})' has no stablehlo form: ",
                        str(e)), str(e)
        return  # what the message says is checked per op below
    assert case.id not in REFUSED_FORMS, f"{case.id}: printed as StableHLO, expected a refusal"
    assert error is None, f"{case.id}: we print StableHLO but jaxlib cannot convert: {error}"
    if case.id in FOLDED or case.id in SPELLED_OTHERWISE:
        assert oracle.normalize_hex(ours) != theirs, f"{case.id}: no longer folded: remove it"
        assert oracle.normalize_hex(ours) == oracle.mlir_generic(ours)
    else:
        assert oracle.normalize_hex(ours) == theirs, _diff(oracle.normalize_hex(ours), theirs)
    _compare_runs(case, m, ours, runs)


def test_lists_name_cases():
    ids = {c.id for c in CASE_LIST}
    assert not (set(FOLDED) | set(REFUSED_FORMS) | set(SPELLED_OTHERWISE) |
                set(NOT_IMPORTED)) - ids


# async_done and async_update consume async_start's bundle, and jaxlib's conversion stops at
# the first op it cannot legalize: the async_start before them.
_FAILS_FIRST = {"async_done": "async_start", "async_update": "async_start"}

REFUSED = sorted(s.name for s in hlo.OP_TABLE.values() if refused(s))


def test_every_refused_op_says_what_to_use():
    assert sorted(INSTEAD_OF) == REFUSED


@pytest.mark.parametrize("op", REFUSED)
def test_refusal_message_matches_jaxlib(op):
    """The error names the op and what to use; what it says jaxlib does is what jaxlib does:
    ``custom_call @mhlo.<op>`` on every case, or a failure to legalize the op."""
    hint = INSTEAD_OF[op]
    with pytest.raises(OpBuildError) as e:
        hlo.OP_TABLE[op].full_name(STABLEHLO)
    assert str(e.value) == f"'{op}' has no stablehlo form: {hint}; or print the module as mhlo"
    errors = []
    for case in CASES[op]:
        m, _, theirs, error = conversion(case.id)
        with pytest.raises(OpBuildError, match="has no stablehlo form: "):
            m.to_text(dialect=STABLEHLO)
        if "custom_call" in hint:
            assert error is None, error
            assert re.search(rf'"stablehlo\.custom_call".*call_target_name = "mhlo\.{op}"',
                             theirs), theirs
        if error is not None:
            errors.append(error)
    if "cannot convert it either" in hint:
        first = _FAILS_FIRST.get(op, op)
        assert any(f"failed to legalize operation 'mhlo.{first}'" in e for e in errors), errors
    for chlo in re.findall(r"\bchlo\.(\w+)", hint):
        if "not in mhlo_ir's op table yet" in hint:
            assert f"chlo.{chlo}" in UNDECLARED
        else:
            assert f"chlo.{chlo}" in hlo.OP_TABLE
            assert f"Builder.chlo_{chlo}" in hint and hasattr(hlo.Builder, f"chlo_{chlo}")


QUANTIZED_CASES = [c for c in CASE_LIST if not _readable(c)]


@pytest.mark.parametrize("case", QUANTIZED_CASES, ids=lambda c: c.id)
def test_quantized_cases_print_as_jaxlibs_conversion_and_run_alike(case):
    """The cases jaxlib's Python MLIR cannot read (quantized types) take the one route into
    jaxlib that reads them, its portable-artifact serializer (verify.quantized): what it makes
    of our MHLO text, printed generically, is our StableHLO text byte for byte; and our
    MHLO module (run through mhlo_ir's lowering) gives the same bits as our StableHLO text
    lowered by StableHLO's own pass."""
    from verify import bindings
    from verify.quantized import read_quantized, stablehlo_lowering
    m, inputs = case.build()
    ours = m.to_text(locations=False, dialect=STABLEHLO)
    ir, ctx = bindings.context()
    with ctx, ir.Location.unknown():
        theirs = read_quantized(m.to_text(locations=False), ctx).operation.get_asm(
            print_generic_op_form=True)
    assert ours == theirs, _diff(ours, theirs)
    a = verify.run(m, *inputs)
    if "per_axis" in case.name:
        # StableHLO's pass writes the per-axis scales' broadcast as a chlo op along a leading
        # dimension, which jaxlib's own chlo legalization refuses (docs/findings.md 21): its
        # lowering cannot run here at all, ours (broadcast_in_dim) does
        # (refused by our rules for chlo's broadcasting ops before jaxlib sees it)
        with pytest.raises(verify.VerificationError, match="are not the trailing dimensions"):
            verify.run(stablehlo_lowering(ours), *inputs)
        return
    b = verify.run(stablehlo_lowering(ours), *inputs)
    for x, y in zip(a, b):
        assert_close(x, y, what=case.id)


def test_every_case_is_proven_by_one_route_or_the_other():
    assert QUANTIZED_CASES and all(c.op.startswith("uniform_") for c in QUANTIZED_CASES)
