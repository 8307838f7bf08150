"""Fixtures for the tagging tests: the real local embedding model, the Ollama double, and
a way to run one tagging job the way a worker would, recording what it asks of the
platform (escalations, follow-up jobs, events)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from fortemi.graph.tagging.content_type import ContentTypes
from fortemi.graph.tagging.jobs import CONCEPT_TAGGING, concept_tagging_type
from fortemi.graph.tagging.models import TaggingSettings
from fortemi.graph.vocabulary import VocabularyService
from fortemi.inference import InferenceBackend, LocalEmbeddingBackend, OllamaBackend
from fortemi.platform.database import Database
from fortemi.platform.events import Event
from fortemi.platform.jobs.models import (
    NEXT_TIER,
    HandlerContext,
    Job,
    JobOutcome,
    JobSpec,
    JobStatus,
    Tier,
)
from fortemi.platform.notes import NoteDraft, NoteService
from tests.support.ollama_double import OllamaDouble

FAST, STANDARD = "tagger-fast", "tagger-standard"


@pytest.fixture(scope="session")
async def local_backend() -> AsyncIterator[LocalEmbeddingBackend]:
    """The real local embedding model (all-MiniLM-L6-v2 in numpy), loaded once."""
    backend = LocalEmbeddingBackend()
    yield backend
    await backend.aclose()


@pytest.fixture(scope="session")
def ollama_double() -> Iterator[OllamaDouble]:
    with OllamaDouble() as double:
        double.generators |= {FAST, STANDARD}
        yield double


@pytest.fixture
async def ollama(ollama_double: OllamaDouble) -> AsyncIterator[OllamaBackend]:
    """Ollama (the double) with the tagging tests' two generation models, none scripted."""
    ollama_double.replies.clear()
    ollama_double.requests.clear()
    backend = OllamaBackend(
        ollama_double.url, fast_model=FAST, standard_model=STANDARD, timeout_seconds=1.0
    )
    yield backend
    await backend.aclose()
    ollama_double.replies.clear()


@pytest.fixture
def notes(db: Database) -> NoteService:
    return NoteService(db, max_note_bytes=1_048_576, max_page_size=100, max_upsert_batch=100)


@pytest.fixture
def write(notes: NoteService, memory: str) -> Any:
    async def create(title: str, content: str) -> UUID:
        note = await notes.create(memory, NoteDraft(title=title, content=content), actor="test")
        return note.id

    return create


@dataclass
class Run:
    """One handler run: its outcome and what it asked of the platform."""

    outcome: JobOutcome
    escalations: list[tuple[str, Mapping[str, Any] | None]] = field(default_factory=list)
    enqueued: list[JobSpec] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def result(self) -> dict[str, Any]:
        assert self.outcome.kind == "success", self.outcome
        assert self.outcome.result is not None
        return self.outcome.result


def make_job(
    memory: str, note_id: UUID, tier: Tier, payload: Mapping[str, Any] | None = None
) -> Job:
    now = datetime.now(UTC)
    return Job(
        id=uuid4(), memory=memory, type=CONCEPT_TAGGING, tier=tier, priority=3,
        status=JobStatus.RUNNING, payload={"note_id": str(note_id), **dict(payload or {})},
        attempts=1, max_attempts=5, next_attempt_at=now, progress=0, progress_message=None,
        failure_class=None, failure_code=None, result=None,
        dedupe_key=f"{CONCEPT_TAGGING}:{memory}:{note_id}", requested_by=None,
        created_at=now, started_at=now, finished_at=None,
    )  # fmt: skip


async def run_handler(
    db: Database,
    vocabulary: VocabularyService,
    backend: InferenceBackend,
    job: Job,
    settings: TaggingSettings | None = None,
    content_types: ContentTypes | None = None,
) -> Run:
    """Run the ``ConceptTagging`` handler for ``job`` outside a worker; escalation
    answers with a successor job one tier up (the executor's own escalation is tested
    end to end in test_chain)."""
    job_type = concept_tagging_type(db, vocabulary, backend, settings, content_types=content_types)
    run = Run(JobOutcome.success())

    async def progress(percent: int, message: str | None) -> None:
        return None

    async def enqueue(spec: JobSpec) -> Job:
        run.enqueued.append(spec)
        return job

    async def escalate(reason: str, /, *, carry: Mapping[str, Any] | None = None) -> Job:
        run.escalations.append((reason, carry))
        return make_job(job.memory or "", uuid4(), NEXT_TIER[job.tier])

    async def publish(event: Event) -> None:
        run.events.append(event)

    context = HandlerContext(
        job=job, report_progress=progress, enqueue=enqueue, escalate=escalate, publish=publish
    )
    run.outcome = await job_type.handler(context)
    return run
