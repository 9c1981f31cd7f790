"""The JAX user's front door: ``lower.jax.lower(fn, *args)``, ``trace(fn, *args)`` and
``lower.jax.jit(fn)``.

JAX traces ``fn`` (``jax.make_jaxpr``: the same jaxpr ``jax.jit`` would lower); our rules lower
that jaxpr to an mhlo_ir module; ``verify`` compiles and runs it on CPU through jaxlib. This is
the one module of lower/ that imports jax (the ``jax`` extra), and only when called.

    import lower.jax as lj
    f = lj.jit(lambda x, y: {"s": (x * y).sum(), "d": x - y})
    f(np.ones(3, np.float32), 2.0)          # {"d": array([...]), "s": array(6.)}
    lj.lower(f_or_fn, x, y).text            # our MHLO text of the program

``jit`` compiles once per input signature: the pytree structure, each leaf's shape, dtype and
weak type (a Python scalar is weakly typed, as in JAX), the static arguments' values, and x64
mode. Leaves may be numpy arrays, jax arrays, Python scalars or typed PRNG keys
(``jax.random.key``); results come back as numpy arrays (typed keys as jax key arrays) in
``fn``'s output pytree.
"""

from __future__ import annotations

import functools
import threading
import types

import numpy as np

from .constants import FLOAT0
from .jax_state import jax_attr
from . import jax_options
from .jax_argnums import (check_hashable as _check_hashable, given as _given,
                          read_argnames as _names, normalize_argnums as _normalize_argnums,
                          read_argnums as _nums, other_way as _other_way, split as _split,
                          validate as _validate)
from .jax_shardings import (_check_one_device_set, _flat_shardings, _is_sharding,
                            _mesh_devices, _num_partitions)
from .jax_stages import Lowered, Traced, _jax
from .mlir import _params_key

__all__ = ["trace", "lower", "jit", "Traced", "Lowered", "Jitted"]


def lower(fn, *example_args, platform: str = "cpu", donate_argnums=(), in_shardings=None,
          out_shardings=None, static_argnums=(), keep_unused: bool = False,
          _donate_keywords=frozenset(), _named=None, _kwargs=None) -> Lowered:
    """Our module of ``fn`` for these arguments' signature (their values are not baked in,
    except the static ones). ``in_shardings``/``out_shardings`` are XLA sharding strings or
    jax Shardings (None: unannotated), matched to the arguments and results as jax.jit
    matches them (one for all, one per argument or result as a prefix of its pytree, or one
    per flat leaf), and put on ``mhlo.sharding``; the program is then partitioned over as
    many devices as they name. As jax.jit, the program leaves out the arguments ``fn`` does
    not use (and dead equations) unless ``keep_unused``: ``Lowered.kept_var_idx`` says which
    it takes. ``trace(...).lower()``, in one step."""
    return trace(fn, *example_args, platform=platform, donate_argnums=donate_argnums,
                 in_shardings=in_shardings, out_shardings=out_shardings,
                 static_argnums=static_argnums, keep_unused=keep_unused,
                 _donate_keywords=_donate_keywords, _named=_named, _kwargs=_kwargs).lower()


