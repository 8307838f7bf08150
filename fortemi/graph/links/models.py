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
    "VaultDangling",
    "VaultStatus",
    "WikiCandidateRow",
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
    block: str | None = None
    vault: str | None = None  # the source's vault: resolved by the vault rules
    resolution: str = "dangling"  # path | suffix | title | alias | dangling | ambiguous
    target_type: str = "unknown"  # memory | skill | shared_concept | unknown
    matches: int = 0
    decided_rank: int | None = None  # the candidate that decided a vault reference


@dataclass(frozen=True, slots=True)
class WikiCandidateRow:
    """A row of ``wiki_link_candidate``: one key a vault reference tries, in rank order."""

    source_id: UUID
    ordinal: int
    rank: int
    rule: str
    key: str


@dataclass(frozen=True, slots=True)
class VaultDangling:
    """A reference of a vault note that names no note: dangling, or ambiguous."""

    source_id: UUID
    source_path: str
    target: str
    heading: str | None
    reason: str  # dangling | ambiguous
    matches: int


@dataclass(frozen=True, slots=True)
class VaultStatus:
    """A vault's notes and wiki links, counted over the notes the caller may read."""

    vault: str
    notes: int
    links: int
    resolved: int
    dangling: int
    ambiguous: int
    dangling_links: list[VaultDangling]


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
    block: str | None = None
    resolution: str = "dangling"  # or ambiguous (a vault reference matching several notes)


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
