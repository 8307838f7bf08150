"""What a search is asked and what it answers: requests, filters, scopes, hits, outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from uuid import UUID

from fortemi.platform.notes.models import Note, NoteVisibility
from fortemi.retrieval.fusion import FusionPlan
from fortemi.retrieval.query import QueryType
from fortemi.retrieval.sets import DocumentComposition

__all__ = [
    "FusionMode",
    "Hit",
    "IndexStatus",
    "LexicalExplain",
    "Scope",
    "SearchFilter",
    "SearchMode",
    "SearchOutcome",
    "SearchRequest",
    "SemanticModel",
]


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    LEXICAL = "lexical"
    SEMANTIC = "semantic"


class FusionMode(StrEnum):
    RRF = "rrf"
    RSF = "rsf"


@dataclass(frozen=True, slots=True)
class SearchFilter:
    required_tags: tuple[str, ...] = ()
    any_tags: tuple[str, ...] = ()
    excluded_tags: tuple[str, ...] = ()
    projects: tuple[str, ...] | None = None
    created_after: Any = None
    created_before: Any = None
    starred: bool | None = None
    archived: bool | None = None
    # Concept sets, each expanded to descendants by the caller (see NoteFilter).
    concepts_all: tuple[frozenset[UUID], ...] = ()
    concepts_any: frozenset[UUID] | None = None
    concepts_none: frozenset[UUID] = frozenset()


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    mode: SearchMode = SearchMode.HYBRID
    fusion: FusionMode = FusionMode.RRF
    alpha: float | None = None
    k: int | None = None
    adaptive: bool = False
    limit: int = 10
    filter: SearchFilter = field(default_factory=SearchFilter)
    ef_search: int | None = None
    lexical_pruning: bool | None = None  # None: the configured path (FORTEMI_LEXICAL_PRUNING)
    chunks: bool = True  # each lexical-only hit's best-matching chunk (False: chunk None)


@dataclass(frozen=True, slots=True)
class Hit:
    memory: str
    note_id: UUID
    score: float
    chunk: str | None
    lexical_rank: int | None
    lexical_score: float | None
    semantic_rank: int | None
    semantic_score: float | None
    note: Note | None = None  # filled before the outcome is returned
    chunk_id: int | None = None  # the semantic leg's best chunk, whose text ``chunk`` is

    def completed(self, note: Note, chunk: str | None) -> Hit:
        """This hit with its note and chunk (``dataclasses.replace`` cost more than the
        rest of a 100-hit page's completion)."""
        return Hit(
            self.memory,
            self.note_id,
            self.score,
            chunk,
            self.lexical_rank,
            self.lexical_score,
            self.semantic_rank,
            self.semantic_score,
            note,
            self.chunk_id,
        )


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    degraded: bool
    degraded_reason: str | None
    query_type: QueryType
    fusion: FusionPlan | None
    took_ms: float
    ef_search: int | None = None  # the HNSW candidate list the semantic leg used
    # each search of the semantic leg, in order: hnsw, scan or exact; None: it made none
    semantic_path: str | None = None
    lexical: LexicalExplain | None = None  # what the lexical leg read (None: it did not run)


@dataclass(frozen=True, slots=True)
class LexicalExplain:
    """How the lexical leg ranked: ``pruned`` when any memory took the pruned path, the
    postings it scored, and the postings of the query's terms (what the exhaustive path
    scores), summed over the memories searched."""

    path: str
    postings_read: int
    postings_total: int


@dataclass(frozen=True, slots=True)
class IndexStatus:
    notes: int
    chunks: int
    embedded_chunks: int
    pending_embedding_jobs: int
    model: str | None


@dataclass(frozen=True, slots=True)
class Scope:
    """A memory to search and what of it the caller may read (None: everything)."""

    memory: str
    visibility: NoteVisibility | None


@dataclass(frozen=True)
class SemanticModel:
    """What the semantic leg searches with: the set, by model and composition."""

    model: str
    dimension: int
    composition: DocumentComposition
