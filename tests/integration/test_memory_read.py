"""``Database.memory_read``: a read-only transaction in the memory's schema whose COMMIT the
caller does not wait for. Writes in it are refused; the connection goes back to the pool
only once the transaction is over, with nothing of the memory left on it; a failure inside
rolls back; an unknown memory is NOT_FOUND; close() waits for the ends in flight."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import NotFound
from fortemi.platform.settings import Settings


@pytest.fixture
async def single(settings: Settings, db: Database) -> AsyncIterator[Database]:
    """A pool of one connection: every acquire gets the connection the last one released."""
    assert settings.database_url is not None
    database = await Database.connect(
        settings.database_url.get_secret_value(), min_size=1, max_size=1
    )
    yield database
    await database.close()


async def test_reads_see_the_memorys_tables_and_writes_are_refused(
    single: Database, memory: str
) -> None:
    async with single.memory_read(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM note") == 0
        assert memory in await conn.fetchval("SELECT current_setting('search_path')")
    with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
        async with single.memory_read(memory) as conn:
            await conn.execute("INSERT INTO note (id, title) VALUES (gen_random_uuid(), 'x')")
    async with single.memory_transaction(memory) as conn:
        assert await conn.fetchval("SELECT count(*) FROM note") == 0


async def test_the_connection_goes_back_only_after_the_transaction_ended_with_no_path(
    single: Database, memory: str
) -> None:
    async with single.memory_read(memory) as conn:
        first = conn.get_server_pid()
    # One connection: this acquire waits for the COMMIT running in the background.
    async with single.connection() as conn:
        assert conn.get_server_pid() == first
        assert not conn.is_in_transaction()
        assert await conn.fetchval("SELECT current_setting('search_path')") == "public"
        assert await conn.fetchval("SELECT current_setting('transaction_read_only')") == "off"


async def test_a_failure_inside_rolls_back_and_propagates(single: Database, memory: str) -> None:
    async def failing() -> None:
        async with single.memory_read(memory) as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(42)")
            raise RuntimeError("the caller failed inside its read")

    with pytest.raises(RuntimeError, match="caller failed"):
        await failing()
    async with single.connection() as conn:
        assert not conn.is_in_transaction()
        locked = await conn.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        )
        assert locked == 0


async def test_an_unknown_memory_is_not_found(single: Database) -> None:
    with pytest.raises(NotFound, match="does not exist"):
        async with single.memory_read("no_such_memory_here") as conn:
            await conn.fetchval("SELECT count(*) FROM note")


async def test_close_waits_for_the_ends_in_flight(
    settings: Settings, db: Database, memory: str
) -> None:
    assert settings.database_url is not None
    database = await Database.connect(
        settings.database_url.get_secret_value(), min_size=1, max_size=2
    )
    pids = set()
    for _ in range(5):
        async with database.memory_read(memory) as conn:
            pids.add(conn.get_server_pid())
            await conn.fetchval("SELECT 1")
    await database.close()
    # Every transaction ended and every connection closed: no backend of that pool is left,
    # in a transaction or otherwise.
    async with db.connection() as conn:
        left = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", list(pids)
        )
    assert left == 0
