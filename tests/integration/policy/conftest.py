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
from typing import Any

import pytest
import redis.asyncio as redis

from fortemi.auth.policy import DatabasePolicyProvider
from fortemi.platform.database import Database
from fortemi.platform.embedded import ServiceUrls
from tests.support.policies import FIXTURE_POLICIES


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
    """A writable copy of the suite's fixture policy folder."""
    directory = tmp_path / "policies"
    shutil.copytree(FIXTURE_POLICIES, directory)
    return directory


@pytest.fixture
async def redis_client(service_urls: ServiceUrls) -> AsyncIterator[redis.Redis]:
    client = redis.Redis.from_url(service_urls.redis)
    yield client
    await client.aclose()


# Everyone may read and change this memory: these tests are about the policies of the
# projects and skills inside it, which only apply to those the memory admits.
OPEN_MEMORY: dict[str, Any] = {
    "access_level": "public",
    "actions": {"write": {}, "delete": {}, "admin": {}},
}


@pytest.fixture
async def memory(memory: str, db: Database) -> str:
    """The session's fresh memory, with a stored policy admitting everyone (the row goes
    with the memory)."""
    await DatabasePolicyProvider(db).put(
        "memory", memory, memory, {**OPEN_MEMORY, "memory": memory}, actor="policy-tests"
    )
    return memory
