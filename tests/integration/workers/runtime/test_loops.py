"""The relay and the reaper: idempotent, and safe with several running at once."""

from __future__ import annotations

import asyncio

from dramatiq.brokers.redis import RedisBroker

from fortemi.platform.database import Database
from fortemi.platform.jobs.models import FailureClass, JobOutcome, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from fortemi.workers.dispatch import JobDispatcher
from fortemi.workers.executor import JobExecutor
from fortemi.workers.loops import MaintenanceLoop, reap_once, relay_once
from tests.integration.workers.runtime import jobtypes
from tests.integration.workers.runtime.conftest import FAST_BACKOFF, Jobs, Pools, eventually
from tests.integration.workers.runtime.jobtypes import build_registry


async def _queued(broker: RedisBroker, tier: Tier) -> int:
    size: int = await asyncio.to_thread(broker.do_qsize, tier.value)
    return size


async def test_relay_sends_a_never_sent_job_once_then_waits_until_it_is_overdue(
    jobs: Jobs, service: JobService, dispatcher: JobDispatcher, broker: RedisBroker
) -> None:
    job = await jobs.submit(jobtypes.RELAYED, send=False)

    async def relayed() -> int:
        return await relay_once(service, dispatcher, resend_after_seconds=3600)

    # A just-written job is left alone briefly (its after-commit send may be in flight).
    assert await eventually(relayed, "the relay to send the unsent job") == 1
    assert await relay_once(service, dispatcher, resend_after_seconds=3600) == 0
    assert await _queued(broker, Tier.CPU) == 1
    assert (await jobs.get(job.id)).status is JobStatus.PENDING


async def test_concurrent_reapers_take_back_each_expired_job_once(
    jobs: Jobs, runtime_db: Database, dispatcher: JobDispatcher, broker: RedisBroker
) -> None:
    short = JobService(
        runtime_db, build_registry(runtime_db), backoff=FAST_BACKOFF, lease_seconds=0.2
    )
    job = await jobs.submit(jobtypes.REAPED, send=False)
    claimed = await short.claim([Tier.CPU], "gone-worker")
    assert claimed is not None
    assert claimed.id == job.id

    reaped: list[int] = []

    async def three_reapers() -> bool:
        counts = await asyncio.gather(*(reap_once(short, dispatcher) for _ in range(3)))
        reaped.extend(counts)
        return sum(reaped) > 0

    await eventually(three_reapers, "a reaper to take back the expired lease")
    assert sum(reaped) == 1
    assert sum(await asyncio.gather(*(reap_once(short, dispatcher) for _ in range(3)))) == 0
    back = await jobs.get(job.id)
    assert (back.status, back.failure_class) == (JobStatus.PENDING, FailureClass.STALE_WORKER)
    assert await _queued(broker, Tier.CPU) == 1  # its wake-up, sent once


async def test_wake_up_delivered_before_its_job_is_due_is_sent_again_for_the_rest(
    jobs: Jobs, pools: Pools, service: JobService
) -> None:
    job = await jobs.submit(jobtypes.RELAYED, send=False)
    claimed = await service.claim([Tier.CPU], "test")
    assert claimed is not None
    assert claimed.id == job.id
    later = await service.finish(
        job.id, "test", JobOutcome.retry(FailureClass.RATE_LIMITED, "slow_down", after_seconds=1)
    )
    assert later is not None
    assert later.status is JobStatus.PENDING
    # Woken now, a second early; marked sent so the relay (an hour away) does not help.
    jobs.dispatcher.wake(Tier.CPU, job.id)
    await service.mark_sent([job.id])

    await pools.start(resend_after_seconds=3600)

    done = await jobs.reach(job.id, JobStatus.COMPLETED)
    assert done.attempts == 2
    assert await jobs.executions(job.id) == [2]


async def test_a_wake_up_spent_while_the_database_is_unreachable_is_resent_on_the_next_pass(
    jobs: Jobs,
    service: JobService,
    dispatcher: JobDispatcher,
    broker: RedisBroker,
    runtime_dsn: str,
) -> None:
    job = await jobs.submit(jobtypes.RELAYED)  # sent: the relay would wait an hour
    loop = MaintenanceLoop(service, dispatcher, resend_after_seconds=3600)
    unreachable = await Database.connect(runtime_dsn, min_size=1, max_size=1)
    await unreachable.close()
    executor = JobExecutor(
        JobService(unreachable, build_registry(unreachable)),
        build_registry(unreachable),
        dispatcher,
        tiers=[Tier.CPU],
        worker_id="cut-off",
        lease_seconds=60,
        on_wake_failed=loop.request_resend,
    )
    # The worker consumes the wake-up but cannot claim: the message is spent.
    await asyncio.to_thread(broker.flush_all)
    assert await loop.run_once() == (0, 0)  # not overdue: nothing re-sent yet
    assert await executor.wake(Tier.CPU, str(job.id)) is None
    assert await loop.run_once() == (0, 1)  # re-sent at once, not an hour later
    assert await _queued(broker, Tier.CPU) == 1
    assert await loop.run_once() == (0, 0)  # and only once
