"""Claiming: the best runnable job of the first tier that has one, under a lease, never
the same job twice, and nothing from a paused memory."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.jobs.models import FailureClass, JobOutcome, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from tests.integration.jobs.helpers import (
    FAST,
    LEASE_SECONDS,
    MEMORIES,
    STANDARD,
    WORKER,
    count,
    row,
    shift,
    spec,
)

ALPHA, BETA = MEMORIES


async def test_claim_takes_priority_9_before_an_earlier_priority_2(jobs: JobService) -> None:
    await jobs.submit(spec(priority=2))
    urgent, _ = await jobs.submit(spec(priority=9))
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == urgent.id


async def test_claim_takes_the_oldest_job_within_a_priority(jobs: JobService) -> None:
    older, _ = await jobs.submit(spec())
    await jobs.submit(spec())
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == older.id


async def test_claim_drains_the_first_tier_given_before_the_next(jobs: JobService) -> None:
    standard, _ = await jobs.submit(spec(STANDARD, priority=10))
    fast, _ = await jobs.submit(spec(FAST, priority=1))
    first = await jobs.claim([Tier.FAST_GPU, Tier.STANDARD_GPU], WORKER)
    second = await jobs.claim([Tier.FAST_GPU, Tier.STANDARD_GPU], WORKER)
    assert first is not None
    assert second is not None
    assert (first.id, second.id) == (fast.id, standard.id)


async def test_claim_never_takes_a_job_of_a_tier_it_did_not_ask_for(jobs: JobService) -> None:
    await jobs.submit(spec(FAST))
    await jobs.submit(spec(STANDARD))
    assert await jobs.claim([Tier.CPU], WORKER) is None
    assert await jobs.claim([], WORKER) is None


async def test_claim_waits_for_next_attempt_at(jobs: JobService, jobs_db: Database) -> None:
    job, _ = await jobs.submit(spec())
    await shift(jobs_db, job.id, "next_attempt_at", 3600)
    assert await jobs.claim([Tier.CPU], WORKER) is None
    await shift(jobs_db, job.id, "next_attempt_at", -1)
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == job.id


async def test_a_claimed_job_runs_under_the_workers_lease(
    jobs: JobService, jobs_db: Database
) -> None:
    job, _ = await jobs.submit(spec())
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert (claimed.status, claimed.attempts) == (JobStatus.RUNNING, 1)
    assert claimed.started_at is not None
    stored = await row(jobs_db, job.id)
    assert stored["lease_owner"] == WORKER
    assert stored["lease_expires_at"] - stored["started_at"] == timedelta(seconds=LEASE_SECONDS)


async def test_a_second_attempt_counts_but_keeps_the_first_start(jobs: JobService) -> None:
    job, _ = await jobs.submit(spec())
    first = await jobs.claim([Tier.CPU], WORKER)
    assert first is not None
    retry = JobOutcome.retry(FailureClass.TRANSIENT, "flaky", after_seconds=0)
    await jobs.finish(job.id, WORKER, retry)
    second = await jobs.claim([Tier.CPU], "worker-2")
    assert second is not None
    assert (second.id, second.attempts, second.started_at) == (job.id, 2, first.started_at)


async def test_claim_returns_none_when_nothing_is_pending(jobs: JobService) -> None:
    assert await jobs.claim(list(Tier), WORKER) is None


async def test_ten_concurrent_claimers_over_five_jobs_never_share_one(
    jobs: JobService, jobs_db: Database
) -> None:
    created = {(await jobs.submit(spec()))[0].id for _ in range(5)}
    claims = await asyncio.gather(*(jobs.claim([Tier.CPU], f"w{i}") for i in range(10)))
    taken = [job.id for job in claims if job is not None]
    assert sorted(map(str, taken)) == sorted(map(str, created))
    assert await count(jobs_db, "status = 'running' AND attempts = 1") == 5


async def test_a_paused_memory_is_skipped_until_resumed(jobs: JobService) -> None:
    paused, _ = await jobs.submit(spec(memory=ALPHA, priority=9))
    other, _ = await jobs.submit(spec(memory=BETA, priority=1))
    await jobs.pause(ALPHA, actor="ops")
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == other.id
    assert await jobs.claim([Tier.CPU], WORKER) is None
    await jobs.resume(ALPHA)
    resumed = await jobs.claim([Tier.CPU], WORKER)
    assert resumed is not None
    assert resumed.id == paused.id


async def test_a_global_pause_stops_every_claim_until_resumed(jobs: JobService) -> None:
    await jobs.submit(spec(memory=ALPHA))
    await jobs.submit(spec())  # a job of no memory
    await jobs.pause(None, actor="ops")
    assert await jobs.claim([Tier.CPU], WORKER) is None
    await jobs.resume(None)
    assert await jobs.claim([Tier.CPU], WORKER) is not None
    assert await jobs.claim([Tier.CPU], WORKER) is not None


async def test_resuming_everything_leaves_a_memory_paused_on_its_own(jobs: JobService) -> None:
    held, _ = await jobs.submit(spec(memory=ALPHA))
    await jobs.pause(ALPHA, actor="ops")
    await jobs.pause(None, actor="ops")
    await jobs.resume(None)
    assert await jobs.claim([Tier.CPU], WORKER) is None
    await jobs.resume(ALPHA)
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == held.id


async def test_pause_and_resume_are_idempotent(jobs: JobService, jobs_db: Database) -> None:
    await jobs.pause(ALPHA, actor="first")
    await jobs.pause(ALPHA, actor="second")
    await jobs.pause(None, actor="first")
    await jobs.pause(None, actor="second")
    pauses = await jobs.pauses()
    assert [(p.memory, p.paused_by) for p in pauses] == [(None, "first"), (ALPHA, "first")]
    await jobs.resume(ALPHA)
    await jobs.resume(ALPHA)
    await jobs.resume(None)
    await jobs.resume(None)
    assert await jobs.pauses() == []


async def test_pausing_an_unknown_memory_is_not_found(jobs: JobService) -> None:
    with pytest.raises(NotFound):
        await jobs.pause("no_such_memory", actor="ops")
    with pytest.raises(BadUserInput):
        await jobs.pause("Not A Name", actor="ops")


async def test_resume_offers_the_jobs_it_releases_to_the_relay_again(
    jobs: JobService, jobs_db: Database
) -> None:
    held, _ = await jobs.submit(spec(memory=ALPHA))
    elsewhere, _ = await jobs.submit(spec(memory=BETA))
    await jobs.pause(ALPHA, actor="ops")
    await jobs.mark_sent([held.id, elsewhere.id])  # wake-ups spent while paused
    await jobs.resume(ALPHA)
    due = await jobs.due_for_send(resend_after_seconds=3600, grace_seconds=0)
    assert [job.id for job in due] == [held.id]
