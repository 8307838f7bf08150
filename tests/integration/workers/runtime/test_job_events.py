"""Job state changes reach the event bus from whichever process made them, in order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import UUID

import pytest
import redis.asyncio as redis

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.events import Event, EventBus
from fortemi.platform.ids import to_global_id
from fortemi.platform.jobs.events import JobEventPublisher
from fortemi.platform.jobs.models import JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from fortemi.workers.dispatch import JobDispatcher
from tests.integration.workers.runtime.conftest import (
    FAST_BACKOFF,
    Jobs,
    Pools,
)
from tests.integration.workers.runtime.jobtypes import ECHO, ESCALATING, POISON, build_registry


@pytest.fixture
async def bus(service_urls: ServiceUrls) -> AsyncIterator[EventBus]:
    client = redis.Redis.from_url(service_urls.redis)
    yield EventBus(client, block_ms=100)
    await client.aclose()


@pytest.fixture
def announced(runtime_db: Database, bus: EventBus, dispatcher: JobDispatcher) -> Jobs:
    """Like ``jobs``, but its service announces what it does, as the API's does."""
    service = JobService(
        runtime_db,
        build_registry(runtime_db),
        backoff=FAST_BACKOFF,
        events=JobEventPublisher(bus),
    )
    return Jobs(runtime_db, service, dispatcher)


async def _mark(bus: EventBus) -> str:
    """A position in the stream to replay from: everything after it is this test's era."""
    return await bus.publish(Event(type="test.mark", entity_type="test", entity_id="mark"))


async def _events_of(
    bus: EventBus, after: str, job_ids: set[UUID], until: str, *, count: int = 1
) -> list[Event]:
    """The job events of ``job_ids`` after ``after``, until ``count`` of type ``until``."""
    wanted = {to_global_id("Job", job_id) for job_id in job_ids}
    seen: list[Event] = []
    stream = bus.subscribe(after=after)
    try:
        async with asyncio.timeout(30):
            async for event in stream:
                if event.entity_type == "job" and event.entity_id in wanted:
                    seen.append(event)
                    if sum(e.type == until for e in seen) >= count:
                        return seen
    except TimeoutError:
        pytest.fail(f"no {until} event within 30 s; saw {[e.type for e in seen]}")
    finally:
        await stream.aclose()
    raise AssertionError("the event stream ended")


async def test_a_jobs_life_is_announced_in_order_with_its_progress_and_result(
    announced: Jobs, pools: Pools, bus: EventBus, service_urls: ServiceUrls
) -> None:
    await pools.start(redis_url=service_urls.redis)
    mark = await _mark(bus)
    job = await announced.submit(ECHO, payload={"value": 7}, requested_by="alice")
    await announced.reach(job.id, JobStatus.RUNNING)
    await announced.release(job.id)
    events = await _events_of(bus, mark, {job.id}, "job.completed")
    assert [e.type for e in events] == [
        "job.created",
        "job.started",
        "job.progress",
        "job.completed",
    ]
    created, started, progress, completed = events
    assert created.actor == "alice"
    assert started.payload["attempts"] == 1
    assert (progress.payload["progress"], progress.payload["progressMessage"]) == (50, "halfway")
    assert completed.payload["result"] == {"echo": 7}
    assert {e.correlation_id for e in events} == {to_global_id("Job", job.id)}


async def test_retries_and_the_final_failure_are_announced_with_class_and_code(
    announced: Jobs, pools: Pools, bus: EventBus, service_urls: ServiceUrls
) -> None:
    await pools.start(redis_url=service_urls.redis)
    mark = await _mark(bus)
    job = await announced.submit(POISON)
    events = await _events_of(bus, mark, {job.id}, "job.failed")
    kinds = [e.type for e in events]
    assert kinds.count("job.started") == 3  # max attempts of the poison type
    assert kinds.count("job.retrying") == 2
    failed = events[-1]
    assert (failed.payload["failureClass"], failed.payload["failureCode"]) == (
        "transient",
        "PoisonError",
    )


async def test_an_escalated_job_continues_one_tier_up_under_the_same_correlation_id(
    announced: Jobs, pools: Pools, bus: EventBus, service_urls: ServiceUrls
) -> None:
    await pools.start((Tier.CPU, Tier.FAST_GPU), redis_url=service_urls.redis)
    mark = await _mark(bus)
    job = await announced.submit(ESCALATING, dedupe_key="escalating:1")
    first = await announced.reach(job.id, JobStatus.COMPLETED)
    assert first.result is not None
    successor_id = UUID(first.result["escalatedTo"])
    successor = await announced.reach(successor_id, JobStatus.COMPLETED)
    assert successor.tier is Tier.FAST_GPU
    assert successor.result == {"tier": "fast_gpu"}
    escalation = successor.payload["escalation"]
    assert escalation == {
        "origin": str(job.id),
        "fromJob": str(job.id),
        "fromTier": "cpu",
        "reason": "too_little_on_cpu",
        "path": ["cpu"],
    }
    assert successor.dedupe_key == "escalating:1@fast_gpu"

    events = await _events_of(bus, mark, {job.id, successor_id}, "job.completed", count=2)
    # The escalation is visible as ordinary job events: the successor's creation says why.
    [created] = [
        e for e in events if e.type == "job.created" and e.entity_id != events[0].entity_id
    ]
    assert created.payload["escalation"]["reason"] == "too_little_on_cpu"
    assert created.payload["tier"] == "fast_gpu"
    assert {e.correlation_id for e in events} == {to_global_id("Job", job.id)}
