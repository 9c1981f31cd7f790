"""Lowering jaxprs to mhlo_ir modules: the machinery every rule shares.

Mirrors JAX's classic MLIR lowering (module and rule contexts, a rule registry per primitive and
platform, ordered-effect tokens, donated-argument aliasing, sharding and replication
annotations, cached private functions, constant handlers, name stacks as locations), built on
mhlo_ir instead of MLIR bindings. Insertion points are explicit: every rule context carries the
``Builder`` it emits into.

Jaxprs are read by duck typing (``eqn.primitive.name``, ``eqn.params``, ``var.aval``,
``literal.val``...), so lower.core's jaxprs and JAX's own are both accepted.
"""

from __future__ import annotations

import collections
import itertools
import re
import struct
from typing import Callable, Sequence

import numpy as np

import mhlo_ir as hlo
from mhlo_ir import Builder
from mhlo_ir.builder import as_results
from mhlo_ir.ir import VALUE_CLASSES

from . import core
# Constants and tokens live in their own modules; their names stay importable from here.
from .constants import (aval_to_ir_type, aval_to_ir_types, ir_constant,  # noqa: F401
                        ir_constants, is_token, literal_key, register_constant_handler)
from .tokens import TokenSet, _is_ordered, ordered_in_order  # noqa: F401
from .locations import _is_user_file, source_info_to_location, stack_key  # noqa: F401
from .axis_context import manual_axes_of, partly_manual
from .donation import donations

__all__ = ["ModuleContext", "LoweringRuleContext", "TokenSet", "LoweringResult",
           "register_lowering", "lower_jaxpr_to_module", "lower_jaxpr_to_fun",
           "jaxpr_subcomp", "ir_constants", "register_constant_handler", "aval_to_ir_types",
           "cache_lowering", "lower_fun", "merge_mhlo_modules", "PLATFORMS"]

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
_ALIASES = {"gpu": ("cuda", "rocm")}
# Platforms whose runtimes honour tf.aliasing_output (all of XLA's today).
_PLATFORMS_WITH_DONATION = ("cpu", "cuda", "rocm", "tpu")


def expand_platform(platform: str) -> tuple:
    if platform in _ALIASES:
        return _ALIASES[platform]
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; expected one of "
                         f"{', '.join(PLATFORMS + tuple(_ALIASES))}")
    return (platform,)


# -- contexts ---------------------------------------------------------------------------------

# The channel handle of every collective of an SPMD program, as jax gives them: XLA:CPU meets
# a collective's participants by channel, so one collective reached on each device through
# another branch of a cond (psum in both branches, picked per device) must share it; with a
# channel apiece the devices wait for each other forever (jaxlib 0.10.2 aborts after 40 s).
COLLECTIVE_CHANNEL = 1


class ModuleContext:
    """What the whole lowering of one module shares."""

    def __init__(self, module: hlo.Module, platform: str, name_stack=core.NameStack(),
                 axis_context=None):
        self.module = module
        self.platform = platform
        self.name_stack = name_stack
        self.axis_context = axis_context
        self.keepalives: list = []
        # MHLO channels start at 1, which every SPMD collective shares (COLLECTIVE_CHANNEL):
        # others (host transfers) count from 2, as in jax
        self.channel_iterator = itertools.count(COLLECTIVE_CHANNEL + 1)
        self.cached_primitive_lowerings: dict = {}
        self.cached_call_jaxpr_lowerings: dict = {}
        self.location_cache: dict = {}
        # jaxpr_subcomp's (primitive, outer stack, equation's stack, where) -> Location, and
        # the outer stacks (stack_key) as ints.
        self.located: dict = {}
        self.outer_keys: dict = {}

    @property
    def host_callbacks(self) -> list:
        """The module's callables (``Builder.host_callback`` appends to them), which
        verify.compile hands to jaxlib."""
        return self.module.host_callbacks

    def new_channel(self) -> int:
        return next(self.channel_iterator)

    def replace(self, **kw) -> "ModuleContext":
        new = object.__new__(ModuleContext)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(kw)
        return new


