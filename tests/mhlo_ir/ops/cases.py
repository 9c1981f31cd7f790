"""The per-op test cases every op of the table must have (see test_op_table.py).

A chapter's case file (``cases_<chapter>.py`` in this folder) registers, for each op it covers,
one or more ``Case``s: a function that builds a tiny module and its numpy inputs, and either a
numpy reference for the outputs (the case is then compiled, executed by jaxlib on CPU and
compared) or a custom ``run`` (multi-device programs), or neither (verify-only, allowed only for
ops whose spec gives a ``not_run`` reason).
"""

from __future__ import annotations

from typing import Callable

import attrs
import numpy as np

import mhlo_ir as hlo

CASES: dict = {}


@attrs.frozen
class Case:
    op: str                      # the op table name under test ("add", "chlo.erf", ...)
    name: str                    # unique within the op
    build: Callable              # () -> (hlo.Module, list of numpy inputs)
    reference: Callable | None = None   # (*inputs) -> list of expected numpy outputs
    rtol: float = 0.0            # 0 and 0: exact (bitwise for floats, NaN == NaN)
    atol: float = 0.0
    run: Callable | None = None  # () -> None: custom execution with its own assertions
    partitions: bool = False     # a multi-device run's devices are SPMD partitions, not replicas

    @property
    def executes(self) -> bool:
        return self.reference is not None or self.run is not None

    @property
    def id(self) -> str:
        return f"{self.op}:{self.name}"


def case(op: str, name: str = "basic", *, reference=None, rtol=0.0, atol=0.0, run=None,
         partitions=False):
    """Decorator registering ``build`` as a case of ``op``."""
    def register(build):
        c = Case(op, name, build, reference, rtol, atol, run, partitions)
        existing = CASES.setdefault(op, [])
        if any(x.name == name for x in existing):
            raise ValueError(f"case {c.id} registered twice")
        existing.append(c)
        return build
    return register


def module(arg_types, body, *, name="case", results=None):
    """A module whose public ``main`` takes ``arg_types`` and returns what ``body(b, *args)``
    returns (a value or a sequence of values)."""
    m = hlo.Module(name)
    f = m.add_function("main", list(arg_types), visibility="public")
    b = f.builder()
    out = body(b, *f.arguments)
    if out is not None:
        b.return_(*((out,) if isinstance(out, hlo.Value) else out))
    return m


def assert_close(got, want, rtol=0.0, atol=0.0, what=""):
    """Exact (bitwise, NaNs of any payload equal) when both tolerances are 0; else allclose."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if rtol == 0 and atol == 0:
        if got.dtype.kind in "fcV" and got.dtype.itemsize:
            g = got.astype(np.complex128) if got.dtype.kind == "c" else got.astype(np.float64)
            w = want.astype(np.complex128) if want.dtype.kind == "c" else want.astype(np.float64)
            both_nan = np.isnan(g) & np.isnan(w)
            same = (g == w) | both_nan
            assert same.all(), f"{what}: {got} != {want}"
        else:
            np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    w = want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


RNG = np.random.default_rng(0)


def rand(shape, dtype, low=-3, high=3):
    """Small reproducible random inputs of any dtype."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return RNG.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return RNG.integers(max(low, info.min), min(high, info.max) + 1, size=shape).astype(dt)
    if dt.kind == "c":
        return (RNG.uniform(low, high, shape) + 1j * RNG.uniform(low, high, shape)).astype(dt)
    return RNG.uniform(low, high, shape).astype(dt)
