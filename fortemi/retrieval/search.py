"""Hybrid search: a BM25 lexical leg and an HNSW semantic leg, filtered before ranking,
fused with RRF or RSF, optionally across several memories.

The legs, per memory, in one transaction each:

* **Lexical** ranks notes by Okapi BM25 (Lucene's IDF, ``k1`` and ``b`` below) from the
  inverted index the note triggers maintain (``lex_posting``: term frequency and note
  length per (lexeme, note)). Document frequencies are counted from the same index rows
  in the same scan; the corpus size and average length come from ``lex_doc``, cached for
  a few seconds per memory. Required phrases and exclusions use the GIN-indexed tsvector.
* **Semantic** takes the chunks nearest the query vector (cosine) from the set's HNSW
  index, keeps the best chunk per note, then applies the filters. When filters leave too
  few notes from what the index returned, it reads the filtered chunks exactly instead,
  so a selective filter never starves the top-k.

Filters (tags, projects, dates, starred, archived, the caller's read scope) are SQL
conditions on the note, applied before any ``ORDER BY ... LIMIT``. Each leg over-fetches
(three times ``limit``, at least 50), so fusion and dedup never run short.

Across memories, raw scores are comparable within a leg (BM25 scores are absolute for a
query, cosine similarity is too), so each leg's candidates are merged by score before
fusion, exactly as if the memories were one corpus ranked with per-memory statistics.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.inference import InferenceBackend, InferenceError
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes.models import NoteFilter, NoteVisibility
from fortemi.platform.notes.repository import note_filter_where
from fortemi.platform.notes.validation import validate_filter
from fortemi.platform.sql import Where
from fortemi.retrieval.fusion import FusionPlan, Ranked, plan, rrf, rsf
from fortemi.retrieval.indexing import EMBEDDING
from fortemi.retrieval.query import ParsedQuery, QueryType, parse_query
from fortemi.retrieval.sets import (
    DocumentComposition,
    EmbeddingSet,
    EmbeddingSets,
    composition_for,
    vector_literal,
)

__all__ = [
    "BM25_B",
    "BM25_K1",
    "FusionMode",
    "Hit",
    "IndexStatus",
    "Scope",
    "SearchFilter",
    "SearchMode",
    "SearchOutcome",
    "SearchRequest",
    "SearchService",
    "SemanticModel",
]

BM25_K1 = 1.2
BM25_B = 0.75
MAX_LIMIT = 100
MIN_EF, MAX_EF, DEFAULT_EF = 10, 1000, 100
_STATS_TTL_SECONDS = 5.0
_PREFIX_EXPANSIONS = 20


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


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    degraded: bool
    degraded_reason: str | None
    query_type: QueryType
    fusion: FusionPlan | None
    took_ms: float


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


@dataclass
class _Leg:
    """One leg's candidates across memories: (memory, note) → (score, chunk text)."""

    found: dict[tuple[str, UUID], tuple[float, str | None]] = field(default_factory=dict)

    def ranked(self) -> Ranked[tuple[str, UUID]]:
        order = sorted(
            self.found.items(), key=lambda item: (-item[1][0], item[0][0], str(item[0][1]))
        )
        return Ranked(keys=[key for key, _ in order], scores=[value[0] for _, value in order])


