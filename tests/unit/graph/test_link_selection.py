"""Automatic link selection: adaptive k, scoring, HNSW's diversity heuristic, fallback."""

from __future__ import annotations

import math
from uuid import UUID

import numpy as np
import pytest

from fortemi.graph.linking.selection import (
    Candidate,
    Vector,
    adaptive_k,
    jaccard,
    mean_vector,
    select_links,
)


def _at(degrees: float) -> Vector:
    """A unit vector in the plane at ``degrees`` from the x axis."""
    angle = math.radians(degrees)
    return np.array([math.cos(angle), math.sin(angle)], dtype=np.float32)


def _id(n: int) -> UUID:
    return UUID(int=n)


@pytest.mark.parametrize(
    ("notes", "k"), [(0, 5), (1, 5), (2, 5), (63, 5), (64, 6), (1000, 9), (2**15, 15), (10**9, 15)]
)
def test_adaptive_k_is_floor_log2_of_the_notes_clamped_to_5_and_15(notes: int, k: int) -> None:
    assert adaptive_k(notes) == k


def test_adaptive_k_follows_other_bounds() -> None:
    assert adaptive_k(1000, low=2, high=4) == 4
    with pytest.raises(ValueError, match="inverted"):
        adaptive_k(10, low=6, high=5)


def test_a_candidate_closer_to_an_accepted_neighbour_than_to_the_source_is_rejected() -> None:
    # a (10 deg) is accepted first; b (12 deg) is nearer a than the source (0 deg): rejected;
    # c (-20 deg) is nearer the source than a (30 deg away): accepted.
    source = _at(0)
    candidates = [
        Candidate(_id(1), _at(10)),
        Candidate(_id(2), _at(12)),
        Candidate(_id(3), _at(-20)),
    ]
    chosen = select_links(source, candidates, k=5, min_score=0.5)
    assert [(s.note_id, s.rank) for s in chosen] == [(_id(1), 1), (_id(3), 2)]
    assert not any(s.fallback for s in chosen)
    assert chosen[0].score == pytest.approx(math.cos(math.radians(10)), abs=1e-6)


def test_selection_stops_at_k() -> None:
    # Four directions around the source, each nearer the source than to one another.
    source = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    tilts = [(0.3, 0.0), (-0.3, 0.0), (0.0, 0.31), (0.0, -0.32)]
    candidates = []
    for i, (y, z) in enumerate(tilts, 1):
        v = np.array([1.0, y, z], dtype=np.float32)
        candidates.append(Candidate(_id(i), v / np.linalg.norm(v)))
    two = select_links(source, candidates, k=2, min_score=0.5)
    assert [s.note_id for s in two] == [_id(1), _id(2)]
    assert [s.rank for s in select_links(source, candidates, k=4, min_score=0.5)] == [1, 2, 3, 4]


def test_when_nothing_passes_the_threshold_the_single_best_match_is_a_fallback() -> None:
    source = _at(0)
    candidates = [Candidate(_id(1), _at(80)), Candidate(_id(2), _at(60))]
    chosen = select_links(source, candidates, k=5, min_score=0.7)
    assert len(chosen) == 1
    assert (chosen[0].note_id, chosen[0].fallback, chosen[0].rank) == (_id(2), True, 1)
    assert select_links(source, [], k=5, min_score=0.7) == []


def test_concept_overlap_weighs_only_when_both_notes_have_concepts() -> None:
    shared, other = UUID(int=100), UUID(int=101)
    source = _at(0)
    tagged = Candidate(_id(1), _at(40), frozenset({shared}))
    untagged = Candidate(_id(2), _at(40))
    # cos 40 deg = 0.766; with identical concepts: 0.766 * 0.7 + 1.0 * 0.3 = 0.836.
    both = select_links(source, [tagged], source_concepts=frozenset({shared}), k=5, min_score=0.8)
    assert both[0].weight == 0.3
    assert both[0].score == pytest.approx(0.766 * 0.7 + 0.3, abs=1e-3)
    assert not both[0].fallback
    # Only the source has concepts: w = 0, the score is the similarity alone.
    one = select_links(source, [untagged], source_concepts=frozenset({shared}), k=5, min_score=0.8)
    assert (one[0].weight, one[0].fallback) == (0.0, True)
    assert one[0].score == pytest.approx(0.766, abs=1e-3)
    # Disjoint concepts pull the score down.
    apart = Candidate(_id(3), _at(40), frozenset({other}))
    low = select_links(source, [apart], source_concepts=frozenset({shared}), k=5, min_score=0.0)
    assert low[0].score == pytest.approx(0.766 * 0.7, abs=1e-3)


def test_jaccard_of_concept_sets() -> None:
    a, b, c = (UUID(int=n) for n in (1, 2, 3))
    assert jaccard(frozenset({a, b}), frozenset({b, c})) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset({a})) == 0.0


def test_a_note_vector_is_the_normalised_mean_of_its_chunk_vectors() -> None:
    chunks = np.stack([_at(0), _at(90)])
    vector = mean_vector(chunks)
    assert np.allclose(vector, _at(45), atol=1e-6)
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least one"):
        mean_vector(np.zeros((0, 2), dtype=np.float32))
