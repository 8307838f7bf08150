"""Exact top-k BM25 that reads only the postings that can matter: a threshold over
impact-ordered postings.

``lex_posting_impact_idx`` orders each term's postings by the key ``(dl + GAMMA) / tf``.
BM25's contribution of a posting is

    w (k1 + 1) / (1 + B (alpha + dl) / tf),   B = k1 b / avgdl,  alpha = (1 - b) avgdl / b

and ``(alpha + dl) / tf >= key - max(0, GAMMA - alpha)`` (tf >= 1), so no posting of a term
past key ``K`` is worth more than ``w (k1 + 1) / (1 + B max(0, K - max(0, GAMMA - alpha)))``.
The bound is computed at query time from the current corpus statistics, so it is safe
whatever was written or deleted since: nothing precomputed can go stale, and writers share
no counter.

Given a threshold ``theta``, each term is read down to the key where its unread postings
are worth less than its share of ``theta`` (shares by weight), so a note in none of the
postings read scores below ``theta``. A note read in some terms whose partial score plus
the bounds of its other terms reaches ``theta`` is scored whole by primary key. If at
least k notes score ``theta`` or more, they include every note that can be in the top k,
and the best k of them are the exact top k; otherwise ``theta`` was too high. Scores are
rounded to 1e-9 in both legs, so notes whose sums differ only in the order of addition
tie, and ties go by note id, as in the exhaustive leg.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GAMMA", "SLACK", "Cutoff", "Shape", "Term", "bound_past", "cutoffs", "upper_bound"]

GAMMA = 20.0  # the key's length offset, in tokens: tightest when (1 - b) avgdl / b >= GAMMA
# Pruning keeps this much slack below theta, far above float rounding and the 1e-9 quantum:
# a note within it of theta is scored whole.
SLACK = 1e-6


@dataclass(frozen=True, slots=True)
class Term:
    """A query term: its lexeme and its BM25 weight (query frequency times IDF)."""

    lexeme: str
    weight: float


@dataclass(frozen=True, slots=True)
class Cutoff:
    """How far to read a term: postings with keys up to ``until``; ``bound`` is the most any
    posting past it adds (0 when ``until`` is infinite: the whole list is read)."""

    until: float
    bound: float


@dataclass(frozen=True, slots=True)
class Shape:
    """The corpus statistics and BM25 parameters the bounds are computed with."""

    avgdl: float
    k1: float
    b: float

    @property
    def slope(self) -> float:
        return self.k1 * self.b / self.avgdl

    @property
    def shift(self) -> float:
        return max(0.0, GAMMA - (1 - self.b) * self.avgdl / self.b)


def upper_bound(term: Term, shape: Shape) -> float:
    """The most one posting of ``term`` can add (tf unbounded, any length)."""
    return term.weight * (shape.k1 + 1)


def bound_past(term: Term, key: float, shape: Shape) -> float:
    """The most a posting of ``term`` with a key of ``key`` or more can add."""
    return upper_bound(term, shape) / (1 + shape.slope * max(0.0, key - shape.shift))


def cutoffs(
    terms: Sequence[Term], theta: float, shape: Shape, whole: frozenset[int] = frozenset()
) -> list[Cutoff]:
    """Per term, how far to read so that a note in none of the postings read scores below
    ``theta``: the terms of ``whole`` (the rare ones, cheap to read) to their end, the
    others down to where their postings are worth less than their share of ``theta`` (by
    weight), which is none of them when no posting of theirs is worth that much."""
    budget = theta - 2 * SLACK
    if budget <= 0:
        return [Cutoff(math.inf, 0.0) for _ in terms]
    total = math.fsum(t.weight for i, t in enumerate(terms) if i not in whole)
    found: list[Cutoff] = []
    for i, term in enumerate(terms):
        top = upper_bound(term, shape)
        if i in whole:
            found.append(Cutoff(math.inf, 0.0))
            continue
        share = budget * term.weight / total
        if share >= top:
            found.append(Cutoff(-math.inf, top))  # read none of it: no posting reaches it
        else:
            until = shape.shift + (top / share - 1) / shape.slope
            # The bound is taken from the key actually used, never from the share, so float
            # rounding in the division above cannot make it too low.
            found.append(Cutoff(until, bound_past(term, until, shape)))
    return found
