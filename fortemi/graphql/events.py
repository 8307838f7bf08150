"""Live events over graphql-transport-ws: what changed, as it happens.

Each subscription is scoped to the request's memory and to what the subscriber may read
(the same read scope lists use), ends when the token expires, and can resume after the
last event id it saw; an id older than the replay buffer is answered with CONFLICT
(reason ``resync_required``): re-read, then resubscribe. Access is decided when the
subscription starts and again whenever the policies in force or the subscriber's token
changed (see :mod:`fortemi.graphql.reauthorization`): events are filtered by the read
scope then in force, and a subscriber who may no longer read the memory (or the followed
job) gets FORBIDDEN (NOT_FOUND for a job) and the stream ends.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from fortemi.graph.events import GRAPH_EVENT_KINDS, NOTE_GRAPH_EVENT_KINDS
from fortemi.graphql.context import Info
from fortemi.graphql.jobs import may_see_internals, visible_job, without_internals
from fortemi.graphql.reauthorization import Reauthorized
from fortemi.graphql.subscriptions import until_token_expires
from fortemi.platform import events as bus
from fortemi.platform.errors import BadUserInput
from fortemi.platform.ids import parse_id, to_global_id
from fortemi.platform.jobs.events import JOB_EVENT_TYPES
from fortemi.platform.notes.events import NOTE_EVENT_KINDS

__all__ = ["EventSubscription"]

GRAPH_EVENT_TYPES = tuple(f"graph.{kind}" for kind in GRAPH_EVENT_KINDS)
_NOTE_EVENT_TYPES = ", ".join(
    f"note.{kind}" for kind in (*NOTE_EVENT_KINDS, *NOTE_GRAPH_EVENT_KINDS)
)


def _known(wanted: set[str], known: tuple[str, ...], what: str) -> None:
    unknown = sorted(wanted.difference(known))
    if unknown:
        raise BadUserInput(
            f"Unknown {what} event type(s) {', '.join(unknown)[:200]}; known: {', '.join(known)}",
            field="types",
        )


@strawberry.type(description="Something that happened, in a versioned envelope")
class Event:
    id: strawberry.ID = strawberry.field(description="Resume after this with `after`")
    type: str
    at: datetime
    memory: str | None
    actor: str | None
    entity_type: str
    entity_id: str
    correlation_id: str | None
    payload: JSON
    version: int

    @classmethod
    def from_model(cls, event: bus.Event) -> Event:
        return cls(
            id=strawberry.ID(event.id),
            type=event.type,
            at=event.at,
            memory=event.memory,
            actor=event.actor,
            entity_type=event.entity_type,
            entity_id=event.entity_id,
            correlation_id=event.correlation_id,
            payload=JSON(dict(event.payload)),
            version=event.version,
        )


@strawberry.type
class EventSubscription:
    @strawberry.subscription(
        description="Changes to notes you may read in this memory, their links and concepts "
        "included. Types: " + _NOTE_EVENT_TYPES
    )
    async def note_events(
        self, info: Info, types: list[str] | None = None, after: str | None = None
    ) -> AsyncGenerator[Event, None]:
        context = info.context
        memory = await context.memory()
        # Entered and scoped again whenever the policies or the token change: a subscriber
        # who may no longer enter the memory gets NOT_FOUND and the stream ends.
        access = Reauthorized(info, lambda: context.visibility(memory, fresh=True))
        await access.current()
        wanted = set(types or ())
        source = context.services.events.subscribe(after=after)
        try:
            async for visible, event in access.watch(until_token_expires(info, source)):
                if event.memory != memory or event.entity_type != "note":
                    continue
                if wanted and event.type not in wanted:
                    continue
                if visible.allows(event.payload.get("project"), event.payload.get("skill")):
                    yield Event.from_model(event)
        finally:
            await source.aclose()

    @strawberry.subscription(
        description="State changes of jobs: one job (and the jobs it escalated to) with "
        "`jobId`, else every job of this memory. Types: " + ", ".join(JOB_EVENT_TYPES)
    )
    async def job_events(
        self,
        info: Info,
        job_id: strawberry.ID | None = None,
        types: list[str] | None = None,
        after: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        wanted = set(types or ())
        _known(wanted, JOB_EVENT_TYPES, "job")
        context = info.context
        if job_id is not None:
            job = await visible_job(info, parse_id(job_id, "Job"))
            memory, followed = job.memory, to_global_id("Job", job.id)

            async def decide() -> object:
                return await visible_job(info, job.id)
        else:
            memory, followed = await context.memory(), None

            async def decide() -> object:
                return await context.enter(memory)

        internals = await may_see_internals(info, memory)
        access = Reauthorized(info, decide)
        await access.current()
        source = context.services.events.subscribe(after=after)
        try:
            async for _, event in access.watch(until_token_expires(info, source)):
                if event.entity_type != "job" or event.memory != memory:
                    continue
                if followed is not None and followed not in (event.entity_id, event.correlation_id):
                    continue
                if not wanted or event.type in wanted:
                    yield Event.from_model(event if internals else without_internals(event))
        finally:
            await source.aclose()

    @strawberry.subscription(
        description="Changes to a memory's graph as a whole (its vocabulary, automatic "
        "linking, maintenance), for callers who may read the memory itself (its own "
        "policy's read); `memory` defaults to the request's. Types: " + ", ".join(GRAPH_EVENT_TYPES)
    )
    async def graph_events(
        self,
        info: Info,
        memory: str | None = None,
        types: list[str] | None = None,
        after: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        wanted = set(types or ())
        _known(wanted, GRAPH_EVENT_TYPES, "graph")
        context = info.context
        name = await context.memory() if memory is None else await context.enter(memory)

        async def decide() -> object:
            # Over a WebSocket every entry is decided anew: a subscriber whose read of
            # the memory is gone gets NOT_FOUND and the stream ends.
            return await context.enter(name)

        access = Reauthorized(info, decide)
        await access.current()
        source = context.services.events.subscribe(after=after)
        try:
            async for _, event in access.watch(until_token_expires(info, source)):
                if event.memory != name or event.entity_type != "memory":
                    continue
                if event.type in (wanted or GRAPH_EVENT_TYPES):
                    yield Event.from_model(event)
        finally:
            await source.aclose()
