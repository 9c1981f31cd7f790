"""Shared by the lowering tests: trace, lower, check the text against MLIR, run, compare."""

from __future__ import annotations

import re

import numpy as np

import mhlo_ir
import verify
from lower import TokenSet, core, lax, lower_jaxpr_to_module, register_lowering
from tests.oracle import assert_fixed_point


def run(f, *args, platform="cpu"):
    """Trace ``f`` on ``args``, lower for ``platform``, check the text, run it on CPU."""
    closed = lax.make_jaxpr(f)(*args)
    m = lower_jaxpr_to_module("jit_f", closed, platform=platform).module
    assert_fixed_point(m)
    return verify.run(m, *args)


def check(outs, refs):
    """Exact comparison, shapes and dtypes included."""
    assert len(outs) == len(refs)
    for i, (o, r) in enumerate(zip(outs, refs)):
        r = np.asarray(r)
        assert o.shape == r.shape and o.dtype == r.dtype, (i, o.shape, o.dtype, r.shape, r.dtype)
        np.testing.assert_array_equal(o, r, err_msg=f"output {i}")


def walk(region_or_fn):
    """Every operation of a region (or a function's body), nested regions included."""
    region = getattr(region_or_fn, "body", region_or_fn)
    for block in region.blocks:
        for op in block.operations:
            yield op
            for r in op.regions:
                yield from walk(r)


def ops(m, name=None) -> list:
    """Every operation of the module's functions (regions included), or those named so."""
    found = [op for fn in m.functions for op in walk(fn)]
    return found if name is None else [op for op in found if op.name == name]


def ordered_effect_identity(name: str):
    """A new primitive ``name`` with an ordered effect of the same name: ``(effect, f)``, where
    ``f(x)`` records it (an identity) and its rule orders an ``after_all`` on the token, so a
    test can follow the token through bodies."""
    effect = core.OrderedEffect(name)

    def rule(ctx, x):
        ctx.set_tokens_out(TokenSet([(effect, ctx.builder.after_all(ctx.tokens_in.get(effect)))]))
        return [x]
    register_lowering(name, rule)

    def f(x):
        y = lax.bind(name, [x], [x.aval])
        x.builder.eqns[-1].effects = frozenset({effect})
        return y
    return effect, f


_RESULT_NAMES = re.compile(r'(res|arg)_attrs = \[(\{[^{}]*\}(, )?)*\], ')
_MODULE_ATTRS = re.compile(r'\}\) \{mhlo\.num_partitions[^}]*\} : \(\) -> \(\)')
_MODULE_NAME = re.compile(r'"builtin.module"\(\) <\{sym_name = "[^"]*"\}>')
_SSA = re.compile(r"%([A-Za-z_0-9]+)")


def normalized(text: str, *, names: bool = False) -> str:
    """The module (ours or jax's text) as mhlo_ir reads and prints it, without locations and
    module attributes (jax.jit always writes mhlo.num_partitions and num_replicas), its SSA
    values renumbered in order of appearance; unless ``names``, without the argument and
    result attributes (jax.result_info...) and the module's name either."""
    t = mhlo_ir.parse(text).to_text(locations=False)
    t = _MODULE_ATTRS.sub("}) : () -> ()", t)
    if not names:
        t = _MODULE_NAME.sub('"builtin.module"()', _RESULT_NAMES.sub("", t))
    ssa: dict = {}
    return _SSA.sub(lambda m: ssa.setdefault(m.group(1), f"%v{len(ssa)}"), t)
