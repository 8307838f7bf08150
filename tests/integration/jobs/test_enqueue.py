"""Enqueueing: in the caller's transaction, defaults from the registry, one pending job
per dedupe key however many transactions race for it."""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Any

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.jobs.models import Job, JobOutcome, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations
from tests.integration.jobs.helpers import (
    CPU,
    FAST,
    MEMORIES,
    WORKER,
    count,
    row,
    spec,
)


class _Rollback(Exception):
    pass


async def test_a_job_enqueued_in_a_rolled_back_transaction_does_not_exist(
    jobs: JobService, jobs_db: Database
) -> None:
    async with jobs_db.connection() as conn:
        transaction = conn.transaction()
        await transaction.start()
        job, created = await jobs.enqueue(conn, spec(dedupe_key="rolled-back"))
        assert created
        assert await jobs.get(job.id) is None  # not visible before commit either
        await transaction.rollback()
    assert await jobs.get(job.id) is None
    assert await count(jobs_db) == 0


@pytest.mark.parametrize("commit", [True, False], ids=["committed", "rolled-back"])
async def test_a_job_enqueued_in_a_memory_transaction_shares_its_fate(
    jobs: JobService, jobs_db: Database, commit: bool
) -> None:
    memory = MEMORIES[0]
    enqueued: list[Job] = []

    async def change_memory() -> None:
        async with jobs_db.memory_transaction(memory) as conn:
            enqueued.append((await jobs.enqueue(conn, spec(memory=memory)))[0])
            if not commit:
                raise _Rollback

    with contextlib.nullcontext() if commit else pytest.raises(_Rollback):
        await change_memory()
    assert (await jobs.get(enqueued[0].id) is not None) is commit


async def test_a_new_job_is_pending_unsent_and_has_its_types_defaults(
    jobs: JobService, jobs_db: Database
) -> None:
    job, created = await jobs.submit(spec(FAST, memory=MEMORIES[0], payload={"note": "n1"}))
    assert created
    assert (job.type, job.tier, job.priority, job.max_attempts) == (FAST, Tier.FAST_GPU, 5, 3)
    assert (job.status, job.attempts, job.progress) == (JobStatus.PENDING, 0, 0)
    assert (job.memory, job.payload) == (MEMORIES[0], {"note": "n1"})
    assert job.next_attempt_at == job.created_at
    stored = await row(jobs_db, job.id)
    assert stored["enqueued_at"] is None
    assert stored["lease_owner"] is None


async def test_a_spec_overrides_its_types_tier_priority_and_attempts(jobs: JobService) -> None:
    job, _ = await jobs.submit(
        spec(CPU, tier=Tier.STANDARD_GPU, priority=9, max_attempts=7, requested_by="alice")
    )
    assert (job.tier, job.priority, job.max_attempts) == (Tier.STANDARD_GPU, 9, 7)
    assert job.requested_by == "alice"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"job_type": "no.such.type"}, "type"),
        ({"priority": 0}, "priority"),
        ({"priority": 11}, "priority"),
        ({"priority": True}, "priority"),
        ({"tier": "gpu"}, "tier"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"payload": {"x": math.nan}}, "payload"),
        ({"payload": {"x": {1, 2}}}, "payload"),
        ({"payload": ["not", "an", "object"]}, "payload"),
        ({"dedupe_key": ""}, "dedupe_key"),
        ({"dedupe_key": "k" * 401}, "dedupe_key"),
        ({"memory": "Not A Name"}, "name"),
    ],
)
async def test_an_invalid_spec_is_bad_user_input_and_writes_nothing(
    jobs: JobService, jobs_db: Database, fields: dict[str, Any], field: str
) -> None:
    job_type = fields.pop("job_type", CPU)
    with pytest.raises(BadUserInput) as caught:
        await jobs.submit(spec(job_type, **fields))
    assert caught.value.extensions["field"] == field
    assert await count(jobs_db) == 0


async def test_a_job_for_an_unknown_memory_is_not_found(jobs: JobService) -> None:
    with pytest.raises(NotFound, match="no_such_memory"):
        await jobs.submit(spec(memory="no_such_memory"))


async def test_a_pending_dedupe_key_returns_the_existing_job_and_writes_nothing(
    jobs: JobService, jobs_db: Database
) -> None:
    first, created = await jobs.submit(spec(dedupe_key="embed:n1", payload={"v": 1}))
    again, created_again = await jobs.submit(spec(dedupe_key="embed:n1", payload={"v": 2}))
    assert (created, created_again) == (True, False)
    assert again == first
    assert await count(jobs_db) == 1


