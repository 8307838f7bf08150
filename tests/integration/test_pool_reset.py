"""A connection goes back to the pool without the session reset's round trip only when it
was used inside one transaction; what such a use can leave behind is still gone, and a
bare connection is still reset in full."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from fortemi.platform.database import Database
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


async def _session(database: Database) -> tuple[int, str, str, bool, int]:
    async with database.connection() as conn:
        row = await conn.fetchrow(
            "SELECT pg_backend_pid() AS pid, current_setting('search_path') AS path, "
            "current_setting('work_mem') AS work_mem, "
            "(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
            " AND pid = pg_backend_pid()) > 0 AS locked, "
            "(SELECT count(*) FROM pg_prepared_xacts) AS prepared"
        )
        assert row is not None
        return row["pid"], row["path"], row["work_mem"], row["locked"], row["prepared"]


async def test_a_memory_transaction_leaves_no_setting_or_lock_on_its_connection(
    single: Database, memory: str
) -> None:
    pid, path, work_mem, _, _ = await _session(single)
    async with single.memory_transaction(memory, local={"work_mem": 8192}) as conn:
        await conn.execute("SELECT pg_advisory_xact_lock(42)")
        assert await conn.fetchval("SELECT current_setting('work_mem')") == "8MB"
        assert memory in await conn.fetchval("SELECT current_setting('search_path')")
    assert await _session(single) == (pid, path, work_mem, False, 0)


async def test_a_memory_transaction_that_fails_midway_is_rolled_back_before_reuse(
    single: Database, memory: str
) -> None:
    pid, path, work_mem, _, _ = await _session(single)

    async def failing() -> None:
        async with single.memory_transaction(memory) as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(42)")
            raise RuntimeError("the caller failed inside its transaction")

    with pytest.raises(RuntimeError):
        await failing()
    async with single.connection() as conn:
        assert not conn.is_in_transaction()
    assert await _session(single) == (pid, path, work_mem, False, 0)


async def test_a_bare_connections_session_state_is_reset_when_it_goes_back(
    single: Database, memory: str
) -> None:
    pid, path, work_mem, _, _ = await _session(single)
    # A scoped use first: its mark must not spare the bare use that follows.
    async with single.memory_transaction(memory):
        pass
    async with single.connection() as conn:
        await conn.execute("SELECT pg_advisory_lock(42)")  # as migrations do
        await conn.execute("SET work_mem = '16MB'")
        await conn.execute(f"SET search_path TO {memory}, public")
        await conn.execute("LISTEN fortemi_test")
        await conn.execute("BEGIN")
        await conn.execute("DECLARE kept CURSOR WITH HOLD FOR SELECT 1")
        await conn.execute("COMMIT")
    assert await _session(single) == (pid, path, work_mem, False, 0)
    async with single.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM pg_cursors WHERE name = 'kept'") == 0
        assert await conn.fetchval("SELECT count(*) FROM pg_listening_channels()") == 0


async def test_only_bare_connections_pay_the_reset_query_on_release(
    single: Database, memory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[bool] = []
    default = asyncpg.Connection.get_reset_query

    def recorded(self: asyncpg.Connection) -> str:
        asked.append(True)
        return default(self)

    monkeypatch.setattr(asyncpg.Connection, "get_reset_query", recorded)
    async with single.memory_transaction(memory) as conn:
        await conn.fetchval("SELECT 1")
    async with single.shared_transaction() as conn:
        await conn.fetchval("SELECT 1")
    async with single.statements() as conn:
        await conn.fetchval("SELECT 1")
    assert asked == []
    async with single.connection() as conn:
        await conn.fetchval("SELECT 1")
    assert asked == [True]
