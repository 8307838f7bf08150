"""Which notes a note links to automatically: pure functions over numpy vectors.

Scoring: ``score = similarity * (1 - w) + jaccard(concepts) * w`` where ``w`` is the
concept weight (0.3) only when both notes carry concepts. Without that guard a memory
whose notes have no concepts yet (a CPU-only install before tagging) would score every
pair at most 0.7 * similarity and nothing would ever pass the 0.7 threshold.

Diversity: HNSW's neighbour-selection heuristic (Malkov & Yashunin 2018, Algorithm 4).
Candidates are visited best score first; one is accepted only if it is closer to the
source than to every neighbour accepted so far. A cluster of near-duplicates around the
source therefore yields one link into the cluster rather than k links to the same place,
and the k links spread over the directions the note actually relates to. Distances in the
heuristic are cosine distances between note vectors (one metric for both sides of the
comparison); the concept overlap only orders the candidates and decides the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
import numpy.typing as npt

__all__ = [
    "CONCEPT_WEIGHT",
    "Candidate",
    "Selected",
    "adaptive_k",
    "jaccard",
    "mean_vector",
    "select_links",
]

Vector = npt.NDArray[np.float32]
CONCEPT_WEIGHT = 0.3


def adaptive_k(notes: int, *, low: int = 5, high: int = 15) -> int:
    """``floor(log2 N)`` clamped to ``[low, high]``: a note's link budget grows with the
    memory, slowly, as a navigable small world's degree does."""
    if low > high:
        raise ValueError(f"k bounds are inverted: {low} > {high}")
    raw = math.floor(math.log2(notes)) if notes >= 1 else 0
    return max(low, min(high, raw))


def mean_vector(chunks: npt.NDArray[np.float32]) -> Vector:
    """A note's vector: the normalised mean of its (unit) chunk vectors. A zero mean (no
    chunk, or chunks cancelling out) stays zero: such a note is nobody's neighbour."""
    if chunks.ndim != 2 or chunks.shape[0] == 0:
        raise ValueError("a note vector needs at least one chunk vector")
    mean: Vector = chunks.astype(np.float32).mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / np.float32(norm)).astype(np.float32) if norm > 0 else mean


def jaccard(a: frozenset[UUID], b: frozenset[UUID]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A note near the source: its id, unit vector and concepts."""

    note_id: UUID
    vector: Vector
    concepts: frozenset[UUID] = frozenset()


@dataclass(frozen=True, slots=True)
class Selected:
    """A link to make: 1-based rank among the source's links, its score in [0, 1], the
    parts of the score, and whether it is the fallback (nothing passed the threshold)."""

    note_id: UUID
    rank: int
    score: float
    similarity: float
    overlap: float
    weight: float
    fallback: bool


def _cosine_distance(a: Vector, b: Vector) -> float:
    return 1.0 - float(np.dot(a, b))


def select_links(
    source: Vector,
    candidates: Sequence[Candidate],
    *,
    source_concepts: frozenset[UUID] = frozenset(),
    k: int,
    min_score: float,
    concept_weight: float = CONCEPT_WEIGHT,
) -> list[Selected]:
    """Up to ``k`` diverse links from ``source`` among ``candidates`` (vectors are unit
    length). Only candidates scoring ``min_score`` or more qualify; when none does, the
    single best candidate is returned marked ``fallback``, so every note with a neighbour
    is linked. Ties in score go to the smaller note id, so the result is deterministic."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    scored: list[tuple[float, float, float, float, Candidate]] = []
    for candidate in candidates:
        similarity = float(np.dot(source, candidate.vector))
        both = bool(source_concepts) and bool(candidate.concepts)
        weight = concept_weight if both else 0.0
        overlap = jaccard(source_concepts, candidate.concepts) if both else 0.0
        score = min(1.0, max(0.0, similarity * (1.0 - weight) + overlap * weight))
        scored.append((score, similarity, overlap, weight, candidate))
    scored.sort(key=lambda item: (-item[0], item[4].note_id))
    qualified = [item for item in scored if item[0] >= min_score]
    if not qualified:
        if not scored:
            return []
        score, similarity, overlap, weight, best = scored[0]
        return [Selected(best.note_id, 1, score, similarity, overlap, weight, fallback=True)]
    accepted: list[tuple[float, float, float, float, Candidate]] = []
    for item in qualified:
        candidate = item[4]
        to_source = _cosine_distance(source, candidate.vector)
        if all(to_source < _cosine_distance(candidate.vector, kept[4].vector) for kept in accepted):
            accepted.append(item)
            if len(accepted) == k:
                break
    return [
        Selected(c.note_id, rank, score, similarity, overlap, weight, fallback=False)
        for rank, (score, similarity, overlap, weight, c) in enumerate(accepted, start=1)
    ]
