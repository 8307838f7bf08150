"""Queries and mutations on notes, in the request's memory.

Each resolver: parse arguments, ask for permission (one call), call the note service,
map the result. ``note``/``node`` answer null for an id that is not in this memory, so
ids from other memories reveal nothing.
"""

from __future__ import annotations

import strawberry

from fortemi.auth.access import Action
from fortemi.graphql.context import Info
from fortemi.graphql.notes.inputs import (
    CreateNoteInput,
    NoteFilterInput,
    UpdateNoteInput,
    UpsertExternalNotesInput,
)
from fortemi.graphql.notes.types import (
    Node,
    Note,
    NoteConnection,
    NoteDiff,
    NoteVersion,
    UpsertExternalNotesPayload,
)
from fortemi.graphql.relay import from_global_id, parse_note_id
from fortemi.platform.errors import NotFound
from fortemi.platform.notes import NoteFilter

__all__ = ["NoteMutation", "NoteQuery"]


def _missing(note_id: str) -> NotFound:
    return NotFound(f"No note {note_id!r} in this memory", id=note_id)


@strawberry.type
class NoteQuery:
    @strawberry.field(description="A note by id (global or UUID), deleted or not; null if absent")
    async def note(self, info: Info, id: strawberry.ID) -> Note | None:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.READ)
        found = await info.context.runtime.notes.get(memory, note_id)
        return Note.from_model(found) if found else None

    @strawberry.field(description="Notes, newest first, as a Relay connection")
    async def notes(
        self,
        info: Info,
        first: int | None = None,
        after: str | None = None,
        filter: NoteFilterInput | None = None,
    ) -> NoteConnection:
        memory = await info.context.authorize_in_memory(Action.READ)
        note_filter = filter.to_model() if filter else NoteFilter()
        service = info.context.runtime.notes
        page = await service.list(memory, first=first, after=after, filter=note_filter)

        async def count() -> int:
            return await service.count(memory, note_filter)

        return NoteConnection.from_page(page, count)

    @strawberry.field(description="Every version of a note, oldest first")
    async def note_versions(self, info: Info, id: strawberry.ID) -> list[NoteVersion]:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.READ)
        if await info.context.runtime.notes.get(memory, note_id) is None:
            raise _missing(id)
        versions = await info.context.runtime.notes.versions(memory, note_id)
        return [NoteVersion.from_model(v) for v in versions]

    @strawberry.field(description="One version of a note, or null")
    async def note_version(self, info: Info, id: strawberry.ID, version: int) -> NoteVersion | None:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.READ)
        found = await info.context.runtime.notes.version(memory, note_id, version)
        return NoteVersion.from_model(found) if found else None

    @strawberry.field(description="Unified diff of two versions of a note")
    async def note_diff(
        self, info: Info, id: strawberry.ID, from_version: int, to_version: int
    ) -> NoteDiff:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.READ)
        diff = await info.context.runtime.notes.diff(memory, note_id, from_version, to_version)
        return NoteDiff.from_model(diff)

    @strawberry.field(description="Any object by global id, in this memory only")
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        type_name, _ = from_global_id(id)
        if type_name != "Note":
            return None
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.READ)
        found = await info.context.runtime.notes.get(memory, note_id)
        return Note.from_model(found) if found else None


@strawberry.type
class NoteMutation:
    @strawberry.mutation
    async def create_note(self, info: Info, input: CreateNoteInput) -> Note:
        memory = await info.context.authorize_in_memory(Action.WRITE)
        note = await info.context.runtime.notes.create(
            memory, input.to_model(), actor=info.context.caller.sub
        )
        return Note.from_model(note)

    @strawberry.mutation(description="Update a note; content changes make a new version")
    async def update_note(self, info: Info, id: strawberry.ID, input: UpdateNoteInput) -> Note:
        note_id = parse_note_id(id)
        patch = input.to_model()
        memory = await info.context.authorize_in_memory(Action.WRITE)
        note = await info.context.runtime.notes.update(
            memory, note_id, patch, actor=info.context.caller.sub
        )
        return Note.from_model(note)

    @strawberry.mutation(description="Soft-delete a note (restoreNote brings it back)")
    async def delete_note(self, info: Info, id: strawberry.ID) -> Note:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.DELETE)
        note = await info.context.runtime.notes.delete(
            memory, note_id, actor=info.context.caller.sub
        )
        return Note.from_model(note)

    @strawberry.mutation
    async def restore_note(self, info: Info, id: strawberry.ID) -> Note:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.WRITE)
        note = await info.context.runtime.notes.restore(
            memory, note_id, actor=info.context.caller.sub
        )
        return Note.from_model(note)

    @strawberry.mutation(description="Permanently remove a soft-deleted note and its history")
    async def purge_note(self, info: Info, id: strawberry.ID) -> bool:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.DELETE)
        await info.context.runtime.notes.purge(memory, note_id)
        return True

    @strawberry.mutation(description="Make a new version with the content of an old one")
    async def restore_note_version(self, info: Info, id: strawberry.ID, version: int) -> Note:
        note_id = parse_note_id(id)
        memory = await info.context.authorize_in_memory(Action.WRITE)
        note = await info.context.runtime.notes.restore_version(
            memory, note_id, version, actor=info.context.caller.sub
        )
        return Note.from_model(note)

    @strawberry.mutation(description="Create or update notes keyed by (source, externalId)")
    async def upsert_external_notes(
        self, info: Info, input: UpsertExternalNotesInput
    ) -> UpsertExternalNotesPayload:
        items = [item.to_model() for item in input.items]
        memory = await info.context.authorize_in_memory(Action.WRITE)
        results = await info.context.runtime.notes.upsert_external(
            memory, input.source, items, input.on_change, actor=info.context.caller.sub
        )
        return UpsertExternalNotesPayload.from_results(results)