class LoweringRuleContext:
    """What one rule sees: its builder, primitive, avals in/out and tokens.

    ``avals_in``/``avals_out`` are read from the equation when a rule first asks (most
    elementwise rules never do); passing them explicitly overrides that.
    """

    __slots__ = ("module_context", "builder", "primitive", "_avals_in", "_avals_out",
                 "tokens_in", "tokens_out", "_eqn")

    def __init__(self, module_context, builder, primitive, avals_in, avals_out, tokens_in,
                 eqn=None):
        # NOTE: jaxpr_subcomp lays out the same slots itself (its hot loop): keep the two
        # in step.
        self.module_context = module_context
        self.builder = builder
        self.primitive = primitive
        self._avals_in = avals_in
        self._avals_out = avals_out
        self.tokens_in = tokens_in
        self.tokens_out = None
        self._eqn = eqn

    @property
    def avals_in(self) -> list:
        if self._avals_in is None:
            self._avals_in = [v.aval for v in self._eqn.invars]
        return self._avals_in

    @avals_in.setter
    def avals_in(self, value) -> None:
        self._avals_in = value

    @property
    def avals_out(self) -> list:
        if self._avals_out is None:
            self._avals_out = [v.aval for v in self._eqn.outvars]
        return self._avals_out

    @avals_out.setter
    def avals_out(self, value) -> None:
        self._avals_out = value

    @property
    def name_stack(self):
        """The equation's full name stack: the module context's (the enclosing calls and
        bodies) plus the equation's own scopes, as the equation's location shows it."""
        ns = self.module_context.name_stack
        eqn_stack = getattr(getattr(self._eqn, "source_info", None), "name_stack", None)
        if eqn_stack is None or not getattr(eqn_stack, "stack", ()):
            return ns
        return core.NameStack(ns.stack + tuple(eqn_stack.stack))

    def body_context(self, scope: str | None = None) -> "ModuleContext":
        """The module context to lower this equation's sub-jaxprs in: their locations carry
        the equation's name stack, extended by ``scope`` (``"while/body"``)."""
        ns = self.name_stack
        return self.module_context.replace(
            name_stack=ns if scope is None else ns.extend(scope))

    def set_tokens_out(self, tokens_out: TokenSet) -> None:
        if self.tokens_out is not None:
            raise ValueError("set_tokens_out may be called once per rule")
        self.tokens_out = tokens_out

    def replace(self, **kw) -> "LoweringRuleContext":
        new = LoweringRuleContext(self.module_context, self.builder, self.primitive,
                                  self.avals_in, self.avals_out, self.tokens_in, self._eqn)
        for k, v in kw.items():
            setattr(new, k, v)
        return new


# -- the rule registry ---------------------------------------------------------------------

_lowerings: dict = {}
_platform_lowerings: dict = collections.defaultdict(dict)
_resolved: dict = {}  # platform -> {name: rule}, see _resolved_rules and register_lowering


def _prim_name(prim) -> str:
    return prim if isinstance(prim, str) else prim.name


def register_lowering(prim, rule: Callable, platform: str | None = None) -> Callable:
    """Register ``rule(ctx, *args, **params)`` for a primitive (or its name), for every
    platform or one (``"gpu"`` means cuda and rocm)."""
    name = _prim_name(prim)
    # The resolved tables are updated in place, not dropped: a jaxpr_subcomp running now
    # holds one, and must see a rule registered while it lowers (by a rule, say).
    if platform is None:
        _lowerings[name] = rule
        for p, rules in _resolved.items():
            if name not in _platform_lowerings[p]:
                rules[name] = rule
    else:
        for p in expand_platform(platform):
            _platform_lowerings[p][name] = rule
            if p in _resolved:
                _resolved[p][name] = rule
    return rule


def lowering_rule(prim, platform: str) -> Callable:
    """``prim``'s rule for ``platform``: ours, or, for a jax primitive whose jax rule is
    ``mlir.lower_fun(fun)``, ``fun`` traced by jax and lowered by ours (lower.jax_lower_fun)."""
    name = _prim_name(prim)
    rule = _platform_lowerings[platform].get(name) or _lowerings.get(name)
    if rule is None:
        from .jax_lower_fun import borrowed_rule
        rule = borrowed_rule(prim, platform)
    if rule is None:
        raise NotImplementedError(
            f"no MHLO lowering rule for primitive '{name}' on platform '{platform}'")
    return rule


# -- jaxprs to functions ---------------------------------------------------------------------

def _flatten(xss) -> list:
    return [x for xs in xss for x in xs]


def as_values(x) -> tuple:
    """A rule operand or result as a tuple of IR values: ``jaxpr_subcomp`` takes and gives one
    tuple per jaxpr variable, since an aval may lower to several IR values."""
    return (x,) if isinstance(x, hlo.Value) else tuple(x)


