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

References written in a vault note follow the vault rules
(:mod:`fortemi.graph.links.vault`, the default :class:`KeyRules`): each stores its
candidate keys in order, and step 3 resolves every reference with a candidate among the
keys involved. A soft delete or restore changes which notes may match without a new
version: the note service calls :meth:`WikiLinkIndexer.state_changed` for it, in the same
transaction.

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
from fortemi.graph.links.models import WikiCandidateRow, WikiLinkRow
from fortemi.graph.links.repository import LinkRepository
from fortemi.graph.links.resolution import KeyRules, NoteKey
from fortemi.graph.links.vault import VaultKeyRules, vault_of
from fortemi.graph.links.wiki import WikiRef, references
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


def _row(source_id: UUID, ordinal: int, ref: WikiRef, key: str, vault: str | None) -> WikiLinkRow:
    return WikiLinkRow(
        source_id=source_id,
        ordinal=ordinal,
        target=ref.target,
        target_key=key,
        heading=ref.heading,
        label=ref.label,
        embed=ref.embed,
        block=ref.block,
        vault=vault,
    )


class WikiLinkIndexer:
    """The note service's indexer for ``[[wiki links]]`` (see the module's docstring)."""

    def __init__(self, events: EventBus | None, rules: KeyRules | None = None) -> None:
        self._events = events
        self._rules = rules or VaultKeyRules()
        self._notes = NoteRepository()
        self._links = LinkRepository()

    async def enqueue(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        ids = list(dict.fromkeys(note_ids))
        notes = await self._notes.get_many(conn, ids)
        keys: dict[UUID, set[NoteKey]] = {}
        rows: list[WikiLinkRow] = []
        candidates: list[WikiCandidateRow] = []
        for note in notes.values():
            keys[note.id] = self._rules.note_keys(note.title, note.content, note.metadata)
            rows.extend(self._rows(note, candidates))
        old_keys = await self._links.keys_of(conn, ids)
        new_keys = {k.key for found in keys.values() for k in found}
        wanted = {row.target_key for row in rows} | {c.key for c in candidates}
        involved = old_keys | new_keys | wanted
        await self._links.lock_keys(conn, involved)
        await self._links.replace_keys(conn, ids, keys)
        await self._links.replace_references(conn, ids, rows, candidates)
        return await self._resolve(conn, memory, ids, involved)

    async def state_changed(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        """The notes were soft-deleted or restored: every reference naming one of them by
        any key is resolved again (a vault reference then dangles or falls to its next
        candidate; elsewhere a live note with the key takes it)."""
        ids = list(dict.fromkeys(note_ids))
        involved = await self._links.keys_of(conn, ids)
        await self._links.lock_keys(conn, involved)
        return await self._resolve(conn, memory, ids, involved, own=False)

    async def _resolve(
        self,
        conn: Connection,
        memory: str,
        ids: list[UUID],
        involved: set[str],
        *,
        own: bool = True,
    ) -> Sequence[Any]:
        sources = await self._links.resolve(conn, involved)
        changed = await self._links.sync_wiki_edges(conn, sources | (set(ids) if own else set()))
        if not changed or self._events is None:
            return []
        ends = {end for pair in changed for end in pair}
        touched = await self._notes.get_many(conn, sorted(ends))
        actor = await self._links.writer(conn, ids)
        return [LinkEvents(link_change_events(memory, changed, touched, kind="wiki", actor=actor))]

    def _rows(self, note: Note, candidates: list[WikiCandidateRow]) -> list[WikiLinkRow]:
        """The rows of the note's references; a vault reference's candidates are added
        to ``candidates``."""
        rows: list[WikiLinkRow] = []
        for i, ref in enumerate(references(note.content, note.format)):
            vault = vault_of(note.metadata)
            found = (
                self._rules.vault_reference(ref, note.metadata)
                if vault is not None and isinstance(self._rules, VaultKeyRules)
                else None
            )
            if found is None:
                key = self._rules.reference_key(ref, note.metadata)
                if key:
                    rows.append(_row(note.id, i, ref, key, None))
                continue
            ref, tried = found
            # A vault reference without candidates (too long to key, or "[[.]]") is kept,
            # dangling: nothing resolves it, and the vault's status lists it.
            key = tried[0].key if tried else ""
            rows.append(_row(note.id, i, ref, key, vault[0] if vault else None))
            candidates.extend(
                WikiCandidateRow(note.id, i, rank, c.rule, c.key) for rank, c in enumerate(tried)
            )
        return rows

    async def committed(self, pending: Sequence[Any]) -> None:
        if self._events is None:
            return
        events = [e for item in pending if isinstance(item, LinkEvents) for e in item.events]
        try:
            await self._events.publish_many(events)
        except FortemiError:
            # Events are notifications, not the record: the links are committed.
            log.warning("links_changed events for %d notes not published", len(events))
