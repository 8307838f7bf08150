"""What every governance change shares: one locked transaction, its event after commit."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

from fortemi.graph.events import graph_event
from fortemi.graph.vocabulary.catalog.repository import GovernanceRepository, uri_taken
from fortemi.graph.vocabulary.repository import VocabularyRepository
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.events import EventBus

__all__ = ["Governed", "missing"]


def missing(kind: str, ident: UUID) -> NotFound:
    return NotFound(f"No {kind} {ident} in this memory", id=str(ident))


class Governed:
    """Base of the governance services: the database, the event bus, the repositories."""

    def __init__(self, db: Database, *, events: EventBus | None = None) -> None:
        self._db = db
        self._events = events
        self._repo = GovernanceRepository()
        self._tags = VocabularyRepository()

    @asynccontextmanager
    async def _changing(
        self, memory: str, actor: str | None, action: str, subject: UUID
    ) -> AsyncIterator[Connection]:
        """One locked transaction for a governance change; its event after the commit."""
        async with self._db.memory_transaction(memory, subject="The vocabulary") as conn:
            await self._tags.lock(conn)
            yield conn
        await self.announce(memory, actor, {"action": action, "id": str(subject)})

    async def announce(self, memory: str, actor: str | None, payload: dict[str, Any]) -> None:
        if self._events is not None:
            await self._events.publish(graph_event("vocabulary_changed", memory, actor, payload))

    async def _known(self, conn: Connection, ids: Sequence[UUID]) -> None:
        found = await self._repo.concepts(conn, ids)
        for ident in ids:
            if ident not in found:
                raise missing("concept", ident)

    async def _free_uri(self, conn: Connection, uri: str | None, own_id: UUID) -> None:
        if uri is not None and await uri_taken(conn, uri, own_id):
            raise Conflict(f"URI {uri} is already used in this memory", reason="uri_taken")
