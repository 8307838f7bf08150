"""The per-operation context: who is calling, in which memory, with which services.

Resolvers reach authorization only through the methods here, which go through the one
:class:`~fortemi.auth.access.Authorizer` (decide, record in the audit log, then answer).

Working in a memory at all means *entering* it, and every resolver does so through
:meth:`Context.memory` (the request's memory), :meth:`Context.enter` (a named one) or
:meth:`Context.visibility`: the memory must exist and the caller must have ``read`` on it.
A missing memory and one the caller may not read give the same NOT_FOUND, so memory
names cannot be probed, and each refusal is recorded as a deny.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import UUID

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.types import Info as StrawberryInfo

from fortemi.auth.access import RequestTrace
from fortemi.auth.decision import Action, Decision, Resource
from fortemi.auth.policy import NameScope, ReadScope
from fortemi.auth.principal import Principal
from fortemi.graphql.services import Services
from fortemi.platform.errors import Forbidden, FortemiError, NotFound, Unauthenticated
from fortemi.platform.events import Event
from fortemi.platform.notes import NameSet, Note, NoteVisibility

__all__ = ["Context", "Info", "no_memory", "visibility_of"]

log = logging.getLogger(__name__)


def _names(scope: NameScope) -> NameSet:
    return NameSet(scope.names, only=scope.listed_are_readable)


def no_memory(name: str) -> NotFound:
    """The one answer for a memory that is missing or that the caller may not enter."""
    return NotFound(f"No memory {name!r} that you may use", memory=name)


def _retrieved(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()


def visibility_of(scope: ReadScope) -> NoteVisibility:
    return NoteVisibility(
        memory_notes=scope.memory, projects=_names(scope.projects), skills=_names(scope.skills)
    )


@dataclass
class Context:
    services: Services
    request: Request | WebSocket
    request_id: str
    client_request_id: str | None = None  # the client's X-Request-Id; never the trace id
    response: Response | WebSocket | None = None
    principal: Principal | None = None
    memory_name: str | None = None  # as asked for (header / connection_init), unvalidated
    connection_params: dict[str, Any] | None = None  # set by the WebSocket protocol handler
    operation: str | None = None  # recorded with each decision (see RequestTrace.operation)
    _memory: str | None = field(default=None, repr=False)
    _entered: set[str] = field(default_factory=set, repr=False)
    _visibility: dict[str, NoteVisibility] = field(default_factory=dict, repr=False)
    # Audit writes of decisions already acted on by a read (see scoped_memory's ``overlap``)
    _recording: list[asyncio.Task[None]] = field(default_factory=list, repr=False)

    @property
    def caller(self) -> Principal:
        """The authenticated principal; the transport layer guarantees one is present."""
        if self.principal is None:  # only reachable through a transport bug
            raise Unauthenticated("operation reached a resolver without a principal")
        return self.principal

    @property
    def trace(self) -> RequestTrace:
        client = self.request.client
        return RequestTrace(
            trace_id=self.request_id,
            client_addr=client.host if client else None,
            client_request_id=self.client_request_id,
            operation=self.operation,
        )

    async def memory(self) -> str:
        """The request's memory (header, else the default), entered: see :meth:`enter`."""
        if self._memory is None:
            self._memory = await self._requested()
        return await self.enter(self._memory)

    async def scoped_memory(self, *, overlap: bool = False) -> tuple[str, NoteVisibility]:
        """The request's memory and what the caller may read in it, as :meth:`memory`
        and :meth:`visibility` would answer, with one audit write instead of two.

        ``overlap``: for a read-only resolver, which then reads while the decision's audit
        write commits, and awaits :meth:`recorded` (in a ``finally``) before it returns
        anything: one round trip and a WAL flush off its latency, nothing changed and
        nothing answered before the decision is recorded. Every other way into the
        context waits for such writes first, so no other field answers on a decision
        that is not yet recorded either."""
        if self._memory is None:
            self._memory = await self._requested()
        return self._memory, await self.visibility(self._memory, overlap=overlap)

    async def recorded(self) -> None:
        """Once every decision this request acted on is in the audit log; ``Unavailable``
        (again, to every caller) when one could not be recorded."""
        while self._recording:
            # Shielded: a cancelled caller leaves the write to finish for the others.
            task = self._recording[0]
            await asyncio.shield(task)
            # Several resolvers may await the same write (two aliased ``graph`` fields):
            # only the first to wake removes it.
            if self._recording and self._recording[0] is task:
                self._recording.pop(0)

    async def _requested(self) -> str:
        if self.memory_name is not None:
            return self.memory_name
        return await self.services.memories.default_name()

    async def enter(self, name: str) -> str:
        """``name``, once the caller may work in it: it exists and they may read it.

        Not-found before forbidden, for memories: a missing memory and one the caller may
        not read both answer NOT_FOUND with the same message. Both are recorded as a deny
        (reason ``not_found`` for a missing one, the policy's reason otherwise). Decided
        once per memory per HTTP request, and at every call over a WebSocket.
        """
        await self.recorded()
        if name not in self._entered:
            await self._admit(name, with_scope=False)
        return name

    @property
    def _remembers_entries(self) -> bool:
        # A WebSocket's context lives as long as its connection, across operations and
        # policy changes, so there every entry is decided anew.
        return not isinstance(self.request, WebSocket)

    async def _admit(self, name: str, *, with_scope: bool, overlap: bool = False) -> None:
        """Enter ``name`` unless already entered; ``with_scope`` also computes the read
        scope, recorded in the same audit write as the entry decision (left in flight
        with ``overlap``: see :meth:`scoped_memory`)."""
        authorizer = self.services.authorizer
        entry = Resource.of_memory(name)
        checks: list[tuple[Action, Resource]] = []
        if name not in self._entered:
            if not await self.services.memories.exists(name):
                await authorizer.deny_missing(self.caller, Action.READ, entry, self.trace)
                raise no_memory(name)
            checks.append((Action.READ, entry))
        if with_scope:
            try:
                if overlap:
                    scope, recording = await authorizer.read_scope_recording(
                        self.caller, name, self.trace, checks=checks
                    )
                    # Its failure is raised to whoever awaits it; marked retrieved here so a
                    # request cancelled before awaiting it logs no "never retrieved" error.
                    recording.add_done_callback(_retrieved)
                    self._recording.append(recording)
                else:
                    scope = await authorizer.read_scope(
                        self.caller, name, self.trace, checks=checks
                    )
            except Forbidden:  # only a check raises it: the entry was refused
                raise no_memory(name) from None
            self._visibility[name] = visibility_of(scope)
        elif checks:
            decision = await authorizer.decide(self.caller, Action.READ, entry, self.trace)
            if not decision.allowed:
                raise no_memory(name)
        if self._remembers_entries:
            self._entered.add(name)

    async def authorize(self, action: Action, resource: Resource) -> Decision:
        """Allowed, or FORBIDDEN with the reason code; recorded either way."""
        await self.recorded()
        return await self.services.authorizer.check(self.caller, action, resource, self.trace)

    async def may(self, action: Action, resource: Resource) -> bool:
        """Whether allowed (recorded); for answers that must not reveal existence."""
        await self.recorded()
        decision = await self.services.authorizer.decide(self.caller, action, resource, self.trace)
        return decision.allowed

    async def visibility(
        self, memory: str, *, fresh: bool = False, overlap: bool = False
    ) -> NoteVisibility:
        """What the caller may read in ``memory``, which is entered first (NOT_FOUND if it
        may not be); the scope is computed and recorded once per request or connection.
        ``fresh``: enter and decide again even if done before (a subscription after a
        policy or token change). ``overlap``: see :meth:`scoped_memory`."""
        if not overlap:
            await self.recorded()
        if fresh:
            self._entered.discard(memory)
            self._visibility.pop(memory, None)
        if memory not in self._entered or memory not in self._visibility:
            await self._admit(memory, with_scope=memory not in self._visibility, overlap=overlap)
        return self._visibility[memory]

    def forget_read_scopes(self) -> None:
        """Drop the read scopes computed so far: the next operation of a WebSocket (which
        keeps one context for all of them) decides under the policies then in force."""
        self._visibility.clear()

    async def notify(self, event: Event) -> None:
        """Publish ``event`` after the change it reports committed. A failure is logged,
        never raised: the change stands, and events are notifications, not the record."""
        try:
            await self.services.events.publish(replace(event, correlation_id=self.request_id))
        except FortemiError:
            log.warning("event %s for %s not published", event.type, event.entity_id)

    async def readable_note(self, note_id: UUID) -> tuple[str, Note]:
        """The request's memory and the note, or NOT_FOUND if absent *or* unreadable.

        Not-found before forbidden: a caller who may not read a note learns nothing about
        whether it exists.
        """
        memory = await self.memory()
        note = await self.services.notes.get(memory, note_id)
        if note is None or not await self.may(
            Action.READ, Resource.of_note(memory, note.project, note.skill)
        ):
            raise NotFound(f"No note {note_id} in this memory", id=str(note_id))
        return memory, note


Info = StrawberryInfo[Context, None]
