"""GraphQL output types for notes."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from strawberry.scalars import JSON

from fortemi.graphql.context import Info
from fortemi.graphql.pagination import Connection, Edge, PageInfo
from fortemi.graphql.vocabulary.loaders import note_concepts_loader
from fortemi.graphql.vocabulary.types import NoteConcept
from fortemi.platform import notes as model
from fortemi.platform.ids import parse_note_id, to_global_id

__all__ = [
    "Node",
    "Note",
    "NoteConnection",
    "NoteDiff",
    "NoteEdge",
    "NoteVersion",
    "UpsertExternalNoteResult",
    "UpsertExternalNotesPayload",
    "UpsertOutcome",
    "vault_path",
]

if TYPE_CHECKING:
    from fortemi.graphql.attachments import Attachment
    from fortemi.graphql.documents import DocumentDetection
    from fortemi.graphql.links import NoteLink


def vault_path(note: model.Note) -> str | None:
    """The note's path in its vault; None for a note that came from no vault."""
    if not (note.external_source or "").startswith("vault:"):
        return None
    path = note.metadata.get("path")
    return path if isinstance(path, str) else None


@strawberry.interface(description="An object with a global id, resolvable through node(id)")
class Node:
    id: strawberry.ID


@strawberry.type(description="A note: the unit of knowledge in a memory")
class Note(Node):
    title: str
    content: str
    format: str
    source: str | None
    metadata: JSON
    tags: list[str]
    collection: str | None
    project: str | None
    skill: str | None = strawberry.field(description="The shared skill (SKILL-*) it belongs to")
    starred: bool
    archived: bool
    deleted: bool
    deleted_at: datetime | None
    version: int = strawberry.field(description="Current version; 1 is the original")
    content_hash: str = strawberry.field(description="blake3 of the current content")
    external_source: str | None
    external_id: str | None
    path: str | None = strawberry.field(
        description="Its path in its vault (vault notes: metadata.path), else null"
    )
    created_at: datetime
    updated_at: datetime
    # The memory the note was read from, when it is not the request's (a search over
    # several memories); its fields that read more (backlinks) read there.
    memory_name: strawberry.Private[str | None] = None

    @strawberry.field(
        description="Live notes you may read that link to this one (explicit, wiki and "
        "semantic links), strongest link first, at most `first` (default 100)"
    )
    async def backlinks(
        self, info: Info, first: int | None = None
    ) -> list[Annotated[NoteLink, strawberry.lazy("fortemi.graphql.links")]]:
        # Imported here: the links module builds on this one's Note.
        from fortemi.graphql.links import linked_notes

        context = info.context
        if self.memory_name is None:
            memory, visible = await context.scoped_memory()
        else:
            memory, visible = self.memory_name, await context.visibility(self.memory_name)
        found = await context.services.links.backlinks(
            memory, parse_note_id(self.id), visibility=visible, first=first
        )
        return linked_notes(found)

    @strawberry.field(
        description="Concepts attached beside the note (never part of its versions), "
        "primary first, then by relevance"
    )
    async def concepts(self, info: Info) -> list[NoteConcept]:
        note_id = parse_note_id(self.id)
        memory = self.memory_name or await info.context.memory()
        found = await note_concepts_loader(info, memory).load(note_id)
        return [NoteConcept.from_model(c, memory) for c in found]

    @strawberry.field(description="Files kept with the note, oldest first")
    async def attachments(
        self, info: Info
    ) -> list[Annotated[Attachment, strawberry.lazy("fortemi.graphql.attachments")]]:
        # Imported here: the attachments module's types are built beside their resolvers.
        from fortemi.graphql.attachments import note_attachments

        memory = self.memory_name or await info.context.memory()
        return await note_attachments(info, memory, parse_note_id(self.id))

    @strawberry.field(
        description="What the note is as a document: from its vault path (filename "
        "patterns, extension), else its format (method FORMAT), else its content"
    )
    async def document_type(
        self, info: Info
    ) -> Annotated[DocumentDetection, strawberry.lazy("fortemi.graphql.documents")]:
        # Imported here: the documents module's types are built beside their resolvers.
        from fortemi.graphql.documents import note_detection

        memory = self.memory_name or await info.context.memory()
        return await note_detection(
            info, memory, path=self.path, format=self.format, content=self.content
        )

    @classmethod
    def from_model(cls, note: model.Note, *, memory: str | None = None) -> Note:
        return cls(
            memory_name=memory,
            id=strawberry.ID(to_global_id("Note", note.id)),
            title=note.title,
            content=note.content,
            format=note.format,
            source=note.source,
            metadata=JSON(note.metadata),
            tags=list(note.tags),
            collection=note.collection,
            project=note.project,
            skill=note.skill,
            starred=note.starred,
            archived=note.archived,
            deleted=note.deleted,
            deleted_at=note.deleted_at,
            version=note.version,
            content_hash=note.content_hash,
            external_source=note.external_source,
            external_id=note.external_id,
            path=vault_path(note),
            created_at=note.created_at,
            updated_at=note.updated_at,
        )


