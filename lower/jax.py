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

import re
import threading

import numpy as np

__all__ = ["lower", "jit", "Lowered", "Jitted"]


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
                 token_outputs=0):
        self.module = module
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

    def compile(self, platform: str = "cpu"):
        """The ``verify.Executable`` of the module."""
        import verify
        return verify.compile(self.module, platform)


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


_DEVICES = re.compile(r"devices=\[[\d,]+\]([\d,]+)")


def _num_partitions(shardings) -> int | None:
    counts = [len(m.group(1).split(",")) for s in shardings if s for m in [_DEVICES.search(s)]
              if m]
    return max(counts) if counts else None


def lower(fn, *example_args, platform: str = "cpu", donate_argnums=(), in_shardings=None,
          out_shardings=None, static_argnums=()) -> Lowered:
    """Our module of ``fn`` for these arguments' signature (their values are not baked in,
    except the static ones). ``in_shardings``/``out_shardings`` are XLA sharding strings,
    one per flat argument/result (None: unannotated), put on ``mhlo.sharding``; the program
    is then partitioned over as many devices as they name."""
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

    closed, out_shape = jax.make_jaxpr(dynamic_fn, return_shape=True)(*dynamic)
    leaves, in_tree = jax.tree_util.tree_flatten(tuple(dynamic))
    out_tree = jax.tree_util.tree_structure(out_shape)
    donated = []
    for i, a in enumerate(example_args):
        if i in statics:
            continue
        donated += [i in donate_argnums] * len(jax.tree_util.tree_leaves(a))
    in_sh = list(in_shardings) if in_shardings is not None else None
    out_sh = list(out_shardings) if out_shardings is not None else None
    for what, sh, count in (("in_shardings", in_sh, len(leaves)),
                            ("out_shardings", out_sh, len(closed.out_avals))):
        if sh is not None and len(sh) != count:
            raise ValueError(f"{what} has {len(sh)} entries for {count} flat "
                             f"{'arguments' if what == 'in_shardings' else 'results'}")
    partitions = _num_partitions((in_sh or []) + (out_sh or []))
    name = getattr(fn, "__name__", "fn")
    ordered = ordered_in_order(closed.effects)
    result = lower_jaxpr_to_module(f"jit_{name}", closed, platform=platform,
                                   ordered_effects=ordered,
                                   donated_args=donated if any(donated) else None,
                                   arg_shardings=in_sh, result_shardings=out_sh,
                                   num_partitions=partitions)
    return Lowered(result.module, in_tree, out_tree, closed.in_avals, closed.out_avals,
                   donated, statics, token_outputs=len(ordered))


class Jitted:
    """``jit(fn)``: call it like ``fn``. ``lower(*args)`` gives the ``Lowered`` program of a
    signature, ``cache_size`` how many signatures have been compiled."""

    def __init__(self, fn, *, static_argnums=(), donate_argnums=(), platform: str = "cpu"):
        self.fn = fn
        self.static_argnums = static_argnums
        self.donate_argnums = donate_argnums
        self.platform = platform
        self._cache: dict = {}
        self._lock = threading.Lock()
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", "jitted")
        self.__doc__ = getattr(fn, "__doc__", None)

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def _key(self, args):
        jax = _jax()
        static = _normalize_argnums(self.static_argnums, len(args), "static_argnums")
        statics, dynamic = _split(args, static)
        leaves, tree = jax.tree_util.tree_flatten(tuple(dynamic))
        sig = []
        for x in leaves:
            aval = jax.api_util.shaped_abstractify(x)
            sig.append((aval.shape, str(aval.dtype), bool(getattr(aval, "weak_type", False))))
        try:
            hash(tuple(statics.items()))
        except TypeError:
            raise TypeError("static arguments must be hashable (as in jax.jit)") from None
        x64 = bool(jax.config.jax_enable_x64)
        return (tree, tuple(sig), tuple(sorted(statics.items())), x64), leaves

    def lower(self, *args) -> Lowered:
        return lower(self.fn, *args, platform=self.platform,
                     donate_argnums=self.donate_argnums, static_argnums=self.static_argnums)

    def __call__(self, *args):
        jax = _jax()
        key, leaves = self._key(args)
        with self._lock:
            entry = self._cache.get(key)
        if entry is None:
            lowered = self.lower(*args)
            entry = (lowered, lowered.compile(self.platform))
            with self._lock:
                self._cache.setdefault(key, entry)
        lowered, exe = entry
        arrays = [_to_numpy(jax, x, a) for x, a in zip(leaves, lowered.in_avals)]
        results = exe(*arrays)[lowered.token_outputs:]
        outs = [_from_numpy(jax, y, a) for y, a in zip(results, lowered.out_avals)]
        return jax.tree_util.tree_unflatten(lowered.out_tree, outs)


def _is_key(jax, aval) -> bool:
    return jax.dtypes.issubdtype(aval.dtype, jax.dtypes.prng_key)


def _to_numpy(jax, x, aval):
    """An argument as the program takes it: typed PRNG keys as their key data (what the
    lowering makes of a key aval: uint32 words), anything else in the aval's dtype."""
    if _is_key(jax, aval):
        return np.asarray(jax.random.key_data(x))
    return np.asarray(x, dtype=aval.dtype)


def _from_numpy(jax, y, aval):
    """A result as ``fn`` returns it: typed PRNG keys wrapped again around their data (a jax
    key array), anything else the numpy array."""
    if _is_key(jax, aval):
        return jax.random.wrap_key_data(y, impl=aval.dtype._impl)
    return y


def jit(fn=None, *, static_argnums=(), donate_argnums=(), platform: str = "cpu"):
    """Like ``jax.jit``: ``jit(fn)`` or ``@jit`` / ``@jit(static_argnums=...)``."""
    if fn is None:
        return lambda f: Jitted(f, static_argnums=static_argnums,
                                donate_argnums=donate_argnums, platform=platform)
    return Jitted(fn, static_argnums=static_argnums, donate_argnums=donate_argnums,
                  platform=platform)
