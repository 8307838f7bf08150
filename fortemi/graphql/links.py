"""Links between notes over GraphQL: explicit links, and a note's links and backlinks.

Access: reading links follows note readability. The note asked about must be readable
(else NOT_FOUND, as for ``note``), and a link is listed only when the note at its other
end is readable too, decided in SQL before the list is cut (no existence leak). Creating
or deleting an explicit link needs ``write`` on the source note and ``read`` on the
target; both notes are looked up first, so an unreadable one is NOT_FOUND before any
FORBIDDEN (not-found before forbidden). Every decision is recorded in the audit log.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from fortemi.auth.decision import Action, Resource
from fortemi.graph import links as model
from fortemi.graphql.context import Info
from fortemi.graphql.notes.types import Note
from fortemi.platform.ids import parse_note_id
from fortemi.platform.notes import Note as NoteModel

__all__ = ["LinkMutation", "LinkQuery", "NoteLink", "linked_notes"]

# Registers the platform enum as a GraphQL enum (strawberry.enum returns the same class).
LinkKind = strawberry.enum(
    model.LinkKind,
    description="How a link was made: EXPLICIT (API), WIKI ([[...]] in the source's "
    "content), SEMANTIC (automatic linking)",
)


@strawberry.type(description="A link, seen from one of its notes: the note at the other end")
class NoteLink:
    note: Note
    kind: model.LinkKind
    score: float = strawberry.field(
        description="0..1 as stored: the caller's for EXPLICIT, 1.0 for WIKI, the linking "
        "score for SEMANTIC (graph() normalises semantic scores; this does not)"
    )
    rank: int | None = strawberry.field(description="SEMANTIC: its rank among the source's")
    pruned: bool = strawberry.field(description="SEMANTIC: soft-pruned by graph maintenance")
    computed_at: datetime | None

    @classmethod
    def from_model(cls, linked: model.LinkedNote) -> NoteLink:
        link = linked.link
        return cls(
            note=Note.from_model(linked.note),
            kind=link.kind,
            score=link.score,
            rank=link.rank,
            pruned=link.pruned,
            computed_at=link.computed_at,
        )


@strawberry.type(description="A [[wiki reference]] in a note's content that names no note")
class DanglingLink:
    target: str = strawberry.field(description="As written, without heading and label")
    heading: str | None
    label: str | None
    embed: bool = strawberry.field(description="Written as ![[...]]")
    block: str | None = strawberry.field(description="The ^block id of [[note#^block]]")
    ambiguous: bool = strawberry.field(
        description="A vault link that matched several notes, none of them in its own project"
    )


@strawberry.type(description="A note's links to and from notes you may read")
class NoteLinks:
    outgoing: list[NoteLink] = strawberry.field(description="Links from the note, strongest first")
    incoming: list[NoteLink] = strawberry.field(description="Links to the note (backlinks)")
    dangling: list[DanglingLink] = strawberry.field(
        description="Wiki references that resolve to no note, in the order written"
    )


@strawberry.type(description="An explicit link between two notes")
class ExplicitNoteLink:
    source: Note
    target: Note
    score: float
    created_at: datetime | None
    created_by: str | None
    created: bool = strawberry.field(
        description="False when the same link (same score) existed already"
    )


def linked_notes(found: list[model.LinkedNote]) -> list[NoteLink]:
    return [NoteLink.from_model(linked) for linked in found]


def _owner(note: NoteModel) -> tuple[str | None, str | None]:
    return note.project, note.skill


async def _ends(info: Info, source: str, target: str) -> tuple[str, NoteModel, NoteModel]:
    """The memory and both notes, each NOT_FOUND if absent or unreadable; then FORBIDDEN
    unless the caller may write the source."""
    context = info.context
    memory, from_note = await context.readable_note(parse_note_id(source))
    _, to_note = await context.readable_note(parse_note_id(target))
    await context.authorize(Action.WRITE, Resource.of_note(memory, *_owner(from_note)))
    return memory, from_note, to_note


async def _announce(info: Info, memory: str, source: NoteModel, target: NoteModel) -> None:
    context = info.context
    for event in model.link_change_events(
        memory,
        {(source.id, target.id)},
        {source.id: source, target.id: target},
        kind=model.LinkKind.EXPLICIT.value,
        actor=context.caller.sub,
    ):
        await context.notify(event)


@strawberry.type
class LinkQuery:
    @strawberry.field(
        description="A note's outgoing and incoming links (explicit, wiki, semantic) to live "
        "notes you may read, at most `first` (default 100) each, and its dangling wiki "
        "references"
    )
    async def note_links(
        self, info: Info, id: strawberry.ID, first: int | None = None
    ) -> NoteLinks:
        context = info.context
        memory, visible = await context.scoped_memory()
        _, note = await context.readable_note(parse_note_id(id))
        found = await context.services.links.links(memory, note.id, visibility=visible, first=first)
        return NoteLinks(
            outgoing=linked_notes(found.outgoing),
            incoming=linked_notes(found.incoming),
            dangling=[
                DanglingLink(
                    target=d.target,
                    heading=d.heading,
                    label=d.label,
                    embed=d.embed,
                    block=d.block,
                    ambiguous=d.resolution == "ambiguous",
                )
                for d in found.dangling
            ],
        )


@strawberry.type
class LinkMutation:
    @strawberry.mutation(
        description="Link one note to another (score 0..1, default 1.0). Repeating it "
        "returns the existing link; repeating it with another score is a CONFLICT"
    )
    async def create_note_link(
        self,
        info: Info,
        from_: Annotated[strawberry.ID, strawberry.argument(name="from")],
        to: strawberry.ID,
        score: float = 1.0,
    ) -> ExplicitNoteLink:
        memory, source, target = await _ends(info, from_, to)
        result = await info.context.services.links.create_explicit(
            memory, source.id, target.id, score, actor=info.context.caller.sub, owner=_owner(source)
        )
        if result.created:
            await _announce(info, memory, result.source, result.target)
        link = result.link
        return ExplicitNoteLink(
            source=Note.from_model(result.source),
            target=Note.from_model(result.target),
            score=link.score,
            created_at=link.computed_at,
            created_by=link.created_by,
            created=result.created,
        )

    @strawberry.mutation(
        description="Remove the explicit link between two notes; false when there was none"
    )
    async def delete_note_link(
        self,
        info: Info,
        from_: Annotated[strawberry.ID, strawberry.argument(name="from")],
        to: strawberry.ID,
    ) -> bool:
        memory, source, target = await _ends(info, from_, to)
        removed = await info.context.services.links.delete_explicit(
            memory, source.id, target.id, owner=_owner(source)
        )
        if removed is not None:
            await _announce(info, memory, source, target)
        return removed is not None
