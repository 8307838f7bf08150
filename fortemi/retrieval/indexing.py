"""Keeping chunks and embeddings in step with notes: the ``Embedding`` job.

A change to a note's text enqueues an ``Embedding`` job for it in the same transaction
(:class:`EmbeddingEnqueuer`, the note service's indexer), deduplicated per note: ten quick
edits while a job waits make one job. The job cuts the note into chunks, composes each
chunk's text (title, concept paths, chunk, tags, instruction prefix: the set's
:class:`~fortemi.retrieval.sets.DocumentComposition`), embeds the texts whose hash changed,
and writes chunks and vectors in one transaction, only if the note still has the text it
read; a newer text has its own job queued. Running it twice leaves the same state.

Concept paths come from :class:`ConceptLabels`, which the composition root builds over
the vocabulary when tag-enriched embeddings are on. A composition or model change makes
a new set: the run that creates it enqueues ``EmbeddingBackfill`` (an ``Embedding`` job
per note the set lacks), and until the set is complete every run also writes the set
search still answers from (:meth:`~fortemi.retrieval.sets.EmbeddingSets.serving`).

After a run that wrote (or found current) a note's vectors, the job enqueues the
follow-ups the composition root gave it (:data:`Followups`: the graph's linking), so
retrieval knows nothing of what comes after it.

The lexical index needs no job: triggers keep it exact within each note transaction.
Backend failures become classified job outcomes (rate limited, timeout, transient,
permanent) at this boundary.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
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
from fortemi.retrieval.lexical import STATS_TTL_SECONDS
from fortemi.retrieval.repository import ChunkEmbedding, ChunkRow, NewChunk, RetrievalRepository
from fortemi.retrieval.sets import EmbeddingSet, EmbeddingSets, composition_for

__all__ = [
    "EMBEDDING",
    "EMBEDDING_BACKFILL",
    "ChunkSpan",
    "Chunker",
    "Chunking",
    "ConceptLabels",
    "EmbeddingEnqueuer",
    "ExtraPieces",
    "Followups",
    "NoteGate",
    "backfill_spec",
    "embedding_job_type",
    "embedding_spec",
    "embedding_tier",
]

EMBEDDING = "Embedding"
EMBEDDING_BACKFILL = "EmbeddingBackfill"
Vector = npt.NDArray[np.float32]

# (memory, note id, embedding set id) → the jobs to enqueue once the note's vectors are in.
Followups = Callable[[str, UUID, int], Sequence[JobSpec]]


def embedding_tier(backend: InferenceBackend) -> Tier:
    """Where embedding runs: the local CPU model on the cpu tier, a model server's work on
    the fast GPU tier (whose workers are the ones placed near it)."""
    return Tier.CPU if backend.name == "local" else Tier.FAST_GPU


class ChunkSpan(Protocol):
    """A chunk as a chunker returns it: ``text == note[start:end]``."""

    @property
    def ordinal(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def heading(self) -> str | None: ...


class Chunker(Protocol):
    """Cuts a note's text by its format: :func:`chunk_text` by default; the composition
    root hands in the documents feature's, which cuts code at its syntax and passes every
    other format to :func:`chunk_text` unchanged."""

    def __call__(
        self, text: str, *, format: str, size: int, overlap: int
    ) -> Sequence[ChunkSpan]: ...


@dataclass(frozen=True)
class Chunking:
    size: int = 1000
    overlap: int = 100
    batch: int = 32  # texts per embedding call (progress is reported per batch)
    chunker: Chunker = chunk_text


def embedding_spec(memory: str, note_id: UUID, tier: Tier) -> JobSpec:
    """An ``Embedding`` job for a note, deduplicated per note: ten quick changes while one
    waits make one job."""
    return JobSpec(
        type=EMBEDDING,
        memory=memory,
        payload={"note_id": str(note_id)},
        tier=tier,
        dedupe_key=f"{EMBEDDING}:{memory}:{note_id}",
    )


class ConceptLabels(Protocol):
    """A note's concept paths for its composed text (``"broader > narrower"``, best
    first, capped, concepts on nearly every note dropped), read in the ``Embedding``
    job's memory transaction. Built by the composition root over the vocabulary, so
    retrieval knows nothing of it."""

    async def for_note(self, conn: Connection, note_id: UUID) -> list[str]: ...


class NoteGate(Protocol):
    """Whether a note's embedding must wait (read in the job's memory transaction): the
    composition root hands in the documents feature's pending-extraction check. A gated
    run ends as skipped (``deferred``) and enqueues nothing; whatever holds the note back
    enqueues its ``Embedding`` job again when it is done."""

    async def __call__(self, conn: Connection, note_id: UUID) -> bool: ...


class ExtraPieces(Protocol):
    """Text kept beside a note that its vectors should cover, as (text, heading) pieces
    already cut (the documents feature's attachment chunks), read in the job's memory
    transaction. They follow the note's own chunks, offsets 0 (they are not slices of the
    note's content), and are never part of its versions."""

    async def __call__(self, conn: Connection, note_id: UUID) -> list[tuple[str, str | None]]: ...


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
        specs = [embedding_spec(memory, note_id, self._tier) for note_id in dict.fromkeys(note_ids)]
        return [job for job, new in await self._jobs.enqueue_many(conn, specs) if new]

    async def committed(self, pending: Sequence[Any]) -> None:
        jobs = [job for job in pending if isinstance(job, Job)]
        await self._jobs.announce_created(jobs)
        await self._dispatch(jobs)


def _pieces(content: str, format: str, chunking: Chunking) -> list[NewChunk]:
    chunks = chunking.chunker(content, format=format, size=chunking.size, overlap=chunking.overlap)
    if not chunks:
        # A note with a title and no content is still found by its title.
        return [NewChunk(0, "", 0, 0, None)]
    return [NewChunk(c.ordinal, c.text, c.start, c.end, c.heading) for c in chunks]


def _hash(text: str) -> str:
    return blake3.blake3(text.encode()).hexdigest()


@dataclass(frozen=True)
class _SetPlan:
    """One set a run writes: the composed texts of the note's pieces in it, their hashes,
    and which pieces need a new vector there."""

    chosen: EmbeddingSet
    texts: list[str]
    hashes: list[str]
    todo: list[int]


@dataclass(frozen=True)
class _Plan:
    """What one run of the job found and will write: the note as read, its chunks (kept
    when the stored ones were cut from the same content), and per set (the configured
    one first, then the one search answers from while the configured one fills) the
    texts to embed."""

    note: Note
    pieces: list[NewChunk]
    existing: list[ChunkRow]
    keep_chunks: bool
    sets: list[_SetPlan]
    chunk_key: str

    @property
    def chosen(self) -> EmbeddingSet:
        return self.sets[0].chosen


def _chunk_key(note: Note, extra: Sequence[tuple[str, str | None]]) -> str:
    """What a note's chunks were cut from: its content's hash, and with extra pieces, a
    hash of that and of theirs (a change of either cuts the chunks again)."""
    if not extra:
        return note.content_hash
    hasher = blake3.blake3(note.content_hash.encode())
    for text, heading in extra:
        hasher.update(b"\x00" + (heading or "").encode() + b"\x00" + text.encode())
    return "x:" + hasher.hexdigest()


def _plan(
    note: Note,
    sets: list[tuple[EmbeddingSet, list[ChunkRow]]],
    concepts: Sequence[str],
    chunking: Chunking,
    extra: Sequence[tuple[str, str | None]] = (),
) -> _Plan:
    pieces = _pieces(note.content, note.format, chunking)
    pieces += [
        NewChunk(len(pieces) + i, text, 0, 0, heading) for i, (text, heading) in enumerate(extra)
    ]
    key = _chunk_key(note, extra)
    existing = sets[0][1]
    keep_chunks = len(existing) == len(pieces) and all(
        row.chunk.content_hash == key for row in existing
    )
    plans = []
    for chosen, rows in sets:
        compose = chosen.composition.document
        texts = [compose(note.title, p.text, note.tags, concepts) for p in pieces]
        hashes = [_hash(text) for text in texts]
        todo = [
            i
            for i in range(len(pieces))
            if not keep_chunks or len(rows) != len(pieces) or rows[i].text_hash != hashes[i]
        ]
        plans.append(_SetPlan(chosen, texts, hashes, todo))
    return _Plan(note, pieces, existing, keep_chunks, plans, key)


class _EmbeddingHandler:
    """Runs an ``Embedding`` job: read the note and its chunks, embed outside any
    transaction, write in one transaction only if the note still has the text it read.

    While the configured set fills (a composition or model change made it new), search
    answers from an older complete set (:meth:`EmbeddingSets.serving`); the job writes
    that set too, so it stays complete (and answers for this note's new text) until the
    new one takes over. The run that creates a memory's second or later set enqueues its
    backfill (``EmbeddingBackfill``).
    """

    def __init__(
        self,
        db: Database,
        backend: InferenceBackend,
        chunking: Chunking,
        followups: Followups | None = None,
        concepts: ConceptLabels | None = None,
        *,
        tier: Tier,
        enrich: bool,
        gate: NoteGate | None = None,
        extra: ExtraPieces | None = None,
    ) -> None:
        self._gate = gate
        self._extra = extra
        self._db = db
        self._backend = backend
        self._chunking = chunking
        self._followups = followups
        self._concepts = concepts
        self._enrich = enrich
        self._tier = tier
        self._sets = EmbeddingSets()
        self._notes = NoteRepository()
        self._chunks = RetrievalRepository()
        # (memory, configured set id) → (at, the set search answers from when it is
        # another): asked again after a few seconds, so a burst of jobs (a backfill)
        # counts the sets once per interval, not once per note.
        self._serving: dict[tuple[str, int], tuple[float, EmbeddingSet | None]] = {}
        # (memory, set id) of the sets this process asked a backfill for.
        self._backfilled: set[tuple[str, int]] = set()

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
        composition = composition_for(model.name, concepts=self._enrich)
        async with self._db.memory_transaction(memory) as conn:
            note = await self._notes.get(conn, note_id)
            if note is None:
                return JobOutcome.success({"skipped": "note_gone"})
            if self._gate is not None and await self._gate(conn, note_id):
                return JobOutcome.success({"skipped": "deferred"})
            chosen, created = await self._sets.ensure_new(
                conn, model.name, model.dimension, composition
            )
            # A memory's first set needs no backfill: each of its notes' text changes has
            # enqueued the note's own job. A later one (the composition or the model
            # changed) has every note to catch up on; so has an older set configured
            # again (the setting turned back) while another one answers: asked once per
            # process, the backfill's dedupe key making it one job however many ask.
            serving = await self._serving_set(conn, memory, chosen, created)
            backfill = (memory, chosen.id) not in self._backfilled and (
                serving is not None or (created and await self._sets.count(conn) > 1)
            )
            targets = [chosen] if serving is None else [chosen, serving]
            concepts: list[str] = []
            # Asked only when a set written includes them: the configured one, or while
            # the setting was just turned off, the enriched set still answering.
            if self._concepts is not None and any(s.composition.include_concepts for s in targets):
                concepts = await self._concepts.for_note(conn, note_id)
            existing = [(s, await self._chunks.chunks(conn, note_id, s)) for s in targets]
            extra = [] if self._extra is None else await self._extra(conn, note_id)
        if backfill:
            await context.enqueue(backfill_spec(memory, chosen.id))
            self._backfilled.add((memory, chosen.id))
        plan = _plan(note, existing, concepts, self._chunking, extra)
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

    async def _serving_set(
        self, conn: Connection, memory: str, chosen: EmbeddingSet, created: bool
    ) -> EmbeddingSet | None:
        """The set search answers from while ``chosen`` (the configured one) fills; None
        when that is ``chosen`` itself."""
        key = (memory, chosen.id)
        now = time.monotonic()
        known = self._serving.get(key)
        if known is not None and not created and now - known[0] < STATS_TTL_SECONDS:
            return known[1]
        found = await self._sets.serving(
            conn, memory, chosen.model, chosen.dimension, chosen.composition
        )
        serving = None if found is None or found.id == chosen.id else found
        self._serving[key] = (now, serving)
        return serving

    async def _embed(self, context: HandlerContext, plan: _Plan) -> dict[str, Vector]:
        """The vectors of the texts to embed (each distinct text once, whichever sets
        want it), a batch per call; progress after each batch when there is more than
        one."""
        wanted = list(dict.fromkeys(p.texts[i] for p in plan.sets for i in p.todo))
        batch_size = self._chunking.batch
        vectors: dict[str, Vector] = {}
        for start in range(0, len(wanted), batch_size):
            batch = wanted[start : start + batch_size]
            embedded = await self._backend.embed(batch)
            vectors.update(
                (text, np.asarray(vector, dtype=np.float32))
                for text, vector in zip(batch, embedded, strict=True)
            )
            if len(wanted) > batch_size:
                done = min(start + batch_size, len(wanted))
                await context.report_progress(
                    done * 100 // len(wanted), f"{done} of {len(wanted)} chunks"
                )
        return vectors

    async def _write(self, memory: str, plan: _Plan, vectors: dict[str, Vector]) -> JobOutcome:
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
                    conn, note.id, plan.chunk_key, plan.pieces
                )
            for part in plan.sets:
                chosen = part.chosen
                await self._chunks.upsert_embeddings(
                    conn,
                    chosen,
                    [
                        ChunkEmbedding(
                            chosen.id, chunk_ids[i], note.id, part.hashes[i], vectors[part.texts[i]]
                        )
                        for i in part.todo
                    ],
                )
        result: dict[str, Any] = {"chunks": len(plan.pieces), "embedded": len(plan.sets[0].todo)}
        if len(plan.sets) > 1:
            result["serving"] = {"set": plan.sets[1].chosen.id, "embedded": len(plan.sets[1].todo)}
        return JobOutcome.success(result)


