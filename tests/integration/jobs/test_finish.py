"""Finishing a run: success, permanent failure, retry with backoff, and running out of
attempts; and that a worker which lost its lease changes nothing."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import pytest

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import FailureClass, Job, JobOutcome, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from tests.integration.jobs.helpers import WORKER, interval, row, shift, spec


async def _running(jobs: JobService, *, max_attempts: int = 3) -> Job:
    job, _ = await jobs.submit(spec(max_attempts=max_attempts))
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == job.id
    return claimed


async def _run_again(jobs: JobService, jobs_db: Database, job_id: UUID) -> None:
    await shift(jobs_db, job_id, "next_attempt_at", -1)
    claimed = await jobs.claim([Tier.CPU], WORKER)
    assert claimed is not None
    assert claimed.id == job_id


async def _lease_is_cleared(jobs_db: Database, job_id: UUID) -> bool:
    stored = await row(jobs_db, job_id)
    return stored["lease_owner"] is None and stored["lease_expires_at"] is None


async def test_success_completes_the_job_with_its_result(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    await jobs.report_progress(job.id, WORKER, 40, "halfway")
    done = await jobs.finish(job.id, WORKER, JobOutcome.success({"chunks": 3}))
    assert done is not None
    assert (done.status, done.progress, done.result) == (JobStatus.COMPLETED, 100, {"chunks": 3})
    assert done.finished_at is not None
    assert await _lease_is_cleared(jobs_db, job.id)


async def test_a_failure_fails_the_job_for_good_with_its_code(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    failed = await jobs.finish(job.id, WORKER, JobOutcome.failure("note_missing"))
    assert failed is not None
    assert failed.status is JobStatus.FAILED
    assert (failed.failure_class, failed.failure_code) == (FailureClass.PERMANENT, "note_missing")
    assert failed.finished_at is not None
    assert await _lease_is_cleared(jobs_db, job.id)


async def test_a_retry_requeues_after_the_classes_backoff_with_a_new_message_due(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    await jobs.mark_sent([job.id])  # the first message went out before the claim
    retried = await jobs.finish(job.id, WORKER, JobOutcome.retry(FailureClass.TIMEOUT, "slow"))
    assert retried is not None
    assert (retried.status, retried.attempts) == (JobStatus.PENDING, 1)
    assert (retried.failure_class, retried.failure_code) == (FailureClass.TIMEOUT, "slow")
    assert retried.finished_at is None
    # TIMEOUT's base is 10 s; the first retry waits exactly that (the fixture has no jitter).
    assert await interval(jobs_db, job.id, "next_attempt_at", "updated_at") == timedelta(seconds=10)
    assert await _lease_is_cleared(jobs_db, job.id)
    assert (await row(jobs_db, job.id))["enqueued_at"] is None


async def test_each_further_retry_waits_twice_as_long(jobs: JobService, jobs_db: Database) -> None:
    job = await _running(jobs, max_attempts=5)
    waits = []
    for _ in range(3):
        await jobs.finish(job.id, WORKER, JobOutcome.retry(FailureClass.TRANSIENT, "blip"))
        waits.append(await interval(jobs_db, job.id, "next_attempt_at", "updated_at"))
        await _run_again(jobs, jobs_db, job.id)
    assert waits == [timedelta(seconds=s) for s in (2, 4, 8)]


async def test_retry_after_seconds_overrides_the_backoff(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    outcome = JobOutcome.retry(FailureClass.RATE_LIMITED, "429", after_seconds=7.5)
    await jobs.finish(job.id, WORKER, outcome)
    assert await interval(jobs_db, job.id, "next_attempt_at", "updated_at") == timedelta(
        seconds=7.5
    )


async def test_a_retry_on_the_last_attempt_fails_with_its_class_and_code(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs, max_attempts=2)
    await jobs.finish(job.id, WORKER, JobOutcome.retry(FailureClass.RATE_LIMITED, "429"))
    await _run_again(jobs, jobs_db, job.id)
    failed = await jobs.finish(job.id, WORKER, JobOutcome.retry(FailureClass.TIMEOUT, "slow"))
    assert failed is not None
    assert (failed.status, failed.attempts) == (JobStatus.FAILED, 2)
    assert (failed.failure_class, failed.failure_code) == (FailureClass.TIMEOUT, "slow")
    assert failed.finished_at is not None


async def test_a_retry_of_class_permanent_is_not_retried(jobs: JobService) -> None:
    job = await _running(jobs)
    outcome = JobOutcome.retry(FailureClass.PERMANENT, "bad_input")
    failed = await jobs.finish(job.id, WORKER, outcome)
    assert failed is not None
    assert (failed.status, failed.failure_class) == (JobStatus.FAILED, FailureClass.PERMANENT)


async def test_finish_after_the_lease_was_reaped_changes_nothing(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    await shift(jobs_db, job.id, "lease_expires_at", -1)
    [reaped] = await jobs.reap()
    assert await jobs.finish(job.id, WORKER, JobOutcome.success()) is None
    assert await jobs.get(job.id) == reaped


async def test_finish_after_a_new_worker_took_the_reaped_job_changes_nothing(
    jobs: JobService, jobs_db: Database
) -> None:
    job = await _running(jobs)
    await shift(jobs_db, job.id, "lease_expires_at", -1)
    await jobs.reap()
    await shift(jobs_db, job.id, "next_attempt_at", -1)
    assert await jobs.claim([Tier.CPU], "worker-2") is not None
    assert await jobs.finish(job.id, WORKER, JobOutcome.failure("late")) is None
    current = await jobs.get(job.id)
    assert current is not None
    assert current.status is JobStatus.RUNNING
    assert (await row(jobs_db, job.id))["lease_owner"] == "worker-2"


async def test_finish_after_the_job_was_cancelled_changes_nothing(jobs: JobService) -> None:
    job = await _running(jobs)
    cancelled = await jobs.cancel(job.id)
    assert await jobs.finish(job.id, WORKER, JobOutcome.success({"x": 1})) is None
    assert await jobs.get(job.id) == cancelled


@pytest.mark.parametrize(
    "outcome",
    [
        JobOutcome("done"),
        JobOutcome("failure"),
        JobOutcome("retry", failure_class=FailureClass.TRANSIENT, failure_code=""),
        JobOutcome.success({"x": float("nan")}),
        JobOutcome.retry(FailureClass.TRANSIENT, "x", after_seconds=float("inf")),
    ],
    ids=["unknown-kind", "no-code", "empty-code", "result-not-json", "infinite-wait"],
)
async def test_a_malformed_outcome_is_refused_and_the_job_keeps_running(
    jobs: JobService, outcome: JobOutcome
) -> None:
    job = await _running(jobs)
    with pytest.raises(ValueError, match=r"\w"):
        await jobs.finish(job.id, WORKER, outcome)
    assert await jobs.get(job.id) == job