def trace(fn, *example_args, platform: str = "cpu", donate_argnums=(), in_shardings=None,
          out_shardings=None, static_argnums=(), keep_unused: bool = False,
          _donate_keywords=frozenset(), _named=None, _kwargs=None) -> Traced:
    """JAX's trace of ``fn`` for these arguments' signature, not lowered yet (``Traced``:
    its ``jaxpr``, pytrees, ``args_info``; ``.lower()`` gives what ``lower`` gives). The
    arguments as ``lower`` takes them; shardings are matched to the arguments when
    lowering."""
    jax = _jax()
    n = len(example_args)
    static_argnums = _normalize_argnums(static_argnums, n, "static_argnums")
    donate_argnums = _normalize_argnums(donate_argnums, n, "donate_argnums")
    if set(static_argnums) & set(donate_argnums):
        raise ValueError("an argument cannot be both static and donated")
    statics, dynamic = _split(example_args, static_argnums)

    def dynamic_fn(*dyn):
        it = iter(dyn)
        full = [statics[i] if i in statics else next(it) for i in range(n)]
        return fn(*full)
    # (jax's errors while tracing name fn and its arguments, as jax.jit's do: ``_named`` is
    # Jitted's (fn, args, keyword arguments, static numbers, static names))
    named = _name_as_jax_jit(jax, dynamic_fn,
                             *(_named or (fn, example_args, {}, static_argnums, ())))

    closed, out_shape = jax.make_jaxpr(dynamic_fn, return_shape=True)(*dynamic)
    # (jax's in_tree: ((positional), {keyword}), the keyword arguments Jitted's last dict)
    in_tree = jax.tree_util.tree_structure(
        (tuple(dynamic[:-1]), dynamic[-1]) if _kwargs else (tuple(dynamic), {}))
    out_tree = jax.tree_util.tree_structure(out_shape)
    donated = []
    for i, a in enumerate(example_args):
        if i in statics:
            continue
        if _donate_keywords and i == n - 1:
            # (Jitted's keyword arguments, one dict last: donated by name, in the order jax
            # flattens a dict, its sorted keys)
            for k in sorted(a):
                donated += [k in _donate_keywords] * len(jax.tree_util.tree_leaves(a[k]))
            continue
        donated += [i in donate_argnums] * len(jax.tree_util.tree_leaves(a))
    name = fun_name(fn)

    # PartitionSpecs on the mesh jax.set_mesh sets when tracing (a Traced lowered later keeps
    # it, as jax's does).
    in_shardings = _on_the_mesh_set(jax, in_shardings)
    out_shardings = _on_the_mesh_set(jax, out_shardings)

    def lower_for(platform: str) -> Lowered:
        return _lower_traced(jax, closed, dynamic, out_shape, in_tree, out_tree, donated,
                             statics, named, name, platform, in_shardings, out_shardings,
                             keep_unused)
    return Traced(closed, name, in_tree, out_tree, donated, statics, platform, lower_for)


def _on_the_mesh_set(jax, shardings):
    """``shardings`` with each PartitionSpec a NamedSharding on the mesh ``jax.set_mesh``
    set (as jax.jit reads them there); unchanged where none is set."""
    if shardings is None:
        return None
    P = jax.sharding.PartitionSpec
    get_mesh = getattr(jax.sharding, "get_mesh", None)
    mesh = get_mesh() if get_mesh is not None else None
    if mesh is None or getattr(mesh, "empty", True) or not hasattr(mesh, "devices"):
        return shardings
    return jax.tree_util.tree_map(
        lambda s: jax.sharding.NamedSharding(mesh, s) if isinstance(s, P) else s, shardings,
        is_leaf=lambda x: x is None or isinstance(x, P))


