"""Where a generated program's decisions come from: hypothesis, or a seeded random stream.

Every rule draws through a ``Choices`` object, never from hypothesis directly, so that the same
generator serves two users: ``@given(programs())`` (hypothesis decides, and shrinks a failing
program to a small one) and campaigns (``verify.fuzz``), which need thousands of programs a
second and reproduce each from its seed alone. Hypothesis' draws cost tens of microseconds
each; a seeded ``random.Random`` costs well under one.
"""

from __future__ import annotations

import contextvars
import random

from hypothesis import strategies as st

__all__ = ["Choices", "HypothesisChoices", "RandomChoices"]


class Choices:
    """The decisions a generator can ask for. Each method's first outcome (``integer``'s
    ``lo``, a sequence's first element, ``False``) is the simplest, which is what hypothesis
    shrinks toward."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, seq):
        return seq[self.integer(0, len(seq) - 1)]

    def op(self, names):
        """The next op of a program, among ``names`` (simplest first): ``choice`` here."""
        return self.choice(names)

    def boolean(self, p: float = 0.5) -> bool:
        raise NotImplementedError

    def permutation(self, n: int) -> list:
        items = list(range(n))
        for i in range(n - 1):  # Fisher-Yates; all zeros leaves the identity
            j = self.integer(i, n - 1)
            items[i], items[j] = items[j], items[i]
        return items

    def subset(self, seq, min_size: int = 0, max_size: int | None = None) -> list:
        """Distinct elements of ``seq`` in a drawn order."""
        hi = len(seq) if max_size is None else min(max_size, len(seq))
        k = self.integer(min(min_size, hi), hi)
        perm = self.permutation(len(seq))
        return [seq[i] for i in perm[:k]]

    def words(self, count: int, nbits: int) -> list:
        """``count`` unsigned integers of ``nbits`` bits."""
        raise NotImplementedError

    def span(self, fn):
        """``fn()``, its decisions one unit to whoever reads them (hypothesis shrinks an op
        away by deleting its span)."""
        return fn()


class HypothesisChoices(Choices):
    """Decisions drawn by hypothesis (``draw`` of an ``st.composite``).

    NOTE: hypothesis runs many of its first examples as a short new prefix followed by the
    simplest choice at every later draw; with ``choice`` alone, every op of those programs
    would be ``names[0]`` (``abs`` was in 24% of ``programs()``' programs). So ``op``
    counts from a salt, the first draw of a program: the op is ``names[(i - salt) % n]``.
    The salt is part of the new prefixes, so such programs get a different op each;
    shrinking the salt and the op's ``i`` together (a pass hypothesis has) keeps an op,
    and both at 0 is ``names[0]`` again."""

    def __init__(self, draw):
        self._draw = draw
        self._salt = draw(st.integers(0, 2 ** 16 - 1))

    def integer(self, lo, hi):
        return lo if lo >= hi else self._draw(st.integers(lo, hi))

    def op(self, names):
        n = len(names)
        return names[(self.integer(0, n - 1) - self._salt) % n]

    def boolean(self, p=0.5):
        if p <= 0:
            return False
        if p >= 1:
            return True
        if p == 0.5:
            return self._draw(st.booleans())
        return self._draw(st.integers(0, 999)) >= 1000 - round(1000 * p)

    def words(self, count, nbits):
        from .values import words  # (large counts drawn sparsely: see there)
        return self._draw(words(count, nbits))

    def span(self, fn):
        # One draw of a composite around fn: its choices are one span of hypothesis' record,
        # which its shrinker deletes whole (an op with its operands' and attributes'
        # choices), where it otherwise deletes choices one by one and each deletion shifts
        # every later decision. (One strategy object for every span, told what to run
        # through a context variable: a strategy made per span doubled a program's cost.)
        outer = self._draw
        token = _SPAN_CALL.set((self, fn))
        try:
            return outer(_SPAN)
        finally:
            _SPAN_CALL.reset(token)


def _spanned(draw):
    choices, fn = _SPAN_CALL.get()
    outer, choices._draw = choices._draw, draw
    try:
        return fn()
    finally:
        choices._draw = outer


# What the span being drawn runs: (HypothesisChoices, fn), set by HypothesisChoices.span.
_SPAN_CALL: contextvars.ContextVar = contextvars.ContextVar("mhlo_ir_strategies_span")
_SPAN = st.composite(_spanned)()


class RandomChoices(Choices):
    """Decisions from ``random.Random(seed)``: the same seed gives the same program."""

    def __init__(self, seed):
        self.random = random.Random(seed)
        self._bits = self.random.getrandbits

    # integer and choice draw below n as CPython 3.11's Random.randrange and Random.choice do
    # (k random bits, rejected until below n), written out: the same stream, so the same
    # programs per seed, without randint's three Python-level calls per decision (a
    # generated program makes ~20 of them) — and fixed here, whatever a later Python's
    # random module does.
    def integer(self, lo, hi):
        if lo >= hi:
            return lo
        n = hi - lo + 1
        k = n.bit_length()
        r = self._bits(k)
        while r >= n:
            r = self._bits(k)
        return lo + r

    def choice(self, seq):
        n = len(seq)
        if not n:
            raise IndexError("cannot choose from an empty sequence")
        k = n.bit_length()
        r = self._bits(k)
        while r >= n:
            r = self._bits(k)
        return seq[r]

    def boolean(self, p=0.5):
        return self.random.random() < p

    def permutation(self, n):
        items = list(range(n))
        self.random.shuffle(items)
        return items

    def words(self, count, nbits):
        g = self.random.getrandbits
        return [g(nbits) for _ in range(count)]
