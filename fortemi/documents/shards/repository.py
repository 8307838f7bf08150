"""All SQL of shards: a memory's tables read as JSON rows, checked and written.

Table and column names in these statements come from the component registry and the
catalogue, never from a shard or a caller (``noqa: S608``); everything a shard carries
travels as a bound JSON parameter.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from fortemi.documents.shards.components import Table
from fortemi.platform.database import Connection

__all__ = [
    "advance_identity",
    "conflicts",
    "count_rows",
    "dangling",
    "insert_rows",
    "insert_sql",
    "row_texts",
    "stored_columns",
]

_BATCH = 5000
_FETCH = 2000
Key = tuple[Any, ...]


async def stored_columns(conn: Connection, table: str) -> list[str]:
    """The columns of ``table`` in the memory's schema that hold data (not generated)."""
    rows = await conn.fetch(
        "SELECT attname FROM pg_attribute "
        "WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped "
        "AND attgenerated = '' ORDER BY attnum",
        table,
    )
    return [r["attname"] for r in rows]


def _select(table: Table, columns: list[str]) -> str:
    # Table and column names come from the registry and the catalogue, never from input.
    pairs = ", ".join(f"'{c}', t.\"{c}\"" for c in columns)
    order = ", ".join(f"t.{c}" for c in table.key)
    return f"SELECT jsonb_build_object({pairs})::text FROM {table.name} AS t ORDER BY {order}"  # noqa: S608 - registry and catalogue names


async def count_rows(conn: Connection, table: str, where: str | None = None) -> int:
    # Both are fixed strings of the registry.
    sql = f"SELECT count(*) FROM {table}" + (f" WHERE {where}" if where else "")  # noqa: S608
    return int(await conn.fetchval(sql))


async def row_texts(conn: Connection, table: Table, columns: list[str]) -> AsyncIterator[str]:
    """Every row of ``table`` as JSON text of ``columns``, in key order, through a cursor."""
    async for record in conn.cursor(_select(table, columns), prefetch=_FETCH):
        yield record[0]


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


async def insert_rows(
    conn: Connection, table: Table, columns: list[str], policy: str, rows: list[dict[str, Any]]
) -> int:
    """Write ``rows``; how many were inserted or updated."""
    status = await conn.execute(insert_sql(table, columns, policy), json.dumps(rows))
    return int(status.rsplit(" ", 1)[-1])


async def advance_identity(conn: Connection, table: str, column: str) -> None:
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


def _batches(keys: set[Key], columns: tuple[str, ...]) -> list[str]:
    rows = [dict(zip(columns, key, strict=True)) for key in keys]
    return [json.dumps(rows[i : i + _BATCH]) for i in range(0, len(rows), _BATCH)]


async def dangling(
    conn: Connection, target: str, columns: tuple[str, ...], missing: set[Key]
) -> dict[str, Any] | None:
    """The first of the ``missing`` keys of ``target`` the memory does not hold either."""
    condition = " AND ".join(f't."{c}" = x."{c}"' for c in columns)
    # Table and column names are the registry's; the keys travel as a bound JSON value.
    sql = (
        "SELECT to_jsonb(x)::text "  # noqa: S608 - registry names
        f"FROM jsonb_populate_recordset(NULL::{target}, $1::text::jsonb) x "
        f"WHERE NOT EXISTS (SELECT 1 FROM {target} t WHERE {condition}) LIMIT 1"
    )
    for batch in _batches(missing, columns):
        found = await conn.fetchval(sql, batch)
        if found is not None:
            row: dict[str, Any] = json.loads(found)
            return row
    return None


async def conflicts(conn: Connection, table: Table, keys: set[Key]) -> int:
    sql = (
        f"SELECT count(*) FROM jsonb_populate_recordset(NULL::{table.name}, $1::text::jsonb) x "  # noqa: S608 - registry names
        f"WHERE EXISTS (SELECT 1 FROM {table.name} t WHERE {table.match_sql})"
    )
    total = 0
    for batch in _batches(keys, table.key):
        total += int(await conn.fetchval(sql, batch))
    return total
