"""Fixtures for the worker runtime tests: a private database, a private Redis namespace.

Claims take the best runnable job of a tier, whatever its type, so these tests own a
database of their own (jobs left by other suites in the session database would otherwise
be claimed here, and ours there), and every test starts from empty job tables and empty
queues. Each test module gets its own Redis namespace, so no test sees another module's
messages.

Waiting is a bounded poll (:func:`eventually`): a fixed number of short polls, then a
failure that says what never happened. No test measures wall-clock time.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit
from uuid import UUID

import pytest
from dramatiq.brokers.redis import RedisBroker

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.jobs.backoff import Backoff
from fortemi.platform.jobs.models import FailureClass, Job, JobSpec, JobStatus, Tier
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations
from fortemi.workers.broker import build_broker
from fortemi.workers.dispatch import JobDispatcher, dispatch
from fortemi.workers.pool import WorkerPool
from fortemi.workers.runtime import WorkerConfig
from tests.integration.workers.runtime.jobtypes import DDL, build_registry

T = TypeVar("T")

POLL_SECONDS = 0.05
POLLS = 600  # 30 s of polls at most: generous, since a failure here is a hang, not a race

# Small, exact delays: retries come back quickly and tests need not wait for jitter.
FAST_BACKOFF = Backoff(
    base_seconds={
        FailureClass.TRANSIENT: 0.2,
        FailureClass.RATE_LIMITED: 0.2,
        FailureClass.TIMEOUT: 0.2,
        FailureClass.STALE_WORKER: 0.05,
    },
    jitter=0.0,
)


async def eventually(
    probe: Callable[[], Awaitable[T | None]], what: str, *, polls: int = POLLS
) -> T:
    """The first truthy value of ``probe()``, polled every 50 ms; fails after ``polls``."""
    for _ in range(polls):
        value = await probe()
        if value:
            return value
        await asyncio.sleep(POLL_SECONDS)
    pytest.fail(f"gave up after {polls} polls of {POLL_SECONDS}s: {what}")


async def drained(broker: RedisBroker, tier: Tier) -> None:
    """Return once every message of ``tier``'s queue has been consumed and acknowledged."""

    async def empty() -> bool:
        # qsize counts queued, delayed and in-flight (unacknowledged) messages.
        size: int = await asyncio.to_thread(broker.do_qsize, tier.value)
        return size == 0

    await eventually(empty, f"the {tier.value} queue to drain")


@pytest.fixture(scope="session")
async def runtime_dsn(db: Database, service_urls: ServiceUrls) -> AsyncIterator[str]:
    name = f"runtime_{uuid.uuid4().hex[:12]}"
    async with db.connection() as conn:
        await conn.execute(f'CREATE DATABASE "{name}"')
    dsn = urlunsplit(urlsplit(service_urls.database)._replace(path=f"/{name}"))
    try:
        yield dsn
    finally:
        async with db.connection() as conn:
            await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
async def runtime_db(runtime_dsn: str) -> AsyncIterator[Database]:
    database = await Database.connect(runtime_dsn, min_size=1, max_size=8)
    try:
        await Migrations().migrate_shared(database)
        async with database.connection() as conn:
            await conn.execute(DDL)
        yield database
    finally:
        await database.close()


@pytest.fixture(scope="module")
def broker(service_urls: ServiceUrls) -> Iterator[RedisBroker]:
    built = build_broker(service_urls.redis, namespace=f"fortemi-test-{uuid.uuid4().hex[:8]}")
    yield built
    built.flush_all()
    built.close()


@pytest.fixture(autouse=True)
async def _fresh_state(runtime_db: Database, broker: RedisBroker) -> None:
    async with runtime_db.connection() as conn:
        await conn.execute(
            "TRUNCATE public.job, public.job_pause, worker_test.execution, "
            "worker_test.effect, worker_test.release"
        )
    await asyncio.to_thread(broker.flush_all)


