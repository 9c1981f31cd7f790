"""lower: jaxpr programs to mhlo_ir modules, with JAX's lowering machinery.

    from lower import tracing as tr, lower_jaxpr_to_module
    closed = tr.make_jaxpr(f)(x, w)
    module = lower_jaxpr_to_module("f", closed).module
"""

from . import core, lax, rules, tracing  # noqa: F401  (rules: register them)
from .mlir import (LoweringResult, LoweringRuleContext, ModuleContext, TokenSet,
                   cache_lowering, ir_constants, jaxpr_subcomp, lower_fun, lower_jaxpr_to_fun,
                   lower_jaxpr_to_module, register_constant_handler, register_lowering)

__all__ = ["core", "tracing", "lower_jaxpr_to_module", "lower_jaxpr_to_fun", "jaxpr_subcomp",
           "register_lowering", "register_constant_handler", "ir_constants", "cache_lowering",
           "lower_fun", "ModuleContext", "LoweringRuleContext", "TokenSet", "LoweringResult"]
