"""The notes' job type.

``PurgeNote`` (tier cpu, priority 5): payload ``{"note_ids": ["<uuid>", ...]}`` in the
job's memory. Each note is purged with :meth:`NoteService.purge`:

* a soft-deleted note is removed for good, and ``note.purged`` is published for it (the
  same event ``purgeNote`` publishes, with the job's requester as actor);
* a note already gone (purged by an earlier attempt or by someone else, or its memory
  deleted) counts as done, so a retried or duplicated run leaves the same state;
* a note that is not deleted (restored since the purge was asked for) is skipped, not
  purged and not an error: one restored note must not hold back the rest of the batch,
  and the requester sees it named in the result.

Result: ``{"purged": [ids gone now], "skipped_not_deleted": [ids left alone]}``, each in
payload order. A payload that is not a list of UUIDs, or a job without a memory, fails
for good (``invalid_payload``, ``memory_required``): retrying cannot fix it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.jobs.models import HandlerContext, JobOutcome, JobType, Tier
from fortemi.platform.notes.events import note_event
from fortemi.platform.notes.service import NoteService

__all__ = ["PURGE_NOTE", "purge_note_type"]

PURGE_NOTE = "PurgeNote"


def _note_ids(payload: dict[str, Any]) -> list[UUID] | None:
    raw = payload.get("note_ids")
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        return None
    try:
        return [UUID(item) for item in raw]
    except ValueError:
        return None


def purge_note_type(
    notes: NoteService, *, after: Callable[[str], Awaitable[object]] | None = None
) -> JobType:
    """The ``PurgeNote`` job type, purging through ``notes``; ``after(memory)`` runs once
    a batch purged something (the composition root sweeps attachments' orphan blobs)."""

    async def purge(context: HandlerContext) -> JobOutcome:
        memory = context.job.memory
        if memory is None:
            return JobOutcome.failure("memory_required")
        note_ids = _note_ids(context.job.payload)
        if note_ids is None:
            return JobOutcome.failure("invalid_payload")
        purged: list[str] = []
        skipped: list[str] = []
        reported = -1
        for done, note_id in enumerate(note_ids, start=1):
            try:
                note = await notes.purge(memory, note_id)
                purged.append(str(note_id))
                await context.publish(note_event("purged", memory, note, context.job.requested_by))
            except NotFound:
                # Gone already: whoever purged it announced it.
                purged.append(str(note_id))
            except Conflict as exc:
                # Only "this note is not deleted" means skip; a concurrency conflict (the
                # same class, no note named) is transient and retried with the job.
                if exc.extensions.get("note_id") != str(note_id):
                    raise
                skipped.append(str(note_id))
            percent = done * 100 // len(note_ids)
            # At most one progress write per percent: a 1,000-note batch costs 100, not 1,000.
            if percent != reported:
                await context.report_progress(percent, f"{done} of {len(note_ids)} notes")
                reported = percent
        if purged and after is not None:
            await after(memory)
        return JobOutcome.success({"purged": purged, "skipped_not_deleted": skipped})

    return JobType(name=PURGE_NOTE, tier=Tier.CPU, priority=5, handler=purge)
