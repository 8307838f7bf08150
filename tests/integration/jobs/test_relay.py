"""The relay's work list: pending, runnable jobs whose wake-up was never sent (and is not
in flight) or was sent long enough ago to count as lost."""

from __future__ import annotations

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import Tier
from fortemi.platform.jobs.service import JobService
from tests.integration.jobs.helpers import STANDARD, WORKER, row, shift, spec

RESEND_AFTER = 300.0


async def _due(jobs: JobService, **kwargs: float) -> set[object]:
    found = await jobs.due_for_send(resend_after_seconds=RESEND_AFTER, **kwargs)  # type: ignore[arg-type]
    return {job.id for job in found}


async def test_a_never_sent_job_is_due_once_its_after_commit_send_had_its_chance(
    jobs: JobService, jobs_db: Database
) -> None:
    job, _ = await jobs.submit(spec())
    # Written just now: the sender that enqueued it may be sending right now.
    assert job.id not in await _due(jobs, grace_seconds=3600)
    await shift(jobs_db, job.id, "updated_at", -2)
    assert await _due(jobs) == {job.id}


async def test_a_job_sent_long_ago_is_due_again_and_a_recent_one_is_not(
    jobs: JobService, jobs_db: Database
) -> None:
    lost, _ = await jobs.submit(spec())
    recent, _ = await jobs.submit(spec())
    await jobs.mark_sent([lost.id, recent.id])
    await shift(jobs_db, lost.id, "enqueued_at", -(RESEND_AFTER + 1))
    await shift(jobs_db, recent.id, "updated_at", -3600)
    assert await _due(jobs) == {lost.id}


async def test_running_and_not_yet_runnable_jobs_are_never_due(
    jobs: JobService, jobs_db: Database
) -> None:
    running, _ = await jobs.submit(spec())
    assert await jobs.claim([Tier.CPU], WORKER) is not None
    later, _ = await jobs.submit(spec())
    for job_id in (running.id, later.id):
        await shift(jobs_db, job_id, "updated_at", -3600)
    await shift(jobs_db, later.id, "next_attempt_at", 60)
    assert await _due(jobs) == set()


async def test_mark_sent_stamps_the_time_and_takes_the_job_off_the_list(
    jobs: JobService, jobs_db: Database
) -> None:
    job, _ = await jobs.submit(spec())
    await shift(jobs_db, job.id, "updated_at", -2)
    await jobs.mark_sent([job.id])
    assert (await row(jobs_db, job.id))["enqueued_at"] is not None
    assert await _due(jobs) == set()
    await jobs.mark_sent([])  # nothing to do, and no error


async def test_the_relay_list_is_best_priority_first_and_limited(
    jobs: JobService, jobs_db: Database
) -> None:
    low, _ = await jobs.submit(spec(priority=1))
    high, _ = await jobs.submit(spec(STANDARD, priority=9))
    middle, _ = await jobs.submit(spec(priority=5))
    for job in (low, high, middle):
        await shift(jobs_db, job.id, "updated_at", -2)
    found = await jobs.due_for_send(resend_after_seconds=RESEND_AFTER, limit=2)
    assert [job.id for job in found] == [high.id, middle.id]
