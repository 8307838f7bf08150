"""``RelatedConceptInference``: ``related`` edges between a note's concepts of different
dimensions, weighted by how much more often they meet than chance.

The confidence of a pair (a, b) is their normalised pointwise mutual information over
the memory's live notes that carry concepts (Bouma 2009),
``NPMI = log(p(a,b) / (p(a) p(b))) / -log p(a,b)``, in [-1, 1]: 1 when the two only ever
occur together, 0 when they are independent, negative when they avoid each other. It is
shrunk by the evidence, ``n(a,b) / (n(a,b) + 1)``, so a pair seen on one note is worth
at most 0.5 and one seen on nine notes 0.9: a single note must not make a strong edge.
Pairs below ``floor`` (default 0.2) get no edge; the rest are related with that confidence
and ``created_by = "RelatedConceptInference"``.

Why NPMI and not a raw count: in a memory about databases, "PostgreSQL" co-occurs with
everything; a count would relate it to every concept, NPMI relates it to what goes with
it more than with the rest. Why only across dimensions: two topics of one note are
siblings or alternatives more often than related; a technique and the domain it serves
are what SKOS ``related`` is for. Concepts without a dimension (the CPU tier's new
phrases) take no part until a person or a generation tier gives them one.
"""

from __future__ import annotations

import math
from itertools import combinations
from uuid import UUID

from fortemi.graph.vocabulary.models import Cooccurrence
from fortemi.graph.vocabulary.service import VocabularyService
from fortemi.platform.database import Database
from fortemi.platform.errors import NotFound
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobType, Tier

__all__ = [
    "MIN_NOTE_CONCEPTS",
    "RELATED_CONCEPT_INFERENCE",
    "related_concept_inference_type",
    "related_confidence",
]

RELATED_CONCEPT_INFERENCE = "RelatedConceptInference"
MIN_NOTE_CONCEPTS = 3  # a note with fewer concepts is skipped


def related_confidence(together: int, first: int, second: int, notes: int) -> float:
    """NPMI of a pair seen ``together`` times, its concepts ``first`` and ``second``
    times, over ``notes`` notes, shrunk by ``together / (together + 1)``; 0 for no
    co-occurrence, clipped below at 0."""
    if together <= 0 or notes <= 0:
        return 0.0
    p_ab = together / notes
    if p_ab >= 1.0:
        npmi = 1.0  # on every note: the limit of NPMI as p(a,b) → 1
    else:
        pmi = math.log(p_ab / ((first / notes) * (second / notes)))
        npmi = pmi / -math.log(p_ab)
    return max(0.0, min(npmi, 1.0)) * together / (together + 1)


class _RelatedHandler:
    def __init__(self, vocabulary: VocabularyService, *, floor: float) -> None:
        self._vocabulary = vocabulary
        self._floor = floor

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        memory = context.job.memory
        try:
            note_id = UUID(str(context.job.payload.get("note_id")))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        if memory is None:
            return JobOutcome.failure("memory_required")
        concepts = (await self._vocabulary.note_concepts(memory, [note_id])).get(note_id, [])
        if len(concepts) < MIN_NOTE_CONCEPTS:
            return JobOutcome.success({"skipped": "too_few_concepts", "concepts": len(concepts)})
        pairs = [
            (a.concept_id, b.concept_id)
            for a, b in combinations(concepts, 2)
            if a.dimension and b.dimension and a.dimension != b.dimension
        ]
        if not pairs:
            return JobOutcome.success({"pairs": 0, "related": 0, "new": 0})
        counts = await self._vocabulary.cooccurrence(memory, [c.concept_id for c in concepts])
        kept = [(a, b, c) for a, b in pairs if (c := _confidence(counts, a, b)) >= self._floor]
        try:
            new = (
                await self._vocabulary.relate(memory, kept, created_by=RELATED_CONCEPT_INFERENCE)
                if kept
                else 0
            )
        except NotFound:
            # A concept was deleted meanwhile; the note's next tagging runs this again.
            return JobOutcome.success({"skipped": "concepts_changed"})
        return JobOutcome.success({"pairs": len(pairs), "related": len(kept), "new": new})


def _confidence(counts: Cooccurrence, a: UUID, b: UUID) -> float:
    return round(
        related_confidence(
            counts.together(a, b), counts.singles.get(a, 0), counts.singles.get(b, 0), counts.notes
        ),
        4,
    )


def related_concept_inference_type(
    db: Database, vocabulary: VocabularyService, *, floor: float = 0.2
) -> JobType:
    """The ``RelatedConceptInference`` job type (cpu tier; payload ``note_id``).

    Everything it reads and writes goes through ``vocabulary`` (the concepts' owner);
    ``db`` is unused and stays so every graph job type is built from (db, services)."""
    del db
    return JobType(
        name=RELATED_CONCEPT_INFERENCE,
        tier=Tier.CPU,
        priority=2,
        handler=_RelatedHandler(vocabulary, floor=floor),
        max_attempts=5,
    )
