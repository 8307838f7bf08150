"""Memory operations: create, list, delete, default, and resolving a request's memory.

``resolve`` is on every request's path, so it answers from a short-lived in-process cache;
a miss reads the registry and, when the memory's schema is behind the template, migrates it
there and then (lazy migration keeps start-up independent of the number of memories).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from fortemi.platform.database import Connection, Database, validate_memory_name
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.memories.models import Memory
from fortemi.platform.memories.repository import MemoryRepository
from fortemi.platform.migrations import Migrations

__all__ = ["DEFAULT_MEMORY", "MemoryPolicyStore", "MemoryService"]

DEFAULT_MEMORY = "default"


class MemoryPolicyStore(Protocol):
    """Where a memory's own access policy is kept (the policy service, in production).

    :meth:`store` writes inside the transaction that registers the memory, so a memory
    never exists without the policy it was created with; :meth:`changed` runs after a
    memory's policies changed (created, or gone with their memory) and committed.
    """

    def check(self, memory: str, document: Mapping[str, Any]) -> None:
        """Raise BAD_USER_INPUT if ``document`` is not a valid policy for ``memory``."""

    async def store(
        self, conn: Connection, memory: str, document: Mapping[str, Any], *, actor: str
    ) -> None: ...

    async def changed(self) -> None: ...


class MemoryService:
    """Memories and their lifecycle. With a ``policies`` store, a memory is created with
    its policy in one transaction, and every replica hears of the policies a memory
    brought or took with it."""

    def __init__(
        self,
        db: Database,
        migrations: Migrations,
        *,
        policies: MemoryPolicyStore | None = None,
        cache_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._migrations = migrations
        self._policies = policies
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

    async def create(
        self,
        name: str,
        *,
        created_by: str | None,
        policy: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Create memory ``name``; with ``policy``, stored as its access policy in the
        same transaction (a policy that fails to store leaves no memory behind).

        CONFLICT if it exists; BAD_USER_INPUT for a bad name or policy, checked before
        anything is written.
        """
        store = self._policy_store(policy, created_by)
        if store is not None and policy is not None:
            # Checked before the name, as createMemory always did: a bad name gets the
            # same answer as before.
            store.check(name, policy)
        validate_memory_name(name)
        try:
            async with self._db.shared_transaction() as conn:
                if not await self._repo.insert(conn, name, created_by):
                    raise Conflict(f"Memory {name!r} already exists", memory=name)
                if store is not None and policy is not None and created_by is not None:
                    await store.store(conn, name, policy, actor=created_by)
        finally:
            if store is not None:
                # Also after a failed write: a COMMIT whose answer was lost may have landed.
                await store.changed()
        # The schema is created empty and registered at version 0; the template goes in
        # through the same path as any later migration.
        async with self._db.memory_transaction(name) as conn:
            await self._migrations.migrate_memory(conn, name)
        return await self._existing(name)

    def _policy_store(
        self, policy: Mapping[str, Any] | None, created_by: str | None
    ) -> MemoryPolicyStore | None:
        if policy is None:
            return None
        # Both are wiring mistakes, never a client's: the API always names the creator.
        if self._policies is None:
            raise RuntimeError("a memory policy was given, but this service has no store")
        if created_by is None:
            raise ValueError("a memory created with a policy needs its creator")
        return self._policies

    async def _existing(self, name: str) -> Memory:
        memory = await self.get(name)
        if memory is None:  # deleted between the write and this read
            raise NotFound(f"Memory {name!r} does not exist", memory=name)
        return memory

    async def ensure(self, name: str, *, default: bool = False) -> Memory:
        """Create ``name`` unless it exists; optionally make it the default if none is."""
        memory = await self.get(name)
        if memory is None:
            try:
                memory = await self.create(name, created_by=None)
            except Conflict:  # another process created it first
                memory = await self._existing(name)
        if default:
            async with self._db.shared_transaction() as conn:
                if await self._repo.default(conn) is None:
                    await self._repo.set_default(conn, name)
            memory = await self._existing(name)
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
        if self._policies is not None:
            # Its stored policies went with it (ON DELETE CASCADE); every replica must
            # forget them now rather than at its next refresh.
            await self._policies.changed()

    async def set_default(self, name: str) -> Memory:
        validate_memory_name(name)
        async with self._db.shared_transaction() as conn:
            if await self._repo.get(conn, name, lock=True) is None:
                raise NotFound(f"Memory {name!r} does not exist", memory=name)
            await self._repo.set_default(conn, name)
        self._default = None
        return await self._existing(name)
