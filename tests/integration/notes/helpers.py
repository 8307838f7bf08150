"""Helpers for the notes integration tests: reading the tables behind the service's back."""

from __future__ import annotations

import asyncio

from fortemi.platform.database import Database

# The limits of the ``notes`` fixture: small, so tests can cross them cheaply.
MAX_NOTE_BYTES = 4096
MAX_PAGE_SIZE = 50
MAX_UPSERT_BATCH = 10


async def count_rows(db: Database, memory: str, table: str) -> int:
    """Rows in one of the memory's note tables, read behind the service's back."""
    assert table in {"note", "note_original", "note_version"}
    async with db.memory_transaction(memory) as conn:
        count: int = await conn.fetchval(f"SELECT count(*) FROM {table}")  # noqa: S608
        return count


async def wait_for_lock_waiters(db: Database, count: int) -> None:
    """Return once ``count`` sessions wait on a lock (or after a generous number of polls).

    Tests use this to line concurrent operations up behind a lock they hold, so that the
    race they check happens every run instead of by chance. It never fails a test itself:
    the test's own assertions decide.
    """
    for _ in range(1000):
        waiting = await db.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        if waiting >= count:
            return
        await asyncio.sleep(0.01)
