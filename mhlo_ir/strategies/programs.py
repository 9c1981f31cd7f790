"""Whole generated programs, and single op calls, over the rule table.

``generate(choices, options)`` is the one generator; ``programs()`` and ``op_calls()`` are its
hypothesis faces, and ``verify.fuzz`` drives it with seeded random choices.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from .. import dtypes
from ..ir import Module
from ..ops import spec
from ..types import TensorType
from . import (rules_chlo, rules_convolution, rules_elementwise,  # noqa: F401
               rules_indexing, rules_linalg, rules_tuples_tokens, rules_collectives,
               rules_random, rules_quantize, rules_regions, rules_shape)
from .choices import HypothesisChoices, RandomChoices
from .scope import Generation, Options, Scope, Skip
from .table import EXCLUDED, RULES, exclude_not_run
from .values import KINDS

exclude_not_run(spec.REGISTRY)

__all__ = ["Program", "generate", "generate_seeded", "programs", "op_calls", "RULE_OPS",
           "default_options", "OWN_TYPES"]

# Every op with a rule: what ``programs()`` draws from by default. Ops without regions come
# first, so that hypothesis, which shrinks a choice toward the first option, shrinks a
# failing program's loops, branches and calls into plain ops where it can.
RULE_OPS = tuple(sorted(RULES, key=lambda n: (RULES[n].nests, n)))


@attrs.frozen
class Program:
    """A generated program: the module, the inputs of its ``main``, the ops it was drawn
    from, its traits, and which of ``main``'s results are inexact (computed from sums in an
    order each executor picks or from approximated functions; see ``Generation``)."""

    module: Module
    inputs: list
    ops: tuple
    traits: frozenset
    inexact: tuple = ()
    # per result, the narrowest float type (a numpy dtype; a complex value's part type) an
    # inexact value it is computed from has, or None: where its error was made, so the
    # precision a comparison's tolerance is of (an f32 approximation widened to f64 is
    # within f32's, not f64's)
    computed_in: tuple = ()


# Rules whose results have types of their own, whatever ``element_types`` says: complex
# values (complex, chlo.broadcast_complex, fft), i8/i16 (stochastic_convert), unsigned ints
# (rng_bit_generator, replica_id, partition_id, xla.rng_get_and_update_state) and quantized
# types (the quantize ops); leave them out of ``ops`` for programs of those types alone.
OWN_TYPES = ("complex", "chlo.broadcast_complex", "fft", "stochastic_convert",
             "rng_bit_generator", "replica_id", "partition_id", "xla.rng_get_and_update_state",
             "uniform_quantize", "uniform_dequantize")


def default_options(max_ops: int = 8, ops=None, element_types=None, **kw) -> Options:
    """The generator's ``Options``: ``max_ops`` ops per program, drawn from ``ops`` (op
    table names; default every rule) over ``element_types`` (ElementTypes or their names;
    default all), and ``Options``' other fields by keyword (``max_args``, ``max_rank``,
    ``max_dim``, ``max_depth``, ``division_by_zero``). ``element_types`` are the types of
    the arguments and of the values ops compute on; indices, predicates and shape operands
    use i1, i32 and i64, and the rules in ``OWN_TYPES`` make values of their own types."""
    # (the counts are Options' own to check)
    if ops is None:
        ops = RULE_OPS
    else:
        if isinstance(ops, str):
            raise TypeError(f"ops must be a list of op names, got the str {ops!r}")
        ops = tuple(ops)
        if not ops:
            raise ValueError("ops is empty: name at least one op (or leave it out: all)")
        unknown = [n for n in ops if n not in RULES]
        if unknown:
            why = "; ".join(f"{n}: {EXCLUDED[n]}" if n in EXCLUDED else
                            f"{n}: not an op of the table" for n in unknown)
            raise ValueError(f"no generator rule for {why}")
    if element_types is None:
        element_types = dtypes.ALL_ELEMENT_TYPES
    if isinstance(element_types, str):
        raise TypeError(f"element_types must be a list of types, got the str {element_types!r}")
    ets = tuple(dtypes.element_type(t) if isinstance(t, str) else t for t in element_types)
    if not ets:
        raise ValueError("element_types is empty")
    wrong = [t for t in ets if not isinstance(t, dtypes.ElementType)]
    if wrong:
        raise TypeError(f"element_types holds {wrong[0]!r}, not an mhlo_ir element type (or "
                        "its name: 'f32')")
    return Options(ops=ops, element_types=ets, max_ops=max_ops, **kw)


def generate(choices, options: Options, n_ops: int | None = None) -> Program:
    """Draw one program: 1..max_args arguments of drawn types, then ``n_ops`` ops (drawn in
    1..max_ops when None) over the pool, then a return of the newest value and up to three
    other values nothing uses (so little of the program is dead).

    With seeded choices, a smaller ``n_ops`` gives the same program's first ``n_ops`` ops
    (and another return): what the campaign's reducer bisects on."""
    gen = Generation(choices, options, RULES)
    c = choices
    n_args = c.integer(1, options.max_args)
    arg_types = [TensorType(gen.shape(), gen.element_type()) for _ in range(n_args)]
    main = gen.module.add_function("main", arg_types, visibility="public")
    scope = Scope(gen, main.builder(), main.arguments)
    drawn = c.integer(1, options.max_ops)  # drawn even when given: the same seed with a
    n_ops = drawn if n_ops is None else n_ops  # smaller n_ops draws a prefix of the program
    gen.ops_left = n_ops
    scope.fill(n_ops)
    results = _results(scope, main)
    scope.b.return_(*results)
    inputs = [gen.array(t) for t in arg_types]
    inexact = tuple(id(v) in gen.inexact for v in results)
    computed_in = tuple(_narrowest_inexact(gen, v) if i else None
                        for v, i in zip(results, inexact))
    return Program(gen.module, inputs, tuple(gen.ops_used), frozenset(gen.traits), inexact,
                   computed_in)


