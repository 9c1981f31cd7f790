"""Rules for the collectives and the replica and partition ids.

Generated programs run on one device, so collectives have one replica group ``[[0]]``: they
are identities (all_reduce, all_gather, all_to_all, collective_permute, reduce_scatter) that
XLA must still compile and run.
"""

from __future__ import annotations


from ..mhlo_attributes import ChannelHandle
from ..xla_cpu import complex_of_constants, fft_into_all_gather
from .combiners import combiner
from .scope import Skip
from .table import exclude, rule


def _channel(s, x, global_ids: bool = False, dim: int = 0) -> dict:
    """A collective's optional channel: none (most often), or a channel handle of the
    program's next id (``Generation.channel``) and a drawn type (0 invalid, 1 device to
    device, 2 device to host, which one device treats alike), with ``use_global_device_ids``
    too where the op has it (it needs the handle; the one group ``[[0]]`` names device 0
    either way).

    With a channel XLA:CPU keeps the collective and runs it, which it cannot for every type
    (measured on jaxlib 0.10.2, one op of each type alone): all_reduce and reduce_scatter of
    sub-byte integers or 8- and 4-bit floats are UNIMPLEMENTED, and an all_to_all,
    collective_permute or all_gather of i4, ui4, f4E2M1FN (or i2, ui2) corrupts the heap
    (``mhlo_ir.xla_cpu.narrow_channel_collective``, which verify refuses). So no channel
    for those types. Nor for an all_gather or reduce_scatter of an empty operand along
    ``dim`` > 0: XLA:CPU's compile dies of SIGFPE (``mhlo_ir.xla_cpu.empty_channel_gather``;
    seeds 812007743 and 812010419)."""
    et = x.type.element_type
    if et.is_sub_byte or (et.is_float and et.bits <= 8) or not s.c.boolean(0.3):
        return {}
    if dim and x.type.num_elements == 0:
        return {}
    out = {"channel_handle": ChannelHandle(s.gen.channel(), s.c.choice((1, 0, 2)))}
    if global_ids and s.c.boolean():
        out["use_global_device_ids"] = True
    return out


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
    return [s.b.all_reduce(x, lambda r, a, e: part[1](r, a, e), replica_groups=[[0]],
                           **_channel(s, x, True))]


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
    d = s.c.choice(dims)
    out = s.b.all_gather(x, d, replica_groups=[[0]], **_channel(s, x, True, d))
    if fft_into_all_gather(out.owner):  # XLA:CPU fails running it (mhlo_ir.xla_cpu)
        raise Skip("an fft's result gathered along a minor dimension")
    return [out]


@rule("all_to_all")
def _all_to_all(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    d = s.c.integer(0, x.type.rank - 1)
    return [s.b.all_to_all(x, d, s.c.integer(0, x.type.rank - 1), 1, replica_groups=[[0]],
                           **_channel(s, x))]


@rule("collective_permute")
def _collective_permute(s, name):
    x = s.pick()
    return [s.b.collective_permute(x, [[0, 0]], **_channel(s, x))]


@rule("reduce_scatter")
def _reduce_scatter(s, name):
    x = s.pick(lambda t: t.rank >= 1 and any(t.shape))
    if complex_of_constants(x):  # XLA:CPU aborts on it (mhlo_ir.xla_cpu)
        raise Skip("a complex value of constants alone")
    part = combiner(s, x.type.element_type, collective=True)
    if part is None:
        raise Skip("no combiner")
    dims = [d for d, n in enumerate(x.type.shape) if n > 0]
    d = s.c.choice(dims)
    out = s.b.reduce_scatter(x, d, lambda r, a, e: part[1](r, a, e),
                             replica_groups=[[0]], **_channel(s, x, True, d))
    if fft_into_all_gather(out.owner):  # XLA:CPU fails running it (mhlo_ir.xla_cpu)
        raise Skip("an fft's result scattered along a minor dimension")
    return [out]


exclude("needs several devices to be more than an identity, and XLA accepts async "
        "computations only around collectives; tests/mhlo_ir/ops run it on 2 replicas",
        "async_start", "async_done")
