"""The migration runner applies each file once, under a lock, and refuses edited history."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from fortemi.platform.database import Database
from fortemi.platform.migrations import MigrationError, Migrations, default_migrations_root


async def test_concurrent_runners_apply_each_shared_migration_exactly_once(
    fresh_database: str,
) -> None:
    databases = [await Database.connect(fresh_database, min_size=1, max_size=2) for _ in range(3)]
    try:
        results = await asyncio.gather(*(Migrations().migrate_shared(d) for d in databases))
        applied = sorted(name for result in results for name in result)
        assert applied == [f"{m.version:04d}_{m.name}" for m in Migrations().shared]
        rows = await databases[0].fetchval("SELECT count(*) FROM public.schema_migration")
        assert rows == len(Migrations().shared)
        assert await Migrations().migrate_shared(databases[0]) == []
    finally:
        for database in databases:
            await database.close()


async def test_an_applied_migration_that_was_edited_is_refused(
    fresh_database: str, tmp_path: Path
) -> None:
    root = tmp_path / "migrations"
    shutil.copytree(default_migrations_root(), root)
    database = await Database.connect(fresh_database, min_size=1, max_size=1)
    try:
        await Migrations(root).migrate_shared(database)
        first = sorted((root / "shared").glob("*.sql"))[0]
        first.write_text(first.read_text() + "\n-- edited\n")
        with pytest.raises(MigrationError, match="edited after it was applied"):
            await Migrations(root).migrate_shared(database)
    finally:
        await database.close()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (["0001_a.sql", "0003_c.sql"], "without gaps"),
        (["0001_a.sql", "1_b.sql"], "NNNN_name.sql"),
    ],
)
def test_malformed_migration_sets_are_refused(
    files: list[str], message: str, tmp_path: Path
) -> None:
    for folder in ("shared", "memory"):
        (tmp_path / folder).mkdir()
    for name in files:
        (tmp_path / "shared" / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=message):
        Migrations(tmp_path)
