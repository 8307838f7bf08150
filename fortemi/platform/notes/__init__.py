"""Notes: text with history (immutable originals, a version per change) in a memory."""

from fortemi.platform.notes.events import note_event
from fortemi.platform.notes.models import (
    UNSET,
    ChangePolicy,
    ExternalItem,
    NameSet,
    Note,
    NoteDiff,
    NoteDraft,
    NoteFilter,
    NotePatch,
    NoteVersion,
    NoteVisibility,
    Page,
    SyncAdmission,
    SyncOutcome,
    SyncPlan,
    SyncResult,
    UpsertOutcome,
    UpsertOwners,
    UpsertResult,
)
from fortemi.platform.notes.service import NoteService

__all__ = [
    "UNSET",
    "ChangePolicy",
    "ExternalItem",
    "NameSet",
    "Note",
    "NoteDiff",
    "NoteDraft",
    "NoteFilter",
    "NotePatch",
    "NoteService",
    "NoteVersion",
    "NoteVisibility",
    "Page",
    "SyncAdmission",
    "SyncOutcome",
    "SyncPlan",
    "SyncResult",
    "UpsertOutcome",
    "UpsertOwners",
    "UpsertResult",
    "note_event",
]
