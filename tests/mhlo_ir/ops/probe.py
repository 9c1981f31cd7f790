"""Probing ops' attributes: rebuild an op of a per-op case with one attribute changed, force
an attribute in past its converter, and ask jaxlib about texts that might crash it.

jaxlib 0.10.2 kills its process on some texts (SIGSEGV on a dangling or recursive symbol,
SIGFPE on an all_to_all without replica groups), so texts nobody has vetted are checked in a
child. One child checks a whole batch, printing a verdict per text as it goes; if it dies, the
text it died on is marked and a new child resumes after it.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import mhlo_ir as hlo
from tests.mhlo_ir import ops as _ops_pkg
from tests.mhlo_ir.ops.cases import CASES

for _m in pkgutil.iter_modules(_ops_pkg.__path__):
    if _m.name.startswith("cases_"):
        importlib.import_module(f"{_ops_pkg.__name__}.{_m.name}")

_ROOT = str(Path(__file__).resolve().parents[3])

_WORKER = r"""
import json, sys
import verify
from verify import api
raw = sys.argv[1] == "raw"
texts = json.load(sys.stdin)
for i, text in enumerate(texts):
    try:
        if raw:  # jaxlib alone, without the Python-side refusals of verify.check
            try:
                api._jaxlib_parse_and_verify(text)
            except Exception as e:
                raise verify.VerificationError(str(e), text)
        else:
            verify.check(text)
        verdict = "ok"
    except verify.VerificationError as e:
        verdict = "rejected: " + str(e).splitlines()[0]
    print(json.dumps(verdict), flush=True)
"""


def jaxlib_verdicts(texts, timeout: float = 300, raw: bool = False) -> list:
    """For each text, ``"ok"``, ``"rejected: <jaxlib's first line>"`` or ``"crash: <signal or
    exit status>"``: what ``verify.check`` makes of it in a process of its own (with ``raw``,
    what jaxlib alone makes of it, without verify's own refusals)."""
    texts = list(texts)
    out: list = []
    while len(out) < len(texts):
        rest = texts[len(out):]
        p = subprocess.run([sys.executable, "-c", _WORKER, "raw" if raw else "checked"],
                           input=json.dumps(rest),
                           capture_output=True, text=True, cwd=_ROOT, timeout=timeout)
        done = [json.loads(line) for line in p.stdout.splitlines() if line.startswith('"')]
        out.extend(done)
        if p.returncode != 0 and len(out) < len(texts):
            if len(done) == len(rest):  # pragma: no cover - died after its last verdict
                break
            out.append(f"crash: exit status {p.returncode} "
                       f"{p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else ''}")
        elif p.returncode != 0:  # pragma: no cover
            break
        elif len(done) < len(rest):  # pragma: no cover - a worker bug: say so
            raise RuntimeError(f"jaxlib worker stopped early: {p.stderr[-2000:]}")
    return out


def walk(m):
    for fn in m.functions:
        stack = list(fn.body.blocks)
        while stack:
            for op in stack.pop().operations:
                yield op
                for r in op.regions or ():
                    stack.extend(r.blocks)


def operand_groups(op) -> tuple:
    """The op's operands as ``Builder.create`` takes them (variadic groups as lists)."""
    names, flat = op.spec.operands, list(op.operands)
    var = [n for n in names if n.endswith("*")]
    if not var:
        return tuple(flat)
    if op.spec.name == "scan":
        sizes = dict(zip(names, op.attributes["operandSegmentSizes"].values))
    else:  # the variadic groups of one op have one length (reduce's inputs and inits)
        sizes = dict.fromkeys(var, (len(flat) - len(names) + len(var)) // len(var))
    out, i = [], 0
    for n in names:
        k = sizes.get(n)
        out.append(flat[i:i + k] if k is not None else flat[i])
        i += 1 if k is None else k
    return tuple(out)


def rebuild(op, name, value, others=None):
    """``op`` rebuilt by ``Builder.create`` (in a scratch block) with attribute ``name`` set
    to ``value`` (and the ``others`` given); its attributes, or OpBuildError."""
    attrs = {**(op.attributes or {}), **(others or {})}
    attrs[name] = value
    b = hlo.Builder(hlo.Block())
    regions = tuple(op.regions or ())
    try:
        new = b.create(op.spec.name, operand_groups(op), attrs, [r.type for r in op.results],
                       regions, op.location)
    finally:
        for r in regions:  # the rebuilt op took them; give them back
            r.parent = op
    return new.attributes


def case_op(op_name: str, case_name: str | None = None):
    """A per-op case's module and its first op ``op_name``."""
    cases = CASES[op_name]
    c = cases[0] if case_name is None else next(c for c in cases if c.name == case_name)
    m, _ = c.build()
    return m, next(o for o in walk(m) if o.spec.name == op_name)


def forced_text(m, op, **attributes) -> str:
    """``m``'s text with ``attributes`` forced into ``op`` as they are (no converter, no
    Module.verify): what jaxlib would be given if the builder let them through."""
    original = op.attributes
    op.attributes = {**(original or {}), **attributes}
    try:
        return m.to_text()
    finally:
        op.attributes = original
