"""Rules for tuples, tokens, the optimization barrier, domain and custom calls."""

from __future__ import annotations


from .. import dtypes
from ..types import tensor
from .scope import Skip
from .table import rule


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


def _token(s, name="add_dependency"):
    """A token: made by ``name`` when the rule was asked for create_token or after_all (so a
    program of that op holds it), either way for add_dependency."""
    if name == "create_token" or name != "after_all" and s.c.boolean():
        return s.b.create_token()
    return s.b.after_all(*[s.b.create_token() for _ in range(s.c.integer(0, 2))])


@rule("create_token", "after_all", "add_dependency")
def _tokens(s, name):
    x = s.pick()
    return [s.b.add_dependency(x, _token(s, name))]


@rule("domain")
def _domain(s, name):
    if s.in_loop:
        raise Skip("XLA:CPU cannot compile a domain inside a while loop")
    return [s.b.domain(s.pick(), "{maximal device=0}", "{maximal device=0}")]


# Targets XLA:CPU knows without registration: annotations it drops (identities on one
# device), and TopK, which it computes itself (f32 alone: "TopK expects F32 data type").
# Not the SPMD partitioner's SPMDFullToShardShape and SPMDShardToFullShape: XLA:CPU drops
# them from a program it does not partition, but not with has_side_effect = true (drawn
# below): "No registered implementation for untyped custom call to SPMDFullToShardShape
# for Host" (measured alone, with num_partitions=1). Nor SliceToDynamic (a static result
# aborts the compile: mhlo_ir.xla_cpu.static_slice_to_dynamic) or PadToStatic and
# X64Combine ("not implemented" on CPU).
_IDENTITY_TARGETS = ("Sharding", "MoveToHost", "MoveToDevice", "LayoutConstraint",
                     "annotate_device_placement")


@rule("custom_call")
def _custom_call(s, name):
    target = s.c.choice(_IDENTITY_TARGETS + ("TopK",))
    extra = {}
    if s.c.boolean(0.3):  # the optional attributes, at values every target above takes
        extra = {"has_side_effect": s.c.choice((False, True)),
                 "backend_config": "", "api_version": s.c.choice((1, 2))}
        if s.c.boolean():
            extra.update(called_computations=[], output_operand_aliases=[])
    if target == "TopK":
        try:
            # (rank 1 or 2, XLA's [batch, n]: XLA:CPU gets higher ranks wrong, and dies
            # on empty ones with a side effect: mhlo_ir.xla_cpu.topk_of_rank_over_two; not
            # empty, as drawn before that was known)
            x = s.operand(lambda et: et is dtypes.f32,
                          lambda t: 1 <= t.rank <= 2 and t.num_elements)
        except Skip:
            target = "Sharding"
        else:
            k = s.c.integer(0, x.type.shape[-1])
            shape = x.type.shape[:-1] + (k,)
            return list(s.b.custom_call("TopK", [x], [tensor(shape, dtypes.f32),
                                                      tensor(shape, dtypes.i32)], **extra))
    x = s.pick()
    if target == "Sharding":
        extra["mhlo.sharding"] = "{replicated}"
    # Layouts (minor to major), any permutation: XLA moves the data. Not for 2- and 4-bit
    # types: a LayoutConstraint's layout other than the default reaches the convert XLA:CPU
    # computes the operand's producer through (f16 or i8), with the 4-bit element size, and
    # its verifier refuses it ("custom element sizes on non-sub-byte types"; seed
    # 812002374: LayoutConstraint(log(x)) of f4E2M1FN, measured on i4 and ui4 too).
    et = x.type.element_type
    if s.c.boolean(0.2) and not et.is_sub_byte:
        r = x.type.rank
        extra.update(operand_layouts=[s.c.permutation(r)], result_layouts=[s.c.permutation(r)])
    return [s.b.custom_call(target, [x], x.type, **extra)]
