"""The built-in PurgeNote job, run by a worker against a real memory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import UUID, uuid4

import pytest
import redis.asyncio as redis

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import Event, EventBus
from fortemi.platform.ids import to_global_id
from fortemi.platform.jobs.models import FailureClass, JobStatus
from fortemi.platform.notes import NoteDraft, NoteService
from fortemi.platform.notes.jobs import PURGE_NOTE
from tests.integration.workers.runtime.conftest import Jobs, Pools
from tests.integration.workers.runtime.jobtypes import MAX_NOTE_BYTES


@pytest.fixture
def notes(runtime_db: Database) -> NoteService:
    return NoteService(
        runtime_db, max_note_bytes=MAX_NOTE_BYTES, max_page_size=50, max_upsert_batch=10
    )


@pytest.fixture
async def bus(service_urls: ServiceUrls) -> AsyncIterator[EventBus]:
    client = redis.Redis.from_url(service_urls.redis)
    yield EventBus(client, block_ms=100)
    await client.aclose()


async def _note(
    notes: NoteService, memory: str, *, deleted: bool, title: str = "t", project: str | None = None
) -> UUID:
    draft = NoteDraft(title=title, content="c", project=project)
    note = await notes.create(memory, draft, actor="test")
    if deleted:
        await notes.delete(memory, note.id, actor="test")
    return note.id


async def test_purge_note_job_purges_deleted_notes_and_skips_live_ones(
    jobs: Jobs, pools: Pools, notes: NoteService, runtime_memory: str
) -> None:
    deleted = [await _note(notes, runtime_memory, deleted=True) for _ in range(2)]
    live = await _note(notes, runtime_memory, deleted=False)
    never = uuid4()  # already gone counts as done
    ids = [str(deleted[0]), str(live), str(never), str(deleted[1])]
    await pools.start()

    job = await jobs.submit(PURGE_NOTE, memory=runtime_memory, payload={"note_ids": ids})

    done = await jobs.reach(job.id, JobStatus.COMPLETED)
    assert done.result == {
        "purged": [str(deleted[0]), str(never), str(deleted[1])],
        "skipped_not_deleted": [str(live)],
    }
    assert [await notes.get(runtime_memory, i) for i in deleted] == [None, None]
    assert await notes.get(runtime_memory, live) is not None


async def test_purge_note_job_run_again_leaves_the_same_state(
    jobs: Jobs, pools: Pools, notes: NoteService, runtime_memory: str
) -> None:
    deleted = await _note(notes, runtime_memory, deleted=True)
    live = await _note(notes, runtime_memory, deleted=False)
    payload = {"note_ids": [str(deleted), str(live)]}
    await pools.start()

    first = await jobs.submit(PURGE_NOTE, memory=runtime_memory, payload=payload)
    first_done = await jobs.reach(first.id, JobStatus.COMPLETED)
    again = await jobs.submit(PURGE_NOTE, memory=runtime_memory, payload=payload)
    again_done = await jobs.reach(again.id, JobStatus.COMPLETED)

    assert again_done.result == first_done.result
    assert await notes.get(runtime_memory, deleted) is None
    still = await notes.get(runtime_memory, live)
    assert still is not None
    assert still.deleted_at is None


@pytest.mark.parametrize(
    "payload",
    [{}, {"note_ids": "not-a-list"}, {"note_ids": ["not-a-uuid"]}, {"note_ids": [7]}],
)
async def test_purge_note_job_with_a_malformed_payload_fails_for_good(
    jobs: Jobs, pools: Pools, runtime_memory: str, payload: dict[str, object]
) -> None:
    await pools.start()
    job = await jobs.submit(PURGE_NOTE, memory=runtime_memory, payload=payload)

    failed = await jobs.reach(job.id, JobStatus.FAILED)
    assert (failed.failure_class, failed.failure_code) == (
        FailureClass.PERMANENT,
        "invalid_payload",
    )
    assert failed.attempts == 1


async def test_purge_note_job_without_a_memory_fails_for_good(jobs: Jobs, pools: Pools) -> None:
    await pools.start()
    job = await jobs.submit(PURGE_NOTE, payload={"note_ids": [str(uuid4())]})

    failed = await jobs.reach(job.id, JobStatus.FAILED)
    assert failed.failure_code == "memory_required"


async def _note_events(bus: EventBus, after: str, count: int) -> list[Event]:
    seen: list[Event] = []
    stream = bus.subscribe(after=after)
    try:
        async with asyncio.timeout(30):
            async for event in stream:
                if event.entity_type == "note":
                    seen.append(event)
                    if len(seen) == count:
                        return seen
    except TimeoutError:
        pytest.fail(f"{count} note events expected within 30 s; saw {[e.type for e in seen]}")
    finally:
        await stream.aclose()
    raise AssertionError("the event stream ended")


async def test_purge_note_job_announces_note_purged_for_each_note_it_removes(
    jobs: Jobs,
    pools: Pools,
    notes: NoteService,
    runtime_memory: str,
    bus: EventBus,
    service_urls: ServiceUrls,
) -> None:
    first = await _note(notes, runtime_memory, deleted=True, title="Alpha", project="p1")
    second = await _note(notes, runtime_memory, deleted=True, title="Beta")
    live = await _note(notes, runtime_memory, deleted=False)
    await pools.start(redis_url=service_urls.redis)
    mark = await bus.publish(Event(type="test.mark", entity_type="test", entity_id="mark"))

    job = await jobs.submit(
        PURGE_NOTE,
        memory=runtime_memory,
        payload={"note_ids": [str(first), str(live), str(uuid4()), str(second)]},
        requested_by="carol",
    )

    events = await _note_events(bus, mark, 2)
    await jobs.reach(job.id, JobStatus.COMPLETED)
    assert [(e.type, e.entity_id) for e in events] == [
        ("note.purged", to_global_id("Note", first)),
        ("note.purged", to_global_id("Note", second)),
    ]
    assert [(e.payload["title"], e.payload["project"]) for e in events] == [
        ("Alpha", "p1"),
        ("Beta", None),
    ]
    assert {(e.memory, e.actor, e.correlation_id) for e in events} == {
        (runtime_memory, "carol", to_global_id("Job", job.id))
    }
