"""The JAX user's front door: ``lower.jax.lower(fn, *args)`` and ``lower.jax.jit(fn)``.

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

import math
import re
import sys
import threading
import types

import numpy as np

from .constants import FLOAT0
from .mlir import _params_key

__all__ = ["lower", "jit", "Lowered", "Jitted"]

# How deep this thread is in lower()'s tracing: a jitted function called there is traced
# into the outer program (as jax.jit's), not run (Jitted._key).
_TRACING = threading.local()


def _jax():
    try:
        import jax
    except ImportError as e:
        raise ImportError(f"lower.jax needs jax ({e}): pip install 'mhlo-ir[jax]'") from None
    return jax


class Lowered:
    """A function lowered for one input signature: ``module`` (an mhlo_ir Module), ``text``,
    the input and output pytree structures and abstract values, and the flat donation
    mask."""

    def __init__(self, module, in_tree, out_tree, in_avals, out_avals, donated, statics,
                 token_outputs=0, num_partitions=1):
        self.module = module
        self.num_partitions = num_partitions  # devices the shardings name (1: none)
        # main's leading dummy results, one per ordered effect (io_callback(ordered=True),
        # ordered debug prints): not fn's outputs.
        self.token_outputs = token_outputs
        self.in_tree, self.out_tree = in_tree, out_tree
        self.in_avals, self.out_avals = list(in_avals), list(out_avals)
        self.donated = tuple(donated)
        self.static_args = statics

    @property
    def text(self) -> str:
        """The module's MHLO text (generic form, with locations)."""
        return self.module.to_text()

    def compile(self, platform: str = "cpu", *, topology: str | None = None):
        """The ``verify.Executable`` of the module, for as many devices as its shardings
        name; with a TPU ``topology`` ("v5e:2x2"), compiled ahead of time without a TPU
        (``verify.compile``'s ``Compiled``: what XLA made, nothing to run)."""
        import verify
        # (results without out_shardings stay where XLA's partitioner puts them, as in
        # jax.jit: run_global reassembles them by the compiled shardings)
        return verify.compile(self.module, platform, num_partitions=self.num_partitions,
                              propagate_result_shardings=True, topology=topology)


def _split(args, static_argnums):
    statics = {i: args[i] for i in static_argnums}
    dynamic = [a for i, a in enumerate(args) if i not in statics]
    return statics, dynamic


def _normalize_argnums(argnums, n: int, what: str) -> tuple:
    if isinstance(argnums, int):
        argnums = (argnums,)
    out = []
    for i in argnums:
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise ValueError(f"{what} {i} is out of range for {n} positional arguments")
        out.append(j)
    return tuple(sorted(set(out)))


_TILED = re.compile(r"devices=\[[\d,]+\](?:<=\[([\d,]+)\](?:T\([\d,]+\))?|([\d,]+))")
_MAXIMAL = re.compile(r"maximal device=(\d+)")


def _devices_named(sharding: str) -> int:
    """How many devices an XLA sharding string needs: one past the largest device it names
    (``{devices=[2,2]0,1,2,3}``, iota ``{devices=[2,2]<=[4]}``, ``{maximal device=3}``)."""
    m = _TILED.search(sharding)
    if m:
        if m.group(1):
            return math.prod(int(d) for d in m.group(1).split(","))
        ids = [int(d) for d in m.group(2).split(",")]
        if sorted(ids) != list(range(len(ids))):
            raise ValueError(f"sharding {sharding} names devices {ids}: a tiled sharding "
                             f"names each of the program's devices 0..{len(ids) - 1} once")
        return len(ids)
    m = _MAXIMAL.search(sharding)
    return int(m.group(1)) + 1 if m else 1


def _all_eqns(jaxpr):
    """Every equation of ``jaxpr`` (or a ClosedJaxpr) and of the jaxprs its equations hold
    in their params (calls, bodies, branches), each jaxpr once."""
    stack, seen = [jaxpr], set()
    while stack:
        j = stack.pop()
        j = getattr(j, "jaxpr", j)
        if id(j) in seen or not hasattr(j, "eqns"):
            continue
        seen.add(id(j))
        for eqn in j.eqns:
            yield eqn
            for v in eqn.params.values():
                for item in (v if isinstance(v, (tuple, list)) else (v,)):
                    if hasattr(item, "eqns") or hasattr(getattr(item, "jaxpr", None), "eqns"):
                        stack.append(item)


