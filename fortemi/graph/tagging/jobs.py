"""``ConceptTagging``: a note's concepts, proposed by tiers that escalate.

A change to a note's text enqueues a ``ConceptTagging`` job for it in the same
transaction (:class:`ConceptTaggingEnqueuer`, one of the note service's indexers),
deduplicated per note. The job starts on the cpu tier; each run uses one model:

=============  ===============================================  ==========================
tier           how it proposes                                  escalates when it found
=============  ===============================================  ==========================
cpu            keyphrases + vocabulary labels, embedding model  fewer than 5 concepts
fast_gpu       the backend's fast generation model, JSON        fewer than 3 concepts
standard_gpu   the backend's standard generation model, JSON    (top tier)
=============  ===============================================  ==========================

Every tier writes what the tiers so far found (its own and what the escalation carried,
``payload["escalation"]["carried"]``) as the note's ``ai_auto`` concepts through the
vocabulary service, which reuses concepts by label and creates missing ones as
candidates; a CPU-only install thus still gets concepts. Nothing here makes a note
version or touches the note row, so tagging never re-triggers embedding.

Without a generation backend (``backend.can_generate`` False: the embedded default) a
tier that would escalate completes instead, with ``reason: generation_unavailable``. An
unusable model answer (refusal, malformed JSON, schema violation) counts as nothing
found at that tier, so it escalates or completes; a failed call (timeout, 5xx) is a
classified retry. The finished chain enqueues ``RelatedConceptInference`` for the note.

When the composition root hands it ``followups`` (the tag-enriched embedding: with
``FORTEMI_EMBED_CONCEPTS`` on, an ``Embedding`` job for the note), every run that wrote
the note's concepts enqueues them, so the note's vectors follow its concepts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final
from uuid import UUID

from fortemi.graph.events import note_graph_event
from fortemi.graph.tagging.content_type import ContentTypes, FormatContentTypes
from fortemi.graph.tagging.cpu import CpuTagger
from fortemi.graph.tagging.generation import GenerationTagger
from fortemi.graph.tagging.models import MAX_CONCEPTS, Found, TaggingSettings, carried, merged
from fortemi.graph.tagging.related import RELATED_CONCEPT_INFERENCE
from fortemi.graph.tagging.repository import TaggedRepository
from fortemi.graph.vocabulary.models import MAX_LABEL_CHARS, ConceptProposal
from fortemi.graph.vocabulary.service import VocabularyService
from fortemi.inference import GenerationTier, InferenceBackend, InferenceError, outcome_for
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import NotFound
from fortemi.platform.jobs.models import HandlerContext, Job, JobOutcome, JobSpec, JobType, Tier
from fortemi.platform.jobs.service import JobService
from fortemi.platform.notes.models import Note
from fortemi.platform.notes.repository import NoteRepository

__all__ = [
    "CONCEPT_TAGGING",
    "ConceptFollowups",
    "ConceptTaggingEnqueuer",
    "concept_tagging_type",
    "related_spec",
]

CONCEPT_TAGGING: Final = "ConceptTagging"
SOURCE: Final = "ai_auto"
# (memory, note id) → the jobs to enqueue once a note's concepts were written.
ConceptFollowups = Callable[[str, UUID], Sequence[JobSpec]]
# Whether a note's tagging must wait (the documents feature's pending extractions): a
# gated run ends as skipped (``deferred``); what held it back enqueues it again.
TaggingGate = Callable[[Connection, UUID], Awaitable[bool]]
_TIER_NAMES: Final = {Tier.CPU: "cpu", Tier.FAST_GPU: "fast", Tier.STANDARD_GPU: "standard"}


def tagging_spec(memory: str, note_id: UUID) -> JobSpec:
    return JobSpec(
        type=CONCEPT_TAGGING,
        memory=memory,
        payload={"note_id": str(note_id)},
        tier=Tier.CPU,
        dedupe_key=f"{CONCEPT_TAGGING}:{memory}:{note_id}",
    )


def related_spec(memory: str, note_id: UUID) -> JobSpec:
    return JobSpec(
        type=RELATED_CONCEPT_INFERENCE,
        memory=memory,
        payload={"note_id": str(note_id)},
        dedupe_key=f"{RELATED_CONCEPT_INFERENCE}:{memory}:{note_id}",
    )


class ConceptTaggingEnqueuer:
    """The note service's indexer: a ``ConceptTagging`` job per changed note."""

    def __init__(
        self, jobs: JobService, dispatch: Callable[[Sequence[Job]], Awaitable[None]]
    ) -> None:
        self._jobs = jobs
        self._dispatch = dispatch

    async def enqueue(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        if not note_ids:
            return []
        specs = [tagging_spec(memory, note_id) for note_id in dict.fromkeys(note_ids)]
        return [job for job, new in await self._jobs.enqueue_many(conn, specs) if new]

    async def committed(self, pending: Sequence[Any]) -> None:
        jobs = [job for job in pending if isinstance(job, Job)]
        await self._jobs.announce_created(jobs)
        await self._dispatch(jobs)


class _TaggingHandler:
    def __init__(
        self,
        db: Database,
        vocabulary: VocabularyService,
        backend: InferenceBackend,
        settings: TaggingSettings,
        followups: ConceptFollowups | None = None,
        content_types: ContentTypes | None = None,
        gate: TaggingGate | None = None,
    ) -> None:
        self._db = db
        self._gate = gate
        self._followups = followups
        self._content_types = content_types or FormatContentTypes()
        self._vocabulary = vocabulary
        self._backend = backend
        self._settings = settings
        self._cpu = CpuTagger(backend, settings)
        self._generation = GenerationTagger(backend, max_input_chars=settings.max_input_chars)
        self._notes = NoteRepository()
        self._tagged = TaggedRepository()

    async def __call__(self, context: HandlerContext) -> JobOutcome:
        job = context.job
        try:
            note_id = UUID(str(job.payload.get("note_id")))
        except ValueError:
            return JobOutcome.failure("invalid_payload")
        if job.memory is None:
            return JobOutcome.failure("memory_required")
        async with self._db.memory_transaction(job.memory) as conn:
            note = await self._notes.get(conn, note_id)
            deferred = (
                note is not None and self._gate is not None and await self._gate(conn, note_id)
            )
        if note is None or note.deleted_at is not None:
            return JobOutcome.success({"skipped": "note_gone"})
        if deferred:
            return JobOutcome.success({"skipped": "deferred"})
        tier = _TIER_NAMES[job.tier]
        _, prior = carried(job.payload)
        result: dict[str, Any] = {"tier": tier}
        try:
            found = await self._propose(job.tier, job.memory, note, prior, result)
        except InferenceError as exc:
            return outcome_for(exc)
        concepts = merged(prior, found, limit=MAX_CONCEPTS)
        if not await self._write(context, job.memory, note, concepts):
            return JobOutcome.success({**result, "skipped": "superseded"})
        result.update(found=len(found), concepts=len(concepts))
        return await self._next(context, job.memory, note, len(found), concepts, result)

    async def _propose(
        self, tier: Tier, memory: str, note: Note, prior: list[Found], result: dict[str, Any]
    ) -> list[Found]:
        labels = await self._vocabulary.label_index(memory)
        if tier is Tier.CPU:
            kind = await self._content_types.path_of(memory, note)
            return await self._cpu.propose(note.title, note.content, labels, kind)
        if not self._backend.can_generate:
            return []  # configured away since the escalation: _next ends the chain
        level: GenerationTier = "fast" if tier is Tier.FAST_GPU else "standard"
        reading = await self._generation.propose(level, note.title, note.content, labels, prior)
        if reading.problem is not None:
            result["problem"] = reading.problem
        return reading.concepts

    async def _write(
        self, context: HandlerContext, memory: str, note: Note, concepts: list[Found]
    ) -> bool:
        """Attach ``concepts`` as the note's ai_auto concepts, unless the note's text
        changed since it was read (a newer job is queued for the new text)."""
        async with self._db.memory_transaction(memory) as conn:
            key = await self._notes.text_key(conn, note.id)
        if key is None or key[:2] != (note.title, note.content_hash):
            return False
        proposals = [
            ConceptProposal(f.path, f.dimension, f.confidence, f.relevance, f.primary)
            for f in concepts
            if all(_writable(label) for label in f.path)
        ]
        try:
            attached = await self._vocabulary.tag_note(
                memory, note.id, proposals, source=SOURCE, actor=None
            )
        except NotFound:
            return False  # deleted meanwhile
        for spec in self._followups(memory, note.id) if self._followups is not None else ():
            await context.enqueue(spec)
        await context.publish(
            note_graph_event(
                "concepts_changed",
                memory,
                note,
                None,
                {"source": SOURCE, "attached": [str(c.concept_id) for c in attached]},
            )
        )
        return True

    async def _next(
        self,
        context: HandlerContext,
        memory: str,
        note: Note,
        found: int,
        concepts: list[Found],
        result: dict[str, Any],
    ) -> JobOutcome:
        """Escalate when this tier found too little and a higher one exists; else finish
        the chain: mark the note's version tagged (what the backfill sweep reads) and hand
        the note to related-concept inference."""
        tier = context.job.tier
        below = {
            Tier.CPU: self._settings.cpu_escalate_below,
            Tier.FAST_GPU: self._settings.fast_escalate_below,
        }.get(tier)
        if below is not None and found < below:
            if not self._backend.can_generate:
                result["reason"] = "generation_unavailable"
            else:
                carry = {"tier": result["tier"], "concepts": [f.as_json() for f in concepts]}
                successor = await context.escalate("too_few_concepts", carry=carry)
                return JobOutcome.success(
                    {
                        **result,
                        "escalatedTo": str(successor.id),
                        "escalatedTier": successor.tier.value,
                    }
                )
        else:
            result["reason"] = "enough_concepts" if below is not None else "top_tier"
        async with self._db.memory_transaction(memory) as conn:
            await self._tagged.mark(conn, note.id, note.version)
        await context.enqueue(related_spec(memory, note.id))
        return JobOutcome.success(result)


def _writable(label: str) -> bool:
    """A label the vocabulary takes (a model may answer anything within the schema)."""
    return (
        bool(label)
        and label == label.strip()
        and len(label) <= MAX_LABEL_CHARS
        and "\x00" not in label
    )


def concept_tagging_type(
    db: Database,
    vocabulary: VocabularyService,
    backend: InferenceBackend,
    settings: TaggingSettings | None = None,
    *,
    followups: ConceptFollowups | None = None,
    content_types: ContentTypes | None = None,
    gate: TaggingGate | None = None,
) -> JobType:
    """The ``ConceptTagging`` job type: starts on the cpu tier, escalates up (see above);
    after each write of a note's concepts it enqueues ``followups(memory, note id)``. The
    cpu tier names the note's content type with ``content_types`` (default: the note's
    declared format). ``gate`` defers a note's run while it says so (see
    :data:`TaggingGate`)."""
    handler = _TaggingHandler(
        db,
        vocabulary,
        backend,
        settings or TaggingSettings(),
        followups,
        content_types,
        gate,
    )
    return JobType(name=CONCEPT_TAGGING, tier=Tier.CPU, priority=3, handler=handler, max_attempts=5)
