"""Value objects for notes: what is stored, what callers send, what pages look like."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from fortemi.platform.pages import Page

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
    "NoteVersion",
    "NoteVisibility",
    "Page",
    "SyncAdmission",
    "SyncOutcome",
    "SyncPlan",
    "SyncResult",
    "UpsertOutcome",
    "UpsertResult",
]


class _Unset:
    """Marks a patch field the caller did not send (distinct from an explicit null)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


@dataclass(frozen=True, slots=True)
class Note:
    id: UUID
    title: str
    content: str
    format: str
    source: str | None
    metadata: dict[str, Any]
    tags: tuple[str, ...]
    collection: str | None
    project: str | None
    skill: str | None
    starred: bool
    archived: bool
    version: int
    content_hash: str
    external_source: str | None
    external_id: str | None
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None


@dataclass(frozen=True, slots=True)
class NoteVersion:
    note_id: UUID
    version: int
    title: str
    content: str
    format: str
    metadata: dict[str, Any]
    tags: tuple[str, ...]
    content_hash: str
    created_at: datetime
    created_by: str | None


@dataclass(frozen=True, slots=True)
class NoteDraft:
    """A new note as a caller describes it (validated by the service)."""

    title: str = ""
    content: str = ""
    format: str = "markdown"
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    collection: str | None = None
    project: str | None = None
    skill: str | None = None
    starred: bool = False
    archived: bool = False


@dataclass(frozen=True, slots=True)
class NotePatch:
    """An update: fields left UNSET keep their value; ``expected_version`` guards races."""

    title: Any = UNSET
    content: Any = UNSET
    format: Any = UNSET
    metadata: Any = UNSET
    tags: Any = UNSET
    collection: Any = UNSET
    project: Any = UNSET
    skill: Any = UNSET
    starred: Any = UNSET
    archived: Any = UNSET
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class NameSet:
    """Names of projects or skills: only these (``only=True``) or all but these."""

    names: frozenset[str] = frozenset()
    only: bool = True

    def contains(self, name: str) -> bool:
        return (name in self.names) == self.only

    @property
    def everything(self) -> bool:
        """Whether every name is in it (all but none)."""
        return not self.only and not self.names


@dataclass(frozen=True, slots=True)
class NoteVisibility:
    """Which notes a caller may see, as the list query's WHERE clause applies it.

    A note with a skill is visible when its skill is in ``skills``, one with a project when
    its project is in ``projects``, and one with neither when ``memory_notes`` holds. The
    GraphQL layer builds this from the authorization engine's read scope, so lists never
    post-filter and a first page is a full page of readable notes.
    """

    memory_notes: bool
    projects: NameSet
    skills: NameSet

    @property
    def everything(self) -> bool:
        """Whether every note is visible: a filter on it would keep every note."""
        return self.memory_notes and self.projects.everything and self.skills.everything

    def allows(self, project: str | None, skill: str | None) -> bool:
        if skill is not None:
            return self.skills.contains(skill)
        if project is not None:
            return self.projects.contains(project)
        return self.memory_notes


@dataclass(frozen=True, slots=True)
class NoteFilter:
    tags_all: tuple[str, ...] = ()
    tags_any: tuple[str, ...] = ()
    tags_none: tuple[str, ...] = ()
    project: str | None = None
    projects: tuple[str, ...] | None = None  # any of these; () matches nothing
    skill: str | None = None
    collection: str | None = None
    source: str | None = None
    starred: bool | None = None
    archived: bool | None = None
    deleted: bool = False  # False: live notes only; True: soft-deleted notes only
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    visibility: NoteVisibility | None = None  # None: every note (no caller scope applies)
    # Concept filters (the graph's vocabulary), each concept already expanded by the caller
    # to itself and its narrower concepts: the note carries one concept of every set of
    # ``concepts_all``, one of ``concepts_any`` (None: no condition; empty: nothing), and
    # none of ``concepts_none``.
    concepts_all: tuple[frozenset[UUID], ...] = ()
    concepts_any: frozenset[UUID] | None = None
    concepts_none: frozenset[UUID] = frozenset()


@dataclass(frozen=True, slots=True)
class NoteDiff:
    note_id: UUID
    from_version: int
    to_version: int
    unified: str  # unified diff of every versioned field, "" when identical
    additions: int
    deletions: int


class ChangePolicy(StrEnum):
    VERSION = "VERSION"  # apply as a new version; fields the item omits keep their value
    REPLACE = "REPLACE"  # the item replaces the note wholesale (still recorded as a version)
    CONFLICT = "CONFLICT"  # leave the note alone and report the conflict


class UpsertOutcome(StrEnum):
    CREATED = "CREATED"
    UPDATED = "UPDATED"
    UNCHANGED = "UNCHANGED"
    CONFLICT = "CONFLICT"


@dataclass(frozen=True, slots=True)
class ExternalItem:
    external_id: str
    title: Any = UNSET
    content: Any = UNSET
    format: Any = UNSET
    metadata: Any = UNSET
    tags: Any = UNSET
    collection: Any = UNSET
    project: Any = UNSET
    skill: Any = UNSET


Owner = tuple[str | None, str | None]
"""A note's (project, skill): what governs access to it."""


@dataclass(frozen=True, slots=True)
class UpsertOwners:
    """What an upsert of external notes would touch, to authorize it before it runs.

    ``current``: the owner of each existing note the batch keys, by external id.
    ``touched``: every owner the batch touches: where existing notes are now, and where
    each item leaves its note.
    """

    current: dict[str, Owner]
    touched: frozenset[Owner]


@dataclass(frozen=True, slots=True)
class UpsertResult:
    external_id: str
    outcome: UpsertOutcome
    note: Note


class SyncOutcome(StrEnum):
    """What a sync (:meth:`~fortemi.platform.notes.NoteService.sync_external`) did to one
    note: an item's, or one of the source's notes it pruned."""

    CREATED = "CREATED"
    UPDATED = "UPDATED"
    RESTORED = "RESTORED"  # a soft-deleted note of the key, brought back (and updated)
    UNCHANGED = "UNCHANGED"
    DELETED = "DELETED"  # soft-deleted: its key was in the pruned range and not sent
    SKIPPED = "SKIPPED"  # not admitted by the caller's check; nothing written


@dataclass(frozen=True, slots=True)
class SyncPlan:
    """What a sync would do, decided under its locks, for the caller to admit.

    ``items``: per item, its outcome (CREATED, UPDATED, RESTORED or UNCHANGED), the note
    as it is (None for CREATED) and the owner it would have after. ``prune``: the live
    notes of the source in the pruned range that no item names (each would be DELETED).
    """

    items: list[tuple[str, SyncOutcome, Note | None, Owner]]
    prune: list[Note]


@dataclass(frozen=True, slots=True)
class SyncAdmission:
    """The external ids of a :class:`SyncPlan` the caller lets through; the rest are
    SKIPPED with the caller's reason (by external id)."""

    admitted: frozenset[str]
    reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SyncResult:
    external_id: str
    outcome: SyncOutcome
    note: Note | None  # None for a dry run's CREATED, and for a SKIPPED creation
    reason: str | None = None  # why SKIPPED
