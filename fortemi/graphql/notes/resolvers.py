"""Queries and mutations on notes, in the request's memory.

Each resolver: parse arguments, ask for permission, call the note service, map the result.
A note is governed by its skill's policy, else its project's, else its memory's. Reading
by id answers null/NOT_FOUND both when the note is absent and when the caller may not
read it (not-found before forbidden); lists are narrowed in SQL to what the caller may
read; naming a project or skill the caller may not read is FORBIDDEN with the reason.
Every resolver first enters the request's memory (NOT_FOUND if the caller may not read it).
"""

from __future__ import annotations

from dataclasses import replace

import strawberry

from fortemi.auth.decision import Action, Resource
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
from fortemi.graphql.vocabulary.filters import concept_sets
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.events import Event
from fortemi.platform.ids import from_global_id, parse_note_id
from fortemi.platform.notes import UNSET, NoteFilter, UpsertOutcome, note_event
from fortemi.platform.notes import Note as NoteModel

__all__ = ["NoteMutation", "NoteQuery"]


async def _readable_or_none(info: Info, note_id: str) -> NoteModel | None:
    try:
        _, note = await info.context.readable_note(parse_note_id(note_id))
    except NotFound:
        return None
    return note


async def _refuse_hidden_keys(
    info: Info, memory: str, source: str, current: dict[str, tuple[str | None, str | None]]
) -> None:
    """CONFLICT if an external id is taken by a note the caller may not read.

    Such a note does not exist for the caller, yet the key is taken, so it can be neither
    created nor updated. The answer names the key the caller sent and nothing of the
    note (its project or skill, its id); each refusal is recorded as a read deny.
    """
    hidden = set()
    for owner in set(current.values()):
        if not await info.context.may(Action.READ, Resource.of_note(memory, *owner)):
            hidden.add(owner)
    taken = sorted(external_id for external_id, owner in current.items() if owner in hidden)
    if taken:
        shown = ", ".join(repr(external_id) for external_id in taken[:5])
        raise Conflict(
            f"External id(s) {shown} of source {source!r} belong to notes you may not read; "
            "use other external ids, or ask for read access",
            reason="external_id_taken",
            external_ids=taken,
        )


def _owner(memory: str, note: NoteModel) -> Resource:
    return Resource.of_note(memory, note.project, note.skill)


def _changed(kind: str, memory: str, note: NoteModel, actor: str) -> Event:
    return note_event(kind, memory, note, actor)


def _owned_by(note: NoteModel) -> tuple[str | None, str | None]:
    """The owner the change was authorized for: the service re-checks it under the lock."""
    return note.project, note.skill


@strawberry.type
class NoteQuery:
    @strawberry.field(description="A note by id (global or UUID), deleted or not; null if absent")
    async def note(self, info: Info, id: strawberry.ID) -> Note | None:
        found = await _readable_or_none(info, id)
        return Note.from_model(found) if found else None

    @strawberry.field(description="Notes you may read, newest first, as a Relay connection")
    async def notes(
        self,
        info: Info,
        first: int | None = None,
        after: str | None = None,
        filter: NoteFilterInput | None = None,
    ) -> NoteConnection:
        context = info.context
        memory, visible = await context.scoped_memory()
        note_filter = filter.to_model() if filter else NoteFilter()
        # Naming a project or skill is asking for it: an unreadable one is FORBIDDEN.
        if note_filter.skill is not None:
            await context.authorize(Action.READ, Resource.of_note(memory, None, note_filter.skill))
        if note_filter.project is not None:
            await context.authorize(
                Action.READ, Resource.of_note(memory, note_filter.project, None)
            )
        sets = await concept_sets(info, memory, filter.concepts if filter else None)
        scoped = replace(
            note_filter,
            visibility=visible,
            concepts_all=sets.all,
            concepts_any=sets.any,
            concepts_none=sets.none,
        )
        service = context.services.notes
        page = await service.list(memory, first=first, after=after, filter=scoped)

        async def count() -> int:
            return await service.count(memory, scoped)

        return NoteConnection.from_page(page, count)

    @strawberry.field(description="Every version of a note, oldest first")
    async def note_versions(self, info: Info, id: strawberry.ID) -> list[NoteVersion]:
        memory, note = await info.context.readable_note(parse_note_id(id))
        versions = await info.context.services.notes.versions(memory, note.id)
        return [NoteVersion.from_model(v) for v in versions]

    @strawberry.field(description="One version of a note, or null")
    async def note_version(self, info: Info, id: strawberry.ID, version: int) -> NoteVersion | None:
        found = await _readable_or_none(info, id)
        if found is None:
            return None
        memory = await info.context.memory()
        recorded = await info.context.services.notes.version(memory, found.id, version)
        return NoteVersion.from_model(recorded) if recorded else None

    @strawberry.field(description="Unified diff of two versions of a note")
    async def note_diff(
        self, info: Info, id: strawberry.ID, from_version: int, to_version: int
    ) -> NoteDiff:
        memory, note = await info.context.readable_note(parse_note_id(id))
        diff = await info.context.services.notes.diff(memory, note.id, from_version, to_version)
        return NoteDiff.from_model(diff)

    @strawberry.field(description="Any object by global id, in this memory only")
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        type_name, _ = from_global_id(id)
        if type_name != "Note":
            return None
        found = await _readable_or_none(info, id)
        return Note.from_model(found) if found else None


