"""All SQL for the memory registry (``public.memory``) and memory schemas."""

from __future__ import annotations

import asyncpg

from fortemi.platform.database import memory_schema
from fortemi.platform.memories.models import Memory
from fortemi.platform.sql import Query, Table

__all__ = ["MEMORY", "MemoryRepository"]

# Declared once: a memory's columns are the fields of Memory.
MEMORY = Table("public.memory", Memory)

_GET = MEMORY.query("SELECT {columns} FROM public.memory WHERE name = :name")
_GET_LOCKED = MEMORY.query("SELECT {columns} FROM public.memory WHERE name = :name FOR UPDATE")
_LIST = MEMORY.query("SELECT {columns} FROM public.memory ORDER BY name")
_DEFAULT = MEMORY.query("SELECT {columns} FROM public.memory WHERE is_default")
_INSERT = MEMORY.insert(
    ("name", "created_by"), suffix="ON CONFLICT (name) DO NOTHING RETURNING true"
)
_DELETE = Query("DELETE FROM public.memory WHERE name = :name")
_CLEAR_DEFAULT = Query("UPDATE public.memory SET is_default = false WHERE is_default")
_SET_DEFAULT = Query("UPDATE public.memory SET is_default = true WHERE name = :name")


class MemoryRepository:
    async def get(
        self, conn: asyncpg.Connection, name: str, *, lock: bool = False
    ) -> Memory | None:
        query = _GET_LOCKED if lock else _GET
        row = await conn.fetchrow(query.sql, *query.args(name=name))
        return MEMORY.from_record(row) if row else None

    async def list(self, conn: asyncpg.Connection) -> list[Memory]:
        return MEMORY.from_records(await conn.fetch(_LIST.sql))

    async def default(self, conn: asyncpg.Connection) -> Memory | None:
        row = await conn.fetchrow(_DEFAULT.sql)
        return MEMORY.from_record(row) if row else None

    async def insert(self, conn: asyncpg.Connection, name: str, created_by: str | None) -> bool:
        """Register ``name`` and create its empty schema; False if it already exists."""
        inserted = await conn.fetchval(_INSERT.sql, *_INSERT.args(name=name, created_by=created_by))
        if not inserted:
            return False
        await conn.execute(f"CREATE SCHEMA {memory_schema(name)}")
        return True

    async def drop(self, conn: asyncpg.Connection, name: str) -> None:
        await conn.execute(f"DROP SCHEMA IF EXISTS {memory_schema(name)} CASCADE")
        await conn.execute(_DELETE.sql, *_DELETE.args(name=name))

    async def set_default(self, conn: asyncpg.Connection, name: str) -> None:
        await conn.execute(_CLEAR_DEFAULT.sql)
        await conn.execute(_SET_DEFAULT.sql, *_SET_DEFAULT.args(name=name))
