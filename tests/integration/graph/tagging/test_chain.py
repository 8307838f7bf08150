"""The tagging chain end to end through the real job platform: notes enqueue tagging in
their transaction, the executor runs each tier, escalation carries the lower tiers'
concepts up (cpu → fast_gpu → standard_gpu), and the chain ends in related-concept
inference; without a generation backend it ends at once as generation_unavailable.

These tests own a database: the executor claims any runnable job, and must not take
another test's."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from dramatiq.brokers.redis import RedisBroker

from fortemi.graph.tagging.jobs import CONCEPT_TAGGING, ConceptTaggingEnqueuer, concept_tagging_type
from fortemi.graph.tagging.related import (
    RELATED_CONCEPT_INFERENCE,
    related_concept_inference_type,
)
from fortemi.graph.vocabulary import VocabularyService
from fortemi.inference import InferenceBackend, LocalEmbeddingBackend, OllamaBackend
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.jobs.models import Job, JobStatus, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService
from fortemi.workers.broker import build_broker
from fortemi.workers.dispatch import JobDispatcher, dispatch
from fortemi.workers.executor import JobExecutor
from tests.integration.graph.tagging.conftest import FAST, STANDARD
from tests.support.ollama_double import OllamaDouble

_names = iter(range(1_000_000))


@pytest.fixture(scope="module")
async def chain_db(db: Database, service_urls: ServiceUrls) -> AsyncIterator[Database]:
    name = f"tagging_{uuid.uuid4().hex[:12]}"
    async with db.connection() as conn:
        await conn.execute(f'CREATE DATABASE "{name}"')
    dsn = urlunsplit(urlsplit(service_urls.database)._replace(path=f"/{name}"))
    database = await Database.connect(dsn, min_size=1, max_size=8)
    try:
        await Migrations().migrate_shared(database)
        yield database
    finally:
        await database.close()
        async with db.connection() as conn:
            await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def broker(service_urls: ServiceUrls) -> Iterator[RedisBroker]:
    built = build_broker(service_urls.redis, namespace=f"fortemi-test-{uuid.uuid4().hex[:8]}")
    yield built
    built.flush_all()
    built.close()


@dataclass
class Platform:
    """A job service, an executor serving every tier, and notes that enqueue tagging."""

    db: Database
    jobs: JobService
    executor: JobExecutor
    notes: NoteService
    vocabulary: VocabularyService

    async def drain(self) -> list[Job]:
        """Claim and run jobs until none is runnable; the jobs as finished, in order."""
        finished: list[Job] = []
        for run in range(20):  # a chain is at most 4 jobs; more would be a loop
            job = await self.jobs.claim(list(Tier), f"w/{run}")
            if job is None:
                return finished
            done = await self.executor.run(job, f"w/{run}")
            assert done is not None
            finished.append(done)
        raise AssertionError(f"jobs kept coming: {[(j.type, j.tier) for j in finished]}")


def _platform(chain_db: Database, broker: RedisBroker, backend: InferenceBackend) -> Platform:
    vocabulary = VocabularyService(chain_db)
    registry = JobRegistry()
    registry.register(concept_tagging_type(chain_db, vocabulary, backend))
    registry.register(related_concept_inference_type(chain_db, vocabulary))
    jobs = JobService(chain_db, registry)
    dispatcher = JobDispatcher(broker)

    async def wake(created: Sequence[Job]) -> None:
        await dispatch(jobs, dispatcher, created)

    notes = NoteService(
        chain_db,
        max_note_bytes=100_000,
        max_page_size=100,
        max_upsert_batch=100,
        indexers=[ConceptTaggingEnqueuer(jobs, wake)],
    )
    executor = JobExecutor(
        jobs, registry, dispatcher, tiers=list(Tier), worker_id="tagging-test", lease_seconds=60
    )
    return Platform(chain_db, jobs, executor, notes, vocabulary)


@pytest.fixture
async def memory(chain_db: Database) -> AsyncIterator[str]:
    """A fresh memory in the tests' database, and no job left from another test."""
    async with chain_db.connection() as conn:
        await conn.execute("TRUNCATE public.job")
    memories = MemoryService(chain_db, Migrations())
    name = f"chain_{next(_names)}"
    await memories.create(name, created_by="test")
    yield name
    await memories.delete(name, confirm=name)


def _answer(*concepts: tuple[str, str]) -> str:
    return json.dumps(
        {
            "concepts": [
                {"path": path.split("/"), "dimension": dim, "confidence": 0.9 - i / 100,
                 "relevance": 0.8, "primary": i == 0}
                for i, (path, dim) in enumerate(concepts)
            ]
        }
    )  # fmt: skip


