"""The per-operation context: who is calling, in which memory, through which runtime.

Resolvers reach authorization only through the methods here, which go through the one
:class:`~fortemi.auth.access.Authorizer` (decide, record in the audit log, then answer).
"""

from __future__ import annotations

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
from fortemi.platform.errors import FortemiError, NotFound, Unauthenticated
from fortemi.platform.events import Event
from fortemi.platform.notes import NameSet, Note, NoteVisibility
from fortemi.runtime import Runtime

__all__ = ["Context", "Info", "visibility_of"]

log = logging.getLogger(__name__)


def _names(scope: NameScope) -> NameSet:
    return NameSet(scope.names, only=scope.listed_are_readable)


def visibility_of(scope: ReadScope) -> NoteVisibility:
    return NoteVisibility(
        memory_notes=scope.memory, projects=_names(scope.projects), skills=_names(scope.skills)
    )


@dataclass
class Context:
    runtime: Runtime
    request: Request | WebSocket
    request_id: str
    response: Response | WebSocket | None = None
    principal: Principal | None = None
    memory_name: str | None = None  # as asked for (header / connection_init), unvalidated
    connection_params: dict[str, Any] | None = None  # set by the WebSocket protocol handler
    _memory: str | None = field(default=None, repr=False)
    _visibility: dict[str, NoteVisibility] = field(default_factory=dict, repr=False)

    @property
    def caller(self) -> Principal:
        """The authenticated principal; the transport layer guarantees one is present."""
        if self.principal is None:  # only reachable through a transport bug
            raise Unauthenticated("operation reached a resolver without a principal")
        return self.principal

    @property
    def trace(self) -> RequestTrace:
        client = self.request.client
        return RequestTrace(trace_id=self.request_id, client_addr=client.host if client else None)

    async def memory(self) -> str:
        """The request's memory (header or default), checked to exist and migrated; cached."""
        if self._memory is None:
            self._memory = await self.runtime.memories.resolve(self.memory_name)
        return self._memory

    async def authorize(self, action: Action, resource: Resource) -> Decision:
        """Allowed, or FORBIDDEN with the reason code; recorded either way."""
        return await self.runtime.authorizer.check(self.caller, action, resource, self.trace)

    async def may(self, action: Action, resource: Resource) -> bool:
        """Whether allowed (recorded); for answers that must not reveal existence."""
        decision = await self.runtime.authorizer.decide(self.caller, action, resource, self.trace)
        return decision.allowed

    async def visibility(
        self, memory: str, *, authorize_read: bool = False, fresh: bool = False
    ) -> NoteVisibility:
        """What the caller may read in ``memory``, computed (and recorded) once per request.

        ``authorize_read``: first check that the caller may read the memory at all
        (FORBIDDEN if not), decided and recorded together with the scope. ``fresh``:
        decide again even if computed before (a subscription after a policy change).
        """
        if memory in self._visibility and not fresh:
            if authorize_read:
                await self.authorize(Action.READ, Resource.of_memory(memory))
            return self._visibility[memory]
        checks = [(Action.READ, Resource.of_memory(memory))] if authorize_read else []
        scope = await self.runtime.authorizer.read_scope(
            self.caller, memory, self.trace, checks=checks
        )
        self._visibility[memory] = visibility_of(scope)
        return self._visibility[memory]

    def forget_read_scopes(self) -> None:
        """Drop the read scopes computed so far: the next operation of a WebSocket (which
        keeps one context for all of them) decides under the policies then in force."""
        self._visibility.clear()

    async def notify(self, event: Event) -> None:
        """Publish ``event`` after the change it reports committed. A failure is logged,
        never raised: the change stands, and events are notifications, not the record."""
        try:
            await self.runtime.events.publish(replace(event, correlation_id=self.request_id))
        except FortemiError:
            log.warning("event %s for %s not published", event.type, event.entity_id)

    async def readable_note(self, note_id: UUID) -> tuple[str, Note]:
        """The request's memory and the note, or NOT_FOUND if absent *or* unreadable.

        Not-found before forbidden: a caller who may not read a note learns nothing about
        whether it exists.
        """
        memory = await self.memory()
        note = await self.runtime.notes.get(memory, note_id)
        if note is None or not await self.may(
            Action.READ, Resource.of_note(memory, note.project, note.skill)
        ):
            raise NotFound(f"No note {note_id} in this memory", id=str(note_id))
        return memory, note


Info = StrawberryInfo[Context, None]
