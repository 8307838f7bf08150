"""Memories: isolated tenants. Creating, deleting and re-defaulting need ``system`` rights."""

from __future__ import annotations

from datetime import datetime

import strawberry

from fortemi.auth.access import Action, Resource
from fortemi.graphql.context import Info
from fortemi.platform.memories import Memory as MemoryModel
from fortemi.platform.notes import NoteFilter

__all__ = ["Memory", "MemoryMutation", "MemoryQuery"]


@strawberry.type(description="An isolated memory (one PostgreSQL schema)")
class Memory:
    name: str
    is_default: bool
    created_at: datetime
    schema_version: int

    @strawberry.field(description="Live (not soft-deleted) notes in this memory")
    async def note_count(self, info: Info) -> int:
        await info.context.authorize(Action.READ, Resource.in_memory(self.name))
        await info.context.runtime.memories.resolve(self.name)
        return await info.context.runtime.notes.count(self.name, NoteFilter())

    @classmethod
    def from_model(cls, memory: MemoryModel) -> Memory:
        return cls(
            name=memory.name,
            is_default=memory.is_default,
            created_at=memory.created_at,
            schema_version=memory.schema_version,
        )


@strawberry.type
class MemoryQuery:
    @strawberry.field(description="Every memory")
    async def memories(self, info: Info) -> list[Memory]:
        return [Memory.from_model(m) for m in await info.context.runtime.memories.list()]

    @strawberry.field(description="One memory by name, or null")
    async def memory(self, info: Info, name: str) -> Memory | None:
        found = await info.context.runtime.memories.get(name)
        return Memory.from_model(found) if found else None


@strawberry.type
class MemoryMutation:
    @strawberry.mutation(description="Create an empty memory (admin)")
    async def create_memory(self, info: Info, name: str) -> Memory:
        await info.context.authorize(Action.ADMIN, Resource.system())
        created = await info.context.runtime.memories.create(
            name, created_by=info.context.caller.sub
        )
        return Memory.from_model(created)

    @strawberry.mutation(
        description="Delete a memory and everything in it; `confirm` repeats the name (admin)"
    )
    async def delete_memory(self, info: Info, name: str, confirm: str) -> bool:
        await info.context.authorize(Action.ADMIN, Resource.system())
        await info.context.runtime.memories.delete(name, confirm=confirm)
        return True

    @strawberry.mutation(
        description="Make a memory the default for requests without X-Fortemi-Memory (admin)"
    )
    async def set_default_memory(self, info: Info, name: str) -> Memory:
        await info.context.authorize(Action.ADMIN, Resource.system())
        return Memory.from_model(await info.context.runtime.memories.set_default(name))
