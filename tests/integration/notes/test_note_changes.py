"""Creating and updating notes: hashes, originals, versions, optimistic concurrency."""

from __future__ import annotations

from uuid import uuid4

import asyncpg
import blake3
import pytest

from fortemi.platform.database import Database
from fortemi.platform.errors import Conflict, NotFound
from fortemi.platform.notes import UNSET, NoteDraft, NotePatch, NoteService
from tests.integration.notes.helpers import count_rows


def _hash(text: str) -> str:
    return "blake3:" + blake3.blake3(text.encode("utf-8")).hexdigest()


async def test_create_then_get_returns_the_note_at_version_1_with_its_hash_and_original(
    notes: NoteService, memory: str, db: Database
) -> None:
    draft = NoteDraft(
        title="Pasta",
        content="Boil water. Añadir sal.",
        format="text/plain",
        source="kitchen",
        metadata={"serves": 2, "nested": {"ok": [1, 2.5, None, True]}},
        tags=("food", "italian"),
        collection="recipes",
        project="home",
        starred=True,
    )
    created = await notes.create(memory, draft, actor="alice")

    assert await notes.get(memory, created.id) == created
    assert (created.title, created.content, created.format, created.source) == (
        "Pasta",
        "Boil water. Añadir sal.",
        "text/plain",
        "kitchen",
    )
    assert created.metadata == draft.metadata
    assert created.tags == ("food", "italian")
    assert (created.collection, created.project, created.starred, created.archived) == (
        "recipes",
        "home",
        True,
        False,
    )
    assert created.version == 1
    assert created.content_hash == _hash("Boil water. Añadir sal.")
    assert created.created_at == created.updated_at
    assert created.deleted_at is None
    assert (created.external_source, created.external_id) == (None, None)
    async with db.memory_transaction(memory) as conn:
        original = await conn.fetchrow(
            "SELECT content, content_hash FROM note_original WHERE note_id = $1", created.id
        )
        authors = await conn.fetchrow(
            "SELECT created_by, updated_by FROM note WHERE id = $1", created.id
        )
    assert original is not None
    assert authors is not None
    assert tuple(original) == ("Boil water. Añadir sal.", created.content_hash)
    assert tuple(authors) == ("alice", "alice")
    [first] = await notes.versions(memory, created.id)
    assert (first.version, first.title, first.content, first.created_by) == (
        1,
        "Pasta",
        "Boil water. Añadir sal.",
        "alice",
    )
    assert first.created_at == created.created_at


async def test_get_of_an_unknown_id_is_none(notes: NoteService, memory: str) -> None:
    assert await notes.get(memory, uuid4()) is None


async def test_update_makes_version_2_and_keeps_version_1_readable(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(title="t", content="first"), actor="alice")
    updated = await notes.update(
        memory, note.id, NotePatch(content="second", tags=("a",)), actor="bob"
    )

    assert (updated.version, updated.content, updated.title, updated.tags) == (
        2,
        "second",
        "t",
        ("a",),
    )
    assert updated.content_hash == _hash("second")
    assert updated.updated_at > note.updated_at
    assert updated.created_at == note.created_at
    v1 = await notes.version(memory, note.id, 1)
    v2 = await notes.version(memory, note.id, 2)
    assert v1 is not None
    assert v2 is not None
    assert (v1.content, v1.tags, v1.content_hash, v1.created_by) == (
        "first",
        (),
        _hash("first"),
        "alice",
    )
    assert (v2.content, v2.tags, v2.content_hash, v2.created_by) == (
        "second",
        ("a",),
        _hash("second"),
        "bob",
    )
    assert [v.version for v in await notes.versions(memory, note.id)] == [1, 2]


async def test_update_keeps_the_original_content_and_hash(
    notes: NoteService, memory: str, db: Database
) -> None:
    note = await notes.create(memory, NoteDraft(content="first"), actor=None)
    await notes.update(memory, note.id, NotePatch(content="second"), actor=None)
    async with db.memory_transaction(memory) as conn:
        original = await conn.fetchrow(
            "SELECT content, content_hash FROM note_original WHERE note_id = $1", note.id
        )
    assert original is not None
    assert tuple(original) == ("first", _hash("first"))


