"""Rules for tuples, tokens, the optimization barrier, domain and custom calls."""

from __future__ import annotations


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
