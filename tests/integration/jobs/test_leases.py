"""Leases: heartbeats and progress renew them, only for their owner; the reaper takes
back jobs whose lease ran out."""

from __future__ import annotations

from datetime import timedelta
from uuid import uuid4

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import FailureClass, Job, JobOutcome, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from tests.integration.jobs.helpers import (
    LEASE_SECONDS,
    WORKER,
    interval,
    row,
    shift,
    spec,
)


async def _running(jobs: JobService, *, max_attempts: int = 3) -> Job:
    await jobs.submit(spec(max_attempts=max_attempts))
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    return claimed


async def _lease_left(jobs_db: Database, job: Job) -> timedelta:
    value = await jobs_db.fetchval(
        "SELECT lease_expires_at - now() FROM public.job WHERE id = $1", job.id
    )
    assert isinstance(value, timedelta)
    return value


async def test_a_heartbeat_renews_the_lease(jobs: JobService, jobs_db: Database) -> None:
    job = await _running(jobs)
    await shift(jobs_db, job.id, "lease_expires_at", -5)
    assert await jobs.heartbeat(job.id, WORKER)
    # now() is the heartbeat's own transaction start, so the full lease lies ahead.
    assert timedelta(seconds=LEASE_SECONDS - 5) < await _lease_left(jobs_db, job)
    assert await jobs.reap() == []


async def test_only_the_lease_owner_of_a_running_job_can_heartbeat(jobs: JobService) -> None:
    job = await _running(jobs)
    assert not await jobs.heartbeat(job.id, "worker-2")
    assert not await jobs.heartbeat(uuid4(), WORKER)
    await jobs.finish(job.id, WORKER, JobOutcome.success())
    assert not await jobs.heartbeat(job.id, WORKER)


async def test_progress_is_recorded_clamped_and_renews_the_lease(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    await shift(jobs_db, job.id, "lease_expires_at", -5)
    assert await jobs.report_progress(job.id, WORKER, 150, "almost")
    current = await jobs.get(job.id)
    assert current is not None
    assert (current.progress, current.progress_message) == (100, "almost")
    assert timedelta(seconds=LEASE_SECONDS - 5) < await _lease_left(jobs_db, job)
    assert await jobs.report_progress(job.id, WORKER, -3, None)
    current = await jobs.get(job.id)
    assert current is not None
    assert (current.progress, current.progress_message) == (0, None)


async def test_progress_from_a_worker_without_the_lease_is_refused(jobs: JobService) -> None:
    job = await _running(jobs)
    assert not await jobs.report_progress(job.id, "worker-2", 50, "not mine")
    current = await jobs.get(job.id)
    assert current is not None
    assert current.progress == 0


async def test_reap_returns_an_expired_job_to_pending_after_a_stale_worker_backoff(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    await jobs.mark_sent([job.id])
    await shift(jobs_db, job.id, "lease_expires_at", -1)
    [reaped] = await jobs.reap()
    assert (reaped.id, reaped.status, reaped.attempts) == (job.id, JobStatus.PENDING, 1)
    assert (reaped.failure_class, reaped.failure_code) == (
        FailureClass.STALE_WORKER,
        "lease_expired",
    )
    # STALE_WORKER's base is 1 s; the fixture's backoff has no jitter.
    assert await interval(jobs_db, job.id, "next_attempt_at", "updated_at") == timedelta(seconds=1)
    stored = await row(jobs_db, job.id)
    assert (stored["lease_owner"], stored["lease_expires_at"], stored["enqueued_at"]) == (
        None,
        None,
        None,
    )


async def test_reap_fails_an_expired_job_with_no_attempts_left(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs, max_attempts=1)
    await shift(jobs_db, job.id, "lease_expires_at", -1)
    [reaped] = await jobs.reap()
    assert (reaped.status, reaped.failure_class, reaped.failure_code) == (
        JobStatus.FAILED,
        FailureClass.STALE_WORKER,
        "lease_expired",
    )
    assert reaped.finished_at is not None


async def test_reap_leaves_live_leases_and_other_states_alone(
    jobs: JobService, jobs_db: Database
) -> None:
    live = await _running(jobs)
    pending, _ = await jobs.submit(spec())
    await shift(jobs_db, pending.id, "lease_expires_at", -60)  # a stray value, not a lease
    assert await jobs.reap() == []
    assert await jobs.get(live.id) == live
    assert await jobs.get(pending.id) == pending


async def test_reap_takes_at_most_its_limit(jobs: JobService, jobs_db: Database) -> None:
    for _ in range(3):
        job = await _running(jobs)
        await shift(jobs_db, job.id, "lease_expires_at", -1)
    assert len(await jobs.reap(limit=2)) == 2
    assert len(await jobs.reap(limit=2)) == 1
