"""Rules for control flow: ``while`` (mhlo.while), ``cond`` (mhlo.case, for two branches too,
as JAX does) and ``scan`` (an mhlo.while over the iteration index, slicing ``xs`` and writing
``ys`` with dynamic_slice / dynamic_update_slice).

Constants of sub-jaxprs (``cond_consts``, ``body_consts``, scan's ``consts`` and ``xs``) are
threaded through the loop state, as JAX does; case branches capture their operands from the
enclosing block. Ordered effects of the sub-jaxprs are threaded as tokens: through the loop
state (leading), and out of each case branch as leading results.
"""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from mhlo_ir.builder import as_results

from .. import mlir
from ..axis_context import manual_sharding, partly_manual
from ..inline import lower_closed
from ..mlir import TokenSet, aval_to_ir_types, register_lowering
from .random import physical_aval


def _ordered_effects(*closed_jaxprs) -> list:
    """The ordered effects of some sub-jaxprs, in a deterministic order
    (``tokens.ordered_in_order``)."""
    effs: list = []
    for c in closed_jaxprs:
        jaxpr = getattr(c, "jaxpr", c)
        effs.extend(getattr(jaxpr, "effects", ()) or ())
        for e in jaxpr.eqns:  # jaxprs built by hand may only record effects on equations
            effs.extend(getattr(e, "effects", ()) or ())
    return mlir.ordered_in_order(effs)


def _tokens_in(ctx, effects) -> TokenSet:
    have = ctx.tokens_in.effects()
    missing = [e for e in effects if e not in have]
    if missing:
        raise ValueError(f"'{ctx.primitive.name}': its sub-jaxprs have ordered effects "
                         f"{missing} that the equation does not declare (put them in "
                         "eqn.effects so that tokens are threaded to it)")
    return ctx.tokens_in.subset(effects)


def _sub_ctx(ctx, name: str):
    return ctx.body_context(name)


def _pred_bcast_select(b, pred, x, y):
    """``select(pred, x, y)`` with ``pred`` broadcast over ``x``'s trailing dimensions (a
    batched loop predicate)."""
    shape = x.type.shape
    if pred.type.shape != shape:
        pred = b.broadcast_in_dim(pred, shape, list(range(len(pred.type.shape))))
    return b.select(pred, x, y)


def _split(xs, sizes) -> list:
    """``xs`` cut into pieces of ``sizes`` and the rest."""
    out, i = [], 0
    for n in sizes:
        out.append(list(xs[i:i + n]))
        i += n
    out.append(list(xs[i:]))
    return out


def _reduce_or(b, pred):
    if not pred.type.shape:
        return pred
    return b.reduce(pred, b.constant(np.array(False)), list(range(len(pred.type.shape))),
                    lambda r, acc, e: r.or_(acc, e))


# -- while --------------------------------------------------------------------------------------

