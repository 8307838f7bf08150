"""Memory operations: create, list, delete, default, and resolving a request's memory.

``resolve`` is on every request's path, so it answers from a short-lived in-process cache;
a miss reads the registry and, when the memory's schema is behind the template, migrates it
there and then (lazy migration keeps start-up independent of the number of memories).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fortemi.platform.database import Database, validate_memory_name
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.memories.models import Memory
from fortemi.platform.memories.repository import MemoryRepository
from fortemi.platform.migrations import Migrations

__all__ = ["DEFAULT_MEMORY", "MemoryService"]

DEFAULT_MEMORY = "default"


class MemoryService:
    def __init__(
        self,
        db: Database,
        migrations: Migrations,
        *,
        cache_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._migrations = migrations
        self._repo = MemoryRepository()
        self._cache_seconds = cache_seconds
        self._clock = clock
        # name -> expiry of the knowledge "exists and is at the latest template version"
        self._ready: dict[str, float] = {}
        self._default: tuple[str, float] | None = None

    # -- queries ---------------------------------------------------------------------------

    async def list(self) -> list[Memory]:
        async with self._db.shared_transaction() as conn:
            return await self._repo.list(conn)

    async def get(self, name: str) -> Memory | None:
        validate_memory_name(name)
        async with self._db.shared_transaction() as conn:
            return await self._repo.get(conn, name)

    async def resolve(self, name: str | None) -> str:
        """The memory a request works in: ``name`` or the default; exists and is migrated."""
        if name is None:
            return await self.default_name()
        if not await self.exists(name):
            raise NotFound(f"No memory {name!r}", memory=name)
        return name

    async def exists(self, name: str) -> bool:
        """Whether memory ``name`` exists; if it does, it is migrated to the template first."""
        validate_memory_name(name)
        expiry = self._ready.get(name)
        if expiry is not None and expiry > self._clock():
            return True
        async with self._db.shared_transaction() as conn:
            memory = await self._repo.get(conn, name)
        if memory is None:
            self._ready.pop(name, None)
            return False
        if memory.schema_version < self._migrations.memory_version:
            async with self._db.memory_transaction(name) as conn:
                await self._migrations.migrate_memory(conn, name)
        self._ready[name] = self._clock() + self._cache_seconds
        return True

    async def default_name(self) -> str:
        if self._default is not None and self._default[1] > self._clock():
            return self._default[0]
        async with self._db.shared_transaction() as conn:
            memory = await self._repo.default(conn)
        if memory is None:
            raise NotFound(
                "No default memory is set; call setDefaultMemory or send X-Fortemi-Memory"
            )
        self._default = (memory.name, self._clock() + self._cache_seconds)
        return await self.resolve(memory.name)

    # -- changes ---------------------------------------------------------------------------

    async def create(self, name: str, *, created_by: str | None) -> Memory:
        validate_memory_name(name)
        async with self._db.shared_transaction() as conn:
            if not await self._repo.insert(conn, name, created_by):
                raise Conflict(f"Memory {name!r} already exists", memory=name)
        # The schema is created empty and registered at version 0; the template goes in
        # through the same path as any later migration.
        async with self._db.memory_transaction(name) as conn:
            await self._migrations.migrate_memory(conn, name)
        return await self._read_back(name)

    async def ensure(self, name: str, *, default: bool = False) -> Memory:
        """Create ``name`` unless it exists; optionally make it the default if none is."""
        memory = await self.get(name)
        if memory is None:
            try:
                memory = await self.create(name, created_by=None)
            except Conflict:  # another process created it first
                memory = await self._read_back(name)
        if default:
            async with self._db.shared_transaction() as conn:
                if await self._repo.default(conn) is None:
                    await self._repo.set_default(conn, name)
            memory = await self._read_back(name)
        return memory

    async def delete(self, name: str, *, confirm: str) -> None:
        validate_memory_name(name)
        if confirm != name:
            raise BadUserInput(
                "To delete a memory, pass its name again as `confirm`", field="confirm"
            )
        async with self._db.shared_transaction() as conn:
            memory = await self._repo.get(conn, name, lock=True)
            if memory is None:
                raise NotFound(f"Memory {name!r} does not exist", memory=name)
            if memory.is_default:
                raise Conflict(
                    f"Memory {name!r} is the default; make another memory the default first",
                    memory=name,
                )
            await self._repo.drop(conn, name)
        self._ready.pop(name, None)

    async def set_default(self, name: str) -> Memory:
        validate_memory_name(name)
        async with self._db.shared_transaction() as conn:
            if await self._repo.get(conn, name, lock=True) is None:
                raise NotFound(f"Memory {name!r} does not exist", memory=name)
            await self._repo.set_default(conn, name)
        self._default = None
        return await self._read_back(name)

    async def _read_back(self, name: str) -> Memory:
        """``name`` read again after a change to it; only a concurrent delete removes it."""
        memory = await self.get(name)
        if memory is None:
            raise NotFound(f"Memory {name!r} does not exist", memory=name)
        return memory
