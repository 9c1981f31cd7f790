"""Rules for ops with regions or callees: reduce, reduce_window, select_and_scatter, map, scan,
while, if, case, func.call, fusion and composite.

Bodies that may capture outer values (while, if, case) are filled with drawn ops over the outer
pool and their own arguments; functions (func.call, composite) see only their arguments; the
closed bodies of reductions are commutative, associative combiners (``combiners``), or for
map and scan drawn elementwise ops over their scalar arguments. Loops run a bounded number of
times: a counter from 0 to a drawn bound of at most 4.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..types import tensor
from ..xla_cpu import fusion_of_aliased_arguments
from .combiners import combiner
from .scope import Skip
from .table import rule

# Ops a closed scalar body (map, scan, fusion) may draw: elementwise, no regions.
SCALAR_OPS = ("add", "subtract", "multiply", "maximum", "minimum", "negate", "abs", "and",
              "or", "xor", "not", "select", "compare", "convert", "clamp", "sign", "floor",
              "exponential", "tanh", "sqrt", "popcnt")


def _names(s, wanted):
    """The ops of ``wanted`` the options allow (none: a body draws no op of its own, and
    returns its arguments, through the pool's conversions where it must; it drew negate)."""
    allowed = set(s.gen.options.ops)
    return tuple(n for n in wanted if n in allowed)


@rule("reduce")
def _reduce(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    inputs = [x]
    if s.c.boolean(0.3) and not x.type.element_type.is_sub_byte:
        # XLA refuses a variadic reduce over floats of different precisions, and fails a
        # RET_CHECK on its inputs' layouts when one is sub-byte
        et = s.gen.element_type(lambda t: not (t.kind == "float" == x.type.element_type.kind
                                               and t is not x.type.element_type)
                                and not t.is_sub_byte)
        inputs.append(s.value_of(tensor(x.type.shape, et)))
    parts = [combiner(s, v.type.element_type) for v in inputs]
    if any(p is None for p in parts):
        raise Skip("no combiner")
    dims = sorted(s.c.subset(list(range(x.type.rank)), 1))
    inits = [s.scalar(v.type.element_type, p[2]) for v, p in zip(inputs, parts)]
    k = len(inputs)

    def body(r, *args):
        return [p[1](r, args[i], args[k + i]) for i, p in enumerate(parts)]

    out = s.b.reduce(inputs, inits, dims, body)
    return list(out) if isinstance(out, tuple) else [out]


def _window(s, shape, dilations=True):
    dims, strides, base, wdil, padding = [], [], [], [], []
    for n in shape:
        lo, hi = s.c.integer(0, 1), s.c.integer(0, 1)
        bd = s.c.integer(1, 2) if dilations and n > 1 and s.c.boolean(0.2) else 1
        size = lo + hi + (n - 1) * bd + 1 if n else lo + hi
        wd = s.c.integer(1, 2) if dilations and s.c.boolean(0.2) else 1
        top = (size - 1) // wd + 1 if size else 0
        if top < 1:
            raise Skip("window does not fit")
        dims.append(s.c.integer(1, min(3, top)))
        strides.append(s.c.integer(1, 2))
        base.append(bd)
        wdil.append(wd)
        padding.append((lo, hi))
    return dims, strides, base, wdil, padding


@rule("reduce_window")
def _reduce_window(s, name):
    x = s.pick(lambda t: t.rank >= 1)
    part = combiner(s, x.type.element_type)
    if part is None:
        raise Skip("no combiner")
    dims, strides, base, wdil, padding = _window(s, x.type.shape)
    init = s.scalar(x.type.element_type, part[2])
    return [s.b.reduce_window([x], [init], dims, lambda r, a, e: part[1](r, a, e),
                              window_strides=strides, base_dilations=base,
                              window_dilations=wdil, padding=padding)]


@rule("select_and_scatter")
def _select_and_scatter(s, name):
    x = s.pick(lambda t: t.rank >= 1 and t.element_type.kind in ("sint", "uint", "float")
               and all(n > 0 for n in t.shape))
    et = x.type.element_type
    dims, strides, _, _, padding = _window(s, x.type.shape, dilations=False)
    grid = tuple((n + lo + hi - w) // st + 1
                 for n, w, st, (lo, hi) in zip(x.type.shape, dims, strides, padding))
    source = s.value_of(tensor(grid, et))
    part = combiner(s, et)
    init = s.scalar(et, part[2])
    direction = s.c.choice(("GE", "GT", "LE", "LT"))
    ct = "TOTALORDER" if et.kind == "float" else None
    return [s.b.select_and_scatter(
        x, source, init, lambda r, a, b: r.compare(a, b, direction, ct),
        lambda r, a, b: part[1](r, a, b), window_dimensions=dims, window_strides=strides,
        padding=padding)]


def _scalar_body(s, args, result_types, n_ops, loop=False):
    """Fill a closed scalar region over ``args`` and return values of ``result_types``
    (``loop``: a scan's body, which XLA runs as a loop's)."""
    def body(r, *block_args):
        inner = s.child(r, block_args, loop=loop)
        names = _names(s, SCALAR_OPS)
        if names:
            inner.fill(n_ops, names)
        return [inner.value_of(t) for t in result_types]
    return body


@rule("map", nests=True)
def _map(s, name):
    x = s.pick()
    # XLA refuses a map over floats of different precisions, as it does for reduce
    et = s.gen.element_type(lambda t: not (t.kind == "float" == x.type.element_type.kind
                                           and t is not x.type.element_type))
    inputs = [x] + [s.value_of(tensor(x.type.shape, et)) for _ in range(s.c.integer(0, 1))]
    scalars = [tensor((), v.type.element_type) for v in inputs]
    out_t = s.c.choice(scalars)
    return [s.b.map(inputs, _scalar_body(s, scalars, [out_t], s.c.integer(1, 3)))]


@rule("scan", nests=True)
def _scan(s, name):
    x = s.pick(lambda t: t.rank >= 1 and all(n > 0 for n in t.shape))
    dim = s.c.integer(0, x.type.rank - 1)
    step = tensor(tuple(n for i, n in enumerate(x.type.shape) if i != dim), x.type.element_type)
    carry = s.value_of(tensor((), s.gen.element_type()))
    body = _scalar_body(s, None, [step, carry.type], s.c.integer(1, 3), loop=True)
    # scan_dim_size, which only a scan without inputs needs, spelled out sometimes; never
    # is_associative, which would let an executor regroup a drawn body that is not
    size = x.type.shape[dim] if s.c.boolean(0.3) else None
    out, final = s.b.scan(x, carry, dim, body, is_reverse=s.c.boolean(), scan_dim_size=size)
    return [out, final]


def _branch(s, result_types, n_ops):
    def branch(r):
        inner = s.child(r, s.values)
        inner.fill(n_ops)
        return [inner.value_of(t) for t in result_types]
    return branch


def _result_types(s):
    return [s.pick().type for _ in range(s.c.integer(1, 2))]


@rule("while", nests=True)
def _while(s, name):
    state = [s.pick() for _ in range(s.c.integer(1, 2))]
    trips = s.c.integer(0, 4)
    n_ops = s.c.integer(1, 3)
    i32 = dtypes.i32

    def cond(r, i, *xs):
        return r.compare(i, r.constant(np.int32(trips)), "LT")

    def body(r, i, *xs):
        inner = s.child(r, list(s.values) + list(xs), loop=True)
        inner.fill(n_ops)
        return [r.add(i, r.constant(np.int32(1)))] + [inner.value_of(x.type) for x in xs]

    out = s.b.while_([s.scalar(i32, 0)] + state, cond, body)
    return list(out[1:])


@rule("if", nests=True)
def _if(s, name):
    from .rules_elementwise import predicate
    try:
        pred = predicate(s, ())
    except Skip:
        pred = s.value_of(tensor((), dtypes.i1))
    types = _result_types(s)
    out = s.b.if_(pred, _branch(s, types, s.c.integer(1, 3)), _branch(s, types, s.c.integer(1, 3)))
    return list(out) if isinstance(out, tuple) else [out]


@rule("case", nests=True)
def _case(s, name):
    k = s.c.integer(1, 3)
    index = s.index(k, dtypes.i32)  # k itself selects the last branch, as XLA defines
    types = _result_types(s)
    out = s.b.case(index, [_branch(s, types, s.c.integer(1, 2)) for _ in range(k)])
    return list(out) if isinstance(out, tuple) else [out]


def new_function(s, args, n_ops):
    """A private function taking values like ``args``, filled with drawn ops; returns it."""
    m = s.gen.module
    f = m.add_function(s.gen.function_name(), [v.type for v in args], visibility="private")
    inner = s.child(f.builder(), f.arguments)
    inner.fill(n_ops)
    outs = [inner.pick() for _ in range(s.c.integer(1, 2))]
    inner.b.return_(*outs)
    return f


@rule("func.call", nests=True)
def _call(s, name):
    existing = [f for f in s.gen.module.functions
                if f.visibility == "private" and f.result_types is not None]
    if existing and s.c.boolean(0.3):
        f = s.c.choice(existing)
        args = [s.value_of(t) for t in f.arg_types]
    else:
        args = [s.pick() for _ in range(s.c.integer(1, 3))]
        f = new_function(s, args, s.c.integer(1, 4))
    if fusion_of_aliased_arguments(f, args):  # XLA aborts (mhlo_ir.xla_cpu)
        raise Skip("one value for two arguments of a fusion")
    out = s.b.call(f, args)
    return list(out) if isinstance(out, tuple) else [out]


@rule("composite", nests=True)
def _composite(s, name):
    args = [s.pick() for _ in range(s.c.integer(1, 2))]
    f = new_function(s, args, s.c.integer(1, 3))
    if fusion_of_aliased_arguments(f, args):  # XLA aborts (mhlo_ir.xla_cpu)
        raise Skip("one value for two arguments of a fusion")
    out = s.b.composite(f"generated.op{s.gen._functions}", args, f,
                        composite_attributes={"seed": s.c.integer(0, 99)},
                        version=s.c.integer(0, 2))
    return list(out) if isinstance(out, tuple) else [out]


@rule("fusion")
def _fusion(s, name):
    # XLA's verifier wants every instruction of a fused computation used (parameters too),
    # and jaxlib 0.10's CPU compiler aborts on multi-result fusions: one chain, one result.
    # Operands are block arguments: XLA's simplifier rewrites a fusion's computed operands
    # (a size-1 dimension dropped) without its computation, which its verifier then
    # rejects ("Fused computation shape ... is not equal to the fusion shape").
    from ..ir import BlockArgument
    params = [v for v in s.values if v.__class__ is BlockArgument]
    if not params:
        raise Skip("no block argument")
    x = s.c.choice(params)
    same = [v for v in params if v.type == x.type and v is not x]
    # the builder refuses one value twice (XLA aborts on it)
    args = [x] + ([s.c.choice(same)] if same and s.c.boolean() else [])
    boolean = x.type.element_type.kind == "bool"
    binary = s.c.choice(("and_", "or_") if boolean else ("add", "maximum", "minimum", "multiply"))
    unary = ["not_"] if boolean else ["negate"]
    steps = s.c.integer(0 if len(args) == 2 else 1, 2)

    def body(r, *xs):
        v = getattr(r, binary)(xs[0], xs[1]) if len(xs) == 2 else xs[0]
        for _ in range(steps):
            v = getattr(r, unary[0])(v)
        return v

    return [s.b.fusion(args, body)]
