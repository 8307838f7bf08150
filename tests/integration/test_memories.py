from __future__ import annotations

import pytest

from fortemi.platform.database import Database, memory_schema
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.memories import MemoryService
from fortemi.platform.migrations import Migrations


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
