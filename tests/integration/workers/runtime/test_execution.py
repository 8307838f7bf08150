"""A dispatched job runs: its handler, its progress, its result, what it enqueues."""

from __future__ import annotations

from uuid import UUID

from fortemi.platform.jobs.models import FailureClass, JobStatus
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import Jobs, Pools, eventually


async def test_dispatched_job_runs_to_completed_with_its_result_and_progress(
    jobs: Jobs, pools: Pools
) -> None:
    await pools.start()
    job = await jobs.submit(jobtypes.ECHO, payload={"value": "hello"})

    async def halfway() -> bool:
        current = await jobs.get(job.id)
        return current.status is JobStatus.RUNNING and current.progress == 50

    await eventually(halfway, "the running job reporting 50% progress")
    running = await jobs.get(job.id)
    assert running.progress_message == "halfway"

    await jobs.release(job.id)
    done = await jobs.reach(job.id, JobStatus.COMPLETED)
    assert done.result == {"echo": "hello"}
    assert done.progress == 100
    assert done.attempts == 1
    assert await jobs.executions(job.id) == [1]


async def test_job_of_a_type_the_worker_does_not_know_fails_for_good(
    jobs: Jobs, pools: Pools
) -> None:
    # Version skew: the enqueuing process knows the type, this worker does not.
    await pools.start(registry=lambda db: jobtypes.build_registry(db, without=[jobtypes.UNKNOWN]))
    job = await jobs.submit(jobtypes.UNKNOWN)

    failed = await jobs.reach(job.id, JobStatus.FAILED)
    assert (failed.failure_class, failed.failure_code) == (
        FailureClass.PERMANENT,
        "unknown_job_type",
    )
    assert failed.attempts == 1
    assert await jobs.executions(job.id) == []


async def test_job_enqueued_by_a_handler_is_dispatched_and_runs(jobs: Jobs, pools: Pools) -> None:
    await pools.start()
    parent = await jobs.submit(jobtypes.SPAWN)

    done = await jobs.reach(parent.id, JobStatus.COMPLETED)
    assert done.result is not None
    child_id = UUID(done.result["child"])
    child = await jobs.reach(child_id, JobStatus.COMPLETED)
    assert child.payload == {"parent": str(parent.id)}
    assert await jobs.effects(child_id) == 1


async def test_each_dispatched_job_is_claimed_by_its_own_wake_up(jobs: Jobs, pools: Pools) -> None:
    # The relay is an hour away: every job must be run by the message sent for it. A
    # message that reached the worker while the job's row was still locked by the sender's
    # bookkeeping would be skipped by the claim, and the job left waiting for the relay.
    await pools.start(resend_after_seconds=3600)
    # The race it guards against hit about one job in 30 to 60; 120 jobs catch it reliably.
    for _ in range(120):
        job = await jobs.submit(jobtypes.SEQUENTIAL)
        await jobs.reach(job.id, JobStatus.COMPLETED, polls=100)