@pytest.fixture
def service(runtime_db: Database) -> JobService:
    return JobService(runtime_db, build_registry(runtime_db), backoff=FAST_BACKOFF)


@pytest.fixture
def dispatcher(broker: RedisBroker) -> JobDispatcher:
    return JobDispatcher(broker)


@dataclass
class Jobs:
    """Submitting jobs and reading what became of them, behind the workers' backs."""

    db: Database
    service: JobService
    dispatcher: JobDispatcher

    async def submit(self, job_type: str, *, send: bool = True, **fields: Any) -> Job:
        job, created = await self.service.submit(JobSpec(type=job_type, **fields))
        assert created
        if send:
            assert await dispatch(self.service, self.dispatcher, [job]) == 1
        return job

    async def get(self, job_id: UUID) -> Job:
        job = await self.service.get(job_id)
        assert job is not None, f"job {job_id} vanished"
        return job

    async def reach(self, job_id: UUID, status: JobStatus, *, polls: int = POLLS) -> Job:
        async def probe() -> Job | None:
            job = await self.get(job_id)
            return job if job.status is status else None

        try:
            return await eventually(probe, f"job {job_id} {status.value}", polls=polls)
        except pytest.fail.Exception:
            job = await self.get(job_id)
            pytest.fail(
                f"job {job_id} never became {status.value}: it is {job.status.value} after "
                f"{job.attempts} attempt(s), failure {job.failure_class}/{job.failure_code}"
            )

    async def executions(self, job_id: UUID) -> list[int]:
        """The attempt number of every run of the job's handler, in order."""
        async with self.db.connection() as conn:
            rows = await conn.fetch(
                "SELECT attempt FROM worker_test.execution WHERE job_id = $1 ORDER BY at", job_id
            )
        return [row["attempt"] for row in rows]

    async def effects(self, job_id: UUID) -> int:
        count: int = await self.db.fetchval(
            "SELECT count(*) FROM worker_test.effect WHERE job_id = $1", job_id
        )
        return count

    async def release(self, job_id: UUID) -> None:
        async with self.db.connection() as conn:
            await conn.execute("INSERT INTO worker_test.release (job_id) VALUES ($1)", job_id)


@pytest.fixture
def jobs(runtime_db: Database, service: JobService, dispatcher: JobDispatcher) -> Jobs:
    return Jobs(runtime_db, service, dispatcher)


@dataclass
class Pools:
    """Starts worker pools on the test's broker; every one is stopped after the test."""

    broker: RedisBroker
    config: WorkerConfig
    started: list[WorkerPool] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    async def start(
        self, tiers: Sequence[Tier] = (Tier.CPU,), threads: int = 1, **overrides: Any
    ) -> WorkerPool:
        config = replace(self.config, worker_id=f"test-worker-{next(self._ids)}", **overrides)
        pool = WorkerPool(self.broker, config)
        await asyncio.to_thread(pool.start, tiers, threads)
        self.started.append(pool)
        return pool

    async def stop(self, pool: WorkerPool) -> None:
        await asyncio.to_thread(pool.stop)


@pytest.fixture
async def pools(runtime_dsn: str, broker: RedisBroker) -> AsyncIterator[Pools]:
    config = WorkerConfig(
        database_url=runtime_dsn,
        registry=build_registry,
        backoff=FAST_BACKOFF,
        maintenance_interval_seconds=0.2,
        grace_seconds=0.5,
        idle_poll_ms=50,
    )
    started = Pools(broker, config)
    yield started
    for pool in started.started:
        await started.stop(pool)


@pytest.fixture
async def runtime_memory(runtime_db: Database) -> AsyncIterator[str]:
    """A fresh memory in the runtime database, dropped afterwards."""
    memories = MemoryService(runtime_db, Migrations())
    name = f"rt_{uuid.uuid4().hex[:10]}"
    await memories.create(name, created_by="test")
    yield name
    await memories.delete(name, confirm=name)
