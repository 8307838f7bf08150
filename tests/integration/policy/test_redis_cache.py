"""Two replicas over one database and one Redis: a change on one reaches the other.

Time is a manual clock per replica: "after the refresh interval" is a clock advance, not
a sleep, so the test proves the protocol, not the scheduler.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis

from fortemi.auth.decision import Action, Reason, Resource, ResourceType
from fortemi.auth.policy import (
    AccessDecisionEngine,
    CompositePolicyProvider,
    DatabasePolicyProvider,
    FilePolicyProvider,
    RedisCachedPolicyProvider,
)
from fortemi.platform.database import Database
from tests.unit.policy.helpers import principal

ACTOR = "policy-tests"
ENGINE = AccessDecisionEngine()
ALICE = principal("alice", ["data-team"], ["viewer"])


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def replica(
    tree: Path, db: Database, client: redis.Redis, key: str, clock: Clock
) -> RedisCachedPolicyProvider:
    inner = CompositePolicyProvider(FilePolicyProvider(tree), DatabasePolicyProvider(db))
    return RedisCachedPolicyProvider(inner, client, refresh_seconds=1.0, clock=clock, key=key)


def database_of(provider: RedisCachedPolicyProvider) -> DatabasePolicyProvider:
    assert isinstance(provider.inner, CompositePolicyProvider)
    return provider.inner.database


@pytest.fixture
async def key(redis_client: redis.Redis, unique: str) -> AsyncIterator[str]:
    name = f"fortemi:test:policies:{unique}"
    yield name
    await redis_client.delete(name)


async def alice_reads(provider: RedisCachedPolicyProvider, resource: Resource) -> bool:
    return ENGINE.decide(await provider.snapshot(), ALICE, Action.READ, resource).allowed


async def test_a_change_on_one_replica_reaches_the_other_after_its_refresh_interval(
    tree: Path, db: Database, redis_client: redis.Redis, key: str, memory: str, unique: str
) -> None:
    clock_a, clock_b = Clock(), Clock()
    a = replica(tree, db, redis_client, key, clock_a)
    b = replica(tree, db, redis_client, key, clock_b)
    project = Resource(ResourceType.PROJECT, f"proj-{unique}", memory)
    assert not await alice_reads(a, project)
    assert not await alice_reads(b, project)

    await database_of(a).put(
        "project", memory, project.name or "", {"access_level": "public"}, actor=ACTOR
    )
    await a.invalidate()
    assert await alice_reads(a, project)  # at once where the change was made

    clock_b.now += 0.5
    assert not await alice_reads(b, project)  # b has not looked yet
    clock_b.now += 0.5
    assert await alice_reads(b, project)  # and sees it at the next look


async def test_a_reload_policies_on_one_replica_brings_file_edits_to_the_other(
    tree: Path, db: Database, redis_client: redis.Redis, key: str
) -> None:
    clock_a, clock_b = Clock(), Clock()
    a = replica(tree, db, redis_client, key, clock_a)
    b = replica(tree, db, redis_client, key, clock_b)
    poimen = Resource(ResourceType.PROJECT, "poimen", "default")
    await a.snapshot()
    await b.snapshot()
    (tree / "projects" / "poimen" / "_access.yaml").write_text(
        "project: poimen\naccess_level: public\n"
    )
    await a.invalidate()  # what reloadPolicies does
    clock_b.now += 1
    assert await alice_reads(b, poimen)


async def test_with_redis_down_the_last_set_is_still_served(
    tree: Path, db: Database, memory: str, unique: str
) -> None:
    unreachable = redis.Redis.from_url(f"unix://{tree.parent}/no-redis.sock")
    clock = Clock()
    try:
        cached = replica(tree, db, unreachable, "fortemi:test:unused", clock)
        served = await cached.snapshot()
        for _ in range(3):
            clock.now += 1
            assert await cached.snapshot() is served
        decision = ENGINE.decide(served, ALICE, Action.READ, Resource.audit())
        assert decision.reason is Reason.NOT_IN_OWNER_GROUP  # real policies, not an empty set

        # A write still takes effect on this replica; the announcement waits for Redis.
        project = Resource(ResourceType.PROJECT, f"proj-{unique}", memory)
        await database_of(cached).put(
            "project", memory, project.name or "", {"access_level": "public"}, actor=ACTOR
        )
        await cached.invalidate()
        assert await alice_reads(cached, project)
    finally:
        await unreachable.aclose()