def flat_values(xss) -> list:
    """The IR values of several operands or results, in order."""
    return [x for xs in xss for x in as_values(xs)]


def _resolved_rules(platform: str) -> dict:
    """Name -> rule for ``platform`` (platform-specific first); register_lowering keeps it
    current."""
    rules = _resolved.get(platform)
    if rules is None:
        rules = _resolved[platform] = {**_lowerings, **_platform_lowerings[platform]}
    return rules


def _output_values(name, ans, outvars) -> list:
    """A rule's results as one entry per output variable: a Value, or a tuple of Values when
    the output lowers to several."""
    try:
        ans = list(ans)
    except TypeError:
        raise ValueError(f"the rule for '{name}' must return a sequence of results, got "
                         f"{type(ans).__name__}") from None
    if len(ans) != len(outvars):
        raise ValueError(f"the rule for '{name}' returned {len(ans)} results for "
                         f"{len(outvars)} outputs")
    for i, o in enumerate(ans):
        if not isinstance(o, hlo.Value):
            o = tuple(o)
            for x in o:
                if not isinstance(x, hlo.Value):
                    raise ValueError(f"the rule for '{name}' returned {x!r:.60} for output "
                                     f"{i}, not a Value")
            ans[i] = o[0] if len(o) == 1 else o
    return ans


# ``read``'s sentinel for "no ``val``: a variable". NOTE: not ``read`` itself, which made
# the closure reference itself: a cycle that kept each lowering's env, and through it every
# op the lowering made, alive after its module was dropped, until the cyclic GC ran.
_VARIABLE = object()


