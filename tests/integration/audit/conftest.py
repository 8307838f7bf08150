"""Fixtures for the audit tests: a fresh, migrated database per test, and a record maker.

The audit log is one shared table that other tests write to concurrently, and several of
these tests tamper with it or count its rows, so each test gets a database of its own:
a copy of a template migrated once per session (copying is much cheaper than migrating).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from fortemi.auth.audit import AuditWriter
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.migrations import Migrations
from tests.integration.audit.helpers import KEYRING


def _dsn(service_urls: ServiceUrls, name: str) -> str:
    return urlunsplit(urlsplit(service_urls.database)._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
async def audit_template(db: Database, service_urls: ServiceUrls) -> AsyncIterator[str]:
    """The name of a database with the shared migrations applied and no connections."""
    name = f"audit_tpl_{uuid.uuid4().hex[:12]}"
    async with db.connection() as conn:
        await conn.execute(f'CREATE DATABASE "{name}"')
    template = await Database.connect(_dsn(service_urls, name), min_size=1, max_size=1)
    try:
        await Migrations().migrate_shared(template)
    finally:
        await template.close()
    yield name
    async with db.connection() as conn:
        await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
async def fresh_dsn(
    db: Database, service_urls: ServiceUrls, audit_template: str
) -> AsyncIterator[str]:
    """The DSN of a new database copied from the migrated template, dropped afterwards."""
    name = f"audit_{uuid.uuid4().hex[:12]}"
    async with db.connection() as conn:
        await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{audit_template}"')
    yield _dsn(service_urls, name)
    async with db.connection() as conn:
        await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
async def audit_db(fresh_dsn: str) -> AsyncIterator[Database]:
    """A pool on the test's own database, which holds nothing but empty audit tables."""
    database = await Database.connect(fresh_dsn, min_size=1, max_size=8)
    yield database
    await database.close()


@pytest.fixture
async def writer(audit_db: Database) -> AsyncIterator[AuditWriter]:
    """A started writer on the test's database, closed afterwards."""
    async with AuditWriter(audit_db, keyring=KEYRING, segment="seg-a") as started:
        yield started