def _lower_traced(jax, closed, dynamic, out_shape, in_tree, out_tree, donated, statics,
                  named, name, platform, in_shardings, out_shardings, keep_unused) -> Lowered:
    """``trace``'s second half: the traced jaxpr lowered (shardings matched, unused
    arguments pruned, devices counted)."""
    from . import lower_jaxpr_to_module
    from .jax_refs import discharge
    from .tokens import ordered_in_order
    n_in = len(closed.in_avals)
    # (jax.new_ref, Ref arguments, closed-over Refs as arguments after fn's: values from here)
    closed, ref_inputs, closed_refs = discharge(closed)
    n_out = len(closed.out_avals) - len(ref_inputs)  # (then the Ref arguments' final values)
    donated = [*donated, *(False,) * len(closed_refs)]
    in_sh = _flat_shardings(jax, "in_shardings", in_shardings, tuple(dynamic),
                            closed.in_avals[:n_in])
    if in_sh is not None and closed_refs:
        in_sh = [*in_sh, *(None,) * len(closed_refs)]
    out_sh = _flat_shardings(jax, "out_shardings", out_shardings, out_shape,
                             closed.out_avals[:n_out])
    if out_sh is not None and ref_inputs:
        out_sh = [*out_sh, *(in_sh[i] if in_sh is not None else None for i in ref_inputs)]
    devices = _check_one_device_set(jax, (in_shardings, out_shardings), closed.jaxpr)
    partitions = _num_partitions((in_sh or []) + (out_sh or []))
    mesh = _mesh_devices(closed.jaxpr)
    in_avals, kept, flat_donated = closed.in_avals, tuple(range(len(closed.in_avals))), donated
    arg_names, result_names = _paths(closed, named)
    if not keep_unused:  # (after the devices are counted, as jax counts them)
        closed, pruned = jax_options.prune_unused(closed)
        kept = kept if pruned is None else pruned
    donated = [donated[i] for i in kept]
    in_sh = None if in_sh is None else [in_sh[i] for i in kept]
    if arg_names is not None:
        arg_names = [arg_names[i] for i in kept]
    if mesh is not None and (partitions or 1) < mesh:
        if partitions not in (None, 1):
            raise ValueError(f"the shardings name {partitions} devices, but a shard_map in "
                             f"the program runs over a mesh of {mesh}")
        partitions = mesh
    axis_context = None
    if partitions and partitions > 1 and devices is not None and len(devices) == partitions:
        # (jax's device order: a callback's SingleDeviceSharding names a device by its id,
        # the program by its place among these)
        from .axis_context import ShardingContext
        axis_context = ShardingContext(partitions, device_assignment=devices)
    ordered = ordered_in_order(closed.effects)
    if (partitions or 1) > 1:
        _check_shardable(ordered)
    from .rules.random import threefry_partitionable
    # jax reads jax_threefry_partitionable when it lowers random_bits and random_split (the
    # jaxpr does not record it): so do we, for the same random numbers.
    with threefry_partitionable(_partitionable(jax)):
        result = lower_jaxpr_to_module(f"jit({name})", closed, platform=platform,
                                       ordered_effects=ordered, fn_name=name,
                                       donated_args=donated if any(donated) else None,
                                       arg_shardings=in_sh, result_shardings=out_sh,
                                       num_partitions=partitions or 1, num_replicas=1,
                                       axis_context=axis_context,
                                       arg_names=arg_names, result_names=result_names)
    return Lowered(result.module, in_tree, out_tree, in_avals, closed.out_avals[:n_out],
                   flat_donated, statics, token_outputs=len(ordered),
                   num_partitions=partitions or 1, kept_var_idx=kept, platform=platform,
                   ref_inputs=ref_inputs, closed_refs=closed_refs)


def fun_name(fn) -> str:
    """The name jax.jit gives ``fn`` (jax's ``util.fun_name``): its ``__name__`` (a nested
    function's own, "<lambda>"...), a functools.partial's function's, else "<unnamed
    function>" (a callable object). The module is named ``jit(name)`` sanitized, the
    locations' name stacks ``jit(name)`` as is."""
    name = getattr(fn, "__name__", None)
    if name is not None:
        return name
    if isinstance(fn, functools.partial):
        return fun_name(fn.func)
    return "<unnamed function>"


def _paths(closed, named: bool) -> tuple:
    """(the flat arguments' paths or None, the results' paths) from the debug info jax's
    trace left on ``closed``, as jax.jit hands them to its lowering (its
    ``safe_arg_names``/``safe_result_paths``: "" where a path is unknown). The arguments'
    only where they are jax.jit's (``named``: our wrapper's otherwise, which jax.jit would
    not write)."""
    info = getattr(closed.jaxpr, "debug_info", None)
    n_in, n_out = len(closed.in_avals), len(closed.out_avals)
    args = getattr(info, "arg_names", None) if named else None
    paths = getattr(info, "result_paths", None)
    return (tuple(args) if isinstance(args, tuple) and len(args) == n_in else None,
            paths if isinstance(paths, tuple) and len(paths) == n_out else ("",) * n_out)


def _name_as_jax_jit(jax, traced, fn, args, kwargs, static_argnums, static_argnames) -> bool:
    """Give ``traced`` (what jax traces for ``fn``) the debug info jax.jit gives ``fn``
    called with ``args`` and ``kwargs``: jax's messages then name ``fn``, its source line and
    its arguments' paths (``x['a']``), not our wrapper's, and so do main's argument
    locations. Left alone (False) where this jax has no such hook, or its names do not
    fit."""
    try:
        from jax._src import api_util
        info = api_util.debug_info("jit", fn, args, kwargs, static_argnums=static_argnums,
                                   static_argnames=static_argnames)
        dynamic = [a for i, a in enumerate(args) if i not in static_argnums]
        dynamic += [v for k, v in kwargs.items() if k not in static_argnames]
        if info.arg_names is not None and \
                len(info.arg_names) == len(jax.tree_util.tree_leaves(dynamic)):
            api_util.save_wrapped_fun_debug_info(traced, info)
            return True
    except (ImportError, AttributeError, TypeError, ValueError):  # (a jax without the hook,
        pass                                                       # or names that do not fit)
    return False