def _mesh_devices(jaxpr) -> int | None:
    """The most devices a ``shard_map`` mesh or a sharding constraint anywhere in the jaxpr
    names (None: none)."""
    best = None
    for eqn in _all_eqns(jaxpr):
        size = getattr(eqn.params.get("mesh"), "size", None)
        if isinstance(size, int) and size > 1:
            best = max(best or 0, size)
        # (a sharding constraint's devices too: jax.jit runs such a program on them)
        ids = _device_list(eqn.params.get("sharding")) if "sharding" in eqn.params else None
        if ids and len(ids) > 1:
            best = max(best or 0, len(ids))
    return best


def _device_list(x) -> tuple | None:
    """The ids of the devices a jax Sharding or Mesh names, in its order (None: not one that
    names them: sharding text, an abstract mesh)."""
    try:
        devices = getattr(x, "_device_assignment", None)
        if devices is None:
            devices = getattr(getattr(x, "devices", None), "flat", None)
        return tuple(d.id for d in devices) if devices is not None else None
    except (AttributeError, TypeError, ValueError):  # (ValueError: over an AbstractMesh)
        return None


# Primitives whose ``sharding`` param places the call on one device of the program's (jax's
# SingleDeviceSharding), not the program on those devices.
_CALLBACKS = frozenset({"io_callback", "pure_callback", "debug_callback"})


def _check_one_device_set(jax, shardings, jaxpr) -> tuple | None:
    """Every jax Sharding given, every shard_map mesh and sharding constraint in the program
    names the same devices, as jax.jit requires ("Received incompatible devices"): XLA would
    otherwise fail on the mix, or run some of it on devices the rest does not use. A host
    callback's sharding names one device among them. Returns the program's devices in the
    order the first of them lists them (None: none named), which a callback's device is
    numbered by."""
    named: dict = {}
    order = None
    callbacks = []
    for s in jax.tree_util.tree_leaves(list(shardings), is_leaf=_is_sharding):
        ids = _device_list(s)
        if ids:
            named.setdefault(frozenset(ids), f"sharding {s}")
            order = order or ids
    for eqn in _all_eqns(jaxpr):
        for key in ("mesh", "sharding"):
            ids = _device_list(eqn.params.get(key))
            if not ids:
                continue
            what = f"the {eqn.primitive.name} {key} {eqn.params.get(key)}"
            if key == "sharding" and eqn.primitive.name in _CALLBACKS:
                callbacks.append((frozenset(ids), what))
                continue
            named.setdefault(frozenset(ids), what)
            order = order or ids
    if len(named) > 1:
        parts = "; ".join(f"{what} uses devices {sorted(ids)}" for ids, what in named.items())
        raise ValueError(f"Received incompatible devices for jitted computation: {parts}")
    for ids, what in callbacks:
        if named and not ids <= next(iter(named)):
            raise ValueError(f"Received incompatible devices for jitted computation: {what} "
                             f"uses devices {sorted(ids)}, outside the program's "
                             f"{sorted(next(iter(named)))}")
    return order


def _num_partitions(shardings) -> int | None:
    """The devices the shardings name; tiled ones must all name that many (XLA:
    "tile_assignment should have 4 devices but has 2")."""
    counts = {s: _devices_named(s) for s in shardings if s}
    if not counts:
        return None
    n = max(counts.values())
    for s, k in counts.items():
        if k != n and _TILED.search(s):
            raise ValueError(f"sharding {s} tiles over {k} devices, but other shardings of "
                             f"the program name {n}: every tiled sharding must use all {n} "
                             "(replicate along a trailing tile dimension, "
                             "'last_tile_dim_replicate', to use fewer)")
    return n


class _Flat:
    """One sharding standing for every leaf of the subtree it is matched with."""

    def __init__(self, value, count):
        self.value, self.count = value, count


def _is_sharding(x) -> bool:
    if type(x).__name__ in ("PartitionSpec", "P") and type(x).__module__.startswith("jax"):
        raise ValueError(f"a PartitionSpec ({x}) names mesh axes, not devices: pass "
                         "jax.sharding.NamedSharding(mesh, spec), or XLA's sharding text")
    return x is None or isinstance(x, str) or hasattr(x, "_to_xla_hlo_sharding") or \
        type(x).__name__ == "HloSharding"


def _as_text(sharding, aval) -> str | None:
    """An XLA sharding string: strings as given, jax Shardings (``NamedSharding``,
    ``PositionalSharding``...) and jaxlib HloShardings printed by XLA."""
    if sharding is None or isinstance(sharding, str):
        return sharding
    to_hlo = getattr(sharding, "_to_xla_hlo_sharding", None)
    if to_hlo is None:
        return str(sharding)
    # Against the array's own rank (a key array's logical one), as jax.jit checks it: a
    # PartitionSpec longer than the rank raised IndexError inside jax, or split key words.
    check = getattr(sharding, "check_compatible_aval", None)
    if check is not None:
        check(tuple(getattr(aval, "shape", ())))
    # Of the array the program holds: a typed PRNG key's words are trailing dimensions,
    # which the sharding leaves whole (as jax's physical sharding of a key array does).
    from .rules.random import physical_aval
    return str(to_hlo(len(physical_aval(aval).shape)))


