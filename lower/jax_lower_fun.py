"""JAX's lowering rules that are ``mlir.lower_fun(fun)``, lowered by our rules.

Many of the primitives JAX registers lower through a JAX function rather than through MLIR
ops: ``mlir.lower_fun(fun)`` traces ``fun`` at the equation's abstract values and lowers the
jaxpr it gives (jax.experimental.sparse's BCOO, BCSR, COO and CSR operations, cuDNN
attention's and scaled matmul's reference wrappers...). For a primitive we have no rule of,
whose JAX rule is one of those, ``borrowed_rule`` makes a rule that traces ``fun`` as JAX's
rule does and lowers the jaxpr inline with our rules: the program JAX would write, ours.

Nothing is registered: the rule is made again for each such equation (a registry that grew
while lowering would make what ``lower.coverage`` reports depend on what ran before).
"""

from __future__ import annotations

import functools
import sys

__all__ = ["borrowed_rule", "lower_jax_function"]

_LOWER_FUN = "lower_fun.<locals>.f_lowered"  # jax's mlir.lower_fun's closure


def _jax_rules(prim, platform: str) -> list:
    """JAX's lowering rules of ``prim`` (a jax Primitive): ``platform``'s own, then the one
    for every platform (jax 0.10 keeps each as LoweringRuleEntry(rule, inline))."""
    mlir = sys.modules.get("jax._src.interpreters.mlir")
    if mlir is None or isinstance(prim, str):
        return []
    specific = getattr(mlir, "_platform_specific_lowerings", {}).get(platform, {})
    entries = [specific.get(prim), getattr(mlir, "_lowerings", {}).get(prim)]
    return [getattr(e, "rule", e) for e in entries if e is not None]


def _lower_fun_parts(rule):
    """``(fun, multiple_results)`` of a ``mlir.lower_fun`` rule, else None."""
    while isinstance(rule, functools.partial) and not rule.args and not rule.keywords:
        rule = rule.func
    code = getattr(rule, "__code__", None)
    if getattr(rule, "__qualname__", None) != _LOWER_FUN or code is None:
        return None
    cells = dict(zip(code.co_freevars, rule.__closure__ or ()))
    if "fun" not in cells or "multiple_results" not in cells:
        return None
    return cells["fun"].cell_contents, cells["multiple_results"].cell_contents


def borrowed_rule(prim, platform: str):
    """Our rule for ``prim`` from JAX's ``mlir.lower_fun`` rule of it, or None: the
    platform's own, else the one for every platform where the platform's is a call into a
    kernel library (cuSPARSE, jaxlib's CPU sparse kernels): the same values, computed by XLA
    ops."""
    parts = next(filter(None, map(_lower_fun_parts, _jax_rules(prim, platform))), None)
    if parts is None:
        return None
    fun, multiple_results = parts

    def rule(ctx, *args, **params):
        return lower_jax_function(ctx, fun, ctx.avals_in, args, params, multiple_results)
    rule.__name__ = f"_{prim.name}_through_jaxs_lower_fun"
    return rule


def lower_jax_function(ctx, fun, avals_in, args, params=None, multiple_results=False) -> list:
    """``fun(*args, **params)``, a JAX function, traced by JAX at ``avals_in`` and lowered
    inline at the rule's builder by our rules: what jax's ``mlir.lower_fun(fun)`` does with
    a rule context of those avals (its internal Refs discharged, as jax's are)."""
    from jax._src import api_util, core
    from jax._src import linear_util as lu
    from jax._src.interpreters import partial_eval as pe

    from .jax_refs import discharge
    from .rules.calls import _inline
    f = fun if multiple_results else (lambda *a, **kw: (fun(*a, **kw),))
    wrapped = lu.wrap_init(f, dict(params or {}),
                           debug_info=api_util.debug_info("lower_fun", fun, args, {}))
    jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(wrapped, list(avals_in), lower=True)
    closed, _, held = discharge(core.ClosedJaxpr(jaxpr, consts))
    if held:
        raise NotImplementedError(f"jax's lowering of {getattr(fun, '__name__', fun)} closes "
                                  "over a jax Ref, which an inline lowering cannot thread")
    return _inline(ctx, closed, args)
