"""Pass two of an import: every row written in one transaction, after validation passed.

Ids, nulls, tombstones and timestamps are written as the shard has them (never
regenerated, defaulted or touched). ``on_conflict``: ``error`` (the default: validation
refused any conflict), ``skip`` (keep the memory's row), ``replace`` (take the shard's),
``merge`` (take the shard's only where it is newer by the table's ``newer`` column).
History rows are never changed, and under replace or merge a row the memory deleted stays
deleted unless the shard's is deleted too: an import never revives a tombstone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg

from fortemi.documents.shards.archive import Limits, ShardReader
from fortemi.documents.shards.components import Table, table_named
from fortemi.documents.shards.manifest import refused
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import Conflict

__all__ = ["POLICIES", "apply_shard"]

POLICIES = ("error", "skip", "replace", "merge")
_BATCH = 1000


def insert_sql(table: Table, columns: list[str], policy: str) -> str:
    cols = ", ".join(f'"{c}"' for c in columns)
    override = " OVERRIDING SYSTEM VALUE" if table.identity in columns else ""
    sql = (
        f"INSERT INTO {table.name} AS t ({cols}){override} SELECT {cols} "  # noqa: S608 - registry names
        f"FROM jsonb_populate_recordset(NULL::{table.name}, $1::text::jsonb)"
    )
    target = ", ".join(f'"{c}"' for c in table.conflict_target)
    if policy == "error":
        return sql
    updates = [c for c in columns if c not in table.key and c != table.identity]
    if policy == "skip" or table.history or not updates or (policy == "merge" and not table.newer):
        return f"{sql} ON CONFLICT ({target}) DO NOTHING"
    guards = []
    if table.tombstone:
        guards.append(f't."{table.tombstone}" IS NULL OR excluded."{table.tombstone}" IS NOT NULL')
    if policy == "merge":
        guards.append(f't."{table.newer}" < excluded."{table.newer}"')
    where = " WHERE " + " AND ".join(f"({g})" for g in guards) if guards else ""
    sets = ", ".join(f'"{c}" = excluded."{c}"' for c in updates)
    return f"{sql} ON CONFLICT ({target}) DO UPDATE SET {sets}{where}"


async def apply_shard(
    db: Database, memory: str, path: Path, limits: Limits, policy: str
) -> dict[str, int]:
    """Write the shard's rows; the rows written (inserted or updated) per table."""
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
                await _advance_identity(conn, table.name, table.identity)
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
        status = await conn.execute(insert_sql(table, columns, policy), json.dumps(batch))
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
    written[name] = written.get(name, 0) + int(status.rsplit(" ", 1)[-1])


async def _advance_identity(conn: Connection, table: str, column: str) -> None:
    """Moves the identity sequence past the ids imported with OVERRIDING SYSTEM VALUE,
    so rows made later never collide with them; never moves it back."""
    # Table and column are the registry's names, never input.
    await conn.execute(
        "SELECT setval(s.seq, m.top) "  # noqa: S608 - registry names
        "FROM (SELECT pg_get_serial_sequence($1, $2)::regclass AS seq) s, "
        f'(SELECT max("{column}") AS top FROM {table}) m '
        "WHERE m.top IS NOT NULL AND m.top > COALESCE((SELECT q.last_value FROM pg_sequences q "
        "WHERE format('%I.%I', q.schemaname, q.sequencename)::regclass = s.seq), 0)",
        table,
        column,
    )