def _check_shardable(ordered) -> None:
    """jax.jit's refusal of ordered effects over several devices, but for those jax declares
    shardable (io_callback's ordered one): an ordered debug print has no one order there."""
    from jax._src import effects
    shardable = getattr(effects, "shardable_ordered_effects", None)
    unsupported = [e for e in ordered if shardable is None or not shardable.contains(e)]
    if unsupported:
        raise ValueError("The following ordered effects are not supported for more than 1 "
                         f"device: {unsupported}")


class Jitted:
    """``jit(fn)``: call it like ``fn``. ``lower(*args)`` gives the ``Lowered`` program of a
    signature, ``cache_size`` how many signatures have been compiled.

    With ``in_shardings``/``out_shardings`` (see ``lower``) the program runs on as many CPU
    devices as they name: whole arrays in, split by the shardings XLA compiled, and whole
    arrays out, put back together from their shards (``Executable.run_global``)."""

    def __init__(self, fn, *, static_argnums=(), donate_argnums=(),
                 platform: str | None = None, in_shardings=None, out_shardings=None,
                 static_argnames=(), donate_argnames=(), keep_unused: bool = False,
                 device=None, backend: str | None = None, inline: bool = False,
                 compiler_options: dict | None = None):
        if isinstance(fn, staticmethod):  # (jax.jit's checks, in its words)
            raise TypeError(f"staticmethod arguments are not supported, got {fn}")
        if not callable(fn):
            raise TypeError(f"Expected a callable value, got {fn}")
        self.fn = fn
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        static_argnums, donate_argnums = _nums(static_argnums), _nums(donate_argnums)
        self.static_argnums, self.donate_argnums = static_argnums, donate_argnums
        self.static_argnames, self.donate_argnames = _names(static_argnames), \
            _names(donate_argnames)
        _validate(fn, static_argnums, self.static_argnames, donate_argnums,
                  self.donate_argnames)
        # As jax.jit: a static parameter named is static given by position too, and one
        # numbered is static given by name (through fn's signature, where it has one); so
        # for donation.
        self._named_nums, self._numbered_names = _other_way(
            fn, static_argnums, self.static_argnames)
        donate_nums, donate_names = _other_way(fn, donate_argnums, self.donate_argnames)
        self._donate_nums = tuple(sorted({*donate_argnums, *donate_nums}))
        self._donate_names = frozenset({*self.donate_argnames, *donate_names})
        both = set(self.static_argnames + self._numbered_names) & self._donate_names
        if both:  # (as jax.jit, through the signature's names)
            raise ValueError("static_argnames and donate_argnames cannot intersect. Argument "
                             f"names {both} appear in both static_argnames and "
                             "donate_argnames")
        self.platform = jax_options.placement(platform, device, backend, in_shardings,
                                              out_shardings)
        self.keep_unused, self.inline = bool(keep_unused), bool(inline)
        self.compiler_options = jax_options.compiler_options_dict(compiler_options)
        self._cache: dict = {}
        self._traces: dict = {}  # (signature key -> Traced: see trace)
        self._lock = threading.Lock()
        self._jax_jit = None  # (jax.jit of fn, for calls inside another's trace)
        self.__wrapped__ = fn
        self.__name__ = fun_name(fn)  # (as jax.jit names its wrapper)
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __get__(self, instance, owner=None):
        """On a class, a method: bound to the instance (its first argument, static or
        traced as ``static_argnums`` says), as jax.jit's."""
        return self if instance is None else types.MethodType(self, instance)

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def clear_cache(self) -> None:
        """Forget every compiled signature (jax.jit's ``clear_cache``)."""
        with self._lock:
            self._cache.clear()
            self._traces.clear()

    def eval_shape(self, *args, **kwargs):
        """The results' shapes and dtypes (``jax.ShapeDtypeStruct``s in ``fn``'s output
        pytree) for these arguments, nothing compiled or run: jax.jit's ``eval_shape``."""
        jax = _jax()
        return jax.jit(self.fn, static_argnums=self.static_argnums,
                       static_argnames=self.static_argnames).eval_shape(*args, **kwargs)

    def _positional(self, args, kwargs):
        """``(fn, args, static keywords)`` with keyword arguments made positional: the
        dynamic ones one dict after ``args`` (a pytree, as jax.jit flattens them), the
        ``static_argnames`` ones baked into ``fn`` and returned for the cache key."""
        if kwargs and self.in_shardings is not None:
            raise ValueError("pjit does not support kwargs when in_shardings is specified.")
        if not kwargs:
            return self.fn, args, ()
        names = self.static_argnames + self._numbered_names
        statics = {k: v for k, v in kwargs.items() if k in names}
        dynamic = {k: v for k, v in kwargs.items() if k not in names}
        fn, n = self.fn, len(args)

        def call(*a):
            return fn(*a[:n], **a[n], **statics)
        call.__name__ = fun_name(fn)
        return call, (*args, dynamic), _params_key(statics)

    def _arg_name(self, i: int, args, kwargs) -> str:
        """The path jax.jit's messages give the ``i``-th flat dynamic argument (``x['a']``,
        ``args[1]``), through jax's own naming ("unknown" where this jax has none)."""
        try:
            from jax._src import api_util
            names = api_util.debug_info(
                "jit", self.fn, args, kwargs, static_argnums=self._argnums(len(args))[0],
                static_argnames=self.static_argnames + self._numbered_names).arg_names
            return names[i]
        except (ImportError, AttributeError, TypeError, ValueError, IndexError):
            return "unknown"  # (a jax without its naming, or names that do not fit)

    def _key(self, args, static, call_args=((), {}), call=True):
        """(the signature key of a call with ``args`` (or of a ``trace``: ``call=False``,
        where a ShapeDtypeStruct stands for an array), its flat dynamic leaves); (None,
        None) inside a trace."""
        jax = _jax()
        statics, dynamic = _split(args, static)
        leaves, tree = jax.tree_util.tree_flatten(tuple(dynamic))
        sig = []
        for i, x in enumerate(leaves):
            if isinstance(x, jax.core.Tracer):
                # Called by a function lower.jax is tracing, or inside a jax transformation
                # (jax.grad(lower.jax.jit(f))): jax.jit's call there (see _inside_a_trace).
                return None, None
            if call and isinstance(x, jax.ShapeDtypeStruct):
                raise TypeError(f"an argument is a jax.ShapeDtypeStruct {x}, not an array: "
                                "to lower the program of a signature, pass it to "
                                ".lower(...)")
            aval = _abstractify(jax, x, self.fn, lambda: self._arg_name(i, *call_args))
            # (the aval's class too: a jax Ref and an array of its shape trace apart)
            # (a key type by its dtype object: two PRNG implementations may print alike)
            dtype = aval.dtype
            sig.append((aval.shape, str(dtype) if isinstance(dtype, np.dtype) else dtype,
                        bool(getattr(aval, "weak_type", False)), aval.__class__))
        x64 = bool(jax.config.jax_enable_x64)
        # Static values by type and exact value: 2, 2.0 and True are equal but trace apart,
        # and so do 0.0 and -0.0 (jax.jit keys them by equality: the first one's program
        # would serve the other).
        static_key = _params_key(statics)
        return (tree, tuple(sig), static_key, x64, _partitionable(jax), _trace_context()), \
            leaves

    def _argnums(self, n: int) -> tuple:
        """static_argnums and donate_argnums of ``n`` positional arguments, non-negative
        (they keep their meaning once the keyword arguments' dict follows them). As in
        jax.jit, a negative number counts from the last argument given, and one past the
        arguments given names none (a parameter given by name, or left to its default, is
        static or donated through its name). A negative donate_argnums donates nothing, as
        in jax.jit (whose donation vector asks ``i in donate_argnums`` of each i >= 0)."""
        static = {*_given(self.static_argnums, n), *(i for i in self._named_nums if i < n)}
        return tuple(sorted(static)), _given([i for i in self._donate_nums if i >= 0], n)

    def _check_statics(self, args, kwargs) -> tuple:
        """The static argument numbers of this call, its static arguments hashable (as
        jax.jit requires)."""
        static = self._argnums(len(args))[0]
        names = self.static_argnames + self._numbered_names
        _check_hashable([args[i] for i in static] +
                        [v for k, v in kwargs.items() if k in names])
        return static

    def lower(self, *args, **kwargs) -> Lowered:
        """Our program for these arguments' signature (jax.jit's ``lower``)."""
        return self.trace(*args, **kwargs).lower()

    def trace(self, *args, **kwargs) -> Traced:
        """JAX's trace for these arguments' signature, not lowered yet (jax.jit's
        ``trace``): ``.jaxpr``, ``.args_info``, ``.out_info``, ``.lower()``."""
        self._check_statics(args, kwargs)
        static, donate = self._argnums(len(args))
        raw_args = args
        fn, args, static_kw = self._positional(args, kwargs)
        # (keyword arguments with in_shardings: refused by _positional, as jax.jit refuses
        # them, static ones too)
        jax_options.check_backend(self.platform)
        # One trace per signature, as jax.jit keeps (lower, trace and calls share it: fn's
        # side effects while tracing happen once); none kept inside another trace.
        key = self._key(args, static, (raw_args, kwargs), call=False)[0]
        if key is not None:
            key = (key, bool(kwargs), static_kw)
            with self._lock:
                traced = self._traces.get(key)
            if traced is not None:
                return traced
        traced = trace(fn, *args, platform=self.platform, donate_argnums=donate,
                     static_argnums=static, in_shardings=self.in_shardings,
                     out_shardings=self.out_shardings, keep_unused=self.keep_unused,
                     _kwargs=bool(kwargs),
                     _named=(self.fn, raw_args, kwargs, static,
                             self.static_argnames + self._numbered_names),
                     _donate_keywords=frozenset(k for k in kwargs if k in self._donate_names))
        if key is not None:
            with self._lock:
                traced = self._traces.setdefault(key, traced)
        return traced

    def _inside_a_trace(self, *args, **kwargs):
        """A call with jax tracers for arguments: from a function lower.jax is tracing (a
        jitted helper of a jitted function), or inside jax's own transformations (grad,
        vmap, eval_shape of a lower.jax.jit function). jax.jit's call, as jax.jit nests and
        transforms: in the first case the outer program holds it as a call our rules lower;
        in the second jax runs it (lower.jax.jit(jax.grad(f)) lowers the gradient here)."""
        jitted = self._jax_jit
        if jitted is None:
            jax = _jax()
            shardings = {}
            for name in ("in_shardings", "out_shardings"):
                spec = getattr(self, name)
                if spec is not None:
                    if any(isinstance(x, str) for x in
                           jax.tree_util.tree_leaves(spec, is_leaf=_is_sharding)):
                        raise TypeError(f"{self.__name__} is called inside a function "
                                        f"lower.jax traces, so jax.jit traces it, which takes "
                                        f"jax Shardings, not XLA sharding text, as {name}")
                    shardings[name] = spec
            jitted = self._jax_jit = jax.jit(
                self.fn, static_argnums=self.static_argnums,
                static_argnames=self.static_argnames, **shardings,
                **jax_options.nested_options(self))
        return jitted(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        jax = _jax()
        if jax.config.jax_disable_jit:  # (read per call, as jax.jit reads it: fn runs as is)
            return self.fn(*args, **kwargs)
        _, positional, static_kw = self._positional(args, kwargs)
        static = self._check_statics(args, kwargs)
        key, leaves = self._key(positional, static, (args, kwargs))
        if key is None:
            return self._inside_a_trace(*args, **kwargs)
        key = (key, bool(kwargs), static_kw)
        with self._lock:
            entry = self._cache.get(key)
        if entry is None:
            lowered = self.lower(*args, **kwargs)
            from verify.errors import CompileError
            try:
                exe = lowered.compile(compiler_options=self.compiler_options)
            except CompileError as e:
                # What XLA (or verify, on XLA's behalf) refuses to compile is jax.jit's
                # JaxRuntimeError, ours its cause (``Lowered.compile`` raises ours).
                raise jax.errors.JaxRuntimeError(str(e)) from e
            # (the donated arguments whose buffers the program takes for results: those it
            # aliases, and the buffer donors XLA chose to reuse; jax.jit deletes them)
            taken = tuple(lowered.kept_var_idx[p] for p in exe.aliased_parameters()) \
                if any(lowered.donated) else ()
            entry = (lowered, exe, taken)
            with self._lock:
                self._cache.setdefault(key, entry)
        lowered, exe, taken = entry
        refs = lowered.ref_inputs
        if refs:  # (jax Refs: their current values in, their final values after the results)
            ref_leaves = [*leaves, *lowered.closed_refs]  # (those fn closes over: after its)
            leaves = [leaf[...] if i in refs else leaf for i, leaf in enumerate(ref_leaves)]
        # (the arguments the program takes: unused ones, pruned, are not even converted)
        arrays = [_to_numpy(jax, leaves[i], lowered.in_avals[i]) for i in lowered.kept_var_idx]
        # A donated jax.Array whose buffer goes to a result is deleted, as jax.jit deletes it
        # (when it dispatches the program, so a failed run too; not under jax_debug_nans or
        # jax_debug_infs, where jax.jit donates nothing).
        doomed = taken if not (jax.config.jax_debug_nans or jax.config.jax_debug_infs) else ()
        if doomed or any(lowered.donated):
            _refuse_donated_twice(jax, leaves, lowered.donated, lowered.kept_var_idx)
        try:
            results = (exe(*arrays) if lowered.num_partitions == 1 else
                       exe.run_global(*arrays))[lowered.token_outputs:]
        except Exception as e:
            from verify.errors import CallbackError
            if isinstance(e, CallbackError):
                # jax.jit's error for a failed host callback; ours (caused by the callback's)
                # is its cause
                raise jax.errors.JaxRuntimeError(str(e)) from e
            raise
        finally:
            for i in doomed:
                if isinstance(leaves[i], jax.Array):
                    leaves[i].delete()
        if refs:
            results, finals = results[:-len(refs)], results[-len(refs):]
            for i, y in zip(refs, finals):
                ref_leaves[i][...] = _from_numpy(jax, y, lowered.in_avals[i])
        _check_special(jax, self, results, lowered.out_avals, args, kwargs)
        outs = [_from_numpy(jax, y, a) for y, a in zip(results, lowered.out_avals)]
        return jax.tree_util.tree_unflatten(lowered.out_tree, outs)


def _abstractify(jax, x, fn, name):
    """``x``'s abstract value, as jax.jit reads an argument (a Python int out of its
    type's range included), refused in jax.jit's words (``name()``: the argument's path)."""
    try:
        from jax._src.core import shaped_abstractify
    except ImportError:  # (a jax without it: the public one, which checks no range)
        shaped_abstractify = jax.api_util.shaped_abstractify
    try:
        return shaped_abstractify(x)
    except OverflowError:
        raise OverflowError("An overflow was encountered while parsing an argument to a "
                            f"jitted computation, whose argument path is {name()}. Got "
                            f"{type(x)} with value {x}") from None
    except TypeError:
        raise TypeError(
            f"Error interpreting argument to {fn} as an abstract array. The problematic value "
            f"is of type {type(x)} and was passed to the function at path {name()}.\n"
            "This typically means that a jit-wrapped function was called with a non-array "
            "argument, and this argument was not marked as static using the static_argnums "
            "or static_argnames parameters of jax.jit.") from None


def _check_special(jax, jitted, results, avals, args, kwargs) -> None:
    """jax.jit's ``jax_debug_nans`` / ``jax_debug_infs`` (read now, as jax reads them on each
    call, context managers included): a NaN (Inf) in a floating or complex result prints that
    the de-optimized function runs, and runs ``fn`` op by op in jax, whose own check raises
    ``FloatingPointError`` at the operation that made it (or Python's ZeroDivisionError);
    where none does, FloatingPointError says so, in jax's words."""
    nans, infs = bool(jax.config.jax_debug_nans), bool(jax.config.jax_debug_infs)
    if not (nans or infs):
        return
    found = None
    for y, aval in zip(results, avals):
        if found or not jax.dtypes.issubdtype(aval.dtype, np.inexact):
            continue
        y = np.asarray(y)
        found = ("nan" if nans and np.isnan(y).any() else
                 "inf" if infs and np.isinf(y).any() else None)
    if found is None:
        return
    print("Invalid nan value encountered in the output of a jax.jit function. Calling the "
          "de-optimized version.")
    try:
        jitted.fn(*args, **kwargs)
    except (FloatingPointError, ZeroDivisionError) as e:
        raise e from None
    raise FloatingPointError(
        f"{(f'jit({jitted.__name__})', found)}. Because jax_config.debug_nans.value and/or "
        "config.jax_debug_infs is set, the de-optimized function (i.e., the function as if "
        "the `jit` decorator were removed) was called in an attempt to get a more precise "
        "error message. However, the de-optimized function did not produce invalid values "
        "during its execution. This behavior can result from `jit` optimizations causing "
        "the invalid value to be produced. It may also arise from having nan/inf literals "
        "as inputs or outputs, like `jax.jit(lambda ...: jax.numpy.nan)(...)`. \n\nIt may "
        "be possible to avoid the invalid value by removing the `jit` decorator, at the "
        "cost of losing optimizations. \n\nIf you see this error, consider opening a bug "
        "report at https://github.com/jax-ml/jax.") from None


def _trace_context():
    """jax's configuration that changes what tracing makes (rank and dtype promotion,
    default matmul precision, ...), as jax.jit's own cache keys it; None where this jax
    does not say (x64 and threefry's layout are keyed apart anyway)."""
    context = jax_attr("jax._src.config", "trace_context")
    return context() if context is not None else None


def _partitionable(jax) -> bool:
    """jax's ``jax_threefry_partitionable`` now (True, its default, where it has none)."""
    return bool(getattr(jax.config, "jax_threefry_partitionable", True))


def _is_key(jax, aval) -> bool:
    return jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key)


