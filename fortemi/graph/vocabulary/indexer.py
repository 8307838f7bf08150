"""Path tags in ``note.tags`` (``ml/transformers``) become the note's ``user`` concepts.

The note service's indexer: it runs inside the transaction that wrote the note's new
version, so the note's concepts always agree with its committed tags, and it writes only
``note_concept`` (never the note), so it makes no version and triggers no embedding. A tag
without ``/`` stays a plain tag (the tag filters serve it): only a hierarchy is worth a
concept, and plain tags are where meta tags such as ``todo`` live. A tag breaking a limit
(depth, broader count, cycle) is skipped, not an error: the note's save must not fail on
what is derived from it; the health query shows what the vocabulary looks like.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from fortemi.graph.events import note_graph_event
from fortemi.graph.vocabulary.models import MAX_LABEL_CHARS, ConceptProposal
from fortemi.graph.vocabulary.service import VocabularyService, path_of
from fortemi.platform.database import Connection
from fortemi.platform.events import Event, EventBus
from fortemi.platform.notes.repository import NoteRepository

__all__ = ["PathTagIndexer", "tag_proposals"]


def tag_proposals(tags: Sequence[str]) -> list[ConceptProposal]:
    """One ``user`` proposal per distinct path tag (one containing ``/``)."""
    seen: set[tuple[str, ...]] = set()
    proposals = []
    for tag in tags:
        if "/" not in tag:
            continue
        path = path_of(tag)
        key = tuple(part.lower() for part in path)
        if not path or key in seen or any(len(p) > MAX_LABEL_CHARS for p in path):
            continue
        seen.add(key)
        proposals.append(ConceptProposal(path, None, 1.0, 1.0))
    return proposals


class PathTagIndexer:
    """Keeps each note's ``user`` concepts equal to its path tags."""

    def __init__(self, vocabulary: VocabularyService, events: EventBus | None = None) -> None:
        self._vocabulary = vocabulary
        self._events = events
        self._notes = NoteRepository()

    async def enqueue(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        events: list[Event] = []
        for note_id in dict.fromkeys(note_ids):
            note = await self._notes.get(conn, note_id)
            if note is None or note.deleted:
                continue
            result = await self._vocabulary.tag_in(
                conn, note_id, tag_proposals(note.tags), source="user", actor=None
            )
            if result.changed:
                payload = result.payload("user")
                events.append(note_graph_event("concepts_changed", memory, note, None, payload))
        return events

    async def committed(self, pending: Sequence[Any]) -> None:
        if self._events is None:
            return
        for event in pending:
            if isinstance(event, Event):
                await self._events.publish(event)
