"""Notes mirrored from an external source, by external id: upsert and sync.

:meth:`~fortemi.platform.notes.NoteService.upsert_external` and
:meth:`~fortemi.platform.notes.NoteService.sync_external` are the public entries; they
delegate here, to :class:`ExternalNotes`, which runs each batch in one
``Database.memory_transaction`` and hands the indexers their work through the service
(its callbacks), as every other change of a note does.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any
from uuid import UUID, uuid4

from fortemi.platform.database import Connection, Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes.diff import (
    apply_item,
    content_hash,
    same_state,
    state_of,
    versioned_change,
)
from fortemi.platform.notes.models import (
    ChangePolicy,
    ExternalItem,
    Note,
    NoteDraft,
    SyncAdmission,
    SyncOutcome,
    SyncPlan,
    SyncResult,
    UpsertOutcome,
    UpsertResult,
)
from fortemi.platform.notes.repository import NoteInsert, NoteRepository, NoteWrite
from fortemi.platform.notes.validation import check_owner, validate_batch, validate_label

__all__ = ["ExternalNotes", "Indexing", "external_insert", "next_write"]

# (project, skill): who owns a note, so whose policy governs it.
Owner = tuple[str | None, str | None]
# The service's indexing steps: work recorded in a transaction, and its hand-off after.
Index = Callable[[Connection, str, Sequence[UUID]], Awaitable[Sequence[Any]]]
Committed = Callable[[Sequence[Any]], Awaitable[None]]


def next_write(current: Note, target: NoteDraft, actor: str | None) -> NoteWrite | None:
    """The write that takes ``current`` to ``target``; None when nothing would change."""
    old = state_of(current)
    if same_state(old, target):
        return None
    check_owner(target)
    versioned = versioned_change(old, target)
    return NoteWrite(
        id=current.id,
        state=target,
        version=current.version + 1 if versioned else current.version,
        content_hash=(
            current.content_hash if target.content == old.content else content_hash(target.content)
        ),
        new_version=versioned,
        actor=actor,
    )


def external_insert(source: str, item: ExternalItem, actor: str | None) -> NoteInsert:
    """The row creating the note ``source`` knows as ``item``'s external id."""
    state = check_owner(apply_item(NoteDraft(source=source), item, ChangePolicy.REPLACE))
    return NoteInsert(
        id=uuid4(),
        state=state,
        content_hash=content_hash(state.content),
        actor=actor,
        external_source=source,
        external_id=item.external_id,
    )


def _decide(
    current: Note, item: ExternalItem, policy: ChangePolicy, actor: str | None
) -> tuple[UpsertOutcome, NoteWrite | None]:
    """What an upsert item does to the note it matches, and the write it needs."""
    if current.deleted:
        # Someone deleted the note here; re-creating or silently editing it would undo
        # that decision, so the caller is told instead, whatever the policy.
        return UpsertOutcome.CONFLICT, None
    write = next_write(current, apply_item(state_of(current), item, policy), actor)
    if write is None:
        return UpsertOutcome.UNCHANGED, None
    if policy is ChangePolicy.CONFLICT:
        return UpsertOutcome.CONFLICT, None
    return UpsertOutcome.UPDATED, write


class Indexing:
    """The note service's indexing steps, as :class:`ExternalNotes` calls them."""

    def __init__(self, index: Index, states_changed: Index, committed: Committed) -> None:
        self.index = index
        self.states_changed = states_changed
        self.committed = committed