def _flat_shardings(jax, what: str, spec, whole, avals) -> list | None:
    """``spec`` matched to the flat leaves of ``whole`` (the tuple of positional arguments,
    or the output), as jax.jit matches it: one sharding for everything, a pytree prefix of
    ``whole`` (a tuple or list: one entry per element, each a prefix of its subtree), or one
    sharding per flat leaf."""
    if spec is None:
        return None
    n = len(avals)
    trees = list(whole) if isinstance(whole, (tuple, list)) else [whole]
    if not _is_sharding(spec) and not isinstance(spec, (tuple, list)):
        spec, trees = [spec], [whole]  # a dict or other pytree prefix of the whole
    if _is_sharding(spec):
        flat = [spec] * n
    else:
        spec = list(spec)
        if len(spec) == len(trees):
            flat = []
            for s, tree in zip(spec, trees):
                marked = jax.tree_util.tree_map(
                    lambda sh, sub: _Flat(sh, len(jax.tree_util.tree_leaves(sub))), s, tree,
                    is_leaf=_is_sharding)
                for f in jax.tree_util.tree_leaves(marked,
                                                   is_leaf=lambda x: isinstance(x, _Flat)):
                    flat += [f.value] * f.count
        elif len(spec) == n and all(map(_is_sharding, spec)):
            flat = spec
        else:
            kind = "arguments" if what == "in_shardings" else "results"
            raise ValueError(f"{what} has {len(spec)} entries for {n} flat {kind}")
    if len(flat) != n:
        raise ValueError(f"{what} gives {len(flat)} shardings for {n} flat values")
    return [_as_text(s, a) for s, a in zip(flat, avals)]


def lower(fn, *example_args, platform: str = "cpu", donate_argnums=(), in_shardings=None,
          out_shardings=None, static_argnums=(), _donate_keywords=frozenset()) -> Lowered:
    """Our module of ``fn`` for these arguments' signature (their values are not baked in,
    except the static ones). ``in_shardings``/``out_shardings`` are XLA sharding strings or
    jax Shardings (None: unannotated), matched to the arguments and results as jax.jit
    matches them (one for all, one per argument or result as a prefix of its pytree, or one
    per flat leaf), and put on ``mhlo.sharding``; the program is then partitioned over as
    many devices as they name."""
    jax = _jax()
    from . import lower_jaxpr_to_module
    from .tokens import ordered_in_order
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

    _TRACING.depth = getattr(_TRACING, "depth", 0) + 1
    try:
        closed, out_shape = jax.make_jaxpr(dynamic_fn, return_shape=True)(*dynamic)
    finally:
        _TRACING.depth -= 1
    leaves, in_tree = jax.tree_util.tree_flatten(tuple(dynamic))
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
    in_sh = _flat_shardings(jax, "in_shardings", in_shardings, tuple(dynamic),
                            closed.in_avals)
    out_sh = _flat_shardings(jax, "out_shardings", out_shardings, out_shape,
                             closed.out_avals)
    devices = _check_one_device_set(jax, (in_shardings, out_shardings), closed.jaxpr)
    partitions = _num_partitions((in_sh or []) + (out_sh or []))
    mesh = _mesh_devices(closed.jaxpr)
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
    name = getattr(fn, "__name__", "fn")
    ordered = ordered_in_order(closed.effects)
    from .rules.random import threefry_partitionable
    # jax reads jax_threefry_partitionable when it lowers random_bits and random_split (the
    # jaxpr does not record it): so do we, for the same random numbers.
    with threefry_partitionable(_partitionable(jax)):
        result = lower_jaxpr_to_module(f"jit_{name}", closed, platform=platform,
                                       ordered_effects=ordered, fn_name=name,
                                       donated_args=donated if any(donated) else None,
                                       arg_shardings=in_sh, result_shardings=out_sh,
                                       num_partitions=partitions, axis_context=axis_context)
    return Lowered(result.module, in_tree, out_tree, closed.in_avals, closed.out_avals,
                   donated, statics, token_outputs=len(ordered),
                   num_partitions=partitions or 1)