def _refuse_donated_twice(jax, leaves, donated, kept) -> None:
    """jax.jit's error (PJRT's, when it executes) for one jax.Array given for a donated
    argument and for another one too; the array is left alive."""
    first: dict = {}
    for pos, i in enumerate(kept):
        leaf = leaves[i]
        if not isinstance(leaf, jax.Array):
            continue
        p, j = first.setdefault(id(leaf), (pos, i))
        if j == i:
            continue
        if donated[j]:
            what = ("Attempt to use a buffer that was previously donated in the same call to "
                    "Execute()", "`f(donate(a), a)`")
        elif donated[i]:
            what = ("Attempt to donate a buffer which is also used by the same call to "
                    "Execute()", "`f(a, donate(a))`")
        else:
            continue
        raise jax.errors.JaxRuntimeError(
            f"INVALID_ARGUMENT: {what[0]} (flattened argument {pos}, replica 0, partition 0, "
            f"first use: {p}). Toy example for this bug: {what[1]}.")


def _to_numpy(jax, x, aval):
    """An argument as the program takes it: typed PRNG keys as their key data (what the
    lowering makes of a key aval: uint32 words), anything else in the aval's dtype."""
    if _is_key(jax, aval):
        return np.asarray(jax.random.key_data(x))
    if aval.dtype == FLOAT0:  # (lowered as i1: see lower.constants.FLOAT0)
        return np.zeros(aval.shape, np.bool_)
    return np.asarray(x, dtype=aval.dtype)