async def test_a_new_note_runs_cpu_then_fast_then_standard_and_then_related_inference(
    chain_db: Database, broker: RedisBroker, ollama_double: OllamaDouble, memory: str
) -> None:
    ollama_double.replies[FAST] = _answer(("search/rank fusion", "technique"))
    ollama_double.replies[STANDARD] = _answer(
        ("information retrieval", "domain"),
        ("search/hybrid search", "topic"),
        ("evaluation", "methodology"),
        ("enterprise search", "application"),
        ("tutorial", "content_type"),
    )
    backend = OllamaBackend(ollama_double.url, fast_model=FAST, standard_model=STANDARD)
    platform = _platform(chain_db, broker, backend)
    try:
        note = await platform.notes.create(
            memory, NoteDraft(title="RRF", content="Fusing rankings."), actor="test"
        )
        finished = await platform.drain()
    finally:
        await backend.aclose()
        ollama_double.replies.clear()

    assert [(j.type, j.tier, j.status) for j in finished] == [
        (CONCEPT_TAGGING, Tier.CPU, JobStatus.COMPLETED),
        (CONCEPT_TAGGING, Tier.FAST_GPU, JobStatus.COMPLETED),
        (CONCEPT_TAGGING, Tier.STANDARD_GPU, JobStatus.COMPLETED),
        (RELATED_CONCEPT_INFERENCE, Tier.CPU, JobStatus.COMPLETED),
    ]
    cpu, fast, standard, related = finished
    assert cpu.dedupe_key == f"{CONCEPT_TAGGING}:{memory}:{note.id}"
    assert cpu.result is not None
    assert cpu.result["escalatedTo"] == str(fast.id)
    assert fast.payload["escalation"]["fromTier"] == "cpu"
    escalation = standard.payload["escalation"]
    assert escalation["path"] == ["cpu", "fast_gpu"]
    assert escalation["origin"] == str(cpu.id)
    assert escalation["carried"]["tier"] == "fast"
    # The cpu tier's content type (the note's format) travels up with the fast tier's find.
    assert [c["path"] for c in escalation["carried"]["concepts"]] == [
        ["search", "rank fusion"],
        ["text", "Markdown"],
    ]
    assert standard.result is not None
    assert (standard.result["reason"], standard.result["concepts"]) == ("top_tier", 7)

    concepts = (await platform.vocabulary.note_concepts(memory, [note.id]))[note.id]
    assert {c.label for c in concepts} == {
        "rank fusion", "information retrieval", "hybrid search", "evaluation",
        "enterprise search", "tutorial", "Markdown",
    }  # fmt: skip
    assert {c.source for c in concepts} == {"ai_auto"}
    # One note: every cross-dimension pair co-occurs on all notes (NPMI 1), seen once (x 1/2).
    assert related.result is not None
    assert related.result["related"] == related.result["pairs"] > 0
    rows = await _related(chain_db, memory)
    assert rows
    assert {(r["created_by"], r["confidence"]) for r in rows} == {("RelatedConceptInference", 0.5)}
    current = await platform.notes.get(memory, note.id)
    assert current is not None
    assert current.version == 1


async def test_without_a_generation_backend_the_chain_ends_on_the_cpu_tier_and_relates_its_concepts(
    chain_db: Database, broker: RedisBroker, local_backend: LocalEmbeddingBackend, memory: str
) -> None:
    platform = _platform(chain_db, broker, local_backend)
    note = await platform.notes.create(
        memory, NoteDraft(title="Louvain", content="resolution"), actor="test"
    )
    finished = await platform.drain()

    assert [(j.type, j.tier) for j in finished] == [
        (CONCEPT_TAGGING, Tier.CPU),
        (RELATED_CONCEPT_INFERENCE, Tier.CPU),
    ]
    tagging, related = finished
    assert tagging.result is not None
    assert tagging.result["reason"] == "generation_unavailable"
    assert "escalatedTo" not in tagging.result
    concepts = (await platform.vocabulary.note_concepts(memory, [note.id]))[note.id]
    # Every cpu concept has a dimension, the note's format among them as its content type,
    # so related-concept inference has pairs to weigh on a CPU-only install.
    assert all(c.dimension is not None for c in concepts)
    assert ("Markdown", "content_type") in {(c.label, c.dimension) for c in concepts}
    assert len({c.dimension for c in concepts}) >= 2
    assert related.result is not None
    assert related.result["pairs"] > 0
    assert related.result["related"] > 0
    assert {r["created_by"] for r in await _related(chain_db, memory)} == {
        "RelatedConceptInference"
    }


async def test_edits_while_a_tagging_job_waits_make_one_job(
    chain_db: Database, broker: RedisBroker, local_backend: LocalEmbeddingBackend, memory: str
) -> None:
    platform = _platform(chain_db, broker, local_backend)
    note = await platform.notes.create(memory, NoteDraft(title="a", content="b"), actor="t")
    for text in ("c", "d"):
        await platform.notes.update(memory, note.id, NotePatch(content=text), actor="t")
    pending = await chain_db.fetchval(
        "SELECT count(*) FROM public.job WHERE type = $1 AND status = 'pending'", CONCEPT_TAGGING
    )
    assert pending == 1


async def _related(db: Database, memory: str) -> list[Any]:
    async with db.memory_transaction(memory) as conn:
        return list(
            await conn.fetch(
                "SELECT created_by, confidence FROM concept_relation WHERE kind = 'related'"
            )
        )
