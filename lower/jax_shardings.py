"""How lower.jax matches shardings to a program, as jax.jit matches them: XLA sharding text
and jax Shardings flattened against the arguments' and results' pytrees, the devices they (and
shard_map meshes, sharding constraints, host callbacks) name checked for one set, and how many
devices the program is partitioned over."""

from __future__ import annotations

import math
import re

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
    """The most devices a ``shard_map`` mesh, a sharding constraint or a nested jit's
    in/out shardings anywhere in the jaxpr names (None: none)."""
    best = None
    for eqn in _all_eqns(jaxpr):
        size = getattr(eqn.params.get("mesh"), "size", None)
        if isinstance(size, int) and size > 1:
            best = max(best or 0, size)
        # (a sharding constraint's devices too: jax.jit runs such a program on them)
        params = eqn.params
        named = [params.get("sharding")] if "sharding" in params else []
        if eqn.primitive.name in ("jit", "pjit"):
            named += list(params.get("in_shardings") or ()) + \
                list(params.get("out_shardings") or ())
        for s in named:
            ids = _device_list(s)
            # (a sharding on the abstract mesh jax.set_mesh gives: its size)
            n = len(ids) if ids else getattr(getattr(s, "mesh", None), "size", None)
            if isinstance(n, int) and n > 1:
                best = max(best or 0, n)
    return best


def call_shardings(in_shardings, out_shardings, closed, manual=None) -> tuple | None:
    """A nested jit's (argument, result) sharding texts for ``lower.mlir.call_lowering``
    (None where unspecified), or None when it names none. ``manual``: (mesh, manual axes)
    of the partly manual region the call is in, whose subgroup each sharding's spec is
    over (a sharding without a spec there: left out)."""
    from .axis_context import spec_to_hlo_sharding

    def text(s, a):
        if manual is None:
            return _as_text(s, a)
        spec = getattr(s, "spec", None)
        return None if spec is None else \
            spec_to_hlo_sharding(manual[0], spec, len(a.shape), manual[1])

    def texts(shardings, avals):
        return tuple(None if s is None or type(s).__name__ == "UnspecifiedValue" else
                     text(s, a) for s, a in zip(shardings or (), avals))
    ins = texts(in_shardings, closed.in_avals)
    outs = texts(out_shardings, closed.out_avals)
    if not any(ins) and not any(outs):
        return None
    return (ins + (None,) * (len(closed.in_avals) - len(ins)),
            outs + (None,) * (len(closed.out_avals) - len(outs)))


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
            named.setdefault(ids, f"sharding {s}")
            order = order or ids
    nested = []  # a nested jit's shardings: their devices in the program's order too
    for eqn in _all_eqns(jaxpr):
        params = eqn.params
        for key in ("mesh", "sharding"):
            ids = _device_list(params.get(key))
            if not ids:
                continue
            what = f"the {eqn.primitive.name} {key} {params.get(key)}"
            if key == "sharding" and eqn.primitive.name in _CALLBACKS:
                callbacks.append((frozenset(ids), what))
                continue
            named.setdefault(ids, what)
            order = order or ids
        if eqn.primitive.name in ("jit", "pjit"):
            for s in list(params.get("in_shardings") or ()) + \
                    list(params.get("out_shardings") or ()):
                ids = _device_list(s)
                if ids:
                    what = f"jit inside jit with sharding {s}"
                    named.setdefault(ids, what)
                    nested.append((ids, what))
                    order = order or ids
    if len(named) > 1:
        # (in order: the same devices listed otherwise are another assignment, as jax.jit
        # compares them)
        parts = "; ".join(f"{what} uses devices {list(ids)}" for ids, what in named.items())
        raise ValueError(f"Received incompatible devices for jitted computation: {parts}")
    for ids, what in nested:
        if ids != order:
            raise ValueError(f"Received incompatible devices for jitted computation: {what} "
                             f"uses device ids {list(ids)}, the program {list(order)}")
    for ids, what in callbacks:
        if named and not ids <= frozenset(next(iter(named))):
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
    # A jax Sharding that does not divide the array is refused as jax.jit refuses it
    # (jax's IndivisibleError); sharding text XLA pads and crops is taken as it is.
    shard_shape = getattr(sharding, "shard_shape", None)
    if shard_shape is not None and hasattr(aval, "shape"):
        shard_shape(tuple(aval.shape))
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