def jaxpr_subcomp(ctx: ModuleContext, b: Builder, jaxpr, tokens: TokenSet,
                  consts: Sequence[Sequence], *args: Sequence) -> tuple:
    """Lower ``jaxpr``'s equations inline at ``b``; returns (outputs, tokens).

    NOTE: this loop runs once per equation of every program, so it is written for speed:
    rules are resolved once per platform, locations are cached per (primitive, name stack,
    frame) in a dict local to this call, and the common equation (no effects, inputs already
    lowered, one result) takes no detours. Everything unusual falls back to the general path.
    """
    # env maps a variable to its Value, or to a tuple of Values when it lowers to several.
    env: dict = {}
    # Literals by value: one constant op per distinct literal in this block, not per use
    # (the first use dominates the rest; nested regions lower with their own table).
    literals: dict = {}

    def read(v):
        val = getattr(v, "val", _VARIABLE)
        if val is _VARIABLE:  # a variable
            return env[v]
        key = literal_key(val)
        x = literals.get(key) if key is not None else None
        if x is None:
            x = ir_constants(b, val)
            x = x[0] if len(x) == 1 else x
            if key is not None:
                literals[key] = x
        return x

    if len(args) != len(jaxpr.invars):
        raise ValueError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    for v, c in zip(jaxpr.constvars, consts):
        c = tuple(c)
        env[v] = c[0] if len(c) == 1 else c
    for v, a in zip(jaxpr.invars, args):
        a = tuple(a)
        env[v] = a[0] if len(a) == 1 else a
    platform = ctx.platform
    rules = _resolved_rules(platform)
    loc_cache = ctx.location_cache
    name_stack = ctx.name_stack
    # (the outer stack, by what it prints, as a small int: hashed with every equation's key)
    outer_keys = ctx.outer_keys
    outer = outer_keys.setdefault(stack_key(name_stack.stack), len(outer_keys))
    located = ctx.located
    saved = b.location
    no_tokens = TokenSet()
    value_classes = VALUE_CLASSES
    getitem = env.__getitem__
    RuleContext = LoweringRuleContext
    new_context = object.__new__
    frame_classes: dict = {}
    try:
        for eqn in jaxpr.eqns:
            prim = eqn.primitive
            name = prim.name
            rule = rules.get(name) or lowering_rule(prim, platform)
            si = eqn.source_info
            # Our tracer's carry a frame, JAX's a traceback: which, asked once per class
            # (getattr of a missing name raises and catches inside, on every equation).
            has_frame = frame_classes.get(si.__class__)
            if has_frame is None:
                has_frame = frame_classes[si.__class__] = hasattr(si, "frame")
            fr = si.frame if has_frame else None
            # The location by (primitive, outer name stack, the equation's, where): a hit
            # skips source_info_to_location and the getattrs it makes.
            # NOTE: the equation's stack is keyed by value, though JAX's Scope("jvp") (a
            # named_scope) and Transform("jvp") entries are equal tuples that print apart
            # (the outer one, and source_info_to_location's keys, tell classes apart): with
            # JAX's whole traceback in the key, two such stacks would need one call path run
            # under both, which only jax's private transform_name_stack can make; our
            # tracer's stacks hold str entries alone. Telling them apart here cost 4-10% of
            # a value_and_grad lowering (a new stack object every few equations).
            try:
                if fr is not None:
                    key = (name, outer, si.name_stack.stack, fr.file_name, fr.start_line,
                           fr.start_column)
                else:  # JAX's
                    key = (name, outer, si.name_stack.stack, si.traceback)
                loc = located.get(key)
            except (AttributeError, TypeError):  # not a SourceInfo we know after all
                key, loc = None, None
            if loc is None:
                loc = source_info_to_location(prim, si, name_stack, loc_cache)
                if key is not None:
                    located[key] = loc
            b.location = loc
            eff = eqn.effects
            invars = eqn.invars
            try:
                ins = list(map(getitem, invars))
            except (KeyError, TypeError):  # literals (JAX's are unhashable)
                ins = [read(v) for v in invars]
            outvars = eqn.outvars
            direct = getattr(rule, "same_typed", None)
            params = eqn.params
            if direct is not None and not eff and len(outvars) == 1 and \
                    params.get("out_dtype") is None and not params.get("accuracy"):
                # An elementwise rule that is one builder method (add, mul, tanh...): given
                # operands of one type (and no other result type: mul's out_dtype) it makes
                # that op and nothing else, so it is called here without a rule context (a
                # third of such an equation's lowering).
                if len(ins) == 2:
                    x, y = ins
                    if x.type is y.type:
                        env[outvars[0]] = direct(b, x, y)
                        continue
                elif len(ins) == 1:
                    env[outvars[0]] = direct(b, ins[0])
                    continue
            effects = ordered_in_order(eff) if eff else ()
            # LoweringRuleContext(ctx, b, prim, None, None, tokens, eqn), laid out here: a
            # class call with a Python __init__ costs more than its eight stores.
            rctx = new_context(RuleContext)
            rctx.module_context = ctx
            rctx.builder = b
            rctx.primitive = prim
            rctx._avals_in = rctx._avals_out = rctx.tokens_out = None
            rctx.tokens_in = tokens.subset(effects) if effects else no_tokens
            rctx._eqn = eqn
            ans = rule(rctx, *ins, **params) if params else rule(rctx, *ins)
            if effects:
                if rctx.tokens_out is None:
                    raise ValueError(f"the rule for '{name}' must set tokens_out "
                                     f"because the equation has effects {effects}")
                tokens = tokens.update_tokens(rctx.tokens_out)
            if len(outvars) == 1 and ans.__class__ is list and len(ans) == 1 and \
                    ans[0].__class__ in value_classes:
                env[outvars[0]] = ans[0]
            else:
                for v, o in zip(outvars, _output_values(name, ans, outvars)):
                    env[v] = o
    finally:
        b.location = saved
    outs = []
    for v in jaxpr.outvars:
        x = read(v)
        outs.append((x,) if isinstance(x, hlo.Value) else x)
    return outs, tokens


