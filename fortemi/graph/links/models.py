"""Value objects for links between notes: stored links, wiki references, what lists show."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from fortemi.platform.notes.models import Note

__all__ = [
    "DanglingRef",
    "ExplicitLink",
    "LinkKind",
    "LinkedNote",
    "NoteLink",
    "NoteLinks",
    "WikiLinkRow",
]


class LinkKind(StrEnum):
    EXPLICIT = "explicit"  # made through the API
    WIKI = "wiki"  # a resolved [[reference]] in the source note's content
    SEMANTIC = "semantic"  # made by the Linking job


@dataclass(frozen=True, slots=True)
class NoteLink:
    """A row of ``note_link``: a directed link ``source_id`` -> ``target_id``."""

    source_id: UUID
    target_id: UUID
    kind: LinkKind
    score: float
    rank: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    set_id: int | None = None
    model: str | None = None
    snn: float | None = None
    pruned: bool = False
    computed_at: datetime | None = None
    created_by: str | None = None


@dataclass(frozen=True, slots=True)
class WikiLinkRow:
    """A row of ``wiki_link``: one reference of a note's current version."""

    source_id: UUID
    ordinal: int
    target: str
    target_key: str
    heading: str | None
    label: str | None
    embed: bool
    target_id: UUID | None = None


@dataclass(frozen=True, slots=True)
class LinkedNote:
    """The note at the other end of a link, with the link."""

    note: Note
    link: NoteLink


@dataclass(frozen=True, slots=True)
class DanglingRef:
    """A wiki reference that names no note (yet)."""

    target: str
    heading: str | None
    label: str | None
    embed: bool


@dataclass(frozen=True, slots=True)
class NoteLinks:
    outgoing: list[LinkedNote]
    incoming: list[LinkedNote]
    dangling: list[DanglingRef]


@dataclass(frozen=True, slots=True)
class ExplicitLink:
    """An explicit link as created; ``created`` is False when the same link existed."""

    link: NoteLink
    source: Note
    target: Note
    created: bool
