"""Keeping chunks and embeddings in step with notes: the ``Embedding`` job.

A change to a note's text enqueues an ``Embedding`` job for it in the same transaction
(:class:`EmbeddingEnqueuer`, the note service's indexer), deduplicated per note: ten quick
edits while a job waits make one job. The job cuts the note into chunks, composes each
chunk's text (title, chunk, tags, instruction prefix: the set's
:class:`~fortemi.retrieval.sets.DocumentComposition`), embeds the texts whose hash changed,
and writes chunks and vectors in one transaction, only if the note still has the text it
read; a newer text has its own job queued. Running it twice leaves the same state.

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
from fortemi.retrieval.chunking import chunk_text
from fortemi.retrieval.sets import EmbeddingSets, composition_for, vector_literal

__all__ = [
    "EMBEDDING",
    "Chunking",
    "EmbeddingEnqueuer",
    "embedding_job_type",
    "embedding_tier",
]

EMBEDDING = "Embedding"


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


@dataclass(frozen=True)
class _Piece:
    ordinal: int
    text: str
    start: int
    end: int
    heading: str | None


def _pieces(content: str, format: str, chunking: Chunking) -> list[_Piece]:
    chunks = chunk_text(content, format=format, size=chunking.size, overlap=chunking.overlap)
    if not chunks:
        # A note with a title and no content is still found by its title.
        return [_Piece(0, "", 0, 0, None)]
    return [_Piece(c.ordinal, c.text, c.start, c.end, c.heading) for c in chunks]


def _hash(text: str) -> str:
    return blake3.blake3(text.encode()).hexdigest()


def embedding_job_type(
    db: Database, backend: InferenceBackend, chunking: Chunking, *, tier: Tier
) -> JobType:
    """The ``Embedding`` job type, embedding with ``backend``'s default model."""
    sets = EmbeddingSets()

    async def run(context: HandlerContext) -> JobOutcome:
        memory = context.job.memory
        try:
            note_id = UUID(str(context.job.payload.get("note_id")))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        if memory is None:
            return JobOutcome.failure("memory_required")
        try:
            model = await backend.embedding_model()
        except InferenceError as exc:
            return outcome_for(exc)
        composition = composition_for(model.name)
        async with db.memory_transaction(memory) as conn:
            note = await conn.fetchrow(
                "SELECT title, content, format, tags, content_hash FROM note WHERE id = $1",
                note_id,
            )
            if note is None:
                return JobOutcome.success({"skipped": "note_gone"})
            chosen = await sets.ensure(conn, model.name, model.dimension, composition)
            existing = await conn.fetch(
                "SELECT c.id, c.ordinal, c.content_hash, e.text_hash FROM chunk c "
                "LEFT JOIN chunk_embedding e ON e.chunk_id = c.id AND e.set_id = $2 "
                "WHERE c.note_id = $1 ORDER BY c.ordinal",
                note_id,
                chosen.id,
            )
        pieces = _pieces(note["content"], note["format"], chunking)
        texts = [composition.document(note["title"], p.text, note["tags"]) for p in pieces]
        hashes = [_hash(text) for text in texts]
        keep_chunks = len(existing) == len(pieces) and all(
            row["content_hash"] == note["content_hash"] for row in existing
        )
        todo = [
            i
            for i in range(len(pieces))
            if not keep_chunks or existing[i]["text_hash"] != hashes[i]
        ]
        vectors: dict[int, npt.NDArray[np.float32]] = {}
        for start in range(0, len(todo), chunking.batch):
            batch = todo[start : start + chunking.batch]
            try:
                embedded = await backend.embed([texts[i] for i in batch])
            except InferenceError as exc:
                return outcome_for(exc)
            vectors.update(zip(batch, embedded, strict=True))
            if len(todo) > chunking.batch:
                done = min(start + chunking.batch, len(todo))
                await context.report_progress(
                    done * 100 // len(todo), f"{done} of {len(todo)} chunks"
                )

        async with db.memory_transaction(memory) as conn:
            current = await conn.fetchrow(
                "SELECT title, content_hash, tags FROM note WHERE id = $1 FOR SHARE", note_id
            )
            if current is None:
                return JobOutcome.success({"skipped": "note_gone"})
            if (current["content_hash"], current["title"], list(current["tags"])) != (
                note["content_hash"],
                note["title"],
                list(note["tags"]),
            ):
                return JobOutcome.success({"skipped": "superseded"})
            if keep_chunks:
                chunk_ids = [row["id"] for row in existing]
            else:
                await conn.execute("DELETE FROM chunk WHERE note_id = $1", note_id)
                rows = await conn.fetch(
                    "INSERT INTO chunk (note_id, ordinal, text, start_offset, end_offset, "
                    "heading, content_hash) "
                    "SELECT $1, p.ordinal, p.text, p.start_offset, p.end_offset, p.heading, $2 "
                    "FROM unnest($3::int[], $4::text[], $5::int[], $6::int[], $7::text[]) "
                    "AS p(ordinal, text, start_offset, end_offset, heading) "
                    "ORDER BY p.ordinal RETURNING id",
                    note_id,
                    note["content_hash"],
                    [p.ordinal for p in pieces],
                    [p.text for p in pieces],
                    [p.start for p in pieces],
                    [p.end for p in pieces],
                    [p.heading for p in pieces],
                )
                chunk_ids = [row["id"] for row in rows]
            await conn.executemany(
                # The cast names the set's checked dimension; every value is a parameter.
                "INSERT INTO chunk_embedding (set_id, chunk_id, note_id, text_hash, embedding) "  # noqa: S608
                f"VALUES ($1, $2, $3, $4, $5::{chosen.cast}) "
                "ON CONFLICT (set_id, chunk_id) DO UPDATE "
                "SET text_hash = EXCLUDED.text_hash, embedding = EXCLUDED.embedding",
                [
                    (chosen.id, chunk_ids[i], note_id, hashes[i], vector_literal(vectors[i]))
                    for i in todo
                ],
            )
        return JobOutcome.success({"chunks": len(pieces), "embedded": len(todo)})

    return JobType(name=EMBEDDING, tier=tier, priority=4, handler=run, max_attempts=8)
