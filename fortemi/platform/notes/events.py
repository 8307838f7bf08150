"""The note events every path that changes a note publishes (GraphQL, jobs, sync).

One builder, so a ``note.purged`` from a bulk purge job reads like one from ``purgeNote``.
The payload carries the owner (project, skill) so each subscriber's read scope can filter
it, and the title so a subscriber can show what changed without reading the note back.
"""

from __future__ import annotations

from fortemi.platform.events import Event
from fortemi.platform.ids import to_global_id
from fortemi.platform.notes.models import Note

__all__ = ["NOTE_EVENT_KINDS", "note_event", "note_event_payload"]

NOTE_EVENT_KINDS = ("created", "updated", "deleted", "restored", "purged")


def note_event(kind: str, memory: str, note: Note, actor: str | None) -> Event:
    """``note.<kind>`` for ``note`` as it is after the change (as it was, for a purge)."""
    if kind not in NOTE_EVENT_KINDS:
        raise ValueError(f"unknown note event kind {kind!r}")
    return Event(
        type=f"note.{kind}",
        entity_type="note",
        entity_id=to_global_id("Note", note.id),
        memory=memory,
        actor=actor,
        payload=note_event_payload(note),
    )


def note_event_payload(note: Note) -> dict[str, object]:
    """What every ``note.*`` event carries of its note: the owner (project, skill) each
    subscriber's read scope filters on, and the version and title to show."""
    return {
        "version": note.version,
        "title": note.title,
        "project": note.project,
        "skill": note.skill,
    }