@strawberry.type
class NoteMutation:
    @strawberry.mutation
    async def create_note(self, info: Info, input: CreateNoteInput) -> Note:
        draft = input.to_model()
        memory = await info.context.memory()
        await info.context.authorize(
            Action.WRITE, Resource.of_note(memory, draft.project, draft.skill)
        )
        note = await info.context.services.notes.create(
            memory, draft, actor=info.context.caller.sub
        )
        await info.context.notify(_changed("created", memory, note, info.context.caller.sub))
        return Note.from_model(note)

    @strawberry.mutation(description="Update a note; content changes make a new version")
    async def update_note(self, info: Info, id: strawberry.ID, input: UpdateNoteInput) -> Note:
        patch = input.to_model()
        memory, current = await info.context.readable_note(parse_note_id(id))
        await info.context.authorize(Action.WRITE, _owner(memory, current))
        if patch.project is not UNSET or patch.skill is not UNSET:
            # Moving a note: the caller must also be allowed to write where it lands.
            project = current.project if patch.project is UNSET else patch.project
            skill = current.skill if patch.skill is UNSET else patch.skill
            await info.context.authorize(Action.WRITE, Resource.of_note(memory, project, skill))
        note = await info.context.services.notes.update(
            memory, current.id, patch, actor=info.context.caller.sub, owner=_owned_by(current)
        )
        await info.context.notify(_changed("updated", memory, note, info.context.caller.sub))
        return Note.from_model(note)

    @strawberry.mutation(description="Soft-delete a note (restoreNote brings it back)")
    async def delete_note(self, info: Info, id: strawberry.ID) -> Note:
        memory, current = await info.context.readable_note(parse_note_id(id))
        await info.context.authorize(Action.DELETE, _owner(memory, current))
        note = await info.context.services.notes.delete(
            memory, current.id, actor=info.context.caller.sub, owner=_owned_by(current)
        )
        await info.context.notify(_changed("deleted", memory, note, info.context.caller.sub))
        return Note.from_model(note)

    @strawberry.mutation
    async def restore_note(self, info: Info, id: strawberry.ID) -> Note:
        memory, current = await info.context.readable_note(parse_note_id(id))
        await info.context.authorize(Action.WRITE, _owner(memory, current))
        note = await info.context.services.notes.restore(
            memory, current.id, actor=info.context.caller.sub, owner=_owned_by(current)
        )
        await info.context.notify(_changed("restored", memory, note, info.context.caller.sub))
        return Note.from_model(note)

    @strawberry.mutation(description="Permanently remove a soft-deleted note and its history")
    async def purge_note(self, info: Info, id: strawberry.ID) -> bool:
        memory, current = await info.context.readable_note(parse_note_id(id))
        await info.context.authorize(Action.DELETE, _owner(memory, current))
        await info.context.services.notes.purge(memory, current.id, owner=_owned_by(current))
        # Its attachments went with it; their blobs go unless another note uses them.
        await info.context.services.attachments.sweep(memory)
        await info.context.notify(_changed("purged", memory, current, info.context.caller.sub))
        return True

    @strawberry.mutation(description="Make a new version with the content of an old one")
    async def restore_note_version(self, info: Info, id: strawberry.ID, version: int) -> Note:
        memory, current = await info.context.readable_note(parse_note_id(id))
        await info.context.authorize(Action.WRITE, _owner(memory, current))
        note = await info.context.services.notes.restore_version(
            memory, current.id, version, actor=info.context.caller.sub, owner=_owned_by(current)
        )
        await info.context.notify(_changed("updated", memory, note, info.context.caller.sub))
        return Note.from_model(note)

    @strawberry.mutation(description="Create or update notes keyed by (source, externalId)")
    async def upsert_external_notes(
        self, info: Info, input: UpsertExternalNotesInput
    ) -> UpsertExternalNotesPayload:
        items = [item.to_model() for item in input.items]
        context = info.context
        memory = await context.memory()
        service = context.services.notes
        owners = await service.upsert_owners(memory, input.source, items, input.on_change)
        await _refuse_hidden_keys(info, memory, input.source, owners.current)
        # Every owner the batch touches needs write: where existing notes are now, and
        # where each item puts its note.
        governing = {Resource.of_note(memory, p, s) for p, s in owners.touched}
        for owner in sorted(governing, key=lambda r: (r.type, r.name or "")):
            await context.authorize(Action.WRITE, owner)
        results = await service.upsert_external(
            memory, input.source, items, input.on_change, actor=info.context.caller.sub
        )
        for result in results:
            if result.outcome in (UpsertOutcome.CREATED, UpsertOutcome.UPDATED):
                kind = "created" if result.outcome is UpsertOutcome.CREATED else "updated"
                await info.context.notify(
                    _changed(kind, memory, result.note, info.context.caller.sub)
                )
        return UpsertExternalNotesPayload.from_results(results)
