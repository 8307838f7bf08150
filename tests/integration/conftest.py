"""Fixtures shared by the integration tests."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import pytest

from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls


@pytest.fixture
async def fresh_database(db: Database, service_urls: ServiceUrls) -> AsyncIterator[str]:
    """The DSN of a brand-new, empty database on the session's server."""
    name = f"fresh_{uuid.uuid4().hex[:12]}"
    async with db.connection() as conn:
        await conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(service_urls.database)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    async with db.connection() as conn:
        await conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