def lower_jaxpr_to_fun(ctx: ModuleContext, name: str, jaxpr, effects: Sequence = (), *,
                       create_tokens: bool = False, public: bool = False,
                       replace_tokens_with_dummy: bool = False, replicated_args=None,
                       arg_shardings=None, result_shardings=None,
                       use_sharding_annotations: bool = True, input_output_aliases=None,
                       num_output_tokens: int = 0, stack_name: str | None = None,
                       buffer_donors=None, arg_names=None, result_names=None) -> hlo.Function:
    """Lower a closed jaxpr to a function of ``ctx.module`` (its name is uniquified).

    Ordered effects are threaded as tokens: created inside when ``create_tokens`` (the entry
    point, where dummy ``tensor<0xi1>`` values stand in for them), else taken as leading
    arguments and returned as leading results. ``arg_names`` (one per jaxpr input) locate
    the arguments (``loc("x")``; "" unknown) and ``result_names`` become the results'
    ``jax.result_info``, after any token results, as jax's lower_jaxpr_to_fun writes them.
    """
    def types_of(aval):
        if replace_tokens_with_dummy and is_token(aval):
            return (hlo.tensor((), np.bool_),)
        return aval_to_ir_types(aval)

    dummy = (hlo.tensor((0,), np.bool_),)
    n_tok = len(effects)
    if create_tokens:
        token_in_types, token_out_types = [], [dummy] * (num_output_tokens + n_tok)
    else:
        token_in_types = token_out_types = [(hlo.token(),)] * n_tok
    in_types = [*token_in_types, *map(types_of, jaxpr.in_avals)]
    out_types = [*token_out_types, *map(types_of, jaxpr.out_avals)]
    n_in_tok = len(token_in_types)
    n_out_tok = len(token_out_types)

    fn = ctx.module.add_function(name, _flatten(in_types), _flatten(out_types),
                                 visibility="public" if public else "private",
                                 arg_locations=_arg_locations(in_types, n_in_tok, arg_names))
    if result_names:
        n_named = len(fn.result_types) - len(_flatten(token_out_types))
        if n_named == len(result_names):  # (jax's check: else none is named)
            for j, result_name in enumerate(result_names):
                fn.set_result_attr(len(fn.result_types) - n_named + j, "jax.result_info",
                                   str(result_name))
    for i, arg_index in enumerate(range(n_in_tok, len(in_types))):
        j = arg_index - n_in_tok
        if replicated_args is not None and replicated_args[j]:
            fn.set_arg_attr(arg_index, "mhlo.is_same_data_across_replicas", hlo.UnitAttr())
        if use_sharding_annotations and arg_shardings is not None and arg_shardings[j]:
            fn.set_arg_attr(arg_index, "mhlo.sharding", str(arg_shardings[j]))
        if input_output_aliases is not None and input_output_aliases[j] is not None:
            fn.set_arg_attr(arg_index, "tf.aliasing_output",
                            hlo.i32_attr(input_output_aliases[j] + n_out_tok))
        if buffer_donors is not None and buffer_donors[j]:
            fn.set_arg_attr(arg_index, "jax.buffer_donor", True)
    if use_sharding_annotations and result_shardings is not None:
        for j, s in enumerate(result_shardings):
            if s:
                fn.set_result_attr(n_out_tok + j, "mhlo.sharding", str(s))

    b = fn.builder()
    args = list(fn.arguments)
    token_args, args = args[:n_in_tok], args[n_in_tok:]
    if not use_sharding_annotations and arg_shardings is not None:
        args = [a if s is None else wrap_with_sharding_op(b, a, s)
                for a, s in zip(args, arg_shardings)]
    tokens_in = (TokenSet.create(b, effects) if create_tokens
                 else TokenSet(zip(effects, token_args)))
    ir_args = []
    for aval, a in zip(jaxpr.in_avals, args):
        if replace_tokens_with_dummy and is_token(aval):
            ir_args.append((b.create_token(),))
        else:
            ir_args.append((a,))
    consts = [ir_constants(b, c) for c in getattr(jaxpr, "consts", ())]
    sub = ctx.replace(name_stack=ctx.name_stack.extend(f"jit({stack_name or name})"))
    outs, tokens_out = jaxpr_subcomp(sub, b, jaxpr.jaxpr, tokens_in, consts, *ir_args)
    results = []
    if create_tokens:
        results += [b.constant(np.zeros((0,), np.bool_)) for _ in range(n_out_tok)]
    else:
        results += list(tokens_out.tokens())
    for aval, o in zip(jaxpr.out_avals, outs):
        if replace_tokens_with_dummy and is_token(aval):
            results.append(b.constant(np.zeros((), np.bool_)))
        else:
            results.extend(o)
    if not use_sharding_annotations and result_shardings is not None:
        k = len(results) - len(result_shardings)
        results = results[:k] + [r if s is None else wrap_with_sharding_op(b, r, s)
                                 for r, s in zip(results[k:], result_shardings)]
    b.return_(*results)
    return fn


def _arg_locations(in_types, n_tokens: int, arg_names):
    """The arguments' locations: each named one's name (``loc("params['w']")``), the others
    (tokens, unnamed ones) unknown; None (all unknown) without names."""
    if not arg_names:
        return None
    locs = [hlo.UNKNOWN] * len(_flatten(in_types[:n_tokens]))
    for types, arg_name in zip(in_types[n_tokens:], arg_names):
        locs += [hlo.NameLoc(arg_name) if arg_name else hlo.UNKNOWN] * len(types)
    return locs


