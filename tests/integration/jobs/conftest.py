"""Fixtures for the job service tests: a private database and a service over it.

``claim``, ``reap`` and ``due_for_send`` act on every job in ``public.job``, whatever its
type; sharing the session database would let these tests take (or reap) jobs the runtime's
tests create, and theirs take ours. So these tests own a database of their own, migrated
once, and every test starts from empty job tables in it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.jobs.backoff import Backoff
from fortemi.platform.jobs.registry import JobRegistry
from fortemi.platform.jobs.service import JobService
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations
from tests.integration.jobs.helpers import LEASE_SECONDS, MEMORIES, make_registry


@pytest.fixture(scope="session")
async def jobs_db(db: Database, service_urls: ServiceUrls) -> AsyncIterator[Database]:
    name = f"jobs_{uuid.uuid4().hex[:12]}"
    async with db.connection() as conn:
        await conn.execute(f'CREATE DATABASE "{name}"')
    dsn = urlunsplit(urlsplit(service_urls.database)._replace(path=f"/{name}"))
    # Enough connections for the concurrency tests' transactions to overlap for real.
    database = await Database.connect(dsn, min_size=2, max_size=24)
    try:
        await Migrations().migrate_shared(database)
        memories = MemoryService(database, Migrations())
        for memory in MEMORIES:
            await memories.create(memory, created_by="job-tests")
        yield database
    finally:
        await database.close()
        async with db.connection() as conn:
            await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
async def _empty_job_tables(jobs_db: Database) -> None:
    async with jobs_db.connection() as conn:
        await conn.execute("TRUNCATE public.job, public.job_pause")


@pytest.fixture(scope="session")
def registry() -> JobRegistry:
    return make_registry()


@pytest.fixture
def jobs(jobs_db: Database, registry: JobRegistry) -> JobService:
    # No jitter: the delays a test sees are exactly base * 2 ** (attempt - 1).
    return JobService(jobs_db, registry, backoff=Backoff(jitter=0.0), lease_seconds=LEASE_SECONDS)