def _from_numpy(jax, y, aval):
    """A result as ``fn`` returns it: typed PRNG keys wrapped again around their data (a jax
    key array), anything else the numpy array."""
    if _is_key(jax, aval):
        return jax.random.wrap_key_data(y, impl=aval.dtype._impl)
    if aval.dtype == FLOAT0:
        return np.zeros(aval.shape, FLOAT0)
    return y


_NOT_GIVEN = object()


def jit(fn=_NOT_GIVEN, *, static_argnums=(), donate_argnums=(), platform: str | None = None,
        in_shardings=None, out_shardings=None, static_argnames=(), donate_argnames=(),
        keep_unused: bool = False, device=None, backend: str | None = None,
        inline: bool = False, compiler_options: dict | None = None):
    """Like ``jax.jit``: ``jit(fn)`` or ``@jit`` / ``@jit(static_argnums=...)``. Keyword
    arguments are dynamic unless named in ``static_argnames``. Called from inside a function
    ``lower.jax`` traces, it is jax.jit's (a call in the outer program, or its equations
    there with ``inline=True``), as jax.jit nests. ``platform`` ("cpu" by default; jax's
    deprecated ``backend``, or ``device``'s platform) is where it lowers and runs;
    ``keep_unused`` and ``compiler_options`` are jax.jit's (``lower.jax.jax_options``)."""
    options = dict(static_argnums=static_argnums, donate_argnums=donate_argnums,
                   platform=platform, in_shardings=in_shardings, out_shardings=out_shardings,
                   static_argnames=static_argnames, donate_argnames=donate_argnames,
                   keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                   compiler_options=compiler_options)
    if fn is _NOT_GIVEN:
        return lambda f: Jitted(f, **options)
    return Jitted(fn, **options)