def wrap_with_sharding_op(b: Builder, x, sharding, unspecified=()) -> hlo.Value:
    """``custom_call @Sharding`` carrying ``mhlo.sharding``: XLA's sharding constraint.
    ``unspecified`` dimensions are left to XLA's propagation (``unspecified_dims``)."""
    config = f"unspecified_dims=[{','.join(map(str, unspecified))}]" if unspecified else None
    y = b.custom_call("Sharding", [x], [x.type], backend_config=config)
    y.set_attr("mhlo.sharding", str(sharding))
    return y


_MODULE_NAME = re.compile(r"[^\w.-]")


class LoweringResult:
    __slots__ = ("module", "keepalives", "host_callbacks")

    def __init__(self, module, keepalives, host_callbacks):
        self.module = module
        self.keepalives = keepalives
        self.host_callbacks = host_callbacks


def lower_jaxpr_to_module(module_name: str, jaxpr, *, platform: str = "cpu",
                          ordered_effects: Sequence | None = None, donated_args=None,
                          replicated_args=None, arg_shardings=None, result_shardings=None,
                          name_stack=None, num_partitions: int | None = None,
                          num_replicas: int | None = None,
                          axis_context=None, fn_name: str | None = None,
                          arg_names=None, result_names=None) -> LoweringResult:
    """Lower a closed jaxpr to a module whose public ``main`` XLA runs.

    ``donated_args`` become ``tf.aliasing_output`` where an output of the same type exists (a
    warning names the donations that found none; over several partitions, only where both
    shardings are given and equal, else ``jax.buffer_donor``); shardings are XLA sharding strings
    (``"{devices=[2,1]0,1}"``) put on ``mhlo.sharding``; ``replicated_args`` mark
    ``mhlo.is_same_data_across_replicas``. ``axis_context`` (lower.axis_context) names the
    replica or mesh axes collectives refer to; with ``num_partitions`` > 1 it defaults to a
    ShardingContext over that many devices.

    ``ordered_effects`` (by default the jaxpr's own ordered effects: ordered io_callback,
    ordered debug prints...) get a token each, created in ``main``, which also returns one
    dummy ``tensor<0xi1>`` per effect ahead of its results, as the seed's lowering does.
    ``fn_name`` names the function in the locations' name stacks (``jit(f)/add``, as
    jax.jit's; ``jit(main)`` without it). ``arg_names`` and ``result_names`` (one per jaxpr
    input and output: their pytree paths, ``x['a']``, ``result[0]``) become ``main``'s
    argument locations and ``jax.result_info`` attributes, as jax.jit passes them to jax's
    own ``lower_jaxpr_to_module``; without them (a bare jaxpr has no paths) neither is
    written, as there.
    """
    (platform,) = expand_platform(platform)[:1]
    if ordered_effects is None:
        ordered_effects = ordered_in_order(getattr(jaxpr, "effects", ()))
    # jax's sanitize_name, then its trailing underscores dropped, as jax's module: "jit(f)"
    # is "jit_f", "jit(<lambda>)" "jit__lambda"
    module_name = _MODULE_NAME.sub("_", module_name).rstrip("_")
    attrs = {}
    if num_partitions is not None:
        attrs["mhlo.num_partitions"] = hlo.i32_attr(num_partitions)
    if num_replicas is not None:
        attrs["mhlo.num_replicas"] = hlo.i32_attr(num_replicas)
    module = hlo.Module(module_name, attributes=attrs)
    if axis_context is None and num_partitions and num_partitions > 1:
        from .axis_context import ShardingContext
        axis_context = ShardingContext(num_partitions)
    ctx = ModuleContext(module, platform, name_stack or core.NameStack(), axis_context)
    aliases = donors = None
    if donated_args is not None and any(donated_args):
        aliases, donors = donations(jaxpr.in_avals, jaxpr.out_avals, donated_args,
                                    num_partitions, arg_shardings, result_shardings)
    lower_jaxpr_to_fun(ctx, "main", jaxpr, list(ordered_effects), public=True,
                       create_tokens=True, replace_tokens_with_dummy=True, stack_name=fn_name,
                       replicated_args=replicated_args, arg_shardings=arg_shardings,
                       result_shardings=result_shardings, input_output_aliases=aliases,
                       buffer_donors=donors, arg_names=arg_names, result_names=result_names)
    return LoweringResult(module, ctx.keepalives, ctx.host_callbacks)


# -- reuse: cached rules, Python functions as rules, calls ----------------------------------

_pack_f64 = struct.Struct("<d").pack


