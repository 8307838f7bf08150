"""Links between notes: explicit links made through the API, what a note links to and
from (explicit, wiki and semantic links alike), and for vaults a project's reachable set
and the vault's link status.

Wiki links are not made here: they follow the notes' content, in the notes' own
transactions (:mod:`fortemi.graph.links.indexer`). Semantic links are the Linking job's.

Reads take the caller's read scope (:class:`~fortemi.platform.notes.NoteVisibility`) and
apply it in SQL: a link whose other end the caller may not read is not listed and not
counted. Soft-deleted notes are left out at the other end of a link (their links are kept,
so restoring a note brings them back), as note lists leave them out.
"""

from __future__ import annotations

import math
import struct
from uuid import UUID

from fortemi.graph.links.models import (
    ExplicitLink,
    LinkedNote,
    LinkKind,
    NoteLink,
    NoteLinks,
    VaultStatus,
)
from fortemi.graph.links.repository import LinkRepository
from fortemi.graph.links.vault_repository import VaultLinkRepository
from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.notes.models import Note, NoteVisibility
from fortemi.platform.notes.repository import NoteRepository

__all__ = ["DEFAULT_LINKS", "LinkService"]

DEFAULT_LINKS = 100  # links per list when the caller does not say

Owner = tuple[str | None, str | None]


def _stored(score: float) -> float:
    """``score`` as a ``real`` column stores it (float32), so a repeat of the same number
    compares equal to the stored one."""
    stored: float = struct.unpack("f", struct.pack("f", score))[0]
    return stored


def validate_score(score: object) -> float:
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise BadUserInput("score must be a number from 0 to 1", field="score")
    value = float(score)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise BadUserInput(f"score must be from 0 to 1, not {value:g}", field="score")
    return value


