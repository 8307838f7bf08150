"""The ``content_type`` concept of a note on the CPU tier: what kind of document it is.

A phrase of the note cannot say whether the note is source code, a data file or prose;
the note's detected document type can, and it is exact where a guess would not be. The
documents feature detects it (its path for vault notes, its declared format, then its
content, :meth:`~fortemi.documents.service.DocumentTypeService.detect_note`); the concept
is a two-level path, the kind of document then the type: ``["source code", "Python"]``,
``["structured data", "JSON"]``, ``["text", "Markdown"]``.

Why not a genre ("tutorial", "meeting notes"): telling those apart needs a reading of the
whole note, which is the generation tiers' job; a content type that every markdown note
shares costs nothing either, because related-concept inference weighs pairs by NPMI and a
concept on every note relates to nothing.
"""

from __future__ import annotations

from typing import Final, Protocol

from fortemi.documents.service import DocumentTypeService
from fortemi.platform.notes.models import Note

__all__ = ["CATEGORY_LABELS", "ContentTypes", "DetectedContentTypes", "FormatContentTypes"]

# The documents feature's categories as a reader names them (the path's first level).
CATEGORY_LABELS: Final = {
    "code": "source code",
    "prose": "text",
    "data": "structured data",
    "tabular": "table",
    "multimedia": "media",
    "documents": "document",
}
# The formats notes are written in most, for when no detection is at hand.
_FORMATS: Final = {
    "markdown": ("text", "Markdown"),
    "md": ("text", "Markdown"),
    "text": ("text", "Plain text"),
    "plain": ("text", "Plain text"),
    "txt": ("text", "Plain text"),
}


class ContentTypes(Protocol):
    """The content type path of a note (None: nothing sure enough to say)."""

    async def path_of(self, memory: str, note: Note) -> tuple[str, ...] | None: ...


class DetectedContentTypes:
    """The note's document type as the documents feature detects it, the memory's custom
    types first."""

    def __init__(self, documents: DocumentTypeService) -> None:
        self._documents = documents

    async def path_of(self, memory: str, note: Note) -> tuple[str, ...] | None:
        path = note.metadata.get("path")
        detection = await self._documents.detect_note(
            memory,
            path=path if isinstance(path, str) else None,
            format=note.format,
            content=note.content,
        )
        kind = detection.type
        category = CATEGORY_LABELS.get(kind.category.value)
        if category is None or not kind.display_name.strip():
            return None
        return (category, kind.display_name.strip())


class FormatContentTypes:
    """The note's declared format alone (no documents feature at hand)."""

    async def path_of(self, memory: str, note: Note) -> tuple[str, ...] | None:
        del memory
        name = note.format.strip().casefold()
        if not name:
            return None
        return _FORMATS.get(name, (name,))