def _params_key(params: dict):
    """Params as a key telling apart what equality would merge: scalars carry their type
    (True == 1 == 1.0), floats and arrays go by their bytes (0.0 == -0.0; NaN payloads), and
    arrays by their dtype object (``dtype.str`` is '<V1' for int4, uint4, most float8s)."""
    def freeze(x):
        if isinstance(x, dict):
            return tuple(sorted((k, freeze(v)) for k, v in x.items()))
        if isinstance(x, (list, tuple)):  # (with its class: a namedtuple is not a tuple)
            return (x.__class__, tuple(freeze(v) for v in x))
        if isinstance(x, (np.ndarray, np.generic)):
            return (x.__class__, x.dtype, x.shape, x.tobytes())
        if isinstance(x, float):
            return (x.__class__, _pack_f64(x))
        if isinstance(x, complex):
            return (x.__class__, _pack_f64(x.real), _pack_f64(x.imag))
        if isinstance(x, (set, frozenset)):
            return (x.__class__, frozenset(freeze(v) for v in x))
        fields = getattr(x, "__dataclass_fields__", None)
        if fields is not None and getattr(x, "__dataclass_params__", None) is not None and \
                x.__dataclass_params__.eq and not isinstance(x, type):
            # (a dataclass equal by its fields: by theirs, keyed as above)
            return (x.__class__, tuple(freeze(getattr(x, k)) for k, f in fields.items()
                                       if f.compare))
        try:
            hash(x)
            return (x.__class__, x)
        except TypeError:
            return id(x)
    return freeze(params)


def cache_lowering(rule: Callable) -> Callable:
    """Emit ``rule`` once per (primitive, avals, params) as a private function and call it."""
    def cached(ctx: LoweringRuleContext, *args, **params):
        mctx = ctx.module_context
        key = (ctx.primitive.name, tuple(map(_aval_key, ctx.avals_in)),
               tuple(map(_aval_key, ctx.avals_out)), _params_key(params))
        fn = mctx.cached_primitive_lowerings.get(key)
        if fn is None:
            in_types = _flatten(map(aval_to_ir_types, ctx.avals_in))
            out_types = _flatten(map(aval_to_ir_types, ctx.avals_out))
            fn = mctx.module.add_function(ctx.primitive.name, in_types, out_types,
                                          visibility="private")
            fb = fn.builder()
            sub = ctx.replace(builder=fb)
            outs = rule(sub, *[a for a in fn.arguments], **params)
            fb.return_(*flat_values(outs))
            mctx.cached_primitive_lowerings[key] = fn
        flat_args = flat_values(args)
        return list(as_results(ctx.builder.call(fn, flat_args)))
    return cached


def _aval_key(aval):
    # The dtype object, not a spelling of it (see _params_key).
    return (getattr(aval, "shape", None), getattr(aval, "dtype", "token"))


_LOWER_FUN = object()  # (lower_fun's keys in a module context's cached_primitive_lowerings)


def lower_fun(fun: Callable, multiple_results: bool = True) -> Callable:
    """A rule that traces ``fun`` (written against lower.tracing) on the equation's avals and
    lowers the resulting jaxpr inline. ``multiple_results`` is JAX's flag; tracing already
    tells one result from a list of them, so both forms give one entry per output."""
    from .tracing import make_jaxpr, without_user_frames

    def rule(ctx: LoweringRuleContext, *args, **params):
        # Trace on this core's avals (a jax jaxpr's equations carry jax's own), with no user
        # frame on the equations (as jax's lower_fun: their locations are names alone).
        avals = [a if a.__class__ is core.ShapedArray or not hasattr(a, "shape") else
                 core.ShapedArray(a.shape, a.dtype, getattr(a, "weak_type", False))
                 for a in ctx.avals_in]
        # One trace per (function, avals, parameters) in a lowering: the same jaxpr, lowered
        # inline again, in the equation's own context (a program's hundred conj or erf_inv
        # equations trace once, ~50 us each). Kept by the module context, so nothing
        # outlives the lowering; the entry holds the parameters (_params_key keys an
        # unhashable one by its id).
        cache = ctx.module_context.cached_primitive_lowerings
        key = (_LOWER_FUN, fun, tuple(avals), _params_key(params))
        hit = cache.get(key)
        if hit is None:
            with without_user_frames():
                closed = make_jaxpr(lambda *xs: fun(*xs, **params))(*avals)
            cache[key] = hit = (closed, params)
        closed = hit[0]
        consts = [ir_constants(ctx.builder, c) for c in closed.consts]
        # In the equation's name stack (its named scopes), as jax's lower_fun lowers.
        outs, _ = jaxpr_subcomp(ctx.body_context(), ctx.builder, closed.jaxpr, TokenSet(),
                                consts, *[as_values(a) for a in args])
        return outs
    return rule