@pytest.mark.parametrize("table", ["note_original", "note_version"])
async def test_history_rows_cannot_be_updated_at_the_database(
    notes: NoteService, memory: str, db: Database, table: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="first"), actor=None)
    with pytest.raises(asyncpg.IntegrityConstraintViolationError, match="immutable"):
        async with db.memory_transaction(memory) as conn:
            await conn.execute(
                f"UPDATE {table} SET content = 'forged' WHERE note_id = $1",  # noqa: S608
                note.id,
            )
    [version] = await notes.versions(memory, note.id)
    assert version.content == "first"


@pytest.mark.parametrize(
    "patch",
    [
        NotePatch(),
        NotePatch(title="t", content="c", format="markdown", tags=("x",), metadata={"k": 1}),
        NotePatch(collection="c1", project=UNSET, starred=False, archived=False),
        NotePatch(metadata={"k": 1.0}),  # the same JSON number
    ],
    ids=["nothing-sent", "same-versioned-fields", "same-attributes", "same-number"],
)
async def test_update_that_changes_nothing_writes_nothing(
    notes: NoteService, memory: str, patch: NotePatch
) -> None:
    draft = NoteDraft(title="t", content="c", tags=("x",), metadata={"k": 1}, collection="c1")
    note = await notes.create(memory, draft, actor=None)
    assert await notes.update(memory, note.id, patch, actor="bob") == note
    assert await notes.get(memory, note.id) == note
    assert len(await notes.versions(memory, note.id)) == 1


async def test_metadata_true_and_1_are_different_values(notes: NoteService, memory: str) -> None:
    note = await notes.create(memory, NoteDraft(metadata={"k": 1}), actor=None)
    updated = await notes.update(memory, note.id, NotePatch(metadata={"k": True}), actor=None)
    assert updated.version == 2
    assert updated.metadata == {"k": True}


async def test_attribute_change_updates_the_note_without_a_new_version(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="c", collection="inbox"), actor=None)
    updated = await notes.update(
        memory, note.id, NotePatch(starred=True, archived=True, collection=None), actor=None
    )
    assert (updated.starred, updated.archived, updated.collection) == (True, True, None)
    assert updated.version == 1
    assert updated.updated_at > note.updated_at
    assert len(await notes.versions(memory, note.id)) == 1


async def test_update_with_a_stale_expected_version_is_a_conflict_naming_both_versions(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="v1"), actor=None)
    await notes.update(memory, note.id, NotePatch(content="v2"), actor=None)
    with pytest.raises(Conflict) as caught:
        await notes.update(memory, note.id, NotePatch(content="v3", expected_version=1), actor=None)
    assert caught.value.extensions["expected_version"] == 1
    assert caught.value.extensions["current_version"] == 2
    current = await notes.get(memory, note.id)
    assert current is not None
    assert (current.version, current.content) == (2, "v2")


async def test_update_with_the_current_expected_version_applies(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="v1"), actor=None)
    updated = await notes.update(
        memory, note.id, NotePatch(content="v2", expected_version=1), actor=None
    )
    assert (updated.version, updated.content) == (2, "v2")


async def test_update_of_an_unknown_note_is_not_found(notes: NoteService, memory: str) -> None:
    with pytest.raises(NotFound):
        await notes.update(memory, uuid4(), NotePatch(title="x"), actor=None)


async def test_update_of_a_deleted_note_is_a_conflict_until_restored(
    notes: NoteService, memory: str
) -> None:
    note = await notes.create(memory, NoteDraft(content="c"), actor=None)
    await notes.delete(memory, note.id, actor=None)
    with pytest.raises(Conflict, match="restore it first"):
        await notes.update(memory, note.id, NotePatch(content="d"), actor=None)
    await notes.restore(memory, note.id, actor=None)
    assert (await notes.update(memory, note.id, NotePatch(content="d"), actor=None)).version == 2


async def test_create_writes_exactly_one_note_original_and_version(
    notes: NoteService, memory: str, db: Database
) -> None:
    await notes.create(memory, NoteDraft(content="c"), actor=None)
    counts = [await count_rows(db, memory, t) for t in ("note", "note_original", "note_version")]
    assert counts == [1, 1, 1]
