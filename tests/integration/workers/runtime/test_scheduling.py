"""Which job runs first: the best runnable one, whichever message woke the worker."""

from __future__ import annotations

from dramatiq.brokers.redis import RedisBroker

from fortemi.platform.jobs.models import JobStatus, Tier
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import Jobs, Pools, drained


async def test_higher_priority_job_starts_first_from_a_backlog(jobs: Jobs, pools: Pools) -> None:
    # Sent with no worker running: the low-priority jobs' messages are first in the queue.
    low = [await jobs.submit(jobtypes.PRIORITY, priority=2) for _ in range(5)]
    high = await jobs.submit(jobtypes.PRIORITY, priority=9)

    await pools.start(threads=1)

    done = [await jobs.reach(job.id, JobStatus.COMPLETED) for job in [high, *low]]
    first, rest = done[0], done[1:]
    assert first.started_at is not None
    assert all(job.started_at is not None and first.started_at < job.started_at for job in rest)


async def test_standard_gpu_wake_up_runs_waiting_fast_gpu_job_first(
    jobs: Jobs, pools: Pools
) -> None:
    fast = await jobs.submit(jobtypes.FAST, send=False)
    standard = await jobs.submit(jobtypes.STANDARD, send=False)
    # The fast job's own message is lost (marked sent, never sent, so the relay stays
    # away); only standard-GPU wake-ups arrive, one per job.
    await jobs.service.mark_sent([fast.id, standard.id])
    jobs.dispatcher.wake(Tier.STANDARD_GPU, standard.id)
    jobs.dispatcher.wake(Tier.STANDARD_GPU, standard.id)

    await pools.start([Tier.FAST_GPU, Tier.STANDARD_GPU], threads=1)

    fast_done = await jobs.reach(fast.id, JobStatus.COMPLETED)
    standard_done = await jobs.reach(standard.id, JobStatus.COMPLETED)
    assert fast_done.started_at is not None
    assert standard_done.started_at is not None
    assert fast_done.started_at < standard_done.started_at


async def test_standard_gpu_only_worker_leaves_fast_gpu_jobs_alone(
    jobs: Jobs, pools: Pools, broker: RedisBroker
) -> None:
    fast = await jobs.submit(jobtypes.FAST, send=False)
    await jobs.service.mark_sent([fast.id])
    standard = await jobs.submit(jobtypes.STANDARD)
    # A second wake-up that would claim the fast job if this worker served its tier.
    jobs.dispatcher.wake(Tier.STANDARD_GPU, standard.id)

    pool = await pools.start([Tier.STANDARD_GPU], threads=1)

    await jobs.reach(standard.id, JobStatus.COMPLETED)
    await drained(broker, Tier.STANDARD_GPU)
    assert pool.runtime is not None
    assert pool.runtime.executor is not None
    assert pool.runtime.executor.claim_order(Tier.STANDARD_GPU) == (Tier.STANDARD_GPU,)
    assert (await jobs.get(fast.id)).status is JobStatus.PENDING
