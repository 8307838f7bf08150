"""A wake-up is a nudge, not an assignment: duplicates and stale ones do no harm."""

from __future__ import annotations

from dramatiq.brokers.redis import RedisBroker

from fortemi.platform.jobs.models import JobStatus, Tier
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import Jobs, Pools, drained, eventually


async def test_duplicate_wake_up_for_a_completed_job_only_claims_other_runnable_work(
    jobs: Jobs, pools: Pools, broker: RedisBroker
) -> None:
    await pools.start()
    done = await jobs.submit(jobtypes.DUP_DONE)
    first = await jobs.reach(done.id, JobStatus.COMPLETED)
    # Another job is runnable but its own message was lost.
    other = await jobs.submit(jobtypes.DUP_OTHER, send=False)
    await jobs.service.mark_sent([other.id])

    jobs.dispatcher.send(first)  # the completed job's wake-up, delivered again
    jobs.dispatcher.wake(Tier.CPU, done.id)

    await jobs.reach(other.id, JobStatus.COMPLETED)
    await drained(broker, Tier.CPU)
    assert await jobs.get(done.id) == first
    assert await jobs.executions(done.id) == [1]
    assert await jobs.executions(other.id) == [1]


async def test_duplicate_wake_up_for_a_running_job_does_not_start_it_again(
    jobs: Jobs, pools: Pools, broker: RedisBroker
) -> None:
    await pools.start(threads=2)
    running = await jobs.submit(jobtypes.DUP_RUNNING)

    async def started() -> bool:
        return await jobs.executions(running.id) == [1]

    await eventually(started, "the blocking job to start")
    behind = await jobs.submit(jobtypes.DUP_BEHIND, send=False)
    await jobs.service.mark_sent([behind.id])
    jobs.dispatcher.wake(Tier.CPU, running.id)  # duplicate, while it runs

    # The free thread took the duplicate and claimed the other runnable job instead.
    await jobs.reach(behind.id, JobStatus.COMPLETED)
    await jobs.release(running.id)
    done = await jobs.reach(running.id, JobStatus.COMPLETED)
    await drained(broker, Tier.CPU)
    assert done.attempts == 1
    assert await jobs.executions(running.id) == [1]
