"""Nothing is lost: not when a worker is killed mid-job, not when Redis is flushed."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from uuid import UUID

import pytest
import redis.asyncio as redis
from dramatiq.brokers.redis import RedisBroker

from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.jobs.models import FailureClass, JobStatus
from fortemi.platform.jobs.service import JobService
from fortemi.workers.dispatch import JobDispatcher
from fortemi.workers.loops import reap_once
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import Jobs, Pools, eventually

LEASE_SECONDS = 2.0
GRACE_SECONDS = 0.5
ROOT = Path(__file__).resolve().parents[4]


async def _worker_process(
    broker: RedisBroker, runtime_dsn: str, service_urls: ServiceUrls, home: Path, log: Path
) -> asyncio.subprocess.Process:
    """``fortemi worker --tier cpu --threads 1`` with the test job types, as a process."""
    env = {
        **os.environ,
        "DATABASE_URL": runtime_dsn,
        "REDIS_URL": service_urls.redis,
        "FORTEMI_HOME": str(home),
    }
    with log.open("wb") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.integration.workers.runtime.worker_main",
            broker.namespace,
            str(LEASE_SECONDS),
            str(GRACE_SECONDS),
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=out,
        )


async def _started_in(
    worker: asyncio.subprocess.Process, log: Path, jobs: Jobs, job_id: UUID
) -> None:
    async def running() -> bool:
        if worker.returncode is not None:
            output = await asyncio.to_thread(log.read_text)
            pytest.fail(f"the worker process exited early:\n{output}")
        return await jobs.executions(job_id) == [1]

    await eventually(running, "the worker process to start the job")


async def test_job_of_a_killed_worker_is_reaped_and_completed_with_its_effect_once(
    jobs: Jobs,
    pools: Pools,
    broker: RedisBroker,
    service: JobService,
    dispatcher: JobDispatcher,
    runtime_dsn: str,
    service_urls: ServiceUrls,
    tmp_path: Path,
) -> None:
    job = await jobs.submit(jobtypes.KILLED)
    log = tmp_path / "worker.log"
    worker = await _worker_process(broker, runtime_dsn, service_urls, tmp_path, log)
    try:
        await _started_in(worker, log, jobs, job.id)

        async def effect_written() -> bool:
            return await jobs.effects(job.id) == 1

        # The handler writes its effect, then blocks: killed mid-job, after the effect.
        await eventually(effect_written, "the first run to write its effect")
    finally:
        if worker.returncode is None:
            worker.send_signal(signal.SIGKILL)
        await worker.wait()
    assert worker.returncode == -signal.SIGKILL

    # Its lease runs out ~2 s after the last heartbeat; the reaper here takes it back.
    async def reaped() -> int:
        return await reap_once(service, dispatcher)

    assert await eventually(reaped, "the reaper to take back the killed worker's job") == 1
    back = await jobs.get(job.id)
    assert (back.status, back.failure_class, back.failure_code) == (
        JobStatus.PENDING,
        FailureClass.STALE_WORKER,
        "lease_expired",
    )

    await jobs.release(job.id)
    await pools.start()
    done = await jobs.reach(job.id, JobStatus.COMPLETED)
    assert done.attempts == 2
    assert await jobs.executions(job.id) == [1, 2]
    assert await jobs.effects(job.id) == 1


async def test_sigterm_stops_a_worker_process_cleanly_handing_its_job_back(
    jobs: Jobs,
    pools: Pools,
    broker: RedisBroker,
    runtime_dsn: str,
    service_urls: ServiceUrls,
    tmp_path: Path,
) -> None:
    job = await jobs.submit(jobtypes.SHUTDOWN)
    log = tmp_path / "worker.log"
    worker = await _worker_process(broker, runtime_dsn, service_urls, tmp_path, log)
    try:
        await _started_in(worker, log, jobs, job.id)
        worker.send_signal(signal.SIGTERM)
        if await worker.wait() != 0:
            output = await asyncio.to_thread(log.read_text)
            pytest.fail(f"the worker process exited with {worker.returncode}:\n{output}")
    finally:
        if worker.returncode is None:
            worker.send_signal(signal.SIGKILL)
            await worker.wait()

    # Handed back at once (no lease to wait out), and taken by the next worker.
    back = await jobs.get(job.id)
    assert (back.status, back.failure_code, back.attempts) == (
        JobStatus.PENDING,
        "worker_shutdown",
        0,
    )
    await jobs.release(job.id)
    await pools.start()
    await jobs.reach(job.id, JobStatus.COMPLETED)
    assert await jobs.executions(job.id) == [1, 1]


async def test_flushall_with_100_pending_jobs_loses_none_of_them(
    jobs: Jobs, pools: Pools, service_urls: ServiceUrls
) -> None:
    submitted = [await jobs.submit(jobtypes.FLUSHED) for _ in range(100)]
    client = redis.Redis.from_url(service_urls.redis)
    try:
        await client.flushall()
    finally:
        await client.aclose()

    # Every message is gone; the relay re-sends those sent longer ago than this.
    await pools.start(threads=4, resend_after_seconds=0.5)

    for job in submitted:
        await jobs.reach(job.id, JobStatus.COMPLETED)
        assert await jobs.effects(job.id) == 1
