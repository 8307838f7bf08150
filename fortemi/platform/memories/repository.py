"""All SQL for the memory registry (``public.memory``) and memory schemas."""

from __future__ import annotations

import asyncpg

from fortemi.platform.database import memory_schema
from fortemi.platform.memories.models import Memory

__all__ = ["MemoryRepository"]

_SELECT = "SELECT name, is_default, schema_version, created_at, created_by FROM public.memory"


def _memory(row: asyncpg.Record) -> Memory:
    return Memory(
        name=row["name"],
        is_default=row["is_default"],
        schema_version=row["schema_version"],
        created_at=row["created_at"],
        created_by=row["created_by"],
    )


class MemoryRepository:
    async def get(
        self, conn: asyncpg.Connection, name: str, *, lock: bool = False
    ) -> Memory | None:
        suffix = " WHERE name = $1 FOR UPDATE" if lock else " WHERE name = $1"
        row = await conn.fetchrow(_SELECT + suffix, name)
        return _memory(row) if row else None

    async def list(self, conn: asyncpg.Connection) -> list[Memory]:
        rows = await conn.fetch(_SELECT + " ORDER BY name")
        return [_memory(row) for row in rows]

    async def default(self, conn: asyncpg.Connection) -> Memory | None:
        row = await conn.fetchrow(_SELECT + " WHERE is_default")
        return _memory(row) if row else None

    async def insert(self, conn: asyncpg.Connection, name: str, created_by: str | None) -> bool:
        """Register ``name`` and create its empty schema; False if it already exists."""
        inserted = await conn.fetchval(
            "INSERT INTO public.memory (name, created_by) VALUES ($1, $2) "
            "ON CONFLICT (name) DO NOTHING RETURNING true",
            name,
            created_by,
        )
        if not inserted:
            return False
        await conn.execute(f"CREATE SCHEMA {memory_schema(name)}")
        return True

    async def drop(self, conn: asyncpg.Connection, name: str) -> None:
        await conn.execute(f"DROP SCHEMA IF EXISTS {memory_schema(name)} CASCADE")
        await conn.execute("DELETE FROM public.memory WHERE name = $1", name)

    async def set_default(self, conn: asyncpg.Connection, name: str) -> None:
        await conn.execute("UPDATE public.memory SET is_default = false WHERE is_default")
        await conn.execute("UPDATE public.memory SET is_default = true WHERE name = $1", name)
