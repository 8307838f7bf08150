from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import asyncpg
import pytest
import redis.asyncio as redis

from fortemi.auth.policy import PolicyService, build_policy_service
from fortemi.platform.database import Connection, Database, memory_schema
from fortemi.platform.embedded import ServiceUrls
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.memories import MemoryPolicyStore, MemoryService
from fortemi.platform.migrations import Migrations
from tests.support.policies import FIXTURE_POLICIES


async def test_created_memory_has_its_own_schema_at_latest_template_version(
    memory: str, memory_service: MemoryService, db: Database
) -> None:
    record = await memory_service.get(memory)
    assert record is not None
    assert record.schema_version == Migrations().memory_version
    tables = await db.fetchval(
        "SELECT array_agg(table_name::text ORDER BY table_name) FROM information_schema.tables "
        "WHERE table_schema = $1",
        f"mem_{memory}",
    )
    assert {"note", "note_original", "note_version"} <= set(tables)


@pytest.mark.parametrize("name", ["", "A", "1abc", "a-b", "a" * 41, 'x"; drop schema public', "é"])
async def test_invalid_memory_names_are_rejected_before_any_sql(
    memory_service: MemoryService, name: str
) -> None:
    with pytest.raises(BadUserInput):
        await memory_service.create(name, created_by="test")


async def test_creating_an_existing_memory_is_a_conflict(
    memory: str, memory_service: MemoryService
) -> None:
    with pytest.raises(Conflict):
        await memory_service.create(memory, created_by="test")


async def test_delete_requires_the_name_repeated(
    memory: str, memory_service: MemoryService
) -> None:
    with pytest.raises(BadUserInput):
        await memory_service.delete(memory, confirm="yes")
    assert await memory_service.get(memory) is not None


async def test_resolving_an_unknown_memory_is_not_found(memory_service: MemoryService) -> None:
    with pytest.raises(NotFound):
        await memory_service.resolve("no_such_memory")


async def test_memory_behind_the_template_is_migrated_on_first_access(
    memory: str, memory_service: MemoryService, db: Database
) -> None:
    # Roll the memory back to version 0 by hand: empty its schema and reset its version.
    schema = memory_schema(memory)
    async with db.connection() as conn:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE; CREATE SCHEMA {schema}")
        await conn.execute("UPDATE public.memory SET schema_version = 0 WHERE name = $1", memory)
    fresh = MemoryService(db, Migrations())  # no cached knowledge of the memory
    assert await fresh.resolve(memory) == memory
    async with db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM note") == 0
    record = await fresh.get(memory)
    assert record is not None
    assert record.schema_version == Migrations().memory_version


async def test_default_memory_cannot_be_deleted(memory: str, memory_service: MemoryService) -> None:
    await memory_service.ensure("default", default=True)
    default = await memory_service.default_name()
    with pytest.raises(Conflict):
        await memory_service.delete(default, confirm=default)


async def test_shared_migrations_are_idempotent(db: Database) -> None:
    assert await Migrations().migrate_shared(db) == []


async def test_transaction_settings_last_for_the_transaction_only(
    memory: str, db: Database
) -> None:
    async with db.memory_transaction(memory, local={"hnsw.ef_search": 321}) as conn:
        assert await conn.fetchval("SELECT current_setting('hnsw.ef_search')") == "321"
    async with db.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT current_setting('hnsw.ef_search', true)") != "321"


@pytest.mark.parametrize(
    "local",
    [{"hnsw.ef_search; drop table note": 1}, {"work_mem": "64MB"}, {"a.b.c": 1}, {"x": True}],
)
async def test_transaction_settings_refuse_anything_but_a_plain_name_and_an_integer(
    memory: str, db: Database, local: dict[str, object]
) -> None:
    with pytest.raises(ValueError, match="not a setting"):
        async with db.memory_transaction(memory, local=local):  # type: ignore[arg-type]
            pass


# -- a memory and its policy ---------------------------------------------------------------

_fresh = itertools.count()


def _fresh_name() -> str:
    return f"mp{os.getpid()}_{next(_fresh)}"