class SearchService:
    def __init__(self, db: Database, backend: InferenceBackend | None) -> None:
        self._db = db
        self._backend = backend
        self._sets = EmbeddingSets()
        self._stats: dict[str, tuple[float, int, float]] = {}  # memory → (at, docs, avgdl)

    async def search(self, scopes: Sequence[Scope], request: SearchRequest) -> SearchOutcome:
        started = time.perf_counter()
        request = replace(request, mode=SearchMode(request.mode), fusion=FusionMode(request.fusion))
        query = parse_query(request.query)
        limit, ef = _check(request)
        note_filter = validate_filter(_note_filter(request.filter))
        fetch = min(max(limit * 3, 50), 300)

        degraded: str | None = None
        vector: npt.NDArray[np.float32] | None = None
        semantic: SemanticModel | None = None
        if request.mode is not SearchMode.LEXICAL:
            try:
                semantic = await self._semantic_model()
                if semantic is None:
                    degraded = "no embedding model is configured"
                else:
                    vector = await self._embed_query(semantic, query.text)
            except InferenceError as exc:
                degraded = f"the embedding backend failed: {exc.message}"

        lexical_leg, semantic_leg = _Leg(), _Leg()
        unembedded: list[str] = []
        for scope in scopes:
            where_filter = _with_scope(note_filter, scope.visibility)
            async with self._db.memory_transaction(scope.memory) as conn:
                if request.mode is not SearchMode.SEMANTIC and query.has_terms:
                    for note_id, score in await self._lexical(
                        conn, scope.memory, query, where_filter, fetch
                    ):
                        lexical_leg.found[(scope.memory, note_id)] = (score, None)
                if vector is not None and semantic is not None:
                    found = await self._semantic(conn, semantic, vector, where_filter, fetch, ef)
                    if found is None:
                        unembedded.append(scope.memory)
                    for note_id, similarity, chunk in found or ():
                        semantic_leg.found[(scope.memory, note_id)] = (similarity, chunk)
        if unembedded and len(unembedded) == len(scopes) and degraded is None:
            degraded = "nothing is embedded yet with the configured model; lexical results only"

        hits, fusion = self._fuse(request, query, lexical_leg, semantic_leg, limit)
        hits = await self._with_chunks(hits, query)
        return SearchOutcome(
            hits=hits,
            degraded=degraded is not None and request.mode is not SearchMode.LEXICAL,
            degraded_reason=degraded if request.mode is not SearchMode.LEXICAL else None,
            query_type=query.type,
            fusion=fusion,
            took_ms=(time.perf_counter() - started) * 1000,
        )

    async def _semantic_model(self) -> SemanticModel | None:
        if self._backend is None:
            return None
        model = await self._backend.embedding_model()
        return SemanticModel(model.name, model.dimension, composition_for(model.name))

    async def _embed_query(self, model: SemanticModel, text: str) -> npt.NDArray[np.float32]:
        assert self._backend is not None  # noqa: S101 - a model implies a backend
        vectors = await self._backend.embed([model.composition.query(text)])
        return np.asarray(vectors[0], dtype=np.float32)

    async def index_status(self, memory: str) -> IndexStatus:
        """How much of ``memory`` is searchable: notes, chunks, chunks embedded with the
        configured model, and the embedding jobs still to run."""
        try:
            model = await self._semantic_model()
        except InferenceError:
            model = None
        async with self._db.memory_transaction(memory) as conn:
            notes = await conn.fetchval("SELECT count(*) FROM note WHERE deleted_at IS NULL")
            chunks = await conn.fetchval("SELECT count(*) FROM chunk")
            embedded = 0
            if model is not None:
                chosen = await self._sets.find(
                    conn, model.model, model.dimension, model.composition
                )
                if chosen is not None:
                    embedded = await conn.fetchval(
                        "SELECT count(*) FROM chunk_embedding WHERE set_id = $1", chosen.id
                    )
            pending = await conn.fetchval(
                "SELECT count(*) FROM public.job WHERE memory = $1 AND type = $2 "
                "AND status IN ('pending', 'running')",
                memory,
                EMBEDDING,
            )
        return IndexStatus(
            notes=int(notes),
            chunks=int(chunks),
            embedded_chunks=int(embedded),
            pending_embedding_jobs=int(pending),
            model=None if model is None else model.model,
        )

    # -- the lexical leg -------------------------------------------------------------------

    async def _corpus(self, conn: Connection, memory: str) -> tuple[int, float]:
        now = time.monotonic()
        cached = self._stats.get(memory)
        if cached is not None and now - cached[0] < _STATS_TTL_SECONDS:
            return cached[1], cached[2]
        row = await conn.fetchrow(
            "SELECT count(*) AS docs, coalesce(avg(dl), 0) AS avgdl FROM lex_doc"
        )
        assert row is not None  # noqa: S101 - an aggregate always returns a row
        docs, avgdl = int(row["docs"]), float(row["avgdl"])
        if docs:  # an empty memory is asked again: its first note must be found at once
            self._stats[memory] = (now, docs, avgdl)
        return docs, avgdl

    async def _lexical(
        self,
        conn: Connection,
        memory: str,
        query: ParsedQuery,
        note_filter: NoteFilter,
        fetch: int,
    ) -> list[tuple[UUID, float]]:
        docs, avgdl = await self._corpus(conn, memory)
        if docs == 0:
            return []
        where = Where(query.text, docs, avgdl, BM25_K1, BM25_B, fetch, list(query.prefixes))
        # Postings exist for live notes only: with nothing else to check, no note is read.
        unfiltered = note_filter == NoteFilter() and not (query.phrases or query.excluded)
        note_filter_where(note_filter, where)
        for phrase in query.phrases:
            where.add("lex @@ phraseto_tsquery('english', {0})", phrase)
        for excluded in query.excluded:
            where.add("NOT (lex @@ phraseto_tsquery('english', {0}))", excluded)
        # Prefix expansion: the lexicon's words starting with each prefix ("C" collation,
        # so LIKE with a literal start is a btree range); LIKE's wildcards are escaped.
        sql = f"""
            WITH terms AS (
                SELECT DISTINCT t.lexeme COLLATE "C" AS lexeme
                FROM unnest(to_tsvector('english', $1)) AS t
                UNION
                SELECT e.lexeme FROM unnest($7::text[]) AS p(prefix),
                LATERAL (
                    SELECT lexeme FROM lex_term
                    WHERE lexeme LIKE replace(replace(p.prefix, '\\', '\\\\'), '_', '\\_') || '%'
                    ORDER BY lexeme LIMIT {_PREFIX_EXPANSIONS}
                ) AS e
            ),
            postings AS (
                SELECT lp.note_id, lp.tf, lp.dl, count(*) OVER (PARTITION BY lp.lexeme) AS df
                FROM lex_posting lp JOIN terms USING (lexeme)
            ),
            scored AS (
                SELECT note_id,
                       sum(ln(1 + ($2::float8 - df + 0.5) / (df + 0.5))
                           * tf * ($4::float8 + 1)
                           / (tf + $4::float8 * (1 - $5::float8 + $5::float8 * dl / $3::float8)))
                       AS score
                FROM postings GROUP BY note_id
            )
            SELECT scored.note_id, scored.score
            FROM scored {"" if unfiltered else "JOIN note ON note.id = scored.note_id"}
            WHERE {"true" if unfiltered else where.sql()}
            ORDER BY scored.score DESC, scored.note_id
            LIMIT $6::int
        """  # noqa: S608 - fixed fragments; every value is a parameter
        rows = await conn.fetch(sql, *where.args)
        return [(row["note_id"], float(row["score"])) for row in rows]

    # -- the semantic leg ------------------------------------------------------------------

    async def _semantic(
        self,
        conn: Connection,
        model: SemanticModel,
        vector: npt.NDArray[np.float32],
        note_filter: NoteFilter,
        fetch: int,
        ef: int,
    ) -> list[tuple[UUID, float, str]] | None:
        """Up to ``fetch`` notes, best first: (note, cosine similarity, best chunk). None
        when the memory has no embeddings of this model yet."""
        chosen = await self._sets.find(conn, model.model, model.dimension, model.composition)
        if chosen is None or not await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM chunk_embedding WHERE set_id = $1)", chosen.id
        ):
            return None
        literal = vector_literal(vector)
        # Chunks per note vary; fetch enough chunks that deduping to notes keeps ``fetch``.
        chunks = min(fetch * 3, MAX_EF)
        await conn.execute(f"SET LOCAL hnsw.ef_search = {int(max(ef, chunks))}")
        nearest = await conn.fetch(
            f"""
            SELECT e.note_id, e.chunk_id, e.embedding::{chosen.cast} <=> $1::{chosen.cast} AS d
            FROM chunk_embedding e
            WHERE e.set_id = $2
            ORDER BY e.embedding::{chosen.cast} <=> $1::{chosen.cast}
            LIMIT $3
            """,  # noqa: S608 - the cast is the set's checked dimension
            literal,
            chosen.id,
            chunks,
        )
        best = _best_per_note(nearest)
        allowed = await self._filter_notes(conn, list(best), note_filter)
        kept = [(note, d, chunk) for note, (d, chunk) in best.items() if note in allowed]
        if len(kept) < fetch and len(nearest) == chunks:
            # The filters left too few of what the index offered, and it has more: read
            # the filtered chunks exactly (an expression the index does not serve).
            kept = await self._exact(conn, chosen, literal, note_filter, fetch)
        kept.sort(key=lambda item: (item[1], str(item[0])))
        texts = await self._chunk_texts(conn, [chunk for _, _, chunk in kept[:fetch]])
        return [(note, 1.0 - d, texts.get(chunk, "")) for note, d, chunk in kept[:fetch]]

    async def _filter_notes(
        self, conn: Connection, note_ids: list[UUID], note_filter: NoteFilter
    ) -> set[UUID]:
        if not note_ids:
            return set()
        where = Where(note_ids)
        note_filter_where(note_filter, where)
        rows = await conn.fetch(
            f"SELECT id FROM note WHERE id = ANY($1::uuid[]) AND {where.sql()}",  # noqa: S608
            *where.args,
        )
        return {row["id"] for row in rows}

    async def _exact(
        self,
        conn: Connection,
        chosen: EmbeddingSet,
        literal: str,
        note_filter: NoteFilter,
        fetch: int,
    ) -> list[tuple[UUID, float, int]]:
        where = Where(literal, chosen.id, fetch)
        note_filter_where(note_filter, where)
        rows = await conn.fetch(
            f"""
            SELECT note_id, chunk_id, d FROM (
                SELECT DISTINCT ON (e.note_id) e.note_id, e.chunk_id,
                       (e.embedding::{chosen.cast} <=> $1::{chosen.cast}) + 0 AS d
                FROM chunk_embedding e JOIN note ON note.id = e.note_id
                WHERE e.set_id = $2 AND {where.sql()}
                ORDER BY e.note_id, d
            ) AS best
            ORDER BY d, note_id
            LIMIT $3::int
            """,  # noqa: S608 - fixed fragments; every value is a parameter
            *where.args,
        )
        return [(row["note_id"], float(row["d"]), row["chunk_id"]) for row in rows]

    async def _chunk_texts(self, conn: Connection, chunk_ids: list[int]) -> dict[int, str]:
        if not chunk_ids:
            return {}
        rows = await conn.fetch(
            "SELECT id, text FROM chunk WHERE id = ANY($1::bigint[])", chunk_ids
        )
        return {row["id"]: row["text"] for row in rows}

    # -- fusion ----------------------------------------------------------------------------

    def _fuse(
        self,
        request: SearchRequest,
        query: ParsedQuery,
        lexical: _Leg,
        semantic: _Leg,
        limit: int,
    ) -> tuple[list[Hit], FusionPlan | None]:
        lexical_ranked, semantic_ranked = lexical.ranked(), semantic.ranked()
        fusion: FusionPlan | None = None
        if request.mode is SearchMode.LEXICAL:
            scores = dict(zip(lexical_ranked.keys, lexical_ranked.scores, strict=True))
        elif request.mode is SearchMode.SEMANTIC:
            scores = dict(zip(semantic_ranked.keys, semantic_ranked.scores, strict=True))
        else:
            fusion = plan(
                query.type,
                rsf=request.fusion is FusionMode.RSF,
                alpha=request.alpha,
                k=request.k,
                adaptive=request.adaptive,
            )
            combine = rsf if request.fusion is FusionMode.RSF else rrf
            scores = combine(lexical_ranked, semantic_ranked, fusion)
        lexical_rank = {key: rank for rank, key in enumerate(lexical_ranked.keys, start=1)}
        semantic_rank = {key: rank for rank, key in enumerate(semantic_ranked.keys, start=1)}
        order = sorted(scores.items(), key=lambda item: (-item[1], item[0][0], str(item[0][1])))
        hits = []
        for key, score in order[:limit]:
            lex, sem = lexical.found.get(key), semantic.found.get(key)
            hits.append(
                Hit(
                    memory=key[0],
                    note_id=key[1],
                    score=score,
                    chunk=sem[1] if sem else None,
                    lexical_rank=lexical_rank.get(key),
                    lexical_score=lex[0] if lex else None,
                    semantic_rank=semantic_rank.get(key),
                    semantic_score=sem[0] if sem else None,
                )
            )
        return hits, fusion

    async def _with_chunks(self, hits: list[Hit], query: ParsedQuery) -> list[Hit]:
        """Give lexical-only hits the chunk of theirs that best matches the query words."""
        missing: dict[str, list[UUID]] = {}
        for hit in hits:
            if hit.chunk is None:
                missing.setdefault(hit.memory, []).append(hit.note_id)
        if not missing or not query.text.strip():
            return hits
        chunks: dict[tuple[str, UUID], str] = {}
        for memory, note_ids in missing.items():
            async with self._db.memory_transaction(memory) as conn:
                rows = await conn.fetch(
                    """
                    SELECT DISTINCT ON (note_id) note_id, text FROM chunk
                    WHERE note_id = ANY($1::uuid[])
                    ORDER BY note_id,
                             ts_rank(to_tsvector('english', text),
                                     websearch_to_tsquery('english', $2)) DESC, ordinal
                    """,
                    note_ids,
                    query.text,
                )
            chunks.update({(memory, row["note_id"]): row["text"] for row in rows})
        return [
            hit
            if hit.chunk is not None
            else replace(hit, chunk=chunks.get((hit.memory, hit.note_id)))
            for hit in hits
        ]


