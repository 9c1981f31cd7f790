"""Rules for the random-number ops. Those whose bits are implementation-defined (``rng``,
``rng_bit_generator`` with the DEFAULT algorithm) mark the program "random": executors are
then not compared on its results.
"""

from __future__ import annotations


from .. import dtypes
from ..types import tensor
from .table import rule


@rule("rng")
def _rng(s, name):
    dist = s.c.choice(("UNIFORM", "NORMAL"))
    kinds = ("float",) if dist == "NORMAL" else ("float", "sint", "uint")
    et = s.gen.element_type(lambda t: t.kind in kinds and t.bits >= 16)
    lo = s.scalar(et, 0)
    hi = s.scalar(et, s.c.integer(1, 9))
    s.gen.traits.add("random")
    return [s.b.rng(lo, hi, s.gen.shape(), dist)]


@rule("rng_bit_generator")
def _rng_bit_generator(s, name):
    alg = s.c.choice(("THREE_FRY", "PHILOX", "DEFAULT"))
    n = 2 if alg == "THREE_FRY" else s.c.choice((2, 3))
    if alg == "DEFAULT":
        s.gen.traits.add("random")
    state = s.value_of(tensor((n,), dtypes.ui64))
    et = s.c.choice((dtypes.ui32, dtypes.ui64, dtypes.ui8, dtypes.ui16))
    out = s.b.rng_bit_generator(state, s.gen.shape(), et, alg)
    return list(out)


@rule("xla.rng_get_and_update_state")
def _rng_state(s, name):
    s.gen.traits.add("random")
    return [s.b.rng_get_and_update_state(s.c.integer(1, 64))]