def _private(name: str) -> dict[str, Any]:
    return {"version": 1, "memory": name, "access_level": "private", "grant": {"subjects": ["a"]}}


@pytest.fixture
async def policies(db: Database, service_urls: ServiceUrls) -> AsyncIterator[PolicyService]:
    client = redis.Redis.from_url(service_urls.redis)
    yield build_policy_service(FIXTURE_POLICIES, db, client)
    await client.aclose()


class _PolicyWriteFailed(Exception):
    pass


class FailingAfterWrite:
    """The real policy store, whose write lands in the transaction and then fails there:
    by raising, or by a statement the database rejects."""

    def __init__(self, inner: MemoryPolicyStore, *, by_database: bool) -> None:
        self._inner = inner
        self._by_database = by_database
        self.announced = 0

    def check(self, memory: str, document: Mapping[str, Any]) -> None:
        self._inner.check(memory, document)

    async def store(
        self, conn: Connection, memory: str, document: Mapping[str, Any], *, actor: str
    ) -> None:
        await self._inner.store(conn, memory, document, actor=actor)
        if self._by_database:
            await conn.execute("SELECT 1 / 0")
        raise _PolicyWriteFailed

    async def changed(self) -> None:
        self.announced += 1
        await self._inner.changed()


async def _traces(db: Database, name: str) -> tuple[int, int, int]:
    """Rows of ``name`` in the registry, schemas of it, and stored policies of it."""
    async with db.connection() as conn:
        return (
            await conn.fetchval("SELECT count(*) FROM public.memory WHERE name = $1", name),
            await conn.fetchval(
                "SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1",
                memory_schema(name),
            ),
            await conn.fetchval(
                "SELECT count(*) FROM public.access_policy WHERE memory = $1", name
            ),
        )


async def test_a_memory_created_with_a_policy_has_it_stored_and_in_force(
    db: Database, policies: PolicyService
) -> None:
    service = MemoryService(db, Migrations(), policies=policies.memory_policies())
    name = _fresh_name()
    await service.create(name, created_by="alice", policy=_private(name))
    try:
        stored = await policies.get("memory", name, name)
        assert stored is not None
        assert stored.document == _private(name)
        assert stored.updated_by == "alice"
        in_force = {(i.resource_type.value, i.name) for i in (await policies.snapshot()).infos()}
        assert ("memory", name) in in_force
    finally:
        await service.delete(name, confirm=name)
    # Deleting the memory took its policy along, and the set in force forgot it at once.
    in_force = {(i.resource_type.value, i.name) for i in (await policies.snapshot()).infos()}
    assert ("memory", name) not in in_force
    assert await _traces(db, name) == (0, 0, 0)


@pytest.mark.parametrize("by_database", [False, True], ids=["raises", "database_rejects"])
async def test_a_policy_write_that_fails_leaves_no_memory_behind(
    db: Database, policies: PolicyService, by_database: bool
) -> None:
    store = FailingAfterWrite(policies.memory_policies(), by_database=by_database)
    service = MemoryService(db, Migrations(), policies=store)
    name = _fresh_name()
    expected = asyncpg.DivisionByZeroError if by_database else _PolicyWriteFailed
    with pytest.raises(expected):
        await service.create(name, created_by="alice", policy=_private(name))
    assert await _traces(db, name) == (0, 0, 0)
    assert await service.get(name) is None
    assert store.announced == 1  # replicas reload, whatever the outcome
    # Nothing half-made blocks the name: it can be created now.
    healthy = MemoryService(db, Migrations(), policies=policies.memory_policies())
    await healthy.create(name, created_by="alice", policy=_private(name))
    await healthy.delete(name, confirm=name)


async def test_an_invalid_policy_is_refused_before_the_memory_exists(
    db: Database, policies: PolicyService
) -> None:
    service = MemoryService(db, Migrations(), policies=policies.memory_policies())
    name = _fresh_name()
    with pytest.raises(BadUserInput) as refused:
        await service.create(
            name, created_by="alice", policy={**_private(name), "access_level": "grup"}
        )
    assert refused.value.extensions["field"] == "document.access_level"
    assert await _traces(db, name) == (0, 0, 0)