@strawberry.type(description="One recorded state of a note")
class NoteVersion:
    version: int
    title: str
    content: str
    format: str
    metadata: JSON
    tags: list[str]
    content_hash: str
    created_at: datetime
    created_by: str | None

    @classmethod
    def from_model(cls, version: model.NoteVersion) -> NoteVersion:
        return cls(
            version=version.version,
            title=version.title,
            content=version.content,
            format=version.format,
            metadata=JSON(version.metadata),
            tags=list(version.tags),
            content_hash=version.content_hash,
            created_at=version.created_at,
            created_by=version.created_by,
        )


@strawberry.type(
    description="A unified diff between two versions of a note: one section per changed "
    "field (title, content, format, tags one per line, metadata as sorted JSON)"
)
class NoteDiff:
    from_version: int
    to_version: int
    unified: str
    additions: int
    deletions: int

    @classmethod
    def from_model(cls, diff: model.NoteDiff) -> NoteDiff:
        return cls(
            from_version=diff.from_version,
            to_version=diff.to_version,
            unified=diff.unified,
            additions=diff.additions,
            deletions=diff.deletions,
        )


@strawberry.type
class NoteEdge(Edge[Note]):
    pass


@strawberry.type
class NoteConnection(Connection[NoteEdge]):
    _count: strawberry.Private[Any]

    @strawberry.field(description="Notes matching the filter, over all pages")
    async def total_count(self) -> int:
        count: int = await self._count()
        return count

    @classmethod
    def from_page(cls, page: model.Page[model.Note], count: Any) -> NoteConnection:
        return cls(
            edges=[
                NoteEdge(cursor=cursor, node=Note.from_model(note)) for cursor, note in page.items
            ],
            page_info=PageInfo.of(page),
            _count=count,
        )


# Registers the platform enum as a GraphQL enum (strawberry.enum returns the same class).
UpsertOutcome = strawberry.enum(
    model.UpsertOutcome, description="What happened to one item of an upsert"
)


@strawberry.type
class UpsertExternalNoteResult:
    external_id: str
    outcome: model.UpsertOutcome
    note: Note


@strawberry.type
class UpsertExternalNotesPayload:
    results: list[UpsertExternalNoteResult]
    created: int
    updated: int
    unchanged: int
    conflicts: int

    @classmethod
    def from_results(cls, results: list[model.UpsertResult]) -> UpsertExternalNotesPayload:
        def tally(outcome: model.UpsertOutcome) -> int:
            return sum(1 for r in results if r.outcome is outcome)

        return cls(
            results=[
                UpsertExternalNoteResult(
                    external_id=r.external_id,
                    outcome=r.outcome,
                    note=Note.from_model(r.note),
                )
                for r in results
            ],
            created=tally(model.UpsertOutcome.CREATED),
            updated=tally(model.UpsertOutcome.UPDATED),
            unchanged=tally(model.UpsertOutcome.UNCHANGED),
            conflicts=tally(model.UpsertOutcome.CONFLICT),
        )
