"""Pass two of an import: every row written in one transaction, after validation passed.

Ids, nulls, tombstones and timestamps are written as the shard has them (never
regenerated, defaulted or touched). ``on_conflict``: ``error`` (the default: validation
refused any conflict), ``skip`` (keep the memory's row), ``replace`` (take the shard's),
``merge`` (take the shard's only where it is newer by the table's ``newer`` column).
History rows are never changed, and under replace or merge a row the memory deleted stays
deleted unless the shard's is deleted too: an import never revives a tombstone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import asyncpg

from fortemi.documents.shards.archive import Limits, ShardReader
from fortemi.documents.shards.components import table_named
from fortemi.documents.shards.manifest import refused
from fortemi.documents.shards.repository import advance_identity, insert_rows
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import Conflict

__all__ = ["POLICIES", "apply_shard"]

POLICIES = ("error", "skip", "replace", "merge")
_BATCH = 1000


AfterImport = Callable[[Connection], Awaitable[object]]


async def apply_shard(
    db: Database,
    memory: str,
    path: Path,
    limits: Limits,
    policy: str,
    after: Sequence[AfterImport] = (),
) -> dict[str, int]:
    """Write the shard's rows; the rows written (inserted or updated) per table. ``after``:
    what other features derive from the rows (indexes), run in the same transaction."""
    written: dict[str, int] = {}
    async with db.memory_transaction(memory, subject=f"Memory {memory}") as conn:
        with ShardReader(path, limits) as reader:
            manifest = reader.manifest
            if manifest is None:  # pragma: no cover - __enter__ reads it or raises
                raise RuntimeError("no manifest")
            columns = {t.name: t.columns for c in manifest.components for t in c.tables}
            batch: list[dict[str, Any]] = []
            current: str | None = None
            for row in reader.rows():
                if row.table != current or len(batch) >= _BATCH:
                    if current is not None:
                        await _write(conn, current, columns[current], batch, policy, written)
                    current, batch = row.table, []
                batch.append(row.values)
            if current is not None:
                await _write(conn, current, columns[current], batch, policy, written)
        for name in written:
            table = table_named(name)
            if table is not None and table.identity:
                await advance_identity(conn, table.name, table.identity)
        for hook in after:
            await hook(conn)
    return written


async def _write(
    conn: Connection,
    name: str,
    columns: list[str],
    batch: list[dict[str, Any]],
    policy: str,
    written: dict[str, int],
) -> None:
    table = table_named(name)
    if table is None or not batch:
        return
    try:
        count = await insert_rows(conn, table, columns, policy, batch)
    except asyncpg.UniqueViolationError as exc:
        raise Conflict(
            f"A {name} row of the shard collides with one of the memory "
            f"({exc.constraint_name}); choose --on-conflict skip, replace or merge",
            reason="shard_conflict",
        ) from exc
    except (asyncpg.IntegrityConstraintViolationError, asyncpg.DataError) as exc:
        raise refused(
            "shard_bad_row", f"A {name} row of the shard is refused by the memory: {exc}"
        ) from exc
    written[name] = written.get(name, 0) + count
