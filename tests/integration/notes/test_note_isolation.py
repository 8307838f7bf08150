"""Memories are tenants: a note in one memory does not exist in another."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from fortemi.platform.errors import NotFound
from fortemi.platform.memories import MemoryService
from fortemi.platform.notes import (
    ChangePolicy,
    ExternalItem,
    NoteDraft,
    NoteFilter,
    NotePatch,
    NoteService,
    UpsertOutcome,
)


@pytest.fixture
async def other_memory(memory: str, memory_service: MemoryService) -> AsyncIterator[str]:
    name = f"{memory}_b"
    await memory_service.create(name, created_by="test")
    try:
        yield name
    finally:
        await memory_service.delete(name, confirm=name)


async def test_a_note_in_one_memory_is_invisible_from_another(
    notes: NoteService, memory: str, other_memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(title="secret", tags=("t",)), actor=None)

    assert await notes.get(other_memory, note.id) is None
    page = await notes.list(other_memory, first=None, after=None, filter=NoteFilter())
    assert (page.items, page.has_next_page) == ([], False)
    assert await notes.count(other_memory, NoteFilter()) == 0
    assert await notes.count(other_memory, NoteFilter(tags_all=("t",))) == 0
    assert await notes.versions(other_memory, note.id) == []
    assert await notes.version(other_memory, note.id, 1) is None
    # ...while the owning memory still sees it.
    assert await notes.get(memory, note.id) == note
    assert await notes.count(memory, NoteFilter()) == 1


async def test_changes_addressed_to_another_memory_do_not_reach_the_note(
    notes: NoteService, memory: str, other_memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="mine"), actor=None)
    with pytest.raises(NotFound):
        await notes.update(other_memory, note.id, NotePatch(content="theirs"), actor=None)
    with pytest.raises(NotFound):
        await notes.delete(other_memory, note.id, actor=None)
    with pytest.raises(NotFound):
        await notes.restore_version(other_memory, note.id, 1, actor=None)
    with pytest.raises(NotFound):
        await notes.diff(other_memory, note.id, 1, 1)
    assert await notes.get(memory, note.id) == note


async def test_the_same_external_id_in_two_memories_is_two_notes(
    notes: NoteService, memory: str, other_memory: str
) -> None:
    item = ExternalItem("a.md", content="x")
    [a] = await notes.upsert_external(memory, "vault", [item], ChangePolicy.VERSION, actor=None)
    [b] = await notes.upsert_external(
        other_memory, "vault", [item], ChangePolicy.VERSION, actor=None
    )
    assert (a.outcome, b.outcome) == (UpsertOutcome.CREATED, UpsertOutcome.CREATED)
    assert await notes.get(other_memory, a.note.id) is None


async def test_an_unknown_memory_is_not_found(notes: NoteService) -> None:
    with pytest.raises(NotFound):
        await notes.count("no_such_memory_here", NoteFilter())
