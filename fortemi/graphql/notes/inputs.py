"""GraphQL input types for notes, and their translation into platform value objects."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import strawberry
from strawberry.scalars import JSON

from fortemi.graphql.vocabulary.filters import ConceptFilter
from fortemi.platform import notes as model
from fortemi.platform.errors import BadUserInput

__all__ = [
    "ChangePolicy",
    "CreateNoteInput",
    "ExternalNoteInput",
    "NoteFilterInput",
    "UpdateNoteInput",
    "UpsertExternalNotesInput",
]

# Registers the platform enum as a GraphQL enum (strawberry.enum returns the same class).
ChangePolicy = strawberry.enum(
    model.ChangePolicy, description="What an upsert does with an item whose note changed"
)


def _given(value: Any, name: str, *, nullable: bool) -> Any:
    """Map strawberry's UNSET to the platform's; refuse null where it means nothing."""
    if value is strawberry.UNSET:
        return model.UNSET
    if value is None and not nullable:
        raise BadUserInput(
            f"`{name}` cannot be null; omit it to keep the current value", field=name
        )
    return value


def _content_fields(source: UpdateNoteInput | ExternalNoteInput) -> dict[str, Any]:
    """The fields an update and an upsert item share: omitted stays UNSET, and null is
    refused except where it means "clear" (collection, project, skill)."""
    tags = _given(source.tags, "tags", nullable=False)
    return {
        "title": _given(source.title, "title", nullable=False),
        "content": _given(source.content, "content", nullable=False),
        "format": _given(source.format, "format", nullable=False),
        "metadata": _given(source.metadata, "metadata", nullable=False),
        "tags": tags if tags is model.UNSET else tuple(tags),
        "collection": _given(source.collection, "collection", nullable=True),
        "project": _given(source.project, "project", nullable=True),
        "skill": _given(source.skill, "skill", nullable=True),
    }


@strawberry.input(name="NoteFilter")
class NoteFilterInput:
    tags: list[str] | None = strawberry.field(
        default=None, description="Notes with all of these tags"
    )
    any_tags: list[str] | None = strawberry.field(
        default=None, description="Notes with any of these tags"
    )
    project: str | None = None
    skill: str | None = None
    collection: str | None = None
    source: str | None = None
    starred: bool | None = None
    archived: bool | None = None
    deleted: bool = strawberry.field(default=False, description="true: only soft-deleted notes")
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    concepts: ConceptFilter | None = strawberry.field(
        default=None, description="Concept conditions (AND, OR, NOT), with narrower concepts"
    )

    def to_model(self) -> model.NoteFilter:
        return model.NoteFilter(
            tags_all=tuple(self.tags or ()),
            tags_any=tuple(self.any_tags or ()),
            project=self.project,
            skill=self.skill,
            collection=self.collection,
            source=self.source,
            starred=self.starred,
            archived=self.archived,
            deleted=self.deleted,
            created_after=self.created_after,
            created_before=self.created_before,
            updated_after=self.updated_after,
            updated_before=self.updated_before,
        )


@strawberry.input
class CreateNoteInput:
    title: str = ""
    content: str = ""
    format: str = "markdown"
    source: str | None = None
    metadata: JSON | None = None
    tags: list[str] | None = None
    collection: str | None = None
    project: str | None = None
    skill: str | None = None
    starred: bool = False
    archived: bool = False

    def to_model(self) -> model.NoteDraft:
        return model.NoteDraft(
            title=self.title,
            content=self.content,
            format=self.format,
            source=self.source,
            # Not checked here: the service refuses non-object metadata with a clear error.
            metadata=cast(dict[str, Any], self.metadata) if self.metadata is not None else {},
            tags=tuple(self.tags or ()),
            collection=self.collection,
            project=self.project,
            skill=self.skill,
            starred=self.starred,
            archived=self.archived,
        )


@strawberry.input(description="Fields left out keep their value; null clears nullable ones")
class UpdateNoteInput:
    title: str | None = strawberry.UNSET
    content: str | None = strawberry.UNSET
    format: str | None = strawberry.UNSET
    metadata: JSON | None = strawberry.UNSET
    tags: list[str] | None = strawberry.UNSET
    collection: str | None = strawberry.UNSET
    project: str | None = strawberry.UNSET
    skill: str | None = strawberry.UNSET
    starred: bool | None = strawberry.UNSET
    archived: bool | None = strawberry.UNSET
    expected_version: int | None = strawberry.field(
        default=None, description="Fail with CONFLICT unless the note is at this version"
    )

    def to_model(self) -> model.NotePatch:
        return model.NotePatch(
            **_content_fields(self),
            starred=_given(self.starred, "starred", nullable=False),
            archived=_given(self.archived, "archived", nullable=False),
            expected_version=self.expected_version,
        )


@strawberry.input(description="One note from an external system; omitted fields follow onChange")
class ExternalNoteInput:
    external_id: str
    title: str | None = strawberry.UNSET
    content: str | None = strawberry.UNSET
    format: str | None = strawberry.UNSET
    metadata: JSON | None = strawberry.UNSET
    tags: list[str] | None = strawberry.UNSET
    collection: str | None = strawberry.UNSET
    project: str | None = strawberry.UNSET
    skill: str | None = strawberry.UNSET

    def to_model(self) -> model.ExternalItem:
        return model.ExternalItem(external_id=self.external_id, **_content_fields(self))


@strawberry.input
class UpsertExternalNotesInput:
    source: str = strawberry.field(description="The external system's namespace, e.g. 'jira'")
    items: list[ExternalNoteInput]
    on_change: model.ChangePolicy = model.ChangePolicy.VERSION
