"""Automatic links of one note: its vector, its nearest notes, the diverse few it links.

:meth:`NoteLinker.link` is the ``Linking`` job's work (and what a benchmark calls): make
the note's vector in the set (the normalised mean of its chunk vectors), take its
nearest notes from the set's HNSW index, score them (similarity, and concept overlap when
both notes have concepts), select with HNSW's heuristic (:mod:`.selection`) and make the
result the note's semantic links, both directions, replacing its earlier choices.
Running it twice leaves the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

import numpy as np

from fortemi.graph.linking.repository import LinkingRepository, LinkRow
from fortemi.graph.linking.selection import (
    CONCEPT_WEIGHT,
    Candidate,
    Selected,
    adaptive_k,
    mean_vector,
    select_links,
)
from fortemi.platform.database import Database, set_local
from fortemi.retrieval.service import ChunkVectorService

__all__ = ["ConceptSource", "LinkOutcome", "LinkingSettings", "NoteLinker"]

STRATEGY = "hnsw_heuristic"
MIN_EF_SEARCH = 100


class ConceptSource(Protocol):
    """The concepts on notes (the vocabulary service provides it)."""

    async def concept_ids(
        self, memory: str, note_ids: Sequence[UUID]
    ) -> dict[UUID, frozenset[UUID]]: ...


@dataclass(frozen=True, slots=True)
class LinkingSettings:
    min_score: float = 0.7
    k_min: int = 5
    k_max: int = 15
    concept_weight: float = CONCEPT_WEIGHT
    # Candidates read from the index per link wanted: the heuristic rejects near
    # duplicates, so it needs more to choose from than it keeps.
    candidates_per_link: int = 4


@dataclass(frozen=True, slots=True)
class LinkOutcome:
    """What linking a note did: ``skipped`` names why nothing was done."""

    set_id: int | None
    links: tuple[Selected, ...] = ()
    k: int = 0
    skipped: str | None = None

    def as_result(self) -> dict[str, object]:
        if self.skipped is not None:
            return {"skipped": self.skipped}
        return {
            "setId": self.set_id,
            "k": self.k,
            "links": len(self.links),
            "fallback": any(link.fallback for link in self.links),
        }


class NoteLinker:
    def __init__(
        self,
        db: Database,
        concepts: ConceptSource | None = None,
        settings: LinkingSettings | None = None,
        vectors: ChunkVectorService | None = None,
    ) -> None:
        self._db = db
        self._concepts = concepts
        self._settings = settings or LinkingSettings()
        self._vectors = vectors or ChunkVectorService(db)
        self._repo = LinkingRepository()

    async def link(self, memory: str, note_id: UUID, set_id: int | None = None) -> LinkOutcome:
        """Link ``note_id`` in set ``set_id`` (None: the newest set holding its vectors)."""
        settings = self._settings
        repo = self._repo
        # The chunk vectors are retrieval's, read through its service (its own transaction,
        # as every read here is READ COMMITTED: one transaction would see no more).
        found = await self._vectors.note_chunk_vectors(memory, note_id, set_id)
        chosen = found.set_id
        async with self._db.memory_transaction(memory) as conn:
            if not await repo.is_live(conn, note_id):
                return LinkOutcome(set_id, skipped="note_gone")
            if chosen is None or not found.vectors:
                if chosen is not None:
                    await repo.drop_vector(conn, chosen, note_id)
                return LinkOutcome(chosen, skipped="not_embedded")
            vector = mean_vector(np.stack(found.vectors))
            await repo.store_vector(conn, chosen, note_id, vector)
            k = adaptive_k(
                await repo.note_count(conn, chosen), low=settings.k_min, high=settings.k_max
            )
            fetch = k * settings.candidates_per_link
            await set_local(conn, "hnsw.ef_search", max(MIN_EF_SEARCH, fetch + 1))
            neighbours = await repo.nearest(conn, chosen, note_id, vector, fetch)
        model = found.model
        concepts: dict[UUID, frozenset[UUID]] = {}
        if self._concepts is not None and neighbours:
            ids = [note_id, *(n.note_id for n in neighbours)]
            concepts = await self._concepts.concept_ids(memory, ids)
        selected = select_links(
            vector,
            [
                Candidate(n.note_id, n.vector, concepts.get(n.note_id, frozenset()))
                for n in neighbours
            ],
            source_concepts=concepts.get(note_id, frozenset()),
            k=k,
            min_score=settings.min_score,
            concept_weight=settings.concept_weight,
        )
        rows = [
            LinkRow(
                target_id=s.note_id,
                score=s.score,
                rank=s.rank,
                metadata={
                    "strategy": "fallback" if s.fallback else STRATEGY,
                    "k": k,
                    "rank": s.rank,
                    "weight": s.weight,
                    "fallback": s.fallback,
                    "similarity": round(s.similarity, 6),
                    "overlap": round(s.overlap, 6),
                },
            )
            for s in selected
        ]
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            if not await repo.is_live(conn, note_id):
                return LinkOutcome(chosen, skipped="note_gone")
            await repo.replace_links(conn, note_id, rows, set_id=chosen, model=model)
        return LinkOutcome(chosen, tuple(selected), k)