def embedding_job_type(
    db: Database,
    backend: InferenceBackend,
    chunking: Chunking,
    *,
    tier: Tier,
    followups: Followups | None = None,
    concepts: ConceptLabels | None = None,
    enrich: bool | None = None,
    gate: NoteGate | None = None,
    extra: ExtraPieces | None = None,
) -> JobType:
    """The ``Embedding`` job type, embedding with ``backend``'s default model; after each
    successful write it enqueues ``followups(memory, note id, set id)``.

    ``concepts`` gives notes' concept paths; ``enrich`` (``FORTEMI_EMBED_CONCEPTS``;
    default: whether ``concepts`` is given) makes the composition include them, which
    makes it another set. With ``concepts`` and ``enrich`` False, paths are still read
    for a set that includes them and is still answering (the setting just turned off).
    ``gate`` defers a note's run while it says so (see :class:`NoteGate`); ``extra``
    adds pieces kept beside the note (see :class:`ExtraPieces`)."""
    handler = _EmbeddingHandler(
        db,
        backend,
        chunking,
        followups,
        concepts,
        tier=tier,
        enrich=concepts is not None if enrich is None else enrich,
        gate=gate,
        extra=extra,
    )
    return JobType(name=EMBEDDING, tier=tier, priority=4, handler=handler, max_attempts=8)


def backfill_spec(memory: str, set_id: int) -> JobSpec:
    """The backfill of a new set: one per memory and set, however many runs ask."""
    return JobSpec(
        type=EMBEDDING_BACKFILL,
        memory=memory,
        payload={"set_id": int(set_id)},
        dedupe_key=f"{EMBEDDING_BACKFILL}:{memory}:{int(set_id)}",
    )
