"""Starting and stopping workers, and a job whose lease is taken away mid-run."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
from dramatiq.brokers.redis import RedisBroker

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import FailureClass, JobSpec, JobStatus, Tier
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.workers.broker import WakeReceiver
from fortemi.workers.runtime import WorkerBootError
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import Jobs, Pools, eventually


async def test_stopping_a_worker_hands_its_running_job_back_without_spending_an_attempt(
    jobs: Jobs, pools: Pools
) -> None:
    pool = await pools.start(grace_seconds=0.2)
    job = await jobs.submit(jobtypes.SHUTDOWN)

    async def started() -> bool:
        return await jobs.executions(job.id) == [1]

    await eventually(started, "the blocking job to start")
    await pools.stop(pool)

    back = await jobs.get(job.id)
    assert (back.status, back.failure_class, back.failure_code) == (
        JobStatus.PENDING,
        FailureClass.STALE_WORKER,
        "worker_shutdown",
    )
    assert back.attempts == 0  # the stopped run is not counted against the job
    await jobs.release(job.id)
    await pools.start()
    done = await jobs.reach(job.id, JobStatus.COMPLETED)
    assert await jobs.executions(job.id) == [1, 1]
    assert done.attempts == 1


async def test_cancelling_a_running_job_stops_its_handler(jobs: Jobs, pools: Pools) -> None:
    # A short lease: the heartbeat that notices the cancellation comes every 0.2 s.
    pool = await pools.start(lease_seconds=0.6)
    job = await jobs.submit(jobtypes.LEASE_LOST)

    async def started() -> bool:
        return await jobs.executions(job.id) == [1]

    await eventually(started, "the blocking job to start")
    await jobs.service.cancel(job.id)
    assert pool.runtime is not None
    assert pool.runtime.executor is not None
    executor = pool.runtime.executor

    async def stopped() -> bool:
        return executor.running == 0

    await eventually(stopped, "the cancelled job's handler to be stopped")
    await jobs.release(job.id)
    assert (await jobs.get(job.id)).status is JobStatus.CANCELLED
    assert await jobs.effects(job.id) == 0


async def test_tier_is_warmed_before_its_worker_consumes(
    jobs: Jobs, pools: Pools, runtime_dsn: str
) -> None:
    job = await jobs.submit(jobtypes.HEALTHY)  # waiting in the queue before the worker starts
    seen: list[str] = []

    async def warm() -> None:
        # Long enough that a worker consuming already would have started the job.
        await asyncio.sleep(0.3)
        # Warmers run on the worker's own loop: a connection of their own, not the test's.
        conn = await asyncpg.connect(runtime_dsn)
        try:
            seen.append(await conn.fetchval("SELECT status FROM public.job WHERE id = $1", job.id))
        finally:
            await conn.close()

    await pools.start(warmers={Tier.CPU: warm})

    await jobs.reach(job.id, JobStatus.COMPLETED)
    assert seen == [JobStatus.PENDING.value]


async def test_failed_warm_up_stops_the_worker_from_starting_and_consuming(
    jobs: Jobs, pools: Pools, broker: RedisBroker
) -> None:
    job = await jobs.submit(jobtypes.HEALTHY)

    async def broken() -> None:
        raise RuntimeError("model file missing")

    with pytest.raises(WorkerBootError, match="model file missing"):
        await pools.start(warmers={Tier.CPU: broken})

    assert not any(isinstance(m, WakeReceiver) for m in broker.middleware)
    # The broker is left as it was: a healthy worker starts on it and takes the job.
    await pools.start()
    done = await jobs.reach(job.id, JobStatus.COMPLETED)
    assert done.attempts == 1


async def test_start_up_jobs_are_enqueued_once_however_many_workers_start_and_then_run(
    pools: Pools, runtime_db: Database
) -> None:
    def registry(db: Database) -> JobRegistry:
        built = jobtypes.build_registry(db)

        async def sweep() -> list[JobSpec]:
            return [JobSpec(type=jobtypes.HEALTHY, dedupe_key="start-up sweep")]

        built.on_start(sweep)
        return built

    async def statuses() -> list[str]:
        async with runtime_db.connection() as conn:
            rows = await conn.fetch(
                "SELECT status FROM public.job WHERE dedupe_key = 'start-up sweep'"
            )
        return [row["status"] for row in rows]

    # Two starts of a worker of a tier that does not run the job: it waits, enqueued once.
    for _ in range(2):
        await pools.stop(await pools.start(tiers=(Tier.FAST_GPU,), registry=registry))
    assert await statuses() == ["pending"]

    # A worker of its tier starts (its own start finds the job waiting) and runs it.
    await pools.start(registry=registry)

    async def completed() -> list[str] | None:
        found = await statuses()
        return found if found == ["completed"] else None

    assert await eventually(completed, "the start-up job to complete once") == ["completed"]
