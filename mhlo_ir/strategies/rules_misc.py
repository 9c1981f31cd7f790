"""Rules for tuples, tokens, barriers, custom calls, collectives and random numbers.

Generated programs run on one device, so collectives have one replica group ``[[0]]``: they
are identities (all_reduce, all_gather, all_to_all, collective_permute, reduce_scatter) that
XLA must still compile and run. Random ops whose bits are implementation-defined (``rng``,
``rng_bit_generator`` with the DEFAULT algorithm) mark the program "random": executors are
then not compared on its results.
"""

from __future__ import annotations


from .. import dtypes
from ..types import tensor
from ..xla_cpu import complex_of_constants, fft_into_all_gather
from .combiners import combiner
from .scope import Skip
from .table import exclude, rule


@rule("tuple")
def _tuple(s, name):
    vs = [s.pick() for _ in range(s.c.integer(1, 3))]
    t = s.b.tuple(vs)
    return [s.b.get_tuple_element(t, s.c.integer(0, len(vs) - 1))]


@rule("get_tuple_element")
def _get_tuple_element(s, name):
    vs = [s.pick() for _ in range(s.c.integer(1, 3))]
    t = s.b.tuple(vs)
    first = s.c.integer(0, len(vs) - 1)
    return [s.b.get_tuple_element(t, i) for i in range(len(vs)) if i == first or s.c.boolean()]


@rule("optimization_barrier")
def _optimization_barrier(s, name):
    vs = [s.pick() for _ in range(s.c.integer(1, 3))]
    out = s.b.optimization_barrier(*vs)
    return list(out) if isinstance(out, tuple) else [out]


def _token(s):
    if s.c.boolean():
        return s.b.create_token()
    return s.b.after_all(*[s.b.create_token() for _ in range(s.c.integer(0, 2))])


@rule("create_token", "after_all", "add_dependency")
def _tokens(s, name):
    x = s.pick()
    return [s.b.add_dependency(x, _token(s))]


@rule("domain")
def _domain(s, name):
    if s.in_loop:
        raise Skip("XLA:CPU cannot compile a domain inside a while loop")
    return [s.b.domain(s.pick(), "{maximal device=0}", "{maximal device=0}")]


@rule("custom_call")
def _custom_call(s, name):
    # "Sharding" is the target XLA:CPU knows without registration (an annotation: identity).
    x = s.pick()
    return [s.b.custom_call("Sharding", [x], x.type, **{"mhlo.sharding": "{replicated}"})]


@rule("replica_id", "partition_id")
def _ids(s, name):
    v = s.b.replica_id() if name == "replica_id" else s.b.partition_id()
    return [v]


@rule("all_reduce")
def _all_reduce(s, name):
    x = s.pick()
    if complex_of_constants(x):  # XLA:CPU aborts on it (mhlo_ir.xla_cpu)
        raise Skip("a complex value of constants alone")
    part = combiner(s, x.type.element_type, collective=True)
    if part is None:
        raise Skip("no combiner")
    return [s.b.all_reduce(x, lambda r, a, e: part[1](r, a, e), replica_groups=[[0]])]


@rule("cross-replica-sum")
def _cross_replica_sum(s, name):
    x = s.operand(lambda et: et.kind in ("sint", "uint", "float"))
    return [s.b.cross_replica_sum(x, [[0]])]


@rule("all_gather")
def _all_gather(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    dims = [d for d, n in enumerate(x.type.shape) if n > 0]
    if not dims:
        raise Skip("all dimensions empty")
    out = s.b.all_gather(x, s.c.choice(dims), replica_groups=[[0]])
    if fft_into_all_gather(out.owner):  # XLA:CPU fails running it (mhlo_ir.xla_cpu)
        raise Skip("an fft's result gathered along a minor dimension")
    return [out]


@rule("all_to_all")
def _all_to_all(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    d = s.c.integer(0, x.type.rank - 1)
    return [s.b.all_to_all(x, d, s.c.integer(0, x.type.rank - 1), 1, replica_groups=[[0]])]


@rule("collective_permute")
def _collective_permute(s, name):
    return [s.b.collective_permute(s.pick(), [[0, 0]])]


@rule("reduce_scatter")
def _reduce_scatter(s, name):
    x = s.pick(lambda t: t.rank >= 1 and any(t.shape))
    if complex_of_constants(x):  # XLA:CPU aborts on it (mhlo_ir.xla_cpu)
        raise Skip("a complex value of constants alone")
    part = combiner(s, x.type.element_type, collective=True)
    if part is None:
        raise Skip("no combiner")
    dims = [d for d, n in enumerate(x.type.shape) if n > 0]
    out = s.b.reduce_scatter(x, s.c.choice(dims), lambda r, a, e: part[1](r, a, e),
                             replica_groups=[[0]])
    if fft_into_all_gather(out.owner):  # XLA:CPU fails running it (mhlo_ir.xla_cpu)
        raise Skip("an fft's result scattered along a minor dimension")
    return [out]


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


exclude("needs several devices to be more than an identity, and XLA accepts async "
        "computations only around collectives; tests/mhlo_ir/ops run it on 2 replicas",
        "async_start", "async_done")
