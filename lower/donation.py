"""Donated arguments as jax.jit's lowering marks them: ``tf.aliasing_output`` where an
output of the same type takes the buffer, ``jax.buffer_donor`` where XLA may reuse it (an
output of as many elements; over several devices, shardings that are not both given and
equal), and a warning naming the donations nothing can use."""

from __future__ import annotations

import collections
import warnings

import numpy as np

from .constants import aval_to_ir_types, is_token

__all__ = ["donations"]


def donations(avals_in, avals_out, donated_args, num_partitions, arg_shardings,
              result_shardings) -> tuple:
    """``(aliases, donors)`` of @main's arguments: per argument the output index it aliases
    (or None), and whether it is a buffer donor (None when none is)."""
    aliases, donors, unused = _set_up_aliases(avals_in, avals_out, donated_args)
    if any(unused):
        names = ", ".join(str(a.str_short()) for a, u in zip(avals_in, unused) if u)
        warnings.warn(f"Some donated buffers were not usable: {names}", stacklevel=3)
    if num_partitions is not None and num_partitions > 1:
        aliases, across = _donors_across_shardings(aliases, arg_shardings, result_shardings)
        donors = [a or b for a, b in zip(donors, across)]
    return aliases, (donors if any(donors) else None)


def _set_up_aliases(avals_in, avals_out, donated_args):
    """Pair each donated input with the first unclaimed output of the same type
    (``tf.aliasing_output``); then, as jax.jit does, a donated input left over with an
    unclaimed output of as many elements (a reshape, an astype) is a ``jax.buffer_donor``,
    for XLA to reuse if it can. Returns (aliases, donors, unused donations)."""
    aliases = [None] * len(avals_in)
    donors = [False] * len(avals_in)
    pending: dict = collections.defaultdict(collections.deque)
    for i, (aval, donated) in enumerate(zip(avals_in, donated_args)):
        if donated:
            pending[aval_to_ir_types(aval)].append(i)
    unused = list(donated_args)
    claimed = set()
    for j, aval in enumerate(avals_out):
        queue = pending.get(aval_to_ir_types(aval))
        if queue:
            i = queue.popleft()
            aliases[i] = j
            unused[i] = False
            claimed.add(j)
    sizes: dict = collections.defaultdict(collections.deque)
    for j, aval in enumerate(avals_out):
        if j not in claimed and not is_token(aval):
            sizes[_size(aval)].append(j)
    for i, aval in enumerate(avals_in):
        if unused[i] and not is_token(aval) and sizes.get(_size(aval)):
            sizes[_size(aval)].popleft()
            unused[i], donors[i] = False, True
    return aliases, donors, unused


def _size(aval) -> int:
    return int(np.prod(aval.shape, dtype=np.int64))


def _donors_across_shardings(aliases, arg_shardings, result_shardings) -> tuple:
    """Over several devices, an input aliases its output only when both shardings are given
    and the same: otherwise each device's pieces may differ in size (a donated input split
    over 8 devices, its output replicated), which XLA refuses to alias. Such an input is
    marked ``jax.buffer_donor`` instead, for XLA to reuse where it can, as jax.jit does."""
    aliases = list(aliases)
    donors = [False] * len(aliases)
    for i, j in enumerate(aliases):
        if j is None:
            continue
        a = arg_shardings[i] if arg_shardings is not None else None
        r = result_shardings[j] if result_shardings is not None else None
        if a is None or r is None or str(a) != str(r):
            aliases[i], donors[i] = None, True
    return aliases, donors