def _narrowest_inexact(gen, value):
    """The float dtype of fewest significand bits among the inexact values ``value`` is
    computed through (``Program.computed_in``), or None."""
    from ..ir import producers
    best = None
    for op in producers(value):
        for r in op.results:
            if id(r) not in gen.inexact:
                continue
            et = getattr(r.type, "element_type", None)
            et = getattr(et, "component", None) or et  # (complex: its parts' type)
            if getattr(et, "kind", None) == "float" and (
                    best is None or et.mantissa_bits < best.mantissa_bits):
                best = et
    return None if best is None else best.dtype


def _results(scope, main):
    used = set()
    for op in main.entry_block.operations:
        used.update(id(v) for v in op.operands)
    args = {id(a) for a in main.arguments}
    leaves = [v for v in scope.values if id(v) not in used and id(v) not in args]
    if not leaves:
        return [scope.values[-1]]
    last = leaves[-1]
    others = leaves[:-1]
    chosen = [others[i] for i in scope.c.subset(list(range(len(others))), 0, 3)]
    return chosen + [last]


def generate_seeded(seed, options: Options, n_ops: int | None = None) -> Program:
    """The program of ``seed``: the same seed and options give the same program."""
    return generate(RandomChoices(seed), options, n_ops)


@st.composite
def programs(draw, max_ops: int = 8, kinds=KINDS,
             ops=None, element_types=None, **options):
    """A well-typed program and its inputs: ``(module, [arrays])``.

    ``main`` takes 1-3 tensors and computes up to ``max_ops`` ops drawn from the whole rule
    table (``ops=`` restricts them), over every element type of ``kinds`` (or exactly
    ``element_types``): a DAG across types and shapes, with regions, loops, calls and
    conversions, valid by construction (indices in range, divisors non-zero, loops bounded).
    Other keywords are ``default_options``' (``max_args``, ``max_rank``, ``max_dim``,
    ``max_depth``, ``division_by_zero``). Hypothesis shrinks a failing program toward
    fewer, simpler ops. (``generate(HypothesisChoices(draw), options)`` gives the whole
    ``Program``, with its traits: which of its ops are random or inexact.)"""
    if element_types is not None and kinds is not KINDS:
        raise ValueError("programs takes kinds or element_types, not both (element_types "
                         "are exactly the types drawn)")
    if element_types is None:
        known = {t.kind for t in dtypes.ALL_ELEMENT_TYPES}
        if isinstance(kinds, str) or not kinds or not set(kinds) <= known:
            raise ValueError(f"kinds must be element type kinds among {sorted(known)}, got "
                             f"{kinds!r}")
        element_types = [t for t in dtypes.ALL_ELEMENT_TYPES if t.kind in kinds]
    p = generate(HypothesisChoices(draw), default_options(max_ops, ops, element_types,
                                                          **options))
    return p.module, p.inputs


# Draws of op_calls' arguments before it gives up on an op (see op_calls).
_ATTEMPTS = 16


@st.composite
def op_calls(draw, name: str, operand_types=None):
    """A program built around one call of op ``name``: ``(module, [arrays])``. (Ops with
    regions, ``while``, ``if``, ``func.call``..., fill them with calls of ``name`` too.)

    Without ``operand_types`` the op's operands, attributes and regions are all drawn (the
    arguments again, up to 16 times, where they offer the op nothing it takes: a square
    matrix for cholesky); with them, ``main`` takes arguments of those types and the op is
    drawn over them (operands it needs beyond them, such as indices or init values, are
    made in the program). Types the op cannot take make hypothesis reject the example."""
    from hypothesis import reject
    if name not in RULES:
        raise ValueError(f"no generator rule for {name}: " + EXCLUDED.get(
            name, "not an op of the table" if name not in spec.REGISTRY else "?"))
    given = None if operand_types is None else list(operand_types)
    if given is not None and not all(isinstance(t, TensorType) for t in given):
        raise TypeError(f"op_calls({name!r}): operand_types must be tensor types "
                        f"(hlo.tensor(shape, dtype)), got {operand_types!r:.80}")
    c = HypothesisChoices(draw)
    options = default_options(1, (name,))
    for _ in range(1 if given is not None else _ATTEMPTS):
        gen = Generation(c, options, RULES)
        types = given if given is not None else [
            TensorType(gen.shape(), gen.element_type()) for _ in range(c.integer(1, 2))]
        main = gen.module.add_function("main", types, visibility="public")
        scope = Scope(gen, main.builder(), main.arguments)
        gen.current = name
        try:
            out = RULES[name].fn(scope)
        except Skip:
            continue
        scope.add(*out)
        scope.b.return_(*(out or [main.arguments[0]]))
        return gen.module, [gen.array(t) for t in types]
    reject()
