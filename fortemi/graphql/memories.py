"""Memories: isolated tenants. Creating, deleting and re-defaulting need ``system`` rights.

Reading one by name enters it (:meth:`Context.enter`): null both when it does not exist
and when the caller may not read it, recorded as a deny either way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry
from strawberry.scalars import JSON

from fortemi.auth.decision import Action, Resource
from fortemi.graphql.context import Info
from fortemi.platform.errors import BadUserInput, NotFound
from fortemi.platform.memories import Memory as MemoryModel
from fortemi.platform.notes import NoteFilter

__all__ = ["Memory", "MemoryMutation", "MemoryQuery"]


@strawberry.type(description="An isolated memory (one PostgreSQL schema)")
class Memory:
    name: str
    is_default: bool
    created_at: datetime
    schema_version: int

    @strawberry.field(description="Live notes in this memory that you may read")
    async def note_count(self, info: Info) -> int:
        visible = NoteFilter(visibility=await info.context.visibility(self.name))
        return await info.context.services.notes.count(self.name, visible)

    @classmethod
    def from_model(cls, memory: MemoryModel) -> Memory:
        return cls(
            name=memory.name,
            is_default=memory.is_default,
            created_at=memory.created_at,
            schema_version=memory.schema_version,
        )


def default_memory_policy(name: str, creator: str) -> dict[str, Any]:
    """A new memory's policy when none is given: its creator only, until someone sets one."""
    return {
        "version": 1,
        "memory": name,
        "access_level": "private",
        "grant": {"subjects": [creator]},
    }


@strawberry.type
class MemoryQuery:
    @strawberry.field(description="The memories you may read")
    async def memories(self, info: Info) -> list[Memory]:
        context = info.context
        every = await context.services.memories.list()
        decisions = await context.services.authorizer.decide_all(
            context.caller,
            [(Action.READ, Resource.of_memory(m.name)) for m in every],
            context.trace,
        )
        return [Memory.from_model(m) for m, d in zip(every, decisions, strict=True) if d.allowed]

    @strawberry.field(description="One memory by name; null if absent or not readable by you")
    async def memory(self, info: Info, name: str) -> Memory | None:
        try:
            await info.context.enter(name)
        except NotFound:
            return None
        found = await info.context.services.memories.get(name)
        return None if found is None else Memory.from_model(found)  # None: deleted just now


@strawberry.type
class MemoryMutation:
    @strawberry.mutation(
        description="Create an empty memory (system admin). `policy` is its access policy "
        "document (the YAML shape, as JSON); without one, only its creator may use it."
    )
    async def create_memory(self, info: Info, name: str, policy: JSON | None = None) -> Memory:
        context = info.context
        await context.authorize(Action.ADMIN, Resource.system())
        caller = context.caller.sub
        if policy is None:
            document = default_memory_policy(name, caller)
        elif isinstance(policy, dict):
            document = dict(policy)
        else:
            raise BadUserInput("policy must be a JSON object in the policy format", field="policy")
        created = await context.services.memories.create(name, created_by=caller, policy=document)
        return Memory.from_model(created)

    @strawberry.mutation(
        description="Delete a memory and everything in it; `confirm` repeats the name (admin)"
    )
    async def delete_memory(self, info: Info, name: str, confirm: str) -> bool:
        await info.context.authorize(Action.ADMIN, Resource.system())
        await info.context.services.memories.delete(name, confirm=confirm)
        # Its attachments' bytes live outside the database: they go after the memory.
        await info.context.services.attachments.forget_memory(name)
        return True

    @strawberry.mutation(
        description="Make a memory the default for requests without X-Fortemi-Memory (admin)"
    )
    async def set_default_memory(self, info: Info, name: str) -> Memory:
        await info.context.authorize(Action.ADMIN, Resource.system())
        return Memory.from_model(await info.context.services.memories.set_default(name))
