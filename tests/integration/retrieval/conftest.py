"""Fixtures for retrieval tests: notes written through the note service, searched through
the search service, on the session's real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

import pytest

from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.events import Event
from fortemi.platform.jobs.models import (
    HandlerContext,
    Job,
    JobOutcome,
    JobStatus,
    JobType,
    Tier,
)
from fortemi.platform.notes import NoteDraft, NoteService
from fortemi.retrieval.indexing import EMBEDDING, Chunking, embedding_job_type
from fortemi.retrieval.search import Scope, SearchOutcome, SearchRequest, SearchService

Write = Callable[..., Awaitable[UUID]]
Search = Callable[..., Awaitable[SearchOutcome]]


@pytest.fixture
def notes(db: Database) -> NoteService:
    return NoteService(db, max_note_bytes=1_048_576, max_page_size=100, max_upsert_batch=500)


@pytest.fixture(params=["statements", "segment", "delta"])
async def lexical(
    request: pytest.FixtureRequest, db: Database, memory: str
) -> AsyncIterator[SearchService]:
    """Search with no embedding model: the lexical leg alone, by each of its sources.
    ``statements``: no segment (the pruned and exhaustive statements); ``segment``: a
    segment built at the first search, so later writes come from the delta; ``delta``: a
    segment built before anything is written, so every note comes from the delta."""
    budget = 0 if request.param == "statements" else 1_000_000
    service = SearchService(db, None, segment_postings=budget)
    if request.param == "delta":
        assert await service.segments.ready(memory) is not None
    yield service
    await service.close()


@pytest.fixture
def write(notes: NoteService, memory: str) -> Write:
    async def create(title: str = "", content: str = "", **fields: Any) -> UUID:
        note = await notes.create(
            memory, NoteDraft(title=title, content=content, **fields), actor="test"
        )
        return note.id

    return create


@pytest.fixture
def search(lexical: SearchService, memory: str) -> Search:
    async def run(query: str, **fields: Any) -> SearchOutcome:
        fields.setdefault("mode", "lexical")
        await lexical.segments.ready(memory)  # None without a budget: the statements answer
        return await lexical.search([Scope(memory, None)], SearchRequest(query=query, **fields))

    return run


@pytest.fixture(scope="session")
async def local_backend() -> AsyncIterator[LocalEmbeddingBackend]:
    """The real local embedding model (all-MiniLM-L6-v2 in numpy), loaded once."""
    backend = LocalEmbeddingBackend()
    yield backend
    await backend.aclose()


@pytest.fixture
def hybrid(db: Database, local_backend: LocalEmbeddingBackend) -> SearchService:
    return SearchService(db, local_backend)


Index = Callable[[UUID], Awaitable[JobOutcome]]


async def run_embedding(job_type: JobType, memory: str, note_id: UUID) -> JobOutcome:
    """Run ``job_type``'s handler for a note, as a worker would, without the worker (the
    job machinery is tested on its own; here it would only stand between test and
    handler)."""
    now = datetime.now(UTC)
    job = Job(
        id=uuid4(), memory=memory, type=EMBEDDING, tier=Tier.CPU, priority=4,
        status=JobStatus.RUNNING, payload={"note_id": str(note_id)}, attempts=1,
        max_attempts=8, next_attempt_at=now, progress=0, progress_message=None,
        failure_class=None, failure_code=None, result=None, dedupe_key=None,
        requested_by=None, created_at=now, started_at=now, finished_at=None,
    )  # fmt: skip

    async def progress(percent: int, message: str | None) -> None:
        return None

    async def refuse(*_: Any, **__: Any) -> Job:
        raise AssertionError("the Embedding job enqueues nothing")

    async def no_events(event: Event) -> None:
        raise AssertionError("the Embedding job publishes no domain event")

    context = HandlerContext(
        job=job, report_progress=progress, enqueue=refuse, escalate=refuse, publish=no_events
    )
    return await job_type.handler(context)


@pytest.fixture
def index(db: Database, local_backend: LocalEmbeddingBackend, memory: str) -> Index:
    """Run the real ``Embedding`` job handler for a note."""
    job_type = embedding_job_type(db, local_backend, Chunking(size=300, overlap=50), tier=Tier.CPU)

    async def run(note_id: UUID) -> JobOutcome:
        return await run_embedding(job_type, memory, note_id)

    return run


@pytest.fixture
def find(hybrid: SearchService, memory: str) -> Search:
    async def run(query: str, **fields: Any) -> SearchOutcome:
        return await hybrid.search([Scope(memory, None)], SearchRequest(query=query, **fields))

    return run
