"""Hybrid search: a BM25 lexical leg and an HNSW semantic leg, filtered before ranking,
fused with RRF or RSF, optionally across several memories.

The legs, per memory, in one transaction each:

* **Lexical** ranks notes by Okapi BM25 (Lucene's IDF, ``k1`` and ``b`` below) from the
  inverted index the note triggers maintain (``lex_posting``: term frequency and note
  length per (lexeme, note)). Document frequencies are counted from the same index rows
  in the same scan; the corpus size and average length come from ``lex_doc``, cached for
  a few seconds per memory. A word the query repeats counts once per occurrence.
* **Semantic** takes the chunks nearest the query vector (cosine) from the set's HNSW
  index, keeps the best chunk per note, then applies the filters. When filters leave too
  few notes from what the index returned, it reads the filtered chunks exactly instead,
  so a selective filter never starves the top-k.

Filters (tags, projects, dates, starred, archived, the caller's read scope, and the
query's required phrases and exclusions, on the GIN-indexed tsvector) are SQL conditions
on the note, the same in both legs, applied before any ``ORDER BY ... LIMIT``. Each leg
over-fetches (three times ``limit``, at least 50), so fusion and dedup never run short.

Across memories, raw scores are comparable within a leg (BM25 scores are absolute for a
query, cosine similarity is too), so each leg's candidates are merged by score before
fusion, exactly as if the memories were one corpus ranked with per-memory statistics.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.inference import InferenceBackend, InferenceError
from fortemi.platform.database import Connection, Database, set_local
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes.models import Note, NoteFilter, NoteVisibility
from fortemi.platform.notes.repository import NoteRepository, note_filter_where
from fortemi.platform.notes.validation import validate_filter
from fortemi.platform.sql import Where
from fortemi.retrieval.fusion import FusionPlan, Ranked, plan, rrf, rsf
from fortemi.retrieval.indexing import EMBEDDING
from fortemi.retrieval.query import ParsedQuery, QueryType, parse_query
from fortemi.retrieval.sets import (
    MIN_DEFAULT_EF,
    DocumentComposition,
    EmbeddingSet,
    EmbeddingSets,
    composition_for,
    default_ef_search,
    set_name,
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
MIN_EF, MAX_EF = 10, 1000
_STATS_TTL_SECONDS = 5.0
_PREFIX_EXPANSIONS = 20
_CANDIDATES = 4  # notes ranked per note wanted before a filter is checked


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
    note: Note | None = None  # filled before the outcome is returned


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: list[Hit]
    degraded: bool
    degraded_reason: str | None
    query_type: QueryType
    fusion: FusionPlan | None
    took_ms: float
    ef_search: int | None = None  # the HNSW candidate list the semantic leg used


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


@dataclass(frozen=True, slots=True)
class _SemanticAsk:
    """What the semantic leg is asked: the model and query vector, the query (its phrases
    and exclusions filter), the note filter, how many notes and chunks to take, the
    client's ef_search (None: the default for the set's size) and the one the
    transaction started with."""

    model: SemanticModel
    vector: npt.NDArray[np.float32]
    query: ParsedQuery
    note_filter: NoteFilter
    fetch: int
    chunks: int
    ef: int | None
    started_ef: int


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
        self._notes = NoteRepository()
        self._stats: dict[str, tuple[float, int, float]] = {}  # memory → (at, docs, avgdl)
        # (memory, set name) → (at, set, its size): re-read after the same few seconds, so a
        # memory dropped and made again under its name never keeps its old set's number for
        # long, and the default ef_search follows the set's growth.
        self._known_sets: dict[tuple[str, str], tuple[float, EmbeddingSet, int]] = {}
        # memory → the hnsw.ef_search its last search used: the next transaction starts
        # with it, so the setting is changed (one more round trip) only when it moves.
        self._last_ef: dict[str, int] = {}

    async def search(self, scopes: Sequence[Scope], request: SearchRequest) -> SearchOutcome:
        started = time.perf_counter()
        request = replace(request, mode=SearchMode(request.mode), fusion=FusionMode(request.fusion))
        query = parse_query(request.query)
        limit, asked_ef = _check(request)
        note_filter = validate_filter(_note_filter(request.filter))
        fetch = min(max(limit * 3, 50), 300)

        # The query is embedded while the lexical leg runs (the local model in a thread,
        # a remote one over the network); the semantic leg waits for it.
        embedding = (
            None
            if request.mode is SearchMode.LEXICAL
            else asyncio.create_task(self._query_vector(query.text))
        )
        # HNSW returns at most ef_search rows: enough chunks that deduping to notes keeps
        # ``fetch`` of them.
        chunks = min(fetch * 3, MAX_EF)
        degraded: str | None = None
        used_ef: list[int] = []
        lexical_leg, semantic_leg = _Leg(), _Leg()
        unembedded: list[str] = []
        hits: list[Hit] = []
        fusion: FusionPlan | None = None
        try:
            for scope in scopes:
                where_filter = _with_scope(note_filter, scope.visibility)
                guess = asked_ef or self._last_ef.get(scope.memory, MIN_DEFAULT_EF)
                started_ef = max(guess, chunks)
                local = None if embedding is None else {"hnsw.ef_search": started_ef}
                async with self._db.memory_transaction(scope.memory, local=local) as conn:
                    if request.mode is not SearchMode.SEMANTIC and query.has_terms:
                        for note_id, score in await self._lexical(
                            conn, scope.memory, query, where_filter, fetch
                        ):
                            lexical_leg.found[(scope.memory, note_id)] = (score, None)
                    if embedding is not None:
                        semantic, vector, degraded = await embedding
                        if semantic is not None and vector is not None:
                            ask = _SemanticAsk(
                                semantic, vector, query, where_filter, fetch, chunks, asked_ef,
                                started_ef,
                            )  # fmt: skip
                            found = await self._semantic(conn, scope.memory, ask, used_ef)
                            if found is None:
                                unembedded.append(scope.memory)
                            for note_id, similarity, chunk in found or ():
                                semantic_leg.found[(scope.memory, note_id)] = (similarity, chunk)
                    if len(scopes) == 1:  # the usual case: all of it in one transaction
                        hits, fusion = self._fuse(request, query, lexical_leg, semantic_leg, limit)
                        hits = await self._complete(hits, query, conn)
        finally:
            if embedding is not None and not embedding.done():
                embedding.cancel()  # a leg failed first: the vector is not needed
        if len(scopes) > 1:
            hits, fusion = self._fuse(request, query, lexical_leg, semantic_leg, limit)
            hits = await self._complete(hits, query, None)
        if unembedded and len(unembedded) == len(scopes) and degraded is None:
            degraded = "nothing is embedded yet with the configured model; lexical results only"
        return SearchOutcome(
            hits=hits,
            degraded=degraded is not None and request.mode is not SearchMode.LEXICAL,
            degraded_reason=degraded if request.mode is not SearchMode.LEXICAL else None,
            query_type=query.type,
            fusion=fusion,
            took_ms=(time.perf_counter() - started) * 1000,
            ef_search=max(used_ef) if used_ef else None,
        )

    async def _query_vector(
        self, text: str
    ) -> tuple[SemanticModel | None, npt.NDArray[np.float32] | None, str | None]:
        """(model, query vector, None), or (None, None, why the semantic leg is out)."""
        try:
            semantic = await self._semantic_model()
            if semantic is None:
                return None, None, "no embedding model is configured"
            return semantic, await self._embed_query(semantic, text), None
        except InferenceError as exc:
            return None, None, f"the embedding backend failed: {exc.message}"

    async def _semantic_model(self) -> SemanticModel | None:
        if self._backend is None:
            return None
        model = await self._backend.embedding_model()
        return SemanticModel(model.name, model.dimension, composition_for(model.name))

    async def _embed_query(self, model: SemanticModel, text: str) -> npt.NDArray[np.float32]:
        if self._backend is None:
            raise RuntimeError("a semantic model was chosen without an embedding backend")
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
        if row is None:
            raise RuntimeError("an aggregate over lex_doc returned no row")
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
        """The best ``fetch`` notes by BM25 that pass ``note_filter``, best first.

        Postings exist for live notes only, so with nothing else to check no note is read.
        Otherwise the best ``_CANDIDATES * fetch`` notes are ranked from the postings alone
        and only they are checked against the filter, by primary key: the note table is
        never scanned. If the filter rejects so many of them that fewer than ``fetch``
        remain while more notes match, the filter goes into the ranking instead (every
        matching note checked), so a selective filter still gets a full page.
        """
        docs, avgdl = await self._corpus(conn, memory)
        if docs == 0:
            return []
        bm25 = (query.lexical_text, docs, avgdl, BM25_K1, BM25_B, list(query.prefixes))
        where = Where(*bm25)
        note_filter_where(note_filter, where)
        _syntax_where(query, where)
        if note_filter == NoteFilter() and not (query.phrases or query.excluded):
            rows = await conn.fetch(_bm25_sql(None, fetch), *bm25)
        else:
            first = fetch * _CANDIDATES
            rows = await conn.fetch(_bm25_sql(where.sql(), fetch, first), *where.args)
            if len(rows) < fetch and (not rows or rows[0]["ranked"] == first):
                rows = await conn.fetch(_bm25_sql(where.sql(), fetch), *where.args)
        return [(row["note_id"], float(row["score"])) for row in rows]

    # -- the semantic leg ------------------------------------------------------------------

    async def _semantic(
        self,
        conn: Connection,
        memory: str,
        ask: _SemanticAsk,
        used_ef: list[int],
    ) -> list[tuple[UUID, float, str]] | None:
        """Up to ``fetch`` notes, best first: (note, cosine similarity, best chunk's text).
        None when the memory has no embeddings of this model yet. The ``hnsw.ef_search``
        it ran with goes to ``used_ef``.

        The candidate list is the client's ``efSearch``, else the default for the set's
        size (:func:`default_ef_search`), and at least ``chunks``; the transaction started
        with a guess and is corrected here, once the set is known, when the guess was off.

        One statement: the ``chunks`` nearest chunks from the set's HNSW index, the best
        per note, the filters on those notes by primary key, and the chunk texts. When the
        filters leave too few of what the index offered and it had more, the filtered
        chunks are read exactly instead (an expression the index does not serve), so a
        selective filter never starves the top-k.
        """
        model, query, note_filter = ask.model, ask.query, ask.note_filter
        fetch, chunks = ask.fetch, ask.chunks
        known = await self._embedding_set(conn, memory, model)
        if known is None:
            return None
        chosen, size = known
        ef = max(ask.ef if ask.ef is not None else default_ef_search(size), chunks)
        if ef != ask.started_ef:
            await set_local(conn, "hnsw.ef_search", ef)
        self._last_ef[memory] = ef
        used_ef.append(ef)
        literal = vector_literal(ask.vector)
        where = Where(literal)
        note_filter_where(note_filter, where)
        _syntax_where(query, where)
        distance = f"e.embedding::{chosen.cast} <=> $1::{chosen.cast}"
        # The set's id and the row counts are spliced in as constants (ours, integers): a
        # generic plan with the id as a parameter cannot use the set's partial index, and
        # with the counts as parameters custom plans were measured 3 to 10 times slower.
        rows = await conn.fetch(
            f"""
            WITH nearest AS MATERIALIZED (
                SELECT e.note_id, e.chunk_id, {distance} AS d
                FROM chunk_embedding e
                WHERE e.set_id = {int(chosen.id)}
                ORDER BY {distance}
                LIMIT {int(chunks)}
            ),
            best AS (
                SELECT DISTINCT ON (note_id) note_id, chunk_id, d
                FROM nearest ORDER BY note_id, d, chunk_id
            )
            SELECT best.note_id, best.d, (SELECT count(*) FROM nearest) AS offered,
                   (SELECT text FROM chunk WHERE chunk.id = best.chunk_id) AS text
            FROM best JOIN note ON note.id = best.note_id
            WHERE {where.sql()}
            ORDER BY best.d, best.note_id
            LIMIT {int(fetch)}
            """,  # noqa: S608 - the set's id and checked dimension, row counts; values are parameters
            *where.args,
        )
        if len(rows) < fetch and (not rows or rows[0]["offered"] == chunks):
            rows = await self._exact(conn, chosen, literal, query, note_filter, fetch)
            if not rows and not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM chunk_embedding WHERE set_id = $1)", chosen.id
            ):
                self._known_sets.pop((memory, chosen.name), None)
                return None
        return [(row["note_id"], 1.0 - float(row["d"]), row["text"] or "") for row in rows]

    async def _embedding_set(
        self, conn: Connection, memory: str, model: SemanticModel
    ) -> tuple[EmbeddingSet, int] | None:
        """The memory's set for ``model`` and about how many vectors it holds, remembered
        for a few seconds once it exists."""
        key = (memory, set_name(model.model, model.dimension, model.composition))
        now = time.monotonic()
        known = self._known_sets.get(key)
        if known is not None and now - known[0] < _STATS_TTL_SECONDS:
            return known[1], known[2]
        chosen = await self._sets.find(conn, model.model, model.dimension, model.composition)
        if chosen is None:
            return None
        size = await self._sets.chunk_estimate(conn, chosen)
        self._known_sets[key] = (now, chosen, size)
        return chosen, size

    async def _exact(
        self,
        conn: Connection,
        chosen: EmbeddingSet,
        literal: str,
        query: ParsedQuery,
        note_filter: NoteFilter,
        fetch: int,
    ) -> list[Any]:
        where = Where(literal)
        note_filter_where(note_filter, where)
        _syntax_where(query, where)
        return await conn.fetch(
            f"""
            SELECT best.note_id, best.d,
                   (SELECT text FROM chunk WHERE chunk.id = best.chunk_id) AS text
            FROM (
                SELECT DISTINCT ON (e.note_id) e.note_id, e.chunk_id,
                       (e.embedding::{chosen.cast} <=> $1::{chosen.cast}) + 0 AS d
                FROM chunk_embedding e JOIN note ON note.id = e.note_id
                WHERE e.set_id = {int(chosen.id)} AND {where.sql()}
                ORDER BY e.note_id, d, e.chunk_id
            ) AS best
            ORDER BY best.d, best.note_id
            LIMIT {int(fetch)}
            """,  # noqa: S608 - the set's id and row count are ours; values are parameters
            *where.args,
        )

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

    async def _complete(
        self, hits: list[Hit], query: ParsedQuery, conn: Connection | None
    ) -> list[Hit]:
        """The hits with their notes, and lexical-only hits with the chunk of theirs that
        best matches the query words; in ``conn``'s transaction when given (one memory
        searched), else one transaction per memory. A note purged since it was ranked
        drops out."""
        notes: dict[tuple[str, UUID], Note] = {}
        chunks: dict[tuple[str, UUID], str] = {}
        for memory in dict.fromkeys(hit.memory for hit in hits):
            mine = [hit for hit in hits if hit.memory == memory]
            if conn is not None:
                found, texts = await self._notes_and_chunks(conn, mine, query)
            else:
                async with self._db.memory_transaction(memory) as own:
                    found, texts = await self._notes_and_chunks(own, mine, query)
            notes.update({(memory, note_id): note for note_id, note in found.items()})
            chunks.update({(memory, note_id): text for note_id, text in texts.items()})
        return [
            replace(
                hit,
                note=notes[(hit.memory, hit.note_id)],
                chunk=hit.chunk if hit.chunk is not None else chunks.get((hit.memory, hit.note_id)),
            )
            for hit in hits
            if (hit.memory, hit.note_id) in notes
        ]

    async def _notes_and_chunks(
        self, conn: Connection, hits: list[Hit], query: ParsedQuery
    ) -> tuple[dict[UUID, Note], dict[UUID, str]]:
        notes = await self._notes.get_many(conn, [hit.note_id for hit in hits])
        missing = [hit.note_id for hit in hits if hit.chunk is None]
        if not missing or not query.text.strip():
            return notes, {}
        rows = await conn.fetch(
            """
            SELECT DISTINCT ON (note_id) note_id, text FROM chunk
            WHERE note_id = ANY($1::uuid[])
            ORDER BY note_id,
                     ts_rank(to_tsvector('english', text), websearch_to_tsquery('english', $2))
                     DESC, ordinal
            """,
            missing,
            query.text,
        )
        return notes, {row["note_id"]: row["text"] for row in rows}


def _bm25_sql(condition: str | None, fetch: int, first: int | None = None) -> str:
    """The lexical leg's statement for the best ``fetch`` notes. Parameters: $1 query
    text, $2 documents, $3 average length, $4 k1, $5 b, $6 prefixes, then those of
    ``condition`` (a WHERE clause on ``note``; None: no note is read). Row counts are
    constants, not parameters: they shape the plan, and a generic plan made without them
    was measured slower.

    Terms are the query's lexemes plus the indexed words starting with each prefix, found
    by skipping through lex_posting's primary key ("C" collation: a prefix is a key range)
    one probe per distinct word, up to ``_PREFIX_EXPANSIONS`` of them. A term counts once
    per occurrence in the query (its weight is the query frequency times the IDF), as
    Lucene scores a query that repeats a term clause: a question that says "retrieval"
    three times is mostly about retrieval. Each term's document frequency is one count on
    the index. With ``first``, only the ``first`` best notes by score are checked against
    ``condition``, by primary key, and ``ranked`` says how many there were; without it,
    every matching note is checked before ranking.
    """
    if condition is None:
        source = "scored"
    elif first is None:
        source = f"scored JOIN note ON note.id = scored.note_id WHERE {condition}"
    else:
        source = f"""(
            SELECT scored.*, count(*) OVER () AS ranked FROM scored
            ORDER BY score DESC, note_id LIMIT {int(first)}
        ) AS scored JOIN note ON note.id = scored.note_id WHERE {condition}"""  # noqa: S608
    return rf"""
        WITH terms AS (
            SELECT lexeme, sum(qtf)::float8 AS qtf
            FROM (
                SELECT t.lexeme COLLATE "C" AS lexeme,
                       coalesce(array_length(t.positions, 1), 1) AS qtf
                FROM unnest(to_tsvector('english', $1)) AS t
                UNION ALL
                SELECT e.lexeme, 1 FROM unnest($6::text[]) AS p(prefix),
                LATERAL (
                    WITH RECURSIVE walk (lexeme, n) AS (
                        (SELECT lexeme, 1 FROM lex_posting
                         WHERE lexeme >= p.prefix COLLATE "C" ORDER BY lexeme LIMIT 1)
                        UNION ALL
                        SELECT (SELECT lp.lexeme FROM lex_posting lp
                                WHERE lp.lexeme > walk.lexeme ORDER BY lp.lexeme LIMIT 1),
                               walk.n + 1
                        FROM walk
                        WHERE starts_with(walk.lexeme, p.prefix) AND walk.n < {_PREFIX_EXPANSIONS}
                    )
                    SELECT lexeme FROM walk WHERE starts_with(lexeme, p.prefix)
                ) AS e
            ) AS occurrences
            GROUP BY lexeme
        ),
        weighted AS (
            SELECT terms.lexeme,
                   terms.qtf * ln(1 + ($2::float8 - d.df + 0.5) / (d.df + 0.5)) AS weight
            FROM terms, LATERAL (
                SELECT count(*)::float8 AS df FROM lex_posting WHERE lexeme = terms.lexeme
            ) AS d
        ),
        scored AS (
            SELECT lp.note_id,
                   sum(weighted.weight * lp.tf * ($4::float8 + 1)
                       / (lp.tf + $4::float8 * (1 - $5::float8 + $5::float8 * lp.dl / $3::float8)))
                   AS score
            FROM weighted JOIN lex_posting lp ON lp.lexeme = weighted.lexeme
            GROUP BY lp.note_id
        )
        SELECT scored.note_id, scored.score{", scored.ranked" if first else ""}
        FROM {source}
        ORDER BY scored.score DESC, scored.note_id
        LIMIT {int(fetch)}
    """  # noqa: S608 - fixed fragments; every value is a parameter


def _syntax_where(query: ParsedQuery, where: Where) -> None:
    """The query's required phrases and exclusions as conditions on ``note``: filters of
    every leg, like the tag filters, so no leg ranks a note the query rules out."""
    for phrase in query.phrases:
        where.add("note.lex @@ phraseto_tsquery('english', {0})", phrase)
    for excluded in query.excluded:
        where.add("NOT (note.lex @@ phraseto_tsquery('english', {0}))", excluded)


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


def _check(request: SearchRequest) -> tuple[int, int | None]:
    limit = request.limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadUserInput(f"limit must be 1 to {MAX_LIMIT}", field="limit")
    if request.alpha is not None and not 0.0 <= request.alpha <= 1.0:
        raise BadUserInput("alpha (the semantic weight) must be between 0 and 1", field="alpha")
    if request.k is not None and not 1 <= request.k <= 1000:
        raise BadUserInput("k must be 1 to 1000", field="k")
    ef = request.ef_search
    if ef is not None and not MIN_EF <= ef <= MAX_EF:
        raise BadUserInput(f"efSearch must be {MIN_EF} to {MAX_EF}", field="efSearch")
    return limit, ef
