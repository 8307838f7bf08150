"""Fixtures for graph tests: notes written through the note service (plain, or with the
indexer that maps path tags to concepts), the vocabulary service, the real local
embedding model, and job handlers run as a worker would run them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from fortemi.graph.vocabulary import VocabularyService
from fortemi.graph.vocabulary.indexer import PathTagIndexer
from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.events import Event
from fortemi.platform.jobs.models import (
    HandlerContext,
    Job,
    JobOutcome,
    JobSpec,
    JobStatus,
    JobType,
    Tier,
)
from fortemi.platform.notes import NoteDraft, NoteService

Write = Callable[..., Awaitable[UUID]]


@pytest.fixture(scope="session")
def vocabulary(db: Database) -> VocabularyService:
    return VocabularyService(db)


@pytest.fixture(scope="session")
def tagged_notes(db: Database, vocabulary: VocabularyService) -> NoteService:
    return NoteService(
        db,
        max_note_bytes=100_000,
        max_page_size=100,
        max_upsert_batch=100,
        indexers=[PathTagIndexer(vocabulary)],
    )


@pytest.fixture
def notes(db: Database) -> NoteService:
    return NoteService(db, max_note_bytes=1_048_576, max_page_size=100, max_upsert_batch=500)


@pytest.fixture
def write(notes: NoteService, memory: str) -> Write:
    async def create(title: str = "", content: str = "", **fields: Any) -> UUID:
        note = await notes.create(
            memory, NoteDraft(title=title, content=content, **fields), actor="test"
        )
        return note.id

    return create


@pytest.fixture(scope="session")
async def local_backend() -> AsyncIterator[LocalEmbeddingBackend]:
    backend = LocalEmbeddingBackend()
    yield backend
    await backend.aclose()


async def run_job(
    job_type: JobType,
    memory: str,
    payload: dict[str, Any],
    enqueued: list[JobSpec] | None = None,
    published: list[Event] | None = None,
) -> JobOutcome:
    """Run ``job_type``'s handler as a worker would; specs it enqueues go to ``enqueued``
    (None: enqueueing is a test failure), events it publishes to ``published``."""
    now = datetime.now(UTC)
    job = Job(
        id=uuid4(), memory=memory, type=job_type.name, tier=Tier.CPU, priority=4,
        status=JobStatus.RUNNING, payload=payload, attempts=1, max_attempts=5,
        next_attempt_at=now, progress=0, progress_message=None, failure_class=None,
        failure_code=None, result=None, dedupe_key=None, requested_by="test",
        created_at=now, started_at=now, finished_at=None,
    )  # fmt: skip

    async def progress(percent: int, message: str | None) -> None:
        return None

    async def enqueue(spec: JobSpec) -> Job:
        if enqueued is None:
            raise AssertionError(f"{job_type.name} enqueued {spec.type} unexpectedly")
        enqueued.append(spec)
        return job

    async def refuse(*_: Any, **__: Any) -> Job:
        raise AssertionError("no escalation expected")

    async def publish(event: Event) -> None:
        if published is not None:
            published.append(event)

    context = HandlerContext(
        job=job, report_progress=progress, enqueue=enqueue, escalate=refuse, publish=publish
    )
    return await job_type.handler(context)
