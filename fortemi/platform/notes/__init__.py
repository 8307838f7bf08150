"""Notes: text with history (immutable originals, a version per change) in a memory."""

from fortemi.platform.notes.models import (
    UNSET,
    ChangePolicy,
    ExternalItem,
    Note,
    NoteDiff,
    NoteDraft,
    NoteFilter,
    NotePatch,
    NoteVersion,
    Page,
    UpsertOutcome,
    UpsertResult,
)
from fortemi.platform.notes.service import NoteService

__all__ = [
    "UNSET",
    "ChangePolicy",
    "ExternalItem",
    "Note",
    "NoteDiff",
    "NoteDraft",
    "NoteFilter",
    "NotePatch",
    "NoteService",
    "NoteVersion",
    "Page",
    "UpsertOutcome",
    "UpsertResult",
]
