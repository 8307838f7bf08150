"""Keeping chunks and embeddings in step with notes: the ``Embedding`` job.

A change to a note's text enqueues an ``Embedding`` job for it in the same transaction
(:class:`EmbeddingEnqueuer`, the note service's indexer), deduplicated per note: ten quick
edits while a job waits make one job. The job cuts the note into chunks, composes each
chunk's text (title, chunk, tags, instruction prefix: the set's
:class:`~fortemi.retrieval.sets.DocumentComposition`), embeds the texts whose hash changed,
and writes chunks and vectors in one transaction, only if the note still has the text it
read; a newer text has its own job queued. Running it twice leaves the same state.

After a run that wrote (or found current) a note's vectors, the job enqueues the
follow-ups the composition root gave it (:data:`Followups`: the graph's linking), so
retrieval knows nothing of what comes after it.

The lexical index needs no job: triggers keep it exact within each note transaction.
Backend failures become classified job outcomes (rate limited, timeout, transient,
permanent) at this boundary.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import blake3
import numpy as np
import numpy.typing as npt

from fortemi.inference import InferenceBackend, InferenceError, outcome_for
from fortemi.platform.database import Connection, Database
from fortemi.platform.jobs.models import HandlerContext, Job, JobOutcome, JobSpec, JobType, Tier
from fortemi.platform.jobs.service import JobService
from fortemi.platform.notes.models import Note
from fortemi.platform.notes.repository import NoteRepository
from fortemi.retrieval.chunking import chunk_text
from fortemi.retrieval.repository import ChunkEmbedding, ChunkRow, NewChunk, RetrievalRepository
from fortemi.retrieval.sets import DocumentComposition, EmbeddingSet, EmbeddingSets, composition_for

__all__ = [
    "EMBEDDING",
    "Chunking",
    "EmbeddingEnqueuer",
    "Followups",
    "embedding_job_type",
    "embedding_tier",
]

EMBEDDING = "Embedding"

# (memory, note id, embedding set id) → the jobs to enqueue once the note's vectors are in.
Followups = Callable[[str, UUID, int], Sequence[JobSpec]]


def embedding_tier(backend: InferenceBackend) -> Tier:
    """Where embedding runs: the local CPU model on the cpu tier, a model server's work on
    the fast GPU tier (whose workers are the ones placed near it)."""
    return Tier.CPU if backend.name == "local" else Tier.FAST_GPU


@dataclass(frozen=True)
class Chunking:
    size: int = 1000
    overlap: int = 100
    batch: int = 32  # texts per embedding call (progress is reported per batch)


class EmbeddingEnqueuer:
    """The note service's indexer: an ``Embedding`` job per changed note."""

    def __init__(
        self,
        jobs: JobService,
        dispatch: Callable[[Sequence[Job]], Awaitable[None]],
        *,
        tier: Tier,
    ) -> None:
        self._jobs = jobs
        self._dispatch = dispatch
        self._tier = tier

    async def enqueue(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        if not note_ids:
            return []
        specs = [
            JobSpec(
                type=EMBEDDING,
                memory=memory,
                payload={"note_id": str(note_id)},
                tier=self._tier,
                dedupe_key=f"{EMBEDDING}:{memory}:{note_id}",
            )
            for note_id in dict.fromkeys(note_ids)
        ]
        return [job for job, new in await self._jobs.enqueue_many(conn, specs) if new]

    async def committed(self, pending: Sequence[Any]) -> None:
        jobs = [job for job in pending if isinstance(job, Job)]
        await self._jobs.announce_created(jobs)
        await self._dispatch(jobs)


def _pieces(content: str, format: str, chunking: Chunking) -> list[NewChunk]:
    chunks = chunk_text(content, format=format, size=chunking.size, overlap=chunking.overlap)
    if not chunks:
        # A note with a title and no content is still found by its title.
        return [NewChunk(0, "", 0, 0, None)]
    return [NewChunk(c.ordinal, c.text, c.start, c.end, c.heading) for c in chunks]


def _hash(text: str) -> str:
    return blake3.blake3(text.encode()).hexdigest()


@dataclass(frozen=True)
class _Plan:
    """What one run of the job found and will write: the note as read, the set, the
    note's chunks (kept when the stored ones were cut from the same content), their
    composed texts and hashes, and which of them need a new vector."""

    note: Note
    chosen: EmbeddingSet
    pieces: list[NewChunk]
    texts: list[str]
    hashes: list[str]
    existing: list[ChunkRow]
    keep_chunks: bool
    todo: list[int]


def _plan(
    note: Note,
    chosen: EmbeddingSet,
    existing: list[ChunkRow],
    composition: DocumentComposition,
    chunking: Chunking,
) -> _Plan:
    pieces = _pieces(note.content, note.format, chunking)
    texts = [composition.document(note.title, p.text, note.tags) for p in pieces]
    hashes = [_hash(text) for text in texts]
    keep_chunks = len(existing) == len(pieces) and all(
        row.chunk.content_hash == note.content_hash for row in existing
    )
    todo = [i for i in range(len(pieces)) if not keep_chunks or existing[i].text_hash != hashes[i]]
    return _Plan(note, chosen, pieces, texts, hashes, existing, keep_chunks, todo)


class _EmbeddingHandler:
    """Runs an ``Embedding`` job: read the note and its chunks, embed outside any
    transaction, write in one transaction only if the note still has the text it read."""

    def __init__(
        self,
        db: Database,
        backend: InferenceBackend,
        chunking: Chunking,
        followups: Followups | None = None,
    ) -> None:
        self._db = db
        self._backend = backend
        self._chunking = chunking
        self._followups = followups
        self._sets = EmbeddingSets()
        self._notes = NoteRepository()
        self._chunks = RetrievalRepository()

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        memory = context.job.memory
        try:
            note_id = UUID(str(context.job.payload.get("note_id")))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        if memory is None:
            return JobOutcome.failure("memory_required")
        try:
            model = await self._backend.embedding_model()
        except InferenceError as exc:
            return outcome_for(exc)
        composition = composition_for(model.name)
        async with self._db.memory_transaction(memory) as conn:
            note = await self._notes.get(conn, note_id)
            if note is None:
                return JobOutcome.success({"skipped": "note_gone"})
            chosen = await self._sets.ensure(conn, model.name, model.dimension, composition)
            existing = await self._chunks.chunks(conn, note_id, chosen)
        plan = _plan(note, chosen, existing, composition, self._chunking)
        try:
            vectors = await self._embed(context, plan)
        except InferenceError as exc:
            return outcome_for(exc)
        outcome = await self._write(memory, plan, vectors)
        if (
            self._followups is not None
            and outcome.kind == "success"
            and "skipped" not in (outcome.result or {})
        ):
            for spec in self._followups(memory, note_id, plan.chosen.id):
                await context.enqueue(spec)
        return outcome

    async def _embed(
        self, context: HandlerContext, plan: _Plan
    ) -> dict[int, npt.NDArray[np.float32]]:
        """The vectors of the texts to embed, by piece, a batch per call; progress after
        each batch when there is more than one."""
        todo, batch_size = plan.todo, self._chunking.batch
        vectors: dict[int, npt.NDArray[np.float32]] = {}
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            embedded = await self._backend.embed([plan.texts[i] for i in batch])
            vectors.update(
                (i, np.asarray(vector, dtype=np.float32))
                for i, vector in zip(batch, embedded, strict=True)
            )
            if len(todo) > batch_size:
                done = min(start + batch_size, len(todo))
                await context.report_progress(
                    done * 100 // len(todo), f"{done} of {len(todo)} chunks"
                )
        return vectors

    async def _write(
        self, memory: str, plan: _Plan, vectors: dict[int, npt.NDArray[np.float32]]
    ) -> JobOutcome:
        note = plan.note
        async with self._db.memory_transaction(memory) as conn:
            current = await self._notes.text_key(conn, note.id)
            if current is None:
                return JobOutcome.success({"skipped": "note_gone"})
            if current != (note.title, note.content_hash, tuple(note.tags)):
                return JobOutcome.success({"skipped": "superseded"})
            if plan.keep_chunks:
                chunk_ids = [row.chunk.id for row in plan.existing]
            else:
                chunk_ids = await self._chunks.replace_chunks(
                    conn, note.id, note.content_hash, plan.pieces
                )
            chosen = plan.chosen
            await self._chunks.upsert_embeddings(
                conn,
                chosen,
                [
                    ChunkEmbedding(chosen.id, chunk_ids[i], note.id, plan.hashes[i], vectors[i])
                    for i in plan.todo
                ],
            )
        return JobOutcome.success({"chunks": len(plan.pieces), "embedded": len(plan.todo)})


def embedding_job_type(
    db: Database,
    backend: InferenceBackend,
    chunking: Chunking,
    *,
    tier: Tier,
    followups: Followups | None = None,
) -> JobType:
    """The ``Embedding`` job type, embedding with ``backend``'s default model; after each
    successful write it enqueues ``followups(memory, note id, set id)``."""
    handler = _EmbeddingHandler(db, backend, chunking, followups)
    return JobType(name=EMBEDDING, tier=tier, priority=4, handler=handler, max_attempts=8)