async def test_twenty_concurrent_enqueues_of_one_dedupe_key_make_one_job(
    jobs: JobService, jobs_db: Database
) -> None:
    results = await asyncio.gather(*(jobs.submit(spec(dedupe_key="race")) for _ in range(20)))
    assert sorted(created for _, created in results) == [False] * 19 + [True]
    assert len({job.id for job, _ in results}) == 1
    assert await count(jobs_db, "dedupe_key = $1", "race") == 1


async def test_concurrent_transactions_enqueueing_one_key_wait_and_share_the_job(
    jobs: JobService, jobs_db: Database
) -> None:
    # The first transaction holds its new row uncommitted while the others enqueue.
    inserted, release = asyncio.Event(), asyncio.Event()

    async def first() -> tuple[Any, bool]:
        async with jobs_db.shared_transaction() as conn:
            result = await jobs.enqueue(conn, spec(dedupe_key="held"))
            inserted.set()
            await release.wait()
            return result

    async def later() -> tuple[Any, bool]:
        await inserted.wait()
        return await jobs.submit(spec(dedupe_key="held"))

    holder = asyncio.create_task(first())
    others = [asyncio.create_task(later()) for _ in range(5)]
    await inserted.wait()
    # Until the holder commits, each other insert must wait on its row, not pass it by.
    while await _waiting_on_locks(jobs_db) < 5:
        assert not any(task.done() for task in others), "an enqueue did not wait"
        await asyncio.sleep(0.01)
    release.set()
    (job, created), *rest = await asyncio.gather(holder, *others)
    assert created
    assert all(other == job and not other_created for other, other_created in rest)
    assert await count(jobs_db) == 1


async def _waiting_on_locks(db: Database) -> int:
    value = await db.fetchval(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    assert isinstance(value, int)
    return value


@pytest.mark.parametrize("state", ["running", "completed"])
async def test_a_dedupe_key_is_free_again_once_its_job_left_pending(
    jobs: JobService, jobs_db: Database, state: str
) -> None:
    first, _ = await jobs.submit(spec(dedupe_key="embed:n2"))
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == first.id
    if state == "completed":
        await jobs.finish(first.id, WORKER, JobOutcome.success())
    second, created = await jobs.submit(spec(dedupe_key="embed:n2"))
    assert created
    assert second.id != first.id
    assert await count(jobs_db, "dedupe_key = $1", "embed:n2") == 2


async def test_jobs_without_a_dedupe_key_are_never_merged(
    jobs: JobService, jobs_db: Database
) -> None:
    await asyncio.gather(*(jobs.submit(spec()) for _ in range(3)))
    assert await count(jobs_db) == 3


async def test_deleting_a_memory_deletes_its_jobs(jobs: JobService, jobs_db: Database) -> None:
    memories = MemoryService(jobs_db, Migrations())
    await memories.create("jobs_doomed", created_by="job-tests")
    job, _ = await jobs.submit(spec(memory="jobs_doomed"))
    await memories.delete("jobs_doomed", confirm="jobs_doomed")
    assert await jobs.get(job.id) is None


async def test_a_batch_enqueue_keeps_order_and_dedupes_against_pending_jobs_and_itself(
    jobs: JobService, jobs_db: Database
) -> None:
    held, _ = await jobs.submit(spec(dedupe_key="batch:held"))
    async with jobs_db.shared_transaction() as conn:
        results = await jobs.enqueue_many(
            conn,
            [
                spec(dedupe_key="batch:a", payload={"n": 1}),
                spec(dedupe_key="batch:held"),
                spec(payload={"n": 3}),
                spec(dedupe_key="batch:a", payload={"n": 4}),
                spec(dedupe_key="batch:b", priority=9),
            ],
        )
    (a, a_new), (again, again_new), (plain, plain_new), (a2, a2_new), (b, b_new) = results
    assert (a_new, again_new, plain_new, a2_new, b_new) == (True, False, True, False, True)
    assert again == held
    assert a2 == a
    assert a.payload == {"n": 1}
    assert (plain.payload, plain.dedupe_key) == ({"n": 3}, None)
    assert (b.priority, b.tier) == (9, Tier.CPU)
    assert await count(jobs_db) == 4
    stored = await jobs.get(b.id)
    assert stored == b


async def test_a_batch_enqueue_for_an_unknown_memory_is_not_found_and_writes_nothing(
    jobs: JobService, jobs_db: Database
) -> None:
    with pytest.raises(NotFound, match="no_such_memory"):
        async with jobs_db.shared_transaction() as conn:
            await jobs.enqueue_many(conn, [spec(memory="no_such_memory"), spec(memory=None)])
    assert await count(jobs_db) == 0
