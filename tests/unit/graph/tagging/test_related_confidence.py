"""The confidence of an inferred related edge: NPMI over the memory's notes, shrunk by
how often the pair was seen."""

from __future__ import annotations

import math

import pytest

from fortemi.graph.tagging.related import related_confidence


def test_a_pair_never_seen_together_has_no_confidence() -> None:
    assert related_confidence(0, 5, 5, 100) == 0.0


def test_independent_concepts_have_none() -> None:
    # p(a) = p(b) = 0.5, p(a, b) = 0.25 = p(a) p(b): NPMI 0.
    assert related_confidence(25, 50, 50, 100) == pytest.approx(0.0, abs=1e-12)


def test_concepts_that_avoid_each_other_are_clipped_at_zero() -> None:
    assert related_confidence(1, 50, 50, 100) == 0.0


def test_concepts_always_together_approach_one_as_evidence_grows() -> None:
    once = related_confidence(1, 1, 1, 1)
    nine = related_confidence(9, 9, 9, 9)
    assert once == pytest.approx(0.5)
    assert nine == pytest.approx(0.9)


def test_the_value_is_npmi_times_the_evidence_factor() -> None:
    together, first, second, notes = 4, 8, 10, 100
    p_ab = together / notes
    npmi = math.log(p_ab / ((first / notes) * (second / notes))) / -math.log(p_ab)
    expected = npmi * together / (together + 1)
    assert related_confidence(together, first, second, notes) == pytest.approx(expected)
    assert 0.0 < expected < 1.0
