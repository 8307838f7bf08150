"""Retrieval's API for scoped question answering (the wiki's retrieval plan): TF-IDF
routing over a set of notes, then the routed notes' chunks with their lexical, metadata
and semantic scores.

* **Scope**: a note condition (the caller's visibility, a vault, a project) and, when
  given, an explicit set of note ids (a project's reachable set). Both are SQL conditions
  in the same statements: nothing outside them is ever scored.
* **Routing**: TF-IDF over the scope from the inverted index (``lex_posting``), the
  question analysed by the same ``to_tsvector('english', ...)`` as the index; the IDF is
  computed within the scope: ``idf = ln(N / df) + 1`` with N the scope's indexed notes and
  df those holding the lexeme (natural log; the + 1 keeps a lexeme every note holds from
  counting for nothing). A note scores ``sum(qtf * idf * (1 + ln tf))``.
* **Chunks** of the routed notes: the same TF-IDF over the chunk's own text, the metadata
  match (the question's lexemes found in the chunk's heading path, its first sentence,
  and the note's key terms: title, tags, aliases; each counted once, weighted by
  ``qtf * idf``), and the exact cosine of the chunk's stored vector to the question's in
  the serving embedding set (no HNSW: only these chunks are read).

Each call runs in one memory transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from uuid import UUID

from fortemi.inference import InferenceBackend
from fortemi.platform.database import Database
from fortemi.platform.notes.models import NameSet, NoteFilter, NoteVisibility
from fortemi.platform.notes.repository import note_filter_where
from fortemi.platform.sql import Where
from fortemi.retrieval.repository import RetrievalRepository
from fortemi.retrieval.scoped_repository import ChunkLexical, DocScore, ScopedRepository, TermWeight
from fortemi.retrieval.semantic import SemanticLeg
from fortemi.retrieval.sets import EmbeddingSets

__all__ = [
    "ChunkLexical",
    "DocScore",
    "NoteScope",
    "ScopedChunk",
    "ScopedRanking",
    "ScopedRetrieval",
    "TermWeight",
    "with_all_skills",
]

ALL_SKILLS = NameSet(frozenset(), only=False)


@dataclass(frozen=True, slots=True)
class NoteScope:
    """Which notes may be scored: those ``visibility`` admits, in ``vault`` (external
    source ``vault:<name>``) when given, among ``notes`` when given (None: no such
    restriction)."""

    visibility: NoteVisibility | None
    vault: str | None = None
    notes: frozenset[UUID] | None = None

    def where(self, *leading: object) -> Where:
        where = note_filter_where(NoteFilter(visibility=self.visibility), Where(*leading))
        if self.vault is not None:
            where.add("external_source = {0}", f"vault:{self.vault}")
        if self.notes is not None:
            # A set membership, so unsorted: sorting a project's UUIDs in Python costs
            # tens of microseconds per question, and the statement's result is the same.
            where.add("id = ANY({0}::uuid[])", list(self.notes))
        return where


@dataclass(frozen=True, slots=True)
class ScopedChunk:
    """A chunk of a routed note and its scores; ``semantic`` None when not embedded."""

    lexical: ChunkLexical
    semantic: float | None


@dataclass(frozen=True, slots=True)
class ScopedRanking:
    """What routing found: the routed notes (best first), the scope's size, their
    chunks, and what a semantic search over the whole scope would have scored."""

    documents: list[DocScore]
    scope_notes: int
    weights: list[TermWeight] = field(default_factory=list)
    chunks: list[ScopedChunk] = field(default_factory=list)
    chunks_in_scope: int = 0
    degraded: str | None = None  # why the semantic scores are missing


class ScopedRetrieval:
    def __init__(
        self, db: Database, backend: InferenceBackend | None, *, concepts: bool = False
    ) -> None:
        self._db = db
        self._repo = ScopedRepository()
        self._sets = EmbeddingSets()
        self._semantic = SemanticLeg(backend, RetrievalRepository(), self._sets, concepts=concepts)

    async def notes(self, memory: str, scope: NoteScope) -> frozenset[UUID]:
        """The live notes of ``scope``."""
        async with self._db.memory_transaction(memory) as conn:
            return frozenset(await self._repo.note_ids(conn, scope.where()))

    async def vaults(self, memory: str, scope: NoteScope) -> list[str]:
        """The vaults the notes of ``scope`` were synced from, by name."""
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.vaults(conn, scope.where())

    async def has_notes(self, memory: str, scope: NoteScope) -> bool:
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.has_notes(conn, scope.where())

    async def route(
        self, memory: str, question: str, scope: NoteScope, *, documents: int
    ) -> ScopedRanking:
        """The best ``documents`` notes of ``scope`` by TF-IDF, without their chunks."""
        async with self._db.memory_transaction(memory) as conn:
            weights, docs, found = await self._repo.route(
                conn, question, scope.where(question), documents
            )
        return ScopedRanking(found, docs, weights)

    async def chunks(
        self,
        memory: str,
        question: str,
        scope: NoteScope,
        routed: ScopedRanking,
    ) -> ScopedRanking:
        """The chunks of ``routed``'s notes (routed within ``scope``) with their scores,
        weighted as routing weighed the question's lexemes; the question is embedded once,
        with the serving set's model."""
        notes = [doc.note_id for doc in routed.documents]
        weights = routed.weights
        model, vector, degraded = await self._semantic.query_vector(question)
        async with self._db.memory_transaction(memory) as conn:
            lexical = await self._repo.chunks(conn, notes, weights)
            cosines: dict[int, float] = {}
            in_scope = await self._repo.chunks_in_scope(conn, scope.where())
            if model is not None and vector is not None:
                chosen = await self._sets.serving(
                    conn, memory, model.model, model.dimension, model.composition
                )
                if chosen is None:
                    degraded = "nothing is embedded yet with the configured model"
                else:
                    cosines = await self._repo.cosines(conn, chosen, vector, notes)
                    in_scope = await self._repo.embedded_in_scope(conn, chosen, scope.where())
                    if not cosines and lexical:
                        degraded = "the routed notes are not embedded yet"
        chunks = [ScopedChunk(c, cosines.get(c.chunk_id)) for c in lexical]
        return replace(routed, chunks=chunks, chunks_in_scope=in_scope, degraded=degraded)


def with_all_skills(visibility: NoteVisibility) -> NoteVisibility:
    """``visibility`` with every skill admitted: the caller's skills are checked per
    candidate afterwards, so that a skill they may not read is dropped *and audited*."""
    return replace(visibility, skills=ALL_SKILLS)
