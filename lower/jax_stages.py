"""The stages of ``lower.jax``'s programs, as jax's ``jax.stages`` names them: ``Traced`` (the
jaxpr JAX traced for one signature, not lowered yet) and ``Lowered`` (our module of it), with
the pytree views (``args_info``, ``out_info``) both give as jax's do."""

from __future__ import annotations

__all__ = ["Traced", "Lowered"]


def _jax():
    try:
        import jax
    except ImportError as e:
        raise ImportError(f"lower.jax needs jax ({e}): pip install 'mhlo-ir[jax]'") from None
    return jax


class Lowered:
    """A function lowered for one input signature: ``module`` (an mhlo_ir Module), ``text``,
    the input and output pytree structures and abstract values, and the flat donation
    mask (``donated``: one entry per flat argument, the pruned ones too). jax's ``Lowered``
    API where it has a meaning here: ``as_text``, ``compile`` (``compiler_options`` too),
    ``cost_analysis``, ``in_tree`` (``((args), {kwargs})``), ``args_info``,
    ``out_tree``, ``out_info``. ``kept_var_idx``: the flat arguments the program takes (the
    others unused and pruned, as jax.jit prunes them unless ``keep_unused``)."""

    def __init__(self, module, in_tree, out_tree, in_avals, out_avals, donated, statics,
                 token_outputs=0, num_partitions=1, kept_var_idx=None, platform="cpu",
                 ref_inputs=(), closed_refs=()):
        kept_var_idx = tuple(range(len(in_avals))) if kept_var_idx is None else kept_var_idx
        self.module = module
        self.platform = platform
        self.kept_var_idx = kept_var_idx
        self.num_partitions = num_partitions  # devices the shardings name (1: none)
        # main's leading dummy results, one per ordered effect (io_callback(ordered=True),
        # ordered debug prints): not fn's outputs.
        self.token_outputs = token_outputs
        self.in_tree, self.out_tree = in_tree, out_tree
        self.in_avals, self.out_avals = list(in_avals), list(out_avals)
        self.donated = tuple(donated)
        self.static_args = statics
        # The flat arguments that were jax Refs: the program takes their values and returns
        # their final values after fn's outputs (see lower.jax_refs).
        self.ref_inputs = tuple(ref_inputs)
        # The Refs fn closes over: flat arguments after fn's own (in_avals and donated hold
        # them last), their values read and written back by the caller.
        self.closed_refs = tuple(closed_refs)

    @property
    def text(self) -> str:
        """The module's MHLO text (generic form, with locations)."""
        return self.module.to_text()

    @property
    def args_info(self):
        """The arguments' ``jax.stages.ArgInfo`` (abstract value, donated) in the input
        pytree, ``((args), {kwargs})``, the pruned ones too (jax's ``Lowered.args_info``)."""
        n = self.in_tree.num_leaves  # (without the closed-over Refs)
        return _args_info(self.in_tree, self.in_avals[:n], self.donated[:n])

    @property
    def out_info(self):
        """The results' shapes and dtypes, ``jax.ShapeDtypeStruct``s in ``fn``'s output
        pytree (jax's ``Lowered.out_info``)."""
        return _out_info(self.out_tree, self.out_avals)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The program as text, as jax's ``Lowered.as_text``: StableHLO by default (pretty,
        without locations unless ``debug_info``), "mhlo" for our own dialect, "hlo" for the
        HLO module XLA is handed."""
        from mhlo_ir.dialect import MHLO, STABLEHLO
        if dialect in (None, "stablehlo", "mhlo"):
            return self.module.to_text(dialect=MHLO if dialect == "mhlo" else STABLEHLO,
                                       locations=debug_info, pretty=True)
        if dialect == "hlo":
            return self._hlo_module().to_string()
        raise ValueError(f"unknown dialect {dialect!r}: 'stablehlo', 'mhlo' or 'hlo'")

    def _hlo_module(self):
        import verify
        from verify import _jaxlib
        _, X = _jaxlib.xla()
        computation = _jaxlib.on_big_stack(X.mlir.mlir_module_to_xla_computation,
                                           verify.check(self.module))
        return computation.get_hlo_module()

    def cost_analysis(self) -> dict:
        """XLA's cost estimate of the program before its optimizations (jax's
        ``Lowered.cost_analysis``, through the same jaxlib call on a CPU client)."""
        from verify import _jaxlib
        _, X = _jaxlib.xla()
        return X.hlo_module_cost_analysis(_jaxlib.client("cpu"), self._hlo_module())

    def compile(self, platform: str | None = None, *, topology: str | None = None,
                compiler_options: dict | None = None):
        """The ``verify.Executable`` of the module (flat numpy arrays in, the kept ones:
        ``kept_var_idx``), for as many devices as its shardings name, on the platform it was
        lowered for unless ``platform`` says; with a TPU ``topology`` ("v5e:2x2"), compiled
        ahead of time without a TPU (``verify.compile``'s ``Compiled``: what XLA made,
        nothing to run). ``compiler_options``: XLA's options by name, as jax.jit's."""
        import verify
        # (results without out_shardings stay where XLA's partitioner puts them, as in
        # jax.jit: run_global reassembles them by the compiled shardings)
        return verify.compile(self.module, self.platform if platform is None else platform,
                              num_partitions=self.num_partitions,
                              propagate_result_shardings=True, topology=topology,
                              compiler_options=compiler_options)


def _args_info(in_tree, avals, donated):
    jax = _jax()
    return jax.tree_util.tree_unflatten(
        in_tree, [jax.stages.ArgInfo(a, d) for a, d in zip(avals, donated)])


def _out_info(out_tree, avals):
    jax = _jax()
    return jax.tree_util.tree_unflatten(
        out_tree, [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals])


class Traced:
    """``fn`` traced by JAX for one signature, not lowered yet (jax's ``Traced``, what
    ``jax.jit(fn).trace(*args)`` gives): ``jaxpr`` (the ClosedJaxpr our rules will lower,
    before unused arguments are pruned), ``fun_name``, ``in_tree``/``out_tree``,
    ``args_info``, ``out_info``, ``out_avals``; ``lower()`` gives the ``Lowered`` program.

    Tracing and lowering are apart so that the jaxpr can be looked at, or lowered for
    another platform, without tracing again. Unlike jax's, it is not callable (jax's runs
    the jaxpr op by op in jax: ``jax.core.jaxpr_as_fun(traced.jaxpr)`` does that)."""

    def __init__(self, jaxpr, fun_name: str, in_tree, out_tree, donated, statics,
                 platform: str, lower_for):
        self.jaxpr = jaxpr
        self.fun_name = fun_name
        self.in_tree, self.out_tree = in_tree, out_tree
        self.donated = tuple(donated)
        self.static_args = statics
        self.platform = platform
        self._lower_for = lower_for  # platform -> Lowered (lower.jax's second half)

    @property
    def in_avals(self) -> list:
        """The flat arguments' abstract values, the unused ones too."""
        return list(self.jaxpr.in_avals)

    @property
    def out_avals(self):
        """The results' abstract values in ``fn``'s output pytree (jax's)."""
        return _jax().tree_util.tree_unflatten(self.out_tree, self.jaxpr.out_avals)

    @property
    def args_info(self):
        """As ``Lowered.args_info``: ``jax.stages.ArgInfo`` per argument, in the input
        pytree."""
        return _args_info(self.in_tree, self.jaxpr.in_avals, self.donated)

    @property
    def out_info(self):
        """As ``Lowered.out_info``: ``jax.ShapeDtypeStruct`` per result."""
        return _out_info(self.out_tree, self.jaxpr.out_avals)

    def lower(self, *, lowering_platforms=None) -> Lowered:
        """Our module of the jaxpr (``Lowered``), for the platform traced with, or the one
        ``lowering_platforms`` names (jax's keyword: a sequence of one platform here;
        lowering for several at once is jax's alone)."""
        platform = self.platform
        if lowering_platforms is not None:
            platforms = (lowering_platforms,) if isinstance(lowering_platforms, str) \
                else tuple(lowering_platforms)
            if len(platforms) != 1 or not isinstance(platforms[0], str):
                raise ValueError("lower.jax lowers for one platform at a time: "
                                 f"lowering_platforms must name one, got {lowering_platforms!r}")
            platform = platforms[0]
        return self._lower_for(platform)

    def __repr__(self):
        return f"<lower.jax Traced {self.fun_name}: {self.jaxpr.in_avals} -> " \
            f"{self.jaxpr.out_avals}>"