class ExternalNotes:
    """Upserts and syncs of external items (see :class:`~fortemi.platform.notes.NoteService`
    for the errors)."""

    def __init__(
        self,
        db: Database,
        repo: NoteRepository,
        indexing: Indexing,
        *,
        max_note_bytes: int,
        max_upsert_batch: int,
    ) -> None:
        self._db = db
        self._repo = repo
        self._indexing = indexing
        self._max_note_bytes = max_note_bytes
        self._max_upsert_batch = max_upsert_batch

    async def upsert(
        self,
        memory: str,
        source: str,
        items: Sequence[ExternalItem],
        on_change: ChangePolicy,
        *,
        actor: str | None,
    ) -> builtins.list[UpsertResult]:
        """Create or update the notes ``source`` knows by external id, as one transaction.

        All items are validated first; one bad item rejects the batch and nothing is
        written. Per item: absent → CREATED (``source`` is also its ``source``); present and
        equal to what the item would make → UNCHANGED; changed → UPDATED under VERSION
        (omitted fields keep their value) or REPLACE (omitted fields reset to defaults), or
        CONFLICT under CONFLICT. A soft-deleted match is always CONFLICT. Results are in
        item order; a CONFLICT or UNCHANGED result carries the note as it is.
        """
        source, checked = validate_batch(
            source, items, max_note_bytes=self._max_note_bytes, max_batch=self._max_upsert_batch
        )
        policy = _policy(on_change)
        external_ids = [item.external_id for item in checked]
        outcomes: builtins.list[tuple[str, UpsertOutcome, Note | UUID]] = []
        inserts: builtins.list[NoteInsert] = []
        writes: builtins.list[NoteWrite] = []
        async with self._db.memory_transaction(memory, subject="A note of the batch") as conn:
            await self._repo.lock_external(conn, source, external_ids)
            existing = await self._repo.find_external(conn, source, external_ids)
            for item in checked:
                current = existing.get(item.external_id)
                if current is None:
                    insert = external_insert(source, item, actor)
                    inserts.append(insert)
                    outcomes.append((item.external_id, UpsertOutcome.CREATED, insert.id))
                    continue
                outcome, write = _decide(current, item, policy, actor)
                if write is not None:
                    writes.append(write)
                outcomes.append((item.external_id, outcome, current if write is None else write.id))
            await self._repo.insert_many(conn, inserts)
            await self._repo.write_many(conn, writes)
            written = [row.id for row in inserts] + [row.id for row in writes]
            stored = await self._repo.get_many(conn, written) if written else {}
            reindex = [row.id for row in inserts] + [w.id for w in writes if w.new_version]
            pending = await self._indexing.index(conn, memory, reindex)
        await self._indexing.committed(pending)
        return [
            UpsertResult(external_id, outcome, note if isinstance(note, Note) else stored[note])
            for external_id, outcome, note in outcomes
        ]

    async def sync(
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
        """Make the notes of ``source`` match ``items`` (changes apply as VERSION), and
        soft-delete those in the ``prune`` range (after, through] that neither an item nor
        ``keep`` (keys the source still holds but did not send) names, as
        one transaction: the way a folder or a wiki mirrors itself into a memory.

        A soft-deleted note whose key comes back is RESTORED: the source holds it again.
        The plan is made under the batch's locks and handed to ``admit`` (the caller's
        authorization) before anything is written, so what is admitted is what is
        written. ``dry_run`` plans, admits and writes nothing. Results: items in order,
        then the pruned notes; validation as :meth:`upsert_external` (zero items allowed).
        """
        if items:
            source, checked = validate_batch(
                source,
                items,
                max_note_bytes=self._max_note_bytes,
                max_batch=self._max_upsert_batch,
            )
        else:
            source, checked = validate_label(source, "source") or "", []
            if not source:
                raise BadUserInput("source must name where the items come from", field="source")
        keys = [item.external_id for item in checked]
        async with self._db.memory_transaction(memory, subject="A note of the batch") as conn:
            await self._repo.lock_external(conn, source, keys)
            existing = await self._repo.find_external(conn, source, keys)
            planned: builtins.list[tuple[str, SyncOutcome, Note | None, Owner]] = []
            writes: dict[str, tuple[NoteInsert | NoteWrite | None, bool]] = {}
            for item in checked:
                current = existing.get(item.external_id)
                change: NoteInsert | NoteWrite | None
                if current is None:
                    insert = external_insert(source, item, actor)
                    outcome, change, revive = SyncOutcome.CREATED, insert, False
                    target = insert.state
                else:
                    target = apply_item(state_of(current), item, ChangePolicy.VERSION)
                    change = next_write(current, target, actor)
                    revive = current.deleted
                    outcome = (
                        SyncOutcome.RESTORED
                        if revive
                        else SyncOutcome.UPDATED
                        if change
                        else SyncOutcome.UNCHANGED
                    )
                planned.append((item.external_id, outcome, current, (target.project, target.skill)))
                writes[item.external_id] = (change, revive)
            named = set(keys) | set(keep)
            prune_notes: builtins.list[Note] = []
            if prune is not None:
                in_range = await self._repo.external_range(conn, source, *prune)
                prune_notes = [n for n in in_range if n.external_id not in named]
            admission = await admit(SyncPlan(planned, prune_notes))
            results: builtins.list[SyncResult] = []
            reindex: builtins.list[UUID] = []
            flipped: builtins.list[UUID] = []
            for key, outcome, current, _ in planned:
                if key not in admission.admitted:
                    reason = admission.reasons.get(key, "not admitted")
                    results.append(SyncResult(key, SyncOutcome.SKIPPED, current, reason))
                    continue
                change, revive = writes[key]
                note: Note | None = current
                if not dry_run:
                    if revive and current is not None:
                        note = await self._repo.restore(conn, current.id, actor)
                        flipped.append(current.id)
                    if isinstance(change, NoteInsert):
                        note = await self._repo.insert(conn, change)
                        reindex.append(note.id)
                    elif change is not None:
                        note = await self._repo.write(conn, change)
                        if change.new_version:
                            reindex.append(note.id)
                results.append(SyncResult(key, outcome, note))
            for pruned in prune_notes:
                key = pruned.external_id or ""
                if key not in admission.admitted:
                    reason = admission.reasons.get(key, "not admitted")
                    results.append(SyncResult(key, SyncOutcome.SKIPPED, pruned, reason))
                    continue
                gone = pruned if dry_run else await self._repo.soft_delete(conn, pruned.id, actor)
                if gone is not None and not dry_run:
                    flipped.append(pruned.id)
                results.append(SyncResult(key, SyncOutcome.DELETED, gone or pruned))
            # Deletes and restores move wiki references as a delete or restore call would.
            pending = [
                *await self._indexing.index(conn, memory, reindex),
                *await self._indexing.states_changed(conn, memory, flipped),
            ]
        await self._indexing.committed(pending)
        return results


def _policy(on_change: ChangePolicy | str) -> ChangePolicy:
    try:
        return ChangePolicy(on_change)
    except ValueError as exc:
        choices = ", ".join(policy.value for policy in ChangePolicy)
        raise BadUserInput(f"on_change must be one of {choices}", field="on_change") from exc