def _while_lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    b = ctx.builder
    effects = _ordered_effects(cond_jaxpr, body_jaxpr)
    ntok = len(effects)
    tokens = _tokens_in(ctx, effects)
    args = list(args)
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = args[cond_nconsts + body_nconsts:]
    nc = len(cond_consts) + len(body_consts)
    batched = bool(cond_jaxpr.out_avals[0].shape)
    cond_ctx, body_ctx = _sub_ctx(ctx, "while/cond"), _sub_ctx(ctx, "while/body")
    pred_ctx = _sub_ctx(ctx, "while/body_pred")
    hoist = bool(_ordered_effects(cond_jaxpr))

    def run_cond(rb, toks, cc, xs, sub):
        (pred,), toks = lower_closed(sub, rb, cond_jaxpr, toks, list(cc) + list(xs))
        return pred, toks

    if not hoist:
        # state: (*tokens, *cond_consts, *body_consts, *carry)
        def cond_region(rb, *state):
            cc = state[ntok:ntok + len(cond_consts)]
            pred, _ = run_cond(rb, TokenSet(), cc, state[ntok + nc:], cond_ctx)
            return _reduce_or(rb, pred)

        def body_region(rb, *state):
            toks = TokenSet(zip(effects, state[:ntok]))
            cc = state[ntok:ntok + len(cond_consts)]
            bc = state[ntok + len(cond_consts):ntok + nc]
            old = list(state[ntok + nc:])
            new, toks = lower_closed(body_ctx, rb, body_jaxpr, toks, list(bc) + old)
            if batched:
                pred, _ = run_cond(rb, TokenSet(), cc, old, pred_ctx)
                new = [_pred_bcast_select(rb, pred, n, o) for n, o in zip(new, old)]
            return [*toks.tokens(), *state[ntok:ntok + nc], *new]

        outs = as_results(b.while_([*tokens.tokens(), *cond_consts, *body_consts, *carry],
                                   cond_region, body_region))
        ctx.set_tokens_out(TokenSet(zip(effects, outs[:ntok])))
        return list(outs[ntok + nc:])

    # The predicate has ordered effects: compute it before the loop and at the end of each
    # iteration, where tokens can be threaded, and carry it in the state:
    # (*tokens, pred, *cond_consts, *body_consts, *carry).
    pred0, tokens = run_cond(b, tokens, cond_consts, carry, cond_ctx)

    def cond_region(rb, *state):
        return _reduce_or(rb, state[ntok])

    def body_region(rb, *state):
        toks = TokenSet(zip(effects, state[:ntok]))
        pred = state[ntok]
        cc = state[ntok + 1:ntok + 1 + len(cond_consts)]
        bc = state[ntok + 1 + len(cond_consts):ntok + 1 + nc]
        old = list(state[ntok + 1 + nc:])
        new, toks = lower_closed(body_ctx, rb, body_jaxpr, toks, list(bc) + old)
        if batched:
            new = [_pred_bcast_select(rb, pred, n, o) for n, o in zip(new, old)]
        pred, toks = run_cond(rb, toks, cc, new, cond_ctx)
        return [*toks.tokens(), pred, *state[ntok + 1:ntok + 1 + nc], *new]

    outs = as_results(b.while_([*tokens.tokens(), pred0, *cond_consts, *body_consts, *carry],
                               cond_region, body_region))
    ctx.set_tokens_out(TokenSet(zip(effects, outs[:ntok])))
    return list(outs[ntok + 1 + nc:])


# -- cond -----------------------------------------------------------------------------------------

def _cond_lowering(ctx, index, *args, branches, **params):
    b = ctx.builder
    mctx = ctx.module_context
    effects = _ordered_effects(*branches)
    tokens = _tokens_in(ctx, effects)
    platforms = params.get("branches_platforms")
    if platforms is not None:
        # platform_dependent: the branch for the platform we lower for, inline.
        for i, ps in enumerate(platforms):
            if ps is None or mctx.platform in ps:
                outs, toks = lower_closed(_sub_ctx(ctx, f"cond/branch_{i}_fun"), b,
                                           branches[i], tokens, args)
                ctx.set_tokens_out(toks)
                return outs
        raise NotImplementedError(f"cond: no branch for platform '{mctx.platform}'")
    ix_type = index.type
    if ix_type.element_type is not hlo.i32:  # a bool or another integer (hand-built jaxprs)
        if ix_type.element_type is hlo.i1:
            index = b.convert(index, hlo.i32)
        else:
            lo = b.constant(np.zeros((), ix_type.dtype))
            hi = b.constant(np.asarray(len(branches) - 1, ix_type.dtype))
            index = b.convert(b.clamp(lo, index, hi), hlo.i32)
    result_types = [t for _ in effects for t in (hlo.token(),)]
    result_types += [t for aval in ctx.avals_out for t in aval_to_ir_types(aval)]

    def branch(i, closed):
        def build(rb):
            outs, toks = lower_closed(_sub_ctx(ctx, f"cond/branch_{i}_fun"), rb, closed,
                                       tokens, args)
            return [*toks.tokens(), *outs]
        return build

    outs = as_results(b.case(index, [branch(i, c) for i, c in enumerate(branches)],
                             result_types=result_types))
    ctx.set_tokens_out(TokenSet(zip(effects, outs[:len(effects)])))
    return list(outs[len(effects):])


# -- scan -----------------------------------------------------------------------------------------