class Jitted:
    """``jit(fn)``: call it like ``fn``. ``lower(*args)`` gives the ``Lowered`` program of a
    signature, ``cache_size`` how many signatures have been compiled.

    With ``in_shardings``/``out_shardings`` (see ``lower``) the program runs on as many CPU
    devices as they name: whole arrays in, split by the shardings XLA compiled, and whole
    arrays out, put back together from their shards (``Executable.run_global``)."""

    def __init__(self, fn, *, static_argnums=(), donate_argnums=(), platform: str = "cpu",
                 in_shardings=None, out_shardings=None, static_argnames=(),
                 donate_argnames=()):
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
        self.platform = platform
        self._cache: dict = {}
        self._lock = threading.Lock()
        self._jax_jit = None  # (jax.jit of fn, for calls inside another's trace)
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "jitted")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __get__(self, instance, owner=None):
        """On a class, a method: bound to the instance (its first argument, static or
        traced as ``static_argnums`` says), as jax.jit's."""
        return self if instance is None else types.MethodType(self, instance)

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def _positional(self, args, kwargs):
        """``(fn, args, static keywords)`` with keyword arguments made positional: the
        dynamic ones one dict after ``args`` (a pytree, as jax.jit flattens them), the
        ``static_argnames`` ones baked into ``fn`` and returned for the cache key."""
        if not kwargs:
            return self.fn, args, ()
        names = self.static_argnames + self._numbered_names
        statics = {k: v for k, v in kwargs.items() if k in names}
        dynamic = {k: v for k, v in kwargs.items() if k not in names}
        fn, n = self.fn, len(args)

        def call(*a):
            return fn(*a[:n], **a[n], **statics)
        call.__name__ = getattr(fn, "__name__", "fn")
        try:
            hash(tuple(statics.items()))
        except TypeError:
            raise TypeError("static arguments must be hashable (as in jax.jit)") from None
        return call, (*args, dynamic), _params_key(statics)

    def _key(self, args, static):
        jax = _jax()
        statics, dynamic = _split(args, static)
        leaves, tree = jax.tree_util.tree_flatten(tuple(dynamic))
        sig = []
        for x in leaves:
            if isinstance(x, jax.core.Tracer):
                if getattr(_TRACING, "depth", 0):
                    return None, None  # (called by a function lower.jax is tracing)
                raise TypeError(
                    f"lower.jax.jit got a jax tracer ({type(x).__name__}) for an argument: it "
                    "runs programs outside jax, so it cannot be called inside jax.jit, vmap, "
                    "grad or other jax transformations (transform the function first: "
                    "lower.jax.jit(jax.vmap(f)))")
            if isinstance(x, jax.ShapeDtypeStruct):
                raise TypeError(f"an argument is a jax.ShapeDtypeStruct {x}, not an array: "
                                "to lower the program of a signature, pass it to "
                                ".lower(...)")
            aval = jax.api_util.shaped_abstractify(x)
            sig.append((aval.shape, str(aval.dtype), bool(getattr(aval, "weak_type", False))))
        try:
            hash(tuple(statics.items()))
        except TypeError:
            raise TypeError("static arguments must be hashable (as in jax.jit)") from None
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
        static or donated through its name)."""
        static = {*_given(self.static_argnums, n), *(i for i in self._named_nums if i < n)}
        return tuple(sorted(static)), _given(self._donate_nums, n)

    def lower(self, *args, **kwargs) -> Lowered:
        static, donate = self._argnums(len(args))
        fn, args, _ = self._positional(args, kwargs)
        ins = self.in_shardings
        if kwargs and isinstance(ins, (tuple, list)):
            # (the keyword arguments' dict: unannotated; jax.jit refuses keyword arguments
            # with in_shardings)
            ins = [*ins, None]
        return lower(fn, *args, platform=self.platform, donate_argnums=donate,
                     static_argnums=static, in_shardings=ins,
                     out_shardings=self.out_shardings,
                     _donate_keywords=frozenset(k for k in kwargs if k in self._donate_names))

    def _inside_a_trace(self, *args, **kwargs):
        """A call from a function lower.jax is tracing (a jitted helper of a jitted
        function): jax.jit's, as jax.jit nests, so the outer program holds it as a call."""
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
                static_argnames=self.static_argnames, **shardings)
        return jitted(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        jax = _jax()
        _, positional, static_kw = self._positional(args, kwargs)
        key, leaves = self._key(positional, self._argnums(len(args))[0])
        if key is None:
            return self._inside_a_trace(*args, **kwargs)
        key = (key, bool(kwargs), static_kw)
        with self._lock:
            entry = self._cache.get(key)
        if entry is None:
            lowered = self.lower(*args, **kwargs)
            entry = (lowered, lowered.compile(self.platform))
            with self._lock:
                self._cache.setdefault(key, entry)
        lowered, exe = entry
        arrays = [_to_numpy(jax, x, a) for x, a in zip(leaves, lowered.in_avals)]
        results = (exe(*arrays) if lowered.num_partitions == 1 else
                   exe.run_global(*arrays))[lowered.token_outputs:]
        outs = [_from_numpy(jax, y, a) for y, a in zip(results, lowered.out_avals)]
        return jax.tree_util.tree_unflatten(lowered.out_tree, outs)


def _other_way(fn, argnums, argnames) -> tuple:
    """(the positions of the parameters ``argnames`` names, the names of those ``argnums``
    numbers), through ``fn``'s signature: ((), ()) where it has none."""
    import inspect
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return (), ()
    either = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in either]
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    named = tuple(i for i, p in enumerate(positional) if p.name in argnames)
    numbered = tuple(positional[i].name for i in nums if 0 <= i < len(positional) and
                     positional[i].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return named, numbered


def _nums(nums) -> tuple:
    return (nums,) if isinstance(nums, int) else tuple(nums)


def _names(names) -> tuple:
    return (names,) if isinstance(names, str) else tuple(names)


def _given(nums, n: int) -> tuple:
    """The argument numbers ``nums`` among ``n`` given, non-negative (others: none)."""
    return tuple(sorted({i + n if i < 0 else i for i in nums if -n <= i < n}))


def _validate(fn, static_argnums, static_argnames, donate_argnums, donate_argnames) -> None:
    """jax.jit's checks of argument numbers and names against ``fn``'s signature (none where
    it has none): a number past its positional parameters (any, given ``*args``), a name it
    does not take (any, given ``**kwargs``) or takes by position only. (A parameter both
    static and donated, by name or number: ``Jitted.__init__``, through the names.)"""
    import inspect
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    kind = inspect.Parameter
    positional = sum(p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD)
                     for p in params)
    var_args = any(p.kind is kind.VAR_POSITIONAL for p in params)
    for what, nums in (("static_argnums", static_argnums), ("donate_argnums", donate_argnums)):
        if nums and not var_args and (-min(nums) > positional or max(nums) >= positional):
            raise ValueError(f"Jitted function has {what}={nums}, but only accepts "
                             f"{positional} positional arguments.")
    takes = {p.name for p in params if p.kind in (kind.POSITIONAL_OR_KEYWORD,
                                                   kind.KEYWORD_ONLY)}
    by_position = {p.name for p in params if p.kind in (kind.POSITIONAL_ONLY,
                                                         kind.VAR_POSITIONAL)}
    var_kwargs = any(p.kind is kind.VAR_KEYWORD for p in params)
    for what, names in (("static_argnames", static_argnames),
                        ("donate_argnames", donate_argnames)):
        if by_position & set(names):
            raise ValueError(f"Jitted function has invalid argnames {by_position & set(names)}"
                             f" in {what}. These are positional-only")
        if not var_kwargs and set(names) - takes:
            raise ValueError(f"Jitted function has invalid argnames {set(names) - takes} in "
                             f"{what}. Function does not take these args.")


