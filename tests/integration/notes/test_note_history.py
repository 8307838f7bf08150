"""Versions: reading them, restoring one, diffing two."""

from __future__ import annotations

from uuid import uuid4

import pytest

from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService


async def test_versions_are_listed_in_ascending_order(notes: NoteService, memory: str) -> None:
    note = await notes.create(memory, NoteDraft(content="1"), actor=None)
    for content in ("2", "3", "4"):
        await notes.update(memory, note.id, NotePatch(content=content), actor=None)
    versions = await notes.versions(memory, note.id)
    assert [(v.version, v.content) for v in versions] == [(1, "1"), (2, "2"), (3, "3"), (4, "4")]


@pytest.mark.parametrize("number", [0, -1, 5, 2**31, 2**40])
async def test_a_version_that_does_not_exist_is_none(
    notes: NoteService, memory: str, number: int
) -> None:
    note = await notes.create(memory, NoteDraft(), actor=None)
    assert await notes.version(memory, note.id, number) is None


async def test_restore_version_creates_a_new_version_with_the_old_fields(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(
        memory,
        NoteDraft(title="t1", content="c1", metadata={"a": 1}, tags=("x",), format="markdown"),
        actor=None,
    )
    await notes.update(
        memory,
        note.id,
        NotePatch(title="t2", content="c2", metadata={}, tags=(), format="text", starred=True),
        actor=None,
    )

    restored = await notes.restore_version(memory, note.id, 1, actor="carol")

    assert restored.version == 3
    assert (restored.title, restored.content, restored.metadata, restored.tags) == (
        "t1",
        "c1",
        {"a": 1},
        ("x",),
    )
    assert restored.format == "markdown"
    assert restored.content_hash == note.content_hash
    assert restored.starred  # an attribute, not history: it keeps its current value
    v3 = await notes.version(memory, note.id, 3)
    assert v3 is not None
    assert (v3.content, v3.created_by) == ("c1", "carol")


async def test_restoring_the_version_the_note_already_has_writes_nothing(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="c1"), actor=None)
    updated = await notes.update(memory, note.id, NotePatch(content="c2"), actor=None)
    assert await notes.restore_version(memory, note.id, 2, actor=None) == updated
    assert len(await notes.versions(memory, note.id)) == 2


@pytest.mark.parametrize("number", [0, 3, 2**40])
async def test_restore_version_of_a_missing_version_is_not_found(
    notes: NoteService, memory: str, number: int
) -> None:
    note = await notes.create(memory, NoteDraft(content="c1"), actor=None)
    await notes.update(memory, note.id, NotePatch(content="c2"), actor=None)
    with pytest.raises(NotFound, match=f"no version {number}"):
        await notes.restore_version(memory, note.id, number, actor=None)
    assert len(await notes.versions(memory, note.id)) == 2


async def test_restore_version_of_a_deleted_note_is_a_conflict(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="c1"), actor=None)
    await notes.update(memory, note.id, NotePatch(content="c2"), actor=None)
    await notes.delete(memory, note.id, actor=None)
    with pytest.raises(Conflict):
        await notes.restore_version(memory, note.id, 1, actor=None)


async def test_diff_shows_title_and_content_changes_as_a_unified_diff(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(
        memory, NoteDraft(title="Plan", content="one\ntwo\nthree\n"), actor=None
    )
    await notes.update(
        memory, note.id, NotePatch(title="Plan B", content="one\n2\nthree\nfour\n"), actor=None
    )

    diff = await notes.diff(memory, note.id, 1, 2)

    assert diff.unified == (
        "--- v1/title\n"
        "+++ v2/title\n"
        "@@ -1 +1 @@\n"
        "-Plan\n"
        "\\ No newline at end of file\n"
        "+Plan B\n"
        "\\ No newline at end of file\n"
        "--- v1/content\n"
        "+++ v2/content\n"
        "@@ -1,3 +1,4 @@\n"
        " one\n"
        "-two\n"
        "+2\n"
        " three\n"
        "+four\n"
    )
    assert (diff.additions, diff.deletions) == (3, 2)
    assert (diff.note_id, diff.from_version, diff.to_version) == (note.id, 1, 2)


async def test_diff_backwards_swaps_additions_and_deletions(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="a\n"), actor=None)
    await notes.update(memory, note.id, NotePatch(content="a\nb\nc\n"), actor=None)
    diff = await notes.diff(memory, note.id, 2, 1)
    assert (diff.additions, diff.deletions) == (0, 2)
    assert diff.unified.startswith("--- v2/content\n+++ v1/content\n")


async def test_diff_of_identical_versions_is_empty(notes: NoteService, memory: str) -> None:
    note = await notes.create(memory, NoteDraft(title="t", content="c"), actor=None)
    diff = await notes.diff(memory, note.id, 1, 1)
    assert (diff.unified, diff.additions, diff.deletions) == ("", 0, 0)


async def test_a_version_made_by_tags_and_metadata_alone_has_a_diff_that_shows_them(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(title="t", content="c"), actor=None)
    patch = NotePatch(tags=("x",), metadata={"status": "done"})
    await notes.update(memory, note.id, patch, actor=None)
    diff = await notes.diff(memory, note.id, 1, 2)
    assert "--- v1/tags\n+++ v2/tags\n" in diff.unified
    assert "+x\n" in diff.unified
    assert '+  "status": "done"\n' in diff.unified
    assert "v1/content" not in diff.unified


@pytest.mark.parametrize("versions", [(1, 2), (2, 1), (0, 1)])
async def test_diff_with_a_missing_version_is_not_found(
    notes: NoteService, memory: str, versions: tuple[int, int]
) -> None:
    note = await notes.create(memory, NoteDraft(content="c"), actor=None)
    with pytest.raises(NotFound):
        await notes.diff(memory, note.id, *versions)


async def test_diff_of_an_unknown_note_is_not_found(notes: NoteService, memory: str) -> None:
    with pytest.raises(NotFound):
        await notes.diff(memory, uuid4(), 1, 1)
