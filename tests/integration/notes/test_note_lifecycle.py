"""Soft delete, restore and purge."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from uuid import uuid4

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.notes import NoteDraft, NoteFilter, NotePatch, NoteService
from tests.integration.notes.helpers import count_rows


async def test_soft_delete_hides_the_note_from_lists_but_get_returns_it_marked_deleted(
    notes: NoteService, memory: str
) -> None:
    kept = await notes.create(memory, NoteDraft(title="kept"), actor=None)
    gone = await notes.create(memory, NoteDraft(title="gone"), actor=None)

    deleted = await notes.delete(memory, gone.id, actor="alice")

    assert deleted.deleted
    assert deleted.deleted_at is not None
    assert deleted.version == gone.version
    assert await notes.get(memory, gone.id) == deleted
    live = await notes.list(memory, first=None, after=None, filter=NoteFilter())
    assert [n.id for _, n in live.items] == [kept.id]
    assert await notes.count(memory, NoteFilter()) == 1
    trash = await notes.list(memory, first=None, after=None, filter=NoteFilter(deleted=True))
    assert [n.id for _, n in trash.items] == [gone.id]
    assert await notes.count(memory, NoteFilter(deleted=True)) == 1


async def test_deleting_a_deleted_note_returns_it_unchanged(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(), actor=None)
    first = await notes.delete(memory, note.id, actor=None)
    assert await notes.delete(memory, note.id, actor=None) == first


async def test_restore_brings_a_deleted_note_back_into_lists(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="c"), actor=None)
    await notes.delete(memory, note.id, actor=None)

    restored = await notes.restore(memory, note.id, actor=None)

    assert not restored.deleted
    assert (restored.content, restored.version) == ("c", 1)
    page = await notes.list(memory, first=None, after=None, filter=NoteFilter())
    assert [n.id for _, n in page.items] == [note.id]


async def test_restoring_a_live_note_returns_it_unchanged(notes: NoteService, memory: str) -> None:
    note = await notes.create(memory, NoteDraft(), actor=None)
    assert await notes.restore(memory, note.id, actor=None) == note


@pytest.mark.parametrize("operation", ["delete", "restore", "purge"])
async def test_lifecycle_operations_on_an_unknown_note_are_not_found(
    notes: NoteService, memory: str, operation: str
) -> None:
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "delete": lambda: notes.delete(memory, uuid4(), actor=None),
        "restore": lambda: notes.restore(memory, uuid4(), actor=None),
        "purge": lambda: notes.purge(memory, uuid4()),
    }
    with pytest.raises(NotFound):
        await calls[operation]()


async def test_purge_of_a_live_note_is_a_conflict_and_removes_nothing(
    notes: NoteService, memory: str, db: Database
) -> None:
    note = await notes.create(memory, NoteDraft(content="c"), actor=None)
    with pytest.raises(Conflict, match="delete it first"):
        await notes.purge(memory, note.id)
    assert await notes.get(memory, note.id) == note


async def test_purge_after_delete_removes_the_note_its_original_and_its_versions(
    notes: NoteService, memory: str, db: Database
) -> None:
    other = await notes.create(memory, NoteDraft(content="other"), actor=None)
    note = await notes.create(memory, NoteDraft(content="v1"), actor=None)
    await notes.update(memory, note.id, NotePatch(content="v2"), actor=None)
    await notes.delete(memory, note.id, actor=None)

    await notes.purge(memory, note.id)

    assert await notes.get(memory, note.id) is None
    assert await notes.versions(memory, note.id) == []
    counts = [await count_rows(db, memory, t) for t in ("note", "note_original", "note_version")]
    assert counts == [1, 1, 1]  # only the other note's rows remain
    assert await notes.get(memory, other.id) == other
    with pytest.raises(NotFound):
        await notes.purge(memory, note.id)
