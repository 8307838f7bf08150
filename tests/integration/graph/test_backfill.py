"""The graph backfill sweep on the real database and local model: notes that never got
their tagging (no finished chain on their latest version) or their links (complete vectors
in the linking set, no note vector there) are found and given the same deduplicated jobs a
change would enqueue; notes not embedded yet are left to embedding; a bounded run resumes
where it stopped; a sweep after the work is done finds nothing; start-up jobs need dedupe
keys and enqueue each sweep once however many workers start."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from fortemi.graph.backfill import (
    GRAPH_BACKFILL,
    GraphBackfill,
    backfill_spec,
    graph_backfill_type,
    startup_specs,
)
from fortemi.graph.linking.jobs import LINKING, linking_job_type
from fortemi.graph.linking.service import NoteLinker
from fortemi.graph.tagging.jobs import CONCEPT_TAGGING
from fortemi.graph.tagging.repository import TaggedRepository
from fortemi.inference import LocalEmbeddingBackend
from fortemi.platform.database import Database
from fortemi.platform.jobs.models import JobSpec, JobType, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.notes import NotePatch, NoteService
from fortemi.retrieval.indexing import Chunking, embedding_job_type
from fortemi.retrieval.service import ChunkVectorService
from tests.integration.graph.conftest import Write, run_job


@pytest.fixture
def backfill(db: Database) -> GraphBackfill:
    return GraphBackfill(db, ChunkVectorService(db))


async def _sweep(backfill: GraphBackfill, memory: str, **payload: Any) -> list[JobSpec]:
    """Run a GraphBackfill job to the end, following its continuations; what it enqueued
    other than its own continuations, in order."""
    enqueued: list[JobSpec] = []
    job_type = graph_backfill_type(backfill)
    todo: list[dict[str, Any]] = [backfill_spec(memory, **payload).payload]
    runs = 0
    while todo:
        runs += 1
        assert runs < 50, "the sweep kept continuing"
        found: list[JobSpec] = []
        outcome = await run_job(job_type, memory, todo.pop(), found)
        assert outcome.kind == "success", outcome
        todo += [spec.payload for spec in found if spec.type == GRAPH_BACKFILL]
        enqueued += [spec for spec in found if spec.type != GRAPH_BACKFILL]
    return enqueued


async def _mark(db: Database, memory: str, note_id: UUID, version: int) -> None:
    async with db.memory_transaction(memory) as conn:
        await TaggedRepository().mark(conn, note_id, version)


async def _embed(db: Database, memory: str, backend: LocalEmbeddingBackend, *ids: UUID) -> None:
    embedding = embedding_job_type(db, backend, Chunking(size=300, overlap=50), tier=Tier.CPU)
    for note_id in ids:
        outcome = await run_job(embedding, memory, {"note_id": str(note_id)})
        assert outcome.kind == "success", outcome


async def test_notes_without_a_finished_tagging_chain_get_a_deduplicated_tagging_job(
    db: Database, backfill: GraphBackfill, memory: str, write: Write
) -> None:
    never, done = await write("never tagged", "a"), await write("tagged", "b")
    await _mark(db, memory, done, 1)

    specs = await _sweep(backfill, memory)

    assert [(s.type, s.payload, s.dedupe_key) for s in specs] == [
        (CONCEPT_TAGGING, {"note_id": str(never)}, f"{CONCEPT_TAGGING}:{memory}:{never}")
    ]
    assert specs[0].tier is Tier.CPU  # the chain starts at the bottom, as a change's does


async def test_a_note_changed_since_its_chain_finished_is_swept_again_and_a_deleted_one_never(
    db: Database, backfill: GraphBackfill, notes: NoteService, memory: str, write: Write
) -> None:
    edited, deleted = await write("edited", "a"), await write("deleted", "b")
    await _mark(db, memory, edited, 1)
    await _mark(db, memory, deleted, 1)
    await notes.update(memory, edited, NotePatch(content="a, edited"), actor="test")
    await notes.delete(memory, deleted, actor="test")
    # A chain finishing late on the old version does not move the mark back.
    await _mark(db, memory, edited, 1)

    specs = await _sweep(backfill, memory)

    assert [s.payload["note_id"] for s in specs] == [str(edited)]
    await _mark(db, memory, edited, 2)
    assert await _sweep(backfill, memory) == []


async def test_a_bounded_sweep_resumes_after_its_last_note_and_covers_every_note(
    backfill: GraphBackfill, memory: str, write: Write
) -> None:
    ids = sorted([await write(f"note {i}", "text") for i in range(7)])

    specs = await _sweep(backfill, memory, limit=3)

    assert [UUID(s.payload["note_id"]) for s in specs] == ids  # each once, in id order


async def test_notes_embedded_but_never_linked_get_a_linking_job_in_the_linking_set(
    db: Database,
    backfill: GraphBackfill,
    local_backend: LocalEmbeddingBackend,
    memory: str,
    write: Write,
) -> None:
    linked = await write("Postgres indexes", "A B-tree index speeds up range queries.")
    unlinked = await write("Vacuum", "Vacuum reclaims space left by dead tuples.")
    not_embedded = await write("Replication", "Streaming replication ships the log.")
    for note_id in (linked, unlinked, not_embedded):
        await _mark(db, memory, note_id, 1)  # tagging is not the point here
    await _embed(db, memory, local_backend, linked, unlinked)
    outcome = await run_job(linking_job_type(NoteLinker(db)), memory, {"note_id": str(linked)}, [])
    assert outcome.kind == "success", outcome

    specs = await _sweep(backfill, memory)

    [spec] = specs
    assert (spec.type, spec.payload["note_id"], spec.dedupe_key) == (
        LINKING,
        str(unlinked),
        f"{LINKING}:{memory}:{unlinked}",
    )
    set_id = spec.payload["set_id"]
    assert set_id == await ChunkVectorService(db).linking_set(memory)

    # Linked now: the next sweep has nothing to do.
    outcome = await run_job(linking_job_type(NoteLinker(db)), memory, spec.payload, [])
    assert outcome.kind == "success", outcome
    assert await _sweep(backfill, memory) == []


async def test_a_finished_tagging_chain_marks_its_note_so_the_sweep_leaves_it(
    db: Database, backfill: GraphBackfill, local_backend: LocalEmbeddingBackend, memory: str,
    write: Write,
) -> None:  # fmt: skip
    from fortemi.graph.vocabulary import VocabularyService
    from tests.integration.graph.tagging.conftest import make_job, run_handler

    note_id = await write("Louvain", "Louvain community detection on a link graph.")
    assert [s.payload["note_id"] for s in await _sweep(backfill, memory)] == [str(note_id)]

    run = await run_handler(
        db, VocabularyService(db), local_backend, make_job(memory, note_id, Tier.CPU)
    )

    assert "reason" in run.result  # the chain finished here
    assert await _sweep(backfill, memory) == []


async def test_start_up_sweeps_are_enqueued_once_however_many_workers_start(
    db: Database, backfill: GraphBackfill, memory: str
) -> None:
    registry = JobRegistry()
    registry.register(graph_backfill_type(backfill))

    async def sweeps() -> list[JobSpec]:
        return startup_specs([memory])

    registry.on_start(sweeps)
    jobs = JobService(db, registry)
    # (The memory fixture's deletion takes its jobs with it: ON DELETE CASCADE.)
    first = await jobs.submit_many(await registry.startup_jobs())
    second = await jobs.submit_many(await registry.startup_jobs())  # another worker
    assert [created for _, created in first] == [True]
    assert [created for _, created in second] == [False]
    assert second[0][0].id == first[0][0].id
    assert (first[0][0].type, first[0][0].priority) == (GRAPH_BACKFILL, 1)


async def test_a_start_up_job_without_a_dedupe_key_is_refused() -> None:
    registry = JobRegistry()

    async def careless() -> list[JobSpec]:
        return [JobSpec(type="Anything", memory="m")]

    registry.on_start(careless)
    with pytest.raises(ValueError, match="dedupe key"):
        await registry.startup_jobs()


async def test_a_malformed_cursor_fails_the_sweep_for_good(
    backfill: GraphBackfill, memory: str
) -> None:
    job_type: JobType = graph_backfill_type(backfill)
    outcome = await run_job(job_type, memory, {"limit": 10, "taggingAfter": "nope"})
    assert (outcome.kind, outcome.failure_code) == ("failure", "invalid_payload")
    outcome = await run_job(job_type, memory, {"limit": 0})
    assert (outcome.kind, outcome.failure_code) == ("failure", "invalid_payload")