class LinkService:
    """Explicit links, and every note's links as the caller may see them.

    Errors: :class:`NotFound` (a note is absent), :class:`Conflict` (a note is deleted or
    moved under the caller, or the link exists with another score), :class:`BadUserInput`
    (a score out of 0..1, a link from a note to itself, a list size out of range).
    """

    def __init__(self, db: Database, *, max_links: int = 1000) -> None:
        self._db = db
        self._max_links = max_links
        self._notes = NoteRepository()
        self._links = LinkRepository()
        self._vaults = VaultLinkRepository()

    async def create_explicit(
        self,
        memory: str,
        source_id: UUID,
        target_id: UUID,
        score: float = 1.0,
        *,
        actor: str | None,
        owner: Owner | None = None,
    ) -> ExplicitLink:
        """A link ``source_id`` -> ``target_id`` with ``score`` (0..1), between two live
        notes of the memory. Repeating it returns the existing link (``created`` False);
        repeating it with another score is a CONFLICT naming the stored one. ``owner`` is
        the source's (project, skill) the caller was authorized for, checked again under
        the source's row lock."""
        value = validate_score(score)
        if source_id == target_id:
            raise BadUserInput("A note cannot link to itself", field="to")
        async with self._db.memory_transaction(memory, subject=f"Note {source_id}") as conn:
            source, target = await self._ends(conn, source_id, target_id, owner)
            link = await self._links.insert_explicit(conn, source_id, target_id, value, actor)
            if link is not None:
                return ExplicitLink(link, source, target, created=True)
            existing = await self._links.get(conn, source_id, LinkKind.EXPLICIT, target_id)
        if existing is None:  # the only way: deleted between the two statements
            raise Conflict("The link changed while you were creating it; retry")
        if existing.score != _stored(value):
            raise Conflict(
                f"Note {source_id} already links to note {target_id} with score "
                f"{existing.score:g}; delete that link first to change its score",
                reason="link_exists",
                existing_score=existing.score,
            )
        return ExplicitLink(existing, source, target, created=False)

    async def delete_explicit(
        self,
        memory: str,
        source_id: UUID,
        target_id: UUID,
        *,
        owner: Owner | None = None,
    ) -> NoteLink | None:
        """Remove the explicit link ``source_id`` -> ``target_id``; the link removed, or
        None when there was none (repeating a delete is a no-op)."""
        async with self._db.memory_transaction(memory, subject=f"Note {source_id}") as conn:
            source = await self._notes.get(conn, source_id, lock=True)
            if source is None:
                raise _not_found(source_id)
            _same_owner(source, owner)
            return await self._links.delete_explicit(conn, source_id, target_id)

    async def links(
        self,
        memory: str,
        note_id: UUID,
        *,
        visibility: NoteVisibility | None,
        first: int | None = None,
    ) -> NoteLinks:
        """The note's outgoing and incoming links to readable live notes, strongest first,
        at most ``first`` each, and its dangling wiki references in order."""
        limit = self._limit(first)
        async with self._db.memory_transaction(memory) as conn:
            outgoing = await self._linked(conn, note_id, "outgoing", visibility, limit)
            incoming = await self._linked(conn, note_id, "incoming", visibility, limit)
            dangling = await self._links.dangling(conn, note_id, limit)
        return NoteLinks(outgoing, incoming, dangling)

    async def backlinks(
        self,
        memory: str,
        note_id: UUID,
        *,
        visibility: NoteVisibility | None,
        first: int | None = None,
    ) -> list[LinkedNote]:
        """The readable live notes linking to the note, strongest link first."""
        limit = self._limit(first)
        async with self._db.memory_transaction(memory) as conn:
            return await self._linked(conn, note_id, "incoming", visibility, limit)

    # -- vaults --------------------------------------------------------------------------

    async def reachable(self, memory: str, vault: str, project: str) -> set[UUID]:
        """The project's reachable set in the vault: its live notes, and the live shared
        notes of the vault reached from them by resolved wiki links, followed onward
        through shared notes only (a link into any project is never followed). No read
        scope applies: the caller filters what it may show."""
        async with self._db.memory_transaction(memory) as conn:
            return await self._vaults.reach(conn, vault, project)

    async def reach_paths(
        self, memory: str, vault: str, project: str, *, visibility: NoteVisibility | None
    ) -> list[tuple[UUID, str]]:
        """(id, vault path) of the notes of :meth:`reachable` the caller may read, by path."""
        async with self._db.memory_transaction(memory) as conn:
            ids = await self._vaults.reach(conn, vault, project)
            return await self._vaults.paths(conn, vault, ids, visibility) if ids else []

    async def vault_status(
        self,
        memory: str,
        vault: str,
        *,
        visibility: NoteVisibility | None,
        first: int | None = None,
    ) -> VaultStatus:
        """The vault's notes and wiki links over the live notes the caller may read, and
        their unresolved links (at most ``first``). A vault without a readable note, or
        with no note at all, reports zero counts alike: no existence leaks."""
        limit = self._limit(first)
        async with self._db.memory_transaction(memory) as conn:
            counts = await self._vaults.counts(conn, vault, visibility)
            found = await self._vaults.dangling(conn, vault, visibility, limit) if limit else []
        return VaultStatus(vault=vault, dangling_links=found, **counts)

    # -- helpers -------------------------------------------------------------------------

    def _limit(self, first: int | None) -> int:
        if first is None:
            return min(DEFAULT_LINKS, self._max_links)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise BadUserInput("first must be zero or a positive integer", field="first")
        return min(first, self._max_links)

    async def _linked(
        self,
        conn: Connection,
        note_id: UUID,
        direction: str,
        visibility: NoteVisibility | None,
        limit: int,
    ) -> list[LinkedNote]:
        links = await self._links.links(
            conn, note_id, direction, visibility=visibility, limit=limit
        )
        if not links:
            return []
        other = "target_id" if direction == "outgoing" else "source_id"
        notes = await self._notes.get_many(conn, [getattr(link, other) for link in links])
        return [
            LinkedNote(notes[getattr(link, other)], link)
            for link in links
            if getattr(link, other) in notes
        ]

    async def _ends(
        self, conn: Connection, source_id: UUID, target_id: UUID, owner: Owner | None
    ) -> tuple[Note, Note]:
        """Both notes, live; the source locked (a link is a change to it), still with the
        owner the caller was authorized for."""
        source = await self._notes.get(conn, source_id, lock=True)
        if source is None:
            raise _not_found(source_id)
        _same_owner(source, owner)
        target = await self._notes.get(conn, target_id)
        if target is None:
            raise _not_found(target_id)
        for note in (source, target):
            if note.deleted:
                raise Conflict(
                    f"Note {note.id} is deleted; restore it first to link it",
                    note_id=str(note.id),
                )
        return source, target


def _not_found(note_id: UUID) -> NotFound:
    return NotFound(f"Note {note_id} does not exist in this memory", note_id=str(note_id))


def _same_owner(note: Note, owner: Owner | None) -> None:
    if owner is not None and (note.project, note.skill) != owner:
        raise Conflict(
            f"Note {note.id} moved to another project or skill while you were changing its "
            "links; read it again and retry",
            note_id=str(note.id),
        )
