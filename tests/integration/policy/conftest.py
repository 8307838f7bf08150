"""Fixtures for the policy provider tests: the real database, Redis, and a policy folder.

``public.access_policy`` is shared with every other test in the session, so these tests
use resource names of their own (``unique``) and assert only on those, and remove what
they store (memory-scoped rows also go with the test's memory).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis

from fortemi.auth.policy import DatabasePolicyProvider
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls

SHIPPED = Path(__file__).resolve().parents[3] / "policies"


@pytest.fixture
def unique() -> str:
    """A suffix no other test uses, for resource names and Redis keys."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
async def store(db: Database) -> AsyncIterator[DatabasePolicyProvider]:
    provider = DatabasePolicyProvider(db)
    yield provider
    async with db.shared_transaction() as conn:  # rows for every memory outlive the test
        await conn.execute(
            "DELETE FROM public.access_policy WHERE memory IS NULL AND updated_by = 'policy-tests'"
        )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the shipped policy folder."""
    directory = tmp_path / "policies"
    shutil.copytree(SHIPPED, directory)
    return directory


@pytest.fixture
async def redis_client(service_urls: ServiceUrls) -> AsyncIterator[redis.Redis]:
    client = redis.Redis.from_url(service_urls.redis)
    yield client
    await client.aclose()
