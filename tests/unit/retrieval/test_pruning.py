"""The pruned path's bounds: no posting past a cutoff adds more than its bound, whatever
the corpus statistics, and together the cutoffs keep an unread note below the threshold."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from fortemi.retrieval.lexical import BM25_B, BM25_K1
from fortemi.retrieval.pruning import GAMMA, Shape, Term, bound_past, cutoffs, upper_bound


def _contribution(weight: float, tf: int, dl: int, shape: Shape) -> float:
    """BM25's term, written as the exhaustive statement computes it."""
    norm = shape.k1 * (1 - shape.b + shape.b * dl / shape.avgdl)
    return weight * tf * (shape.k1 + 1) / (tf + norm)


shapes = st.builds(
    Shape,
    avgdl=st.floats(1.0, 5000.0),
    k1=st.just(BM25_K1) | st.floats(0.1, 3.0),
    b=st.just(BM25_B) | st.floats(0.05, 1.0),
)


@given(
    shape=shapes,
    weight=st.floats(0.001, 50.0),
    tf=st.integers(1, 500),
    extra=st.integers(0, 5000),
    below=st.floats(0.0, 1.0),
)
def test_no_posting_past_a_key_adds_more_than_the_bound_there(
    shape: Shape, weight: float, tf: int, extra: int, below: float
) -> None:
    dl = tf + extra  # a note is at least as long as any term's count in it
    key = (dl + GAMMA) / tf
    term = Term("word", weight)
    # the bound at this posting's key, and at any key before it
    for at in (key, key * below):
        assert _contribution(weight, tf, dl, shape) <= bound_past(term, at, shape) * (1 + 1e-12)
    assert bound_past(term, key, shape) <= upper_bound(term, shape)


@given(
    shape=shapes,
    weights=st.lists(st.floats(0.01, 20.0), min_size=1, max_size=8),
    theta=st.floats(0.01, 100.0),
    whole=st.sets(st.integers(0, 7)),
)
def test_the_bounds_past_the_cutoffs_sum_below_the_threshold(
    shape: Shape, weights: list[float], theta: float, whole: set[int]
) -> None:
    terms = [Term(f"t{i}", w) for i, w in enumerate(weights)]
    rare = frozenset(i for i in whole if i < len(terms))
    found = cutoffs(terms, theta, shape, rare)
    assert math.fsum(c.bound for c in found) < theta
    for i, (term, cut) in enumerate(zip(terms, found, strict=True)):
        if i in rare:
            assert (cut.until, cut.bound) == (math.inf, 0.0)
        elif math.isfinite(cut.until):
            assert cut.bound == bound_past(term, cut.until, shape)


def test_a_threshold_of_zero_reads_every_posting() -> None:
    shape = Shape(avgdl=100.0, k1=BM25_K1, b=BM25_B)
    found = cutoffs([Term("a", 1.0), Term("b", 2.0)], 0.0, shape)
    assert all(c.until == math.inf and c.bound == 0.0 for c in found)
