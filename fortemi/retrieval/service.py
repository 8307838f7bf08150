"""Retrieval's API for the other features: what they may read of its tables.

The graph builds a note's vector from the note's chunk vectors (automatic linking); the
chunks, their vectors and the embedding sets are retrieval's, so the graph asks here
rather than reading ``chunk_embedding`` or ``embedding_set`` itself. Each call runs in
one memory transaction of its own.

The wiki's retrieval plans ask :class:`~fortemi.retrieval.scoped.ScopedRetrieval` (TF-IDF
routing within a set of notes, the routed notes' chunks and their scores), offered here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.inference import InferenceBackend
from fortemi.platform.database import Connection, Database
from fortemi.retrieval.repository import RetrievalRepository
from fortemi.retrieval.scoped import (
    DocScore,
    NoteScope,
    ScopedChunk,
    ScopedRanking,
    ScopedRetrieval,
    with_all_skills,
)
from fortemi.retrieval.sets import EmbeddingSets, composition_for

__all__ = [
    "ChunkVectorService",
    "DocScore",
    "NoteChunkVectors",
    "NoteScope",
    "ScopedChunk",
    "ScopedRanking",
    "ScopedRetrieval",
    "with_all_skills",
]


@dataclass(frozen=True, slots=True)
class NoteChunkVectors:
    """A note's chunk vectors in one embedding set.

    ``set_id`` is None when no set holds a vector of the note; ``vectors`` is empty when
    the set named holds none (or does not exist), and ``model`` is then None too.
    """

    set_id: int | None
    model: str | None = None
    vectors: tuple[npt.NDArray[np.float32], ...] = ()


class ChunkVectorService:
    """``backend`` (with ``concepts``, the embedding composition setting) lets a read that
    names no set take the set search serves from; without it, the newest set holding the
    note's vectors."""

    def __init__(
        self, db: Database, backend: InferenceBackend | None = None, *, concepts: bool = False
    ) -> None:
        self._db = db
        self._repo = RetrievalRepository()
        self._backend = backend
        self._concepts = concepts
        self._sets = EmbeddingSets()

    async def note_chunk_vectors(
        self, memory: str, note_id: UUID, set_id: int | None = None
    ) -> NoteChunkVectors:
        """The note's chunk vectors in set ``set_id`` (None: the set search serves from, when
        it holds any of them, else the newest set that does), with the set's model, read in
        one transaction."""
        async with self._db.memory_transaction(memory) as conn:
            chosen = (
                set_id if set_id is not None else await self._default_set(conn, memory, note_id)
            )
            if chosen is None:
                return NoteChunkVectors(None)
            vectors = await self._repo.note_vectors(conn, chosen, note_id)
            if not vectors:
                return NoteChunkVectors(chosen)
            found = await self._repo.embedding_set(conn, chosen)
        return NoteChunkVectors(chosen, None if found is None else found.model, tuple(vectors))

    async def linking_set(self, memory: str) -> int | None:
        """The set a memory's notes are linked in when none is named: the set search serves
        from (given the backend), else the newest set; None while the memory has none."""
        async with self._db.memory_transaction(memory) as conn:
            if self._backend is not None:
                model = await self._backend.embedding_model()
                composition = composition_for(model.name, concepts=self._concepts)
                serving = await self._sets.serving(
                    conn, memory, model.name, model.dimension, composition
                )
                if serving is not None:
                    return serving.id
            return await self._repo.newest_set(conn)

    async def held_whole(self, memory: str, set_id: int, note_ids: Sequence[UUID]) -> set[UUID]:
        """Those of ``note_ids`` whose every chunk has its vector in set ``set_id``: the
        notes whose vectors are complete there (live, with at least one chunk)."""
        if not note_ids:
            return set()
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.held_whole(conn, set_id, note_ids)

    async def _default_set(self, conn: Connection, memory: str, note_id: UUID) -> int | None:
        # After a composition change is undone (tag-enriched embeddings switched off again),
        # the newest set holding the note may be the abandoned one: the serving set wins.
        if self._backend is not None:
            model = await self._backend.embedding_model()
            composition = composition_for(model.name, concepts=self._concepts)
            serving = await self._sets.serving(
                conn, memory, model.name, model.dimension, composition
            )
            if serving is not None and await self._repo.note_vectors(conn, serving.id, note_id):
                return serving.id
        return await self._repo.latest_set_of_note(conn, note_id)