def _trace_context():
    """jax's configuration that changes what tracing makes (rank and dtype promotion,
    default matmul precision, ...), as jax.jit's own cache keys it; None where this jax
    does not say (x64 and threefry's layout are keyed apart anyway)."""
    config = sys.modules.get("jax._src.config")
    context = getattr(config, "trace_context", None)
    return context() if context is not None else None


def _partitionable(jax) -> bool:
    """jax's ``jax_threefry_partitionable`` now (True, its default, where it has none)."""
    return bool(getattr(jax.config, "jax_threefry_partitionable", True))


def _is_key(jax, aval) -> bool:
    return jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key)


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


def jit(fn=None, *, static_argnums=(), donate_argnums=(), platform: str = "cpu",
        in_shardings=None, out_shardings=None, static_argnames=(), donate_argnames=()):
    """Like ``jax.jit``: ``jit(fn)`` or ``@jit`` / ``@jit(static_argnums=...)``. Keyword
    arguments are dynamic unless named in ``static_argnames``. Called from inside a function
    ``lower.jax`` traces, it is jax.jit's (a call in the outer program), as jax.jit nests."""
    options = dict(static_argnums=static_argnums, donate_argnums=donate_argnums,
                   platform=platform, in_shardings=in_shardings, out_shardings=out_shardings,
                   static_argnames=static_argnames, donate_argnames=donate_argnames)
    if fn is None:
        return lambda f: Jitted(f, **options)
    return Jitted(fn, **options)
