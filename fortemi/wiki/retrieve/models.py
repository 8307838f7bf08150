"""Value objects of a retrieval plan: what is asked, the settings, and the plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

__all__ = [
    "Candidate",
    "PlanSettings",
    "RetrievalPlan",
    "RetrieveRequest",
]

MAX_QUESTION_CHARS = 20_000
MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET = 256, 200_000


@dataclass(frozen=True, slots=True)
class RetrieveRequest:
    question: str
    project: str | None = None
    vault: str | None = None
    token_budget: int = 4096
    explain: bool = False


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How a plan is made (``FORTEMI_WIKI_*`` settings).

    ``min_relevance`` is on the scale of the cosine similarity between the question's and
    the chunk's vectors (-1..1; with the local model, unrelated text scores about 0 to
    0.25 and a chunk that answers about 0.4 and up). Without vectors (no embedding model,
    or not embedded yet), relevance is the share of the question's IDF weight that the
    chunk's words and metadata hold (0..1) and ``min_lexical_relevance`` applies instead.
    """

    documents: int = 20
    top_chunks: int = 10
    tfidf_weight: float = 0.4
    semantic_weight: float = 0.6
    rrf_k: int = 60
    metadata_boost: float = 1.0
    min_relevance: float = 0.3
    relative_relevance: float = 0.15
    min_lexical_relevance: float = 0.5
    duplicate_jaccard: float = 0.7
    shingle_words: int = 3


@dataclass(slots=True)
class Candidate:
    """A chunk considered for the plan, with its scores and, once decided, why it was
    left out (None: selected)."""

    chunk_id: int
    note_id: UUID
    title: str
    path: str | None
    project: str | None
    skill: str | None
    ordinal: int
    heading: str | None
    text: str
    tfidf: float
    metadata: float
    semantic: float | None
    lexical_share: float = 0.0
    fused: float = 0.0
    relevance: float = 0.0
    tokens: int = 0
    dropped: str | None = None


@dataclass(frozen=True, slots=True)
class RetrievalPlan:
    chunks: list[Candidate]  # in prompt order
    abstained: bool
    reason: str | None
    tokens_used: int
    token_budget: int
    took_ms: float
    prefix_hash: str | None
    prompt: str | None
    candidates: list[Candidate]  # every candidate, best fused first
    strategy: str
    scope: str  # "project", "memory" (fallback or no project)
    scope_notes: int
    fell_back: bool
    chunks_scored: int
    chunks_in_scope: int
    degraded: str | None = None
    dropped_skills: list[str] = field(default_factory=list)

    @property
    def search_space_cut(self) -> float:
        """The share of the scope's chunks that were never scored (0..1)."""
        if self.chunks_in_scope <= 0:
            return 0.0
        return max(0.0, 1.0 - self.chunks_scored / self.chunks_in_scope)
