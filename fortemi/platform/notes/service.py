"""Note operations: create, read, list, change with history, delete, and import (the
upserts and syncs of external items are :mod:`fortemi.platform.notes.sync`'s).

History: ``note_version`` holds every state of a note's versioned fields (title, content,
format, metadata, tags); version 1 is the note as created, ``note.version`` is the latest,
and ``note_original`` keeps the first content forever. Changing only an attribute
(collection, project, starred, archived) updates the note and ``updated_at`` without a
version (see :mod:`fortemi.platform.notes.diff`); so do soft delete and restore, which
also stamp ``updated_at``/``updated_by``. A change that changes nothing is not written at
all, so replays and retries are free of side effects.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Protocol, runtime_checkable
from uuid import UUID, uuid4

from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput, Conflict, NotFound
from fortemi.platform.notes.cursor import decode_cursor, keyset_page, through
from fortemi.platform.notes.diff import (
    apply_patch,
    content_hash,
    owner_after,
    state_of,
    unified_diff,
    with_version,
)
from fortemi.platform.notes.models import (
    ChangePolicy,
    ExternalItem,
    Note,
    NoteDiff,
    NoteDraft,
    NoteFilter,
    NotePatch,
    NoteVersion,
    Page,
    SyncAdmission,
    SyncPlan,
    SyncResult,
    UpsertOwners,
    UpsertResult,
)
from fortemi.platform.notes.repository import NoteInsert, NoteRepository
from fortemi.platform.notes.sync import ExternalNotes, Indexing, next_write
from fortemi.platform.notes.validation import (
    validate_draft,
    validate_external_id,
    validate_filter,
    validate_patch,
    validate_text,
)
from fortemi.platform.pages import rows_to_fetch

__all__ = ["DEFAULT_PAGE_SIZE", "NoteService"]

DEFAULT_PAGE_SIZE = 20
_MAX_VERSION = 2**31 - 1  # note_version.version is an integer column


# (project, skill): who owns a note, so whose policy governs it.
Owner = tuple[str | None, str | None]


def _same_owner(note: Note, owner: Owner | None) -> None:
    """Callers authorize a change against the note's owner as they read it; under the row
    lock, the note must still have that owner, or the permission checked was the wrong one.
    """
    if owner is not None and (note.project, note.skill) != owner:
        raise Conflict(
            f"Note {note.id} moved to another project or skill while you were changing it; "
            "read it again and retry",
            note_id=str(note.id),
        )


def _not_found(note_id: UUID) -> NotFound:
    return NotFound(f"Note {note_id} does not exist in this memory", note_id=str(note_id))


def _no_version(note_id: UUID, version: int) -> NotFound:
    return NotFound(
        f"Note {note_id} has no version {version}", note_id=str(note_id), version=version
    )


def _is_version_number(version: int) -> bool:
    return (
        not isinstance(version, bool)
        and isinstance(version, int)
        and (1 <= version <= _MAX_VERSION)
    )


class NoteIndexer(Protocol):
    """Keeps what is derived from notes (chunks, embeddings, links, concepts) in step with them.

    :meth:`enqueue` runs inside the transaction that changed the notes' text (so the work
    is recorded if and only if the change commits); :meth:`committed` gets what it
    returned, after the commit (to wake the workers).
    """

    async def enqueue(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]: ...

    async def committed(self, pending: Sequence[Any]) -> None: ...


@runtime_checkable
class NoteStateIndexer(NoteIndexer, Protocol):
    """An indexer whose work also depends on whether notes are deleted (wiki links:
    a deleted note stops taking references): told of a soft delete or a restore, in its
    transaction, as :meth:`NoteIndexer.enqueue` is told of a new version."""

    async def state_changed(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]: ...


class NoteService:
    """The notes of a memory.

    Every method validates its input before any SQL and then runs in exactly one
    ``Database.memory_transaction(memory)``. Errors: :class:`NotFound` (no such note or
    version in this memory), :class:`Conflict` (the note is in the wrong state, or
    ``expected_version`` is stale), :class:`BadUserInput` (input out of bounds).
    """

    def __init__(
        self,
        db: Database,
        *,
        max_note_bytes: int,
        max_page_size: int,
        max_upsert_batch: int,
        indexers: Sequence[NoteIndexer] = (),
    ) -> None:
        self._db = db
        # In order: each runs in the note's transaction, then each is told of the commit.
        self._indexers = tuple(indexers)
        self._repo = NoteRepository()
        self._max_note_bytes = max_note_bytes
        self._max_page_size = max_page_size
        self._max_upsert_batch = max_upsert_batch
        self._external = ExternalNotes(
            db,
            self._repo,
            Indexing(self._index, self._states_changed, self._committed),
            max_note_bytes=max_note_bytes,
            max_upsert_batch=max_upsert_batch,
        )

    # -- reads -----------------------------------------------------------------------------

    async def get(self, memory: str, note_id: UUID) -> Note | None:
        """The note, soft-deleted or not (``deleted_at`` tells); None if absent."""
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.get(conn, note_id)

    async def get_many(self, memory: str, note_ids: Sequence[UUID]) -> dict[UUID, Note]:
        """The notes of ``note_ids`` that exist (deleted ones included), by id."""
        if not note_ids:
            return {}
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.get_many(conn, note_ids)

    async def list(
        self, memory: str, *, first: int | None, after: str | None, filter: NoteFilter
    ) -> Page[Note]:
        """A page of notes, newest first (``created_at DESC, id DESC``).

        ``first`` defaults to 20 and is capped at ``max_page_size``; 0 gives an empty page
        (whose ``has_next_page`` still says whether notes follow). ``after`` is the cursor of
        the last item of the previous page.
        """
        limit = self._page_size(first)
        position = None if after is None else decode_cursor(after)
        note_filter = validate_filter(filter)
        async with self._db.memory_transaction(memory) as conn:
            notes = await self._repo.list(
                conn,
                note_filter,
                after=through(position),
                limit=rows_to_fetch(limit, position),
            )
        return keyset_page(notes, limit=limit, after=position)

    async def count(self, memory: str, filter: NoteFilter) -> int:
        note_filter = validate_filter(filter)
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.count(conn, note_filter)

    async def external_owners(
        self, memory: str, source: str, external_ids: Sequence[str]
    ) -> dict[str, tuple[str | None, str | None]]:
        """(project, skill) of the existing notes of ``source`` with these external ids.

        Lets the caller authorize an upsert before it runs: an item that omits its owner
        keeps the note's current one.
        """
        source = validate_text(source, "source")
        ids = [validate_external_id(external_id) for external_id in external_ids]
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.external_owners(conn, source, ids)

    async def upsert_owners(
        self, memory: str, source: str, items: Sequence[ExternalItem], on_change: ChangePolicy
    ) -> UpsertOwners:
        """The owners :meth:`upsert_external` with these arguments would touch, by the same
        rule (:func:`~fortemi.platform.notes.diff.owner_after`), for the caller to
        authorize before calling it."""
        current = await self.external_owners(memory, source, [i.external_id for i in items])
        touched = set(current.values())
        for item in items:
            touched.add(owner_after(current.get(item.external_id), item, on_change))
        return UpsertOwners(current=current, touched=frozenset(touched))

    async def versions(self, memory: str, note_id: UUID) -> builtins.list[NoteVersion]:
        """Every version of the note, ascending; empty when the note does not exist."""
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.versions(conn, note_id)

    async def version(self, memory: str, note_id: UUID, version: int) -> NoteVersion | None:
        if not _is_version_number(version):
            return None
        async with self._db.memory_transaction(memory) as conn:
            return await self._repo.version(conn, note_id, version)

    async def diff(
        self, memory: str, note_id: UUID, from_version: int, to_version: int
    ) -> NoteDiff:
        """A unified diff of title and content from one version to another (either order)."""
        for number in (from_version, to_version):
            if not _is_version_number(number):
                raise _no_version(note_id, number)
        async with self._db.memory_transaction(memory) as conn:
            old = await self._repo.version(conn, note_id, from_version)
            new = await self._repo.version(conn, note_id, to_version)
        if old is None:
            raise _no_version(note_id, from_version)
        if new is None:
            raise _no_version(note_id, to_version)
        text, additions, deletions = unified_diff(old, new)
        return NoteDiff(note_id, from_version, to_version, text, additions, deletions)

    # -- changes ---------------------------------------------------------------------------

    async def create(self, memory: str, draft: NoteDraft, *, actor: str | None) -> Note:
        """A new note at version 1, with its original and its first version."""
        state = validate_draft(draft, max_note_bytes=self._max_note_bytes)
        row = NoteInsert(
            id=uuid4(), state=state, content_hash=content_hash(state.content), actor=actor
        )
        async with self._db.memory_transaction(memory) as conn:
            note = await self._repo.insert(conn, row)
            pending = await self._index(conn, memory, [note.id])
        await self._committed(pending)
        return note

    async def update(
        self,
        memory: str,
        note_id: UUID,
        patch: NotePatch,
        *,
        actor: str | None,
        owner: Owner | None = None,
    ) -> Note:
        """Apply ``patch``; a new version when a versioned field changes.

        Concurrent updates of one note are serialised by a row lock, so none is lost. With
        ``expected_version`` the update applies only to that version (else Conflict with
        ``expected_version`` and ``current_version``). A deleted note must be restored first.
        """
        patch = validate_patch(patch, max_note_bytes=self._max_note_bytes)
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            current = await self._live(conn, note_id, owner)
            expected = patch.expected_version
            if expected is not None and expected != current.version:
                raise Conflict(
                    f"Note {note_id} is at version {current.version}, not {expected}; "
                    "read it again and reapply your change",
                    note_id=str(note_id),
                    expected_version=expected,
                    current_version=current.version,
                )
            note, pending = await self._change(
                conn, memory, current, apply_patch(state_of(current), patch), actor
            )
        await self._committed(pending)
        return note

    async def restore_version(
        self,
        memory: str,
        note_id: UUID,
        version: int,
        *,
        actor: str | None,
        owner: Owner | None = None,
    ) -> Note:
        """A new version whose versioned fields are those of ``version``.

        Attributes (collection, project, starred, archived) are not history and keep their
        current value. When the note already equals that version nothing is written.
        """
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            current = await self._live(conn, note_id, owner)
            old = (
                await self._repo.version(conn, note_id, version)
                if _is_version_number(version)
                else None
            )
            if old is None:
                raise _no_version(note_id, version)
            note, pending = await self._change(
                conn, memory, current, with_version(state_of(current), old), actor
            )
        await self._committed(pending)
        return note

    async def delete(
        self, memory: str, note_id: UUID, *, actor: str | None, owner: Owner | None = None
    ) -> Note:
        """Soft-delete: the note stays readable by id and restorable; repeating is a no-op."""
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            await self._check_owner(conn, note_id, owner)
            note = await self._repo.soft_delete(conn, note_id, actor)
            pending = await self._state_changed(conn, memory, note)
            if note is None:
                note = await self._repo.get(conn, note_id)
        if note is None:
            raise _not_found(note_id)
        await self._committed(pending)
        return note

    async def restore(
        self, memory: str, note_id: UUID, *, actor: str | None, owner: Owner | None = None
    ) -> Note:
        """Undo a soft delete; restoring a live note returns it unchanged."""
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            await self._check_owner(conn, note_id, owner)
            note = await self._repo.restore(conn, note_id, actor)
            pending = await self._state_changed(conn, memory, note)
            if note is None:
                note = await self._repo.get(conn, note_id)
        if note is None:
            raise _not_found(note_id)
        await self._committed(pending)
        return note

    async def purge(self, memory: str, note_id: UUID, *, owner: Owner | None = None) -> Note:
        """Remove a soft-deleted note with its original and versions, for good; the note as
        it was (for the ``note.purged`` event). NOT_FOUND if absent, CONFLICT if not deleted.
        """
        async with self._db.memory_transaction(memory, subject=f"Note {note_id}") as conn:
            await self._check_owner(conn, note_id, owner)
            purged = await self._repo.purge(conn, note_id)
            if purged is not None:
                return purged
            exists = await self._repo.get(conn, note_id) is not None
        if not exists:
            raise _not_found(note_id)
        raise Conflict(
            f"Note {note_id} is not deleted; delete it first, then purge it",
            note_id=str(note_id),
        )

    async def upsert_external(
        self,
        memory: str,
        source: str,
        items: Sequence[ExternalItem],
        on_change: ChangePolicy,
        *,
        actor: str | None,
    ) -> builtins.list[UpsertResult]:
        """See :meth:`ExternalNotes.upsert` (:mod:`fortemi.platform.notes.sync`)."""
        return await self._external.upsert(memory, source, items, on_change, actor=actor)

    async def sync_external(
        self,
        memory: str,
        source: str,
        items: Sequence[ExternalItem],
        *,
        prune: tuple[str | None, str | None] | None,
        keep: Collection[str] = (),
        admit: Callable[[SyncPlan], Awaitable[SyncAdmission]],
        actor: str | None,
        dry_run: bool = False,
    ) -> builtins.list[SyncResult]:
        """See :meth:`ExternalNotes.sync` (:mod:`fortemi.platform.notes.sync`)."""
        return await self._external.sync(
            memory,
            source,
            items,
            prune=prune,
            keep=keep,
            admit=admit,
            actor=actor,
            dry_run=dry_run,
        )

    # -- helpers ---------------------------------------------------------------------------

    def _page_size(self, first: int | None) -> int:
        if first is None:
            return min(DEFAULT_PAGE_SIZE, self._max_page_size)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise BadUserInput("first must be zero or a positive integer", field="first")
        return min(first, self._max_page_size)

    async def _live(self, conn: Connection, note_id: UUID, owner: Owner | None = None) -> Note:
        """The note, locked for update; NotFound if absent, Conflict if soft-deleted or if
        it no longer has ``owner``."""
        note = await self._repo.get(conn, note_id, lock=True)
        if note is None:
            raise _not_found(note_id)
        _same_owner(note, owner)
        if note.deleted:
            raise Conflict(f"Note {note_id} is deleted; restore it first", note_id=str(note_id))
        return note

    async def _check_owner(self, conn: Connection, note_id: UUID, owner: Owner | None) -> None:
        if owner is not None:
            note = await self._repo.get(conn, note_id, lock=True)
            if note is not None:
                _same_owner(note, owner)

    async def _change(
        self,
        conn: Connection,
        memory: str,
        current: Note,
        target: NoteDraft,
        actor: str | None,
    ) -> tuple[Note, Sequence[Any]]:
        """The note after the write ``target`` needs (none: unchanged), and what the
        indexer has to finish once the transaction commits."""
        write = next_write(current, target, actor)
        if write is None:
            return current, ()
        note = await self._repo.write(conn, write)
        return note, await self._index(conn, memory, [note.id]) if write.new_version else ()

    async def _index(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        """Each indexer's work for ``note_ids``, recorded in ``conn``'s transaction; what
        :meth:`_committed` hands back to each after the commit."""
        if not note_ids:
            return ()
        return [
            (indexer, await indexer.enqueue(conn, memory, note_ids)) for indexer in self._indexers
        ]

    async def _state_changed(
        self, conn: Connection, memory: str, note: Note | None
    ) -> Sequence[Any]:
        """What the indexers that follow deletes make of ``note`` having just been deleted
        or restored (None: nothing changed)."""
        return await self._states_changed(conn, memory, [] if note is None else [note.id])

    async def _states_changed(
        self, conn: Connection, memory: str, note_ids: Sequence[UUID]
    ) -> Sequence[Any]:
        if not note_ids:
            return ()
        return [
            (indexer, await indexer.state_changed(conn, memory, note_ids))
            for indexer in self._indexers
            if isinstance(indexer, NoteStateIndexer)
        ]

    async def _committed(self, pending: Sequence[Any]) -> None:
        for indexer, work in pending:
            if work:
                await indexer.committed(work)
