"""Keeping wiki links in step with notes, inside the note's own transaction.

:class:`WikiLinkIndexer` is one of the note service's indexers: every new note and every
new version (create, update, restore of a version, upsert) runs :meth:`enqueue` in the
transaction that wrote it, so a note's references, its keys and the wiki edges derived
from them commit (or roll back) with the version itself, never lag behind it, and need
no job. For each note it

1. reads the references of the current content (:mod:`fortemi.graph.links.wiki`) and the
   keys the note is reachable by (:mod:`fortemi.graph.links.resolution`);
2. locks every key involved: the note's old and new keys, and the keys its references look
   for (see ``_LOCK_KEYS`` in the repository for why);
3. replaces its keys and its references, then resolves every reference, of any note, whose
   key is among those: the note's own references, other notes' dangling references that
   now name it (a note created or retitled picks up the links written before it existed),
   and references that named it by a key it no longer has;
4. makes the wiki edges of every note whose references changed mirror them.

After the commit, :meth:`committed` publishes ``note.links_changed`` for each note whose
outgoing (wiki) links changed and for each note whose incoming ones did, with the writer
of the changed notes as actor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from fortemi.graph.events import note_graph_event
from fortemi.graph.links.models import WikiLinkRow
from fortemi.graph.links.repository import LinkRepository
from fortemi.graph.links.resolution import KeyRules, NoteKey
from fortemi.graph.links.wiki import references
from fortemi.platform.database import Connection
from fortemi.platform.errors import FortemiError
from fortemi.platform.events import Event, EventBus
from fortemi.platform.notes.models import Note
from fortemi.platform.notes.repository import NoteRepository

__all__ = ["LinkEvents", "WikiLinkIndexer", "link_change_events"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LinkEvents:
    """What :meth:`WikiLinkIndexer.committed` publishes once the change committed."""

    events: list[Event]


def link_change_events(
    memory: str,
    changed: set[tuple[UUID, UUID]],
    notes: dict[UUID, Note],
    *,
    kind: str,
    actor: str | None,
) -> list[Event]:
    """``note.links_changed`` for each source (``direction: outgoing``) and each target
    (``incoming``) of the ``changed`` (source, target) links that is a note in ``notes``.

    The payload names no other note: each event is delivered by its own note's read scope,
    and the note at the other end may be one the subscriber may not read.
    """
    directions: dict[UUID, set[str]] = {}
    for source, target in changed:
        directions.setdefault(source, set()).add("outgoing")
        directions.setdefault(target, set()).add("incoming")
    return [
        note_graph_event(
            "links_changed",
            memory,
            notes[note_id],
            actor,
            {"kind": kind, "directions": sorted(found)},
        )
        for note_id, found in sorted(directions.items())
        if note_id in notes
    ]


class WikiLinkIndexer:
    """The note service's indexer for ``[[wiki links]]`` (see the module's docstring)."""

    def __init__(self, events: EventBus | None, rules: KeyRules | None = None) -> None:
        self._events = events
        self._rules = rules or KeyRules()
        self._notes = NoteRepository()
        self._links = LinkRepository()

    async def enqueue(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        ids = list(dict.fromkeys(note_ids))
        notes = await self._notes.get_many(conn, ids)
        keys: dict[UUID, set[NoteKey]] = {}
        rows: list[WikiLinkRow] = []
        for note in notes.values():
            keys[note.id] = self._rules.note_keys(note.title, note.content, note.metadata)
            rows.extend(self._rows(note))
        old_keys = await self._links.keys_of(conn, ids)
        new_keys = {k.key for found in keys.values() for k in found}
        involved = old_keys | new_keys | {row.target_key for row in rows}
        await self._links.lock_keys(conn, involved)
        await self._links.replace_keys(conn, ids, keys)
        await self._links.replace_references(conn, ids, rows)
        sources = await self._links.resolve(conn, involved)
        changed = await self._links.sync_wiki_edges(conn, sources | set(ids))
        if not changed or self._events is None:
            return []
        ends = {end for pair in changed for end in pair}
        touched = await self._notes.get_many(conn, sorted(ends))
        actor = await self._links.writer(conn, ids)
        return [LinkEvents(link_change_events(memory, changed, touched, kind="wiki", actor=actor))]

    def _rows(self, note: Note) -> list[WikiLinkRow]:
        refs = references(note.content, note.format)
        targets = self._rules.reference_keys(refs, note.metadata)
        return [
            WikiLinkRow(
                source_id=note.id,
                ordinal=i,
                target=ref.target,
                target_key=key,
                heading=ref.heading,
                label=ref.label,
                embed=ref.embed,
            )
            for i, (ref, key) in enumerate(zip(refs, targets, strict=True))
            if key
        ]

    async def committed(self, pending: Sequence[Any]) -> None:
        if self._events is None:
            return
        events = [e for item in pending if isinstance(item, LinkEvents) for e in item.events]
        try:
            await self._events.publish_many(events)
        except FortemiError:
            # Events are notifications, not the record: the links are committed.
            log.warning("links_changed events for %d notes not published", len(events))
