"""Hybrid search: a BM25 lexical leg (:mod:`~fortemi.retrieval.lexical`) and an HNSW
semantic leg (:mod:`~fortemi.retrieval.semantic`), filtered before ranking, fused with RRF
or RSF (:mod:`~fortemi.retrieval.hits`), optionally across several memories.

The legs run per memory, in one transaction each. Filters (tags, projects, dates, starred,
archived, the caller's read scope, and the query's required phrases and exclusions, on the
GIN-indexed tsvector) are SQL conditions on the note, the same in both legs, applied
before any ``ORDER BY ... LIMIT``. Each leg over-fetches (three times ``limit``, at least
50), so fusion and dedup never run short.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from uuid import UUID

import numpy as np
import numpy.typing as npt

from fortemi.inference import InferenceBackend, InferenceError
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.jobs.repository import JobRepository
from fortemi.platform.notes.models import Note, NoteFilter, NoteVisibility
from fortemi.platform.notes.repository import NoteRepository
from fortemi.platform.notes.validation import validate_filter
from fortemi.retrieval.fusion import FusionPlan
from fortemi.retrieval.hits import Candidates, fuse
from fortemi.retrieval.indexing import EMBEDDING
from fortemi.retrieval.lexical import BM25_B, BM25_K1, LexicalLeg, LexicalPath, LexicalTrace
from fortemi.retrieval.models import (
    FusionMode,
    Hit,
    IndexStatus,
    LexicalExplain,
    Scope,
    SearchFilter,
    SearchMode,
    SearchOutcome,
    SearchRequest,
    SemanticModel,
)
from fortemi.retrieval.query import ParsedQuery, parse_query
from fortemi.retrieval.repository import RetrievalRepository
from fortemi.retrieval.segments import Segments
from fortemi.retrieval.semantic import MAX_CANDIDATES, SemanticAsk, SemanticLeg, SemanticUse
from fortemi.retrieval.sets import EmbeddingSets

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

MAX_LIMIT = 100
MIN_EF, MAX_EF = 10, MAX_CANDIDATES

_Embedding = tuple[SemanticModel | None, npt.NDArray[np.float32] | None, str | None]


@dataclass
class _Run:
    """One search across its memories: what was asked, and what the legs found so far."""

    request: SearchRequest
    query: ParsedQuery
    note_filter: NoteFilter
    limit: int
    asked_ef: int | None
    fetch: int
    embedding: asyncio.Task[_Embedding] | None
    lexical: Candidates = field(default_factory=Candidates)
    semantic: Candidates = field(default_factory=Candidates)
    used: SemanticUse = field(default_factory=SemanticUse)
    traces: list[LexicalTrace] = field(default_factory=list)
    unembedded: list[str] = field(default_factory=list)
    degraded: str | None = None


class SearchService:
    def __init__(
        self,
        db: Database,
        backend: InferenceBackend | None,
        *,
        concepts: bool = False,
        pruning: bool = True,
        cached_queries: int = 1024,
        segment_postings: int = 0,
    ) -> None:
        """``concepts``: the configured composition embeds notes' concept paths
        (``FORTEMI_EMBED_CONCEPTS``), as the ``Embedding`` job does. ``pruning``: the lexical
        leg's default path (``FORTEMI_LEXICAL_PRUNING``). ``cached_queries``: query vectors
        kept for repeated queries (``FORTEMI_QUERY_EMBEDDING_CACHE``). ``segment_postings``:
        the most postings held in lexical segments (``FORTEMI_LEXICAL_SEGMENT_POSTINGS``;
        0: none, every query takes the statement paths); :meth:`close` stops their builds."""
        self._db = db
        repository = RetrievalRepository()
        self._repository = repository
        self._segments = Segments(db, budget=segment_postings)
        self._lexical = LexicalLeg(repository, pruning=pruning, segments=self._segments)
        self._semantic = SemanticLeg(
            backend, repository, EmbeddingSets(), concepts=concepts, cached_queries=cached_queries
        )
        self._notes = NoteRepository()
        self._jobs = JobRepository()

    @property
    def segments(self) -> Segments:
        return self._segments

    async def close(self) -> None:
        await self._segments.close()

    async def search(self, scopes: Sequence[Scope], request: SearchRequest) -> SearchOutcome:
        started = time.perf_counter()
        run = self._start(request)
        hits: list[Hit] = []
        fusion: FusionPlan | None = None
        try:
            for scope in scopes:
                ef = self._semantic.starting_ef(scope.memory, run.asked_ef)
                local = None if run.embedding is None else {"hnsw.ef_search": ef}
                # One snapshot for every statement of the legs (the lexical paths run
                # several); a read-only REPEATABLE READ transaction never fails to serialize,
                # and its COMMIT, which can change nothing, is not waited for.
                async with self._db.memory_read(
                    scope.memory, isolation="repeatable_read", local=local
                ) as conn:
                    await self._rank(conn, scope, run, ef)
                    if len(scopes) == 1:  # the usual case: all of it in one transaction
                        hits, fusion = fuse(
                            run.request, run.query, run.lexical, run.semantic, run.limit
                        )
                        hits = await self._complete(hits, run.query, conn, run.request.chunks)
        finally:
            if run.embedding is not None and not run.embedding.done():
                run.embedding.cancel()  # a leg failed first: the vector is not needed
        if len(scopes) > 1:
            hits, fusion = fuse(run.request, run.query, run.lexical, run.semantic, run.limit)
            hits = await self._complete(hits, run.query, None, run.request.chunks)
        if run.unembedded and len(run.unembedded) == len(scopes) and run.degraded is None:
            run.degraded = "nothing is embedded yet with the configured model; lexical results only"
        semantic = request.mode is not SearchMode.LEXICAL
        return SearchOutcome(
            hits=hits,
            degraded=run.degraded is not None and semantic,
            degraded_reason=run.degraded if semantic else None,
            query_type=run.query.type,
            fusion=fusion,
            took_ms=(time.perf_counter() - started) * 1000,
            ef_search=max(run.used.ef) if run.used.ef else None,
            semantic_path=run.used.path,
            lexical=_explain(run.traces),
        )

    def _start(self, request: SearchRequest) -> _Run:
        """The checked request, and the query's embedding under way: the query is embedded
        while the lexical leg runs (the local model in a thread, a remote one over the
        network); the semantic leg waits for it."""
        request = replace(request, mode=SearchMode(request.mode), fusion=FusionMode(request.fusion))
        query = parse_query(request.query)
        limit, asked_ef = _check(request)
        # Fusion wants each leg deeper than the page; one leg alone is the page.
        fetch = limit if request.mode is SearchMode.LEXICAL else min(max(limit * 3, 50), 300)
        embedding = (
            None
            if request.mode is SearchMode.LEXICAL
            else asyncio.create_task(self._semantic.query_vector(query.text))
        )
        return _Run(
            request=request,
            query=query,
            note_filter=validate_filter(_note_filter(request.filter)),
            limit=limit,
            asked_ef=asked_ef,
            fetch=fetch,
            embedding=embedding,
        )

    async def _rank(self, conn: Connection, scope: Scope, run: _Run, started_ef: int) -> None:
        """Both legs' candidates from ``scope``'s memory into ``run``; the transaction
        started with ``hnsw.ef_search`` at ``started_ef``."""
        note_filter = _with_scope(run.note_filter, scope.visibility)
        memory = scope.memory
        if run.request.mode is not SearchMode.SEMANTIC and run.query.has_terms:
            trace = LexicalTrace()
            run.traces.append(trace)
            for note_id, score in await self._lexical.rank(
                conn,
                memory,
                run.query,
                note_filter,
                run.fetch,
                pruning=run.request.lexical_pruning,
                trace=trace,
            ):
                run.lexical.found[(memory, note_id)] = (score, None)
        if run.embedding is None:
            return
        semantic, vector, run.degraded = await run.embedding
        if semantic is None or vector is None:
            return
        ask = SemanticAsk(
            semantic, vector, run.query, note_filter, run.fetch, run.asked_ef, started_ef
        )
        found = await self._semantic.rank(conn, memory, ask, run.used)
        if found is None:
            run.unembedded.append(memory)
        for note_id, similarity, chunk_id in found or ():
            run.semantic.found[(memory, note_id)] = (similarity, chunk_id)

    async def index_status(self, memory: str) -> IndexStatus:
        """How much of ``memory`` is searchable: notes, chunks, chunks embedded with the
        configured model, and the embedding jobs still to run."""
        try:
            model = await self._semantic.model()
        except InferenceError:
            model = None
        async with self._db.memory_transaction(memory) as conn:
            notes = await self._notes.count(conn, NoteFilter())
            chunks = await self._repository.chunk_count(conn)
            embedded = 0 if model is None else await self._semantic.embedded_chunks(conn, model)
            pending = await self._jobs.count_live(conn, memory, EMBEDDING)
        return IndexStatus(
            notes=notes,
            chunks=chunks,
            embedded_chunks=embedded,
            pending_embedding_jobs=pending,
            model=None if model is None else model.model,
        )

    async def _complete(
        self, hits: list[Hit], query: ParsedQuery, conn: Connection | None, with_chunks: bool
    ) -> list[Hit]:
        """The hits with their notes, and (with ``with_chunks``) lexical-only hits with the chunk
        of theirs that best matches the query words; in ``conn``'s transaction when given
        (one memory searched), else one transaction per memory. A note purged since it was
        ranked drops out."""
        notes: dict[tuple[str, UUID], Note] = {}
        chunks: dict[tuple[str, UUID], str] = {}
        for memory in dict.fromkeys(hit.memory for hit in hits):
            mine = [hit for hit in hits if hit.memory == memory]
            if conn is not None:
                found, texts = await self._notes_and_chunks(conn, mine, query, with_chunks)
            else:
                async with self._db.memory_transaction(memory) as own:
                    found, texts = await self._notes_and_chunks(own, mine, query, with_chunks)
            notes.update({(memory, note_id): note for note_id, note in found.items()})
            chunks.update({(memory, note_id): text for note_id, text in texts.items()})
        return [
            hit.completed(notes[key], chunks.get(key))
            for hit in hits
            if (key := (hit.memory, hit.note_id)) in notes
        ]

    async def _notes_and_chunks(
        self, conn: Connection, hits: list[Hit], query: ParsedQuery, chunks: bool
    ) -> tuple[dict[UUID, Note], dict[UUID, str]]:
        """The hits' notes, and with ``chunks`` each hit's chunk text: the semantic leg's
        best chunk, else the chunk that best matches the query words."""
        notes = await self._notes.get_many(conn, [hit.note_id for hit in hits])
        if not chunks:
            return notes, {}
        found = {hit.note_id: hit.chunk_id for hit in hits if hit.chunk_id is not None}
        texts = await self._repository.chunk_texts(conn, list(found.values())) if found else {}
        chosen = {note_id: texts[c] for note_id, c in found.items() if c in texts}
        missing = [hit.note_id for hit in hits if hit.note_id not in chosen]
        if missing and query.text.strip():
            chosen |= await self._repository.best_chunks(conn, missing, query.text)
        return notes, chosen


def _explain(traces: Sequence[LexicalTrace]) -> LexicalExplain | None:
    """One memory's path, or the paths of several memories searched together (in the
    order segment, pruned, exhaustive, comma-separated) when they differ."""
    if not traces:
        return None
    taken = {trace.path for trace in traces}
    return LexicalExplain(
        path=",".join(path.value for path in LexicalPath if path in taken),
        postings_read=sum(trace.postings_read for trace in traces),
        postings_total=sum(trace.postings_total for trace in traces),
    )


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
        concepts_all=given.concepts_all,
        concepts_any=given.concepts_any,
        concepts_none=given.concepts_none,
    )


def _with_scope(note_filter: NoteFilter, visibility: NoteVisibility | None) -> NoteFilter:
    """``note_filter`` limited to what the caller may read; a caller who may read every
    note gets no condition, so the lexical leg ranks without looking notes up."""
    if visibility is not None and visibility.everything:
        visibility = None
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
