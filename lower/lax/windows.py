"""Front end for reductions with a user combiner and for windowed reductions: ``reduce``,
``reduce_window`` (generic, and the sum/max/min primitives), and the pooling-gradient
primitives ``select_and_scatter``, ``select_and_scatter_add`` and ``select_and_gather_add``.

Signatures follow jax.lax (``reduce_window`` takes ``"SAME"``/``"VALID"`` or explicit pads),
and the equations carry jax 0.10's params: the combiner is traced once on scalars into a
jaxpr (``reduce``: a ClosedJaxpr in ``jaxpr``, with the Python function in ``computation``;
``reduce_window`` and ``select_and_scatter``: an open jaxpr plus its ``consts``).
``reduce_window`` always records the generic primitive; ``reduce_window_sum``/``max``/``min``
record the specialised ones JAX picks for add/max/min with their identities.
"""

from __future__ import annotations

import builtins

from .. import tracing as tr
from ..core import Literal, ShapedArray
from ..tracing import Tracer, bind

__all__ = [
    "padtype_to_pads",
    "reduce",
    "reduce_window",
    "reduce_window_max",
    "reduce_window_min",
    "reduce_window_shape",
    "reduce_window_sum",
    "select_and_gather_add",
    "select_and_scatter",
    "select_and_scatter_add",
]


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> tuple:
    """``(lo, hi)`` pads per dimension for ``"VALID"``, ``"SAME"`` (the extra element goes
    high) or ``"SAME_LOWER"`` (it goes low); explicit pairs pass through."""
    if not isinstance(padding, str):
        return tuple((int(lo), int(hi)) for lo, hi in padding)
    kind = padding.upper()
    if kind == "VALID":
        return ((0, 0),) * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"unknown padding {padding!r}: expected VALID, SAME, SAME_LOWER or "
                         "(lo, hi) pairs")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        total = builtins.max((-(-n // s) - 1) * s + w - n, 0)
        small = total // 2
        pads.append((small, total - small) if kind == "SAME" else (total - small, small))
    return tuple(pads)


def reduce_window_shape(shape, window_dimensions, window_strides, padding,
                        base_dilation=None, window_dilation=None) -> tuple:
    """The shape of the grid of windows (reduce_window's result)."""
    rank = len(shape)
    base = base_dilation or (1,) * rank
    wdil = window_dilation or (1,) * rank
    out = []
    for n, w, s, (lo, hi), bd, wd in zip(shape, window_dimensions, window_strides, padding,
                                         base, wdil):
        padded = (0 if n == 0 else (n - 1) * bd + 1) + lo + hi
        span = 0 if w == 0 else (w - 1) * wd + 1
        if padded < 0:
            raise ValueError(f"padding ({lo}, {hi}) leaves a negative size for a dimension "
                             f"of {n}")
        out.append(0 if padded < span or padded == 0 else (padded - span) // s + 1)
    return tuple(out)


def _window_params(shape, window_dimensions, window_strides, padding, base_dilation,
                   window_dilation) -> dict:
    rank = len(shape)
    dims = tuple(int(d) for d in window_dimensions)
    strides = tuple(int(s) for s in window_strides)
    base = (1,) * rank if base_dilation is None else tuple(int(d) for d in base_dilation)
    wdil = (1,) * rank if window_dilation is None else tuple(int(d) for d in window_dilation)
    for name, v in (("window_dimensions", dims), ("window_strides", strides),
                    ("base_dilation", base), ("window_dilation", wdil)):
        if len(v) != rank:
            raise ValueError(f"{name} has {len(v)} entries for an operand of rank {rank}")
    spans = [(w - 1) * d + 1 if w else 0 for w, d in zip(dims, wdil)]
    pads = padtype_to_pads(shape, spans, strides, padding)
    if len(pads) != rank:
        raise ValueError(f"padding has {len(pads)} entries for an operand of rank {rank}")
    return {"window_dimensions": dims, "window_strides": strides, "padding": pads,
            "base_dilation": base, "window_dilation": wdil}


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _inits(operands, init_values) -> list:
    inits = _as_list(init_values)
    if len(inits) != len(operands):
        raise ValueError(f"{len(operands)} operands but {len(inits)} init values")
    b = tr.builder_of(operands)
    out = []
    for x, init in zip(operands, inits):
        init = tr.as_tracer(b, init, ShapedArray((), x.dtype))
        if init.ndim != 0 or init.dtype != x.dtype:
            raise TypeError(f"init value {init.aval.str_short()} must be a scalar of the "
                            f"operand's dtype {x.dtype}")
        out.append(init)
    return out


def _trace_region(what: str, fn, avals):
    """make_jaxpr of a function that becomes a region (a combiner, select or scatter).

    A region reads nothing from outside but its constants, so a function that closes over
    traced values of the function being traced is refused here, as JAX refuses it, rather
    than when its jaxpr is lowered."""
    closed = tr.make_jaxpr(fn)(*avals)
    jaxpr = closed.jaxpr
    defined = {id(v) for v in (*jaxpr.invars, *jaxpr.constvars)}
    for e in jaxpr.eqns:
        for v in e.invars:
            if not isinstance(v, Literal) and id(v) not in defined:
                raise TypeError(f"{what} closes over a traced value ({v.aval.str_short()}) of "
                                "the function being traced; pass it as an operand instead")
        defined.update(id(v) for v in e.outvars)
    return closed


def _scalar_jaxpr(fn, dtypes, group: bool):
    """Trace a combiner of two (groups of) scalars. With ``group`` the combiner takes and
    returns tuples (jax.lax's convention for several operands); the jaxpr is flat."""
    n = len(dtypes)
    scalars = [ShapedArray((), d) for d in dtypes]

    def flat(*xs):
        out = fn(tuple(xs[:n]), tuple(xs[n:])) if group else fn(*xs)
        out = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(out) != n:
            raise ValueError(f"the combiner returned {len(out)} values for {n} operands")
        return out
    return _trace_region("the combiner", flat, scalars + scalars)


def reduce(operands, init_values, computation, dimensions):
    """jax.lax.reduce: fold ``operands`` over ``dimensions`` with ``computation`` (on
    scalars; on tuples of scalars for several operands). Returns one array, or a tuple."""
    single = isinstance(operands, Tracer)
    ops = [operands] if single else list(operands)
    if any(o.shape != ops[0].shape for o in ops):
        raise ValueError(f"operands have different shapes {[o.shape for o in ops]}")
    inits = _inits(ops, init_values)
    rank = ops[0].ndim
    dims = tuple(sorted(int(d) for d in dimensions))
    if any(not 0 <= d < rank for d in dims) or len(set(dims)) != len(dims):
        # (jax.lax.reduce refuses them too; they wrapped onto another axis before)
        raise ValueError(f"reduce dimensions {tuple(dimensions)} are not distinct dimensions "
                         f"of an operand of rank {rank}")
    closed = _scalar_jaxpr(computation, [o.dtype for o in ops], group=not single)
    shape = [n for i, n in enumerate(ops[0].shape) if i not in dims]
    outs = bind("reduce", [*ops, *inits], [o.aval.update(shape=shape, weak_type=False)
                                            for o in ops],
                multiple_results=True, computation=computation, jaxpr=closed,
                dimensions=dims)
    return outs[0] if single else tuple(outs)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                  padding, base_dilation=None, window_dilation=None):
    """jax.lax.reduce_window: ``computation`` over every window of ``operand`` (or of
    several operands at once, with tuples as in ``reduce``)."""
    single = isinstance(operand, Tracer)
    ops = [operand] if single else list(operand)
    inits = _inits(ops, init_value)
    params = _window_params(ops[0].shape, window_dimensions, window_strides, padding,
                            base_dilation, window_dilation)
    closed = _scalar_jaxpr(computation, [o.dtype for o in ops], group=not single)
    shape = reduce_window_shape(ops[0].shape, **params)
    outs = bind("reduce_window", [*ops, *inits],
                [o.aval.update(shape=shape, weak_type=False) for o in ops],
                multiple_results=True, jaxpr=closed.jaxpr, consts=tuple(closed.consts),
                **params)
    return outs[0] if single else tuple(outs)


def _monoid_window(name):
    def op(operand: Tracer, window_dimensions, window_strides=None, padding="VALID",
           base_dilation=None, window_dilation=None) -> Tracer:
        strides = (1,) * operand.ndim if window_strides is None else window_strides
        params = _window_params(operand.shape, window_dimensions, strides, padding,
                                base_dilation, window_dilation)
        shape = reduce_window_shape(operand.shape, **params)
        return bind(name, [operand], [operand.aval.update(shape=shape)], **params)
    op.__name__ = name
    op.__doc__ = f"The ``{name}`` primitive (init is the identity of the operation)."
    return op


reduce_window_sum = _monoid_window("reduce_window_sum")
reduce_window_max = _monoid_window("reduce_window_max")
reduce_window_min = _monoid_window("reduce_window_min")


def _select_prim(select_prim):
    """JAX's params hold the comparison primitive itself (``ge_p``/``le_p``)."""
    name = getattr(select_prim, "name", select_prim)
    if name not in ("ge", "le", "gt", "lt"):
        raise ValueError(f"select_prim must be ge, le, gt or lt, got {select_prim!r}")
    return tr.primitive(name)


def _grid_check(what, source, operand, params):
    grid = reduce_window_shape(operand.shape, params["window_dimensions"],
                               params["window_strides"], params["padding"])
    if source.shape != grid:
        raise ValueError(f"{what}: source has shape {source.shape}, expected the window grid "
                         f"{grid}")


def select_and_scatter_add(source: Tracer, operand: Tracer, select_prim, window_dimensions,
                           window_strides, padding) -> Tracer:
    """Max-pool's VJP: each window's selected ``operand`` element (``ge``: the first max)
    receives that window's ``source`` value; contributions add up."""
    params = _window_params(operand.shape, window_dimensions, window_strides, padding, None,
                            None)
    del params["base_dilation"], params["window_dilation"]
    _grid_check("select_and_scatter_add", source, operand, params)
    return bind("select_and_scatter_add", [source, operand],
                [operand.aval.update(dtype=source.dtype)],
                select_prim=_select_prim(select_prim), **params)


def select_and_gather_add(tangents: Tracer, operand: Tracer, select_prim, window_dimensions,
                          window_strides, padding, base_dilation=None,
                          window_dilation=None) -> Tracer:
    """Max-pool's JVP: for each window, the element of ``tangents`` where ``operand`` is
    selected (``ge``: its first max)."""
    if tangents.shape != operand.shape:
        raise ValueError(f"tangents {tangents.shape} and operand {operand.shape} differ")
    params = _window_params(operand.shape, window_dimensions, window_strides, padding,
                            base_dilation, window_dilation)
    shape = reduce_window_shape(operand.shape, **params)
    return bind("select_and_gather_add", [tangents, operand],
                [tangents.aval.update(shape=shape)], select_prim=_select_prim(select_prim),
                **params)


def select_and_scatter(operand: Tracer, select, window_dimensions, window_strides, padding,
                       source: Tracer, init_value, scatter) -> Tracer:
    """The generic primitive (jax.lax's internal ``_select_and_scatter`` signature):
    ``select(a, b)`` (a bool) keeps ``a`` over ``b`` within a window; the source value of
    each window is combined into the selected position with ``scatter`` from
    ``init_value``."""
    params = _window_params(operand.shape, window_dimensions, window_strides, padding, None,
                            None)
    del params["base_dilation"], params["window_dilation"]
    _grid_check("select_and_scatter", source, operand, params)
    (init,) = _inits([source], init_value)
    elem, acc = ShapedArray((), operand.dtype), ShapedArray((), init.dtype)
    sel = _trace_region("select", select, (elem, elem))
    sca = _trace_region("scatter", scatter, (acc, acc))
    return bind("select_and_scatter", [operand, source, init],
                [operand.aval.update(dtype=source.dtype)],
                select_jaxpr=sel.jaxpr, select_consts=tuple(sel.consts),
                scatter_jaxpr=sca.jaxpr, scatter_consts=tuple(sca.consts), **params)
