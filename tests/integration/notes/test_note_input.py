"""Bad input is refused before any SQL: clear errors, nothing written, nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import BadUserInput
from fortemi.platform.notes import NoteDraft, NotePatch, NoteService
from tests.integration.notes.helpers import MAX_NOTE_BYTES, count_rows


async def _nothing_written(db: Database, memory: str) -> bool:
    tables = ("note", "note_original", "note_version")
    return [await count_rows(db, memory, t) for t in tables] == [0, 0, 0]


async def test_oversized_content_is_refused_naming_size_limit_and_setting(
    notes: NoteService, memory: str, db: Database
) -> None:
    # Within the limit in characters, over it in UTF-8 bytes: the limit is on bytes.
    content = "é" * (MAX_NOTE_BYTES // 2 + 1)
    with pytest.raises(BadUserInput) as caught:
        await notes.create(memory, NoteDraft(content=content), actor=None)
    error = caught.value
    assert error.extensions["field"] == "content"
    assert error.extensions["limit"] == MAX_NOTE_BYTES
    assert str(MAX_NOTE_BYTES + 2) in error.message
    assert str(MAX_NOTE_BYTES) in error.message
    assert "FORTEMI_MAX_NOTE_BYTES" in error.message
    assert await _nothing_written(db, memory)


async def test_content_of_exactly_the_limit_is_accepted(notes: NoteService, memory: str) -> None:
    note = await notes.create(memory, NoteDraft(content="x" * MAX_NOTE_BYTES), actor=None)
    assert len(note.content) == MAX_NOTE_BYTES


_BAD_TEXT = [
    pytest.param({"content": "a\x00b"}, "content", id="nul-content"),
    pytest.param({"content": "a\ud800b"}, "content", id="surrogate-content"),
    pytest.param({"title": "\x00"}, "title", id="nul-title"),
    pytest.param({"title": "\udfff"}, "title", id="surrogate-title"),
    pytest.param({"tags": ("ok", "b\x00d")}, "tags", id="nul-tag"),
    pytest.param({"tags": ("\ud83d",)}, "tags", id="surrogate-tag"),
    pytest.param({"metadata": {"k": "v\x00"}}, "metadata", id="nul-metadata-value"),
    pytest.param({"metadata": {"k": ["\ud800"]}}, "metadata", id="surrogate-metadata-list"),
    pytest.param({"metadata": {"\x00": 1}}, "metadata", id="nul-metadata-key"),
    pytest.param({"project": "p\x00"}, "project", id="nul-project"),
    pytest.param({"collection": "\ud800"}, "collection", id="surrogate-collection"),
    pytest.param({"format": "mark\x00down"}, "format", id="nul-format"),
]


@pytest.mark.parametrize(("fields", "field"), _BAD_TEXT)
async def test_create_with_nul_or_lone_surrogate_is_refused_naming_the_field(
    notes: NoteService, memory: str, db: Database, fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(BadUserInput) as caught:
        await notes.create(memory, NoteDraft(**fields), actor=None)
    assert caught.value.extensions["field"] == field
    assert await _nothing_written(db, memory)


@pytest.mark.parametrize(("fields", "field"), _BAD_TEXT)
async def test_update_with_nul_or_lone_surrogate_is_refused_and_changes_nothing(
    notes: NoteService, memory: str, fields: dict[str, Any], field: str
) -> None:
    note = await notes.create(memory, NoteDraft(title="t", content="c"), actor=None)
    with pytest.raises(BadUserInput) as caught:
        await notes.update(memory, note.id, NotePatch(**fields), actor=None)
    assert caught.value.extensions["field"] == field
    assert await notes.get(memory, note.id) == note
    assert len(await notes.versions(memory, note.id)) == 1


async def test_update_with_oversized_content_changes_nothing(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="c"), actor=None)
    with pytest.raises(BadUserInput, match="FORTEMI_MAX_NOTE_BYTES"):
        await notes.update(
            memory, note.id, NotePatch(content="x" * (MAX_NOTE_BYTES + 1)), actor=None
        )
    assert await notes.get(memory, note.id) == note


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"title": None}, "title", id="null-title"),
        pytest.param({"tags": None}, "tags", id="null-tags"),
        pytest.param({"starred": None}, "starred", id="null-starred"),
        pytest.param({"format": "Not A Format"}, "format", id="bad-format"),
        pytest.param({"metadata": [1, 2]}, "metadata", id="metadata-not-object"),
        pytest.param({"title": "t" * 1001}, "title", id="long-title"),
    ],
)
async def test_update_with_out_of_bounds_fields_is_refused(
    notes: NoteService, memory: str, fields: dict[str, Any], field: str
) -> None:
    note = await notes.create(memory, NoteDraft(), actor=None)
    with pytest.raises(BadUserInput) as caught:
        await notes.update(memory, note.id, NotePatch(**fields), actor=None)
    assert caught.value.extensions["field"] == field


async def test_tags_are_stored_stripped_and_deduplicated_in_order(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(tags=(" b", "a ", "b", "c", "a")), actor=None)
    assert note.tags == ("b", "a", "c")
