"""Handlers that raise: retried by us with backoff, never fatal to the worker."""

from __future__ import annotations

from fortemi.platform.jobs.models import FailureClass, JobStatus
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import Jobs, Pools


async def test_poison_job_fails_after_max_attempts_while_a_healthy_job_completes_meanwhile(
    jobs: Jobs, pools: Pools
) -> None:
    await pools.start(threads=1)
    poison = await jobs.submit(jobtypes.POISON, max_attempts=3)
    healthy = await jobs.submit(jobtypes.HEALTHY)

    failed = await jobs.reach(poison.id, JobStatus.FAILED)
    done = await jobs.reach(healthy.id, JobStatus.COMPLETED)

    assert failed.failure_class is FailureClass.TRANSIENT
    assert failed.failure_code == "PoisonError"
    assert failed.attempts == 3
    assert await jobs.executions(poison.id) == [1, 2, 3]
    # One worker thread, and the healthy job did not queue behind the poison's retries.
    assert done.finished_at is not None
    assert failed.finished_at is not None
    assert done.finished_at < failed.finished_at
    assert await jobs.effects(healthy.id) == 1
