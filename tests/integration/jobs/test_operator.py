"""The operator's controls: cancel a job that has not finished, retry one that failed or
was cancelled; anything else is a conflict, an unknown job is not found."""

from __future__ import annotations

from uuid import uuid4

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.jobs.models import FailureClass, Job, JobOutcome, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from tests.integration.jobs.helpers import WORKER, row, spec


async def _in_state(jobs: JobService, status: JobStatus, **fields: object) -> Job:
    job, _ = await jobs.submit(spec(**fields))  # type: ignore[arg-type]
    if status is JobStatus.PENDING:
        return job
    assert await jobs.claim([Tier.CPU], WORKER) is not None
    if status is JobStatus.COMPLETED:
        await jobs.finish(job.id, WORKER, JobOutcome.success())
    elif status is JobStatus.FAILED:
        await jobs.finish(job.id, WORKER, JobOutcome.failure("broken"))
    elif status is JobStatus.CANCELLED:
        await jobs.cancel(job.id)
    current = await jobs.get(job.id)
    assert current is not None
    assert current.status is status
    return current


@pytest.mark.parametrize("status", [JobStatus.PENDING, JobStatus.RUNNING])
async def test_an_unfinished_job_can_be_cancelled(
    jobs: JobService, jobs_db: Database, status: JobStatus
) -> None:
    job = await _in_state(jobs, status)
    cancelled = await jobs.cancel(job.id)
    assert cancelled.status is JobStatus.CANCELLED
    assert cancelled.finished_at is not None
    assert (await row(jobs_db, job.id))["lease_owner"] is None
    assert await jobs.claim([Tier.CPU], WORKER) is None


async def test_a_cancelled_running_jobs_worker_is_told_to_stop(jobs: JobService) -> None:
    job = await _in_state(jobs, JobStatus.RUNNING)
    await jobs.cancel(job.id)
    assert not await jobs.heartbeat(job.id, WORKER)
    assert not await jobs.report_progress(job.id, WORKER, 50, None)


@pytest.mark.parametrize("status", [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED])
async def test_a_finished_job_cannot_be_cancelled(jobs: JobService, status: JobStatus) -> None:
    job = await _in_state(jobs, status)
    with pytest.raises(Conflict) as caught:
        await jobs.cancel(job.id)
    assert caught.value.extensions["status"] == status.value
    assert await jobs.get(job.id) == job


async def test_cancelling_or_retrying_an_unknown_job_is_not_found(jobs: JobService) -> None:
    with pytest.raises(NotFound):
        await jobs.cancel(uuid4())
    with pytest.raises(NotFound):
        await jobs.retry(uuid4())


async def test_a_failed_job_retried_runs_again_with_fresh_attempts(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _in_state(jobs, JobStatus.FAILED, max_attempts=1)
    retried = await jobs.retry(job.id)
    assert (retried.status, retried.attempts, retried.finished_at) == (JobStatus.PENDING, 0, None)
    # Why it needed a retry stays visible until the next run ends.
    assert (retried.failure_class, retried.failure_code) == (FailureClass.PERMANENT, "broken")
    assert (await row(jobs_db, job.id))["enqueued_at"] is None
    again = await jobs.claim([Tier.CPU], WORKER)
    assert again is not None
    assert (again.id, again.attempts) == (job.id, 1)
    done = await jobs.finish(job.id, WORKER, JobOutcome.success())
    assert done is not None
    assert (done.failure_class, done.failure_code) == (None, None)


async def test_a_cancelled_job_can_be_retried(jobs: JobService) -> None:
    job = await _in_state(jobs, JobStatus.CANCELLED)
    assert (await jobs.retry(job.id)).status is JobStatus.PENDING


@pytest.mark.parametrize("status", [JobStatus.PENDING, JobStatus.RUNNING, JobStatus.COMPLETED])
async def test_only_failed_or_cancelled_jobs_can_be_retried(
    jobs: JobService, status: JobStatus
) -> None:
    job = await _in_state(jobs, status)
    with pytest.raises(Conflict) as caught:
        await jobs.retry(job.id)
    assert caught.value.extensions["status"] == status.value
    assert await jobs.get(job.id) == job


async def test_a_retry_that_would_duplicate_a_pending_dedupe_key_is_a_conflict(
    jobs: JobService,
) -> None:
    failed = await _in_state(jobs, JobStatus.FAILED, dedupe_key="embed:n9")
    pending, created = await jobs.submit(spec(dedupe_key="embed:n9"))
    assert created
    with pytest.raises(Conflict, match="dedupe key"):
        await jobs.retry(failed.id)
    assert await jobs.get(failed.id) == failed
    assert await jobs.get(pending.id) == pending