def _best_per_note(rows: Sequence[Any]) -> dict[UUID, tuple[float, int]]:
    best: dict[UUID, tuple[float, int]] = {}
    for row in rows:
        distance = float(row["d"])
        current = best.get(row["note_id"])
        if current is None or distance < current[0]:
            best[row["note_id"]] = (distance, row["chunk_id"])
    return best


def _note_filter(given: SearchFilter) -> NoteFilter:
    return NoteFilter(
        tags_all=tuple(given.required_tags),
        tags_any=tuple(given.any_tags),
        tags_none=tuple(given.excluded_tags),
        projects=None if given.projects is None else tuple(given.projects),
        created_after=given.created_after,
        created_before=given.created_before,
        starred=given.starred,
        archived=given.archived,
    )


def _with_scope(note_filter: NoteFilter, visibility: NoteVisibility | None) -> NoteFilter:
    return replace(note_filter, visibility=visibility)


def _check(request: SearchRequest) -> tuple[int, int]:
    limit = request.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadUserInput(f"limit must be 1 to {MAX_LIMIT}", field="limit")
    if request.alpha is not None and not 0.0 <= request.alpha <= 1.0:
        raise BadUserInput("alpha (the semantic weight) must be between 0 and 1", field="alpha")
    if request.k is not None and not 1 <= request.k <= 1000:
        raise BadUserInput("k must be 1 to 1000", field="k")
    ef = DEFAULT_EF if request.ef_search is None else request.ef_search
    if not MIN_EF <= ef <= MAX_EF:
        raise BadUserInput(f"efSearch must be {MIN_EF} to {MAX_EF}", field="efSearch")
    return limit, ef