def _scan_lowering(ctx, *args, reverse, length, jaxpr, num_consts, num_carry, linear=None,
                   unroll=1, _split_transpose=False, **_):
    b = ctx.builder
    effects = _ordered_effects(jaxpr)
    ntok = len(effects)
    tokens = _tokens_in(ctx, effects)
    args = list(args)
    consts, init, xs = (args[:num_consts], args[num_consts:num_consts + num_carry],
                        args[num_consts + num_carry:])
    n_x = len(xs)
    y_avals = ctx.avals_out[num_carry:]
    length = int(length)
    unroll = (max(length, 1) if unroll else 1) if isinstance(unroll, bool) else int(unroll)
    unroll = max(1, min(unroll, max(length, 1)))
    num_blocks, rem = divmod(length, unroll)
    body_ctx = _sub_ctx(ctx, "scan/body")
    i32 = np.int32

    def zeros(bb, aval):
        aval = physical_aval(aval)  # (stacked keys: their key data)
        return bb.broadcast_in_dim(bb.constant(np.zeros((), aval.dtype)), aval.shape, [])

    ys = [zeros(b, a) for a in y_avals]
    axis_context = ctx.module_context.axis_context
    manual = partly_manual(axis_context)
    mesh = axis_context.mesh if manual else None
    if manual:
        ys = [_annotated(b, y, mesh, manual) for y in ys]

    def step(bb, t, toks, consts, xs, carry, ys):
        """One iteration at step ``t`` (an i32 scalar Value counting from 0)."""
        idx = bb.subtract(bb.constant(np.asarray(length - 1, i32)), t) if reverse else t
        zero = bb.constant(np.zeros((), i32))
        x_slices = []
        for x in xs:
            shape = x.type.shape
            s = bb.dynamic_slice(x, [idx] + [zero] * (len(shape) - 1), (1, *shape[1:]))
            x_slices.append(bb.reshape(s, shape[1:]))
        outs, toks = lower_closed(body_ctx, bb, jaxpr, toks, [*consts, *carry, *x_slices])
        carry, y_slices = outs[:num_carry], outs[num_carry:]
        new_ys = []
        for y, s in zip(ys, y_slices):
            shape = y.type.shape
            upd = bb.reshape(s, (1, *shape[1:]))
            new_ys.append(bb.dynamic_update_slice(y, upd, [idx] + [zero] * (len(shape) - 1)))
        return toks, carry, new_ys

    carry = list(init)
    if num_blocks:
        # state: (*tokens, i, *consts, *xs, *carry, *ys); i counts blocks of `unroll` steps.
        nc = len(consts)

        def counter(bb, v):  # (marked manual in a partly manual region: see _annotated)
            return _annotated(bb, v, mesh, manual) if manual else v

        def cond_region(rb, *state):
            return rb.compare(counter(rb, state[ntok]),
                              counter(rb, rb.constant(np.asarray(num_blocks, i32))), "LT",
                              "SIGNED")

        def body_region(rb, *state):
            toks = TokenSet(zip(effects, state[:ntok]))
            i = counter(rb, state[ntok])
            cs, state_xs, c, y = _split(state[ntok + 1:], [nc, n_x, num_carry])
            base = rb.multiply(i, rb.constant(np.asarray(unroll, i32))) if unroll > 1 else i
            for k in range(unroll):
                t = rb.add(base, rb.constant(np.asarray(k, i32))) if k else base
                toks, c, y = step(rb, t, toks, cs, state_xs, c, y)
            one = counter(rb, rb.constant(np.asarray(1, i32)))
            return [*toks.tokens(), counter(rb, rb.add(i, one)), *cs, *state_xs, *c, *y]

        state = [*tokens.tokens(), b.constant(np.zeros((), i32)), *consts, *xs, *carry, *ys]
        outs = list(as_results(b.while_(state, cond_region, body_region)))
        tokens = TokenSet(zip(effects, outs[:ntok]))
        _, _, carry, ys = _split(outs[ntok + 1:], [nc, n_x, num_carry])
    for k in range(rem):  # the steps that do not fill a block, unrolled after the loop
        t = b.constant(np.asarray(num_blocks * unroll + k, i32))
        tokens, carry, ys = step(b, t, tokens, consts, xs, carry, ys)
    ctx.set_tokens_out(tokens)
    return [*carry, *ys]


def _annotated(b, y, mesh, manual):
    """``y`` through a ``Sharding`` custom call marking it manual over the region's axes (the
    automatic axes' sharding left to propagation), as jax marks it.

    NOTE: a scan's stacked outputs and its step counter are values the lowering makes, not
    values of the jaxpr: in a partly manual region XLA's GSPMD partitioner aborts the
    process on them left unmarked ("Check failed: sharding.IsManualSubgroup()", jaxlib
    0.10.2), where jax's sharding-in-types lowering marks every value. Marking the while
    loop's tuple instead failed another of XLA's checks on lax.map (a tuple sharding of 4
    elements for 3 leaves)."""
    rank = len(y.type.shape)
    return mlir.wrap_with_sharding_op(b, y, manual_sharding(mesh, manual, rank), range(rank))


register_lowering("while", _while_lowering)
register_lowering("cond", _cond_lowering)
register_lowering("scan", _scan_lowering)