def call_lowering(ctx: LoweringRuleContext, fn_name: str, call_jaxpr, *args,
                  shardings=None) -> list:
    """Lower ``call_jaxpr`` to a private function (cached by jaxpr and effects) and call it.
    ``shardings``: (argument, result) sharding texts (None where unspecified) the function
    constrains its arguments and results to (jax's ``Sharding`` custom calls inside it:
    XLA takes no sharding attributes on a function other than the entry)."""
    mctx = ctx.module_context
    effects = ctx.tokens_in.effects()
    # The axis context is part of the key: one jaxpr lowered inside and outside a manual
    # (shard_map) region must become two functions. Keyed by ids, the entry holds both
    # objects and a hit must be them (a shard_map region's context is dropped when the
    # region is lowered, and the next one's may get its address).
    axis_context = mctx.axis_context
    key = (id(call_jaxpr), effects, id(axis_context), shardings)
    hit = mctx.cached_call_jaxpr_lowerings.get(key)
    if hit is None or hit[0] is not call_jaxpr or hit[1] is not axis_context:
        fn_name = fn_name or "unnamed"  # (a function named "": jax writes an invalid symbol)
        if shardings is None:
            fn = lower_jaxpr_to_fun(mctx, fn_name, call_jaxpr, effects)
        else:
            fn = lower_jaxpr_to_fun(mctx, fn_name, call_jaxpr, effects,
                                    arg_shardings=list(shardings[0]),
                                    result_shardings=list(shardings[1]),
                                    use_sharding_annotations=False)
        mctx.cached_call_jaxpr_lowerings[key] = hit = (call_jaxpr, axis_context, fn)
    fn = hit[2]
    flat = [*ctx.tokens_in.tokens(), *flat_values(args)]
    outs = list(as_results(ctx.builder.call(fn, flat)))
    n = len(effects)
    if n:
        ctx.set_tokens_out(TokenSet(zip(effects, outs[:n])))
    return [[o] for o in outs[n:]]


def _jit_lowering(ctx, *args, jaxpr, name="f", inline=False, in_shardings=None,
                  out_shardings=None, **_):
    """jax 0.10's ``jit`` (``pjit`` before): a call to a cached private function, or the
    callee's equations inline when ``inline``. A nested ``jax.jit(..., in_shardings=...,
    out_shardings=...)`` constrains the function's arguments and results to them, as jax's
    lowering does (in a fully manual shard_map region they name nothing: left out)."""
    shardings = None
    axis_context = ctx.module_context.axis_context
    partly = partly_manual(axis_context)
    if (in_shardings or out_shardings) and (partly or not manual_axes_of(axis_context)):
        # (in a partly manual region, of its mesh with the manual axes a subgroup, as jax's
        # add_manual_axes makes them)
        from .jax_shardings import call_shardings
        shardings = call_shardings(in_shardings, out_shardings, jaxpr,
                                   (axis_context.mesh, partly) if partly else None)
    if inline and shardings is None:
        consts = [ir_constants(ctx.builder, c) for c in jaxpr.consts]
        outs, tokens = jaxpr_subcomp(ctx.module_context, ctx.builder, jaxpr.jaxpr,
                                     ctx.tokens_in, consts, *[as_values(a) for a in args])
        if len(ctx.tokens_in):
            ctx.set_tokens_out(tokens)
        return outs
    return call_lowering(ctx, name, jaxpr, *args, shardings=shardings)


def _closed_call_lowering(ctx, *args, call_jaxpr, **_):
    return call_lowering(ctx, "closed_call", call_jaxpr, *args)


register_lowering("jit", _jit_lowering)
register_lowering("pjit", _jit_lowering)
register_lowering("closed_call", _closed_call_lowering)
register_lowering("core_call", _closed_call_lowering)


def merge_mhlo_modules(dst_module: hlo.Module, sym_name: str, src_module: hlo.Module) -> str:
    """The seed's name and argument order for ``mhlo_ir.merge_modules``: move
    ``src_module``'s functions into ``dst_module``; returns the new name of its ``main``."""
    from mhlo_ir.merge import merge_modules
    return merge_modules(dst_module, src_module, sym_name)
